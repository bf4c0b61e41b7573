//! The `kv` suite: NorduGrid's A-Hash tests. For a duration, each of `-c` clients (a thread and a
//! session each) repeatedly gets (test `get`) or sets (test `set`) entries of a key-value store,
//! as fast as the store answers. Run under faults, or through a run of levels
//! (`levels = [...]`, see [`crate::fault::LEVELS`]), it gives the seed's two tables — get and
//! set, one row per level: average, min, max and number of requests — with the percentiles, the
//! failures split by whether their outcome is known, the reconnections, the recovery time and
//! unavailability of every fault, and the lost writes.
//!
//! - A get is a read transaction of one key (`begin`, `get`, `commit`), its value checked whole;
//!   a set is a write transaction of one key (`begin`, `put`, `commit`), acknowledged when the
//!   commit returns. `-n` entries are written before the first repetition; a client gets them in
//!   turn, and sets only its own (keys `k` with `k mod clients = client`), so each key has one
//!   writer and the order of its acknowledged writes is known.
//! - A failure is *definite* when the operation certainly did nothing (a read, a write refused
//!   before it was sent or answered with an error), *indefinite* when a write was sent and no
//!   answer came (the connection broke, or it timed out): its outcome is unknown, and it is counted
//!   neither as failed nor as done (Jepsen's `:info`). Issued = ok + definite + indefinite.
//! - A client whose session broke, or that a `restart-clients` fault tells to, opens a new one;
//!   each is counted (`reconnects`), and the time it takes is charged to the operation waiting.
//! - The time series has one entry per 100 ms on the run's clock (the clock of the faults), from
//!   which each fault's recovery time and unavailability are computed (README, "Faults").
//! - At a level, each test starts the level's disturbance over (its faults count from the test's
//!   start, once any fault under way has ended), as the seed's get and set each ran through a
//!   restart every 60 s: both tables see the same disturbance, and every fault has the calm
//!   stretch before it that its recovery is measured against.
//! - Sharded (`--shard I/N --rendezvous …`, without faults), the shards share one namespace on
//!   the server (see `super::open_shared`): shard I writes its slice of the `-n` entries, runs
//!   its part of the `-c` clients, numbered among all (a client's own keys are the same as
//!   alone), and checks its own clients' writes; the shards start each test together.
//! - Lost writes: after the last measured repetition of `set`, the faults are healed (the final
//!   heal) and every key with an acknowledged write is read back through a new session; a key
//!   that is gone, or holds an older value than its last acknowledged write, is lost. Keys that
//!   cannot be read within 30 s are `unread`: unknown, not lost.

use crate::clock::Clock;
use crate::driver::{ErrorClass, Family, OpError, Session, Store, TxMode};
use crate::plan::{MAX_CONCURRENCY, MAX_OBJECTS, MAX_SIZE, PlanError, PlanTarget, RawPlan};
use crate::recorder::Recorder;
use crate::suite::{
    After, Clients, Common, Param, Plan, Point, RepCtx, Repeat, Settings, Suite, TargetError,
    TestOutcome, settings,
};
use report::grid::Doc;
use report::units;
use results::{
    Case, Detail, IntervalRecord, KvRep, LostWrites, Rep, RunRecord, Status, faults::FaultEffect,
};
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The suite.
pub struct Kv;

const TESTS: [&str; 2] = ["get", "set"];
/// The time series' interval.
const INTERVAL_NS: u64 = 100_000_000;
/// A value holds its write's sequence number and its writer: at least this many bytes.
const MIN_VALUE: usize = 12;
/// How long the lost-writes check may take to read every key back.
const CHECK_FOR: Duration = Duration::from_secs(30);
/// The most lost keys a record lists.
const EXAMPLES: usize = 10;
/// The writer of the values written before the first repetition.
const LOADER: u32 = u32::MAX;

/// The kv suite's settings.
#[derive(Debug)]
pub struct KvSettings {
    /// How long each repetition of each test runs.
    pub duration_ns: u64,
}

