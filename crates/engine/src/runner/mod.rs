//! Runs a resolved plan and builds its run record.
//!
//! Before anything is written, every target is preflighted (read-only): if one would refuse —
//! a database or directory dyno did not create — the run stops there and touches nothing. Then
//! targets run one after another (a store each for `shootout`, an endpoint each for `load`).
//! Every case of the plan is in the record from the start, marked `interrupted` until its last
//! repetition is done, and the record is handed to the sink after every repetition: a run cut off
//! at any moment leaves a true record behind.

use crate::clock::Clock;
use crate::plan::PlanTarget;
use crate::recorder::Recorder;
use crate::suite::Plan;
use crate::suite::{After, Partial, Point, RepCtx, Repeat, TestOutcome};
use results::{Case, DynoInfo, Namespace, RunRecord, SCHEMA, Status};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

mod target;
use target::*;
mod faults;
use faults::*;
mod processes;
use processes::*;

/// The sink that receives the record after every repetition.
pub type Sink<'a> = dyn FnMut(&RunRecord) -> Result<(), SinkError> + 'a;

/// Why the sink could not take the record (its own error, whatever it writes to).
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// The plan's points: itself, or each value of each sweep (the other parameters at the plan's).
/// The shared settings follow a sweep of them here; a suite reads its own swept parameter from
/// [`Point::sweep`].
fn points(plan: &Plan) -> Vec<Point> {
    let base = Point {
        sweep: None,
        objects: plan.objects,
        clients: plan.clients,
        size: plan.size,
    };
    if plan.sweeps.is_empty() {
        return vec![base];
    }
    let mut all = Vec::new();
    for sweep in &plan.sweeps {
        for &v in &sweep.values {
            let mut p = base.clone();
            match sweep.param {
                "objects" => p.objects = v,
                "size" => p.size = v as usize,
                "clients" => p.clients = v as u32,
                _ => {}
            }
            p.sweep = Some(results::SweepPoint {
                param: sweep.param.to_string(),
                value: v,
            });
            all.push(p);
        }
    }
    all
}

/// The highest rate a search may offer: the suite's limit for a rate sweep.
fn max_rate(plan: &Plan) -> u64 {
    (plan.suite.sweepable().iter())
        .find(|p| p.name == "rate")
        .map_or(1_000_000, |p| p.max)
}

/// The points a run goes through: the plan's, or a capacity search's, chosen one by one after
/// the plan's own load (the probe); with the tests of each.
struct Points {
    list: Vec<Point>,
    tests: Vec<Vec<&'static str>>,
    search: Option<crate::search::Steps>,
}

impl Points {
    fn new(plan: &Plan) -> Points {
        let list = points(plan);
        let tests = list.iter().map(|p| plan.suite.tests(plan, p)).collect();
        let search = (!plan.find_max.is_empty()).then(|| crate::search::Steps::new(max_rate(plan)));
        Points {
            list,
            tests,
            search,
        }
    }

    fn get(&self, at: usize) -> Option<(Point, Vec<&'static str>)> {
        Some((self.list.get(at)?.clone(), self.tests.get(at)?.clone()))
    }

    /// After the point whose cases are `done`: a search's next point, its cases added to the
    /// record (unfinished), the search so far into the record. How many cases were added.
    fn after(
        &mut self,
        plan: &Plan,
        stage: &Stage,
        record: &mut RunRecord,
        done: std::ops::Range<usize>,
    ) -> usize {
        let Some(steps) = &mut self.search else {
            return 0;
        };
        let mut added = 0;
        if let Some(next) = steps.after(&plan.find_max, &self.list[0], &record.cases[done]) {
            let tests = plan.suite.tests(plan, &next);
            let one = (std::slice::from_ref(&next), std::slice::from_ref(&tests));
            let more = unfinished_cases(plan, stage, one.0, one.1);
            added = more.len();
            record.cases.extend(more);
            self.list.push(next);
            self.tests.push(tests);
        }
        record_search(record, plan, steps);
        added
    }
}

