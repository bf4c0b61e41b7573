//! The `namespace` suite: how long a storage system takes to create and stat a folder as its
//! tree grows deep or wide, and to create folders for many clients at once (the seed's storage
//! plots).
//!
//! | test | what is timed, per repetition (sample) |
//! |---|---|
//! | `depth` | `mkdir` + `stat` of one new folder `depth` levels below the root |
//! | `width` | `mkdir` + `stat` of one new folder that is entry number `width` of its parent |
//! | `clients` | each of `clients` sessions creates [`COLLECTIONS`] folders, all starting together: each client's total time |
//!
//! The folders above the measured one (a chain for `depth`, `width - 1` siblings for `width`, a
//! folder per client for `clients`) are made before the first repetition, untimed. Each sample's
//! new folders are removed after it, untimed, so every sample measures the same place.

use crate::shootout::run::error_reason;
use engine::clock::Clock;
use engine::driver::{Family, OpError, Session, Store};
use engine::fiber::Barrier;
use engine::plan::setting::shared;
use engine::plan::{Kind, MAX_CLIENTS, Origin, PlanError, PlanTarget, RawPlan, Setting, bounded};
use engine::recorder::Recorder;
use engine::suite::Plan;
use engine::suite::TestOutcome;
use engine::suite::{
    Clients, Common, Param, Point, Repeat, Settings, Suite, TargetError, settings,
};
use report::grid::Doc;
use report::sweep::Figure;
use report::view::{SweepFigure, times};
use results::Named;
use results::{Case, RunRecord};
use results::{Detail, Rep, Status};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

/// Folders each client creates in the `clients` test (the seed's 50 collections).
pub const COLLECTIONS: u64 = 50;
pub const DEFAULT_DEPTH: u64 = 10;
pub const MAX_DEPTH: u64 = 200;
pub const DEFAULT_WIDTH: u64 = 100;
pub const MAX_WIDTH: u64 = 100_000;
pub const DEFAULT_CLIENTS: u32 = 10;

/// The suite's tests, in report order.
pub const TESTS: [&str; 3] = ["depth", "width", "clients"];

pub static DEPTH: Setting = Setting {
    key: "depth",
    short: None,
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "Namespace: the measured folder sits this many levels below the root [default: 10].",
    heading: Some("Namespace suite"),
};

pub static WIDTH: Setting = Setting {
    key: "width",
    short: None,
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "Namespace: the measured folder is entry number WIDTH of its parent [default: 100].",
    heading: Some("Namespace suite"),
};

/// The suite's settings at one point of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub depth: u64,
    pub width: u64,
    pub clients: u32,
    /// Generator threads carrying the clients, where the store allows many per thread, and
    /// their I/O.
    pub generators: engine::fiber::Generators,
}

/// Why the folders the tests stand on could not be made.
#[derive(Debug, Clone, thiserror::Error)]
enum BuildError {
    #[error("{0}")]
    Connect(OpError),
    #[error("mkdir {path}: {source}")]
    Mkdir { path: String, source: OpError },
}

/// The namespace suite on one opened store.
pub struct Folders<'a> {
    store: &'a dyn Store,
    params: Params,
    tests: Vec<&'static str>,
    interrupt: &'a AtomicBool,
    /// Whether the untimed folders are made (`Some(Err)` when making them failed).
    built: Option<Result<(), BuildError>>,
}