impl Settings for KvSettings {
    fn record(&self, plan: &mut results::PlanRecord) {
        plan.kv = Some(results::KvPlan {
            duration_ns: self.duration_ns,
        });
    }
    fn rep_duration_ns(&self) -> Option<u64> {
        Some(self.duration_ns)
    }
}

fn value(size: usize, seq: u64, writer: u32, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&writer.to_le_bytes());
    out.resize(size, b'.');
}

/// A value's sequence number and writer, when it is one of dyno's of this size.
fn read_value(v: &[u8], size: usize) -> Option<(u64, u32)> {
    if v.len() != size || size < MIN_VALUE {
        return None;
    }
    let seq = u64::from_le_bytes(v[..8].try_into().ok()?);
    let writer = u32::from_le_bytes(v[8..12].try_into().ok()?);
    Some((seq, writer))
}

/// Whether a failed write's outcome is unknown: it was sent (the connection was not refused),
/// and no answer came.
fn indefinite(class: ErrorClass) -> bool {
    class.is_connection() && class != ErrorClass::Refused
}

/// One interval of one client: the one it is in, reused for the next once handed over.
struct Slot {
    /// Its place in the series (its start over [`INTERVAL_NS`]).
    at: usize,
    ok: u64,
    errors: u64,
    connects: u64,
    latency: results::Histogram,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            at: 0,
            ok: 0,
            errors: 0,
            connects: 0,
            latency: results::new_histogram(),
        }
    }

    /// The slot for time `t_ns` on the run's clock (the series began at `start_ns`): this one,
    /// or, once the clock has moved past it, this one handed to `series` and reset.
    fn at(&mut self, t_ns: u64, start_ns: u64, client: usize, series: &Mutex<Series>) -> &mut Slot {
        let at = (t_ns.saturating_sub(start_ns) / INTERVAL_NS) as usize;
        if at != self.at {
            if let Ok(mut s) = series.lock() {
                s.take(client, self, at);
            }
            self.ok = 0;
            self.errors = 0;
            self.connects = 0;
            self.latency.reset();
            self.at = at;
        }
        self
    }
}

/// The repetition's time series, built as the clients go. A client hands over each interval
/// once its clock has moved past it; an interval every client has moved past becomes a record.
/// So a few intervals' histograms are held at a time, however long the test runs.
struct Series {
    /// Intervals some client handed over that not every client has passed yet.
    open: Vec<Slot>,
    /// Where each client is now (`usize::MAX` once it finished).
    passed: Vec<usize>,
    done: Vec<IntervalRecord>,
}

impl Series {
    fn new(clients: usize) -> Series {
        Series {
            open: Vec::new(),
            passed: vec![0; clients],
            done: Vec::new(),
        }
    }

    /// Client `client`'s interval `slot`, now that it is at interval `now` (`usize::MAX`: done).
    fn take(&mut self, client: usize, slot: &Slot, now: usize) {
        match self.open.iter_mut().find(|o| o.at == slot.at) {
            Some(o) => {
                o.ok += slot.ok;
                o.errors += slot.errors;
                o.connects += slot.connects;
                let _ = o.latency.add(&slot.latency);
            }
            None => {
                let mut o = Slot::new();
                o.at = slot.at;
                o.ok = slot.ok;
                o.errors = slot.errors;
                o.connects = slot.connects;
                let _ = o.latency.add(&slot.latency);
                self.open.push(o);
            }
        }
        self.passed[client] = now;
        // Every interval below where the slowest client is can be written; one nobody handed
        // over (every client was waiting on one operation) had no operation end in it.
        let behind = self.passed.iter().copied().min().unwrap_or(0);
        let last = self.open.iter().map(|o| o.at + 1).max().unwrap_or(0);
        let until = if behind == usize::MAX { last } else { behind };
        while self.done.len() < until {
            let at = self.done.len();
            let record = match self.open.iter().position(|o| o.at == at) {
                Some(i) => record_of(&self.open.swap_remove(i)),
                None => record_of(&Slot { at, ..Slot::new() }),
            };
            self.done.push(record);
        }
    }

    /// The records, the last interval cut at `wall_ns`.
    fn finish(mut self, wall_ns: u64) -> Vec<IntervalRecord> {
        if let Some(l) = self.done.last_mut() {
            l.end_ns = l.end_ns.min(wall_ns.max(l.start_ns + 1));
        }
        self.done
    }
}