/// The search so far into the record: its steps and edge, and its steps' rates as the plan's
/// rate sweep (so the sweep's tables and plots draw them).
fn record_search(record: &mut RunRecord, plan: &Plan, steps: &crate::search::Steps) {
    let objectives = plan.find_max.iter().map(|t| t.text.clone()).collect();
    let s = steps.search.record(objectives);
    let mut values: Vec<u64> = s.steps.iter().map(|s| s.rate).collect();
    values.sort_unstable();
    values.dedup();
    record.plan.sweeps = vec![results::SweepRecord {
        param: "rate".into(),
        values,
    }];
    record.search = Some(s);
}

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A target refused to be opened (dyno did not create it); nothing was touched.
    #[error("target {name} ({url}): {message}")]
    Refused {
        name: String,
        url: String,
        message: String,
    },
    /// The record could not be written.
    #[error("writing the run record: {0}")]
    Sink(SinkError),
    /// A process to watch could not be found or watched.
    #[error("{0}")]
    Watch(String),
}

/// A finished (or interrupted) run.
#[derive(Debug)]
pub struct RunOutcome {
    pub record: RunRecord,
    /// Problems that did not stop the run (e.g. a temporary namespace that could not be deleted).
    pub warnings: Vec<String>,
}

fn now_utc() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// What each case of one target accumulates over repetitions.
struct CaseAcc {
    recorder: Recorder,
    failure: Option<String>,
    /// Whether `failure` came from a measured repetition (not the warm-up).
    failure_measured: bool,
    na: Option<String>,
    interrupted: bool,
    /// Why the figures cannot be trusted (the generator was the bottleneck).
    invalid: Option<String>,
    /// The server's own figures by operation over the measured repetitions.
    server: BTreeMap<String, (u64, results::Histogram)>,
}

impl CaseAcc {
    /// Keeps the reason of a failure; a measured repetition's failure wins over the warm-up's.
    fn failed(&mut self, reason: Option<String>, measured: bool) {
        if self.failure.is_none() || (measured && !self.failure_measured) {
            self.failure_measured = measured;
            self.failure = reason.map(|r| {
                if measured {
                    r
                } else {
                    format!("during warm-up: {r}")
                }
            });
        }
    }
}

/// Checks, reading only, that every target may be opened. `run` does it first; callers that
/// create anything of their own (a results directory) call it before that.
pub fn preflight(plan: &Plan) -> Result<(), RunError> {
    for t in &plan.targets {
        t.config.preflight().map_err(|e| RunError::Refused {
            name: t.name.clone(),
            url: results::redact_url(&t.url),
            message: e.message,
        })?;
    }
    Ok(())
}

/// Where a run stands, for whoever shows progress: told at each case's start and end and, while
/// a load repetition runs, about every [`TICK`].
pub struct Progress<'a> {
    /// The case running (its place among all the plan's), or all of them once done.
    pub done: usize,
    pub cases: usize,
    /// Cases whose every repetition is over and whose record is final.
    pub finished: usize,
    pub target: &'a str,
    pub test: &'a str,
    /// The repetition running (0 = warm-up when there is one), of `reps`.
    pub rep: u32,
    pub reps: u32,
    /// A load repetition's figures so far.
    pub live: Option<&'a crate::load::Live>,
    /// Rank 0 of a sharded run: what each other shard said last of its progress.
    pub shards: Vec<crate::shard::ShardProgress>,
}

impl<'a> Progress<'a> {
    /// A target's cases at a point begin (`first` of `cases` done before them).
    fn starting(
        plan: &Plan,
        (first, cases): (usize, usize),
        target: &'a str,
        tests: &[&'a str],
    ) -> Progress<'a> {
        Progress {
            done: first,
            cases,
            finished: first,
            target,
            test: tests.first().copied().unwrap_or(""),
            rep: 0,
            reps: plan.reps + u32::from(plan.warmup),
            live: None,
            shards: Vec::new(),
        }
    }

    /// Every case done.
    fn finished(cases: usize) -> Progress<'static> {
        Progress {
            done: cases,
            cases,
            finished: cases,
            target: "",
            test: "",
            rep: 0,
            reps: 0,
            live: None,
            shards: Vec::new(),
        }
    }
}

