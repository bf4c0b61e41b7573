//! The nemesis: the thread that does a plan's faults to the targets' processes and links on the run's clock, starts a level's schedule over per test, and heals when the run ends.

use super::*;

/// A target's process, as the nemesis acts on it.
pub type Member = (String, Arc<Mutex<Started>>);

/// A cluster's role query: a command whose output names the primary's port, and its members'
/// ports (`TARGET/MEMBER`).
#[derive(Debug, Clone)]
pub struct Role {
    pub cmd: String,
    pub ports: Vec<(String, u16)>,
}

impl Role {
    /// The member the query names now: the one whose port stands alone in its output.
    pub fn primary(&self) -> Result<String, String> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&self.cmd)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("the role query `{}` did not run: {e}", self.cmd))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let words: Vec<&str> = text.split(|c: char| !c.is_ascii_digit()).collect();
        (self.ports.iter())
            .find(|(_, port)| words.contains(&port.to_string().as_str()))
            .map(|(key, _)| key.clone())
            .ok_or_else(|| format!("the role query named no member: {:?}", text.trim()))
    }
}

/// The thread doing a run's faults; heals and hands over its events when stopped (or dropped).
pub struct Nemesis {
    pub(super) stop: Arc<AtomicBool>,
    pub(super) again: Arc<StartOver>,
    pub(super) thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Gives the events once the faults healed.
    pub(super) healed: Mutex<Option<std::sync::mpsc::Receiver<Vec<FaultEvent>>>>,
    /// Dropped to let the thread end.
    pub(super) finish: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    /// The events, once healed.
    pub(super) events: Mutex<Vec<FaultEvent>>,
}

/// A schedule started over (a level's, at each test's start): how many times it was asked, and
/// how many times the fault thread took it up (its new origin: the moment it did).
#[derive(Default)]
pub(super) struct StartOver {
    pub(super) asked: AtomicU64,
    pub(super) taken: AtomicU64,
}

/// Mixed into the plan's seed for the nemesis's draws (`one-replica`).
pub(super) const RNG_SALT: u64 = 0x0E4E_911C;

/// How long [`Nemesis::start_over`] waits for a fault under way to end: longer than any
/// level's kill (its restart comes half a period later) or pause.
pub(super) const START_OVER_WAIT: Duration = Duration::from_secs(600);

/// The gates of the links in front of a cluster's members, by `TARGET/MEMBER`.
pub type Gates = std::collections::BTreeMap<String, Arc<host::link::Gate>>;

/// Told when a process was started again: its old PID and its new one.
pub type Follow = Box<dyn Fn(u32, u32) + Send>;

/// What the nemesis thread does.
pub(super) struct Work {
    pub(super) faults: Vec<Fault>,
    pub(super) members: Vec<Member>,
    pub(super) follow: Follow,
    /// Told of each event as it begins and as it ends (the live view).
    pub(super) watch: Option<Arc<dyn crate::runner::Watch>>,
    /// Bumped to have dyno's clients reconnect.
    pub(super) clients: Arc<std::sync::atomic::AtomicU64>,
    /// The clusters' role queries, by target.
    pub(super) roles: std::collections::BTreeMap<String, Role>,
    /// The gates of the links in front of members (`TARGET/MEMBER`).
    pub(super) gates: Gates,
    pub(super) clock: Clock,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) again: Arc<StartOver>,
    pub(super) events: Vec<FaultEvent>,
    /// Draws of `one-replica`, seeded by the plan's seed.
    pub(super) rng: u64,
    /// Clock reading the fault times count from (the start of the run, or of a level).
    pub(super) origin_ns: u64,
}

impl Work {
    /// An event under way, for whoever watches.
    pub(super) fn tell(&self, event: &FaultEvent) {
        if let Some(w) = &self.watch {
            w.fault(event);
        }
    }

    /// An event over (or one that did not happen): kept, and told.
    pub(super) fn record(&mut self, event: FaultEvent) {
        self.tell(&event);
        self.events.push(event);
    }

