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
        concurrency: plan.concurrency,
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
                "clients" => p.concurrency = v as u32,
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

/// The processes a run starts and watches: the targets' servers it started (stopped when this
/// is dropped) and the monitor sampling every watched process.
struct Watched {
    /// The started processes, by target: the fault plans act on them.
    started: Vec<crate::fault::Member>,
    monitor: Option<std::sync::Arc<crate::monitor::Monitor>>,
    /// The links in front of clusters' members (`link = true`).
    links: Vec<Arc<crate::links::Links>>,
}

/// A process to watch that is not there.
#[derive(Debug, thiserror::Error)]
enum Missing {
    #[error("no process has PID {0}")]
    Pid(u32),
    #[error("no running process is named {0:?}")]
    Name(String),
}

/// The watches a PID or a name stands for now (a name may match several processes).
fn find(
    spec: &crate::plan::ProcessSpec,
    target: Option<String>,
) -> Result<Vec<crate::monitor::Watch>, Missing> {
    use crate::plan::ProcessSpec;
    use results::WatchSource;
    let watch = |pid, source| crate::monitor::Watch {
        target: target.clone(),
        pid,
        source,
    };
    match spec {
        ProcessSpec::Pid(pid) => match crate::monitor::command(*pid) {
            Some(_) => Ok(vec![watch(*pid, WatchSource::Pid)]),
            None => Err(Missing::Pid(*pid)),
        },
        ProcessSpec::Name(name) => {
            let pids = crate::monitor::find_by_name(name);
            if pids.is_empty() {
                return Err(Missing::Name(name.clone()));
            }
            Ok(pids
                .into_iter()
                .map(|p| watch(p, WatchSource::Name))
                .collect())
        }
        ProcessSpec::Start { .. } | ProcessSpec::Members { .. } => {
            unreachable!("a started process is watched once started")
        }
    }
}

/// Starts one member of a target's cluster: its file written first (`{dir}` is the results
/// directory, `{file}` the file's path), then its command, ready before the next member starts.
fn start_member(
    target: &str,
    m: &crate::plan::MemberSpec,
    timeout: Duration,
    logs: &Path,
) -> Result<crate::process::Started, String> {
    let name = format!("{target}.{}", m.name);
    let file = logs.join(format!("{name}.conf"));
    let fill = |t: &str| {
        t.replace("{dir}", &logs.display().to_string())
            .replace("{file}", &file.display().to_string())
    };
    if let Some(text) = &m.file {
        std::fs::create_dir_all(logs)
            .and_then(|()| std::fs::write(&file, fill(text)))
            .map_err(|e| format!("writing {}: {e}", file.display()))?;
    }
    crate::process::start(&name, &fill(&m.cmd), m.ready, timeout, logs)
        .map_err(|e| format!("member {}: {e}", m.name))
}