/// How often a running load repetition reports its progress.
pub const TICK: Duration = Duration::from_millis(200);
/// How often a running load repetition is written into the record (a crash loses at most this).
pub const DEFAULT_CHECKPOINT: Duration = Duration::from_secs(60);

/// Profiles processes during tests (`--profile DIR`): told, on the repetition's own thread (which
/// waits), when a test of the first measured repetition begins and when it ends.
pub trait Profiler: Sync {
    /// `test` of `target` begins: profile `processes` (name, PID, its descendants' PIDs) until
    /// [`Profiler::end`]. dyno's own process is among them.
    fn begin(&self, target: &str, test: &str, processes: &[(String, u32, Vec<u32>)]);
    /// The test ended: the profiles of what began (none when nothing did).
    fn end(&self) -> Vec<results::ProfileRecord>;
}

/// Told, from any thread, of what happens during a run as it happens (the live view).
pub trait Watch: Send + Sync {
    /// The run's clock, once at its start: the times told later count on it.
    fn clock(&self, clock: &Clock);
    /// A fault began (its `end_ns` none) or is over.
    fn fault(&self, event: &results::faults::FaultEvent);
}

/// What a run needs from its caller besides the plan.
pub struct Hooks<'a> {
    /// Set (by Ctrl-C) to stop after the current operation.
    pub interrupt: &'a AtomicBool,
    /// Where started servers log (the results directory).
    pub logs: &'a Path,
    /// How often a running load repetition is checkpointed into the record.
    pub checkpoint: Duration,
    /// Told where the run stands.
    pub progress: &'a mut dyn FnMut(&Progress),
    /// Profiles each test's first measured repetition (`--profile DIR`), when set.
    pub profiler: Option<&'a dyn Profiler>,
    /// A shard's meeting with the others (`--shard I/N --rendezvous …`): every repetition
    /// starts at the instant all agreed on.
    pub rendezvous: Option<&'a crate::shard::Rendezvous>,
    /// Told of the run's events as they happen, when set.
    pub watch: Option<Arc<dyn Watch>>,
}

/// Gives every case of `cases` its final status and reason.
fn settle(cases: &mut [Case], status: Status, why: &str) {
    for c in cases {
        c.status = status;
        c.reason = Some(why.to_string());
    }
}

/// What runs together: the plan's targets with its faults, or one target at one level with the
/// level's faults for it. Each stage starts its targets' processes afresh and stops them at its
/// end.
struct Stage<'p> {
    level: Option<&'static str>,
    targets: Vec<&'p PlanTarget>,
    faults: Vec<crate::fault::Fault>,
}

fn stages(plan: &Plan) -> Vec<Stage<'_>> {
    if plan.levels.is_empty() {
        return vec![Stage {
            level: None,
            targets: plan.targets.iter().collect(),
            faults: plan.faults.clone(),
        }];
    }
    // A level runs each of its targets on its own: their own processes, their own faults, and
    // a final heal (the kv suite's, before its lost-writes check) that ends no other's.
    let mut all = Vec::new();
    for l in &plan.levels {
        for &i in &l.targets {
            let t = &plan.targets[i];
            all.push(Stage {
                level: Some(l.name),
                targets: vec![t],
                faults: (l.faults.iter())
                    .filter(|f| {
                        f.target == t.name || f.action == crate::fault::Action::RestartClients
                    })
                    .cloned()
                    .collect(),
            });
        }
    }
    all
}