    /// Sleeps until `t_ns` on the run's clock; false when told to stop first.
    pub(super) fn sleep_until(&self, t_ns: u64) -> bool {
        self.wait(t_ns, || false)
    }

    /// Sleeps until `t_ns` on the run's clock, 20 ms at a time; false when told to stop, or
    /// when `cut` says so, first.
    pub(super) fn wait(&self, t_ns: u64, cut: impl Fn() -> bool) -> bool {
        loop {
            if self.stop.load(Ordering::Relaxed) || cut() {
                return false;
            }
            let now = self.clock.now_ns();
            if now >= t_ns {
                return true;
            }
            std::thread::sleep(Duration::from_nanos((t_ns - now).min(20_000_000)));
        }
    }

    pub(super) fn member(&self, target: &str) -> Option<Arc<Mutex<Started>>> {
        (self.members.iter())
            .find(|(name, _)| name == target)
            .map(|(_, m)| m.clone())
    }

    /// Does `f` to its target now (`turn`: which of its members, in turn); records the event.
    pub(super) fn act(&mut self, f: &Fault, turn: usize) {
        if f.action == Action::RestartClients {
            let now = self.clock.now_ns();
            self.clients.fetch_add(1, Ordering::Relaxed);
            self.record(FaultEvent {
                action: "restart-clients".into(),
                target: f.target.clone(),
                start_ns: now,
                end_ns: Some(now),
                pid: None,
                new_pid: None,
                note: None,
            });
            return;
        }
        let aimed = self.aim(f, turn);
        let Some(key) = aimed else {
            return;
        };
        let key = &key;
        if f.action.through_link() {
            self.through_link(f, key);
            return;
        }
        let Some(member) = self.member(key) else {
            return;
        };
        let Ok(mut p) = member.lock() else { return };
        let start_ns = self.clock.now_ns();
        let pid = p.pid;
        let mut event = FaultEvent {
            action: f.action.name().to_string(),
            target: key.clone(),
            start_ns,
            end_ns: None,
            pid: Some(pid),
            new_pid: None,
            note: None,
        };
        let signalled = match f.action {
            Action::Kill { .. } => p.kill(),
            Action::Restart => {
                p.stop();
                Ok(())
            }
            Action::Pause { .. } => p.signal(libc::SIGSTOP),
            Action::RestartClients | Action::Partition { .. } | Action::Slow { .. } => Ok(()),
        };
        if let Err(e) = signalled {
            event.note = Some(e.to_string());
            self.record(event);
            return;
        }
        self.tell(&event);
        match f.action {
            Action::Pause { for_ns } => {
                // Continued when the pause is over, or at once when the run is stopping.
                self.sleep_until(start_ns + for_ns);
                if let Err(e) = p.signal(libc::SIGCONT) {
                    event.note = Some(e.to_string());
                }
                event.end_ns = Some(self.clock.now_ns());
            }
            Action::Kill { after_ns } => {
                self.sleep_until(start_ns + after_ns);
                self.start_again(&mut p, &mut event);
            }
            Action::Restart => self.start_again(&mut p, &mut event),
            Action::RestartClients | Action::Partition { .. } | Action::Slow { .. } => {}
        }
        self.record(event);
    }

    /// The member fault `f` acts on at its `turn`: each in turn, the primary, or a replica drawn;
    /// `None` (the miss recorded) when the role query fails.
    pub(super) fn aim(&mut self, f: &Fault, turn: usize) -> Option<String> {
        let primary = || {
            (self.roles.get(&f.target))
                .ok_or_else(|| "no role query".to_string())
                .and_then(|r| r.primary())
        };
        if f.aim != Aim::Turn {
            let drawn = primary().and_then(|p| match f.aim {
                Aim::OneReplica => {
                    let others: Vec<&String> = f.members.iter().filter(|m| **m != p).collect();
                    if others.is_empty() {
                        return Err(format!("no member besides the primary {p}"));
                    }
                    let draw = results::rng::splitmix64(&mut self.rng);
                    Ok(others[(draw % others.len() as u64) as usize].clone())
                }
                _ => Ok(p),
            });
            match drawn {
                Ok(key) => Some(key),
                Err(why) => {
                    self.record(FaultEvent {
                        action: f.action.name().into(),
                        target: format!(
                            "{}/{}",
                            f.target,
                            if f.aim == Aim::Primary {
                                "primary"
                            } else {
                                "one-replica"
                            }
                        ),
                        start_ns: self.clock.now_ns(),
                        end_ns: None,
                        pid: None,
                        new_pid: None,
                        note: Some(why),
                    });
                    None
                }
            }
        } else {
            f.members.get(turn % f.members.len().max(1)).cloned()
        }
    }