/// Starts `targets`' servers and the monitor; finds processes given by PID or name.
fn watch(
    plan: &Plan,
    targets: &[&PlanTarget],
    clock: &Clock,
    logs: &Path,
) -> Result<Watched, RunError> {
    use crate::plan::ProcessSpec;
    let mut started = Vec::new();
    let mut watches = Vec::new();
    let mut links = Vec::new();
    for t in targets {
        let refused = |message: String| RunError::Refused {
            name: t.name.clone(),
            url: results::redact_url(&t.url),
            message,
        };
        // A process dyno started: watched, and kept (by `TARGET` or `TARGET/MEMBER`) for the
        // faults.
        // A cluster's member is watched as `TARGET/MEMBER`: its series follows the member across
        // restarts, whatever its PID.
        let mut keep = |key: String, s: crate::process::Started| {
            watches.push(crate::monitor::Watch {
                target: Some(key.clone()),
                pid: s.pid,
                source: results::WatchSource::Started,
            });
            started.push((key, std::sync::Arc::new(std::sync::Mutex::new(s))));
        };
        match &t.process {
            None => {}
            Some(ProcessSpec::Start {
                cmd,
                ready,
                ready_timeout,
            }) => {
                let s = crate::process::start(&t.name, cmd, *ready, *ready_timeout, logs)
                    .map_err(|e| refused(e.to_string()))?;
                keep(t.name.clone(), s);
            }
            Some(ProcessSpec::Members {
                members,
                ready_timeout,
                ..
            }) => {
                // The links first: the members reach each other through them.
                let linked = if members.iter().any(|m| m.listen.is_some()) {
                    let l = crate::links::Links::start(&t.name, members).map_err(refused)?;
                    links.push(Arc::new(l));
                    links.last().cloned()
                } else {
                    None
                };
                for m in members {
                    let s = start_member(&t.name, m, *ready_timeout, logs).map_err(refused)?;
                    let key = format!("{}/{}", t.name, m.name);
                    if let Some(l) = &linked {
                        l.started(&key, s.pid);
                    }
                    keep(key, s);
                }
            }
            Some(spec) => watches
                .extend((find(spec, Some(t.name.clone()))).map_err(|e| refused(e.to_string()))?),
        }
    }
    let flags = (plan.watch_pids.iter())
        .map(|&p| ("--pid", ProcessSpec::Pid(p)))
        .chain((plan.watch_names.iter()).map(|n| ("--process-name", ProcessSpec::Name(n.clone()))));
    for (flag, spec) in flags {
        watches.extend(find(&spec, None).map_err(|e| RunError::Watch(format!("{flag}: {e}")))?);
    }
    let monitor = if watches.is_empty() {
        None
    } else {
        let m = crate::monitor::Monitor::start(&watches, clock.clone(), crate::monitor::INTERVAL)
            .map_err(|e| RunError::Watch(e.to_string()))?;
        Some(std::sync::Arc::new(m))
    };
    Ok(Watched {
        started,
        monitor,
        links,
    })
}

/// Where a run stands, for whoever shows progress: told at each case's start and end and, while
/// a load repetition runs, about every [`TICK`].
pub struct Progress<'a> {
    /// Cases finished, of all the plan's.
    pub done: usize,
    pub cases: usize,
    pub target: &'a str,
    pub test: &'a str,
    /// The repetition running (0 = warm-up when there is one), of `reps`.
    pub rep: u32,
    pub reps: u32,
    /// A load repetition's figures so far.
    pub live: Option<&'a crate::load::Live>,
}

impl Progress<'_> {
    /// Every case done.
    fn finished(cases: usize) -> Progress<'static> {
        Progress {
            done: cases,
            cases,
            target: "",
            test: "",
            rep: 0,
            reps: 0,
            live: None,
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
}

/// The thread doing a stage's faults, when it has any; it tells the monitor of each process
/// started again.
fn nemesis(
    plan: &Plan,
    stage: &Stage,
    watched: &Watched,
    clock: &Clock,
    clients: &Arc<AtomicU64>,
) -> Option<crate::fault::Nemesis> {
    if stage.faults.is_empty() {
        return None;
    }
    let monitor = watched.monitor.clone();
    let links = watched.links.clone();
    let follow = Box::new(move |old, new| {
        if let Some(m) = &monitor {
            m.follow(old, new);
        }
        for l in &links {
            l.follow(old, new);
        }
    });
    let gates = (watched.links.iter())
        .flat_map(|l| l.gates.iter().map(|(k, g)| (k.clone(), g.clone())))
        .collect();
    let (faults, members) = (
        stage.faults.clone(),
        (
            watched.started.clone(),
            clients.clone(),
            roles(&stage.targets),
            gates,
        ),
    );
    // A level's faults count from its start, and start over with each test (its suite says
    // when: `StageFaults::test_starts`), none due at or past a test's duration; a plain run's
    // count from the run's start.
    let (origin, until) = if stage.level.is_some() {
        let until = (plan.settings.rep_duration_ns()).map_or(u64::MAX, |d| d.saturating_sub(1));
        (clock.now_ns(), until)
    } else {
        (0, u64::MAX)
    };
    let bounds = (plan.seed, origin, until);
    Some(crate::fault::Nemesis::start(
        faults,
        members,
        follow,
        clock.clone(),
        bounds,
    ))
}