/// Every case of a stage, in the order they run, each `interrupted` until it finishes.
fn unfinished_cases(
    plan: &Plan,
    stage: &Stage,
    points: &[Point],
    tests: &[Vec<&'static str>],
) -> Vec<Case> {
    let mut cases = Vec::new();
    for (point, tests) in points.iter().zip(tests) {
        for t in &stage.targets {
            for test in tests {
                cases.push(Case {
                    target: t.name.clone(),
                    url: results::redact_url(&t.url),
                    suite: plan.suite.name().to_string(),
                    test: test.to_string(),
                    topology: plan.suite.topology(t).to_string(),
                    status: Status::Interrupted,
                    reason: Some("the run ended before this case finished".to_string()),
                    durability: t.config.durability(),
                    versions: BTreeMap::new(),
                    namespace: Namespace {
                        location: String::new(),
                        created_by_dyno: false,
                        temporary: false,
                    },
                    cache: None,
                    warmup: None,
                    reps: Vec::new(),
                    summary: None,
                    errors: BTreeMap::new(),
                    error_examples: BTreeMap::new(),
                    histogram: None,
                    server: None,
                    profiles: Vec::new(),
                    consistency: None,
                    sweep: point.sweep.clone(),
                    faults: Vec::new(),
                    level: stage.level.map(String::from),
                });
            }
        }
    }
    cases
}

/// The run's record before its first case: the plan, the environment, and `interrupted` until
/// the run ends (a record read from disk before then says the run did not finish).
fn new_record(plan: &Plan, dyno: DynoInfo) -> RunRecord {
    let paths: BTreeMap<String, Option<std::path::PathBuf>> = plan
        .targets
        .iter()
        .map(|t| (t.name.clone(), t.config.data_path()))
        .collect();
    RunRecord {
        schema: SCHEMA.to_string(),
        dyno,
        started: now_utc(),
        finished: None,
        // Until the run ends: a record read from disk before then (a checkpoint, or what a
        // crash or `kill -9` left) says the run did not finish, as its running case does.
        interrupted: true,
        environment: crate::env::environment(&paths),
        plan: plan.record(),
        cases: Vec::new(),
        resources: Vec::new(),
        faults: Vec::new(),
        thresholds: Vec::new(),
        aborted: None,
        search: None,
        push: Vec::new(),
        clock_zero_unix_ns: None,
    }
}

/// The record when the run ends: finished (or interrupted), its thresholds judged, and the
/// cases a broken threshold stopped saying so.
fn conclude(plan: &Plan, record: &mut RunRecord, interrupted: bool) {
    record.interrupted = interrupted && record.aborted.is_none();
    record.finished = Some(now_utc());
    record.thresholds = results::thresholds::evaluate(
        &plan.thresholds,
        record,
        plan.baseline.as_ref().map(|(_, b)| b.as_ref()),
    );
    if let Some(a) = &record.aborted {
        // The threshold that stopped the run failed, whatever the cut-short cases now show;
        // the cases it stopped say so instead of "stopped by the user".
        for t in (record.thresholds.iter_mut()).filter(|t| t.threshold == a.threshold) {
            t.held = false;
        }
        let why = format!(
            "stopped: threshold \"{}\" broke on {} ({} against {}, {:.1} s into a repetition)",
            a.threshold,
            a.case,
            a.value,
            a.limit,
            a.after_ns as f64 / 1e9
        );
        for c in (record.cases.iter_mut()).filter(|c| c.status == Status::Interrupted) {
            c.reason = Some(why.clone());
        }
    }
}

/// `sink`, handed every record with the running stage's resource series so far added.
fn resources_sink<'a>(
    monitor: &'a Mutex<Option<Arc<crate::monitor::Monitor>>>,
    sink: &'a mut Sink,
) -> impl FnMut(&RunRecord) -> Result<(), SinkError> + 'a {
    move |r: &RunRecord| match monitor.lock().ok().and_then(|m| m.clone()) {
        Some(m) => {
            let mut r = r.clone();
            r.resources.extend(m.series());
            sink(&r)
        }
        None => sink(r),
    }
}

/// A stage ends: its faults heal before the record is final and before anything dyno started is
/// stopped; each of its cases gets the faults' effects, the record the processes' resources.
fn end_stage(
    record: &mut RunRecord,
    cases: std::ops::Range<usize>,
    nemesis: Option<crate::fault::Nemesis>,
    watched: Watched,
) {
    if let Some(n) = nemesis {
        let events = n.stop();
        for c in &mut record.cases[cases] {
            c.faults = fault_effects(&events, c);
        }
        record.faults.extend(events);
    }
    if let Some(m) = &watched.monitor {
        record.resources.extend(m.stop());
    }
}