    /// Cuts or slows the member's link for the fault's time, then opens it again (at once when
    /// the run is stopping).
    pub(super) fn through_link(&mut self, f: &Fault, key: &str) {
        use host::link::GateState;
        let start_ns = self.clock.now_ns();
        let mut event = FaultEvent {
            action: f.action.name().to_string(),
            target: key.to_string(),
            start_ns,
            end_ns: None,
            pid: None,
            new_pid: None,
            note: None,
        };
        let (state, for_ns) = match f.action {
            Action::Partition {
                for_ns,
                clients_pass,
            } => match clients_pass {
                true => (GateState::CutPeers, for_ns),
                false => (GateState::Cut, for_ns),
            },
            Action::Slow { for_ns, spec } => (GateState::Slow(spec), for_ns),
            _ => return,
        };
        match self.gates.get(key).cloned() {
            None => event.note = Some(format!("{key} has no link in front of it")),
            Some(gate) => {
                gate.set(state);
                self.tell(&event);
                self.sleep_until(start_ns + for_ns);
                gate.set(GateState::Open);
                event.end_ns = Some(self.clock.now_ns());
            }
        }
        self.record(event);
    }

    pub(super) fn start_again(&self, p: &mut Started, event: &mut FaultEvent) {
        match p.start_again() {
            Ok(()) => {
                if let Some(old) = event.pid {
                    (self.follow)(old, p.pid);
                }
                event.new_pid = Some(p.pid);
                event.end_ns = Some(self.clock.now_ns());
            }
            Err(e) => event.note = Some(format!("it did not start again: {e}")),
        }
    }

    /// Waits for the schedule's next time (or the end of a healthy window): true when due;
    /// false when told to stop or to start over first.
    pub(super) fn wait_due(&self, t_ns: u64, taken: u64) -> bool {
        self.wait(t_ns, || self.again.asked.load(Ordering::Acquire) != taken)
    }

    pub(super) fn run(mut self, seed: u64, until_ns: u64) -> Vec<FaultEvent> {
        let mut origin = self.origin_ns;
        // Every fault's times, merged in order; each waits for the previous one to end.
        let mut due: Vec<(u64, usize)> = Vec::new();
        for (i, f) in self.faults.iter().enumerate() {
            let s = seed.wrapping_add(i as u64);
            due.extend(schedule(&f.when, s, until_ns).into_iter().map(|t| (t, i)));
        }
        due.sort_unstable();
        let mut calm_from = 0u64;
        let mut turns = vec![0usize; self.faults.len()];
        let mut taken = 0;
        loop {
            let mut next = due.iter();
            loop {
                let at = next.next().map(|&(t, i)| ((origin + t).max(calm_from), i));
                // After the last fault, only a start over (or the end) is waited for.
                if !self.wait_due(at.map_or(u64::MAX, |(t, _)| t), taken) {
                    break;
                }
                let Some((_, i)) = at else { break };
                let f = self.faults[i].clone();
                self.act(&f, turns[i]);
                turns[i] += 1;
                calm_from = self.clock.now_ns() + f.healthy_ns;
            }
            if self.stop.load(Ordering::Relaxed) {
                return self.events;
            }
            // Started over, between faults (none under way), and whole: the members in turn
            // and the draws begin again, so each test sees the same disturbance (at
            // `all-unstable`, the same member restarted first).
            taken = self.again.asked.load(Ordering::Acquire);
            origin = self.clock.now_ns();
            turns.iter_mut().for_each(|t| *t = 0);
            self.rng = seed ^ RNG_SALT;
            self.again.taken.store(taken, Ordering::Release);
        }
    }
}

