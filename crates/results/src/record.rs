//! The types of a run record. The JSON written to disk is exactly these structures.
//!
//! Durations are integers in nanoseconds (`_ns`), rates are per second (`_per_s`), sizes are bytes
//! (`_bytes`). Every field is documented here and in `schema/dyno.run-2.schema.json`; records of
//! the first schema (`dyno.run/1`) are read through [`crate::migrate`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The value of [`RunRecord::schema`] this crate writes and reads.
pub const SCHEMA: &str = "dyno.run/2";

/// Everything one `dyno run` produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    /// The contract this record follows: always [`SCHEMA`].
    pub schema: String,
    /// Which dyno produced the record.
    pub dyno: DynoInfo,
    /// When the run started, UTC, RFC 3339.
    pub started: String,
    /// When the run ended, UTC, RFC 3339; `null` while it runs or if it was cut off.
    pub finished: Option<String>,
    /// True when the run did not end with every case: stopped by the user (Ctrl-C), or cut off
    /// (a crash, `kill -9`: the record on disk is the last one written while it ran, which
    /// says true until the run ends).
    pub interrupted: bool,
    /// The machine the run happened on.
    pub environment: Environment,
    /// The plan, fully resolved: every default filled in.
    pub plan: PlanRecord,
    /// One entry per cell of the plan (target × test), in the order they ran.
    pub cases: Vec<Case>,
    /// The watched processes (a target's server, `--pid`, `--process-name`): one series each,
    /// sampled over the whole run on the run's clock. Absent when nothing was watched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ProcessSeries>,
    /// The faults done during the run, in order, on the run's clock; absent without faults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<crate::faults::FaultEvent>,
    /// The plan's thresholds, each checked on the cases it scopes when the run ended; absent
    /// without thresholds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::thresholds::ThresholdResult>,
    /// Set when a threshold with `abort_on_fail` broke while a case ran and the run stopped
    /// there; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<crate::thresholds::Aborted>,
}

/// How a watched process was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchSource {
    /// dyno started it from the plan (`[targets.NAME.process] cmd = …`).
    Started,
    /// Given by PID (`--pid`, or `pid =` in the plan).
    Pid,
    /// Found by its name (`--process-name`, or `name =` in the plan).
    Name,
}

/// One watched process and its descendants, sampled once per `interval_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSeries {
    /// The target the process serves (`TARGET/MEMBER` for a member of a cluster); `null` for a
    /// process watched for the whole run.
    pub target: Option<String>,
    /// The process (the latest, when a fault plan started it again: the series follows it).
    pub pid: u32,
    /// The process's name (`/proc/PID/comm`).
    pub command: String,
    pub source: WatchSource,
    /// The time between samples; doubles each time the series is thinned to stay within its cap.
    pub interval_ns: u64,
    /// Samples in time order. At most 4,096: when a longer run fills them, neighbours merge in
    /// pairs (the larger RSS, threads and files, the later counters, the mean CPU) and
    /// `interval_ns` doubles; the first sample stays as taken.
    pub samples: Vec<ResourceSample>,
    /// The figures over the whole series.
    pub summary: ResourceSummary,
}

/// One sample of a process and its descendants.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSample {
    /// Since the run's start, on the clock the cases' times use.
    pub t_ns: u64,
    /// CPU time used since the previous sample over the wall time between them; 100 = one core.
    pub cpu_percent: f64,
    /// Resident memory, summed over the process and its descendants.
    pub rss_bytes: u64,
    pub threads: u64,
    pub open_files: u64,
    /// Bytes passed to read- and write-family system calls since the process started (`rchar`,
    /// `wchar`: files, pipes, and sockets read with read(2), not with recv(2)); `null` where
    /// `/proc/PID/io` cannot be read.
    pub read_bytes: Option<u64>,
    pub written_bytes: Option<u64>,
    /// Bytes the process made the storage layer read and write (`read_bytes`, `write_bytes`;
    /// page-cache hits are not reads), since it started.
    #[serde(default)]
    pub disk_read_bytes: Option<u64>,
    #[serde(default)]
    pub disk_written_bytes: Option<u64>,
    /// Processes counted (the watched one and its live descendants); 0 once it has exited.
    pub processes: u64,
}