/// A stage's faults as its suite steers them: a level's schedule starts over with each test.
struct Faults<'n> {
    nemesis: Option<&'n crate::fault::Nemesis>,
    per_test: bool,
}

impl crate::suite::StageFaults for Faults<'_> {
    fn heal(&self) {
        if let Some(n) = self.nemesis {
            n.heal();
        }
    }
    fn test_starts(&self) {
        if let (Some(n), true) = (self.nemesis, self.per_test) {
            n.start_over();
        }
    }
}

/// The clusters' role queries, by target, with their members' ports.
fn roles(targets: &[&PlanTarget]) -> std::collections::BTreeMap<String, crate::fault::Role> {
    use crate::plan::ProcessSpec;
    (targets.iter())
        .filter_map(|t| match &t.process {
            Some(ProcessSpec::Members {
                members,
                role: Some(cmd),
                ..
            }) => Some((
                t.name.clone(),
                crate::fault::Role {
                    cmd: cmd.clone(),
                    // Announced (the link's, when linked) and listened on.
                    ports: (members.iter())
                        .flat_map(|m| {
                            let key = format!("{}/{}", t.name, m.name);
                            let listen = m.listen.map(|l| (key.clone(), l[0]));
                            [(key, m.port)].into_iter().chain(listen)
                        })
                        .collect(),
                },
            )),
            _ => None,
        })
        .collect()
}

