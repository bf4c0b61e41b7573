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

mod client;
pub mod keys;
mod merge;
mod run;
mod settings;
mod text;

pub use client::*;
use run::*;

use engine::clock::Clock;
use engine::driver::{ErrorClass, Family, OpError, Session, Store, TxMode};
use engine::plan::{MAX_CLIENTS, MAX_OBJECTS, Origin, PlanError, PlanTarget, RawPlan, Setting};
use engine::recorder::Recorder;
use engine::shard::Shard;
use engine::suite::{
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

impl results::Named for Ycsb {
    fn name(&self) -> &'static str {
        "ycsb"
    }
}

impl report::View for Ycsb {
    fn table(&self, r: &results::RunRecord, doc: &mut report::grid::Doc) -> std::io::Result<()> {
        table::render(r, doc)
    }

    fn formats(&self) -> &'static [report::OwnFormat] {
        &[report::OwnFormat {
            name: "ycsb",
            help: "YCSB's text output",
            render: text::render,
        }]
    }
}

mod table;

impl Suite for Ycsb {
    fn checks(&self) -> &'static [&'static str] {
        &["linearizable"]
    }

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

    fn merge_detail(&self, parts: &results::merge::Parts) -> results::merge::Merged {
        merge::detail(parts.reps)
    }

    fn shard_rule(&self, plan: &Plan, shard: Shard, meet: bool) -> Result<(), String> {
        super::shared_namespace(results::Named::name(self), meet)?;
        super::clients_split(plan, shard)
    }

    fn targets_hint(&self) -> &'static str {
        "the ycsb suite runs on key-value stores; http:// and tcp:// targets run the load suite"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: 1,
            max: MAX_CLIENTS,
            why: "each client is an OS thread with a session of its own",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![Param::CLIENTS, Param::RATE]
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
        let history = crate::history::Keeper::new(plan, run);
        let keeper = history.as_ref();
        run.repeat(None, None, &mut |ctx| {
            let loaded = load(
                store_ref,
                ctx,
                point,
                (records, shard),
                (virtual_time, keeper),
            );
            ctx.report(loaded);
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
                    // A rate sweep's point (a capacity search's step) sets the rate.
                    (
                        s.zipf,
                        point.swept("rate").map(|r| r as f64).or(s.rate),
                        virtual_time,
                    ),
                    keeper,
                ));
            }
            After::Next
        });
        if let Some(k) = history {
            // Every key's first value is the load's, in the history.
            k.finish(|_| None, run);
        }
        super::close_shared(store, target, run);
        Ok(())
    }
}