/// An interval's record.
fn record_of(s: &Slot) -> IntervalRecord {
    let q = |p: f64| {
        if s.latency.is_empty() {
            0
        } else {
            s.latency.value_at_quantile(p)
        }
    };
    let from = s.at as u64 * INTERVAL_NS;
    IntervalRecord {
        start_ns: from,
        end_ns: from + INTERVAL_NS,
        responses: s.ok,
        ok: s.ok,
        errors: s.errors,
        connects: s.connects,
        p50_ns: q(0.5),
        p99_ns: q(0.99),
        max_ns: q(1.0),
    }
}

/// What one client did in a repetition.
struct ClientRun {
    rec: Recorder,
    ok: u64,
    definite: u64,
    indefinite: u64,
    reconnects: u64,
    /// `set`: the own keys with an acknowledged write, and the last one's sequence number.
    acked: Vec<(u64, u64)>,
    corrupt: Option<String>,
    elapsed_ns: u64,
}

/// One client's loop: `test` for `duration_ns` from `start_ns` on the run's clock.
struct Client<'a> {
    store: &'a dyn Store,
    ctx: &'a RepCtx<'a>,
    test: &'static str,
    /// Its number among all clients (of every shard), and how many there are: what its keys
    /// and its values' writer follow from.
    id: u32,
    clients: u32,
    /// Its place among this generator's clients (in the series).
    local: usize,
    objects: u64,
    size: usize,
    /// `set`: the sequence number of each own key's last write sent, carried over repetitions.
    sent: &'a mut Vec<u64>,
    series: &'a Mutex<Series>,
}

impl Client<'_> {
    fn run(self, start_ns: u64, duration_ns: u64) -> ClientRun {
        let clock = self.ctx.clock;
        let mut out = ClientRun {
            rec: Recorder::new(),
            ok: 0,
            definite: 0,
            indefinite: 0,
            reconnects: 0,
            acked: Vec::new(),
            corrupt: None,
            elapsed_ns: 0,
        };
        let mine: Vec<u64> = (u64::from(self.id)..self.objects)
            .step_by(self.clients as usize)
            .collect();
        if self.sent.len() != mine.len() {
            self.sent.resize(mine.len(), 0);
        }
        let mut acked = vec![0u64; mine.len()];
        let id = self.local;
        let mut slot = Slot::new();
        let mut session: Option<Box<dyn Session>> = None;
        let mut epoch = self.ctx.clients.load(Ordering::Relaxed);
        let mut buf = Vec::with_capacity(self.size);
        let mut val = Vec::with_capacity(self.size);
        let end = start_ns + duration_ns;
        let mut i: u64 = 0;
        // Bounded by the duration (each operation, by the driver's own timeouts).
        loop {
            let t0 = clock.now_ns();
            if t0 >= end || self.ctx.interrupt.load(Ordering::Relaxed) {
                break;
            }
            let now_epoch = self.ctx.clients.load(Ordering::Relaxed);
            if now_epoch != epoch {
                epoch = now_epoch;
                session = None;
            }
            if session.is_none() {
                match self.store.connect(clock) {
                    Ok(s) => {
                        if i > 0 {
                            out.reconnects += 1;
                        }
                        slot.at(clock.now_ns(), start_ns, id, self.series).connects += 1;
                        session = Some(s);
                    }
                    Err(e) => {
                        // Nothing was sent: a definite failure, after a short pause (a
                        // refused connection answers at once).
                        let t1 = clock.now_ns();
                        slot.at(t1, start_ns, id, self.series).errors += 1;
                        out.definite += 1;
                        out.rec.record(t1 - t0, Err(e));
                        i += 1;
                        crate::fiber::sleep(Duration::from_millis(10));
                        continue;
                    }
                }
            }
            let s = session.as_mut().expect("connected above");
            let (r, own) = if self.test == "get" {
                let key = (u64::from(self.id) + i * u64::from(self.clients)) % self.objects;
                let r = get(&mut **s, key, &mut buf).and_then(|()| {
                    read_value(&buf, self.size)
                        .map(|_| self.size as u64)
                        .ok_or_else(|| {
                            OpError::new(
                                ErrorClass::Corrupt,
                                format!(
                                    "key {key}: read {} bytes that dyno did not write",
                                    buf.len()
                                ),
                            )
                        })
                });
                (r, None)
            } else if mine.is_empty() {
                break;
            } else {
                let j = (i % mine.len() as u64) as usize;
                self.sent[j] += 1;
                value(self.size, self.sent[j], self.id, &mut val);
                (
                    set(&mut **s, mine[j], &val).map(|()| self.size as u64),
                    Some(j),
                )
            };
            let t1 = clock.now_ns();
            let slot = slot.at(t1, start_ns, id, self.series);
            match &r {
                Ok(_) => {
                    out.ok += 1;
                    slot.ok += 1;
                    slot.latency.saturating_record((t1 - t0).max(1));
                    if let Some(j) = own {
                        acked[j] = self.sent[j];
                    }
                }
                Err(e) => {
                    slot.errors += 1;
                    if own.is_some() && indefinite(e.class) {
                        out.indefinite += 1;
                    } else {
                        out.definite += 1;
                    }
                    if e.class == ErrorClass::Corrupt && out.corrupt.is_none() {
                        out.corrupt = Some(e.message.to_string());
                    }
                    if e.class.is_connection() {
                        session = None;
                    }
                }
            }
            out.rec.record(t1 - t0, r);
            i += 1;
        }
        out.elapsed_ns = clock.now_ns().saturating_sub(start_ns);
        if let Ok(mut s) = self.series.lock() {
            s.take(id, &slot, usize::MAX);
        }
        out.acked = (mine.iter().zip(&acked))
            .filter(|(_, a)| **a > 0)
            .map(|(k, a)| (*k, *a))
            .collect();
        out
    }
}

