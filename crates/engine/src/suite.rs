//! What a suite is: the one trait every suite implements, and what the runner offers it.
//!
//! A suite is a type implementing [`Suite`] (and, in the `suites` crate, `report::View`: how
//! its record reads), named once through [`results::Named`]. It
//! owns its name and help, the operation family it needs, the plan settings it reads and their
//! resolution into its [`Settings`], its tests at each point of the plan, and how it runs on one
//! target: it opens what it needs and hands the runner one closure per repetition through
//! [`Repeat`]. The runner owns everything else — the cases of the record, warm-up and measured
//! repetitions, interruption, progress, checkpoints and the sink — once, for every suite.
//!
//! A trait rather than an enum: a suite is added (in a test, or in a build with more suites)
//! without editing a list of variants, and the runner, the plan and the renderers reach a suite
//! only through these methods. The registry is the `suites` crate's.

use crate::driver::Family;
use crate::plan::{Catalogue, PlanError, PlanTarget, RawPlan, Setting, Sp, Sweep};
use crate::recorder::Recorder;
use results::{Namespace, Rep, Status, SweepPoint};
use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64};

/// One sweepable parameter: its name (as `--sweep NAME=…` writes it) and bounds.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub min: u64,
    pub max: u64,
}

impl Param {
    /// `clients`, 1 to [`crate::plan::MAX_CLIENTS`]: what most suites sweep.
    pub const CLIENTS: Param = Param {
        name: "clients",
        min: 1,
        max: crate::plan::MAX_CLIENTS as u64,
    };
    /// An open loop's rate in all, per second: what a capacity search raises (`--find-max`).
    pub const RATE: Param = Param {
        name: "rate",
        min: 1,
        max: 10_000_000,
    };
}

/// The bounds of `-c` in a suite: its default, its most, and why.
#[derive(Debug, Clone, Copy)]
pub struct Clients {
    pub default: u32,
    pub max: u32,
    pub why: &'static str,
}

/// The settings every suite shares, resolved before the suite's own.
#[derive(Debug, Clone)]
pub struct Common<'a> {
    pub objects: u64,
    pub clients: u32,
    pub size: usize,
    pub seed: u64,
    pub quick: bool,
    pub sweeps: &'a [Sweep],
    /// The generator threads' I/O, as asked (`io`).
    pub io: crate::ring::Io,
}

/// A suite's own resolved settings. Each suite reads its own back with [`settings`].
pub trait Settings: fmt::Debug + Send + Sync + Any {
    /// Writes the suite's part of the plan record (its section).
    fn record(&self, plan: &mut results::PlanRecord) {
        let _ = plan;
    }
    /// How long one repetition offers load, when a duration decides it.
    fn rep_duration_ns(&self) -> Option<u64> {
        None
    }
    /// A long run streams what it can into the results directory `dir` unless told where.
    fn stream_into(&mut self, dir: &Path) {
        let _ = dir;
    }
}

/// The settings of a suite with none of its own.
#[derive(Debug)]
pub struct NoSettings;

impl Settings for NoSettings {}

/// `plan`'s settings as the suite `S` made them. Panics if another suite's are there: a suite
/// only ever reads back what its own `resolve` returned.
pub fn settings<S: Settings>(plan: &Plan) -> &S {
    (plan.settings_of::<S>()).expect("a plan carries the settings its suite resolved")
}

