//! The types of a run record. The JSON written to disk is exactly these structures.
//!
//! Durations are integers in nanoseconds (`_ns`), rates are per second (`_per_s`), sizes are bytes
//! (`_bytes`). Every field is documented here and in `schema/dyno.run-2.schema.json`; records of
//! the first schema (`dyno.run/1`) are read through [`crate::migrate`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod plan;
pub use plan::*;
mod detail;
pub use detail::*;

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
    /// A capacity search (`--find-max`): its steps, each a case of the rate sweep, and the edge
    /// it found; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchRecord>,
    /// Where the live figures were pushed (`--push`), and how many points each destination
    /// took and did not; absent without a push.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub push: Vec<PushRecord>,
    /// The zero of the run's clock (every `*_ns` time of the run counts from it) on the Unix
    /// clock, in ns: what puts the time series on the calendar (`--push`); absent in records
    /// from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_zero_unix_ns: Option<u64>,
}

/// One `--push` destination's count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushRecord {
    /// The URL, any password replaced.
    pub url: String,
    /// Points (one per interval of a repetition) it took.
    pub sent: u64,
    /// Points it did not: its queue was full, it refused them or did not answer in time.
    pub undelivered: u64,
    /// Why the last undelivered batch was not taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A capacity search: the highest open-loop rate at which every objective held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRecord {
    /// The objectives, as written (`p99 < 20ms`).
    pub objectives: Vec<String>,
    /// The rate the plan's own load reached (the probe, run first: the search starts at half of
    /// it); `null` before it ran.
    pub probe_per_s: Option<f64>,
    /// Every step in the order run (the probe is not a step).
    pub steps: Vec<SearchStep>,
    /// The highest rate (per second) that held every time it ran; `null` if none did.
    pub max_held: Option<u64>,
    /// The lowest rate above it that broke; `null` if none did.
    pub min_broke: Option<u64>,
    /// Why the search ended.
    pub why: String,
}

/// One step of a capacity search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchStep {
    /// The rate offered, per second.
    pub rate: u64,
    /// Every objective held, and the generator offered the rate.
    pub held: bool,
    /// The generator's self-check.
    pub valid: bool,
    /// What broke, and by how much; `null` when it held.
    pub why: Option<String>,
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
    /// `--check`: whether the target's answers were right, over the history of every test of
    /// the target at this point; absent when no history was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<ConsistencyRecord>,
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
    /// A mix's request (load): its weight in the mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// A mix's request (load): its service time from the actual send (uncorrected), beside
    /// `latency_ns` from the intended start; and its histogram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_ns: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_histogram: Option<String>,
    /// A mix's request (load): its failures by class.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_classes: BTreeMap<String, u64>,
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
    /// A suite this schema does not describe: its name and figures as it wrote them, and its
    /// time series if it keeps one (the sql suite's).
    Custom {
        suite: String,
        figures: serde_json::Value,
        /// The intervals, from `started_ns` on the run's clock (none: no series kept).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        intervals: Vec<IntervalRecord>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_ns: Option<u64>,
    },
}

impl Detail {
    /// A suite's own figures, without a time series.
    pub fn custom(suite: impl Into<String>, figures: serde_json::Value) -> Detail {
        Detail::Custom {
            suite: suite.into(),
            figures,
            intervals: Vec::new(),
            started_ns: None,
        }
    }

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
            Detail::Custom {
                intervals,
                started_ns: Some(at),
                ..
            } if !intervals.is_empty() => Some((intervals, *at)),
            _ => None,
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
    /// The standard deviation (pgbench's "latency stddev"); absent from records made before it
    /// was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdev: Option<f64>,
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
mod tests;
