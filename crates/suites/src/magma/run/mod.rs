//! The `magma` suite: MagmaBenchmarker's tests, with its groups and names, on any target of the
//! `graph` family (see [`super::list::MAGMA`] for what each operation is).
//!
//! It measures how fast one client session goes, not the server's capacity: one client, one
//! session. Before the first repetition the client builds the benchmark repository (untimed):
//!
//! | objects | what |
//! |---|---|
//! | T small objects | 100-byte payloads; what the arrays refer to |
//! | an array of T elements | one object, T × 8 bytes of immediate values |
//! | an array of T objects | one object of T references to the small objects |
//! | T² pointers | a root referring to T arrays of T references each |
//! | a chain T deep | each object refers to the next |
//! | a collection of T elements | a header (its size, its chunks) and chunks of 100 references, as Magma's large collections page their elements |
//!
//! Every object read is decoded and checked (its id, its version, its size; array payloads byte
//! for byte), so a fast wrong answer is never counted. A rate test repeats its operation for the
//! test time (at least once); a `Seconds` test times one run (the collection tests) or the mean of
//! its operations (connect, disconnect).

use super::list::MAGMA;
use crate::shootout::run::{error_reason, panic_message, splitmix};
use engine::clock::Clock;
use engine::driver::{ErrorClass, OpError, Session, Store, TxMode};
use engine::graph::{self, Object};
use engine::recorder::Recorder;
use engine::suite::TestOutcome;
use engine::worker::{self, Schedule, Stop};
use results::{Detail, Rep, Status, StoreRep};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

mod ops;
use ops::*;

/// Suite parameters, resolved.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// MagmaBenchmarker's `thousands` (T).
    pub thousands: u64,
    /// How long a rate test repeats its operation.
    pub test_ns: u64,
    pub seed: u64,
}

/// Payload of the small objects.
const SMALL_PAYLOAD: usize = 100;
/// References per chunk of a large collection.
const CHUNK: usize = 100;
/// Puts per transaction while building the repository.
const BUILD_BATCH: u64 = 1000;
/// Operations of a rate test per repetition at most (the test time bounds them too): enough
/// for a stable rate, and a bound on a virtual-time target.
const MAX_OPS: u64 = 1_000_000;
/// Connect/disconnect operations per repetition at most.
const MAX_CONNECTS: u64 = 10_000;

const SMALL: u64 = 1;
const ARRAY: u64 = 2;
const ARRAY_OF_OBJECTS: u64 = 3;
const POINTERS: u64 = 4;
const CHAIN: u64 = 5;
const WRITES: u64 = 6;
const COLLECTION: u64 = 7;
const ADDED: u64 = 8;

/// Object `i` of a region; regions keep the suite's objects apart (48 bits each).
fn key(region: u64, i: u64) -> u64 {
    debug_assert!(i < 1 << 48);
    (region << 48) | i
}

/// The collection added to by test `variant` (0, 1, 2) of repetition `rep`: its header, chunk `c`
/// and element `j` (a fresh collection each time).
fn added(rep: u32, variant: u64, what: Added) -> u64 {
    let base = (u64::from(rep) << 36) | (variant << 34);
    key(
        ADDED,
        base | match what {
            Added::Header => 0,
            Added::Chunk(c) => 1 + c,
            Added::Element(j) => (1 << 20) | j,
        },
    )
}

#[derive(Clone, Copy)]
enum Added {
    Header,
    Chunk(u64),
    Element(u64),
}

/// The client's buffers and its copy of what it wrote.
struct Work {
    t: u64,
    rng: u64,
    /// The value being written or read.
    buf: Vec<u8>,
    /// A batched read's values and their ends.
    out: Vec<u8>,
    ends: Vec<usize>,
    keys: Vec<u64>,
    refs: Vec<u64>,
    small: Vec<u8>,
    /// The T-element array's payload, and the big buffer's.
    elements: Vec<u8>,
    big: Vec<u8>,
    buffer1001: Vec<u8>,
    /// Current versions of the four objects the write tests rewrite.
    versions: [u64; 4],
    /// The size/update collection: its elements, and its chunks' version.
    collection: Vec<u64>,
    collection_version: u64,
    dirty: Vec<bool>,
}