/// A resolved plan: every value checked and defaulted.
#[derive(Debug)]
pub struct Plan {
    /// The plan file's path, or `command line`.
    pub source: String,
    pub suite: &'static dyn Suite,
    /// The suite's own settings (see [`crate::suite::settings`]).
    pub settings: Box<dyn Settings>,
    pub objects: u64,
    pub clients: u32,
    /// The generator threads that carry a store suite's clients (many clients per thread where
    /// the target's sessions allow it: [`crate::driver::Store::many_per_thread`]), and whether
    /// their sockets go through io_uring.
    pub threads: usize,
    pub io: crate::ring::Io,
    /// The backend a store suite's clients run on (from `io`), and why.
    pub clients_io: crate::ring::IoUsed,
    /// How long a generator thread on epoll naps before it waits ([`crate::fiber::Generators::nap`]).
    pub nap: std::time::Duration,
    pub size: usize,
    pub reps: u32,
    pub warmup: bool,
    pub seed: u64,
    pub targets: Vec<PlanTarget>,
    pub out: Option<PathBuf>,
    /// The output format as written; the renderers (not the engine) know the names.
    pub format: Option<Sp<String>>,
    /// Each sweep varies one parameter over its values, the others at the plan's.
    pub sweeps: Vec<Sweep>,
    /// What the run does to its targets' processes.
    pub faults: Vec<crate::fault::Fault>,
    /// A run of levels (`levels = [...]`): each level runs its targets with its own faults, on
    /// processes started afresh; empty otherwise.
    pub levels: Vec<crate::fault::Level>,
    /// The run's pass/fail criteria, checked when it ends.
    pub thresholds: Vec<results::thresholds::Threshold>,
    /// A capacity search's objectives (`--find-max`): the points are its steps, each a rate
    /// the search chose; empty otherwise.
    pub find_max: Vec<results::thresholds::Threshold>,
    /// The run relative thresholds (`p99 < baseline * 1.05`) are held to: where it was named,
    /// and its record once the command loaded it (the engine reads no results directory).
    pub baseline: Option<(Sp<String>, std::sync::Arc<results::compare::Baseline>)>,
    pub baseline_ref: Option<Sp<String>>,
    /// `abort_on_fail`: check the thresholds on a load case's running intervals from this far
    /// into each repetition, and stop the run at the first broken.
    pub abort_after: Option<std::time::Duration>,
    /// `--check`: each target's history kept and checked when its run ends; `None` otherwise.
    pub check: Option<Check>,
    /// Processes watched for the whole run, whatever the target (`--pid`, `--process-name`).
    pub watch_pids: Vec<u32>,
    pub watch_names: Vec<String>,
    /// This generator's shard (`--shard I/N`) and how it met the others; `None` alone. The
    /// command sets it once the shards met.
    pub shard: Option<results::ShardRecord>,
}

impl Plan {
    /// The threads that carry a store suite's clients, on the backend chosen for them.
    pub fn generators(&self) -> crate::fiber::Generators {
        crate::fiber::Generators {
            threads: self.threads,
            ring: self.clients_io.backend == "io_uring",
            nap: self.nap,
        }
    }

    /// The suite's settings, when they are an `S` (a suite reads its own with
    /// [`crate::suite::settings`]).
    pub fn settings_of<S: Settings>(&self) -> Option<&S> {
        let any: &dyn std::any::Any = self.settings.as_ref();
        any.downcast_ref::<S>()
    }

    /// The plan as the run record stores it.
    pub fn record(&self) -> results::PlanRecord {
        let mut r = results::PlanRecord {
            source: self.source.clone(),
            suite: self.suite.name().to_string(),
            objects: self.objects,
            concurrency: self.clients,
            threads: (self.suite.family() != crate::driver::Family::Request)
                .then_some(self.threads as u32),
            io: (self.suite.family() != crate::driver::Family::Request).then(|| {
                results::IoRecord {
                    backend: self.clients_io.backend.to_string(),
                    reason: self.clients_io.reason.clone(),
                    nap_ns: (!self.nap.is_zero()).then_some(self.nap.as_nanos() as u64),
                }
            }),
            size_bytes: self.size as u64,
            reps: self.reps,
            warmup: self.warmup,
            seed: self.seed,
            targets: self
                .targets
                .iter()
                .map(|t| results::TargetRecord {
                    name: t.name.clone(),
                    url: results::redact_url(&t.url),
                    options: t.config.options(),
                    durability: t.config.durability(),
                    process: t.process.as_ref().map(|p| p.to_string()),
                })
                .collect(),
            watch: self
                .watch_pids
                .iter()
                .map(|p| format!("pid {p}"))
                .chain(
                    self.watch_names
                        .iter()
                        .map(|n| format!("processes named {n}")),
                )
                .collect(),
            load: None,
            magma: None,
            namespace: None,
            sweeps: self
                .sweeps
                .iter()
                .map(|s| results::SweepRecord {
                    param: s.param.to_string(),
                    values: s.values.clone(),
                })
                .collect(),
            faults: self.faults.iter().map(|f| f.to_string()).collect(),
            levels: (self.levels.iter())
                .map(|l| results::LevelRecord {
                    name: l.name.to_string(),
                    targets: l
                        .targets
                        .iter()
                        .map(|&i| self.targets[i].name.clone())
                        .collect(),
                    faults: l.faults.iter().map(|f| f.to_string()).collect(),
                })
                .collect(),
            kv: None,
            ycsb: None,
            custom: Default::default(),
            thresholds: self.thresholds.iter().map(|t| t.text.clone()).collect(),
            abort_after_ns: self.abort_after.map(|d| d.as_nanos() as u64),
            check: self.check.as_ref().map(|c| results::CheckPlanRecord {
                model: c.model.to_string(),
                budget_ns: c.budget.as_nanos() as u64,
            }),
            shard: self.shard.clone(),
            merged: Vec::new(),
        };
        self.settings.record(&mut r);
        r
    }
}

