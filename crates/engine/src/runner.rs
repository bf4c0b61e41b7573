//! Runs a resolved plan and builds its run record.
//!
//! Before anything is written, every target is preflighted (read-only): if one would refuse —
//! a database or directory dyno did not create — the run stops there and touches nothing. Then
//! targets run one after another (a store each for `shootout`, an endpoint each for `load`).
//! Every case of the plan is in the record from the start, marked `interrupted` until its last
//! repetition is done, and the record is handed to the sink after every repetition: a run cut off
//! at any moment leaves a true record behind.

use crate::clock::Clock;
use crate::magma::Magma;
use crate::plan::{Plan, PlanTarget};
use crate::recorder::Recorder;
use crate::shootout::{Params, Shootout, Test, TestOutcome};
use results::{Case, DynoInfo, Namespace, RunRecord, SCHEMA, Status};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The sink that receives the record after every repetition.
pub type Sink<'a> = dyn FnMut(&RunRecord) -> Result<(), String> + 'a;

/// One point of the plan: its settings, with a swept parameter (if any) at its value here.
struct Point {
    sweep: Option<results::SweepPoint>,
    objects: u64,
    concurrency: u32,
    size: usize,
    magma: Option<crate::magma::Params>,
    namespace: Option<crate::namespace::Params>,
    load: Option<crate::plan::LoadParams>,
    /// The tests (rows) that run here.
    tests: Vec<&'static str>,
}

