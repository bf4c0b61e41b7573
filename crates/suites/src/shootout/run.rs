//! The `shootout` suite: zodbshootout's six tests, meaning the same on every target.
//!
//! Each of C clients owns N objects of S bytes. One repetition runs, in order:
//!
//! | test    | what the client does | caches before it |
//! |---------|----------------------|------------------|
//! | add     | begin, put its N new objects, commit | — |
//! | update  | begin, rewrite every object (version 2), commit | — |
//! | warm    | a new session reads every object | client cache empty, storage caches kept |
//! | cold    | a new session reads every object | client cache, sessions and storage caches (page cache included) dropped |
//! | hot     | the same session reads every object | client cache empty, storage caches kept |
//! | steamin | reads every object | served by dyno's client cache: the storage must see 0 reads |
//!
//! The client object cache plays the part of ZODB's pickle cache: one preallocated slot per object.
//! A target with a client object cache of its own ([`Store::client_cache`]: ZODB's pickle cache in
//! an adapter) plays it instead: every read goes through the session, `hot` empties the target's
//! cache ([`Session::drop_client_cache`]), and steamin's reads must be served by it. There hot
//! and steamin are timed as zodbshootout times them, the reads alone: the transaction's begin
//! and commit around them are the test's commit time, not in its rate.
//! Every object read from storage is checked against what was written (its key and version in a
//! 16-byte header, and its length), so a fast wrong answer is never counted as a read.
//! A test's rate is all clients' objects over the wall time of the slowest client.

use super::object::{HEADER, ObjectCache, stamp, verify};
use engine::clock::Clock;
use engine::driver::{CacheDrop, ErrorClass, OpError, Session, Store, TxMode};
use engine::fiber::Barrier;
use engine::graph::Heads;
use engine::recorder::{Outcome, Recorder};
use engine::suite::TestOutcome;
use engine::worker::{self, Schedule, Stop};
use results::{Detail, Rep, Status, StoreRep};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicBool;

/// The six tests, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Test {
    Add,
    Update,
    Warm,
    Cold,
    Hot,
    Steamin,
}

impl Test {
    pub const ALL: [Test; 6] = [
        Test::Add,
        Test::Update,
        Test::Warm,
        Test::Cold,
        Test::Hot,
        Test::Steamin,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Test::Add => "add",
            Test::Update => "update",
            Test::Warm => "warm",
            Test::Cold => "cold",
            Test::Hot => "hot",
            Test::Steamin => "steamin",
        }
    }

    fn writes(self) -> bool {
        matches!(self, Test::Add | Test::Update)
    }

    /// Whether zodbshootout times this test's loop of reads alone, with no transaction's begin
    /// or commit around it (its `bench_hot_read`, `bench_steamin_read`): as dyno does through
    /// a target's own cache.
    fn reads_alone(self) -> bool {
        matches!(self, Test::Hot | Test::Steamin)
    }
}

/// The key of object `i` of `client` in repetition `rep`: 24 bits each for rep and client slot,
/// 24 bits for the object. Keys of different repetitions never collide, so each starts fresh.
pub fn key(rep: u32, client: u32, i: u64) -> u64 {
    debug_assert!(i < 1 << 24 && client < 1 << 16);
    (u64::from(rep) << 40) | (u64::from(client) << 24) | i
}

/// Latencies a client keeps unmerged per test at most (8 bytes each): past it, its histogram.
const DEFERRED_MAX: u64 = 16_384;

/// Suite parameters, resolved.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub objects: u64,
    pub clients: u32,
    /// Generator threads carrying the clients, where the store's sessions allow many per
    /// thread, and their I/O.
    pub generators: engine::fiber::Generators,
    pub size: usize,
    pub seed: u64,
}

/// The deterministic generator of object contents.
pub(crate) use results::rng::splitmix64 as splitmix;

/// One client: its session, cache, buffers and what it measured in the current test.
struct Client {
    index: u32,
    clock: Clock,
    session: Option<Box<dyn Session>>,
    cache: ObjectCache,
    /// The target keeps the client cache ([`Store::client_cache`]); `cache` stays unused.
    target_cache: bool,
    value: Vec<u8>,
    buf: Vec<u8>,
    /// A batched read's headers and lengths.
    heads: Heads,
    rec: Recorder,
    elapsed_ns: u64,
    commit_ns: u64,
    storage_reads: u64,
    fatal: Option<String>,
    interrupted: bool,
}

