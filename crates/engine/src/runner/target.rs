//! One target's run at one point of the plan: its cases, the repetitions on threads of their own while progress and checkpoints go on, and each case's summary.

use super::*;

impl CaseAcc {
    pub(super) fn new() -> CaseAcc {
        CaseAcc {
            recorder: Recorder::new(),
            failure: None,
            failure_measured: false,
            na: None,
            interrupted: false,
            invalid: None,
            server: BTreeMap::new(),
        }
    }
}

/// One target at one point: its cases in the record and what they accumulate, and everything a
/// repetition needs from the run. It is the [`Repeat`] a suite runs through.
pub(super) struct TargetRun<'r, 'h> {
    pub(super) plan: &'r Plan,
    pub(super) target: &'r PlanTarget,
    pub(super) tests: &'r [&'static str],
    /// The index of the target's first case at this point in the record.
    pub(super) first: usize,
    pub(super) record: &'r mut RunRecord,
    pub(super) acc: Vec<CaseAcc>,
    pub(super) sink: &'r mut Sink<'h>,
    pub(super) interrupt: &'r AtomicBool,
    /// The run's clock.
    pub(super) clock: &'r Clock,
    /// Bumped when the clients must reconnect (a `restart-clients` fault).
    pub(super) clients: &'r Arc<AtomicU64>,
    /// The stage's faults (the final heal, a level's schedule started again per test).
    pub(super) faults: &'r dyn crate::suite::StageFaults,
    pub(super) rendezvous: Option<&'r crate::shard::Rendezvous>,
    pub(super) checkpoint: Duration,
    pub(super) progress: &'r mut (dyn FnMut(&Progress) + 'h),
    pub(super) warnings: &'r mut Vec<String>,
    /// A sink error stops the run.
    pub(super) failed_sink: Option<SinkError>,
    /// `--profile`: the profiler, and the monitor of the processes it profiles.
    pub(super) profiler: Option<(&'r dyn Profiler, Option<Arc<crate::monitor::Monitor>>)>,
}

/// What a repetition's thread tells the runner.
pub(super) enum Msg {
    Outcome(Box<TestOutcome>),
    /// A test's profiles (`--profile`).
    Profiles(&'static str, Vec<results::ProfileRecord>),
    Ended(After),
}

/// The processes a profile is of: each one's name, PID and its descendants' PIDs.
type Procs = Vec<(String, u32, Vec<u32>)>;

impl<'r> TargetRun<'r, '_> {
    /// What repetition `r` profiles, when it is the first measured one and a profiler is on:
    /// the target's processes (its own, its members') and those watched by flag, and dyno.
    pub(super) fn profiling(&self, r: u32) -> Option<(&'r dyn Profiler, Procs)> {
        let (p, monitor) = self
            .profiler
            .as_ref()
            .filter(|_| r == u32::from(self.plan.warmup))?;
        let target = self.target.name.as_str();
        let of = |t: &str, name: &str| name == t || name.starts_with(&format!("{t}/"));
        let mut procs: Procs = (monitor.iter())
            .flat_map(|m| m.watches())
            .filter(|(name, _, _)| {
                of(target, name) || !self.plan.targets.iter().any(|t| of(&t.name, name))
            })
            .collect();
        procs.push(("dyno".into(), std::process::id(), Vec::new()));
        Some((*p, procs))
    }
}

