//! Shards: one of N generators, each running its deterministic part of one plan, started
//! together, whose records `dyno merge` adds into one exact record.
//!
//! - [`Shard`]: which part (`--shard I/N`, or `auto` from Slurm's `SLURM_PROCID` /
//!   `SLURM_NTASKS` or a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`), and how a count is
//!   split: shard I takes `n / N`, one more while `I < n mod N`, so the parts add up to `n`.
//! - [`Rendezvous`]: a synchronized start. Rank 0 listens on the address given, the others
//!   connect and say who they are and which plan they run (a hash of the resolved plan: shards
//!   of different plans are refused, naming the rank). Rank 0 measures each one's clock offset
//!   to its own (the round trip with the least delay of [`CLOCK_ROUNDS`], offset = their reading
//!   less the midpoint of ours) and tells them. Before every repetition each shard says it is
//!   ready; once all are, rank 0 names an instant [`START_AHEAD`] ahead on its clock, and every
//!   shard starts then on its own (its offset applied). A shard that does not arrive within the
//!   time given fails the run on every shard, its rank named. Rank 0 also names the run (a
//!   random 64-bit word): the namespace the shards of a store suite share on their target.
//!
//! The protocol is lines of text over one TCP connection per shard, every read bounded in
//! time and length.

mod line;
mod progress;

use line::Line;
pub use progress::ShardProgress;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The most shards one run may have: a rendezvous holds a connection to each.
pub const MAX_SHARDS: u32 = 4096;
/// Round trips rank 0 makes to each shard to measure its clock offset; the least delayed one
/// is used (NTP's rule: the shortest round trip bounds the error best).
pub const CLOCK_ROUNDS: usize = 8;
/// How far ahead rank 0 names a repetition's start: time for its word to reach every shard.
pub const START_AHEAD: Duration = Duration::from_millis(300);
/// How long rank 0 waits for every shard to be ready for a repetition (the previous one may
/// still be ending on a slower shard: a closed loop's count, a target's drain).
pub const READY_WAIT: Duration = Duration::from_secs(600);