impl Work {
    fn new(p: &Params) -> Work {
        let t = p.thousands;
        let mut rng = p.seed ^ 0x006d_6167_6d61;
        let mut bytes =
            |n: usize| -> Vec<u8> { (0..n).map(|_| splitmix(&mut rng) as u8).collect() };
        let small = bytes(SMALL_PAYLOAD);
        let elements = (0..t).flat_map(|i| (i * 7 + 1).to_le_bytes()).collect();
        let buffer1001 = bytes(1001);
        let big = bytes(t as usize * 1000);
        Work {
            t,
            rng,
            buf: Vec::new(),
            out: Vec::new(),
            ends: Vec::new(),
            keys: Vec::new(),
            refs: Vec::new(),
            small,
            elements,
            big,
            buffer1001,
            versions: [1; 4],
            collection: (0..t).map(|i| key(SMALL, i)).collect(),
            collection_version: 1,
            dirty: vec![false; (t as usize).div_ceil(CHUNK)],
        }
    }

    fn random_small(&mut self) -> u64 {
        key(SMALL, splitmix(&mut self.rng) % self.t)
    }

    /// Reads `id` into `buf` and decodes it.
    fn read<'a>(
        session: &mut dyn Session,
        buf: &'a mut Vec<u8>,
        id: u64,
    ) -> Result<Object<'a>, OpError> {
        session.get(id, buf)?;
        Object::decode(buf, id)
    }

    /// Reads `keys` in one batched read and checks each object's id; returns the objects' total
    /// reference count.
    fn read_many(&mut self, session: &mut dyn Session) -> Result<u64, OpError> {
        session.get_many(&self.keys, &mut self.out, &mut self.ends)?;
        if self.ends.len() != self.keys.len() {
            return Err(OpError::new(
                ErrorClass::Corrupt,
                format!(
                    "asked for {} objects, got {}",
                    self.keys.len(),
                    self.ends.len()
                ),
            ));
        }
        let mut refs = 0;
        for (bytes, &id) in graph::split(&self.out, &self.ends).zip(&self.keys) {
            refs += Object::decode(bytes, id)?.expect_version(1)?.ref_count() as u64;
        }
        Ok(refs)
    }
}

/// An operation a magma test repeats.
type Operation = Box<dyn FnMut(&mut dyn Session, &mut Work) -> Result<(), OpError>>;

/// Why a step of the suite failed: the driver said so, or it panicked.
#[derive(Debug, Clone, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    Op(OpError),
    #[error("the driver panicked: {0}")]
    Panic(String),
}

/// Runs the suite's repetitions with one client session on one opened store.
pub struct Magma<'a> {
    store: &'a dyn Store,
    params: Params,
    interrupt: &'a AtomicBool,
    clock: Clock,
    session: Option<Box<dyn Session>>,
    /// Whether the benchmark repository was built (and why not).
    built: Option<Result<(), Failure>>,
    work: Work,
}