impl Client {
    fn new(index: u32, clock: Clock, p: &Params, target_cache: bool) -> Client {
        let mut state = p.seed ^ (u64::from(index) << 32);
        let value = (0..p.size).map(|_| splitmix(&mut state) as u8).collect();
        Client {
            index,
            clock,
            session: None,
            cache: ObjectCache::new(if target_cache { 0 } else { p.objects }, p.size),
            target_cache,
            value,
            buf: Vec::with_capacity(p.size),
            heads: Heads::default(),
            // A test's latencies kept as they are until merged (see Recorder::deferred).
            rec: Recorder::deferred(p.objects.min(DEFERRED_MAX) as usize),
            elapsed_ns: 0,
            commit_ns: 0,
            storage_reads: 0,
            fatal: None,
            interrupted: false,
        }
    }

    fn reset_measurements(&mut self) {
        self.rec.reset();
        self.elapsed_ns = 0;
        self.commit_ns = 0;
        self.storage_reads = 0;
        self.fatal = None;
        self.interrupted = false;
    }

    /// Runs one test for this client; the barrier makes every client start together. A driver
    /// that panics fails this client's test (and loses its session); it never takes dyno down, nor
    /// leaves the other clients waiting at the barrier.
    fn run(
        &mut self,
        test: Test,
        rep: u32,
        p: &Params,
        store: &dyn Store,
        barrier: &Barrier,
        interrupt: &AtomicBool,
    ) {
        self.reset_measurements();
        if self.session.is_none() {
            match catch_unwind(AssertUnwindSafe(|| store.connect(&self.clock))) {
                Ok(Ok(s)) => self.session = Some(s),
                Ok(Err(e)) => {
                    self.fatal = Some(format!("client {} could not connect: {e}", self.index))
                }
                Err(panic) => {
                    self.fatal = Some(format!(
                        "client {}: the driver panicked while connecting: {}",
                        self.index,
                        panic_message(&panic)
                    ))
                }
            }
        }
        if test == Test::Hot && self.target_cache && self.fatal.is_none() {
            let dropped = match self.session.as_deref_mut() {
                Some(s) => catch_unwind(AssertUnwindSafe(|| s.drop_client_cache())).unwrap_or_else(
                    |panic| {
                        Err(OpError::new(
                            ErrorClass::Application,
                            format!("the driver panicked: {}", panic_message(&panic)),
                        ))
                    },
                ),
                None => Ok(()),
            };
            if let Err(e) = dropped {
                self.session = None;
                self.fatal = Some(format!(
                    "client {}: emptying its client cache failed: {e}",
                    self.index
                ));
            }
        }
        barrier.wait();
        if self.session.is_none() {
            return;
        }
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.measure(test, rep, p, interrupt)))
        {
            self.session = None;
            self.fatal = Some(format!(
                "client {}: the driver panicked: {}",
                self.index,
                panic_message(&panic)
            ));
        }
    }

    /// The timed part of a test: begin, the operations, commit (through the target's own
    /// cache, hot's and steamin's time is the operations', as zodbshootout's loops).
    fn measure(&mut self, test: Test, rep: u32, p: &Params, interrupt: &AtomicBool) {
        let Some(session) = self.session.as_deref_mut() else {
            return;
        };
        let reads_before = session.storage_reads();
        let clock = &self.clock;
        let t0 = clock.now_ns();
        let mode = if test.writes() {
            TxMode::Write
        } else {
            TxMode::Read
        };
        if let Err(e) = session.begin(mode) {
            self.fatal = Some(format!("client {}: begin failed: {e}", self.index));
            return;
        }
        let t_begun = clock.now_ns();
        let (client, size) = (self.index, p.size);
        let writes = test.writes();
        if !writes && self.target_cache {
            let args = (rep, client, p, interrupt);
            self.interrupted = read_batch(session, clock, &mut self.rec, &mut self.heads, args);
        } else {
            let version = if test == Test::Add { 1 } else { 2 };
            let own_cache = !self.target_cache;
            let (cache, buf, value) = (&mut self.cache, &mut self.buf, &mut self.value);
            let end = worker::run(
                clock,
                &mut Schedule::Closed,
                Stop::Count(p.objects),
                interrupt,
                &mut self.rec,
                |i| -> Outcome {
                    let k = key(rep, client, i);
                    if writes {
                        stamp(value, k, version);
                        session.put(k, value)?;
                        return Ok(size as u64);
                    }
                    if own_cache && let Some(obj) = cache.get(i as usize) {
                        return Ok(std::hint::black_box(obj).len() as u64);
                    }
                    session.get(k, buf)?;
                    verify(buf, buf.len(), k, version, size)?;
                    if own_cache {
                        cache.put(i as usize, buf);
                    }
                    Ok(size as u64)
                },
            );
            self.interrupted = end.interrupted;
        }
        let t_committing = clock.now_ns();
        let committed = session.commit();
        let t1 = clock.now_ns();
        self.commit_ns = (t_begun - t0) + (t1 - t_committing);
        // Through the target's own cache, hot and steamin are timed as zodbshootout times
        // them: its loop of reads alone, after a sync, with no transaction's begin or commit
        // (RelStorage's poll of its database at each: 0.5 ms, where a batch of 1,000 objects
        // from the pickle cache takes 0.2). Those stay in the commit time.
        self.elapsed_ns = if self.target_cache && test.reads_alone() {
            t_committing - t_begun
        } else {
            t1 - t0
        };
        self.storage_reads = session.storage_reads() - reads_before;
        if let Err(e) = committed {
            self.fatal = Some(format!("client {}: commit failed: {e}", self.index));
        }
    }
}