/// What each fault did to `case`, from its measured repetitions' time series.
fn fault_effects(
    events: &[results::faults::FaultEvent],
    case: &Case,
) -> Vec<results::faults::FaultEffect> {
    (case.reps.iter())
        .filter_map(|r| r.detail.series())
        .flat_map(|(intervals, started_ns)| results::faults::effects(events, intervals, started_ns))
        .collect()
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
                    sweep: point.sweep.clone(),
                    faults: Vec::new(),
                    level: stage.level.map(String::from),
                });
            }
        }
    }
    cases
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
    } = hooks;
    let clock = Clock::monotonic();
    // The monitor of the stage running: every record handed on carries the resource series so
    // far (the stages done are in the record already).
    let monitor: Mutex<Option<Arc<crate::monitor::Monitor>>> = Mutex::new(None);
    let mut with_resources = |r: &RunRecord| match monitor.lock().ok().and_then(|m| m.clone()) {
        Some(m) => {
            let mut r = r.clone();
            r.resources.extend(m.series());
            sink(&r)
        }
        None => sink(r),
    };
    let sink: &mut Sink = &mut with_resources;

    let paths: BTreeMap<String, Option<std::path::PathBuf>> = plan
        .targets
        .iter()
        .map(|t| (t.name.clone(), t.config.data_path()))
        .collect();
    let mut record = RunRecord {
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
    };
    // Bumped by a `restart-clients` fault: the suites' clients reconnect.
    let clients = Arc::new(AtomicU64::new(0));
    let points = points(plan);
    let tests: Vec<Vec<&'static str>> = points.iter().map(|p| plan.suite.tests(plan, p)).collect();
    let stages = stages(plan);
    let mut firsts = Vec::new();
    for stage in &stages {
        firsts.push(record.cases.len());
        (record.cases).extend(unfinished_cases(plan, stage, &points, &tests));
    }
    sink(&record).map_err(RunError::Sink)?;

    let mut warnings = Vec::new();
    let cases = record.cases.len();
    for (i, stage) in stages.iter().enumerate() {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let stage_cases = firsts[i]..firsts.get(i + 1).copied().unwrap_or(cases);
        let watched = watch(plan, &stage.targets, &clock, logs)?;
        if let Ok(mut m) = monitor.lock() {
            m.clone_from(&watched.monitor);
        }
        let nemesis = nemesis(plan, stage, &watched, &clock, &clients);
        let faults = Faults {
            nemesis: nemesis.as_ref(),
            per_test: stage.level.is_some(),
        };
        let mut first = stage_cases.start;
        'points: for (point, tests) in points.iter().zip(&tests) {
            for t in &stage.targets {
                if interrupt.load(Ordering::Relaxed) {
                    break 'points;
                }
                progress(&Progress {
                    done: first,
                    cases,
                    target: &t.name,
                    test: tests.first().copied().unwrap_or(""),
                    rep: 0,
                    reps: plan.reps + u32::from(plan.warmup),
                    live: None,
                });
                let mine = first..first + tests.len();
                if let Some(why) = crate::resolve::na_reason(plan.suite, t) {
                    // A store without the suite's family, in a run with others that have it.
                    settle(&mut record.cases[mine], Status::Na, &why);
                } else {
                    let mut run = TargetRun {
                        plan,
                        target: t,
                        tests,
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
                    let ran = plan.suite.run(plan, point, t, interrupt, &mut run);
                    if let Some(e) = run.failed_sink.take() {
                        return Err(RunError::Sink(e));
                    }
                    match ran {
                        Ok(()) => run.finish(),
                        Err(why) => {
                            settle(&mut record.cases[mine], Status::Failed, &why.to_string())
                        }
                    }
                }
                first += tests.len();
                sink(&record).map_err(RunError::Sink)?;
            }
        }
        // The faults heal before the record is final, and before anything dyno started is
        // stopped.
        if let Some(n) = nemesis {
            let events = n.stop();
            for c in &mut record.cases[stage_cases] {
                c.faults = fault_effects(&events, c);
            }
            record.faults.extend(events);
        }
        if let Ok(mut m) = monitor.lock() {
            *m = None;
        }
        if let Some(m) = &watched.monitor {
            record.resources.extend(m.stop());
        }
        drop(watched);
    }

    progress(&Progress::finished(record.cases.len()));
    record.interrupted = interrupt.load(Ordering::Relaxed) && record.aborted.is_none();
    record.finished = Some(now_utc());
    record.thresholds = results::thresholds::evaluate(
        &plan.thresholds,
        &record,
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
    sink(&record).map_err(RunError::Sink)?;
    Ok(RunOutcome { record, warnings })
}

impl CaseAcc {
    fn new() -> CaseAcc {
        CaseAcc {
            recorder: Recorder::new(),
            failure: None,
            failure_measured: false,
            na: None,
            interrupted: false,
            invalid: None,
            server: BTreeMap::new(),
        }
    }
}

/// One target at one point: its cases in the record and what they accumulate, and everything a
/// repetition needs from the run. It is the [`Repeat`] a suite runs through.
struct TargetRun<'r, 'h> {
    plan: &'r Plan,
    target: &'r PlanTarget,
    tests: &'r [&'static str],
    /// The index of the target's first case at this point in the record.
    first: usize,
    record: &'r mut RunRecord,
    acc: Vec<CaseAcc>,
    sink: &'r mut Sink<'h>,
    interrupt: &'r AtomicBool,
    /// The run's clock.
    clock: &'r Clock,
    /// Bumped when the clients must reconnect (a `restart-clients` fault).
    clients: &'r Arc<AtomicU64>,
    /// The stage's faults (the final heal, a level's schedule started again per test).
    faults: &'r dyn crate::suite::StageFaults,
    rendezvous: Option<&'r crate::shard::Rendezvous>,
    checkpoint: Duration,
    progress: &'r mut (dyn FnMut(&Progress) + 'h),
    warnings: &'r mut Vec<String>,
    /// A sink error stops the run.
    failed_sink: Option<SinkError>,
    /// `--profile`: the profiler, and the monitor of the processes it profiles.
    profiler: Option<(&'r dyn Profiler, Option<Arc<crate::monitor::Monitor>>)>,
}

