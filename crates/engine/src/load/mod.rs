//! The event-loop engine for request/response targets (`http://`, `tcp://`).
//!
//! One thread per core, each running one poll loop over many non-blocking connections. The
//! schedule, the stop condition and the recorder are the same pieces the blocking worker loop uses
//! ([`Schedule::next`], [`Stop::reached`], [`Recorder`]); what differs is that a thread has many
//! operations in flight at once.
//!
//! - **Closed loop** (wrk's model, or gobench's N clients × M requests): each connection sends its
//!   next request when its previous response ends; latency runs from that moment.
//! - **Open loop** (wrk2's model): requests are due at the arrival times of a rate profile. A due
//!   request takes an idle connection, or opens a new one (up to the connection limit), or waits in
//!   a queue for the next free connection. Latency always runs from the *intended* time, so time
//!   spent queued behind a stalled target is charged to it (coordinated omission is never hidden);
//!   the service time from the actual send is recorded beside it.
//!
//! Every thread also measures itself: how late it dispatched each due request (the schedule lag,
//! which only the generator can cause) and the CPU it used, so a run whose generator could not keep
//! up says so. Network failures (refused, reset, timeout, broken responses) are counted by class;
//! nothing a server sends can crash or hang the loop: responses are bounded by the reader, every
//! request by the timeout, and the whole run by its stop condition plus one timeout to drain.

pub mod backend;
mod channel;
pub mod coalesce;
mod interval;
mod mix;
pub mod protocol;
mod streamed;
use crate::timer;
mod worker;

pub use backend::{Io, IoUsed};
pub use channel::handshake_blocking;
pub use coalesce::{Coalesce, Waits};
pub use interval::{Interval, Live, MAX_RECORD_INTERVALS};
pub use mix::{Mix, Scenario};
pub use protocol::{Channel, Ended, Feed, Protocol, Render, ResponseReader, Session};
pub use streamed::Streamed;
pub use timer::{process_cpu_ns, thread_cpu_ns};

use interval::*;
use worker::*;

use crate::clock::Clock;
use crate::error::{ErrorClass, OpError};
use crate::recorder::Recorder;
use crate::schedule::{ArrivalKind, Arrivals, RateProfile};
use crate::worker::{Schedule, Stop};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use results::Histogram;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// Requests waiting for a connection, per thread. Past this many the target is so far behind that
/// further requests are counted as dropped instead of queued (8 bytes each: 8 MiB per thread).
pub const MAX_BACKLOG: usize = 1 << 20;
/// Bytes read from a socket at a time (one buffer per thread, shared by its connections).
const READ_CHUNK: usize = 64 << 10;
/// How often in-flight requests are checked against the timeout.
const SCAN_NS: u64 = 10_000_000;
/// After a refused or failed connection, a closed-loop client waits this long before trying
/// again, so a dead target costs errors, not a spinning CPU.
const RETRY_PAUSE_NS: u64 = 10_000_000;
/// Events taken from the kernel per poll.
const EVENTS: usize = 1024;
/// The token of a thread's timer.
const TIMER: Token = Token(usize::MAX);

/// How load is offered: the one type the plan resolves to and the engine runs.
#[derive(Debug, Clone)]
pub enum LoadModel {
    /// Each connection sends its next request when its previous response ends, until `stop` (a
    /// duration for all, or a count of requests per connection).
    Closed { stop: Stop },
    /// Requests at the arrival times of `profile`; connections opened up front, more as needed up
    /// to `max_connections`.
    Open {
        profile: RateProfile,
        arrival: ArrivalKind,
        max_connections: u64,
    },
}

impl LoadModel {
    /// The mean rate an open loop asks for; `None` for a closed loop (the target sets the pace).
    pub fn intended_per_s(&self) -> Option<f64> {
        match self {
            LoadModel::Open { profile, .. } => profile.mean_per_s(),
            LoadModel::Closed { .. } => None,
        }
    }
}

/// Everything one load run needs.
#[derive(Clone)]
pub struct LoadSpec {
    pub addr: SocketAddr,
    pub protocol: Arc<dyn Protocol>,
    pub threads: usize,
    pub model: LoadModel,
    /// Connections opened up front (all of them, in a closed loop).
    pub connections: usize,
    /// The seed of Poisson arrivals.
    pub seed: u64,
    /// A request with no complete response this long after it started is a `timeout`.
    pub timeout: Duration,
    /// Length of the intervals of the time series (and of the `.hlog`).
    pub interval: Duration,
    /// How often responses may wake a thread ([`coalesce`]).
    pub coalesce: Coalesce,
    /// The I/O backend asked for ([`backend`]).
    pub io: Io,
    /// When this changes, every connection is dropped (a request in flight fails as `reset`)
    /// and opened again: a `restart-clients` fault.
    pub clients: Arc<std::sync::atomic::AtomicU64>,
    /// This generator's place among the shards of a run (index, count; `(0, 1)` alone): an
    /// open loop's evenly spaced arrivals are phased so that every shard's threads interleave.
    /// The rest of the split (rate, connections) is already in `model` and `connections`.
    pub shard: (u32, u32),
    /// A shard's agreed start, on this machine's clock: the threads, ready, are let go then
    /// (the schedule counts from it); `None` starts at once.
    pub start_at: Option<std::time::SystemTime>,
    /// How many send times to keep, all threads together (the first of each thread's share):
    /// a shard's open loop keeps them for the merged inter-arrival check; 0 keeps none.
    pub keep_sends: usize,
}