/// The figures the report shows for a watched process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSummary {
    pub samples: u64,
    pub peak_rss_bytes: u64,
    pub mean_cpu_percent: f64,
    pub max_threads: u64,
    pub max_open_files: u64,
    /// Bytes read and written during the run (the counters' growth), through system calls and
    /// at the storage layer.
    pub read_bytes: Option<u64>,
    pub written_bytes: Option<u64>,
    #[serde(default)]
    pub disk_read_bytes: Option<u64>,
    #[serde(default)]
    pub disk_written_bytes: Option<u64>,
    /// The RSS trend: a robust slope with its 95% interval and a verdict.
    pub rss_trend: Option<Trend>,
}

/// A robust linear trend (Theil–Sen slope, with Sen's 95% confidence interval).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trend {
    /// The median slope, in units per second.
    pub slope_per_s: f64,
    pub low_per_s: f64,
    pub high_per_s: f64,
    /// `growing`, `shrinking` or `flat`: growing when the whole interval is above zero and the
    /// growth over the run is more than 1% of the median value (and at least 1 MiB for memory).
    pub verdict: String,
}

/// The dyno build that produced a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DynoInfo {
    /// The crate version, e.g. `0.1.0`.
    pub version: String,
    /// The git commit dyno was built from, or `unknown` outside a git checkout.
    pub commit: String,
}

/// The machine a run happened on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// The CPU model name as the kernel reports it.
    pub cpu_model: String,
    /// Logical CPUs available to dyno.
    pub cores: u32,
    /// Physical memory in bytes.
    pub memory_bytes: u64,
    /// The operating system (distribution name and version).
    pub os: String,
    /// The kernel release.
    pub kernel: String,
    /// For each target (by name), the filesystem type of the path it stores data in, or `none`.
    pub filesystems: BTreeMap<String, String>,
}

/// The resolved plan a run followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanRecord {
    /// Where the plan came from: a plan file's path, or `command line`.
    pub source: String,
    /// The suite that ran, e.g. `shootout`.
    pub suite: String,
    /// Objects each client writes and reads per test.
    pub objects: u64,
    /// Concurrent clients per test.
    pub concurrency: u32,
    /// The generator threads that carried the clients of a store suite (many clients per
    /// thread on a target whose sessions allow it); absent for the load suite (its own
    /// `load.threads`) and in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Size of each object in bytes.
    pub size_bytes: u64,
    /// Measured repetitions of each test.
    pub reps: u32,
    /// Whether one unmeasured warm-up repetition ran first.
    pub warmup: bool,
    /// The seed of every pseudo-random choice (object contents).
    pub seed: u64,
    /// The targets, in column order.
    pub targets: Vec<TargetRecord>,
    /// Request/response load settings (the `load` suite); `null` for other suites.
    pub load: Option<LoadPlanRecord>,
    /// The `magma` suite's settings; `null` (or absent) for other suites.
    #[serde(default)]
    pub magma: Option<MagmaPlanRecord>,
    /// The `namespace` suite's settings; absent for other suites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<NamespacePlanRecord>,
    /// The sweeps: each varies one parameter over its values, the others at the plan's; empty
    /// (or absent) without sweeps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweeps: Vec<SweepRecord>,
    /// Processes watched for the whole run (`--pid`, `--process-name`), as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watch: Vec<String>,
    /// The fault plan, one resolved line per fault (`kill target=t every=10s after=1s`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<String>,
    /// A run of levels: each level in the order run, its targets and its faults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelRecord>,
    /// The kv suite's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv: Option<KvPlan>,
    /// The ycsb suite's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ycsb: Option<YcsbPlan>,
    /// The settings of a suite this schema does not describe, under its name, as it recorded
    /// them (as a repetition's `Detail::Custom` holds its figures).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub custom: BTreeMap<String, serde_json::Value>,
    /// The thresholds, as written (`METRIC OP VALUE [scope]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<String>,
    /// With `abort_on_fail`: the thresholds are also checked on a load case's running
    /// intervals from this far into each repetition, and the run stops at the first broken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_after_ns: Option<u64>,
    /// A shard's record (`--shard I/N`): which part of the plan this generator ran, and how it
    /// met the others; absent otherwise. Every other field of the plan is the whole plan's, the
    /// same on every shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// A record made by `dyno merge`: the shards it added up, in rank order; absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<ShardRecord>,
}

/// One shard of a run split over several generators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardRecord {
    /// Its rank (0-based) and how many shards ran.
    pub index: u32,
    pub count: u32,
    /// Where rank 0 listened for the others (`HOST:PORT`); `null` when the shards did not meet
    /// (their starts were not synchronized).
    pub rendezvous: Option<String>,
    /// Its clock less rank 0's, ns (0 on rank 0), measured over the round trip `rtt_ns`: a
    /// bound on how far apart the shards' starts can be.
    pub clock_offset_ns: i64,
    pub rtt_ns: u64,
    /// The machine it ran on.
    pub host: String,
}