/// What a repetition's thread tells the runner.
enum Msg {
    Outcome(Box<TestOutcome>),
    /// A test's profiles (`--profile`).
    Profiles(&'static str, Vec<results::ProfileRecord>),
    Ended(After),
}

impl TargetRun<'_, '_> {
    /// Folds one test's outcome into its case.
    fn take(&mut self, o: TestOutcome, measured: bool) {
        let i = (self.tests.iter())
            .position(|t| *t == o.test)
            .expect("a suite reports its own tests");
        let case = &mut self.record.cases[self.first + i];
        let a = &mut self.acc[i];
        if measured {
            for (op, n, h) in o.server {
                let slot = (a.server)
                    .entry(op)
                    .or_insert_with(|| (0, results::new_histogram()));
                slot.0 += n;
                let _ = slot.1.add(&h);
            }
        }
        if o.cache.is_some() {
            case.cache = o.cache;
        }
        match o.status {
            Status::Na => a.na = o.reason,
            Status::Interrupted => a.interrupted = true,
            Status::Failed => a.failed(o.reason, measured),
            Status::Invalid if a.invalid.is_none() => a.invalid = o.reason,
            _ => {}
        }
        if measured {
            a.recorder.merge(&o.recorder);
            case.reps.extend(o.rep);
        } else {
            case.warmup = o.rep;
        }
    }

    fn sink(&mut self) {
        if self.failed_sink.is_none()
            && let Err(e) = (self.sink)(self.record)
        {
            self.failed_sink = Some(e);
        }
    }

    /// Writes the record with `partial` as the running case's latest repetition, then takes it
    /// out again: a crash loses at most one checkpoint interval.
    fn checkpoint(&mut self, case: usize, rep: u32, elapsed_ns: u64, partial: results::Rep) {
        let why = format!(
            "checkpoint: repetition {} was still running, {:.0} s in, when this record was written",
            rep + 1,
            elapsed_ns as f64 / 1e9
        );
        let c = &mut self.record.cases[self.first + case];
        let reason = c.reason.replace(why);
        c.reps.push(partial);
        self.sink();
        let c = &mut self.record.cases[self.first + case];
        c.reps.pop();
        c.reason = reason;
    }

    /// `abort_on_fail`: checks the thresholds on the running case's intervals so far, and on
    /// the first broken stops the run (the interrupt every worker watches) and says why.
    fn abort_if_broken(&mut self, case: usize, l: &crate::load::Live) {
        let Some(after) = self.plan.abort_after else {
            return;
        };
        if self.record.aborted.is_some() || l.elapsed_ns < after.as_nanos() as u64 {
            return;
        }
        let running = results::thresholds::Running {
            latency: &l.total.latency,
            elapsed_ns: l.elapsed_ns,
            ops: l.total.responses,
            errors: l.total.error_count(),
        };
        let c = &self.record.cases[case];
        let baseline = self.plan.baseline.as_ref().map(|(_, b)| &b.record);
        let Some((t, (value, limit))) = (self.plan.thresholds.iter())
            .find_map(|t| t.broken_by(c, &running, baseline).map(|v| (t, v)))
        else {
            return;
        };
        self.record.aborted = Some(results::thresholds::Aborted {
            threshold: t.text.clone(),
            case: c.id().to_string(),
            value,
            limit,
            after_ns: l.elapsed_ns,
        });
        self.interrupt.store(true, Ordering::SeqCst);
    }

    fn finish(mut self) {
        let reps = self.plan.reps;
        for (i, a) in std::mem::take(&mut self.acc).into_iter().enumerate() {
            finish_case(&mut self.record.cases[self.first + i], a, reps);
        }
    }
}

impl Repeat for TargetRun<'_, '_> {
    fn rendezvous(&self) -> Option<&crate::shard::Rendezvous> {
        self.rendezvous
    }