/// The record of a run about to begin, every case in it unfinished; and each stage's first
/// case.
fn planned_record(
    plan: &Plan,
    dyno: DynoInfo,
    stages: &[Stage],
    points: &Points,
) -> (RunRecord, Vec<usize>) {
    let mut record = new_record(plan, dyno);
    let mut firsts = Vec::new();
    for stage in stages {
        firsts.push(record.cases.len());
        (record.cases).extend(unfinished_cases(plan, stage, &points.list, &points.tests));
    }
    (record, firsts)
}

/// Runs `plan`, handing the record to `sink` after every repetition, at every checkpoint of a
/// long repetition, and at the end.
pub fn run(
    plan: &Plan,
    dyno: DynoInfo,
    hooks: Hooks,
    sink: &mut Sink,
) -> Result<RunOutcome, RunError> {
    preflight(plan)?;
    let Hooks {
        interrupt,
        logs,
        checkpoint,
        progress,
        profiler,
        rendezvous,
        watch: live,
    } = hooks;
    let clock = Clock::monotonic();
    live.iter().for_each(|w| w.clock(&clock));
    // The running stage's monitor: each record handed on carries its resource series so far.
    let monitor: Mutex<Option<Arc<crate::monitor::Monitor>>> = Mutex::new(None);
    let mut with_resources = resources_sink(&monitor, sink);
    let sink: &mut Sink = &mut with_resources;

    // Bumped by a `restart-clients` fault: the suites' clients reconnect.
    let clients = Arc::new(AtomicU64::new(0));
    let (stages, mut points) = (stages(plan), Points::new(plan));
    let (mut record, firsts) = planned_record(plan, dyno, &stages, &points);
    record.clock_zero_unix_ns = Some(crate::shard::unix_ns().saturating_sub(clock.now_ns()));
    sink(&record).map_err(RunError::Sink)?;

    let mut warnings = Vec::new();
    let mut cases = record.cases.len();
    for (i, stage) in stages.iter().enumerate() {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let stage_cases = firsts[i]..firsts.get(i + 1).copied().unwrap_or(cases);
        let watched = watch(plan, &stage.targets, &clock, logs)?;
        if let Ok(mut m) = monitor.lock() {
            m.clone_from(&watched.monitor);
        }
        let nemesis = nemesis(plan, stage, &watched, (&clock, &clients), live.clone());
        let faults = Faults {
            nemesis: nemesis.as_ref(),
            per_test: stage.level.is_some(),
        };
        let mut first = stage_cases.start;
        let mut at = 0;
        'points: while let Some((point, tests)) = points.get(at) {
            at += 1;
            for t in &stage.targets {
                if interrupt.load(Ordering::Relaxed) {
                    break 'points;
                }
                progress(&Progress::starting(plan, (first, cases), &t.name, &tests));
                let mine = first..first + tests.len();
                if let Some(why) = crate::resolve::na_reason(plan.suite, t) {
                    // A store without the suite's family, in a run with others that have it.
                    settle(&mut record.cases[mine], Status::Na, &why);
                } else {
                    let run = TargetRun {
                        plan,
                        target: t,
                        tests: &tests,
                        first,
                        record: &mut record,
                        acc: tests.iter().map(|_| CaseAcc::new()).collect(),
                        sink: &mut *sink,
                        interrupt,
                        clock: &clock,
                        clients: &clients,
                        faults: &faults,
                        rendezvous,
                        checkpoint,
                        progress: &mut *progress,
                        warnings: &mut warnings,
                        failed_sink: None,
                        profiler: profiler.map(|p| (p, watched.monitor.clone())),
                    };
                    run.go(&point)?;
                }
                first += tests.len();
                sink(&record).map_err(RunError::Sink)?;
            }
            cases += points.after(plan, stage, &mut record, first - tests.len()..first);
        }
        if let Ok(mut m) = monitor.lock() {
            *m = None;
        }
        let stage_cases = stage_cases.start..first.max(stage_cases.end);
        end_stage(&mut record, stage_cases, nemesis, watched);
    }

    progress(&Progress::finished(record.cases.len()));
    conclude(plan, &mut record, interrupt.load(Ordering::Relaxed));
    sink(&record).map_err(RunError::Sink)?;
    Ok(RunOutcome { record, warnings })
}