/// One level of a run of levels, as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelRecord {
    pub name: String,
    /// The targets run at this level.
    pub targets: Vec<String>,
    /// Its faults, one resolved line each.
    pub faults: Vec<String>,
}

/// The ycsb suite's settings (its record count is `objects`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct YcsbPlan {
    /// The workloads run after the load, in order (`a` … `f`).
    pub workloads: Vec<String>,
    /// Operations per workload (YCSB's `operationcount`).
    pub operations: u64,
    pub field_count: u64,
    pub field_length: u64,
    /// How the zipfian workloads drew keys: `ycsb` or `exact:THETA`.
    pub zipf: String,
    /// YCSB's `-target`: operations per second in all, open loop, latency from each
    /// operation's intended start; absent in a closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
}

/// How the kv suite ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvPlan {
    /// How long each repetition of each test runs.
    pub duration_ns: u64,
}

/// How the `namespace` suite was sized (the values outside a sweep of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespacePlanRecord {
    /// `depth`: the measured folder sits this many levels below the root.
    pub depth: u64,
    /// `width`: the measured folder is this-th entry of its parent.
    pub width: u64,
    /// `clients`: folders each client creates.
    pub collections: u64,
}

/// One sweep of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepRecord {
    pub param: String,
    pub values: Vec<u64>,
}

/// How the `magma` suite was sized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MagmaPlanRecord {
    /// MagmaBenchmarker's `thousands`: elements per array, levels of the deep chain, objects added
    /// to a collection (1000 in the seed).
    pub thousands: u64,
    /// How long each rate test repeats its operation, per repetition.
    pub test_ns: u64,
}

/// How request/response load was offered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadPlanRecord {
    /// `closed` (each connection waits for its response) or `open` (a stated arrival rate).
    pub model: String,
    /// Connections (closed loop), or connections opened up front (open loop).
    pub connections: u64,
    /// Open loop: the most connections opened when every one is busy.
    pub max_connections: u64,
    /// Load threads (event loops).
    pub threads: u64,
    /// How long load is offered; `null` when a request count ends the run.
    pub duration_ns: Option<u64>,
    /// Closed loop: requests per connection (gobench's model); `null` for a duration.
    pub requests_per_connection: Option<u64>,
    /// Open loop: the rate profile, one entry per stage.
    pub stages: Vec<RateStage>,
    /// Open loop: `constant` or `poisson` arrivals.
    pub arrival: Option<String>,
    /// A request with no complete response after this long is a timeout.
    pub timeout_ns: u64,
    /// Length of the time-series intervals.
    pub interval_ns: u64,
    /// Where the HdrHistogram interval log was written, if asked.
    pub hlog: Option<String>,
    /// A soak run's periodic burst (`stages` hold the whole profile it makes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<BurstRecord>,
    /// How often responses could wake a load thread: `auto`, `off`, or a fixed window (`20us`).
    /// While a thread waits out a window its responses wait in the socket, inside their latency.
    #[serde(default = "auto")]
    pub coalesce: String,
    /// Open loop: how late dyno may dispatch at p99 (beyond its pace) before the run is marked
    /// invalid: a share of the corrected latency p99 (`50%`) or a duration (`2ms`).
    #[serde(default = "default_max_lag")]
    pub max_lag: String,
}

fn default_max_lag() -> String {
    "50%".into()
}

fn auto() -> String {
    "auto".into()
}

/// A heavy burst on top of the steady rate: the last `for_ns` of every `every_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstRecord {
    pub every_ns: u64,
    pub for_ns: u64,
    pub rate_per_s: f64,
}

/// One stage of an open-loop rate profile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStage {
    pub duration_ns: u64,
    pub from_per_s: f64,
    pub to_per_s: f64,
}

/// One target of a plan, as resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetRecord {
    /// The column name.
    pub name: String,
    /// The URL, with any password replaced by `***`.
    pub url: String,
    /// Every driver option with its resolved value (defaults included).
    pub options: BTreeMap<String, String>,
    /// The durability class, e.g. `WAL sync=NORMAL`.
    pub durability: String,
    /// The process watched for this target: how it was started or found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
}

