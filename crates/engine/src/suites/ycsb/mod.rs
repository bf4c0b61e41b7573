//! The `ycsb` suite: YCSB's core workloads A–F (`workloads/workload{a..f}` in
//! brianfrankcooper/YCSB) on key-value stores, with YCSB's own key generators ([`keys`]).
//!
//! A repetition loads `-n` records (YCSB's `recordcount`; `-c` clients insert keys `i, i+c, …`),
//! then runs each workload asked for in turn on them, `operations` operations each (YCSB's
//! `operationcount`), closed loop with `-c` clients sharing the operation count. Each operation
//! kind is its own histogram (READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE).
//!
//! | workload | operations | request distribution |
//! |---|---|---|
//! | a | read 0.5, update 0.5 | zipfian |
//! | b | read 0.95, update 0.05 | zipfian |
//! | c | read 1.0 | zipfian |
//! | d | read 0.95, insert 0.05 | latest |
//! | e | scan 0.95, insert 0.05; scan length uniform 1..100 | zipfian |
//! | f | read 0.5, read-modify-write 0.5 | zipfian |
//!
//! As YCSB: a record is 10 fields of 100 bytes; its key is `fnvhash64(keynum)` (YCSB's hashed
//! insert order, as a 64-bit key where YCSB writes `"user" + decimal`); the zipfian is YCSB's
//! scrambled one over `recordcount + 2 × operationcount × insertproportion` items, and a key
//! drawn beyond the last acknowledged insert is drawn again; `latest` is skewed towards the last
//! acknowledged insert. Unlike YCSB's bindings, which update one field in place, dyno's
//! key-value API writes a record whole: an update writes 1,000 bytes, one field of it new.
//!
//! Sharded (`--shard I/N --rendezvous …`), the shards share one namespace on a server, named at
//! their rendezvous: rank 0 makes it, the others open it once it exists, and rank 0 deletes it
//! once every shard is done. Shard I loads its slice of the records (YCSB's `insertstart` and
//! `insertcount`: the slices tile `0..-n` in rank order), runs its part of the clients, of
//! each workload's operations and of the rate, and reads over every shard's records. The
//! shards meet before each workload, so none runs one before all have loaded or finished the
//! one before; a run's inserts are numbered apart per shard (shard I of N takes
//! `recordcount + I`, `+ I + N`, …), where YCSB's clients would insert the same keys.
//!
//! Every read is checked: the record holds its key number and a version, and its bytes follow
//! from them, so a read of the wrong record or of damaged bytes fails the case (as the
//! shootout's reads do). Workload e needs an ordered scan, which dyno's key-value API does not
//! offer yet: it is `n/a` with that reason on every target.

pub mod keys;
mod merge;
mod settings;

use crate::clock::Clock;
use crate::driver::{ErrorClass, Family, OpError, Session, Store, TxMode};
use crate::plan::{MAX_CONCURRENCY, MAX_OBJECTS, Origin, PlanError, PlanTarget, RawPlan, Setting};
use crate::recorder::Recorder;
use crate::shard::Shard;
use crate::suite::{
    After, Clients, Common, Param, Plan, Point, RepCtx, Repeat, Settings, Suite, TargetError,
    TestOutcome, settings,
};
use keys::{Acknowledged, Draws, ScrambledZipfian, SkewedLatest, SplitMix, Uniform};
use results::{Detail, Rep, Status};
use settings::{OPERATIONS, RATE, SETTINGS, ZIPF};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// The suite.
pub struct Ycsb;

/// YCSB's record: `fieldcount` × `fieldlength`.
pub const FIELDS: usize = 10;
pub const FIELD_LENGTH: usize = 100;
const RECORD: usize = FIELDS * FIELD_LENGTH;
/// The most re-draws of a key beyond the last acknowledged insert before the operation fails
/// (YCSB loops without a bound; a generator that never lands below would hang it).
const MAX_REDRAWS: u32 = 10_000;
/// The most records `zipf = "exact:θ"` draws over (8 bytes each, shared by the clients).
const MAX_EXACT: u64 = 100_000_000;
/// The most operations per workload.
const MAX_OPERATIONS: i64 = 1_000_000_000;

/// An operation kind, as YCSB names its measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "READ",
            Op::Update => "UPDATE",
            Op::Insert => "INSERT",
            Op::Scan => "SCAN",
            Op::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }
}

/// Where a workload's keys fall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    Zipfian,
    Latest,
    Uniform,
}

/// One of YCSB's core workloads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    /// `a` … `f`: the test's name.
    pub name: &'static str,
    /// Proportions in YCSB's order (read, update, insert, scan, read-modify-write).
    pub mix: [(Op, f64); 5],
    pub distribution: Distribution,
}