/// What `--check` asks: the model a target's history is checked against, the most time spent
/// on one key, and where the histories are written (the results directory, once claimed).
#[derive(Debug, Clone)]
pub struct Check {
    pub model: &'static str,
    pub budget: std::time::Duration,
    pub dir: Option<std::path::PathBuf>,
}

/// One point of the plan: the sweep's value here (if any) and the shared settings at it.
#[derive(Debug, Clone)]
pub struct Point {
    pub sweep: Option<SweepPoint>,
    pub objects: u64,
    pub clients: u32,
    pub size: usize,
}

impl Point {
    /// The swept value of `param` here, if this point sweeps it.
    pub fn swept(&self, param: &str) -> Option<u64> {
        self.sweep
            .as_ref()
            .filter(|s| s.param == param)
            .map(|s| s.value)
    }
}

/// What one test of one repetition produced.
#[derive(Debug, Clone)]
pub struct TestOutcome {
    /// The test's name.
    pub test: &'static str,
    pub status: Status,
    pub reason: Option<String>,
    /// How the cache state was reached (cold), or `None`.
    pub cache: Option<String>,
    /// The figures; `None` when the test did not run (n/a, or no client could start).
    pub rep: Option<Rep>,
    /// All clients' operations merged.
    pub recorder: Recorder,
    /// What the server measured of itself during the test, by operation (count, latency).
    pub server: Vec<(String, u64, results::Histogram)>,
}

impl TestOutcome {
    /// A test that ran: its status, the reason when not `ok`, its figures and operations.
    pub fn ran(
        test: &'static str,
        (status, reason): (Status, Option<String>),
        rep: Rep,
        recorder: Recorder,
    ) -> TestOutcome {
        TestOutcome {
            test,
            status,
            reason,
            cache: None,
            rep: Some(rep),
            recorder,
            server: Vec::new(),
        }
    }

    /// A test that did not run, and why.
    pub fn not_run(test: &'static str, status: Status, reason: String) -> TestOutcome {
        TestOutcome {
            test,
            status,
            reason: Some(reason),
            cache: None,
            rep: None,
            recorder: Recorder::new(),
            server: Vec::new(),
        }
    }
}

/// What a repetition is told.
pub struct RepCtx<'a> {
    /// 0 for the warm-up when there is one.
    pub rep: u32,
    pub measured: bool,
    /// Set by Ctrl-C: stop after the current operation.
    pub interrupt: &'a AtomicBool,
    /// Where the repetition's figures so far go, for progress and checkpoints (when the suite
    /// gave one to [`Repeat::repeat`]).
    pub live: Option<&'a Mutex<crate::load::Live>>,
    /// The run's clock: the clock of its faults and resource series.
    pub clock: &'a crate::clock::Clock,
    /// Bumped when the suite's clients must drop their connections and open new ones (a
    /// `restart-clients` fault).
    pub clients: &'a Arc<AtomicU64>,
    /// The generator threads the plan gives the clients, and their I/O ([`Plan::generators`]).
    pub generators: crate::fiber::Generators,
    /// A shard's repetition: the instant every shard agreed to start it, on rank 0's clock
    /// (ns since the Unix epoch), and the same instant on this machine's clock, a moment
    /// ahead: the suite prepares, then starts measuring then. `None` alone.
    pub start_unix_ns: Option<u64>,
    pub start_at: Option<std::time::SystemTime>,
    /// The shard's meeting with the others, where the repetition meets them again between its
    /// phases ([`RepCtx::meet`]).
    pub rendezvous: Option<&'a crate::shard::Rendezvous>,
    faults: &'a dyn StageFaults,
    report: &'a (dyn Fn(TestOutcome) + Sync),
}