    fn describe(&mut self, namespace: Namespace, versions: BTreeMap<String, String>) {
        let cases = self.first..self.first + self.tests.len();
        for c in &mut self.record.cases[cases] {
            c.namespace = namespace.clone();
            c.versions = versions.clone();
        }
    }

    fn repeat(
        &mut self,
        live: Option<&Mutex<crate::load::Live>>,
        partial: Option<&Partial>,
        rep: &mut (dyn FnMut(&RepCtx) -> After + Send),
    ) {
        let total = self.plan.reps + u32::from(self.plan.warmup);
        let (interrupt, clock, clients, faults) =
            (self.interrupt, self.clock, self.clients, self.faults);
        let (threads, rendezvous) = (self.plan.threads, self.rendezvous);
        let target_name = self.target.name.as_str();
        let tests = self.tests;
        for r in 0..total {
            let measured = !(self.plan.warmup && r == 0);
            // Profiles are of the first measured repetition: the target's processes (its own,
            // its members') and those watched by flag, and dyno.
            let profiling = (self.profiler.as_ref())
                .filter(|_| r == u32::from(self.plan.warmup))
                .map(|(p, monitor)| {
                    let of = |t: &str, name: &str| name == t || name.starts_with(&format!("{t}/"));
                    let mut procs: Vec<(String, u32, Vec<u32>)> = (monitor.iter())
                        .flat_map(|m| m.watches())
                        .filter(|(name, _, _)| {
                            of(target_name, name)
                                || !self.plan.targets.iter().any(|t| of(&t.name, name))
                        })
                        .collect();
                    procs.push(("dyno".into(), std::process::id(), Vec::new()));
                    (*p, procs)
                });
            if let Some(l) = live
                && let Ok(mut l) = l.lock()
            {
                l.reset();
            }
            let (tx, rx) = std::sync::mpsc::channel::<Msg>();
            let (u0, s0) = crate::load::process_cpu_ns();
            let mut after = After::Next;
            let profiling = &profiling;
            std::thread::scope(|s| {
                let ended = tx.clone();
                let rep = &mut *rep;
                // The repetition runs on its own thread; this one takes its outcomes, shows
                // progress and writes checkpoints until it ends (it says so, or its sender goes
                // if it panics).
                s.spawn(move || {
                    let begin = |i: usize| {
                        if let (Some((p, procs)), Some(test)) = (profiling, tests.get(i)) {
                            p.begin(target_name, test, procs);
                        }
                    };
                    begin(0);
                    let report = move |o: TestOutcome| {
                        let test = o.test;
                        if let Some((p, _)) = profiling {
                            let _ = tx.send(Msg::Profiles(test, p.end()));
                        }
                        let _ = tx.send(Msg::Outcome(Box::new(o)));
                        if profiling.is_some()
                            && let Some(i) = tests.iter().position(|t| *t == test)
                        {
                            begin(i + 1);
                        }
                    };
                    let mut ctx = RepCtx::new(
                        (r, measured),
                        interrupt,
                        live,
                        (clock, clients, faults),
                        &report,
                    );
                    ctx.threads = threads;
                    ctx.rendezvous = rendezvous;
                    // A shard starts with all the others, at the instant they agree on.
                    let after = match rendezvous.map(|r| r.start().map(|at| (r, at))).transpose() {
                        Ok(met) => {
                            ctx.start_unix_ns = met.map(|(_, at)| at);
                            ctx.start_at = met.map(|(r, at)| r.local(at));
                            rep(&ctx)
                        }
                        Err(e) => After::Fail(e.to_string()),
                    };
                    if let Some((p, _)) = profiling {
                        // A test that never reported (interrupted): its profile is dropped.
                        let _ = p.end();
                    }
                    let _ = ended.send(Msg::Ended(after));
                });
                let mut running = 0;
                let mut last_checkpoint = std::time::Instant::now();
                loop {
                    match rx.recv_timeout(TICK) {
                        Ok(Msg::Profiles(test, profiles)) => {
                            if let Some(i) = self.tests.iter().position(|t| *t == test) {
                                self.record.cases[self.first + i].profiles = profiles;
                            }
                            continue;
                        }
                        Ok(Msg::Outcome(o)) => {
                            self.take(*o, measured);
                            running += 1;
                            // Progress is told on ticks: a test's end is not a new repetition.
                            continue;
                        }
                        Ok(Msg::Ended(a)) => {
                            after = a;
                            break;
                        }
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                            after = After::Fail("the repetition's thread panicked".into());
                            break;
                        }
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    }
                    let now = live.and_then(|l| l.lock().ok());
                    let test = self.tests.get(running).or(self.tests.last()).copied();
                    (self.progress)(&Progress {
                        done: self.first + running.min(self.tests.len()),
                        cases: self.record.cases.len(),
                        target: &self.target.name,
                        test: test.unwrap_or(""),
                        rep: r,
                        reps: total,
                        live: now.as_deref(),
                    });
                    if measured && let Some(l) = now.as_deref() {
                        let case = self.first + running.min(self.tests.len() - 1);
                        self.abort_if_broken(case, l);
                    }
                    let (Some(now), Some(partial)) = (now, partial) else {
                        continue;
                    };
                    if last_checkpoint.elapsed() < self.checkpoint || now.elapsed_ns == 0 {
                        continue;
                    }
                    last_checkpoint = std::time::Instant::now();
                    let (u1, s1) = crate::load::process_cpu_ns();
                    let rep = partial(&now, (u1 - u0, s1 - s0));
                    let elapsed_ns = now.elapsed_ns;
                    drop(now);
                    self.checkpoint(running.min(self.tests.len() - 1), r, elapsed_ns, rep);
                }
            });
            if let After::Fail(why) = after {
                for a in &mut self.acc {
                    a.failed(Some(why.clone()), measured);
                }
                break;
            }
            self.sink();
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
        }
    }

    fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }
}

fn finish_case(case: &mut Case, a: CaseAcc, reps: u32) {
    let (status, reason) = if let Some(why) = a.na {
        (Status::Na, Some(why))
    } else if a.interrupted || (case.reps.len() as u32) < reps && a.failure.is_none() {
        (
            Status::Interrupted,
            Some(format!(
                "stopped by the user after {} of {reps} repetitions",
                case.reps.len()
            )),
        )
    } else if let Some(why) = a.failure {
        (Status::Failed, Some(why))
    } else if let Some(why) = a.invalid {
        (Status::Invalid, Some(why))
    } else {
        (Status::Ok, None)
    };
    case.status = status;
    case.reason = reason;
    let rates: Vec<f64> = case
        .reps
        .iter()
        .filter(|r| r.wall_ns > 0)
        .map(|r| r.ops_per_s)
        .collect();
    let latency = results::stats::latency_summary(&a.recorder.latency);
    case.summary = match (results::stats::spread(&rates), latency) {
        (Some(ops_per_s), Some(latency_ns)) => Some(results::Summary {
            ops_per_s,
            latency_ns,
            service_ns: results::stats::latency_summary(&a.recorder.service),
        }),
        _ => None,
    };
    case.histogram =
        (!a.recorder.latency.is_empty()).then(|| results::histogram::encode(&a.recorder.latency));
    case.server = (!a.server.is_empty()).then(|| {
        a.server
            .iter()
            .map(|(op, (n, h))| {
                (
                    op.clone(),
                    results::ServerOpRecord {
                        count: *n,
                        latency_ns: results::stats::latency_summary(h),
                    },
                )
            })
            .collect()
    });
    for class in crate::driver::ErrorClass::ALL {
        let n = a.recorder.errors[class as usize];
        if n > 0 {
            case.errors.insert(class.as_str().to_string(), n);
        }
        if let Some(m) = &a.recorder.examples[class as usize] {
            case.error_examples
                .insert(class.as_str().to_string(), m.clone());
        }
    }
}