/// Keys per batched read: zodbshootout's loop of 1,000 objects, and a reply of bounded size.
const READ_BATCH: u64 = 1000;

/// A read test as zodbshootout times it, where the target keeps the client cache (ZODB's
/// pickle cache, behind an adapter): the client's objects in batched requests of [`READ_BATCH`]
/// for what the check reads of each (its length and header: `get_heads`), each timed around it
/// and each object recorded at its batch's time per object — so a read the cache serves costs
/// what it costs there, not a round trip to the adapter, nor the copying of its bytes back, per
/// object. Stops between batches when interrupted; `true` then.
fn read_batch(
    session: &mut dyn Session,
    clock: &Clock,
    rec: &mut Recorder,
    heads: &mut Heads,
    (rep, client, p, interrupt): (u32, u32, &Params, &AtomicBool),
) -> bool {
    let mut first = 0;
    while first < p.objects {
        if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            return true;
        }
        let last = (first + READ_BATCH).min(p.objects);
        let keys: Vec<u64> = (first..last).map(|i| key(rep, client, i)).collect();
        first = last;
        let t0 = clock.now_ns();
        let read = session.get_heads(&keys, HEADER, heads);
        let each = (clock.now_ns() - t0) / keys.len() as u64;
        if let Err(e) = read {
            (0..keys.len()).for_each(|_| rec.record(each, Err(e.clone())));
            continue;
        }
        for (&k, (got, len)) in keys.iter().zip(heads.iter()) {
            rec.record(each, verify(got, len, k, 2, p.size).map(|()| p.size as u64));
        }
        if heads.lens.len() != keys.len() {
            let e = OpError::new(
                ErrorClass::Application,
                format!(
                    "a batched read of {} objects gave {}",
                    keys.len(),
                    heads.lens.len()
                ),
            );
            (heads.lens.len()..keys.len()).for_each(|_| rec.record(each, Err(e.clone())));
        }
    }
    false
}

impl crate::StoreRun for Shootout<'_> {
    fn run_rep(&mut self, ctx: &engine::suite::RepCtx, report: &mut dyn FnMut(TestOutcome)) {
        let epoch = || ctx.clients.load(std::sync::atomic::Ordering::Relaxed);
        self.run_rep_restarting(ctx.rep, &epoch, report)
    }
}

/// Runs the suite's repetitions on one opened store.
pub struct Shootout<'a> {
    store: &'a dyn Store,
    params: Params,
    interrupt: &'a AtomicBool,
    clients: Vec<Client>,
    /// The target's own client cache, where it keeps one ([`Store::client_cache`]).
    target_cache: Option<String>,
    /// Cold closed the sessions and then could not drop the caches: hot's sessions are new.
    sessions_lost: bool,
    /// Virtual clocks: exact, repeatable records (no CPU figure, which is neither).
    virtual_time: bool,
}