/// Counts of one run (summed over threads).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Requests started (sent, or attempted when the connection failed).
    pub requests: u64,
    /// Complete responses, whatever their status.
    pub responses: u64,
    /// Complete responses that report success (HTTP 2xx; any complete frame for tcp).
    pub ok: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Connections established.
    pub connects: u64,
    /// Requests that were due but never sent: the queue was full, or the run ended first.
    pub unsent: u64,
    /// Time-weighted mean of requests outstanding (in flight or queued), summed over threads.
    pub outstanding_mean: f64,
    /// The largest number outstanding at once on any thread, summed over threads: an upper bound.
    pub outstanding_max: u64,
    /// System calls the load threads made for their sockets and waits (sends, receives, polls
    /// or ring submissions, connects, timers, sleeps): counted where they are made.
    pub syscalls: u64,
}

impl Counters {
    /// Adds another thread's counts (the means and maxima add too: threads run side by side).
    pub fn add(&mut self, o: &Counters) {
        self.requests += o.requests;
        self.responses += o.responses;
        self.ok += o.ok;
        self.bytes_out += o.bytes_out;
        self.bytes_in += o.bytes_in;
        self.connects += o.connects;
        self.unsent += o.unsent;
        self.outstanding_mean += o.outstanding_mean;
        self.outstanding_max += o.outstanding_max;
        self.syscalls += o.syscalls;
    }
}

/// How the generator itself did.
#[derive(Debug, Clone)]
pub struct SelfCheck {
    /// Open loop: how late each due request was dispatched by dyno itself (not by queueing).
    pub lag: Histogram,
    /// Open loop: the requests the profile asked for, per second (`None` in closed loop).
    pub intended_per_s: Option<f64>,
    /// Requests started per second.
    pub achieved_per_s: f64,
    /// CPU time of dyno's process during the run: user and system, ns.
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    /// The busiest load thread's CPU time over its wall time.
    pub busiest_thread: f64,
    /// How the load threads waited ([`coalesce`]).
    pub waits: Waits,
    /// The I/O backend that ran, and why.
    pub io: IoUsed,
}

/// What a load run produced.
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// Latency (from the intended start) and service time (from the actual send) of every
    /// response, and failures by class.
    pub recorder: Recorder,
    /// The target's mix, and the same figures per request of it, in its order (empty without
    /// one).
    pub mix: Option<Mix>,
    pub by_request: Vec<Recorder>,
    /// Per request, each check's name with how many responses passed and failed it (empty
    /// when no request has checks).
    pub checks: Vec<Vec<(String, [u64; 2])>>,
    /// A scenario's iterations, each timed from its first step's intended start to its last
    /// step's response; failed ones (a step without a response) counted by class.
    pub iterations: Option<Recorder>,
    /// The scenario's steps, by request name.
    pub scenario_steps: Vec<String>,
    pub counters: Counters,
    /// The time series, bounded ([`MAX_RECORD_INTERVALS`]); each interval was also handed to the
    /// run's observer as it ended.
    pub intervals: Vec<results::IntervalRecord>,
    pub check: SelfCheck,
    /// TLS targets: each connection's handshake, from TCP connected to the handshake done.
    pub handshake: Histogram,
    /// Streamed responses' messages (none unless the protocol streams).
    pub streamed: Streamed,
    /// The send times kept ([`LoadSpec::keep_sends`]), in order, ns on the run's load clock,
    /// whose zero was `zero_unix_ns` on this machine's clock (ns since the Unix epoch).
    pub sends_ns: Vec<u64>,
    pub zero_unix_ns: u64,
    pub wall_ns: u64,
    pub interrupted: bool,
    /// When the threads started (together, past a barrier): the intervals count from here.
    pub started: std::time::Instant,
}

/// Splits `n` into `parts` shares that differ by at most one.
fn split(n: usize, parts: usize, i: usize) -> usize {
    n / parts + usize::from(i < n % parts)
}

/// The shares of `n` before share `i` (each at least 1, as an open loop's threads get):
/// where share `i` begins.
fn before(n: usize, parts: usize, i: usize) -> usize {
    (0..i).map(|j| split(n, parts, j).max(1)).sum()
}