/// The faults of the stage a repetition runs in, as its suite steers them.
pub trait StageFaults: Sync {
    /// The final heal, before a check that needs the system whole (the kv suite's lost-writes
    /// read-back): no fault after it; returns once every paused process is continued and every
    /// killed one started again.
    fn heal(&self);
    /// A test begins: a level's schedule starts over from now, so that each test of a level
    /// sees the whole disturbance on its own clock (as NorduGrid's get and set each saw a
    /// restart every 60 s); returns once any fault under way has ended. A plan's own
    /// `[[faults]]` keep the run's clock: nothing happens.
    fn test_starts(&self);
}

/// No faults at all.
impl StageFaults for () {
    fn heal(&self) {}
    fn test_starts(&self) {}
}

impl<'a> RepCtx<'a> {
    pub(crate) fn new(
        (rep, measured): (u32, bool),
        interrupt: &'a AtomicBool,
        live: Option<&'a Mutex<crate::load::Live>>,
        (clock, clients, faults): (
            &'a crate::clock::Clock,
            &'a Arc<AtomicU64>,
            &'a dyn StageFaults,
        ),
        report: &'a (dyn Fn(TestOutcome) + Sync),
    ) -> RepCtx<'a> {
        RepCtx {
            rep,
            measured,
            interrupt,
            live,
            clock,
            clients,
            generators: crate::fiber::Generators::from(1),
            start_unix_ns: None,
            start_at: None,
            rendezvous: None,
            faults,
            report,
        }
    }

    /// See [`StageFaults::heal`].
    pub fn heal(&self) {
        self.faults.heal()
    }

    /// A shard waits here until every shard arrives, then all go on at one instant (every
    /// shard has loaded before any runs a workload); alone, returns at once.
    pub fn meet(&self) -> Result<(), String> {
        self.rendezvous
            .map_or(Ok(()), |r| r.meet().map_err(|e| e.to_string()))
    }

    /// See [`StageFaults::test_starts`].
    pub fn test_starts(&self) {
        self.faults.test_starts()
    }

    /// Hands a test's outcome to the runner (the case is updated and the record sunk).
    pub fn report(&self, outcome: TestOutcome) {
        (self.report)(outcome)
    }
}

/// Builds a checkpoint of a repetition still running from its figures so far and dyno's CPU
/// (user, system) since it started: a record's repetition marked partial.
pub type Partial<'a> = dyn Fn(&crate::load::Live, (u64, u64)) -> Rep + Sync + 'a;

/// What happens after a repetition.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    /// Go on to the next one.
    Next,
    /// Stop repeating: the case failed for this reason.
    Fail(String),
}

/// What the runner offers a suite on one target: the cases' description, and the one loop of
/// repetitions.
pub trait Repeat {
    /// Where the data lives and which software versions answer, for every case of the target.
    fn describe(&mut self, namespace: Namespace, versions: BTreeMap<String, String>);
    /// Runs the warm-up (if any) and every measured repetition, each on a thread of its own
    /// while the runner shows progress and writes checkpoints; stops early when interrupted or
    /// when `rep` says so.
    fn repeat(
        &mut self,
        live: Option<&Mutex<crate::load::Live>>,
        partial: Option<&Partial>,
        rep: &mut (dyn FnMut(&RepCtx) -> After + Send),
    );
    /// A problem that did not stop the run.
    fn warn(&mut self, warning: String);
    /// Where the target's history is written (`--check`, in the results directory): a file of
    /// its own per target, point and level.
    fn history_file(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// The verdict of `--check` over the target's history: set on each of its cases.
    fn consistency(&mut self, verdict: results::ConsistencyRecord);
    /// A shard's meeting with the others (`--shard I/N --rendezvous …`), for a suite that
    /// shares a namespace or meets between its phases; `None` alone.
    fn rendezvous(&self) -> Option<&crate::shard::Rendezvous> {
        None
    }
}

/// Why a suite could not run on a target at all: every case of the target at that point fails
/// with it.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("could not open the target: {0}")]
    Open(crate::driver::DriverError),
    #[error("could not reach the target: {0}")]
    Reach(crate::driver::DriverError),
    #[error("this shard's part of the plan: {0}")]
    Plan(String),
    #[error("the shards could not meet: {0}")]
    Meet(String),
}