impl<'a> Magma<'a> {
    pub fn new(
        store: &'a dyn Store,
        params: Params,
        virtual_time: bool,
        interrupt: &'a AtomicBool,
    ) -> Magma<'a> {
        Magma {
            store,
            params,
            interrupt,
            clock: if virtual_time {
                Clock::new_virtual()
            } else {
                Clock::monotonic()
            },
            session: None,
            built: None,
            work: Work::new(&params),
        }
    }

    /// Runs every test of repetition `rep`, reporting each as it ends.
    pub fn run_rep(&mut self, rep: u32, report: &mut dyn FnMut(TestOutcome)) {
        self.run_rep_restarting(rep, &|| 0, report)
    }

    /// [`Magma::run_rep`], the session dropped and a new one opened before any test once
    /// `epoch` changed (a `restart-clients` fault).
    pub fn run_rep_restarting(
        &mut self,
        rep: u32,
        epoch: &dyn Fn() -> u64,
        report: &mut dyn FnMut(TestOutcome),
    ) {
        let mut restarts = crate::ClientRestarts::new(epoch);
        if self.built.is_none() {
            let built = self.guarded(|m| m.build());
            self.built = Some(built);
        }
        if let Some(Err(why)) = &self.built {
            let why = format!("building the benchmark repository failed: {why}");
            for t in &MAGMA {
                report(TestOutcome::not_run(t.name, Status::Failed, why.clone()));
            }
            return;
        }
        for (i, t) in MAGMA.iter().enumerate() {
            if self.interrupt.load(Ordering::Relaxed) {
                return;
            }
            let restarted = restarts.due();
            if restarted {
                self.session = None;
            }
            let mut outcome = TestOutcome {
                test: t.name,
                ..self.run_test(i, rep)
            };
            if restarted {
                crate::ClientRestarts::note(&mut outcome, "the session was opened anew");
            }
            report(outcome);
        }
        // A session does not outlive a repetition: the next one starts as a new client would.
        self.session = None;
    }

    /// Runs `f` with the session (connecting it first), turning a driver panic into a failure
    /// and dropping the session it may have broken.
    fn guarded<T>(
        &mut self,
        f: impl FnOnce(&mut Magma<'a>) -> Result<T, OpError>,
    ) -> Result<T, Failure> {
        match catch_unwind(AssertUnwindSafe(|| f(self))) {
            Ok(r) => r.map_err(Failure::Op),
            Err(panic) => {
                self.session = None;
                Err(Failure::Panic(panic_message(&panic).to_string()))
            }
        }
    }

    fn session(&mut self) -> Result<&mut dyn Session, OpError> {
        if self.session.is_none() {
            self.session = Some(self.store.connect(&self.clock)?);
        }
        Ok(self.session.as_deref_mut().expect("connected"))
    }

    /// Builds the benchmark repository, committing every [`BUILD_BATCH`] objects.
    fn build(&mut self) -> Result<(), OpError> {
        let t = self.params.thousands;
        let mut objects: Vec<(u64, Vec<u64>, Vec<u8>)> = Vec::new();
        let w = &self.work;
        for i in 0..t {
            objects.push((key(SMALL, i), Vec::new(), w.small.clone()));
        }
        objects.push((key(ARRAY, 0), Vec::new(), w.elements.clone()));
        objects.push((
            key(ARRAY_OF_OBJECTS, 0),
            (0..t).map(|i| key(SMALL, i)).collect(),
            Vec::new(),
        ));
        objects.push((
            key(POINTERS, 0),
            (0..t).map(|i| key(POINTERS, 1 + i)).collect(),
            Vec::new(),
        ));
        for i in 0..t {
            objects.push((
                key(POINTERS, 1 + i),
                (0..t).map(|j| key(SMALL, (i + j) % t)).collect(),
                Vec::new(),
            ));
        }
        for i in 0..t {
            let next = if i + 1 < t {
                vec![key(CHAIN, i + 1)]
            } else {
                Vec::new()
            };
            objects.push((key(CHAIN, i), next, Vec::new()));
        }
        self.session()?;
        let session = self.session.as_deref_mut().expect("connected");
        let w = &mut self.work;
        for (n, (id, refs, payload)) in objects.iter().enumerate() {
            if (n as u64).is_multiple_of(BUILD_BATCH) {
                if n > 0 {
                    session.commit()?;
                }
                session.begin(TxMode::Write)?;
            }
            put(session, &mut w.buf, *id, 1, refs, payload)?;
        }
        for c in 0..w.dirty.len() {
            let id = key(COLLECTION, 1 + c as u64);
            put_chunk(session, &mut w.buf, id, 1, &w.collection, c)?;
        }
        let chunks = (0..w.dirty.len() as u64).map(|c| key(COLLECTION, 1 + c));
        put_header(session, w, key(COLLECTION, 0), 1, t, chunks)?;
        session.commit()
    }

    /// Runs one test, never letting a driver's panic out.
    fn run_test(&mut self, i: usize, rep: u32) -> TestOutcome {
        let name = MAGMA[i].name;
        let mut rec = Recorder::new();
        let reads_before = self.session.as_ref().map_or(0, |s| s.storage_reads());
        let run = self.guarded(|m| m.measure(name, rep, &mut rec));
        let (units, wall_ns, interrupted) = match run {
            Ok(r) => r,
            Err(why) => return TestOutcome::not_run(name, Status::Failed, why.to_string()),
        };
        let storage_reads = self
            .session
            .as_ref()
            .map_or(0, |s| s.storage_reads().saturating_sub(reads_before));
        let errors = rec.error_count();
        let rep = Rep {
            ops: units,
            clients: 1,
            wall_ns,
            client_ns: vec![wall_ns],
            ops_per_s: results::stats::per_s(units as f64, wall_ns),
            errors,
            latency_ns: results::stats::latency_summary(&rec.latency),
            by_op: [(name.to_string(), rec.figures())].into(),
            detail: Detail::Store(StoreRep {
                commit_ns: 0,
                storage_reads,
                client_cpu_ns: None,
            }),
        };
        let (status, reason) = if interrupted {
            (Status::Interrupted, Some("stopped by the user".to_string()))
        } else if errors > 0 {
            (Status::Failed, Some(error_reason(&rec, rec.ops)))
        } else {
            (Status::Ok, None)
        };
        TestOutcome::ran(name, (status, reason), rep, rec)
    }

    /// The timed part of test `name`: (units, wall ns, interrupted).
    fn measure(
        &mut self,
        name: &str,
        rep: u32,
        rec: &mut Recorder,
    ) -> Result<(u64, u64, bool), OpError> {
        match name {
            "timeToDisconnect" => return Ok(self.connections(false, rec)),
            "timeToConnect" => return Ok(self.connections(true, rec)),
            _ => {}
        }
        self.session()?;
        let t = self.params.thousands;
        let (clock, interrupt) = (&self.clock, self.interrupt);
        let rate = Stop::DurationOrCount {
            ns: self.params.test_ns,
            count: MAX_OPS,
        };
        let once = Stop::Count(1);
        let session = self.session.as_deref_mut().expect("connected");
        let w = &mut self.work;
        // Read tests run inside one read transaction; peakRefreshRate ends and begins it per
        // operation, so it needs one open before its first operation too.
        let reading =
            name.ends_with("Read") || name == "getMagmaArraySize" || name == "peakRefreshRate";
        if reading {
            session.begin(TxMode::Read)?;
        }
        let mut units = 0u64;
        let (repeated, per_op, mut op) = operation(name, rep, t);
        let stop = if repeated { rate } else { once };
        let end = worker::run(clock, &mut Schedule::Closed, stop, interrupt, rec, |_| {
            op(session, w)?;
            units += per_op;
            Ok(0)
        });
        if reading {
            session.commit()?;
        }
        Ok((units, end.elapsed_ns(), end.interrupted))
    }

    /// Connects and disconnects repeatedly, timing one of the two: (count, summed ns, interrupted).
    fn connections(&mut self, connect: bool, rec: &mut Recorder) -> (u64, u64, bool) {
        self.session = None;
        let (clock, start) = (&self.clock, self.clock.now_ns());
        let (mut n, mut timed) = (0u64, 0u64);
        loop {
            if self.interrupt.load(Ordering::Relaxed) {
                return (n, timed, true);
            }
            let t0 = clock.now_ns();
            let session = self.store.connect(clock);
            let t1 = clock.now_ns();
            let ns = match session {
                Ok(s) if connect => {
                    drop(s);
                    rec.record(t1 - t0, Ok(0));
                    t1 - t0
                }
                Ok(s) => {
                    let t2 = clock.now_ns();
                    drop(s);
                    let t3 = clock.now_ns();
                    rec.record(t3 - t2, Ok(0));
                    t3 - t2
                }
                Err(e) => {
                    rec.record(t1 - t0, Err(e));
                    t1 - t0
                }
            };
            n += 1;
            timed += ns.max(1);
            if n >= MAX_CONNECTS || clock.now_ns() - start >= self.params.test_ns {
                return (n, timed, false);
            }
        }
    }
}