impl Nemesis {
    /// Starts doing `faults` to `members` on `clock` (the run's), their times counted from
    /// `origin_ns` on it (the start of the run, or of a level), until `until_ns` after it;
    /// `follow` is told of each process started again, `watch` of each event as it begins and
    /// ends.
    pub fn start(
        faults: Vec<Fault>,
        (members, clients, roles, gates): (
            Vec<Member>,
            Arc<std::sync::atomic::AtomicU64>,
            std::collections::BTreeMap<String, Role>,
            Gates,
        ),
        (follow, watch): (Follow, Option<Arc<dyn crate::runner::Watch>>),
        clock: Clock,
        (seed, origin_ns, until_ns): (u64, u64, u64),
    ) -> Nemesis {
        let stop = Arc::new(AtomicBool::new(false));
        let again = Arc::new(StartOver::default());
        let work = Work {
            again: again.clone(),
            faults,
            members,
            follow,
            watch,
            clients,
            roles,
            gates,
            clock,
            stop: stop.clone(),
            events: Vec::new(),
            rng: seed ^ RNG_SALT,
            origin_ns,
        };
        let (healed_tx, healed) = std::sync::mpsc::channel();
        let (finish, finish_rx) = std::sync::mpsc::channel::<()>();
        // The thread outlives the heal, until the stage ends: a process it started again gets
        // SIGTERM when the thread that started it ends (the parent-death signal is a thread's),
        // and it must live on after the heal.
        let thread = std::thread::Builder::new()
            .name("dyno-nemesis".into())
            .spawn(move || {
                let _ = healed_tx.send(work.run(seed, until_ns));
                let _ = finish_rx.recv();
            })
            .expect("spawning the fault thread");
        Nemesis {
            stop,
            again,
            thread: Mutex::new(Some(thread)),
            healed: Mutex::new(Some(healed)),
            finish: Mutex::new(Some(finish)),
            events: Mutex::new(Vec::new()),
        }
    }

    /// The schedule starts over from now (a level's, at a test's start): returns once the fault
    /// thread has taken it up, which it does between faults, never during one (a test starts
    /// on a whole system). After the final heal, nothing happens.
    pub fn start_over(&self) {
        if self.stop.load(Ordering::Relaxed) {
            return;
        }
        let again = &self.again;
        let asked = again.asked.fetch_add(1, Ordering::AcqRel) + 1;
        let t0 = std::time::Instant::now();
        while again.taken.load(Ordering::Acquire) < asked
            && !self.stop.load(Ordering::Relaxed)
            && t0.elapsed() < START_OVER_WAIT
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Heals (a paused process continued, a killed one started again) and returns the events.
    pub fn stop(self) -> Vec<FaultEvent> {
        self.end();
        (self.events.lock().map(|mut e| std::mem::take(&mut *e))).unwrap_or_default()
    }

    /// The final heal, before the run ends (a suite's check after the faults, such as the
    /// lost-writes read-back, calls it): no further fault, a paused process continued, a killed
    /// one started again; returns once done. Later calls do nothing.
    pub fn heal(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let healed = self.healed.lock().ok().and_then(|mut h| h.take());
        if let Some(events) = healed.and_then(|h| h.recv().ok())
            && let Ok(mut e) = self.events.lock()
        {
            *e = events;
        }
    }

    /// Heals, then lets the thread end (the processes it started again get their parent-death
    /// signal: the stage is ending, and stops them anyway).
    pub(super) fn end(&self) {
        self.heal();
        drop(self.finish.lock().ok().and_then(|mut f| f.take()));
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
    }
}

impl Drop for Nemesis {
    fn drop(&mut self) {
        self.end();
    }
}