/// Thread `i`'s share of the load: its connections, its schedule (an open loop's arrivals are
/// split evenly, each thread with its own seed), its stop.
fn share(spec: &LoadSpec, threads: usize, i: usize) -> Share {
    let streams = spec
        .protocol
        .session()
        .map_or(1, |_| spec.protocol.streams().max(1));
    let share = bare_share(spec, threads, i);
    let clients = match &spec.model {
        LoadModel::Closed { .. } => spec.connections,
        LoadModel::Open {
            max_connections, ..
        } => *max_connections as usize,
    };
    Share {
        client_base: (before(clients, threads, i) * streams) as u64,
        ..share
    }
}

fn bare_share(spec: &LoadSpec, threads: usize, i: usize) -> Share {
    match &spec.model {
        LoadModel::Closed { stop } => Share {
            index: i,
            connections: split(spec.connections, threads, i),
            max_connections: split(spec.connections, threads, i),
            schedule: Schedule::Closed,
            stop: Some(*stop),
            closed_remaining: match stop {
                Stop::Count(n) | Stop::DurationOrCount { count: n, .. } => *n,
                Stop::Duration { .. } => u64::MAX,
            },
            origin_ns: None,
            client_base: 0,
        },
        LoadModel::Open {
            profile,
            arrival,
            max_connections,
        } => {
            // Part `g` of all the schedules of every shard's threads: evenly spaced arrivals
            // of all the parts interleave (phase g/parts); Poisson ones draw apart.
            let (shard, shards) = (spec.shard.0 as usize, spec.shard.1.max(1) as usize);
            let (g, parts) = (shard * threads + i, threads * shards);
            Share {
                index: i,
                connections: split(spec.connections, threads, i),
                max_connections: split(*max_connections as usize, threads, i).max(1),
                schedule: Schedule::Open(
                    Arrivals::new(
                        profile.scaled(1.0 / threads as f64),
                        *arrival,
                        spec.seed.wrapping_add(g as u64 * 0x9E37_79B9),
                    )
                    .with_phase(g as f64 / parts as f64),
                ),
                stop: None,
                closed_remaining: u64::MAX,
                origin_ns: None,
                client_base: 0,
            }
        }
    }
}

/// What every thread measured, added up.
struct Merged {
    recorder: Recorder,
    by_request: Vec<Recorder>,
    checks: Vec<Vec<[u64; 2]>>,
    iterations: Option<Recorder>,
    lag: results::Histogram,
    handshake: results::Histogram,
    streamed: Streamed,
    counters: Counters,
    wall_ns: u64,
    busiest: f64,
    interrupted: bool,
    waits: Waits,
}

fn merge(parts: &[WorkerResult]) -> Merged {
    let mut recorder = Recorder::new();
    let mut by_request: Vec<Recorder> = Vec::new();
    let mut checks: Vec<Vec<[u64; 2]>> = Vec::new();
    let mut iterations: Option<Recorder> = None;
    let mut lag = results::new_histogram();
    let mut handshake = results::new_histogram();
    let mut streamed = Streamed::default();
    let mut counters = Counters::default();
    let mut wall_ns = 0;
    let mut busiest: f64 = 0.0;
    let mut interrupted = false;
    let mut waits = Waits::default();
    for p in parts {
        waits.add(&p.waits);
        recorder.merge(&p.rec);
        by_request.resize_with(p.by_request.len(), Recorder::new);
        for (all, one) in by_request.iter_mut().zip(&p.by_request) {
            all.merge(one);
        }
        if let Some(one) = &p.iterations {
            iterations.get_or_insert_with(Recorder::new).merge(one);
        }
        if checks.is_empty() {
            checks.clone_from(&p.checks);
        } else {
            for (all, one) in (checks.iter_mut().flatten()).zip(p.checks.iter().flatten()) {
                all[0] += one[0];
                all[1] += one[1];
            }
        }
        lag.add(&p.lag)
            .expect("histograms of one range always merge");
        handshake
            .add(&p.handshake)
            .expect("histograms of one range always merge");
        streamed.add(&p.streamed);
        counters.add(&p.counters);
        wall_ns = wall_ns.max(p.wall_ns);
        if p.wall_ns > 0 {
            busiest = busiest.max(p.cpu_ns as f64 / p.wall_ns as f64);
        }
        interrupted |= p.interrupted;
    }
    Merged {
        recorder,
        by_request,
        checks,
        iterations,
        lag,
        handshake,
        streamed,
        counters,
        wall_ns,
        busiest,
        interrupted,
        waits,
    }
}

