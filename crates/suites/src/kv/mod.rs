//! The `kv` suite: NorduGrid's A-Hash tests. For a duration, each of `-c` clients (a thread and a
//! session each) repeatedly gets (test `get`) or sets (test `set`) entries of a key-value store,
//! as fast as the store answers. Run under faults, or through a run of levels
//! (`levels = [...]`, see [`engine::fault::LEVELS`]), it gives the seed's two tables — get and
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
//!   which each fault's recovery time and unavailability are computed (the book, "Faults and levels").
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

mod client;
mod merge;
mod table;

use client::*;

use crate::history::{Keeper, Local};
use engine::clock::Clock;
use engine::driver::{ErrorClass, Family, OpError, Session, Store, TxMode};
use engine::plan::setting::shared;
use engine::plan::{
    Kind, MAX_CLIENTS, MAX_OBJECTS, MAX_SIZE, PlanError, PlanTarget, RawPlan, Setting,
};
use engine::recorder::Recorder;
use engine::shard::Shard;
use engine::suite::{
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

pub static DURATION: Setting = Setting {
    key: "duration",
    short: Some('d'),
    aliases: &[],
    kind: Kind::Text,
    value_name: "",
    help: "kv: how long each test (get, set) runs [default: 10s; 2s with --quick].",
    heading: Some("kv suite"),
};
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

/// One test of one repetition on every client.
#[allow(clippy::too_many_arguments)]
fn measure(
    store: &dyn Store,
    ctx: &RepCtx,
    test: &'static str,
    point: &Point,
    duration_ns: u64,
    (first, sent): (u32, &mut [Vec<u64>]),
    (acked, keeper): (&Mutex<Vec<u64>>, Option<&Keeper>),
) -> TestOutcome {
    let clients = point.clients.max(1);
    let mine = sent.len() as u32;
    let series = Mutex::new(Series::new(sent.len()));
    let start_ns = ctx.clock.now_ns();
    let threads = super::generator_threads(store, ctx.generators, sent.len());
    let jobs = (sent.iter_mut().enumerate())
        .map(|(id, sent)| -> engine::fiber::Job<'_, ClientRun> {
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
                keep: keeper.is_some(),
            };
            Box::new(move || c.run(start_ns, duration_ns))
        })
        .collect();
    let mut runs: Vec<ClientRun> = engine::fiber::join_all(threads, jobs)
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
    for r in &mut runs {
        if let (Some(k), Some(h)) = (keeper, r.history.take()) {
            k.add(test, h.ops());
        }
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
    let (status, reason) = status_of(&corrupt, &kv, ctx);
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

/// How a test went: a read that came back wrong or nothing succeeding fails it.
fn status_of(corrupt: &Option<String>, kv: &KvRep, ctx: &RepCtx) -> (Status, Option<String>) {
    match (corrupt, kv.ok) {
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
    }
}

/// What the suite reads.
static SETTINGS: &[&Setting] = &[
    &shared::OBJECTS,
    &shared::SIZE,
    &shared::CLIENTS,
    &shared::THREADS,
    &shared::IO,
    &shared::NAP,
    &DURATION,
];

impl Suite for Kv {
    fn help(&self) -> &'static str {
        "NorduGrid's A-Hash tests: clients get, then set, entries of a key-value store for a duration; with faults or levels, recovery and lost writes"
    }

    fn family(&self) -> Family {
        Family::Kv
    }

    fn settings(&self) -> &'static [&'static Setting] {
        SETTINGS
    }

    fn checks(&self) -> &'static [&'static str] {
        &["linearizable"]
    }

    fn shardable(&self) -> bool {
        true
    }

    fn merge_detail(&self, parts: &results::merge::Parts) -> results::merge::Merged {
        merge::detail(parts.reps)
    }

    fn shard_rule(&self, plan: &Plan, shard: Shard, meet: bool) -> Result<(), String> {
        super::shared_namespace(results::Named::name(self), meet)?;
        super::clients_split(plan, shard)?;
        if !plan.faults.is_empty() || !plan.levels.is_empty() {
            return Err("faults act on the target's processes from one generator, and the kv suite's shards run without them for now: drop the plan's faults and levels, or run one generator".into());
        }
        Ok(())
    }

    fn targets_hint(&self) -> &'static str {
        "the kv suite runs on key-value stores; http:// and tcp:// targets run the load suite"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: 1,
            max: MAX_CLIENTS,
            why: "each client is an OS thread with a session of its own",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![
            Param::CLIENTS,
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
        let duration = raw.settings.text(&DURATION);
        let duration_ns = match &duration {
            Some(d) => engine::plan::parse_duration_setting(
                d,
                "duration",
                24 * 3600,
                "write how long each test runs, e.g. 10s or 2m",
            )?,
            None if c.quick => 2_000_000_000,
            None => 10_000_000_000,
        };
        if duration_ns < INTERVAL_NS {
            let at = duration.as_ref().map(|d| d.at.clone());
            return Err(PlanError::new(
                at.unwrap_or(engine::plan::Origin::Default),
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
            let at = raw.settings.int(&shared::SIZE).map(|d| d.at);
            return Err(PlanError::new(
                at.unwrap_or(engine::plan::Origin::Default),
                format!(
                    "a kv value holds its write's number and writer: at least {MIN_VALUE} bytes"
                ),
            )
            .hint(format!("give a size of {MIN_VALUE} or more")));
        }
        if c.objects > MAX_OBJECTS {
            return Err(PlanError::new(
                engine::plan::Origin::Default,
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
        let all = u64::from(point.clients.max(1));
        let first = shard.first(all) as u32;
        let mut sent: Vec<Vec<u64>> = vec![Vec::new(); shard.part(all) as usize];
        let acked = Mutex::new(Vec::new());
        let mut server_before = store_ref.server_stats().and_then(Result::ok);
        let history = Keeper::new(plan, run);
        let keeper = history.as_ref();
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
                    (&acked, keeper),
                );
                if test == "set" && ctx.rep == last && ctx.measured {
                    // The final heal, then every acknowledged write read back.
                    ctx.heal();
                    let acked = acked.lock().map(|a| a.clone()).unwrap_or_default();
                    // The read-back's reads are a client's of their own in the history.
                    let mut reads = keeper.map(|_| Local::new(ctx.clock, all as u32));
                    if let Some(Detail::Kv(k)) = o.rep.as_mut().map(|r| &mut r.detail) {
                        k.lost_writes = Some(check(store_ref, &acked, point.size, reads.as_mut()));
                    }
                    if let (Some(k), Some(h)) = (keeper, reads) {
                        k.add("lost-writes check", h.ops());
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
        if let Some(k) = history {
            // Every entry's first value is the loader's.
            let first = ident((0, LOADER));
            k.finish(|key| (key < point.objects).then_some(first), run);
        }
        super::close_shared(store, target, run);
        Ok(())
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
