//! `census`: a suite that exists only in this crate's tests, the proof that a suite is one folder
//! plus one registry line (`suites/mod.rs`). It writes `--headcount` keys on a key-value store
//! and counts them back; all it needs is its own: its flag and plan-file section ([`HEADCOUNT`],
//! `[census] headcount = …`), its part of the plan record (`custom.census`), its repetitions'
//! figures (`Detail::Custom`), its table ([`view`]), its shard rule (each shard counts its slice
//! of the keys, and needs one at least) and how shards' figures add ([`view::merge`]).

mod view;

#[cfg(test)]
mod tests;

use engine::clock::Clock;
use engine::driver::{Family, TxMode};
use engine::plan::{Kind, PlanError, PlanTarget, RawPlan, Setting, bounded};
use engine::recorder::Recorder;
use engine::shard::Shard;
use engine::suite::{
    After, Clients, Common, Param, Plan, Point, Repeat, Settings, Suite, TargetError, TestOutcome,
};
use engine::worker::{self, Schedule, Stop};
use results::{Detail, Rep, Status};
use std::sync::atomic::AtomicBool;

/// The suite.
pub struct Census;

/// How many keys a census writes and counts back.
pub static HEADCOUNT: Setting = Setting {
    key: "headcount",
    short: None,
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "Census (a test-only suite): keys written and counted back on each target [default: \
           100].",
    heading: Some("Census suite"),
};

const DEFAULT_HEADCOUNT: u64 = 100;
const MAX_HEADCOUNT: u64 = 1_000_000;
const VALUE: [u8; 16] = [5; 16];

/// The census's resolved settings.
#[derive(Debug)]
struct CensusSettings {
    headcount: u64,
}

impl Settings for CensusSettings {
    fn record(&self, plan: &mut results::PlanRecord) {
        let section = serde_json::json!({ "headcount": self.headcount });
        plan.custom.insert("census".into(), section);
    }
}

/// What a census of one repetition found.
#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Figures {
    written: u64,
    counted: u64,
    missing: u64,
}

/// A shard's slice of the keys: `[from, to)`, the whole census alone.
fn slice(plan: &Plan, headcount: u64) -> (u64, u64) {
    match &plan.shard {
        None => (0, headcount),
        Some(s) => {
            let part = |i: u64| headcount * i / u64::from(s.count);
            (part(u64::from(s.index)), part(u64::from(s.index) + 1))
        }
    }
}

static SETTINGS: &[&Setting] = &[&HEADCOUNT];

impl Suite for Census {
    fn help(&self) -> &'static str {
        "a test-only suite: write keys, count them back"
    }

    fn family(&self) -> Family {
        Family::Kv
    }

    fn settings(&self) -> &'static [&'static Setting] {
        SETTINGS
    }

    fn targets_hint(&self) -> &'static str {
        "a census runs on key-value stores"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: 1,
            max: 1,
            why: "a census runs one session",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        Vec::new()
    }

    fn shardable(&self) -> bool {
        true
    }

    fn shard_rule(&self, plan: &Plan, shard: Shard, _: bool) -> Result<(), String> {
        let headcount = engine::suite::settings::<CensusSettings>(plan).headcount;
        match headcount < u64::from(shard.count) {
            true => Err(format!(
                "{headcount} keys leave some of {} shards none to count: give --headcount {} at least",
                shard.count, shard.count
            )),
            false => Ok(()),
        }
    }

    fn merge_detail(&self, parts: &results::merge::Parts) -> results::merge::Merged {
        view::merge(parts.reps)
    }

    fn resolve(&self, raw: &RawPlan, _: &Common) -> Result<Box<dyn Settings>, PlanError> {
        let given = raw.settings.int(&HEADCOUNT);
        let headcount = bounded(
            given,
            "headcount",
            DEFAULT_HEADCOUNT,
            1,
            MAX_HEADCOUNT,
            "a census holds its keys in one transaction",
        )?;
        Ok(Box::new(CensusSettings { headcount }))
    }

    fn tests(&self, _: &Plan, _: &Point) -> Vec<&'static str> {
        vec!["count"]
    }

    fn run(
        &self,
        plan: &Plan,
        _: &Point,
        target: &PlanTarget,
        _: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        let store = target.config.open().map_err(TargetError::Open)?;
        run.describe(store.namespace(), store.versions());
        let keys = slice(plan, engine::suite::settings::<CensusSettings>(plan).headcount);
        let store_ref = &*store;
        run.repeat(None, None, &mut |ctx| {
            let clock = Clock::monotonic();
            let mut session = match store_ref.connect(&clock) {
                Ok(s) => s,
                Err(e) => return After::Fail(format!("connect: {e}")),
            };
            ctx.report(count(&mut *session, ctx.rep, keys, ctx.interrupt));
            After::Next
        });
        if let Err(e) = store.close() {
            run.warn(format!("target {}: {e}", target.name));
        }
        Ok(())
    }
}

/// Writes the keys `[from, to)` of repetition `rep` in one transaction, then counts them back.
fn count(
    session: &mut dyn engine::driver::Session,
    rep: u32,
    (from, to): (u64, u64),
    interrupt: &AtomicBool,
) -> TestOutcome {
    let clock = Clock::monotonic();
    let (mut puts, mut gets) = (Recorder::new(), Recorder::new());
    let key = |i: u64| (u64::from(rep) << 32) + from + i;
    let (mut figures, mut buf) = (Figures::default(), Vec::new());
    let t0 = clock.now_ns();
    let n = to - from;
    let wrote = session.begin(TxMode::Write).and_then(|()| {
        worker::run(&clock, &mut Schedule::Closed, Stop::Count(n), interrupt, &mut puts, |i| {
            session.put(key(i), &VALUE)?;
            figures.written += 1;
            Ok(VALUE.len() as u64)
        });
        session.commit()
    });
    if let Err(e) = wrote {
        return TestOutcome::not_run("count", Status::Failed, format!("writing: {e}"));
    }
    worker::run(&clock, &mut Schedule::Closed, Stop::Count(n), interrupt, &mut gets, |i| {
        session.get(key(i), &mut buf)?;
        match buf == VALUE {
            true => figures.counted += 1,
            false => figures.missing += 1,
        }
        Ok(buf.len() as u64)
    });
    let wall_ns = clock.now_ns() - t0;
    let mut all = Recorder::new();
    all.merge(&puts);
    all.merge(&gets);
    let by_op = [("put", &puts), ("get", &gets)]
        .into_iter()
        .map(|(op, r)| (op.to_string(), r.figures()))
        .collect();
    let rep = Rep {
        ops: all.ops,
        clients: 1,
        wall_ns,
        client_ns: vec![wall_ns],
        ops_per_s: results::rate::per_s(all.ops as f64, wall_ns),
        errors: all.error_count(),
        latency_ns: results::stats::latency_summary(&all.latency),
        by_op,
        detail: Detail::custom(
            "census",
            serde_json::to_value(&figures).expect("plain figures serialize"),
        ),
    };
    let status = match figures.missing + all.error_count() {
        0 => (Status::Ok, None),
        _ => (Status::Failed, Some("the census came back short".into())),
    };
    TestOutcome::ran("count", status, rep, all)
}