const fn mix(read: f64, update: f64, insert: f64, scan: f64, rmw: f64) -> [(Op, f64); 5] {
    [
        (Op::Read, read),
        (Op::Update, update),
        (Op::Insert, insert),
        (Op::Scan, scan),
        (Op::ReadModifyWrite, rmw),
    ]
}

/// The six, as YCSB's workload files define them.
pub const WORKLOADS: [Workload; 6] = [
    Workload {
        name: "a",
        mix: mix(0.5, 0.5, 0.0, 0.0, 0.0),
        distribution: Distribution::Zipfian,
    },
    Workload {
        name: "b",
        mix: mix(0.95, 0.05, 0.0, 0.0, 0.0),
        distribution: Distribution::Zipfian,
    },
    Workload {
        name: "c",
        mix: mix(1.0, 0.0, 0.0, 0.0, 0.0),
        distribution: Distribution::Zipfian,
    },
    Workload {
        name: "d",
        mix: mix(0.95, 0.0, 0.05, 0.0, 0.0),
        distribution: Distribution::Latest,
    },
    Workload {
        name: "e",
        mix: mix(0.0, 0.0, 0.05, 0.95, 0.0),
        distribution: Distribution::Zipfian,
    },
    Workload {
        name: "f",
        mix: mix(0.5, 0.0, 0.0, 0.0, 0.5),
        distribution: Distribution::Zipfian,
    },
];

impl Workload {
    fn proportion(&self, op: Op) -> f64 {
        self.mix.iter().find(|(o, _)| *o == op).map_or(0.0, |m| m.1)
    }

    /// YCSB's `DiscreteGenerator`: the kinds with a proportion, in order, chosen by one draw.
    fn choose(&self, d: &mut dyn Draws) -> Op {
        let sum: f64 = self.mix.iter().map(|m| m.1).sum();
        let mut val = d.next_f64();
        for &(op, w) in self.mix.iter().filter(|m| m.1 > 0.0) {
            if val < w / sum {
                return op;
            }
            val -= w / sum;
        }
        self.mix
            .iter()
            .rev()
            .find(|m| m.1 > 0.0)
            .map_or(Op::Read, |m| m.0)
    }
}

/// The suite's settings.
#[derive(Debug)]
pub struct YcsbSettings {
    /// The workloads, in the order they run.
    pub workloads: Vec<Workload>,
    /// Operations per workload (`operationcount`).
    pub operations: u64,
    /// How the zipfian workloads draw their keys.
    pub zipf: ZipfMode,
    /// YCSB's `-target`: operations per second in all, open loop; `None`, closed loop.
    pub rate: Option<f64>,
}

/// The zipfian workloads' key choice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZipfMode {
    /// YCSB's scrambled zipfian, quirks and all (the default).
    YcsbCompat,
    /// A true Zipf(θ) over exactly the records loaded.
    Exact(f64),
}

impl ZipfMode {
    /// Reads `ycsb` or `exact:THETA`.
    pub fn parse(text: &str) -> Option<ZipfMode> {
        match text.trim() {
            "ycsb" | "ycsb-compat" => Some(ZipfMode::YcsbCompat),
            t => {
                let theta = t.strip_prefix("exact:").or(t.strip_prefix("exact-zipf:"))?;
                theta
                    .parse::<f64>()
                    .ok()
                    .filter(|th| th.is_finite() && *th > 0.0 && *th <= 10.0)
                    .map(ZipfMode::Exact)
            }
        }
    }

    pub fn name(self) -> String {
        match self {
            ZipfMode::YcsbCompat => "ycsb".into(),
            ZipfMode::Exact(theta) => format!("exact:{theta}"),
        }
    }
}

impl Settings for YcsbSettings {
    fn record(&self, plan: &mut results::PlanRecord) {
        plan.ycsb = Some(results::YcsbPlan {
            workloads: self.workloads.iter().map(|w| w.name.to_string()).collect(),
            operations: self.operations,
            field_count: FIELDS as u64,
            field_length: FIELD_LENGTH as u64,
            zipf: self.zipf.name(),
            rate_per_s: self.rate,
        });
    }
}

/// A record's key in the store: YCSB's hashed insert order.
pub fn key(keynum: i64) -> u64 {
    keys::fnvhash64(keynum) as u64
}

/// Record `keynum` at `version`: both numbers, then bytes that follow from them.
fn record(keynum: i64, version: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&keynum.to_le_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    let seed = (keynum as u64).wrapping_mul(31).wrapping_add(version);
    out.extend((16..RECORD).map(|i| b'a' + ((seed.wrapping_add(i as u64)) % 26) as u8));
}