/// The path of the folder `levels` deep on the chain the `depth` test builds.
fn chain(levels: u64) -> String {
    (1..=levels)
        .map(|i| format!("d{i}"))
        .collect::<Vec<_>>()
        .join("/")
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

impl<'a> Folders<'a> {
    pub fn new(
        store: &'a dyn Store,
        params: Params,
        tests: Vec<&'static str>,
        interrupt: &'a AtomicBool,
    ) -> Folders<'a> {
        Folders {
            store,
            params,
            tests,
            interrupt,
            built: None,
        }
    }

    /// Makes the folders the tests stand on: the chain above the `depth` folder, the parent and
    /// `width - 1` siblings of the `width` folder, one folder per client.
    fn build(&self) -> Result<(), BuildError> {
        let clock = Clock::monotonic();
        let mut s = self.store.connect(&clock).map_err(BuildError::Connect)?;
        let mut mk = |p: &str| {
            (s.mkdir(p)).map_err(|source| BuildError::Mkdir {
                path: p.to_string(),
                source,
            })
        };
        if self.tests.contains(&"depth") {
            for level in 1..self.params.depth {
                mk(&chain(level))?;
            }
        }
        if self.tests.contains(&"width") {
            mk("w")?;
            for i in 1..self.params.width {
                mk(&format!("w/e{i}"))?;
            }
        }
        if self.tests.contains(&"clients") {
            mk("c")?;
            for i in 0..self.params.clients {
                mk(&format!("c/{i}"))?;
            }
        }
        Ok(())
    }

    pub fn run_rep(&mut self, rep: u32, report: &mut dyn FnMut(TestOutcome)) {
        self.run_rep_restarting(rep, &|| 0, report)
    }

    /// [`Folders::run_rep`], a `restart-clients` fault noted on the test after it. Each test
    /// opens its sessions anew (and closes them) already: a restart has none to drop between
    /// tests.
    pub fn run_rep_restarting(
        &mut self,
        rep: u32,
        epoch: &dyn Fn() -> u64,
        report: &mut dyn FnMut(TestOutcome),
    ) {
        let mut restarts = crate::ClientRestarts::new(epoch);
        if self.built.is_none() {
            self.built = Some(self.build());
        }
        if let Some(Err(why)) = &self.built {
            let why = format!("making the folders the tests stand on failed: {why}");
            for t in &self.tests {
                report(TestOutcome::not_run(t, Status::Failed, why.clone()));
            }
            return;
        }
        for &t in &self.tests {
            if self.interrupt.load(Ordering::Relaxed) {
                return;
            }
            let restarted = restarts.due();
            let mut outcome = match t {
                "depth" => self.one_folder(t, &chain(self.params.depth - 1), rep),
                "width" => self.one_folder(t, "w", rep),
                _ => self.clients(rep),
            };
            if restarted {
                crate::ClientRestarts::note(
                    &mut outcome,
                    "its sessions were opened anew, as every test's are",
                );
            }
            report(outcome);
        }
    }

    /// Times `mkdir` + `stat` of a new folder under `parent`, then removes it (untimed).
    fn one_folder(&self, test: &'static str, parent: &str, rep: u32) -> TestOutcome {
        let clock = Clock::monotonic();
        let mut s = match self.store.connect(&clock) {
            Ok(s) => s,
            Err(e) => return TestOutcome::not_run(test, Status::Failed, e.to_string()),
        };
        let path = join(parent, &format!("s{rep}"));
        let t0 = clock.now_ns();
        let made = s.mkdir(&path);
        let t1 = clock.now_ns();
        let found = made.is_ok().then(|| s.stat(&path));
        let t2 = clock.now_ns();
        let cleanup = if made.is_ok() { s.rmdir(&path) } else { Ok(()) };
        let mut rec = Recorder::new();
        rec.record(t1 - t0, made.map(|_| 0));
        if let Some(found) = found {
            rec.record(t2 - t1, found.map(|_| 0));
        }
        let wall = t2 - t0;
        outcome(test, rec, 1, vec![wall], wall, cleanup)
    }

    /// Every client creates [`COLLECTIONS`] folders in its own folder, all starting together.
    fn clients(&self, rep: u32) -> TestOutcome {
        let n = self.params.clients;
        let mut sessions: Vec<(Clock, Box<dyn Session>)> = Vec::new();
        for _ in 0..n {
            let clock = Clock::monotonic();
            match self.store.connect(&clock) {
                Ok(s) => sessions.push((clock, s)),
                Err(e) => return TestOutcome::not_run("clients", Status::Failed, e.to_string()),
            }
        }
        let start = Barrier::new(n as usize);
        let threads = super::generator_threads(self.store, self.params.generators, sessions.len());
        let jobs = {
            sessions
                .iter_mut()
                .enumerate()
                .map(|(i, (clock, s))| -> engine::fiber::Job<'_, (Recorder, u64, Result<(), OpError>)> {
                    let start = &start;
                    Box::new(move || {
                        let paths: Vec<String> = (0..COLLECTIONS)
                            .map(|k| format!("c/{i}/r{rep}-{k}"))
                            .collect();
                        let mut rec = Recorder::new();
                        start.wait();
                        let t0 = clock.now_ns();
                        let mut last = t0;
                        for p in &paths {
                            let r = s.mkdir(p);
                            let now = clock.now_ns();
                            rec.record(now - last, r.map(|_| 0));
                            last = now;
                        }
                        let total = last - t0;
                        // Untimed: each sample starts from the same empty folder.
                        let cleanup = paths
                            .iter()
                            .map(|p| s.rmdir(p))
                            .find(|r| r.is_err())
                            .unwrap_or(Ok(()));
                        (rec, total, cleanup)
                    })
                })
                .collect()
        };
        let results: Vec<(Recorder, u64, Result<(), OpError>)> =
            engine::fiber::join_all(threads, jobs)
                .into_iter()
                .map(|h| {
                    h.unwrap_or_else(|p| {
                        let why = crate::shootout::run::panic_message(&p).to_string();
                        (
                            Recorder::new(),
                            0,
                            Err(OpError::new(engine::driver::ErrorClass::Io, why)),
                        )
                    })
                })
                .collect();
        let mut rec = Recorder::new();
        let mut times = Vec::new();
        let mut cleanup = Ok(());
        for (r, t, c) in results {
            rec.merge(&r);
            times.push(t);
            if cleanup.is_ok() {
                cleanup = c;
            }
        }
        let wall = times.iter().copied().max().unwrap_or(0);
        outcome(
            "clients",
            rec,
            COLLECTIONS * u64::from(n),
            times,
            wall,
            cleanup,
        )
    }
}