/// The outcome class of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every repetition ran and every operation succeeded.
    Ok,
    /// The target cannot reach the state this test needs; `reason` says why.
    Na,
    /// The case ran but did not measure what it should (errors, a failed check); `reason` says what.
    Failed,
    /// The run stopped before this case finished all its repetitions.
    Interrupted,
    /// The figures exist but cannot be trusted: the load generator itself was the bottleneck.
    Invalid,
}

impl Status {
    /// The lowercase word used in the record and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Na => "na",
            Status::Failed => "failed",
            Status::Interrupted => "interrupted",
            Status::Invalid => "invalid",
        }
    }
}

/// Where a target keeps dyno's data, and whether dyno made that place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Namespace {
    /// The file, directory, table or prefix dyno works in.
    pub location: String,
    /// True when dyno created it (in this run or an earlier one, proven by its marker).
    pub created_by_dyno: bool,
    /// True when it was a fresh temporary namespace, deleted after the run.
    pub temporary: bool,
}

/// One cell of the plan: one test on one target, over all repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The target's name (the column).
    pub target: String,
    /// The target's URL, password redacted.
    pub url: String,
    /// The suite, e.g. `shootout`.
    pub suite: String,
    /// The test within the suite, e.g. `cold`.
    pub test: String,
    /// Where client and target sat: `inproc` for embedded targets.
    pub topology: String,
    /// Outcome class.
    pub status: Status,
    /// Why the status is not `ok`; `null` when it is.
    pub reason: Option<String>,
    /// The durability class of the target, e.g. `WAL sync=NORMAL`.
    pub durability: String,
    /// Versions of the target's software, e.g. `{"sqlite": "3.46.0"}`.
    pub versions: BTreeMap<String, String>,
    /// Where the data lived.
    pub namespace: Namespace,
    /// How the cache state this test names was reached and verified; `null` when nothing was done.
    pub cache: Option<String>,
    /// The unmeasured warm-up repetition, when one ran. Excluded from `summary`.
    pub warmup: Option<Rep>,
    /// Every measured repetition, in order.
    pub reps: Vec<Rep>,
    /// Figures over the measured repetitions; `null` when none completed.
    pub summary: Option<Summary>,
    /// Failed operations by error class (e.g. `timeout`), over the measured repetitions.
    pub errors: BTreeMap<String, u64>,
    /// The first message seen for each error class.
    pub error_examples: BTreeMap<String, String>,
    /// The merged latency histogram of all measured repetitions: HdrHistogram V2, deflate, base64.
    pub histogram: Option<String>,
    /// For targets whose server measures itself (`dyno://`): what the server spent on each kind
    /// of operation during this test's measured repetitions; `null` otherwise.
    pub server: Option<BTreeMap<String, ServerOpRecord>>,
    /// In a sweep, the point this case ran at; absent outside sweeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepPoint>,
    /// What each fault of the run did to this case (measured repetitions with a time series).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<crate::faults::FaultEffect>,
    /// In a run of levels (`levels = [...]`), the level this case ran at; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// CPU profiles of the processes dyno started or watched, and of dyno, during this test's
    /// first measured repetition (`--profile DIR`); absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<ProfileRecord>,
}

/// A CPU profile of one process during one test (`--profile DIR`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRecord {
    /// The process: its target's name for it (`web`, `cluster/m1`), its command for one watched
    /// by `--pid`, `dyno` for dyno itself.
    pub process: String,
    pub pid: u32,
    /// `perf` (native code) or `py-spy` (a Python interpreter).
    pub tool: String,
    /// What was sampled: perf's event (`cpu-clock`, the software clock, where the machine has no
    /// hardware cycle counter), or py-spy's rate.
    pub event: String,
    /// Stacks sampled.
    pub samples: u64,
    /// The flame graph (SVG), and the folded stacks it was drawn from: paths relative to the
    /// results directory when inside it, else absolute; `null` when none could be made.
    pub svg: Option<String>,
    pub folded: Option<String>,
    /// What was refused or substituted, in words (the kernel's limits, a tool not installed).
    pub note: Option<String>,
}

/// What names a case across runs: its suite, test, target, topology and sweep point. Two runs'
/// cases with the same identity measured the same thing (what `compare` matches on); within one
/// run, every case has its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CaseId {
    pub suite: String,
    pub test: String,
    pub target: String,
    pub topology: String,
    /// The swept parameter and its value here; `None` outside a sweep.
    pub sweep: Option<(String, u64)>,
    /// The level (`centralized`, `kill-master`, …); `None` outside a run of levels.
    pub level: Option<String>,
}