use super::{get_tx as get, put_tx as set};

/// Writes the entries `keys` (all of them, or a shard's slice) with the loader's value
/// (sequence 0), in transactions of 100.
fn load(store: &dyn Store, keys: std::ops::Range<u64>, size: usize) -> Result<(), String> {
    let clock = Clock::monotonic();
    let mut s = store.connect(&clock).map_err(|e| format!("connect: {e}"))?;
    let mut val = Vec::new();
    value(size, 0, LOADER, &mut val);
    let mut key = keys.start;
    while key < keys.end {
        let mut write = || -> Result<(), OpError> {
            s.begin(TxMode::Write)?;
            for k in key..(key + 100).min(keys.end) {
                s.put(k, &val)?;
            }
            s.commit()
        };
        write().map_err(|e| format!("writing the entries: {e}"))?;
        key += 100;
    }
    Ok(())
}

/// Reads back each key's last acknowledged write through new sessions, for at most
/// [`CHECK_FOR`].
fn check(store: &dyn Store, acked: &[u64], size: usize) -> LostWrites {
    let acked: Vec<(u64, u64)> = (acked.iter().enumerate())
        .filter(|(_, seq)| **seq > 0)
        .map(|(k, seq)| (k as u64, *seq))
        .collect();
    let clock = Clock::monotonic();
    let t0 = std::time::Instant::now();
    let mut lost = LostWrites {
        checked: acked.len() as u64,
        missing: 0,
        stale: 0,
        unread: 0,
        examples: Vec::new(),
    };
    let mut session: Option<Box<dyn Session>> = None;
    let mut buf = Vec::new();
    let mut at = 0;
    let mut last_error = None;
    while at < acked.len() {
        if t0.elapsed() >= CHECK_FOR {
            lost.unread = (acked.len() - at) as u64;
            if let Some(e) = last_error {
                lost.examples.push(format!(
                    "{} keys unread; the last failure: {e}",
                    lost.unread
                ));
            }
            break;
        }
        let s = match &mut session {
            Some(s) => s,
            None => match store.connect(&clock) {
                Ok(s) => session.insert(s),
                Err(e) => {
                    last_error = Some(e);
                    crate::fiber::sleep(Duration::from_millis(100));
                    continue;
                }
            },
        };
        let (key, seq) = acked[at];
        let found = match get(&mut **s, key, &mut buf) {
            Ok(()) => read_value(&buf, size).map(|(n, _)| n),
            Err(e) if e.class == ErrorClass::NotFound => None,
            Err(e) => {
                // Not answered: a new session, and this key again.
                last_error = Some(e);
                session = None;
                crate::fiber::sleep(Duration::from_millis(100));
                continue;
            }
        };
        match found {
            Some(n) if n >= seq => {}
            Some(n) => {
                lost.stale += 1;
                if lost.examples.len() < EXAMPLES {
                    lost.examples
                        .push(format!("key {key}: acknowledged write {seq}, found {n}"));
                }
            }
            None => {
                lost.missing += 1;
                if lost.examples.len() < EXAMPLES {
                    lost.examples.push(format!(
                        "key {key}: acknowledged write {seq}, found nothing"
                    ));
                }
            }
        }
        at += 1;
    }
    lost
}