/// Adds T new objects to a fresh collection, `batch` per transaction: the objects, the chunks
/// they land in, and the header (its size and chunks), then commit.
fn add(
    s: &mut dyn Session,
    w: &mut Work,
    rep: u32,
    variant: u64,
    batch: u64,
) -> Result<(), OpError> {
    let t = w.t;
    let mut elements: Vec<u64> = Vec::with_capacity(t as usize);
    let mut version = 0;
    while (elements.len() as u64) < t {
        version += 1;
        s.begin(TxMode::Write)?;
        let first = elements.len();
        let n = batch.min(t - first as u64);
        for j in first as u64..first as u64 + n {
            let id = added(rep, variant, Added::Element(j));
            put(s, &mut w.buf, id, 1, &[], &w.small)?;
            elements.push(id);
        }
        for c in first / CHUNK..elements.len().div_ceil(CHUNK) {
            let id = added(rep, variant, Added::Chunk(c as u64));
            put_chunk(s, &mut w.buf, id, version, &elements, c)?;
        }
        let chunks = elements.len().div_ceil(CHUNK) as u64;
        let chunk_ids = (0..chunks).map(|c| added(rep, variant, Added::Chunk(c)));
        put_header(
            s,
            w,
            added(rep, variant, Added::Header),
            version,
            elements.len() as u64,
            chunk_ids,
        )?;
        s.commit()?;
    }
    Ok(())
}

fn check(ok: bool, id: u64, what: &str) -> Result<(), OpError> {
    if ok {
        return Ok(());
    }
    Err(OpError::new(
        ErrorClass::Corrupt,
        format!("object {id:#x}: {what}"),
    ))
}

impl crate::StoreRun for Magma<'_> {
    fn run_rep(&mut self, ctx: &engine::suite::RepCtx, report: &mut dyn FnMut(TestOutcome)) {
        let epoch = || ctx.clients.load(Ordering::Relaxed);
        self.run_rep_restarting(ctx.rep, &epoch, report)
    }
}

#[cfg(test)]
mod tests;