impl std::fmt::Display for CaseId {
    /// `shootout add on sqlite (inproc)`, `load on http (loopback) at rate=300`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.suite == self.test {
            write!(f, "{}", self.suite)?;
        } else {
            write!(f, "{} {}", self.suite, self.test)?;
        }
        write!(f, " on {} ({})", self.target, self.topology)?;
        if let Some((p, v)) = &self.sweep {
            write!(f, " at {p}={v}")?;
        }
        if let Some(l) = &self.level {
            write!(f, " at level {l}")?;
        }
        Ok(())
    }
}

impl Case {
    /// The case's identity.
    pub fn id(&self) -> CaseId {
        CaseId {
            suite: self.suite.clone(),
            test: self.test.clone(),
            target: self.target.clone(),
            topology: self.topology.clone(),
            sweep: self.sweep.as_ref().map(|p| (p.param.clone(), p.value)),
            level: self.level.clone(),
        }
    }

    /// Whether this is the case of `target` and `test` at `sweep` (`None`: outside any sweep) —
    /// within one run, the suite and the topology follow from the target, so these name it.
    pub fn is(&self, target: &str, test: &str, sweep: Option<(&str, u64)>) -> bool {
        self.target == target
            && self.test == test
            && self.sweep.as_ref().map(|p| (p.param.as_str(), p.value)) == sweep
    }
}

impl RunRecord {
    /// The case named `id`, if this run has it.
    pub fn case(&self, id: &CaseId) -> Option<&Case> {
        self.cases.iter().find(|c| {
            c.is(
                &id.target,
                &id.test,
                id.sweep.as_ref().map(|(p, v)| (p.as_str(), *v)),
            ) && c.suite == id.suite
                && c.topology == id.topology
        })
    }

    /// The tests of the cases `keep` keeps, each once, in the order they ran.
    pub fn tests_where(&self, keep: impl Fn(&Case) -> bool) -> Vec<&str> {
        let mut tests: Vec<&str> = Vec::new();
        for c in self.cases.iter().filter(|c| keep(c)) {
            if !tests.contains(&c.test.as_str()) {
                tests.push(&c.test);
            }
        }
        tests
    }

    /// The case of `target` and `test` outside any sweep.
    pub fn case_of(&self, target: &str, test: &str) -> Option<&Case> {
        self.cases.iter().find(|c| c.is(target, test, None))
    }
}

/// One point of a sweep: the parameter varied and its value here (the others at the plan's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepPoint {
    /// `depth`, `width`, `clients`, `objects`, `size` or `thousands`.
    pub param: String,
    pub value: u64,
}

/// One kind of operation as the server measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerOpRecord {
    /// Operations the server handled.
    pub count: u64,
    /// The server's time per operation (from reading the request to writing the reply).
    pub latency_ns: Option<LatencySummary>,
}

/// One repetition of one test on one target: what every suite measures, then the suite's own
/// figures in `detail`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rep {
    /// Operations completed by all clients together (objects for the store suites, responses
    /// for load).
    pub ops: u64,
    /// Concurrent clients (connections for load).
    pub clients: u32,
    /// Wall time of the slowest client, from the common start to its end.
    pub wall_ns: u64,
    /// Each client's own time, in client order (empty where clients are not timed apart).
    pub client_ns: Vec<u64>,
    /// `ops` / `wall_ns`, per second.
    pub ops_per_s: f64,
    /// Operations that failed.
    pub errors: u64,
    /// Percentiles of this repetition's operations (for load: from the intended start).
    pub latency_ns: Option<LatencySummary>,
    /// The same by kind of operation (`get`, `put`, `request`, …), each with its histogram, so
    /// a mixed workload's kinds are never blended and repetitions can be compared exactly.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_op: BTreeMap<String, OpFigures>,
    /// What only this suite measures.
    pub detail: Detail,
}

/// One kind of operation in one repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpFigures {
    /// Operations of this kind (failed ones included).
    pub count: u64,
    pub errors: u64,
    pub latency_ns: Option<LatencySummary>,
    /// The latency histogram: HdrHistogram V2, deflate, base64.
    pub histogram: Option<String>,
}

/// A suite's own figures of one repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// Nothing beyond the common figures.
    None,
    /// A store suite's transaction and cache figures.
    Store(StoreRep),
    /// Request/response load.
    Load(Box<LoadRep>),
    /// The kv suite's repetition: failures split by whether their outcome is known, the time
    /// series, and the lost-writes check.
    Kv(Box<KvRep>),
    /// A suite this schema does not describe: its name and figures as it wrote them.
    Custom {
        suite: String,
        figures: serde_json::Value,
    },
}