/// One test of one repetition on every client.
#[allow(clippy::too_many_arguments)]
fn measure(
    store: &dyn Store,
    ctx: &RepCtx,
    test: &'static str,
    point: &Point,
    duration_ns: u64,
    (first, sent): (u32, &mut [Vec<u64>]),
    acked: &Mutex<Vec<u64>>,
) -> TestOutcome {
    let clients = point.concurrency.max(1);
    let mine = sent.len() as u32;
    let series = Mutex::new(Series::new(sent.len()));
    let start_ns = ctx.clock.now_ns();
    let threads = super::generator_threads(store, ctx.threads, sent.len());
    let jobs = (sent.iter_mut().enumerate())
        .map(|(id, sent)| -> crate::fiber::Job<'_, ClientRun> {
            let c = Client {
                store,
                ctx,
                test,
                id: first + id as u32,
                clients,
                local: id,
                objects: point.objects,
                size: point.size,
                sent,
                series: &series,
            };
            Box::new(move || c.run(start_ns, duration_ns))
        })
        .collect();
    let runs: Vec<ClientRun> = crate::fiber::join_all(threads, jobs)
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let wall_ns = (ctx.clock.now_ns() - start_ns).max(1);
    let mut all = Recorder::new();
    let mut kv = KvRep {
        issued: 0,
        ok: 0,
        definite: 0,
        indefinite: 0,
        reconnects: 0,
        intervals: Vec::new(),
        started_ns: start_ns,
        lost_writes: None,
    };
    let mut corrupt = None;
    if let Ok(mut a) = acked.lock() {
        let len = a.len().max(point.objects as usize);
        a.resize(len, 0);
        for &(k, seq) in runs.iter().flat_map(|r| &r.acked) {
            a[k as usize] = a[k as usize].max(seq);
        }
    }
    for r in &runs {
        all.merge(&r.rec);
        kv.ok += r.ok;
        kv.definite += r.definite;
        kv.indefinite += r.indefinite;
        kv.reconnects += r.reconnects;
        corrupt = corrupt.or(r.corrupt.clone());
    }
    kv.issued = kv.ok + kv.definite + kv.indefinite;
    kv.intervals = match series.into_inner() {
        Ok(s) => s.finish(wall_ns),
        Err(_) => Vec::new(),
    };
    let (status, reason) = match (&corrupt, kv.ok) {
        (Some(c), _) => (Status::Failed, Some(format!("a read came back wrong: {c}"))),
        (None, 0) if kv.issued > 0 => (
            Status::Failed,
            Some(format!(
                "no operation succeeded ({} failed)",
                kv.definite + kv.indefinite
            )),
        ),
        (None, 0) => (Status::Failed, Some("no operation ran".into())),
        _ if ctx.interrupt.load(Ordering::Relaxed) => (
            Status::Interrupted,
            Some("interrupted during the test".into()),
        ),
        _ => (Status::Ok, None),
    };
    let mut by_op = std::collections::BTreeMap::new();
    by_op.insert(test.to_string(), all.figures());
    let rep = Rep {
        ops: kv.issued,
        clients: mine,
        wall_ns,
        client_ns: runs.iter().map(|r| r.elapsed_ns).collect(),
        ops_per_s: results::rate::per_s(kv.ok as f64, wall_ns),
        errors: kv.definite + kv.indefinite,
        latency_ns: results::stats::latency_summary(&all.latency),
        by_op,
        detail: Detail::Kv(Box::new(kv)),
    };
    TestOutcome::ran(test, (status, reason), rep, all)
}