impl<'a> Shootout<'a> {
    pub fn new(
        store: &'a dyn Store,
        params: Params,
        virtual_time: bool,
        interrupt: &'a AtomicBool,
    ) -> Shootout<'a> {
        let shared = Clock::monotonic();
        let target_cache = store.client_cache();
        let clients = (0..params.clients)
            .map(|i| {
                let clock = if virtual_time {
                    Clock::new_virtual()
                } else {
                    shared.clone()
                };
                Client::new(i, clock, &params, target_cache.is_some())
            })
            .collect();
        Shootout {
            store,
            target_cache,
            sessions_lost: false,
            params,
            interrupt,
            clients,
            virtual_time,
        }
    }

    /// Runs the six tests of repetition `rep` (keys are fresh for each `rep`), reporting each.
    pub fn run_rep(&mut self, rep: u32, report: &mut dyn FnMut(TestOutcome)) {
        self.run_rep_restarting(rep, &|| 0, report)
    }

    /// [`Shootout::run_rep`], the clients restarted (sessions and caches dropped, new sessions
    /// opened) before any test once `epoch` changed: a `restart-clients` fault, which takes
    /// effect between tests so that no test's transactions are cut in two.
    pub fn run_rep_restarting(
        &mut self,
        rep: u32,
        epoch: &dyn Fn() -> u64,
        report: &mut dyn FnMut(TestOutcome),
    ) {
        let mut restarts = crate::ClientRestarts::new(epoch);
        for test in Test::ALL {
            if self.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            let restarted = restarts.due();
            if restarted {
                self.close_sessions();
            }
            let mut o = self.run_test(test, rep);
            if restarted {
                crate::ClientRestarts::note(&mut o, "the clients were restarted");
            }
            report(o);
        }
        // Sessions do not outlive a repetition: the next one starts as a new process would.
        self.close_sessions();
    }

    fn close_sessions(&mut self) {
        for c in &mut self.clients {
            c.session = None;
            c.cache.clear();
        }
    }

    fn run_test(&mut self, test: Test, rep: u32) -> TestOutcome {
        let mut cache_note = None;
        match test {
            Test::Add | Test::Update => {}
            Test::Steamin => {
                if let Some(what) = &self.target_cache {
                    cache_note = Some(format!("read through the target's client cache ({what})"));
                }
            }
            Test::Warm => self.close_sessions(),
            Test::Hot => {
                self.clients.iter_mut().for_each(|c| c.cache.clear());
                // Each client empties its session's cache before the barrier (Client::run).
                let notes = [
                    std::mem::take(&mut self.sessions_lost).then(|| {
                        "new sessions: the cold test closed warm's before the target said it could not drop its caches".to_string()
                    }),
                    (self.target_cache.as_ref())
                        .map(|what| format!("the target's client cache emptied ({what})")),
                ];
                let notes: Vec<String> = notes.into_iter().flatten().collect();
                cache_note = (!notes.is_empty()).then(|| notes.join("; "));
            }
            Test::Cold => {
                // Known before anything is closed: hot then still finds warm's sessions.
                if let Some(why) = self.store.cold_unreachable() {
                    return TestOutcome::not_run(test.name(), Status::Na, why);
                }
                self.close_sessions();
                match self.store.drop_caches() {
                    Ok(CacheDrop::Done(what)) => {
                        cache_note = Some(format!(
                            "client object cache cleared; sessions closed; {what}"
                        ))
                    }
                    Ok(CacheDrop::NotReachable(why)) => {
                        // Found out only now: the sessions are closed, and hot opens new ones.
                        self.sessions_lost = true;
                        return TestOutcome::not_run(test.name(), Status::Na, why);
                    }
                    Err(e) => {
                        return TestOutcome::not_run(
                            test.name(),
                            Status::Failed,
                            format!("dropping the caches failed: {e}"),
                        );
                    }
                }
            }
        }

        if !test.writes() && self.target_cache.is_some() {
            let batched = format!(
                "each client's objects read in one batch of up to 1,000 ({}) and timed around it, as zodbshootout times them: latencies are the batch's time per object",
                if self.store.reads_heads() {
                    "get_heads: each object's length and header, what dyno checks, not its bytes"
                } else {
                    "get_many: the adapter has no get_heads, so each object's bytes come back whole"
                }
            );
            let batched = if test.reads_alone() {
                format!(
                    "{batched}; the rate is the reads' alone, as zodbshootout's loop: the transaction's begin and commit are the commit time"
                )
            } else {
                batched
            };
            cache_note = Some(match cache_note {
                Some(n) => format!("{n}; {batched}"),
                None => batched,
            });
        }
        let barrier = Barrier::new(self.clients.len());
        let (store, params, interrupt) = (self.store, &self.params, self.interrupt);
        let threads = crate::generator_threads(store, params.generators, self.clients.len());
        let jobs = (self.clients.iter_mut())
            .map(|c| -> engine::fiber::Job<'_, ()> {
                let barrier = &barrier;
                Box::new(move || c.run(test, rep, params, store, barrier, interrupt))
            })
            .collect();
        let (u0, s0) = engine::load::process_cpu_ns();
        // A client catches its driver's panics itself (`Client::run`).
        let _ = engine::fiber::join_all(threads, jobs);
        let (u1, s1) = engine::load::process_cpu_ns();
        self.outcome(test, cache_note, (u1 + s1).saturating_sub(u0 + s0))
    }

    fn outcome(&self, test: Test, cache: Option<String>, cpu_ns: u64) -> TestOutcome {
        let mut recorder = Recorder::new();
        for c in &self.clients {
            recorder.merge(&c.rec);
        }
        let client_ns: Vec<u64> = self.clients.iter().map(|c| c.elapsed_ns).collect();
        let wall_ns = client_ns.iter().copied().max().unwrap_or(0);
        let storage_reads: u64 = self.clients.iter().map(|c| c.storage_reads).sum();
        let errors = recorder.error_count();
        let objects = recorder.ops;
        let op = if test.writes() { "put" } else { "get" };
        let rep = Rep {
            ops: objects,
            clients: self.params.clients,
            wall_ns,
            client_ns,
            ops_per_s: results::stats::per_s(objects as f64, wall_ns),
            errors,
            latency_ns: results::stats::latency_summary(&recorder.latency),
            by_op: [(op.to_string(), recorder.figures())].into(),
            detail: Detail::Store(StoreRep {
                commit_ns: self.clients.iter().map(|c| c.commit_ns).max().unwrap_or(0),
                storage_reads,
                client_cpu_ns: (!self.virtual_time).then_some(cpu_ns),
            }),
        };

        let fatal: Vec<&str> = self
            .clients
            .iter()
            .filter_map(|c| c.fatal.as_deref())
            .collect();
        let (status, reason) = if self.clients.iter().any(|c| c.interrupted) {
            (Status::Interrupted, Some("stopped by the user".to_string()))
        } else if !fatal.is_empty() {
            (Status::Failed, Some(fatal.join("; ")))
        } else if errors > 0 {
            (Status::Failed, Some(error_reason(&recorder, objects)))
        } else {
            match test {
                Test::Steamin if storage_reads > 0 => (
                    Status::Failed,
                    Some(format!(
                        "steamin: the storage saw {storage_reads} reads; every object should have come from the client cache"
                    )),
                ),
                Test::Warm | Test::Cold | Test::Hot if storage_reads != objects => (
                    Status::Failed,
                    Some(format!(
                        "{}: {storage_reads} of {objects} reads reached the storage; all should have",
                        test.name()
                    )),
                ),
                _ => (Status::Ok, None),
            }
        };
        let ran = objects > 0 || fatal.is_empty();
        TestOutcome {
            test: test.name(),
            status,
            reason,
            cache,
            rep: ran.then_some(rep),
            recorder,
            server: Vec::new(),
        }
    }
}

pub(crate) use engine::fiber::panic_message;

pub(crate) fn error_reason(rec: &Recorder, ops: u64) -> String {
    let classes: Vec<String> = ErrorClass::ALL
        .iter()
        .filter(|c| rec.errors[**c as usize] > 0)
        .map(|c| format!("{} {}", rec.errors[*c as usize], c.as_str()))
        .collect();
    let first = ErrorClass::ALL
        .iter()
        .find_map(|c| rec.examples[*c as usize].as_deref())
        .unwrap_or("");
    format!(
        "{} of {ops} operations failed ({}); first: {first}",
        rec.error_count(),
        classes.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_reps_clients_and_objects_never_collide() {
        let mut seen = std::collections::HashSet::new();
        for rep in [0, 1, 255] {
            for client in [0, 1, 1023] {
                for i in [0, 1, (1 << 24) - 1] {
                    assert!(seen.insert(key(rep, client, i)));
                }
            }
        }
    }
}