impl Detail {
    /// The load figures, for a load repetition.
    pub fn load(&self) -> Option<&LoadRep> {
        match self {
            Detail::Load(l) => Some(l),
            _ => None,
        }
    }

    /// The store figures, for a store suite's repetition.
    pub fn store(&self) -> Option<&StoreRep> {
        match self {
            Detail::Store(s) => Some(s),
            _ => None,
        }
    }

    /// The kv figures, for a kv repetition.
    pub fn kv(&self) -> Option<&KvRep> {
        match self {
            Detail::Kv(k) => Some(k),
            _ => None,
        }
    }

    /// The time series, and when it began on the run's clock (the clock of the faults), for a
    /// repetition that keeps one.
    pub fn series(&self) -> Option<(&[IntervalRecord], u64)> {
        match self {
            Detail::Load(l) => Some((&l.intervals, l.started_ns?)),
            Detail::Kv(k) => Some((&k.intervals, k.started_ns)),
            _ => None,
        }
    }
}

/// What the kv suite measures of a repetition beyond the common figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvRep {
    /// Operations issued: `ok + definite + indefinite`.
    pub issued: u64,
    pub ok: u64,
    /// Failed operations that certainly did nothing (a read; a write refused before it was sent,
    /// or answered with an error).
    pub definite: u64,
    /// Writes whose outcome is unknown: sent, then the connection broke or no answer came. Not
    /// counted as failed nor as done (Jepsen's `:info`).
    pub indefinite: u64,
    /// Sessions opened again (a `restart-clients` fault, or a client whose session broke).
    pub reconnects: u64,
    /// The time series, one entry per 100 ms interval.
    pub intervals: Vec<IntervalRecord>,
    /// When the repetition's operations began, on the run's clock: its intervals start here.
    pub started_ns: u64,
    /// The `set` test: every acknowledged write read back after the final heal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_writes: Option<LostWrites>,
}

/// The lost-writes check: each key's last acknowledged value, read back after the faults
/// healed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LostWrites {
    /// Keys with an acknowledged write, each read back.
    pub checked: u64,
    /// Keys that were gone.
    pub missing: u64,
    /// Keys holding an older value than the last one acknowledged.
    pub stale: u64,
    /// Keys that could not be read back (the store did not answer in time): unknown.
    pub unread: u64,
    /// A few of the lost keys: `key: acknowledged write N, found M` (at most 10).
    pub examples: Vec<String>,
}

impl Rep {
    /// The load figures, for a load repetition.
    pub fn load(&self) -> Option<&LoadRep> {
        self.detail.load()
    }
}

/// What a store suite measures of a repetition beyond the common figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreRep {
    /// The slowest client's time in begin + commit.
    pub commit_ns: u64,
    /// Reads that reached the storage below dyno's client object cache.
    pub storage_reads: u64,
    /// dyno's own CPU (user + system, every thread) while the test ran: what the clients cost
    /// the generator, the figure to weigh against a native benchmark's (absent in records from
    /// before it was kept, and where not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_ns: Option<u64>,
}