/// The plan's points: itself, or each value of each sweep (the other parameters at the plan's).
fn points(plan: &Plan) -> Vec<Point> {
    let base = || Point {
        sweep: None,
        objects: plan.objects,
        concurrency: plan.concurrency,
        size: plan.size,
        magma: plan.magma,
        namespace: plan.namespace,
        load: plan.load.clone(),
        tests: match plan.suite.as_str() {
            "load" => vec!["load"],
            "magma" => results::suites::MAGMA.iter().map(|t| t.name).collect(),
            "namespace" => crate::namespace::TESTS.to_vec(),
            _ => Test::ALL.iter().map(|t| t.name()).collect(),
        },
    };
    if plan.sweeps.is_empty() {
        return vec![base()];
    }
    let mut all = Vec::new();
    for sweep in &plan.sweeps {
        for &v in &sweep.values {
            let mut p = base();
            match sweep.param {
                "objects" => p.objects = v,
                "size" => p.size = v as usize,
                "clients" => {
                    p.concurrency = v as u32;
                    if let Some(l) = &mut p.load {
                        l.connections = v;
                    }
                }
                "thousands" => {
                    if let Some(m) = &mut p.magma {
                        m.thousands = v;
                    }
                }
                "rate" => {
                    if let Some(l) = &mut p.load {
                        l.set_rate(v as f64);
                    }
                }
                _ => {}
            }
            if let Some(n) = &mut p.namespace {
                match sweep.param {
                    "depth" => n.depth = v,
                    "width" => n.width = v,
                    _ => n.clients = v as u32,
                }
                // A sweep of one of the suite's parameters runs the test that parameter sizes.
                p.tests = vec![match sweep.param {
                    "depth" => "depth",
                    "width" => "width",
                    _ => "clients",
                }];
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

/// A suite that runs on an opened store, test by test.
enum StoreSuite<'a> {
    Shootout(Shootout<'a>),
    Magma(Box<Magma<'a>>),
    Folders(crate::namespace::Folders<'a>),
}

impl StoreSuite<'_> {
    fn run_rep(&mut self, rep: u32, report: impl FnMut(TestOutcome)) {
        match self {
            StoreSuite::Shootout(s) => s.run_rep(rep, report),
            StoreSuite::Magma(m) => m.run_rep(rep, report),
            StoreSuite::Folders(f) => f.run_rep(rep, report),
        }
    }
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
    Sink(String),
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
    _started: Vec<crate::process::Started>,
    monitor: Option<crate::monitor::Monitor>,
}

/// The watches a PID or a name stands for now (a name may match several processes).
fn find(
    spec: &crate::plan::ProcessSpec,
    target: Option<String>,
) -> Result<Vec<crate::monitor::Watch>, String> {
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
            None => Err(format!("no process has PID {pid}")),
        },
        ProcessSpec::Name(name) => {
            let pids = crate::monitor::find_by_name(name);
            if pids.is_empty() {
                return Err(format!("no running process is named {name:?}"));
            }
            Ok(pids
                .into_iter()
                .map(|p| watch(p, WatchSource::Name))
                .collect())
        }
        ProcessSpec::Start { .. } => unreachable!("a started process is watched once started"),
    }
}

/// Starts the targets' servers and the monitor; finds processes given by PID or name.
fn watch(plan: &Plan, clock: &Clock, logs: &Path) -> Result<Watched, RunError> {
    use crate::plan::ProcessSpec;
    let mut started = Vec::new();
    let mut watches = Vec::new();
    for t in &plan.targets {
        let refused = |message: String| RunError::Refused {
            name: t.name.clone(),
            url: results::redact_url(&t.url),
            message,
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
                watches.push(crate::monitor::Watch {
                    target: Some(t.name.clone()),
                    pid: s.pid,
                    source: results::WatchSource::Started,
                });
                started.push(s);
            }
            Some(spec) => watches.extend(find(spec, Some(t.name.clone())).map_err(refused)?),
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
        Some(m)
    };
    Ok(Watched {
        _started: started,
        monitor,
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

/// How often a running load repetition reports its progress.
pub const TICK: Duration = Duration::from_millis(200);
/// How often a running load repetition is written into the record (a crash loses at most this).
pub const DEFAULT_CHECKPOINT: Duration = Duration::from_secs(60);

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
    } = hooks;
    let clock = Clock::monotonic();
    let watched = watch(plan, &clock, logs)?;
    // Every record handed on carries the resource series so far.
    let mut with_resources = |r: &RunRecord| match &watched.monitor {
        Some(m) => {
            let mut r = r.clone();
            r.resources = m.series();
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
        interrupted: false,
        environment: crate::env::environment(&paths),
        plan: plan.record(),
        cases: Vec::new(),
        resources: Vec::new(),
    };
    let points = points(plan);
    for point in &points {
        for t in &plan.targets {
            // A load target is reached over the network; a store says where it sits.
            let topology = if plan.suite == "load" {
                "loopback"
            } else {
                t.config.topology()
            };
            for test in &point.tests {
                record.cases.push(Case {
                    target: t.name.clone(),
                    url: results::redact_url(&t.url),
                    suite: plan.suite.clone(),
                    test: test.to_string(),
                    topology: topology.to_string(),
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
                    sweep: point.sweep.clone(),
                });
            }
        }
    }
    sink(&record).map_err(RunError::Sink)?;

    let mut warnings = Vec::new();
    let mut first = 0;
    'points: for point in &points {
        for t in &plan.targets {
            if interrupt.load(Ordering::Relaxed) {
                break 'points;
            }
            let cases = record.cases.len();
            progress(&Progress {
                done: first,
                cases,
                target: &t.name,
                test: point.tests.first().copied().unwrap_or(""),
                rep: 0,
                reps: plan.reps + u32::from(plan.warmup),
                live: None,
            });
            if let Some(why) = crate::plan::na_reason(&plan.suite, t) {
                // A store without the suite's family, in a run with others that have it.
                for c in &mut record.cases[first..first + point.tests.len()] {
                    c.status = Status::Na;
                    c.reason = Some(why.clone());
                }
            } else if plan.suite == "load" {
                let ctx = LoadCtx {
                    interrupt,
                    checkpoint,
                    progress: &mut *progress,
                    done: first,
                };
                load_target(plan, point, t, first, &mut record, sink, ctx)?;
            } else {
                store_target(
                    plan,
                    point,
                    t,
                    first,
                    &mut record,
                    sink,
                    interrupt,
                    &mut warnings,
                )?;
            }
            first += point.tests.len();
            sink(&record).map_err(RunError::Sink)?;
        }
    }

    progress(&Progress {
        done: record.cases.len(),
        cases: record.cases.len(),
        target: "",
        test: "",
        rep: 0,
        reps: 0,
        live: None,
    });
    record.interrupted = interrupt.load(Ordering::Relaxed);
    record.finished = Some(now_utc());
    if let Some(m) = &watched.monitor {
        record.resources = m.stop();
    }
    sink(&record).map_err(RunError::Sink)?;
    Ok(RunOutcome { record, warnings })
}

fn new_acc() -> CaseAcc {
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

/// What the server did between two snapshots of its cumulative figures.
fn server_delta(
    before: &[crate::driver::ServerOp],
    after: &[crate::driver::ServerOp],
) -> Vec<(String, u64, results::Histogram)> {
    after
        .iter()
        .filter_map(|a| {
            let mut h = a.latency.clone();
            let mut count = a.count;
            if let Some(b) = before.iter().find(|b| b.op == a.op) {
                count = count.saturating_sub(b.count);
                h.subtract(&b.latency).ok()?;
            }
            (count > 0).then(|| (a.op.clone(), count, h))
        })
        .collect()
}

/// A store suite's cases (`shootout`, `magma`) on one target, over every repetition.
#[allow(clippy::too_many_arguments)]
fn store_target(
    plan: &Plan,
    point: &Point,
    t: &PlanTarget,
    first: usize,
    record: &mut RunRecord,
    sink: &mut Sink,
    interrupt: &AtomicBool,
    warnings: &mut Vec<String>,
) -> Result<(), RunError> {
    let tests = &point.tests;
    let cases = first..first + tests.len();
    let store = match t.config.open() {
        Ok(s) => s,
        Err(e) => {
            for c in &mut record.cases[cases] {
                c.status = Status::Failed;
                c.reason = Some(format!("could not open the target: {e}"));
            }
            return Ok(());
        }
    };
    let namespace = store.namespace();
    let versions = store.versions();
    for c in &mut record.cases[cases.clone()] {
        c.namespace = namespace.clone();
        c.versions = versions.clone();
    }
    let params = Params {
        objects: point.objects,
        concurrency: point.concurrency,
        size: point.size,
        seed: plan.seed,
    };
    let mut acc: Vec<CaseAcc> = tests.iter().map(|_| new_acc()).collect();
    let mut suite = match (&point.magma, &point.namespace) {
        (Some(m), _) => StoreSuite::Magma(Box::new(Magma::new(
            &*store,
            *m,
            t.config.virtual_time(),
            interrupt,
        ))),
        (None, Some(n)) => StoreSuite::Folders(crate::namespace::Folders::new(
            &*store,
            *n,
            tests.clone(),
            interrupt,
        )),
        (None, None) => StoreSuite::Shootout(Shootout::new(
            &*store,
            params,
            t.config.virtual_time(),
            interrupt,
        )),
    };
    let total = plan.reps + u32::from(plan.warmup);
    // The server's figures are read between tests (outside any timed part).
    let mut server_before = store.server_stats().and_then(Result::ok);
    for r in 0..total {
        let measured = !(plan.warmup && r == 0);
        suite.run_rep(r, |o: TestOutcome| {
            let i = tests
                .iter()
                .position(|t| *t == o.test)
                .expect("a suite test");
            let case = &mut record.cases[first + i];
            let a = &mut acc[i];
            if let Some(before) = &server_before {
                let after = store.server_stats().and_then(Result::ok);
                if let (Some(after), true) = (&after, measured) {
                    for (op, n, h) in server_delta(before, after) {
                        let slot = a
                            .server
                            .entry(op)
                            .or_insert_with(|| (0, results::new_histogram()));
                        slot.0 += n;
                        let _ = slot.1.add(&h);
                    }
                }
                if after.is_some() {
                    server_before = after;
                }
            }
            if o.cache.is_some() {
                case.cache = o.cache;
            }
            match o.status {
                Status::Na => a.na = o.reason,
                Status::Interrupted => a.interrupted = true,
                Status::Failed => a.failed(o.reason, measured),
                _ => {}
            }
            if measured {
                a.recorder.merge(&o.recorder);
                case.reps.extend(o.rep);
            } else {
                case.warmup = o.rep;
            }
        });
        sink(record).map_err(RunError::Sink)?;
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
    }
    drop(suite);
    for (i, a) in acc.into_iter().enumerate() {
        finish_case(&mut record.cases[first + i], a, plan.reps);
    }
    if let Err(e) = store.close() {
        warnings.push(format!("target {}: {e}", t.name));
    }
    Ok(())
}

/// What a load target's run needs from the runner.
struct LoadCtx<'a, 'b> {
    interrupt: &'a AtomicBool,
    checkpoint: Duration,
    progress: &'a mut (dyn FnMut(&Progress) + 'b),
    done: usize,
}

/// The load suite's one case on one target, over every repetition.
fn load_target(
    plan: &Plan,
    point: &Point,
    t: &PlanTarget,
    first: usize,
    record: &mut RunRecord,
    sink: &mut Sink,
    ctx: LoadCtx,
) -> Result<(), RunError> {
    let LoadCtx {
        interrupt,
        checkpoint,
        progress,
        done,
    } = ctx;
    let p = point
        .load
        .as_ref()
        .expect("a resolved load plan has load settings");
    let case_i = first;
    let ep = match t.config.endpoint() {
        Ok(ep) => ep,
        Err(e) => {
            let c = &mut record.cases[case_i];
            c.status = Status::Failed;
            c.reason = Some(format!("could not reach the target: {e}"));
            return Ok(());
        }
    };
    record.cases[case_i].namespace = Namespace {
        location: ep.addr.to_string(),
        created_by_dyno: false,
        temporary: false,
    };
    let mut a = new_acc();
    let total = plan.reps + u32::from(plan.warmup);
    let single = plan.targets.len() == 1 && total == 1;
    for r in 0..total {
        let measured = !(plan.warmup && r == 0);
        let hlog = p.hlog.as_ref().map(|h| match &point.sweep {
            // One log per point of a sweep.
            Some(at) => {
                let name = format!("{}-{}{}", t.name, at.param, at.value);
                crate::load_suite::hlog_path(h, &name, r, false)
            }
            None => crate::load_suite::hlog_path(h, &t.name, r, single),
        });
        let comment = format!(
            "dyno {} load of {} ({})",
            env!("CARGO_PKG_VERSION"),
            t.name,
            results::redact_url(&t.url)
        );
        // The repetition runs on its own thread; this one reports progress and writes
        // checkpoints until it ends (it says so at once, or its sender goes if it panics).
        let live = std::sync::Mutex::new(crate::load::Live::new(p.duration_ns()));
        let (u0, s0) = crate::load::process_cpu_ns();
        let (ended_tx, ended) = std::sync::mpsc::channel::<()>();
        let run = std::thread::scope(|s| -> Result<_, RunError> {
            let handle = s.spawn(|| {
                let ended_tx = ended_tx;
                let run = crate::load_suite::run_rep(
                    &ep,
                    p,
                    plan.seed.wrapping_add(u64::from(r)),
                    interrupt,
                    hlog.as_deref().map(|h| (h, comment.as_str())),
                    &live,
                );
                let _ = ended_tx.send(());
                run
            });
            let mut last_checkpoint = std::time::Instant::now();
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = ended.recv_timeout(TICK) {
                // The collector holds this lock only to add an interval: reading under it
                // (rather than copying a series of up to 10,000 intervals each tick) is cheap.
                let Ok(now) = live.lock() else { continue };
                progress(&Progress {
                    done,
                    cases: record.cases.len(),
                    target: &t.name,
                    test: point.tests.first().copied().unwrap_or(""),
                    rep: r,
                    reps: total,
                    live: Some(&now),
                });
                if last_checkpoint.elapsed() < checkpoint || now.elapsed_ns == 0 {
                    continue;
                }
                last_checkpoint = std::time::Instant::now();
                let (u1, s1) = crate::load::process_cpu_ns();
                let partial = crate::load_suite::partial_rep(&now, p, (u1 - u0, s1 - s0));
                let why = format!(
                    "checkpoint: repetition {} was still running, {:.0} s in, when this record \
                     was written",
                    r + 1,
                    now.elapsed_ns as f64 / 1e9
                );
                drop(now);
                let case = &mut record.cases[case_i];
                let reason = case.reason.replace(why);
                case.reps.push(partial);
                let written = sink(record);
                let case = &mut record.cases[case_i];
                case.reps.pop();
                case.reason = reason;
                written.map_err(RunError::Sink)?;
            }
            Ok(handle
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the load thread panicked"))))
        })?;
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                a.failed(Some(format!("the load could not run: {e}")), measured);
                break;
            }
        };
        let case = &mut record.cases[case_i];
        if run.result.interrupted {
            a.interrupted = true;
        }
        if let Some(l) = &run.rep.load {
            if !l.generator.valid && a.invalid.is_none() {
                a.invalid = l.generator.reason.clone();
            }
            if l.responses == 0 && l.requests > 0 {
                a.failed(
                    Some(format!("no response to any of {} requests", l.requests)),
                    measured,
                );
            }
        }
        if measured {
            a.recorder.merge(&run.result.recorder);
            case.reps.push(run.rep);
        } else {
            case.warmup = Some(run.rep);
        }
        sink(record).map_err(RunError::Sink)?;
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
    }
    finish_case(&mut record.cases[case_i], a, plan.reps);
    Ok(())
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