/// A test's outcome from what it recorded.
fn outcome(
    test: &'static str,
    rec: Recorder,
    objects: u64,
    client_ns: Vec<u64>,
    wall_ns: u64,
    cleanup: Result<(), OpError>,
) -> TestOutcome {
    let errors = rec.error_count();
    let (status, reason) = if errors > 0 {
        (Status::Failed, Some(error_reason(&rec, rec.ops)))
    } else if let Err(e) = cleanup {
        (
            Status::Failed,
            Some(format!("removing the sample's folders failed: {e}")),
        )
    } else {
        (Status::Ok, None)
    };
    let rep = Rep {
        ops: objects,
        clients: client_ns.len() as u32,
        wall_ns,
        client_ns,
        ops_per_s: results::stats::per_s(objects as f64, wall_ns),
        errors,
        latency_ns: results::stats::latency_summary(&rec.latency),
        by_op: [("mkdir".to_string(), rec.figures())].into(),
        detail: Detail::None,
    };
    TestOutcome::ran(test, (status, reason), rep, rec)
}

impl crate::StoreRun for Folders<'_> {
    fn run_rep(&mut self, ctx: &engine::suite::RepCtx, report: &mut dyn FnMut(TestOutcome)) {
        let epoch = || ctx.clients.load(Ordering::Relaxed);
        self.run_rep_restarting(ctx.rep, &epoch, report)
    }
}

/// The suite.
pub struct Namespace;

impl Settings for Params {
    fn record(&self, plan: &mut results::PlanRecord) {
        plan.namespace = Some(results::NamespacePlanRecord {
            depth: self.depth,
            width: self.width,
            collections: COLLECTIONS,
        });
    }
}

/// Each client's time, in seconds, over every sample.
fn client_times(c: &Case) -> Vec<f64> {
    (c.reps.iter())
        .flat_map(|r| r.client_ns.iter().map(|&t| t as f64 / 1e9))
        .collect()
}

/// The slowest client's time per folder, in seconds.
fn per_folder(c: &Case) -> Vec<f64> {
    (c.reps.iter())
        .map(|r| {
            let per_client = r.ops as f64 / f64::from(r.clients.max(1));
            r.wall_ns as f64 / 1e9 / per_client.max(1.0)
        })
        .collect()
}

impl results::Named for Namespace {
    fn name(&self) -> &'static str {
        "namespace"
    }
}

impl report::View for Namespace {
    fn table(&self, r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
        report::sweep::render(r, self, doc)
    }