/// Whether `v` is record `keynum` at some version, whole and undamaged.
fn check(keynum: i64, v: &[u8], scratch: &mut Vec<u8>) -> Result<(), OpError> {
    let bad = |why: String| OpError::new(ErrorClass::Corrupt, format!("record {keynum}: {why}"));
    if v.len() != RECORD {
        return Err(bad(format!(
            "read {} bytes, a record has {RECORD}",
            v.len()
        )));
    }
    let got = i64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
    if got != keynum {
        return Err(bad(format!("read record {got}'s bytes")));
    }
    let version = u64::from_le_bytes(v[8..16].try_into().expect("8 bytes"));
    record(keynum, version, scratch);
    if scratch != v {
        return Err(bad(format!("version {version}'s bytes are damaged")));
    }
    Ok(())
}

fn read(
    s: &mut dyn Session,
    keynum: i64,
    buf: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<u64, OpError> {
    super::get_tx(s, key(keynum), buf)?;
    check(keynum, buf, scratch).map(|()| buf.len() as u64)
}

/// Workload e's scan lengths: YCSB's uniform `1..=maxscanlength` (100 in workloade).
const SCAN_LENGTH: Uniform = Uniform::new(1, 100);

/// A scan of `len` records from record `keynum`'s key, each record checked against its key.
fn scan(
    s: &mut dyn Session,
    keynum: i64,
    len: usize,
    rows: &mut Vec<(u64, Vec<u8>)>,
    scratch: &mut Vec<u8>,
) -> Result<u64, OpError> {
    s.begin(TxMode::Read)?;
    s.scan(key(keynum), len, rows)?;
    s.commit()?;
    let mut bytes = 0;
    for (k, v) in rows.iter() {
        let n = v
            .get(..8)
            .map_or(-1, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")));
        if key(n) != *k {
            return Err(OpError::new(
                ErrorClass::Corrupt,
                format!("scan from record {keynum}: key {k:#x} holds record {n}'s bytes"),
            ));
        }
        check(n, v, scratch)?;
        bytes += v.len() as u64;
    }
    Ok(bytes)
}

fn write(s: &mut dyn Session, keynum: i64, value: &[u8]) -> Result<u64, OpError> {
    super::put_tx(s, key(keynum), value).map(|()| value.len() as u64)
}

/// A workload's key chooser, one per client.
enum Chooser {
    Zipfian(ScrambledZipfian),
    Exact(std::sync::Arc<keys::ExactZipf>),
    Latest(SkewedLatest),
    Uniform(Uniform),
}

/// What the clients of one workload share: the acknowledged-insert counter, and its limit
/// published for the reads every operation makes (YCSB's volatile `limit`): no lock but an
/// insert's.
struct Shared {
    inserts: Mutex<Acknowledged>,
    last: AtomicI64,
}

impl Shared {
    fn new(records: i64) -> Shared {
        let a = Acknowledged::new(records);
        Shared {
            last: AtomicI64::new(a.last()),
            inserts: Mutex::new(a),
        }
    }

    fn last(&self) -> i64 {
        self.last.load(Ordering::Acquire)
    }

    /// The next insert's key number.
    fn issue(&self) -> Option<i64> {
        self.inserts.lock().ok().map(|mut a| a.issue())
    }

    fn acknowledge(&self, keynum: i64) {
        if let Ok(mut a) = self.inserts.lock() {
            a.acknowledge(keynum);
            self.last.store(a.last(), Ordering::Release);
        }
    }
}

/// One client of one workload.
struct Client<'a> {
    workload: &'a Workload,
    shared: &'a Shared,
    records: i64,
    /// The shard this client runs in (0 of 1 alone): where its inserts are numbered.
    shard: Shard,
    operations: u64,
    draws: SplitMix,
    /// Per kind, in [`Op`]'s order, then the reads and updates of read-modify-writes.
    rec: Recs,
    /// Keys drawn, for the skew report.
    drawn: BTreeMap<i64, u64>,
    /// Each scan's length, for the record's check of their distribution.
    scan_lengths: Vec<u32>,
    /// `zipf = "exact:θ"`: the true Zipf the zipfian workloads draw from (shared).
    exact: Option<std::sync::Arc<keys::ExactZipf>>,
    corrupt: Option<String>,
}

fn slot(op: Op) -> usize {
    op as usize
}

/// The kinds in the order of their recorders.
const OPS: [Op; 5] = [
    Op::Read,
    Op::Update,
    Op::Insert,
    Op::Scan,
    Op::ReadModifyWrite,
];
/// A client's recorders: one per kind, then a read-modify-write's read and its update.
type Recs = [Recorder; 7];
const RMW_READ: usize = 5;
const RMW_UPDATE: usize = 6;

impl Client<'_> {
    fn chooser(&mut self, total_ops: u64) -> Chooser {
        let d = &mut self.draws;
        match self.workload.distribution {
            Distribution::Zipfian if self.exact.is_some() => {
                Chooser::Exact(self.exact.clone().expect("checked"))
            }
            Distribution::Zipfian => {
                // YCSB predicts the inserts so the hot keys do not move as they come.
                let expected =
                    (total_ops as f64 * self.workload.proportion(Op::Insert) * 2.0) as i32;
                Chooser::Zipfian(ScrambledZipfian::new(
                    0,
                    self.records + i64::from(expected),
                    d,
                ))
            }
            Distribution::Latest => Chooser::Latest(SkewedLatest::new(self.shared.last(), d)),
            Distribution::Uniform => Chooser::Uniform(Uniform::new(0, self.records - 1)),
        }
    }

    /// The key number of this shard's `n`-th record: the loaded records are every shard's;
    /// the run's inserts are numbered apart, shard I of N taking `records + I + k·N`.
    fn keynum(&self, n: i64) -> i64 {
        if n < self.records {
            n
        } else {
            self.records
                + i64::from(self.shard.index)
                + (n - self.records) * i64::from(self.shard.count)
        }
    }

    /// YCSB's `nextKeynum`: a key at most the last acknowledged insert.
    fn next_keynum(&mut self, chooser: &mut Chooser) -> Result<i64, OpError> {
        for _ in 0..MAX_REDRAWS {
            let last = self.shared.last();
            let d = &mut self.draws;
            // YCSB reads the chooser's value with intValue().
            let k = match chooser {
                Chooser::Zipfian(z) => i64::from(z.next(d) as i32),
                Chooser::Exact(z) => z.next(d),
                Chooser::Latest(l) => i64::from(l.next(last, d) as i32),
                Chooser::Uniform(u) => i64::from(u.next(d) as i32),
            };
            if k <= last {
                return Ok(self.keynum(k));
            }
        }
        Err(OpError::new(
            ErrorClass::Application,
            format!("no key at most the last insert in {MAX_REDRAWS} draws"),
        ))
    }

    fn run(
        mut self,
        s: &mut dyn Session,
        total_ops: u64,
        interrupt: &AtomicBool,
        clock: &crate::clock::Clock,
        per_s: Option<f64>,
    ) -> Self {
        let mut chooser = self.chooser(total_ops);
        let (mut buf, mut scratch, mut val) = (Vec::new(), Vec::new(), Vec::new());
        let mut rows = Vec::new();
        let start = clock.now_ns();
        for i in 0..self.operations {
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
            // Open loop (YCSB's -target): operation i is due at its place in the schedule, and
            // its latency counts from then, however late it starts.
            let due = per_s.map(|r| start + (i as f64 * 1e9 / r) as u64);
            if let Some(t) = due {
                clock.wait_until(t);
            }
            let op = self.workload.choose(&mut self.draws);
            let t0 = clock.now_ns();
            let outcome = match op {
                Op::Insert => {
                    let n = self.shared.issue().unwrap_or(self.records);
                    let k = self.keynum(n);
                    record(k, 0, &mut val);
                    let r = write(s, k, &val);
                    if r.is_ok() {
                        self.shared.acknowledge(n);
                    }
                    r
                }
                Op::Scan => match self.next_keynum(&mut chooser) {
                    Err(e) => Err(e),
                    Ok(k) => {
                        *self.drawn.entry(k).or_default() += 1;
                        let len = SCAN_LENGTH.next(&mut self.draws);
                        self.scan_lengths.push(len as u32);
                        scan(s, k, len as usize, &mut rows, &mut scratch)
                    }
                },
                _ => match self.next_keynum(&mut chooser) {
                    Err(e) => Err(e),
                    Ok(k) => {
                        *self.drawn.entry(k).or_default() += 1;
                        match op {
                            Op::Read => read(s, k, &mut buf, &mut scratch),
                            Op::Update => {
                                record(k, self.draws.next_u64() | 1, &mut val);
                                write(s, k, &val)
                            }
                            _ => {
                                // Read-modify-write: the read and the update each measured,
                                // and the whole.
                                let r0 = clock.now_ns();
                                let r = read(s, k, &mut buf, &mut scratch);
                                let r1 = clock.now_ns();
                                let failed = r.is_err();
                                self.rec[RMW_READ].record(r1 - r0, r.clone());
                                if failed {
                                    r
                                } else {
                                    record(k, self.draws.next_u64() | 1, &mut val);
                                    let w = write(s, k, &val);
                                    self.rec[RMW_UPDATE].record(clock.now_ns() - r1, w.clone());
                                    w.map(|b| b + buf.len() as u64)
                                }
                            }
                        }
                    }
                },
            };
            if let Err(e) = &outcome
                && e.class == ErrorClass::Corrupt
                && self.corrupt.is_none()
            {
                self.corrupt = Some(e.message.to_string());
            }
            let end = clock.now_ns();
            let r = &mut self.rec[slot(op)];
            r.record(end - due.unwrap_or(t0).min(t0), outcome);
            if due.is_some() {
                results::histogram::record(&mut r.service, end - t0);
            }
        }
        self
    }
}