/// One of `count` shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// `I/N`, `auto` (Slurm's rank and task count) or `auto/N` (a Kubernetes Indexed Job's
    /// completion index, N given); `env` reads the environment.
    pub fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Shard, String> {
        let text = text.trim();
        let number = |name: &str, v: &str| -> Result<u32, String> {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{name} is {v:?}, not a whole number"))
        };
        let (index, count) = if let Some(rest) = text.strip_prefix("auto") {
            let count = match rest.strip_prefix('/') {
                Some(n) => Some(number("N", n)?),
                None if rest.is_empty() => None,
                None => return Err(format!("{text:?}: write auto or auto/N")),
            };
            match (
                env("SLURM_PROCID"),
                env("SLURM_NTASKS"),
                env("JOB_COMPLETION_INDEX"),
            ) {
                (Some(id), Some(n), _) => {
                    let n = number("SLURM_NTASKS", &n)?;
                    if count.is_some_and(|c| c != n) {
                        return Err(format!(
                            "auto/{} but Slurm runs {n} tasks (SLURM_NTASKS)",
                            count.unwrap_or(0)
                        ));
                    }
                    (number("SLURM_PROCID", &id)?, n)
                }
                (_, _, Some(i)) => match count {
                    Some(n) => (number("JOB_COMPLETION_INDEX", &i)?, n),
                    None => {
                        return Err("JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but not how many shards: write --shard auto/N with the Job's completions".into());
                    }
                },
                _ => {
                    return Err("--shard auto found neither Slurm's SLURM_PROCID and SLURM_NTASKS nor Kubernetes' JOB_COMPLETION_INDEX: run it under srun or in an Indexed Job, or write --shard I/N".into());
                }
            }
        } else {
            let (i, n) = text
                .split_once('/')
                .ok_or_else(|| format!("{text:?}: write I/N (e.g. 0/4), auto or auto/N"))?;
            (number("I", i)?, number("N", n)?)
        };
        if count == 0 || count > MAX_SHARDS {
            return Err(format!("{count} shards: give 1 to {MAX_SHARDS}"));
        }
        if index >= count {
            return Err(format!(
                "shard {index} of {count}: shards are numbered 0 to {}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// This shard's part of `n`: the parts of all shards add up to `n` and differ by at most one.
    pub fn part(&self, n: u64) -> u64 {
        let (i, c) = (u64::from(self.index), u64::from(self.count));
        n / c + u64::from(i < n % c)
    }

    /// Where this shard's part of `0..n` begins: the parts of the shards before it, one after
    /// the other (YCSB's `insertstart` for `insertcount` = [`Shard::part`]).
    pub fn first(&self, n: u64) -> u64 {
        let (i, c) = (u64::from(self.index), u64::from(self.count));
        i * (n / c) + i.min(n % c)
    }
}

/// What went wrong in a rendezvous: the message names the rank and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RendezvousError(pub String);

impl std::fmt::Display for RendezvousError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RendezvousError {}

fn fail<T>(msg: impl Into<String>) -> Result<T, RendezvousError> {
    Err(RendezvousError(msg.into()))
}

/// Now, on this machine's clock, in ns since the Unix epoch.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A shard's place in a synchronized start; see the module's notes.
pub struct Rendezvous {
    /// Where rank 0 listens.
    pub address: String,
    /// This shard's clock less rank 0's (0 on rank 0), and the round trip it was measured in.
    pub clock_offset_ns: i64,
    pub rtt_ns: u64,
    /// The run's name, drawn by rank 0 and told to every shard: the namespace they share on a
    /// store (`dyno_shard_NAME`), 16 hexadecimal digits.
    pub run: String,
    /// The role, how many starts this shard has made, and why it ended the run if it did.
    role: Mutex<(Role, u32, Option<String>)>,
    /// Rank 0: each other shard's last progress, by rank.
    heard: Mutex<Vec<Option<ShardProgress>>>,
}

enum Role {
    /// Rank 0: a connection to every other shard, by rank (1..N).
    Leader(Vec<Line>),
    Follower(Line),
}

impl Rendezvous {
    /// Meets the other shards of `plan_id` at `address` (rank 0 listens there, the others
    /// connect), waiting at most `wait` for all of them.
    pub fn join(
        shard: Shard,
        address: &str,
        plan_id: &str,
        wait: Duration,
    ) -> Result<Rendezvous, RendezvousError> {
        let deadline = Instant::now() + wait;
        if address
            .rsplit_once(':')
            .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
        {
            return fail(format!(
                "--rendezvous {address}: write HOST:PORT of rank 0 (the first shard)"
            ));
        }
        // A name may not resolve yet (a pod's DNS record appears as it starts): asked again
        // until the deadline.
        let addrs: Vec<SocketAddr> = loop {
            match address.to_socket_addrs() {
                Ok(a) => {
                    let a: Vec<SocketAddr> = a.collect();
                    if !a.is_empty() {
                        break a;
                    }
                }
                Err(e) if Instant::now() >= deadline => {
                    return fail(format!(
                        "--rendezvous {address}: {e}; write HOST:PORT of rank 0 (the first shard)"
                    ));
                }
                Err(_) => {}
            }
            if Instant::now() >= deadline {
                return fail(format!("--rendezvous {address}: names no address"));
            }
            std::thread::sleep(Duration::from_millis(250));
        };
        let (role, offset, rtt, run) = if shard.index == 0 {
            let run = run_name(plan_id);
            (
                lead(shard, address, &addrs, (plan_id, &run), deadline)?,
                0,
                0,
                run,
            )
        } else {
            follow(shard, address, &addrs, plan_id, deadline)?
        };
        Ok(Rendezvous {
            address: address.to_string(),
            clock_offset_ns: offset,
            rtt_ns: rtt,
            run,
            role: Mutex::new((role, 0, None)),
            heard: Mutex::new(Vec::new()),
        })
    }

    /// Waits with every other shard for the next repetition to start (every shard runs the
    /// same plan, so the same repetitions in the same order: the k-th start of one is the k-th
    /// of all); returns the agreed instant on rank 0's clock (ns since the Unix epoch), at
    /// least [`START_AHEAD`] less a round trip away: the caller prepares, then waits for it
    /// ([`Rendezvous::local`], [`wait_until`]).
    pub fn start(&self) -> Result<u64, RendezvousError> {
        let mut guard = self
            .role
            .lock()
            .map_err(|_| RendezvousError("the rendezvous broke earlier".into()))?;
        let (role, seq, ended) = &mut *guard;
        if let Some(why) = ended {
            return fail(format!("this shard ended the run: {why}"));
        }
        let rep = *seq;
        *seq += 1;
        let at = match role {
            Role::Leader(peers) => {
                let deadline = Instant::now() + READY_WAIT;
                let mut why = None;
                for (k, p) in peers.iter_mut().enumerate() {
                    let rank = k + 1;
                    // What a shard said of its progress meanwhile is kept, not an answer.
                    let said = loop {
                        match p.read(deadline) {
                            Ok(l) if progress::is_progress(l) => {
                                let l = l.to_string();
                                self.heard_from(rank, &l);
                            }
                            other => break other.map(str::to_string),
                        }
                    };
                    why = match said.as_deref() {
                        Err(e) => Some(format!(
                            "shard {rank} did not say it was ready for start {rep} ({e}): it failed or stopped; see its output"
                        )),
                        Ok(said) if said.starts_with("abort ") => {
                            Some(format!("shard {rank} ended the run: {}", &said[6..]))
                        }
                        Ok(said) if said != format!("ready {rep}") => Some(format!(
                            "shard {rank} said {said:?} where \"ready {rep}\" was due: the shards run different plans or versions"
                        )),
                        Ok(_) => None,
                    };
                    if why.is_some() {
                        break;
                    }
                }
                if let Some(why) = why {
                    // The others would wait for a start that never comes: told at once.
                    for p in peers.iter_mut() {
                        let _ = p.send(&format!("abort {why}"));
                    }
                    return fail(why);
                }
                let at = unix_ns() + START_AHEAD.as_nanos() as u64;
                for (k, p) in peers.iter_mut().enumerate() {
                    p.send(&format!("start {rep} {at}")).map_err(|e| {
                        RendezvousError(format!("shard {} left the rendezvous: {e}", k + 1))
                    })?;
                }
                at
            }
            Role::Follower(l) => {
                l.send(&format!("ready {rep}"))
                    .map_err(|e| RendezvousError(format!("rank 0 left the rendezvous: {e}")))?;
                let said = l
                    .read(Instant::now() + READY_WAIT + START_AHEAD)
                    .map_err(|e| RendezvousError(format!("rank 0 did not give start {rep} ({e}): it or another shard failed; see rank 0's output")))?;
                let mut w = said.split(' ');
                match (
                    w.next(),
                    w.next(),
                    w.next().and_then(|t| t.parse::<u64>().ok()),
                ) {
                    (Some("start"), Some(r), Some(at)) if r == rep.to_string() => at,
                    (Some("abort"), ..) => {
                        return fail(format!("rank 0 ended the run: {}", &said[5..].trim()));
                    }
                    _ => return fail(format!("rank 0 said {said:?}: not a start")),
                }
            }
        };
        Ok(at)
    }

    /// Ends the run on every shard: rank 0 tells the others at once (they fail with `why`
    /// at their next start); another shard leaves, which rank 0 sees at its next start. No
    /// start follows on this shard.
    pub fn abort(&self, why: &str) {
        let Ok(mut guard) = self.role.lock() else {
            return;
        };
        let (role, _, ended) = &mut *guard;
        match role {
            Role::Leader(peers) => {
                for p in peers.iter_mut() {
                    let _ = p.send(&format!("abort {why}"));
                }
            }
            Role::Follower(l) => {
                let _ = l.send(&format!("abort {why}"));
                let _ = l.input.get_ref().shutdown(std::net::Shutdown::Both);
            }
        }
        *ended = Some(why.to_string());
    }

    /// Waits with every other shard at the next start, then until its instant: a barrier
    /// (between a suite's phases: every shard has loaded before any runs a workload).
    pub fn meet(&self) -> Result<(), RendezvousError> {
        let at = self.start()?;
        wait_until(self.local(at));
        Ok(())
    }

    /// The instant `at` of rank 0's clock on this machine's clock.
    pub fn local(&self, at_unix_ns: u64) -> SystemTime {
        let local = (i128::from(at_unix_ns) + i128::from(self.clock_offset_ns)).max(0) as u64;
        UNIX_EPOCH + Duration::from_nanos(local)
    }
}

/// Sleeps until `t` on this machine's clock: slept to within 2 ms of it, then waited out
/// awake (a sleep oversleeps by a scheduler tick; the shards' starts should not).
pub fn wait_until(t: SystemTime) {
    loop {
        let left = t.duration_since(SystemTime::now()).unwrap_or_default();
        if left.is_zero() {
            return;
        }
        if left > Duration::from_millis(2) {
            std::thread::sleep((left - Duration::from_millis(2)).min(Duration::from_millis(50)));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// A name for this run no other run shares: the plan's hash mixed with rank 0's process,
/// clock and a counter.
fn run_name(plan_id: &str) -> String {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut x = unix_ns()
        ^ (u64::from(std::process::id()) << 32)
        ^ SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    for b in plan_id.bytes() {
        x = (x ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:016x}", results::rng::splitmix64(&mut x))
}

/// Rank 0: listens, takes every other shard's hello, measures their clocks, names the run.
fn lead(
    shard: Shard,
    address: &str,
    addrs: &[SocketAddr],
    (plan_id, run): (&str, &str),
    deadline: Instant,
) -> Result<Role, RendezvousError> {
    let listener = TcpListener::bind(addrs).map_err(|e| {
        RendezvousError(format!(
            "rank 0 cannot listen on {address}: {e}; give --rendezvous an address of rank 0's own machine and a free port"
        ))
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| RendezvousError(format!("listening on {address}: {e}")))?;
    let n = shard.count as usize;
    let mut peers: Vec<Option<Line>> = (0..n).map(|_| None).collect();
    let mut arrived = 1;
    while arrived < n {
        if Instant::now() >= deadline {
            let missing: Vec<String> = (1..n)
                .filter(|&r| peers[r].is_none())
                .map(|r| r.to_string())
                .collect();
            let why = format!(
                "shard{} {} of {n} did not arrive at the rendezvous {address} in time",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", ")
            );
            for p in peers.iter_mut().flatten() {
                let _ = p.send(&format!("abort {why}"));
            }
            return fail(format!(
                "{why}: start every shard within --rendezvous-wait, or check that they reach rank 0"
            ));
        }
        let (s, from) = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(e) => return fail(format!("accepting at {address}: {e}")),
        };
        let _ = s.set_nonblocking(false);
        let Ok(mut line) = Line::new(s) else {
            continue;
        };
        // A connection that says nothing sensible in 5 s is not a shard: dropped.
        let hello = match line.read(Instant::now() + Duration::from_secs(5)) {
            Ok(h) => h.to_string(),
            Err(_) => continue,
        };
        let mut w = hello.split(' ');
        let (Some("dyno-shard"), Some(i), Some(c), Some(id)) =
            (w.next(), w.next(), w.next(), w.next())
        else {
            continue;
        };
        let (Ok(i), Ok(c)) = (i.parse::<usize>(), c.parse::<usize>()) else {
            continue;
        };
        let refuse = |line: &mut Line, why: String| {
            let _ = line.send(&format!("refused {why}"));
            why
        };
        let taken = peers.get(i).is_some_and(Option::is_some);
        if let Some(why) = misfit((i, c, id), (n, plan_id), taken, from) {
            let why = refuse(&mut line, why);
            for p in peers.iter_mut().flatten() {
                let _ = p.send(&format!("abort {why}"));
            }
            return fail(why);
        }
        if let Err(e) = clock(
            &mut line,
            deadline.max(Instant::now() + Duration::from_secs(5)),
            run,
        ) {
            return fail(format!("measuring shard {i}'s clock: {e}"));
        }
        peers[i] = Some(line);
        arrived += 1;
    }
    Ok(Role::Leader(peers.into_iter().skip(1).flatten().collect()))
}

/// Why a shard's hello (its rank `i` of `c`, its plan's identity `id`) does not fit rank 0's
/// run of `n` shards of `plan_id` (`taken`: another shard has that rank), if it does not.
fn misfit(
    (i, c, id): (usize, usize, &str),
    (n, plan_id): (usize, &str),
    taken: bool,
    from: SocketAddr,
) -> Option<String> {
    if c != n {
        Some(format!(
            "shard {i} (from {from}) counts {c} shards, rank 0 counts {n}: give every shard the same N"
        ))
    } else if i == 0 || i >= n {
        Some(format!(
            "a shard from {from} calls itself {i}: ranks 1 to {} join rank 0",
            n - 1
        ))
    } else if taken {
        Some(format!(
            "two shards call themselves {i} (the second from {from}): give each its own rank"
        ))
    } else if id != plan_id {
        Some(format!(
            "shard {i} (from {from}) runs another plan (its hash {id}, rank 0's {plan_id}): run every shard with the same plan and flags"
        ))
    } else {
        None
    }
}

/// Measures a shard's clock offset to rank 0's and tells it, with the run's name.
fn clock(line: &mut Line, deadline: Instant, run: &str) -> std::io::Result<()> {
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..CLOCK_ROUNDS {
        let t1 = unix_ns();
        line.send("ping")?;
        let said = line.read(deadline)?.to_string();
        let t2 = unix_ns();
        let theirs: u64 = said
            .strip_prefix("pong ")
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not a pong"))?;
        let rtt = t2.saturating_sub(t1);
        let offset = theirs as i128 - (t1 as i128 + t2 as i128) / 2;
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset as i64));
        }
    }
    let (rtt, offset) = best.expect("CLOCK_ROUNDS > 0");
    line.send(&format!("clock {offset} {rtt} {run}"))
}

/// A shard other than rank 0: connects (rank 0 may not listen yet: tried until the
/// deadline), says hello, answers the clock's pings.
fn follow(
    shard: Shard,
    address: &str,
    addrs: &[SocketAddr],
    plan_id: &str,
    deadline: Instant,
) -> Result<(Role, i64, u64, String), RendezvousError> {
    let s = loop {
        let tried = addrs
            .iter()
            .find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(2)).ok());
        if let Some(s) = tried {
            break s;
        }
        if Instant::now() >= deadline {
            return fail(format!(
                "shard {} of {}: rank 0 did not answer at {address} in time: start rank 0 (--shard 0/{}) with the same --rendezvous",
                shard.index, shard.count, shard.count
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut line =
        Line::new(s).map_err(|e| RendezvousError(format!("rendezvous at {address}: {e}")))?;
    let broken = |e: std::io::Error| RendezvousError(format!("rendezvous at {address}: {e}"));
    line.send(&format!(
        "dyno-shard {} {} {plan_id}",
        shard.index, shard.count
    ))
    .map_err(broken)?;
    loop {
        let said = line.read(deadline.max(Instant::now() + Duration::from_secs(5)));
        let said = match said {
            Ok(s) => s.to_string(),
            Err(e) => {
                return fail(format!(
                    "rank 0 at {address} did not let shard {} in ({e}): see rank 0's output",
                    shard.index
                ));
            }
        };
        if said == "ping" {
            line.send(&format!("pong {}", unix_ns())).map_err(broken)?;
        } else if let Some(rest) = said.strip_prefix("clock ") {
            let mut w = rest.split(' ');
            let (Some(Ok(offset)), Some(Ok(rtt)), Some(run)) = (
                w.next().map(str::parse::<i64>),
                w.next().map(str::parse::<u64>),
                w.next()
                    .filter(|r| r.len() == 16 && r.bytes().all(|b| b.is_ascii_hexdigit())),
            ) else {
                return fail(format!(
                    "rank 0 said {said:?}: not a clock and a run's name"
                ));
            };
            return Ok((Role::Follower(line), offset, rtt, run.to_string()));
        } else if let Some(why) = said
            .strip_prefix("refused ")
            .or(said.strip_prefix("abort "))
        {
            return fail(format!("rank 0 refused shard {}: {why}", shard.index));
        } else {
            return fail(format!("rank 0 said {said:?}: not dyno's rendezvous"));
        }
    }
}

#[cfg(test)]
mod tests;