impl TargetRun<'_, '_> {
    /// Follows repetition `r` (of `total`) on its thread until it ends: takes each test's
    /// outcome and profiles, and on each tick tells progress and writes a checkpoint when due
    /// (`cpu0`: dyno's CPU at the repetition's start). How it ended.
    pub(super) fn follow(
        &mut self,
        rx: &std::sync::mpsc::Receiver<Msg>,
        (live, partial): (Option<&Mutex<crate::load::Live>>, Option<&Partial>),
        (r, total, measured): (u32, u32, bool),
        cpu0: (u64, u64),
    ) -> After {
        let mut running = 0;
        let mut last_checkpoint = std::time::Instant::now();
        loop {
            match rx.recv_timeout(TICK) {
                Ok(Msg::Profiles(test, profiles)) => {
                    if let Some(i) = self.tests.iter().position(|t| *t == test) {
                        self.record.cases[self.first + i].profiles = profiles;
                    }
                    continue;
                }
                Ok(Msg::Outcome(o)) => {
                    self.take(*o, measured);
                    running += 1;
                    // Progress is told on ticks: a test's end is not a new repetition.
                    continue;
                }
                Ok(Msg::Ended(a)) => {
                    // The last intervals ended after the last tick: told once more.
                    self.told((live, (r, total, running)));
                    return a;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return After::Fail("the repetition's thread panicked".into());
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            let at = (r, total, measured, running);
            self.tick((live, partial), at, cpu0, &mut last_checkpoint);
        }
    }

    /// Where repetition `r` of `total` stands, `running` of its tests reported: told.
    fn told(
        &mut self,
        (live, (r, total, running)): (Option<&Mutex<crate::load::Live>>, (u32, u32, usize)),
    ) {
        let now = live.and_then(|l| l.lock().ok());
        let test = self.tests.get(running).or(self.tests.last()).copied();
        let mut p = Progress {
            // The last test runs until its repetition ends, even once it has reported.
            done: self.first + running.min(self.tests.len().saturating_sub(1)),
            cases: self.record.cases.len(),
            finished: self.first,
            target: &self.target.name,
            test: test.unwrap_or(""),
            rep: r,
            reps: total,
            live: now.as_deref(),
            shards: Vec::new(),
        };
        // A shard tells rank 0; rank 0 hears them all.
        if let Some(rv) = self.rendezvous {
            rv.tell(&crate::shard::ShardProgress::of(0, &p));
            p.shards = rv.shards();
        }
        (self.progress)(&p);
    }

    /// Between a repetition's messages: its progress told, a broken threshold looked for (when
    /// measured), and a checkpoint written when one is due (`cpu0`: dyno's CPU at its start).
    pub(super) fn tick(
        &mut self,
        (live, partial): (Option<&Mutex<crate::load::Live>>, Option<&Partial>),
        (r, total, measured, running): (u32, u32, bool, usize),
        (u0, s0): (u64, u64),
        last_checkpoint: &mut std::time::Instant,
    ) {
        self.told((live, (r, total, running)));
        let now = live.and_then(|l| l.lock().ok());
        if measured && let Some(l) = now.as_deref() {
            let case = self.first + running.min(self.tests.len() - 1);
            self.abort_if_broken(case, l);
        }
        let (Some(now), Some(partial)) = (now, partial) else {
            return;
        };
        if last_checkpoint.elapsed() < self.checkpoint || now.elapsed_ns == 0 {
            return;
        }
        *last_checkpoint = std::time::Instant::now();
        let (u1, s1) = crate::load::process_cpu_ns();
        let rep = partial(&now, (u1 - u0, s1 - s0));
        let elapsed_ns = now.elapsed_ns;
        drop(now);
        self.checkpoint(running.min(self.tests.len() - 1), r, elapsed_ns, rep);
    }

    /// Folds one test's outcome into its case.
    pub(super) fn take(&mut self, o: TestOutcome, measured: bool) {
        let i = (self.tests.iter())
            .position(|t| *t == o.test)
            .expect("a suite reports its own tests");
        let case = &mut self.record.cases[self.first + i];
        let a = &mut self.acc[i];
        if measured {
            for (op, n, h) in o.server {
                let slot = (a.server)
                    .entry(op)
                    .or_insert_with(|| (0, results::new_histogram()));
                slot.0 += n;
                let _ = slot.1.add(&h);
            }
        }
        if o.cache.is_some() {
            case.cache = o.cache;
        }
        match o.status {
            Status::Na => a.na = o.reason,
            Status::Interrupted => a.interrupted = true,
            Status::Failed => a.failed(o.reason, measured),
            Status::Invalid if a.invalid.is_none() => a.invalid = o.reason,
            _ => {}
        }
        if measured {
            a.recorder.merge(&o.recorder);
            case.reps.extend(o.rep);
        } else {
            case.warmup = o.rep;
        }
    }

    pub(super) fn sink(&mut self) {
        if self.failed_sink.is_none()
            && let Err(e) = (self.sink)(self.record)
        {
            self.failed_sink = Some(e);
        }
    }

    /// Writes the record with `partial` as the running case's latest repetition, then takes it
    /// out again: a crash loses at most one checkpoint interval.
    pub(super) fn checkpoint(
        &mut self,
        case: usize,
        rep: u32,
        elapsed_ns: u64,
        partial: results::Rep,
    ) {
        let why = format!(
            "checkpoint: repetition {} was still running, {:.0} s in, when this record was written",
            rep + 1,
            elapsed_ns as f64 / 1e9
        );
        let c = &mut self.record.cases[self.first + case];
        let reason = c.reason.replace(why);
        c.reps.push(partial);
        self.sink();
        let c = &mut self.record.cases[self.first + case];
        c.reps.pop();
        c.reason = reason;
    }

    /// `abort_on_fail`: checks the thresholds on the running case's intervals so far, and on
    /// the first broken stops the run (the interrupt every worker watches) and says why.
    pub(super) fn abort_if_broken(&mut self, case: usize, l: &crate::load::Live) {
        let Some(after) = self.plan.abort_after else {
            return;
        };
        if self.record.aborted.is_some() || l.elapsed_ns < after.as_nanos() as u64 {
            return;
        }
        let running = results::thresholds::Running {
            latency: &l.total.latency,
            elapsed_ns: l.elapsed_ns,
            ops: l.total.responses,
            errors: l.total.error_count(),
        };
        let c = &self.record.cases[case];
        let baseline = self.plan.baseline.as_ref().map(|(_, b)| &b.record);
        let Some((t, (value, limit))) = (self.plan.thresholds.iter())
            .find_map(|t| t.broken_by(c, &running, baseline).map(|v| (t, v)))
        else {
            return;
        };
        self.record.aborted = Some(results::thresholds::Aborted {
            threshold: t.text.clone(),
            case: c.id().to_string(),
            value,
            limit,
            after_ns: l.elapsed_ns,
        });
        self.interrupt.store(true, Ordering::SeqCst);
    }

    /// Runs the suite on the target at `point`: its cases finished, or failed with why it could
    /// not run; a sink that failed stops the run.
    pub(super) fn go(mut self, point: &crate::suite::Point) -> Result<(), RunError> {
        let (plan, target, interrupt) = (self.plan, self.target, self.interrupt);
        let ran = plan.suite.run(plan, point, target, interrupt, &mut self);
        if let Some(e) = self.failed_sink.take() {
            return Err(RunError::Sink(e));
        }
        match ran {
            Ok(()) => self.finish(),
            Err(why) => {
                let mine = self.first..self.first + self.tests.len();
                settle(
                    &mut self.record.cases[mine],
                    Status::Failed,
                    &why.to_string(),
                );
            }
        }
        Ok(())
    }

    pub(super) fn finish(mut self) {
        let reps = self.plan.reps;
        for (i, a) in std::mem::take(&mut self.acc).into_iter().enumerate() {
            finish_case(&mut self.record.cases[self.first + i], a, reps);
        }
    }
}

impl Repeat for TargetRun<'_, '_> {
    fn rendezvous(&self) -> Option<&crate::shard::Rendezvous> {
        self.rendezvous
    }

    fn describe(&mut self, namespace: Namespace, versions: BTreeMap<String, String>) {
        let cases = self.first..self.first + self.tests.len();
        // Asked again now that the target is reached: what it says may depend on the server.
        let durability = self.target.config.durability();
        for c in &mut self.record.cases[cases] {
            c.namespace = namespace.clone();
            c.versions = versions.clone();
            c.durability.clone_from(&durability);
        }
    }

    fn history_file(&self) -> Option<std::path::PathBuf> {
        let dir = self.plan.check.as_ref()?.dir.as_ref()?;
        let case = &self.record.cases[self.first];
        let mut name = format!("history.{}", case.target);
        if let Some(s) = &case.sweep {
            name += &format!(".{}={}", s.param, s.value);
        }
        if let Some(l) = &case.level {
            name += &format!(".{l}");
        }
        Some(dir.join(name + ".jsonl"))
    }

    fn consistency(&mut self, verdict: results::ConsistencyRecord) {
        let cases = self.first..self.first + self.tests.len();
        for c in &mut self.record.cases[cases] {
            c.consistency = Some(verdict.clone());
        }
    }

    fn repeat(
        &mut self,
        live: Option<&Mutex<crate::load::Live>>,
        partial: Option<&Partial>,
        rep: &mut (dyn FnMut(&RepCtx) -> After + Send),
    ) {
        let total = self.plan.reps + u32::from(self.plan.warmup);
        let (interrupt, clock, clients, faults) =
            (self.interrupt, self.clock, self.clients, self.faults);
        let (generators, rendezvous) = (self.plan.generators(), self.rendezvous);
        let target_name = self.target.name.as_str();
        let tests = self.tests;
        for r in 0..total {
            let measured = !(self.plan.warmup && r == 0);
            // Profiles are of the first measured repetition: the target's processes (its own,
            // its members') and those watched by flag, and dyno.
            let profiling = self.profiling(r);
            if let Some(l) = live
                && let Ok(mut l) = l.lock()
            {
                l.reset();
            }
            let (tx, rx) = std::sync::mpsc::channel::<Msg>();
            let (u0, s0) = crate::load::process_cpu_ns();
            let profiling = &profiling;
            let after = std::thread::scope(|s| {
                let ended = tx.clone();
                let rep = &mut *rep;
                // The repetition runs on its own thread; this one takes its outcomes, shows
                // progress and writes checkpoints until it ends (it says so, or its sender goes
                // if it panics).
                s.spawn(move || {
                    let begin = |i: usize| {
                        if let (Some((p, procs)), Some(test)) = (profiling, tests.get(i)) {
                            p.begin(target_name, test, procs);
                        }
                    };
                    begin(0);
                    let report = move |o: TestOutcome| {
                        let test = o.test;
                        if let Some((p, _)) = profiling {
                            let _ = tx.send(Msg::Profiles(test, p.end()));
                        }
                        let _ = tx.send(Msg::Outcome(Box::new(o)));
                        if profiling.is_some()
                            && let Some(i) = tests.iter().position(|t| *t == test)
                        {
                            begin(i + 1);
                        }
                    };
                    let mut ctx = RepCtx::new(
                        (r, measured),
                        interrupt,
                        live,
                        (clock, clients, faults),
                        &report,
                    );
                    ctx.generators = generators;
                    ctx.rendezvous = rendezvous;
                    // A shard starts with all the others, at the instant they agree on.
                    let after = match rendezvous.map(|r| r.start().map(|at| (r, at))).transpose() {
                        Ok(met) => {
                            ctx.start_unix_ns = met.map(|(_, at)| at);
                            ctx.start_at = met.map(|(r, at)| r.local(at));
                            rep(&ctx)
                        }
                        Err(e) => After::Fail(e.to_string()),
                    };
                    if let Some((p, _)) = profiling {
                        // A test that never reported (interrupted): its profile is dropped.
                        let _ = p.end();
                    }
                    let _ = ended.send(Msg::Ended(after));
                });
                self.follow(&rx, (live, partial), (r, total, measured), (u0, s0))
            });
            if let After::Fail(why) = after {
                for a in &mut self.acc {
                    a.failed(Some(why.clone()), measured);
                }
                break;
            }
            self.sink();
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
        }
    }

    fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }
}

pub(super) fn finish_case(case: &mut Case, a: CaseAcc, reps: u32) {
    let (status, reason) = if let Some(why) = a.na {
        (Status::Na, Some(why))
    } else if a.interrupted || (case.reps.len() as u32) < reps && a.failure.is_none() {
        (
            Status::Interrupted,
            Some(format!(
                "stopped by the user after {} of {reps} repetitions",
                case.reps.len()
            )),
        )
    } else if let Some(why) = a.failure {
        (Status::Failed, Some(why))
    } else if let Some(why) = a.invalid {
        (Status::Invalid, Some(why))
    } else {
        (Status::Ok, None)
    };
    case.status = status;
    case.reason = reason;
    let rates: Vec<f64> = case
        .reps
        .iter()
        .filter(|r| r.wall_ns > 0)
        .map(|r| r.ops_per_s)
        .collect();
    let latency = results::stats::latency_summary(&a.recorder.latency);
    case.summary = match (results::stats::spread(&rates), latency) {
        (Some(ops_per_s), Some(latency_ns)) => Some(results::Summary {
            ops_per_s,
            latency_ns,
            service_ns: results::stats::latency_summary(&a.recorder.service),
        }),
        _ => None,
    };
    case.histogram =
        (!a.recorder.latency.is_empty()).then(|| results::histogram::encode(&a.recorder.latency));
    case.server = (!a.server.is_empty()).then(|| {
        a.server
            .iter()
            .map(|(op, (n, h))| {
                (
                    op.clone(),
                    results::ServerOpRecord {
                        count: *n,
                        latency_ns: results::stats::latency_summary(h),
                    },
                )
            })
            .collect()
    });
    for class in crate::driver::ErrorClass::ALL {
        let n = a.recorder.errors[class as usize];
        if n > 0 {
            case.errors.insert(class.as_str().to_string(), n);
        }
        if let Some(m) = &a.recorder.examples[class as usize] {
            case.error_examples
                .insert(class.as_str().to_string(), m.clone());
        }
    }
}