/// A suite: see the module's documentation.
pub trait Suite: results::Named + Sync {
    /// One line for `--help` and `dyno targets`.
    fn help(&self) -> &'static str;
    /// Whether `--suite NAME` names this suite: its name, or a form of it it reads itself in
    /// [`Suite::resolve`] (`ycsb-a,ycsb-c`).
    fn answers_to(&self, name: &str) -> bool {
        name == self.name()
    }
    /// The operations a target needs for this suite.
    fn family(&self) -> Family;
    /// The settings this suite reads (those several suites read among them, from
    /// [`crate::plan::setting::shared`]): its flags, its plan-file keys, what `--help` says.
    fn settings(&self) -> &'static [&'static Setting];
    /// How a setting of this suite given in a run of another should be fixed.
    fn owner_hint(&self) -> String {
        format!("add --suite {}", self.name())
    }
    /// The error for `setting` (a setting of `owner`) given in a run of this suite, when it
    /// should say more than that.
    fn refuse(
        &self,
        setting: &str,
        owner: &dyn Suite,
        at: &crate::plan::Origin,
    ) -> Option<PlanError> {
        let _ = (setting, owner, at);
        None
    }
    /// The hint when a target cannot run this suite.
    fn targets_hint(&self) -> &'static str;
    /// `-c`: what it means here and its bounds.
    fn clients(&self) -> Clients;
    /// The parameters `--sweep` may vary, with their bounds (`clients` up to `clients().max`).
    fn sweepable(&self) -> Vec<Param>;
    /// Repetitions when none are asked for.
    fn default_reps(&self, quick: bool) -> u32 {
        if quick {
            crate::plan::QUICK_REPS
        } else {
            crate::plan::DEFAULT_REPS
        }
    }
    /// Whether an unmeasured warm-up repetition runs first unless told.
    fn default_warmup(&self) -> bool {
        true
    }
    /// The consistency models `--check` may ask of it (it keeps a history of its operations
    /// and hands each target's verdict to [`Repeat::consistency`]); none by default.
    fn checks(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether `--shard` may split this suite's run over several generators (each suite that can
    /// says how its [`Suite::run`] takes its part, and its views how the parts merge).
    fn shardable(&self) -> bool {
        false
    }
    /// What `shard` of a sharded run of this suite needs beyond what every sharded run needs
    /// (`meet`: the shards meet at a rendezvous): the fix when `plan` lacks it.
    fn shard_rule(
        &self,
        plan: &Plan,
        shard: crate::shard::Shard,
        meet: bool,
    ) -> Result<(), String> {
        let _ = (plan, shard, meet);
        Ok(())
    }
    /// `dyno merge`: the shards' figures of one repetition of one of this suite's cases as one
    /// (`results::merge::MergeDetail`: the common figures are added already).
    fn merge_detail(&self, parts: &results::merge::Parts) -> results::merge::Merged {
        let _ = parts;
        results::merge::refuse(format!(
            "merge adds up the records of the suites --shard splits; the {} suite's figures are not among them",
            self.name()
        ))
    }
    /// Checks and resolves this suite's settings.
    fn resolve(&self, raw: &RawPlan, common: &Common) -> Result<Box<dyn Settings>, PlanError>;
    /// The tests (rows) at `point`.
    fn tests(&self, plan: &Plan, point: &Point) -> Vec<&'static str>;
    /// Where client and target sit, for the record.
    fn topology(&self, target: &PlanTarget) -> &'static str {
        target.config.topology()
    }
    /// Runs every repetition on `target` at `point` through `run` (stopping early once
    /// `interrupt` is set). An error fails every case of the target at this point with that
    /// reason (it could not be opened or reached).
    fn run(
        &self,
        plan: &Plan,
        point: &Point,
        target: &PlanTarget,
        interrupt: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError>;
}

impl fmt::Debug for dyn Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The settings of every suite of `suites`: what a plan file and the command line may say.
pub fn catalogue(suites: &[&dyn Suite]) -> Catalogue {
    Catalogue {
        suites: suites.iter().map(|s| (s.name(), s.settings())).collect(),
    }
}