/// What one repetition of request/response load measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadRep {
    /// Requests started.
    pub requests: u64,
    /// Complete responses of any status.
    pub responses: u64,
    /// Successful responses (HTTP 2xx; any complete frame for tcp).
    pub ok: u64,
    /// Complete responses reporting failure (HTTP non-2xx).
    pub non_2xx: u64,
    /// Requests with no complete response: refused, reset, timeout, broken response.
    pub network_failed: u64,
    /// Requests that were due but never sent (open loop: queue full, or the run ended first).
    pub unsent: u64,
    /// Requests that got no response at all: `network_failed` + `unsent`.
    pub dropped: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Responses per second over the run.
    pub responses_per_s: f64,
    pub read_bytes_per_s: f64,
    pub write_bytes_per_s: f64,
    /// Connections established.
    pub connects: u64,
    /// Connections established per second, over the run and in the busiest interval.
    pub connects_per_s: f64,
    pub connects_peak_per_s: f64,
    /// Requests outstanding (in flight or queued): time-weighted mean, and maximum (an upper
    /// bound: the sum of each load thread's own maximum).
    pub outstanding_mean: f64,
    pub outstanding_max: u64,
    /// Share of responses (0..1) whose latency was within 100 ms, 500 ms, 1 s, 2 s, 5 s, 8 s, 10 s.
    pub within: Vec<WithinShare>,
    /// Service time: from the actual send to the response (uncorrected; latency_ns is corrected).
    pub service_ns: Option<LatencySummary>,
    /// TLS targets: each connection's handshake, from TCP connected to the handshake done
    /// (count = handshakes); absent in the clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake_ns: Option<LatencySummary>,
    /// How the generator itself did.
    pub generator: GeneratorCheck,
    /// The time series, one entry per interval. At most 10,000: when a longer run fills them,
    /// neighbours merge in pairs (see [`IntervalRecord::merged`]); the `.hlog` keeps every
    /// interval exactly.
    pub intervals: Vec<IntervalRecord>,
    /// When the repetition's load began, on the run's clock (the clock of the faults): its
    /// intervals start from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ns: Option<u64>,
    /// True for a checkpoint of a repetition still running: the figures so far, from the
    /// intervals that ended (no service time, no schedule lag, no error examples yet).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The service times' histogram (HdrHistogram V2, deflate, base64), so that shards' service
    /// times add up exactly; absent in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_histogram: Option<String>,
    /// A shard's repetition: the instant all shards agreed to start it, on rank 0's clock (ns
    /// since the Unix epoch); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_ns: Option<u64>,
    /// A merged repetition: each shard's own self-check, in rank order (the merged `generator`
    /// is valid only if every one is); absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardCheck>,
    /// A merged open-loop repetition: the gaps between consecutive sends of all shards
    /// together, from each shard's first sends (see [`Arrivals`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interarrival: Option<Arrivals>,
    /// A shard's open-loop repetition: its first sends, in ns from the agreed start on rank 0's
    /// clock (at most [`MAX_SENDS_KEPT`]); what `dyno merge` interleaves. Absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sends_ns: Vec<u64>,
}

/// The most send times a shard keeps for the merged inter-arrival check: 20,000 sends (160 KB
/// in memory, about as much in the record) cover two seconds at 10,000 requests/s.
pub const MAX_SENDS_KEPT: usize = 20_000;

/// One shard's self-check in a merged repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardCheck {
    pub index: u32,
    pub generator: GeneratorCheck,
}

/// The merged arrivals of a sharded open loop: how evenly the shards' sends interleave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arrivals {
    /// The span the sends were taken from: from the agreed start to the earliest of the shards'
    /// last kept sends (beyond it some shard's sends are missing).
    pub window_ns: u64,
    /// Sends in the window, all shards together.
    pub sends: u64,
    /// The gap the asked rate makes (1 / rate), ns.
    pub intended_gap_ns: f64,
    /// The gaps between consecutive sends: percentiles, and the histogram (HdrHistogram V2,
    /// deflate, base64).
    pub gap_ns: Option<LatencySummary>,
    pub histogram: Option<String>,
}

/// The share of responses within a latency bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithinShare {
    pub le_ns: u64,
    pub share: f64,
}

/// dyno's self-check: could the generator keep up?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorCheck {
    /// Open loop: the rate the profile asked for; `null` in closed loop.
    pub intended_per_s: Option<f64>,
    /// Requests started per second.
    pub achieved_per_s: f64,
    /// Open loop: how late dyno itself dispatched due requests (not queueing behind the target).
    pub lag_ns: Option<LatencySummary>,
    /// dyno's CPU during the run (all threads).
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    /// CPU per request, user + system, in ns.
    pub cpu_ns_per_request: f64,
    /// The busiest load thread's CPU time over its wall time (0..1).
    pub busiest_thread: f64,
    /// Times the load threads slept and woke again.
    #[serde(default)]
    pub wakeups: u64,
    /// Of those, the sleeps on a thread's own clock for a coalescing window.
    #[serde(default)]
    pub coalesced: u64,
    /// The mean window of those sleeps, ns.
    #[serde(default)]
    pub window_mean_ns: f64,
    /// What one short sleep cost a load thread in CPU, measured as it started (ns): it decides
    /// which waits are spun and when an open loop paces itself.
    #[serde(default)]
    pub sleep_cost_ns: u64,
    /// Open loop: the widest pace a thread sent at (0 if none paced itself). A paced thread
    /// sends every request that fell due since its last wake-up at once, each up to this late by
    /// design; the verdict counts only lateness beyond it.
    #[serde(default)]
    pub pace_ns: u64,
    /// False when the generator was the bottleneck; `reason` says how it was seen.
    pub valid: bool,
    pub reason: Option<String>,
}