/// The most keys of the skew report.
const TOP_KEYS: usize = 10;

/// A test's figures from its clients' recorders.
fn outcome(
    test: &'static str,
    clients: u32,
    wall_ns: u64,
    client_ns: Vec<u64>,
    recs: Vec<Recs>,
    (drawn, corrupt, interrupted): (BTreeMap<i64, u64>, Option<String>, bool),
    scan_lengths: &[u32],
) -> TestOutcome {
    let mut kinds: Recs = Default::default();
    for r in &recs {
        for (all, one) in kinds.iter_mut().zip(r) {
            all.merge(one);
        }
    }
    // Overall: every operation once, a read-modify-write as one.
    let mut all = Recorder::new();
    for r in &kinds[..5] {
        all.merge(r);
    }
    // As YCSB's: READ and UPDATE include those of the read-modify-writes.
    let [read, update, .., rmw_read, rmw_update] = &mut kinds;
    read.merge(rmw_read);
    update.merge(rmw_update);
    let mut by_op: BTreeMap<String, results::OpFigures> = (OPS.iter().zip(&kinds))
        .filter(|(_, r)| r.ops > 0)
        .map(|(op, r)| (op.name().to_string(), r.figures()))
        .collect();
    // Open loop: each kind's latency counts from the intended start; its service time (from
    // the actual start) beside it, as YCSB's measurement.interval=both shows both.
    for (op, r) in OPS.iter().zip(&kinds[..5]) {
        if !r.service.is_empty() {
            by_op.insert(
                format!("{} (service time)", op.name()),
                results::OpFigures::of(r.service.len(), r.error_count(), &r.service),
            );
        }
    }
    let mut top: Vec<(i64, u64)> = drawn.iter().map(|(k, n)| (*k, *n)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let draws: u64 = top.iter().map(|t| t.1).sum();
    let mut figures = serde_json::json!({
        "key_draws": draws,
        "distinct_keys": top.len(),
        "top_keys": top.iter().take(TOP_KEYS).map(|(k, n)| serde_json::json!([k, n])).collect::<Vec<_>>(),
    });
    if !scan_lengths.is_empty() {
        let n = scan_lengths.len() as f64;
        figures["scan_length"] = serde_json::json!({
            "count": scan_lengths.len(),
            "min": scan_lengths.iter().min(),
            "max": scan_lengths.iter().max(),
            "mean": scan_lengths.iter().map(|&l| f64::from(l)).sum::<f64>() / n,
        });
    }
    let ops = all.ops;
    let errors = all.error_count();
    let rep = Rep {
        ops,
        clients,
        wall_ns,
        client_ns,
        ops_per_s: results::rate::per_s((ops - errors) as f64, wall_ns),
        errors,
        latency_ns: results::stats::latency_summary(&all.latency),
        by_op,
        detail: Detail::Custom {
            suite: "ycsb".into(),
            figures,
        },
    };
    let status = match (&corrupt, ops - errors) {
        (Some(c), _) => (Status::Failed, Some(format!("a read came back wrong: {c}"))),
        (None, 0) if ops > 0 => (
            Status::Failed,
            Some(format!("no operation succeeded ({errors} failed)")),
        ),
        _ if interrupted => (
            Status::Interrupted,
            Some("interrupted during the test".into()),
        ),
        _ => (Status::Ok, None),
    };
    TestOutcome::ran(test, status, rep, all)
}

/// A client's clock: the run's, or on a virtual-time target (the mock) one of its own, which the
/// target advances by exactly its operations' latencies.
fn client_clock(ctx: &RepCtx, virtual_time: bool) -> Clock {
    if virtual_time {
        Clock::new_virtual()
    } else {
        ctx.clock.clone()
    }
}

/// The test's wall time: the run clock's, or on virtual time the longest client's.
fn wall_of(ctx: &RepCtx, start: u64, virtual_time: bool, client_ns: &[u64]) -> u64 {
    let ns = if virtual_time {
        client_ns.iter().copied().max().unwrap_or(0)
    } else {
        ctx.clock.now_ns() - start
    };
    ns.max(1)
}

/// The load phase: this shard's clients insert its slice of the records (all of them alone),
/// client `c` of `k` the slice's records `c, c+k, …`.
fn load(
    store: &dyn Store,
    ctx: &RepCtx,
    point: &Point,
    (records, shard): (i64, Shard),
    virtual_time: bool,
) -> TestOutcome {
    let (_, clients) = clients_of(point, shard);
    let first = shard.first(records as u64) as i64;
    let end = first + shard.part(records as u64) as i64;
    let start = ctx.clock.now_ns();
    let threads = super::generator_threads(store, ctx.threads, clients as usize);
    let jobs = (0..clients)
        .map(|c| -> crate::fiber::Job<'_, (Recs, u64)> {
            let clock = client_clock(ctx, virtual_time);
            Box::new(move || {
                let mut rec: Recs = Default::default();
                let t0 = clock.now_ns();
                let mut session = match store.connect(&clock) {
                    Ok(s) => s,
                    Err(e) => {
                        rec[slot(Op::Insert)].fail(e);
                        return (rec, 0);
                    }
                };
                let mut val = Vec::with_capacity(RECORD);
                let mut k = first + i64::from(c);
                while k < end && !ctx.interrupt.load(Ordering::Relaxed) {
                    record(k, 0, &mut val);
                    let o0 = clock.now_ns();
                    let r = write(&mut *session, k, &val);
                    rec[slot(Op::Insert)].record(clock.now_ns() - o0, r);
                    k += i64::from(clients);
                }
                (rec, clock.now_ns() - t0)
            })
        })
        .collect();
    let runs: Vec<(Recs, u64)> = crate::fiber::join_all(threads, jobs)
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let client_ns: Vec<u64> = runs.iter().map(|r| r.1).collect();
    let wall = wall_of(ctx, start, virtual_time, &client_ns);
    let recs = runs.into_iter().map(|r| r.0).collect();
    let interrupted = ctx.interrupt.load(Ordering::Relaxed);
    let mut o = outcome(
        "load",
        clients,
        wall,
        client_ns,
        recs,
        (BTreeMap::new(), None, interrupted),
        &[],
    );
    // A shard's slice, as YCSB's insertstart and insertcount.
    if shard.count > 1
        && let Some(Detail::Custom { figures, .. }) = o.rep.as_mut().map(|r| &mut r.detail)
    {
        figures["insertstart"] = first.into();
        figures["insertcount"] = (end - first).into();
    }
    o
}