    fn sweep_figures(&self, test: &str) -> Vec<SweepFigure> {
        if test != "clients" {
            return vec![SweepFigure {
                suffix: "",
                what: "time to create and stat a folder",
                figure: Figure::Time,
                values: times,
            }];
        }
        vec![
            SweepFigure {
                suffix: "",
                what: "time for a client to create 50 folders (min / mean / max over clients)",
                figure: Figure::Time,
                values: client_times,
            },
            SweepFigure {
                suffix: "-per-folder",
                what: "time per folder: the slowest client's time / 50",
                figure: Figure::Time,
                values: per_folder,
            },
        ]
    }

    fn own_sweep(&self, r: &RunRecord, test: &str) -> Option<u64> {
        let n = r.plan.namespace.as_ref()?;
        Some(match test {
            "depth" => n.depth,
            "width" => n.width,
            _ => u64::from(r.plan.concurrency),
        })
    }

    fn settings_line(&self, r: &RunRecord) -> Option<String> {
        let n = r.plan.namespace.as_ref()?;
        Some(format!(
            "depth {}, width {}, {} clients × {} folders",
            n.depth, n.width, r.plan.concurrency, n.collections
        ))
    }
}

/// What the suite reads.
static SETTINGS: &[&Setting] = &[&DEPTH, &WIDTH, &shared::CLIENTS, &shared::TOPOLOGY];

impl Suite for Namespace {
    fn help(&self) -> &'static str {
        "folder trees: create and stat a folder deep or wide in the tree, and many clients at once"
    }

    fn family(&self) -> Family {
        Family::Namespace
    }

    fn settings(&self) -> &'static [&'static Setting] {
        SETTINGS
    }

    fn refuse(&self, setting: &str, owner: &dyn Suite, at: &Origin) -> Option<PlanError> {
        Some(
            PlanError::new(
                at.clone(),
                format!(
                    "{setting} is a setting of the {} suite, and this run is {}",
                    owner.name(),
                    self.name()
                ),
            )
            .hint("size the namespace suite with --depth, --width and -c (clients)"),
        )
        .filter(|_| ["objects", "size"].contains(&setting))
    }

    fn targets_hint(&self) -> &'static str {
        "the namespace suite runs on fs: and dyno:// (and host:) targets"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: DEFAULT_CLIENTS,
            max: MAX_CLIENTS,
            why: "each client is an OS thread",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![
            Param {
                name: "depth",
                min: 1,
                max: MAX_DEPTH,
            },
            Param {
                name: "width",
                min: 1,
                max: MAX_WIDTH,
            },
            Param::CLIENTS,
        ]
    }

    fn resolve(&self, raw: &RawPlan, c: &Common) -> Result<Box<dyn Settings>, PlanError> {
        Ok(Box::new(Params {
            depth: bounded(
                raw.settings.int(&DEPTH),
                "depth",
                DEFAULT_DEPTH,
                1,
                MAX_DEPTH,
                "a folder path is at most 2048 bytes",
            )?,
            width: bounded(
                raw.settings.int(&WIDTH),
                "width",
                DEFAULT_WIDTH,
                1,
                MAX_WIDTH,
                "the width test makes width - 1 folders first",
            )?,
            clients: c.clients,
            generators: engine::fiber::Generators::from(1),
        }))
    }

    fn tests(&self, _: &Plan, point: &Point) -> Vec<&'static str> {
        // A sweep of one of the suite's parameters runs the test that parameter sizes.
        match &point.sweep {
            Some(s) => TESTS.iter().copied().filter(|t| *t == s.param).collect(),
            None => TESTS.to_vec(),
        }
    }

    fn run(
        &self,
        plan: &Plan,
        point: &Point,
        target: &PlanTarget,
        interrupt: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        let mut params = *settings::<Params>(plan);
        params.depth = point.swept("depth").unwrap_or(params.depth);
        params.width = point.swept("width").unwrap_or(params.width);
        params.clients = point.clients;
        params.generators = plan.generators();
        let tests = self.tests(plan, point);
        super::on_store(target, interrupt, run, &|store, interrupt| {
            Box::new(Folders::new(store, params, tests.clone(), interrupt))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_names_each_level() {
        assert_eq!(chain(0), "");
        assert_eq!(chain(3), "d1/d2/d3");
        assert_eq!(join("", "s0"), "s0");
        assert_eq!(join(&chain(2), "s1"), "d1/d2/s1");
    }
}
