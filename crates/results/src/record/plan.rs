//! The plan a run followed, as its record keeps it: the common settings, each suite's section, the targets, faults, levels, sweeps and shards.

use super::*;

/// An I/O backend that ran, and why it was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoRecord {
    /// `io_uring` or `epoll`.
    pub backend: String,
    pub reason: String,
    /// How long a generator thread slept, when none of its clients was ready and no reply was
    /// in, before it waited on epoll (`--nap`): replies arriving meanwhile were taken at its
    /// end, up to this late. Absent when it did not nap (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nap_ns: Option<u64>,
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
    /// The I/O those threads ran on (`io_uring` or `epoll`) and why; absent for the load suite
    /// (its generator's `io`) and in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<IoRecord>,
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
    /// `--check`: the model each target's history was checked against, and the most time the
    /// check spent on one key; absent when no history was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckPlanRecord>,
    /// A shard's record (`--shard I/N`): which part of the plan this generator ran, and how it
    /// met the others; absent otherwise. Every other field of the plan is the whole plan's, the
    /// same on every shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// A record made by `dyno merge`: the shards it added up, in rank order; absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<ShardRecord>,
}

/// What `--check` asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckPlanRecord {
    pub model: String,
    pub budget_ns: u64,
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
    /// The I/O backend asked for: `auto` (io_uring where it runs, epoll otherwise), `uring`
    /// or `epoll`; the generator's check says which ran.
    #[serde(default = "auto")]
    pub io: String,
}

pub(super) fn default_max_lag() -> String {
    "50%".into()
}

pub(super) fn auto() -> String {
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