/// Runs a load and merges what every thread measured. Each interval, merged over the threads,
/// goes to `observe` and into `live` as soon as every thread has finished it; the result's
/// series is `live`'s.
pub fn run(
    spec: &LoadSpec,
    interrupt: &AtomicBool,
    live: &std::sync::Mutex<Live>,
    observe: &mut (dyn FnMut(&Interval) + Send),
) -> io::Result<LoadResult> {
    let threads = spec.threads.max(1);
    let io_used = backend::choose(spec).map_err(io::Error::other)?;
    let on_ring = io_used.backend == "io_uring";
    let clock = Clock::monotonic();
    let zero_unix_ns = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
        .map_or(0, |d| d.as_nanos() as u64);
    let shares = shares(spec, threads, &clock);
    let barrier = Barrier::new(threads + 1);
    let (u0, s0) = process_cpu_ns();
    let mut started = std::time::Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    let results: Vec<io::Result<WorkerResult>> = std::thread::scope(|s| {
        let collector = std::thread::Builder::new()
            .name("dyno-load-intervals".into())
            .spawn_scoped(s, move || collect(rx, threads, live, observe))
            .expect("spawning the interval collector");
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| {
                let (clock, barrier) = (clock.clone(), &barrier);
                let reporter = Reporter {
                    index: share.index,
                    tx: tx.clone(),
                };
                std::thread::Builder::new()
                    .name(format!("dyno-load-{}", share.index))
                    .spawn_scoped(s, move || {
                        match Worker::new(spec, clock, &share, (reporter, on_ring)) {
                            Ok(w) => w.run(share, barrier, interrupt),
                            Err(e) => {
                                barrier.wait();
                                Err(e)
                            }
                        }
                    })
                    .expect("spawning a load thread")
            })
            .collect();
        drop(tx);
        if let Some(t) = spec.start_at {
            crate::shard::wait_until(t);
        }
        barrier.wait();
        started = std::time::Instant::now();
        if let Ok(mut l) = live.lock() {
            l.started = Some(started);
        }
        let results = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a load thread panicked")))
            })
            .collect();
        let _ = collector.join();
        results
    });
    let (u1, s1) = process_cpu_ns();
    let mut parts = Vec::with_capacity(results.len());
    for r in results {
        parts.push(r?);
    }

    let cpu_ns = (u1 - u0, s1 - s0);
    Ok(assemble(
        spec,
        &parts,
        live,
        (started, zero_unix_ns),
        (cpu_ns, io_used),
    ))
}

/// Each thread's share of the load, all counting from a shard's agreed instant (on `clock`).
fn shares(spec: &LoadSpec, threads: usize, clock: &Clock) -> Vec<Share> {
    // A shard's threads all count from the agreed instant, on this clock.
    let origin_ns = spec.start_at.map(|t| {
        let ahead = t
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        clock.now_ns() + ahead.as_nanos() as u64
    });
    (0..threads)
        .map(|i| Share {
            origin_ns,
            ..share(spec, threads, i)
        })
        .collect()
}

/// The threads' parts as one result: the recorder and counters merged, the self-check.
fn assemble(
    spec: &LoadSpec,
    parts: &[WorkerResult],
    live: &std::sync::Mutex<Live>,
    (started, zero_unix_ns): (std::time::Instant, u64),
    (cpu_ns, io): ((u64, u64), IoUsed),
) -> LoadResult {
    let Merged {
        recorder,
        by_request,
        checks,
        iterations,
        lag,
        handshake,
        streamed,
        counters,
        wall_ns,
        busiest,
        interrupted,
        waits,
    } = merge(parts);
    let intended_per_s = spec.model.intended_per_s();
    let achieved_per_s = results::stats::per_s(counters.requests as f64, wall_ns);
    let mut sends_ns: Vec<u64> = parts.iter().flat_map(|p| p.sends.iter().copied()).collect();
    sends_ns.sort_unstable();
    let intervals = live
        .lock()
        .map(|l| l.intervals.to_vec())
        .unwrap_or_default();
    LoadResult {
        started,
        recorder,
        mix: spec.protocol.mix().cloned(),
        by_request,
        checks: (checks.iter().enumerate())
            .map(|(w, counts)| {
                let names = spec.protocol.checks(w).iter().cloned();
                names.zip(counts.iter().copied()).collect()
            })
            .collect(),
        iterations,
        scenario_steps: match (spec.protocol.scenario(), spec.protocol.mix()) {
            (Some(s), Some(m)) => s.steps.iter().map(|&i| m.names()[i].clone()).collect(),
            _ => Vec::new(),
        },
        counters,
        intervals,
        check: SelfCheck {
            lag,
            intended_per_s,
            achieved_per_s,
            cpu_user_ns: cpu_ns.0,
            cpu_sys_ns: cpu_ns.1,
            busiest_thread: busiest,
            waits,
            io,
        },
        handshake,
        streamed,
        sends_ns,
        zero_unix_ns,
        wall_ns,
        interrupted,
    }
}