/// One interval of the time series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalRecord {
    /// From the start of the repetition.
    pub start_ns: u64,
    pub end_ns: u64,
    pub responses: u64,
    /// Successful responses (HTTP 2xx; any complete frame for tcp).
    #[serde(default)]
    pub ok: u64,
    pub errors: u64,
    pub connects: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl IntervalRecord {
    /// Responses per second over the interval.
    pub fn responses_per_s(&self) -> f64 {
        crate::rate::per_s(self.responses as f64, self.end_ns - self.start_ns)
    }

    /// Two neighbouring intervals as one (for series thinned to stay bounded): their span, the
    /// sums of their counts, and the larger of each percentile (an upper bound; the `.hlog` has
    /// the exact figures).
    pub fn merged(a: &IntervalRecord, _: u64, b: &IntervalRecord, _: u64) -> IntervalRecord {
        IntervalRecord {
            start_ns: a.start_ns,
            end_ns: b.end_ns,
            responses: a.responses + b.responses,
            ok: a.ok + b.ok,
            errors: a.errors + b.errors,
            connects: a.connects + b.connects,
            p50_ns: a.p50_ns.max(b.p50_ns),
            p99_ns: a.p99_ns.max(b.p99_ns),
            max_ns: a.max_ns.max(b.max_ns),
        }
    }
}

/// The summary of a case over its measured repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Spread of the repetitions' rates.
    pub ops_per_s: Spread,
    /// Percentiles of all operations of all measured repetitions (merged histogram). For load:
    /// from each request's intended start (corrected for coordinated omission).
    pub latency_ns: LatencySummary,
    /// Load: service time from the actual send (uncorrected); `null` for other suites.
    pub service_ns: Option<LatencySummary>,
}

/// The spread of a figure over repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spread {
    /// The best repetition (highest rate), as zodbshootout reports.
    pub best: f64,
    /// The median repetition.
    pub median: f64,
    /// The lowest.
    pub min: f64,
    /// The highest.
    pub max: f64,
}

/// Latency percentiles in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySummary {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
    pub mean: f64,
    /// Operations recorded.
    pub count: u64,
}

/// Replaces the password of a URL (`scheme://user:password@host`) with `***`.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_string();
    };
    let userinfo = &authority[..at];
    let Some(colon) = userinfo.find(':') else {
        return url.to_string();
    };
    format!(
        "{}{}:***{}",
        &url[..scheme_end + 3],
        &userinfo[..colon],
        &rest[at..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_and_nothing_else_changes() {
        assert_eq!(
            redact_url("postgres://bob:s3cret@127.0.0.1:5432/db"),
            "postgres://bob:***@127.0.0.1:5432/db"
        );
        assert_eq!(
            redact_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
        assert_eq!(redact_url("sqlite:/tmp/a.db"), "sqlite:/tmp/a.db");
        assert_eq!(redact_url("http://u@h/p?x=a:b@c"), "http://u@h/p?x=a:b@c");
    }
}

#[cfg(test)]
mod case_tests {
    use super::*;

    #[test]
    fn a_case_is_found_by_target_test_and_sweep_point() {
        let r = crate::store::read_record(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../dyno/tests/fixtures/run-1/ratesweep/run.json"
        )))
        .unwrap();
        let at_300: Vec<&Case> = r
            .cases
            .iter()
            .filter(|c| c.is("http", "load", Some(("rate", 300))))
            .collect();
        assert_eq!(at_300.len(), 1);
        assert_eq!(at_300[0].sweep.as_ref().unwrap().value, 300);
        // Outside the sweep there is no such case, and another point is another case.
        assert!(r.case_of("http", "load").is_none());
        assert!(!at_300[0].is("http", "load", Some(("rate", 100))));
        assert_eq!(r.tests_where(|_| true), ["load"]);
        // Its identity names it in full, and finds it again.
        let id = at_300[0].id();
        assert_eq!(id.to_string(), "load on http (loopback) at rate=300");
        assert_eq!(r.case(&id), Some(at_300[0]));
        let elsewhere = CaseId {
            topology: "lan".into(),
            ..id.clone()
        };
        assert_eq!(r.case(&elsewhere), None, "another topology is another case");
        let ids: std::collections::BTreeSet<CaseId> = r.cases.iter().map(Case::id).collect();
        assert_eq!(
            ids.len(),
            r.cases.len(),
            "every case of a run has its own identity"
        );
    }
}