/// This shard's clients of the point's: the global number of its first, and how many.
fn clients_of(point: &Point, shard: Shard) -> (u32, u32) {
    let all = u64::from(point.concurrency.max(1));
    (shard.first(all) as u32, shard.part(all) as u32)
}

/// One workload on every client: `operations` shared among them.
fn run_workload(
    store: &dyn Store,
    ctx: &RepCtx,
    point: &Point,
    (w, index): (&Workload, usize),
    (records, operations, seed, shard): (i64, u64, u64, Shard),
    (zipf, rate, virtual_time): (ZipfMode, Option<f64>, bool),
) -> TestOutcome {
    // Every shard's clients count: each draws its share of the operations and of the rate by
    // its global number, so the shards' parts add up to the workload.
    let all = point.concurrency.max(1);
    let (first, clients) = clients_of(point, shard);
    let shared = Shared::new(records);
    let exact = match zipf {
        ZipfMode::Exact(theta) if w.distribution == Distribution::Zipfian => Some(
            std::sync::Arc::new(keys::ExactZipf::new(records as usize, theta)),
        ),
        _ => None,
    };
    let start = ctx.clock.now_ns();
    let threads = super::generator_threads(store, ctx.threads, clients as usize);
    let shared = &shared;
    let jobs = (first..first + clients)
        .map(
            |c| -> crate::fiber::Job<'_, (Option<Client>, u64, Option<OpError>)> {
                let share = operations / u64::from(all)
                    + u64::from(u64::from(c) < operations % u64::from(all));
                // Each client's own stream: the plan's seed, the repetition, the workload, the
                // client.
                let stream =
                    seed ^ (u64::from(ctx.rep) << 48) ^ ((index as u64) << 32) ^ u64::from(c);
                let client = Client {
                    workload: w,
                    shared,
                    records,
                    shard,
                    operations: share,
                    draws: SplitMix(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                    rec: Default::default(),
                    drawn: BTreeMap::new(),
                    scan_lengths: Vec::new(),
                    exact: exact.clone(),
                    corrupt: None,
                };
                let clock = client_clock(ctx, virtual_time);
                // The target rate, each client its share.
                let per_s = rate.map(|r| r / f64::from(all));
                Box::new(move || {
                    let t0 = clock.now_ns();
                    match store.connect(&clock) {
                        Ok(mut session) => {
                            let c =
                                client.run(&mut *session, operations, ctx.interrupt, &clock, per_s);
                            (Some(c), clock.now_ns() - t0, None)
                        }
                        Err(e) => (None, 0, Some(e)),
                    }
                })
            },
        )
        .collect();
    let done: Vec<(Option<Client>, u64, Option<OpError>)> = crate::fiber::join_all(threads, jobs)
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let ns: Vec<u64> = done.iter().map(|d| d.1).collect();
    let wall = wall_of(ctx, start, virtual_time, &ns);
    let mut drawn: BTreeMap<i64, u64> = BTreeMap::new();
    let mut corrupt = None;
    let mut recs = Vec::new();
    let mut client_ns = Vec::new();
    let mut lengths = Vec::new();
    for (c, ns, err) in done {
        client_ns.push(ns);
        match (c, err) {
            (Some(c), _) => {
                for (k, n) in c.drawn {
                    *drawn.entry(k).or_default() += n;
                }
                corrupt = corrupt.or(c.corrupt);
                lengths.extend(c.scan_lengths);
                recs.push(c.rec);
            }
            (None, Some(e)) => {
                let mut rec: Recs = Default::default();
                rec[slot(Op::Read)].fail(e);
                recs.push(rec);
            }
            (None, None) => {}
        }
    }
    let interrupted = ctx.interrupt.load(Ordering::Relaxed);
    outcome(
        w.name,
        clients,
        wall,
        client_ns,
        recs,
        (drawn, corrupt, interrupted),
        &lengths,
    )
}