impl Suite for Kv {
    fn help(&self) -> &'static str {
        "NorduGrid's A-Hash tests: clients get, then set, entries of a key-value store for a duration; with faults or levels, recovery and lost writes"
    }

    fn family(&self) -> Family {
        Family::Kv
    }

    fn settings(&self) -> Vec<&'static str> {
        vec!["objects", "size", "concurrency", "threads", "duration"]
    }

    fn targets_hint(&self) -> &'static str {
        "the kv suite runs on key-value stores; http:// and tcp:// targets run the load suite"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: 1,
            max: MAX_CONCURRENCY as u64,
            why: "each client is an OS thread with a session of its own",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![
            Param {
                name: "clients",
                min: 1,
                max: MAX_CONCURRENCY as u64,
            },
            Param {
                name: "size",
                min: MIN_VALUE as u64,
                max: MAX_SIZE as u64,
            },
        ]
    }

    fn default_reps(&self, _: bool) -> u32 {
        1
    }

    fn default_warmup(&self) -> bool {
        false
    }

    fn resolve(&self, raw: &RawPlan, c: &Common) -> Result<Box<dyn Settings>, PlanError> {
        let duration_ns = match &raw.duration {
            Some(d) => crate::plan::parse_duration_setting(
                d,
                "duration",
                24 * 3600,
                "write how long each test runs, e.g. 10s or 2m",
            )?,
            None if c.quick => 2_000_000_000,
            None => 10_000_000_000,
        };
        if duration_ns < INTERVAL_NS {
            let at = raw.duration.as_ref().map(|d| d.at.clone());
            return Err(PlanError::new(
                at.unwrap_or(crate::plan::Origin::Default),
                "a kv test runs at least 100ms",
            )
            .hint("give a duration of 100ms or more"));
        }
        let smallest = (c.sweeps.iter())
            .filter(|s| s.param == "size")
            .flat_map(|s| s.values.iter().copied())
            .chain([c.size as u64])
            .min()
            .unwrap_or(0);
        if smallest < MIN_VALUE as u64 {
            let at = raw.size.as_ref().map(|d| d.at.clone());
            return Err(PlanError::new(
                at.unwrap_or(crate::plan::Origin::Default),
                format!(
                    "a kv value holds its write's number and writer: at least {MIN_VALUE} bytes"
                ),
            )
            .hint(format!("give a size of {MIN_VALUE} or more")));
        }
        if c.objects > MAX_OBJECTS {
            return Err(PlanError::new(
                crate::plan::Origin::Default,
                "too many entries",
            ));
        }
        Ok(Box::new(KvSettings { duration_ns }))
    }

    fn tests(&self, _: &Plan, _: &Point) -> Vec<&'static str> {
        TESTS.to_vec()
    }

    fn run(
        &self,
        plan: &Plan,
        point: &Point,
        target: &PlanTarget,
        interrupt: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        let duration_ns = settings::<KvSettings>(plan).duration_ns;
        let last = plan.reps + u32::from(plan.warmup) - 1;
        let shard = super::shard_of(plan);
        let store = super::open_shared(target, shard, run.rendezvous())?;
        run.describe(store.namespace(), store.versions());
        // A shard writes its slice of the entries; the first start waits for every shard's.
        let first_key = shard.first(point.objects);
        let loaded = load(
            &*store,
            first_key..first_key + shard.part(point.objects),
            point.size,
        );
        let store_ref: &dyn Store = &*store;
        let all = u64::from(point.concurrency.max(1));
        let first = shard.first(all) as u32;
        let mut sent: Vec<Vec<u64>> = vec![Vec::new(); shard.part(all) as usize];
        let acked = Mutex::new(Vec::new());
        let mut server_before = store_ref.server_stats().and_then(Result::ok);
        run.repeat(None, None, &mut |ctx| {
            if let Err(why) = &loaded {
                for t in TESTS {
                    ctx.report(TestOutcome::not_run(t, Status::Failed, why.clone()));
                }
                return After::Fail(why.clone());
            }
            for (k, test) in TESTS.into_iter().enumerate() {
                if interrupt.load(Ordering::Relaxed) {
                    break;
                }
                // Shards start each test together (the first with the repetition).
                if k > 0
                    && let Err(why) = ctx.meet()
                {
                    return After::Fail(why);
                }
                // A level's disturbance starts over with each test, as the seed's did.
                ctx.test_starts();
                let mut o = measure(
                    store_ref,
                    ctx,
                    test,
                    point,
                    duration_ns,
                    (first, &mut sent),
                    &acked,
                );
                if test == "set" && ctx.rep == last && ctx.measured {
                    // The final heal, then every acknowledged write read back.
                    ctx.heal();
                    let acked = acked.lock().map(|a| a.clone()).unwrap_or_default();
                    if let Some(Detail::Kv(k)) = o.rep.as_mut().map(|r| &mut r.detail) {
                        k.lost_writes = Some(check(store_ref, &acked, point.size));
                    }
                }
                if let Some(before) = &server_before {
                    let after = store_ref.server_stats().and_then(Result::ok);
                    if let (Some(after), true) = (&after, ctx.measured) {
                        o.server = super::server_delta(before, after);
                    }
                    if after.is_some() {
                        server_before = after;
                    }
                }
                ctx.report(o);
            }
            After::Next
        });
        super::close_shared(store, target, run);
        Ok(())
    }
}