impl report::View for Ycsb {
    fn name(&self) -> &'static str {
        "ycsb"
    }

    fn table(&self, r: &results::RunRecord, doc: &mut report::grid::Doc) -> std::io::Result<()> {
        table::render(r, doc)
    }
}

mod table;

impl Suite for Ycsb {
    fn help(&self) -> &'static str {
        "YCSB's core workloads a–f (--suite ycsb, or ycsb-a,ycsb-c,… for some): load -n records, then each workload's operations, YCSB's key generators, every read checked"
    }

    fn answers_to(&self, name: &str) -> bool {
        name == "ycsb" || name.split(',').all(|w| w.trim().starts_with("ycsb-"))
    }

    fn family(&self) -> Family {
        Family::Kv
    }

    fn settings(&self) -> &'static [&'static Setting] {
        SETTINGS
    }

    fn shardable(&self) -> bool {
        true
    }

    fn merge_detail(
        &self,
        parts: &[&results::Rep],
        _: &results::Rep,
        _: &results::Histogram,
        _: Option<&[Vec<results::hlog::ReadInterval>]>,
    ) -> Result<(results::Detail, Option<results::merge::Intervals>), results::merge::MergeError>
    {
        merge::detail(parts)
    }

    fn shard_rule(&self, _: &Plan, meet: bool) -> Result<(), String> {
        super::shared_namespace(report::View::name(self), meet)
    }

    fn targets_hint(&self) -> &'static str {
        "the ycsb suite runs on key-value stores; http:// and tcp:// targets run the load suite"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: 1,
            max: MAX_CONCURRENCY as u64,
            why: "each client is an OS thread with a session of its own",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![Param {
            name: "clients",
            min: 1,
            max: MAX_CONCURRENCY as u64,
        }]
    }

    fn default_reps(&self, _: bool) -> u32 {
        1
    }

    fn default_warmup(&self) -> bool {
        false
    }

    fn resolve(&self, raw: &RawPlan, c: &Common) -> Result<Box<dyn Settings>, PlanError> {
        let named = raw.suite.as_ref();
        let workloads = match named.map(|s| s.value.as_str()) {
            None | Some("ycsb") => WORKLOADS.to_vec(),
            Some(list) => {
                let mut out = Vec::new();
                for w in list.split(',').map(str::trim) {
                    let name = w.strip_prefix("ycsb-").unwrap_or(w);
                    let Some(found) = WORKLOADS.iter().find(|x| x.name == name) else {
                        let at = named.map_or(Origin::Default, |s| s.at.clone());
                        return Err(PlanError::new(at, format!("{w:?} is not one of YCSB's core workloads"))
                            .hint("write ycsb (all six), or some of ycsb-a, ycsb-b, ycsb-c, ycsb-d, ycsb-e, ycsb-f, comma-separated"));
                    };
                    if !out.contains(found) {
                        out.push(*found);
                    }
                }
                out
            }
        };
        let operations = match &raw.settings.int(&OPERATIONS) {
            None if c.quick => 200,
            None => 1000,
            Some(o) if (1..=MAX_OPERATIONS).contains(&o.value) => o.value as u64,
            Some(o) => {
                return Err(PlanError::new(
                    o.at.clone(),
                    format!("{} operations is out of bounds", o.value),
                )
                .hint(format!(
                    "give 1 to {MAX_OPERATIONS} operations per workload"
                )));
            }
        };
        if c.objects > MAX_OBJECTS || c.objects > i32::MAX as u64 {
            return Err(PlanError::new(Origin::Default, "too many records")
                .hint("YCSB numbers its records with an int: give fewer than 2^31"));
        }
        let zipf_given = raw.settings.text(&ZIPF);
        let zipf = match &zipf_given {
            None => ZipfMode::YcsbCompat,
            Some(z) => ZipfMode::parse(&z.value).ok_or_else(|| {
                PlanError::new(z.at.clone(), format!("{:?} is not a zipfian mode", z.value)).hint(
                    "write ycsb (YCSB's scrambled zipfian, the default) or exact:THETA, e.g. exact:0.99 (a true Zipf over the records, 0 < θ ≤ 10)",
                )
            })?,
        };
        if matches!(zipf, ZipfMode::Exact(_)) && c.objects > MAX_EXACT {
            let at = zipf_given.map_or(Origin::Default, |z| z.at);
            return Err(PlanError::new(
                at,
                format!(
                    "exact: keeps the Zipf's distribution of {} records in memory",
                    c.objects
                ),
            )
            .hint(format!(
                "give at most {MAX_EXACT} records (-n) with exact:, or zipf = \"ycsb\""
            )));
        }
        let rate = match &raw.settings.text(&RATE) {
            None => None,
            Some(r) => Some(
                r.value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1e8)
                    .ok_or_else(|| {
                        PlanError::new(r.at.clone(), format!("{:?} is not a rate", r.value)).hint(
                            "write the operations per second in all, as YCSB's -target, e.g. --rate 5000",
                        )
                    })?,
            ),
        };
        Ok(Box::new(YcsbSettings {
            workloads,
            operations,
            zipf,
            rate,
        }))
    }

    fn tests(&self, plan: &Plan, _: &Point) -> Vec<&'static str> {
        let mut t = vec!["load"];
        t.extend(
            settings::<YcsbSettings>(plan)
                .workloads
                .iter()
                .map(|w| w.name),
        );
        t
    }

    fn run(
        &self,
        plan: &Plan,
        point: &Point,
        target: &PlanTarget,
        interrupt: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        let s = settings::<YcsbSettings>(plan);
        let shard = super::shard_of(plan);
        let store = super::open_shared(target, shard, run.rendezvous())?;
        run.describe(store.namespace(), store.versions());
        let store_ref: &dyn Store = &*store;
        let records = point.objects as i64;
        let virtual_time = target.config.virtual_time();
        // A store that indexes only for scans starts its index before the first write.
        let scans = if s.workloads.iter().any(|w| w.proportion(Op::Scan) > 0.0) {
            store_ref.prepare_scans()
        } else {
            store_ref.scans()
        };
        run.repeat(None, None, &mut |ctx| {
            ctx.report(load(store_ref, ctx, point, (records, shard), virtual_time));
            for (i, w) in s.workloads.iter().enumerate() {
                if interrupt.load(Ordering::Relaxed) {
                    break;
                }
                // Every shard has loaded (or run the workload before) when any starts this one.
                if let Err(why) = ctx.meet() {
                    return After::Fail(why);
                }
                if w.proportion(Op::Scan) > 0.0
                    && let Err(why) = &scans
                {
                    ctx.report(TestOutcome::not_run(
                        w.name,
                        Status::Na,
                        format!("workload {} scans, and {why}", w.name),
                    ));
                    continue;
                }
                ctx.report(run_workload(
                    store_ref,
                    ctx,
                    point,
                    (w, i),
                    (records, s.operations, plan.seed, shard),
                    (s.zipf, s.rate, virtual_time),
                ));
            }
            After::Next
        });
        super::close_shared(store, target, run);
        Ok(())
    }
}