/// Seconds, as the seed prints them.
fn secs(ns: f64) -> String {
    format!("{:.6}", ns / 1e9)
}

/// The min / median / max of some durations.
fn spread(mut v: Vec<u64>) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.sort_unstable();
    format!(
        "{} / {} / {}",
        units::latency(v[0]),
        units::latency(v[v.len() / 2]),
        units::latency(v[v.len() - 1])
    )
}

/// One row: a case's figures over its measured repetitions.
fn row(c: &Case) -> Vec<String> {
    let label = match &c.level {
        Some(l) => format!("{} · {l}", c.target),
        None => c.target.clone(),
    };
    let kvs: Vec<&KvRep> = c.reps.iter().filter_map(|r| r.detail.kv()).collect();
    let Some(lat) = (c.summary.as_ref().map(|s| s.latency_ns))
        .or_else(|| c.reps.first().and_then(|r| r.latency_ns))
    else {
        let word = report::grid::status_word(c).unwrap_or("-");
        let mut r = vec![label];
        r.extend(std::iter::repeat_n(word.to_string(), 11));
        return r;
    };
    let sum = |f: fn(&KvRep) -> u64| kvs.iter().map(|k| f(k)).sum::<u64>();
    let hist = c
        .histogram
        .as_ref()
        .and_then(|h| results::histogram::decode(h).ok());
    let min = hist.as_ref().map_or(0, |h| h.min());
    let effects: Vec<&FaultEffect> = c.faults.iter().collect();
    let lost = kvs
        .iter()
        .filter_map(|k| k.lost_writes.as_ref())
        .next_back();
    vec![
        label,
        secs(lat.mean),
        secs(min as f64),
        secs(lat.max as f64),
        units::count(sum(|k| k.ok)),
        format!(
            "{} / {} / {}",
            units::latency(lat.p50),
            units::latency(lat.p99),
            units::latency(lat.p999)
        ),
        format!("{} / {}", sum(|k| k.definite), sum(|k| k.indefinite)),
        sum(|k| k.reconnects).to_string(),
        effects.len().to_string(),
        spread(effects.iter().filter_map(|e| e.recovery_ns).collect()),
        effects
            .iter()
            .map(|e| e.unavailable_ns)
            .max()
            .map_or("-".into(), units::latency),
        match lost {
            None => "-".into(),
            Some(l) => format!(
                "{} of {}{}",
                l.missing + l.stale,
                l.checked,
                if l.unread > 0 {
                    format!(" ({} unread)", l.unread)
                } else {
                    String::new()
                }
            ),
        },
    ]
}

impl report::View for Kv {
    fn name(&self) -> &'static str {
        "kv"
    }

    fn table(&self, r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
        let duration = r.plan.kv.map_or(0, |k| k.duration_ns);
        doc.title(&format!(
            "dyno kv · {} entries × {} clients · {} B values · {} per test",
            r.plan.objects,
            r.plan.concurrency,
            r.plan.size_bytes,
            units::latency(duration)
        ))?;
        let header = vec![
            [
                "level",
                "Average (s)",
                "Min. (s)",
                "Max. (s)",
                "No. of requests",
                "p50 / p99 / p99.9",
                "failed / unknown",
                "reconnects",
                "faults",
                "recovery min / median / max",
                "longest unavailable",
                "lost writes",
            ]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>(),
        ];
        let mut notes = Vec::new();
        for test in TESTS {
            let cases: Vec<&Case> = r.cases.iter().filter(|c| c.test == test).collect();
            if cases.is_empty() {
                continue;
            }
            doc.blank()?;
            doc.heading(if test == "get" {
                "Getting: one entry read per request"
            } else {
                "Setting: one entry written (and acknowledged) per request"
            })?;
            let body: Vec<Vec<String>> = cases.iter().map(|c| row(c)).collect();
            doc.table(&header, &body)?;
            for c in &cases {
                if let (Some(why), Some(word)) = (&c.reason, report::grid::status_word(c)) {
                    notes.push(format!("{} {test}: {word}: {why}", c.target));
                }
                for l in (c.reps.iter())
                    .filter_map(|r| r.detail.kv())
                    .filter_map(|k| k.lost_writes.as_ref())
                {
                    for e in &l.examples {
                        notes.push(format!("{} lost: {e}", c.target));
                    }
                }
            }
        }
        notes.push(
            "failed / unknown: failed operations that certainly did nothing / writes sent whose outcome is unknown (neither failed nor done)".into(),
        );
        notes.push("recovery: from each fault to the first of 3 intervals of 100 ms back at 90% of the rate before it, with p99 within 2× (README, \"Faults\")".into());
        notes.extend(super::shard_note(&r.plan));
        doc.footer(&notes, r.interrupted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_carry_their_write_and_writer() {
        let mut v = Vec::new();
        value(32, 7, 3, &mut v);
        assert_eq!(v.len(), 32);
        assert_eq!(read_value(&v, 32), Some((7, 3)));
        assert_eq!(
            read_value(&v, 33),
            None,
            "a value of another size is not dyno's"
        );
        assert_eq!(read_value(&v[..8], 8), None);
    }

    #[test]
    fn the_series_writes_an_interval_once_every_client_has_passed_it() {
        let mut s = Series::new(2);
        let slot = |at, ok| Slot {
            at,
            ok,
            ..Slot::new()
        };
        s.take(0, &slot(0, 3), 1);
        assert!(s.done.is_empty(), "client 1 is still in interval 0");
        s.take(1, &slot(0, 2), 4);
        assert_eq!(s.done.len(), 1);
        assert_eq!(s.done[0].ok, 5);
        // Client 0 waited on one operation through intervals 1 to 3: they have no operation.
        s.take(0, &slot(4, 1), usize::MAX);
        s.take(1, &slot(4, 1), usize::MAX);
        assert!(s.open.is_empty(), "every interval handed over is written");
        let done = s.finish(450_000_000);
        assert_eq!(
            done.iter().map(|r| r.ok).collect::<Vec<_>>(),
            [5, 0, 0, 0, 2]
        );
        assert_eq!(done[4].start_ns, 400_000_000);
        assert_eq!(
            done[4].end_ns, 450_000_000,
            "the last interval ends with the test"
        );
    }

    #[test]
    fn a_write_with_no_answer_has_an_unknown_outcome() {
        assert!(indefinite(ErrorClass::Reset));
        assert!(indefinite(ErrorClass::Timeout));
        assert!(!indefinite(ErrorClass::Refused), "never sent");
        assert!(!indefinite(ErrorClass::Application), "the store said no");
    }
}
