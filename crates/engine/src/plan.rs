//! Plans: what the user wrote (a TOML file or flags), checked once, then resolved.
//!
//! [`RawPlan`] mirrors exactly what was written, each value carrying its [`Origin`] (file:line:column,
//! a flag, or a positional argument). [`RawPlan::resolve`] is the single place where values are
//! checked, defaults filled in and target URLs handed to their drivers; every error it returns
//! names the place and the fix. `dyno validate` and `dyno run` both go through it.
//!
//! A plan file:
//!
//! ```toml
//! [suite]
//! name = "shootout"      # the only suite so far
//! objects = 1000         # per client (-n)
//! concurrency = 2        # clients (-c)
//! size = 300             # bytes per object
//! reps = 3
//! warmup = true
//! seed = 1
//!
//! [output]
//! dir = "dyno-results/mine"
//! format = "table"       # table | markdown | csv | json
//!
//! [targets.sqlite_full]  # one column per target, in file order
//! url = "sqlite:/tmp/dyno_full.db"
//! synchronous = "full"   # any other key is a driver option
//! ```

use crate::driver::{ConfigError, Family, TargetConfig};
use crate::schedule::{ArrivalKind, RateProfile};
use crate::suggest::did_you_mean;
use crate::worker::Stop;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::de::{DeTable, DeValue};

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A plan file, 1-based line and column.
    File {
        path: Arc<str>,
        line: usize,
        column: usize,
    },
    /// A command-line flag, e.g. `--objects`.
    Flag(&'static str),
    /// The n-th (1-based) positional TARGET argument.
    Arg(usize),
    /// Nothing was written; a default applied.
    Default,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line, column } => write!(f, "{path}:{line}:{column}"),
            Origin::Flag(name) => write!(f, "{name}"),
            Origin::Arg(n) => write!(f, "TARGET argument {n}"),
            Origin::Default => write!(f, "default"),
        }
    }
}

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Sp<T> {
    pub value: T,
    pub at: Origin,
}

impl<T> Sp<T> {
    pub fn new(value: T, at: Origin) -> Sp<T> {
        Sp { value, at }
    }
}

/// One clear message about bad input: the place, what is wrong, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct PlanError {
    pub at: Origin,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

impl PlanError {
    pub fn new(at: Origin, message: impl Into<String>) -> PlanError {
        PlanError {
            at,
            message: message.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> PlanError {
        self.hint = Some(hint.into());
        self
    }
}

/// The suites dyno knows: `shootout` for stores (kv), `magma` for object stores (graph), `load`
/// for services (request), `namespace` for folder trees (namespace).
pub const SUITES: &[&str] = &["shootout", "magma", "load", "namespace"];

/// One target as written.
#[derive(Debug, Clone, PartialEq)]
pub struct RawTarget {
    /// The column name (a plan file's table key); derived from the scheme when absent.
    pub name: Option<Sp<String>>,
    pub url: Sp<String>,
    /// Driver options (from the plan file; URL query options are added at resolution).
    pub options: Vec<(Sp<String>, Sp<String>)>,
    /// `[targets.NAME.process]`: the target's server, to start or to find, and watch.
    pub process: Option<RawProcess>,
}

/// `[targets.NAME.process]` as written: `cmd` and `ready` (dyno starts it), or `pid`, or `name`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawProcess {
    /// Where the table is.
    pub at: Option<Origin>,
    pub cmd: Option<Sp<String>>,
    pub ready: Option<Sp<String>>,
    pub ready_timeout: Option<Sp<String>>,
    pub pid: Option<Sp<i64>>,
    pub name: Option<Sp<String>>,
}

/// A target's process, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessSpec {
    /// dyno starts `cmd` (through `sh -c`) before the run, waits until `ready` accepts a TCP
    /// connection (at most `ready_timeout`), watches it, and stops it after the run.
    Start {
        cmd: String,
        ready: std::net::SocketAddr,
        ready_timeout: std::time::Duration,
    },
    /// A running process, by PID.
    Pid(u32),
    /// Running processes, by name (each with its descendants).
    Name(String),
}

impl fmt::Display for ProcessSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessSpec::Start { cmd, ready, .. } => {
                write!(f, "started by dyno: {cmd} (ready: tcp:{ready})")
            }
            ProcessSpec::Pid(p) => write!(f, "pid {p}"),
            ProcessSpec::Name(n) => write!(f, "processes named {n}"),
        }
    }
}

/// How long a started process may take to accept connections, unless `ready_timeout` says.
pub const DEFAULT_READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A plan exactly as the user wrote it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawPlan {
    /// The plan file's path, or `None` for the command line alone.
    pub file: Option<PathBuf>,
    pub suite: Option<Sp<String>>,
    pub objects: Option<Sp<i64>>,
    pub concurrency: Option<Sp<i64>>,
    pub size: Option<Sp<i64>>,
    pub reps: Option<Sp<i64>>,
    pub warmup: Option<Sp<bool>>,
    pub seed: Option<Sp<i64>>,
    /// `--quick`: smaller defaults (100 objects, 1 repetition) for a fast look.
    pub quick: bool,
    /// `inproc,loopback,lan,wan`: each target runs once per topology (a column each).
    pub topology: Option<Sp<String>>,
    /// The magma suite: MagmaBenchmarker's `thousands`.
    pub thousands: Option<Sp<i64>>,
    /// The magma suite: how long each rate test repeats its operation.
    pub test_time: Option<Sp<String>>,
    /// The namespace suite: levels below the root, and entries of the parent.
    pub depth: Option<Sp<i64>>,
    pub width: Option<Sp<i64>>,
    /// `PARAM=LIST` or `PARAM=A..B[:STEP]`, each a sweep of its own.
    pub sweeps: Vec<Sp<String>>,
    /// Samples per point: the repetitions, named as sweeps name them.
    pub samples: Option<Sp<i64>>,
    pub targets: Vec<RawTarget>,
    /// `--pid`: processes to watch for the whole run.
    pub pids: Vec<Sp<i64>>,
    /// `--process-name`: processes to watch, by name.
    pub process_names: Vec<Sp<String>>,
    pub out: Option<Sp<String>>,
    pub format: Option<Sp<String>>,
    // The load suite:
    pub duration: Option<Sp<String>>,
    /// Closed loop: requests per connection.
    pub requests: Option<Sp<i64>>,
    /// `5000` or `1000..20000` requests per second.
    pub rate: Option<Sp<String>>,
    pub ramp: Option<Sp<String>>,
    pub stages: Vec<RawStage>,
    pub arrival: Option<Sp<String>>,
    pub max_connections: Option<Sp<i64>>,
    pub threads: Option<Sp<i64>>,
    pub timeout: Option<Sp<String>>,
    pub interval: Option<Sp<String>>,
    pub hlog: Option<Sp<String>>,
    /// Soak runs: `every=6h for=10m rate=5000`, a heavy burst on top of the steady rate.
    pub burst: Option<Sp<String>>,
    /// `auto`, `off` or a window: how often responses may wake a load thread.
    pub coalesce: Option<Sp<String>>,
    /// `50%` or `2ms`: how late dyno may dispatch before an open loop is invalid.
    pub max_lag: Option<Sp<String>>,
}

/// One stage of an open-loop profile, as written (`{ rate = "1000..5000", duration = "30s" }`).
#[derive(Debug, Clone, PartialEq)]
pub struct RawStage {
    pub rate: Sp<String>,
    pub duration: Sp<String>,
}

/// How the load suite offers load.
#[derive(Debug, Clone)]
pub enum LoadModel {
    /// Each connection sends its next request when its previous response ends.
    Closed { stop: Stop },
    /// Requests at the profile's arrival times; connections grow up to `max_connections`.
    Open {
        profile: RateProfile,
        arrival: ArrivalKind,
        max_connections: u64,
    },
}

/// The load suite's resolved settings.
#[derive(Debug, Clone)]
pub struct LoadParams {
    pub connections: u64,
    pub threads: usize,
    pub model: LoadModel,
    pub timeout_ns: u64,
    pub interval_ns: u64,
    pub hlog: Option<PathBuf>,
    /// The periodic burst the stages were built with, if any.
    pub burst: Option<Burst>,
    /// How often responses may wake a load thread.
    pub coalesce: crate::load::Coalesce,
    /// The open loop's arrivals and connection cap, as given: the model's when it is open, and
    /// each point's of a rate sweep.
    pub arrival: ArrivalKind,
    pub max_connections: u64,
    /// How late dyno may dispatch at p99 before an open-loop run is marked invalid.
    pub max_lag: MaxLag,
}

/// How late dyno may dispatch due requests, at p99 and beyond its pace, before an open-loop run
/// is marked invalid. Lateness is inside every corrected latency, so it is weighed against the
/// figure it distorts: by default, at most half the corrected p99 the run reports may be dyno's
/// own lateness (the rest is the target's), or at most a stated time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MaxLag {
    /// At most this share (0..=1) of the run's corrected latency p99.
    Share(f64),
    /// At most this long.
    Ns(u64),
}

impl MaxLag {
    pub const DEFAULT: MaxLag = MaxLag::Share(0.5);

    /// The limit in ns for a run whose corrected latency p99 is `latency_p99_ns`.
    pub fn limit_ns(self, latency_p99_ns: u64) -> u64 {
        match self {
            MaxLag::Share(s) => (latency_p99_ns as f64 * s) as u64,
            MaxLag::Ns(ns) => ns,
        }
    }

    /// As written: `50%` or `2ms`.
    pub fn label(self) -> String {
        match self {
            MaxLag::Share(s) => format!("{}%", s * 100.0),
            MaxLag::Ns(ns) => crate::units::duration_label(ns),
        }
    }

    /// Parses `50%` (a share of the corrected p99, 1% to 100%) or a duration such as `2ms`.
    pub fn parse(text: &str) -> Result<MaxLag, String> {
        let t = text.trim();
        if let Some(pct) = t.strip_suffix('%') {
            return match pct.trim().parse::<f64>() {
                Ok(p) if (1.0..=100.0).contains(&p) => Ok(MaxLag::Share(p / 100.0)),
                Ok(_) => Err(format!("{t}: a share must be between 1% and 100%")),
                Err(_) => Err(format!("{t:?} is not a percentage")),
            };
        }
        match crate::units::parse_duration(t) {
            Ok(d) if !d.is_zero() => Ok(MaxLag::Ns(d.as_nanos() as u64)),
            Ok(_) => Err("max_lag must be more than 0".to_string()),
            Err(e) => Err(e),
        }
    }
}

impl LoadParams {
    /// How long the load runs, when a duration ends it (not a count of requests).
    pub fn duration_ns(&self) -> Option<u64> {
        match &self.model {
            LoadModel::Open { profile, .. } => Some(profile.duration_ns()),
            LoadModel::Closed { stop } => match stop {
                Stop::Duration { ns } | Stop::DurationOrCount { ns, .. } => Some(*ns),
                Stop::Count(_) => None,
            },
        }
    }

    /// The same load as an open loop at one steady rate for the same duration (a point of a
    /// rate sweep; the plan checked that the duration is known and the rate steady).
    pub fn set_rate(&mut self, per_s: f64) {
        let duration_ns = self.duration_ns().unwrap_or(0);
        self.model = LoadModel::Open {
            profile: RateProfile::constant(per_s, duration_ns),
            arrival: self.arrival,
            max_connections: self.max_connections,
        };
    }
}

/// What resolution needs from the drivers: their schemes and a pure `configure`.
pub trait Resolver {
    /// Known URL schemes, for "did you mean".
    fn schemes(&self) -> Vec<&'static str>;
    /// Whether a `?query` in this scheme's URLs holds driver options (else it stays in the URL).
    fn query_options(&self, scheme: &str) -> bool {
        let _ = scheme;
        true
    }
    /// URLs used when the plan names no target.
    fn default_urls(&self) -> Vec<&'static str>;
    /// Validates `scheme:rest` with `options` and returns the configured target. Touches nothing.
    fn configure(
        &self,
        scheme: &str,
        rest: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<Box<dyn TargetConfig>, ConfigError>;
}

/// A target ready to open.
pub struct PlanTarget {
    pub name: String,
    pub url: String,
    pub config: Box<dyn TargetConfig>,
    /// The target's process to start or find, and watch.
    pub process: Option<ProcessSpec>,
}

impl fmt::Debug for PlanTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlanTarget")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("options", &self.config.options())
            .finish()
    }
}

/// A resolved plan: every value checked and defaulted.
#[derive(Debug)]
pub struct Plan {
    /// The plan file's path, or `command line`.
    pub source: String,
    pub suite: String,
    pub objects: u64,
    pub concurrency: u32,
    pub size: usize,
    pub reps: u32,
    pub warmup: bool,
    pub seed: u64,
    pub targets: Vec<PlanTarget>,
    pub out: Option<PathBuf>,
    /// The output format as written; the renderers (not the engine) know the names.
    pub format: Option<Sp<String>>,
    /// The load suite's settings; `None` for other suites.
    pub load: Option<LoadParams>,
    /// The magma suite's settings; `None` for other suites.
    pub magma: Option<crate::magma::Params>,
    /// The namespace suite's settings; `None` for other suites.
    pub namespace: Option<crate::folders::Params>,
    /// Each sweep varies one parameter over its values, the others at the plan's.
    pub sweeps: Vec<Sweep>,
    /// Processes watched for the whole run, whatever the target (`--pid`, `--process-name`).
    pub watch_pids: Vec<u32>,
    pub watch_names: Vec<String>,
}

/// One sweep: a parameter and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// `depth`, `width`, `clients`, `objects`, `size` or `thousands`.
    pub param: &'static str,
    pub values: Vec<u64>,
}

/// The most points one sweep may have.
pub const MAX_SWEEP_POINTS: usize = 1000;

/// zodbshootout's defaults: 1000 objects per client, 2 clients, 300-byte objects, best of 3.
pub const DEFAULT_OBJECTS: u64 = 1000;
pub const DEFAULT_CONCURRENCY: u32 = 2;
pub const DEFAULT_SIZE: usize = 300;
pub const DEFAULT_REPS: u32 = 3;
/// `--quick`: enough objects for stable figures in well under a second per target.
pub const QUICK_OBJECTS: u64 = 100;
pub const QUICK_REPS: u32 = 1;
pub const DEFAULT_SEED: u64 = 1;

/// Objects per client are numbered in 24 bits of the key (see `shootout::key`).
pub const MAX_OBJECTS: u64 = (1 << 24) - 1;
/// One OS thread per client; past this the machine, not the target, is measured.
pub const MAX_CONCURRENCY: u32 = 1024;
/// Each object starts with a 16-byte header (its key and version) that reads are checked against.
pub const MIN_SIZE: usize = 16;
/// Objects are held whole in memory by the client cache; 64 MiB keeps one object per op sane.
pub const MAX_SIZE: usize = 64 << 20;
pub const MAX_REPS: u32 = 1000;
/// The client object caches hold every object of every client: bounded to keep dyno's memory sane.
pub const MAX_CACHE_BYTES: u64 = 4 << 30;

/// Magma: MagmaBenchmarker's `thousands`; `--quick` uses 20.
pub const DEFAULT_THOUSANDS: u64 = 1000;
pub const QUICK_THOUSANDS: u64 = 20;
/// Magma: T² pointers and T arrays of T references come back in one batched read; 2000 keeps it
/// (32 MiB) under the host's frame limit.
pub const MAX_THOUSANDS: u64 = 2000;
/// Magma: each rate test repeats its operation for 1 s (`--quick`: 0.1 s), at least once.
pub const DEFAULT_TEST_NS: u64 = 1_000_000_000;
pub const QUICK_TEST_NS: u64 = 100_000_000;

/// Load: wrk's default of 10 connections.
pub const DEFAULT_CONNECTIONS: u64 = 10;
/// Load: each connection takes a local port, and there are fewer than 65,536.
pub const MAX_CONNECTIONS: u64 = 60_000;
/// Load: wrk's default run of 10 s; `--quick` 2 s.
pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;
pub const QUICK_DURATION_NS: u64 = 2_000_000_000;
/// Load: a request unanswered after 10 s is a timeout (the seed's client waited 10 s).
pub const DEFAULT_TIMEOUT_NS: u64 = 10_000_000_000;
/// Load: one interval of the time series per second.
pub const DEFAULT_INTERVAL_NS: u64 = 1_000_000_000;
pub const MIN_INTERVAL_NS: u64 = 10_000_000;
pub const MAX_INTERVAL_NS: u64 = 3_600_000_000_000;
/// Load: an event loop per thread; more threads than this only contend.
pub const MAX_THREADS: usize = 256;
/// Load: above 10 M requests/s the arrival clock itself could not keep time.
pub const MAX_RATE_PER_S: f64 = 10_000_000.0;

impl Plan {
    /// The plan as the run record stores it.
    pub fn record(&self) -> results::PlanRecord {
        results::PlanRecord {
            source: self.source.clone(),
            suite: self.suite.clone(),
            objects: self.objects,
            concurrency: self.concurrency,
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
            load: self.load.as_ref().map(|l| l.record()),
            magma: self.magma.map(|m| results::MagmaPlanRecord {
                thousands: m.thousands,
                test_ns: m.test_ns,
            }),
            namespace: self.namespace.map(|n| results::NamespacePlanRecord {
                depth: n.depth,
                width: n.width,
                collections: crate::folders::COLLECTIONS,
            }),
            sweeps: self
                .sweeps
                .iter()
                .map(|s| results::SweepRecord {
                    param: s.param.to_string(),
                    values: s.values.clone(),
                })
                .collect(),
        }
    }
}

impl LoadParams {
    /// The settings as the run record stores them.
    pub fn record(&self) -> results::LoadPlanRecord {
        let (model, max_connections, requests, stages, arrival) = match &self.model {
            // A closed loop keeps its connections; a rate sweep's points may open up to the cap.
            LoadModel::Closed { stop } => (
                "closed",
                self.max_connections,
                match stop {
                    Stop::Count(n) | Stop::DurationOrCount { count: n, .. } => Some(*n),
                    Stop::Duration { .. } => None,
                },
                Vec::new(),
                None,
            ),
            LoadModel::Open {
                profile,
                arrival,
                max_connections,
            } => (
                "open",
                *max_connections,
                None,
                profile
                    .stages
                    .iter()
                    .map(|s| results::RateStage {
                        duration_ns: s.duration_ns,
                        from_per_s: s.from_per_s,
                        to_per_s: s.to_per_s,
                    })
                    .collect(),
                Some(match arrival {
                    ArrivalKind::Constant => "constant".to_string(),
                    ArrivalKind::Poisson => "poisson".to_string(),
                }),
            ),
        };
        results::LoadPlanRecord {
            model: model.to_string(),
            connections: self.connections,
            max_connections,
            threads: self.threads as u64,
            duration_ns: self.duration_ns(),
            requests_per_connection: requests,
            stages,
            arrival,
            timeout_ns: self.timeout_ns,
            interval_ns: self.interval_ns,
            hlog: self.hlog.as_ref().map(|p| p.display().to_string()),
            burst: self.burst.map(|b| results::BurstRecord {
                every_ns: b.every_ns,
                for_ns: b.for_ns,
                rate_per_s: b.rate_per_s,
            }),
            coalesce: self.coalesce.label(),
            max_lag: self.max_lag.label(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Plan files
// ---------------------------------------------------------------------------------------------

struct Source<'a> {
    path: Arc<str>,
    text: &'a str,
}

impl Source<'_> {
    fn at(&self, span: std::ops::Range<usize>) -> Origin {
        let offset = span.start.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Origin::File {
            path: self.path.clone(),
            line,
            column,
        }
    }
}

type Spanned<T> = toml::Spanned<T>;

const TOP_KEYS: &[&str] = &["suite", "load", "output", "targets"];
const LOAD_KEYS: &[&str] = &[
    "duration",
    "requests",
    "rate",
    "ramp",
    "stages",
    "arrival",
    "max_connections",
    "threads",
    "timeout",
    "interval",
    "hlog",
    "burst",
    "coalesce",
    "max_lag",
];
const SUITE_KEYS: &[&str] = &[
    "name",
    "topology",
    "objects",
    "concurrency",
    "size",
    "reps",
    "warmup",
    "seed",
    "thousands",
    "test_time",
    "depth",
    "width",
    "sweep",
    "samples",
];
const OUTPUT_KEYS: &[&str] = &["dir", "format"];

fn type_name(v: &DeValue) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

impl RawPlan {
    /// Reads a plan file.
    pub fn from_file(path: &Path) -> Result<RawPlan, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            PlanError::new(
                Origin::Flag("PLAN"),
                format!("cannot read plan file {}: {e}", path.display()),
            )
            .hint("give the path of a TOML plan file; `dyno validate PLAN.toml` checks one")
        })?;
        RawPlan::from_toml(path, &text)
    }

    /// Parses a plan file's text; `path` is used only in messages.
    pub fn from_toml(path: &Path, text: &str) -> Result<RawPlan, PlanError> {
        let src = Source {
            path: Arc::from(path.display().to_string()),
            text,
        };
        let doc = DeTable::parse(text).map_err(|e| {
            let at = src.at(e.span().unwrap_or(0..0));
            PlanError::new(at, format!("invalid TOML: {}", e.message().trim_end()))
                .hint("see the plan format in the README (`[suite]`, `[output]`, `[targets.NAME]`)")
        })?;
        let mut plan = RawPlan {
            file: Some(path.to_path_buf()),
            ..RawPlan::default()
        };
        for (key, value) in doc.get_ref().iter() {
            match key.get_ref().as_ref() {
                "suite" => {
                    let table = expect_table(&src, "suite", value)?;
                    for (k, v) in table.iter() {
                        let at = src.at(v.span());
                        match k.get_ref().as_ref() {
                            "name" => plan.suite = Some(Sp::new(expect_str(&src, k, v)?, at)),
                            "topology" => {
                                plan.topology = Some(Sp::new(expect_str(&src, k, v)?, at))
                            }
                            "objects" => plan.objects = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "concurrency" => {
                                plan.concurrency = Some(Sp::new(expect_int(&src, k, v)?, at))
                            }
                            "size" => plan.size = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "reps" => plan.reps = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "seed" => plan.seed = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "thousands" => {
                                plan.thousands = Some(Sp::new(expect_int(&src, k, v)?, at))
                            }
                            "test_time" => {
                                plan.test_time = Some(Sp::new(expect_str(&src, k, v)?, at))
                            }
                            "depth" => plan.depth = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "width" => plan.width = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "samples" => plan.samples = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "sweep" => match v.get_ref() {
                                DeValue::String(one) => {
                                    plan.sweeps.push(Sp::new(one.to_string(), at))
                                }
                                DeValue::Array(all) => {
                                    for item in all.iter() {
                                        let at = src.at(item.span());
                                        match item.get_ref() {
                                            DeValue::String(one) => {
                                                plan.sweeps.push(Sp::new(one.to_string(), at))
                                            }
                                            other => {
                                                return Err(wrong_type(
                                                    &src,
                                                    k,
                                                    item,
                                                    other,
                                                    "a string like \"depth=1..30\"",
                                                ));
                                            }
                                        }
                                    }
                                }
                                other => {
                                    return Err(wrong_type(
                                        &src,
                                        k,
                                        v,
                                        other,
                                        "a string like \"depth=1..30\" or an array of them",
                                    ));
                                }
                            },
                            "warmup" => match v.get_ref() {
                                DeValue::Boolean(b) => plan.warmup = Some(Sp::new(*b, at)),
                                other => return Err(wrong_type(&src, k, v, other, "a boolean")),
                            },
                            other => {
                                return Err(unknown_key(&src, k, other, "[suite]", SUITE_KEYS));
                            }
                        }
                    }
                }
                "load" => {
                    let table = expect_table(&src, "load", value)?;
                    for (k, v) in table.iter() {
                        let at = src.at(v.span());
                        match k.get_ref().as_ref() {
                            "duration" => {
                                plan.duration = Some(Sp::new(expect_str(&src, k, v)?, at))
                            }
                            "ramp" => plan.ramp = Some(Sp::new(expect_str(&src, k, v)?, at)),
                            "arrival" => plan.arrival = Some(Sp::new(expect_str(&src, k, v)?, at)),
                            "timeout" => plan.timeout = Some(Sp::new(expect_str(&src, k, v)?, at)),
                            "interval" => {
                                plan.interval = Some(Sp::new(expect_str(&src, k, v)?, at))
                            }
                            "hlog" => plan.hlog = Some(Sp::new(expect_str(&src, k, v)?, at)),
                            "burst" => plan.burst = Some(Sp::new(expect_str(&src, k, v)?, at)),
                            "coalesce" => {
                                plan.coalesce = Some(Sp::new(expect_str(&src, k, v)?, at))
                            }
                            "max_lag" => plan.max_lag = Some(Sp::new(expect_str(&src, k, v)?, at)),
                            "requests" => {
                                plan.requests = Some(Sp::new(expect_int(&src, k, v)?, at))
                            }
                            "max_connections" => {
                                plan.max_connections = Some(Sp::new(expect_int(&src, k, v)?, at))
                            }
                            "threads" => plan.threads = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "rate" => {
                                plan.rate = Some(Sp::new(expect_number_text(&src, k, v)?, at))
                            }
                            "stages" => plan.stages = stages_from_toml(&src, k, v)?,
                            other => return Err(unknown_key(&src, k, other, "[load]", LOAD_KEYS)),
                        }
                    }
                }
                "output" => {
                    let table = expect_table(&src, "output", value)?;
                    for (k, v) in table.iter() {
                        let at = src.at(v.span());
                        match k.get_ref().as_ref() {
                            "dir" => plan.out = Some(Sp::new(expect_str(&src, k, v)?, at)),
                            "format" => plan.format = Some(Sp::new(expect_str(&src, k, v)?, at)),
                            other => {
                                return Err(unknown_key(&src, k, other, "[output]", OUTPUT_KEYS));
                            }
                        }
                    }
                }
                "targets" => {
                    let table = expect_table(&src, "targets", value)?;
                    for (name, body) in table.iter() {
                        plan.targets.push(target_from_toml(&src, name, body)?);
                    }
                }
                other => {
                    return Err(unknown_key(
                        &src,
                        key,
                        other,
                        "the plan's top level",
                        TOP_KEYS,
                    ));
                }
            }
        }
        Ok(plan)
    }

    /// Checks every value, fills defaults and configures each target through `resolver`.
    pub fn resolve(self, resolver: &dyn Resolver) -> Result<Plan, PlanError> {
        let named = match &self.suite {
            None => None,
            Some(s) if SUITES.contains(&s.value.as_str()) => Some(s.clone()),
            Some(s) => {
                return Err(PlanError::new(
                    s.at.clone(),
                    format!(
                        "unknown suite {:?}; {}suites: {}",
                        s.value,
                        did_you_mean(&s.value, SUITES.iter().copied()),
                        SUITES.join(", ")
                    ),
                ));
            }
        };
        let out = match &self.out {
            Some(o) if o.value.trim().is_empty() => {
                return Err(PlanError::new(o.at.clone(), "output directory is empty")
                    .hint("name a directory, or leave it out for ./dyno-results/<time>/"));
            }
            o => o.as_ref().map(|o| PathBuf::from(&o.value)),
        };

        // Targets first: their families decide the suite when none is named.
        let raw_targets = if let Some(t) = &self.topology {
            expand_topologies(&self.targets, t)?
        } else if self.targets.is_empty() {
            if let Some(s) = named.as_ref().filter(|s| s.value == "load") {
                return Err(
                    PlanError::new(s.at.clone(), "the load suite needs a target").hint(
                        "name one, e.g. dyno run http://127.0.0.1:8080/ or tcp://127.0.0.1:7000",
                    ),
                );
            }
            resolver
                .default_urls()
                .into_iter()
                .map(|u| RawTarget {
                    name: None,
                    url: Sp::new(u.to_string(), Origin::Default),
                    options: Vec::new(),
                    process: None,
                })
                .collect()
        } else {
            self.targets.clone()
        };
        let mut targets: Vec<PlanTarget> = Vec::new();
        let mut target_at: Vec<Origin> = Vec::new();
        for raw in raw_targets {
            target_at.push(raw.url.at.clone());
            let t = resolve_target(raw, resolver, &targets)?;
            targets.push(t);
        }
        let suite = match named {
            Some(s) => s.value,
            None if targets
                .iter()
                .all(|t| t.config.families().contains(&Family::Request)) =>
            {
                "load".to_string()
            }
            None => "shootout".to_string(),
        };
        let family = suite_family(&suite);
        // A store that lacks a store suite's family, beside others that have it, runs as `n/a`
        // cases with the reason (`na_reason`); a run where none has it is refused.
        let some_fit = targets
            .iter()
            .any(|t| t.config.families().contains(&family));
        for (t, at) in targets.iter().zip(&target_at) {
            let store = t.config.families().contains(&Family::Kv);
            if some_fit && store && family != Family::Kv && family != Family::Request {
                continue;
            }
            if !t.config.families().contains(&family) {
                let speaks: Vec<&str> = t.config.families().iter().map(|f| f.as_str()).collect();
                return Err(PlanError::new(
                    at.clone(),
                    format!(
                        "target {} speaks {}; the {suite} suite needs {} targets",
                        t.name,
                        speaks.join(", "),
                        family.as_str()
                    ),
                )
                .hint(if family == Family::Request {
                    "the load suite runs against http:// and tcp:// targets"
                } else if family == Family::Namespace {
                    "the namespace suite runs on fs: and dyno:// (and host:) targets"
                } else {
                    "http:// and tcp:// targets run the load suite: give them in a run of their own"
                }));
            }
        }
        let load_suite = suite == "load";
        let namespace_suite = suite == "namespace";
        if namespace_suite {
            self.no_shootout_sizes(
                "namespace",
                "size the namespace suite with --depth, --width and -c (clients)",
            )?;
        } else if let Some((at, name)) = [(&self.depth, "depth"), (&self.width, "width")]
            .into_iter()
            .find_map(|(v, name)| v.as_ref().map(|v| (v.at.clone(), name)))
        {
            return Err(PlanError::new(
                at,
                format!("{name} is a setting of the namespace suite, and this run is {suite}"),
            )
            .hint("add --suite namespace"));
        }
        let magma = if suite == "magma" {
            Some(self.resolve_magma()?)
        } else {
            self.no_magma_options(&suite)?;
            None
        };
        if !load_suite {
            self.no_load_options(&suite)?;
        } else if let Some(t) = &self.topology {
            return Err(
                PlanError::new(t.at.clone(), "topologies apply to the shootout suite")
                    .hint("a load target's address is its topology"),
            );
        }

        let (default_c, max_c, why_c) = if load_suite {
            (
                DEFAULT_CONNECTIONS,
                MAX_CONNECTIONS,
                "each connection takes a local port",
            )
        } else if namespace_suite {
            (
                crate::folders::DEFAULT_CLIENTS as u64,
                MAX_CONCURRENCY as u64,
                "each client is an OS thread",
            )
        } else {
            (
                DEFAULT_CONCURRENCY as u64,
                MAX_CONCURRENCY as u64,
                "each client is an OS thread",
            )
        };
        let concurrency = bounded(
            self.concurrency.clone(),
            "concurrency",
            default_c,
            1,
            max_c,
            why_c,
        )? as u32;
        let objects = bounded(
            self.objects.clone(),
            "objects",
            if self.quick {
                QUICK_OBJECTS
            } else {
                DEFAULT_OBJECTS
            },
            1,
            MAX_OBJECTS,
            "objects are numbered in 24 bits per client",
        )?;
        let size = bounded(
            self.size.clone(),
            "size",
            DEFAULT_SIZE as u64,
            MIN_SIZE as u64,
            MAX_SIZE as u64,
            "each object carries a 16-byte header that reads are verified against",
        )? as usize;
        let default_reps = if self.quick || load_suite {
            QUICK_REPS
        } else {
            DEFAULT_REPS
        };
        if let (Some(r), Some(_)) = (&self.reps, &self.samples) {
            return Err(PlanError::new(
                r.at.clone(),
                "reps and samples are the same setting (the repetitions of each point); give one",
            )
            .hint("keep --samples in a sweep, --reps otherwise"));
        }
        let reps = bounded(
            self.reps.clone().or(self.samples.clone()),
            "reps",
            default_reps as u64,
            1,
            MAX_REPS as u64,
            "each repetition runs the whole suite again",
        )? as u32;
        let seed = match &self.seed {
            None => DEFAULT_SEED,
            Some(s) if s.value >= 0 => s.value as u64,
            Some(s) => {
                return Err(PlanError::new(s.at.clone(), "seed must not be negative")
                    .hint("use any integer from 0 to 2^63-1"));
            }
        };
        let namespace = if namespace_suite {
            Some(crate::folders::Params {
                depth: bounded(
                    self.depth.clone(),
                    "depth",
                    crate::folders::DEFAULT_DEPTH,
                    1,
                    crate::folders::MAX_DEPTH,
                    "a folder path is at most 2048 bytes",
                )?,
                width: bounded(
                    self.width.clone(),
                    "width",
                    crate::folders::DEFAULT_WIDTH,
                    1,
                    crate::folders::MAX_WIDTH,
                    "the width test makes width - 1 folders first",
                )?,
                clients: concurrency,
            })
        } else {
            None
        };
        let sweeps = self.resolve_sweeps(&suite, max_c)?;
        // The client caches are sized for the largest point of any sweep.
        let most = |param: &str, base: u64| {
            sweeps
                .iter()
                .filter(|s| s.param == param)
                .flat_map(|s| s.values.iter().copied())
                .max()
                .unwrap_or(base)
                .max(base)
        };
        if !load_suite && magma.is_none() && !namespace_suite {
            let (objects, concurrency, size) = (
                most("objects", objects),
                most("clients", concurrency as u64),
                most("size", size as u64) as usize,
            );
            let cache_bytes = objects * concurrency * size as u64;
            if cache_bytes > MAX_CACHE_BYTES {
                let at = [&self.objects, &self.concurrency, &self.size]
                    .into_iter()
                    .flatten()
                    .map(|s| s.at.clone())
                    .next()
                    .unwrap_or(Origin::Default);
                return Err(PlanError::new(
                    at,
                    format!(
                        "objects × concurrency × size = {objects} × {concurrency} × {size} B = {} MiB, \
                         over the {} MiB the client object caches may hold",
                        cache_bytes >> 20,
                        MAX_CACHE_BYTES >> 20
                    ),
                )
                .hint("lower one of objects (-n), concurrency (-c) or size"));
            }
        }
        let load = if load_suite {
            Some(self.resolve_load(concurrency as u64)?)
        } else {
            None
        };
        if let (Some(l), Some(at)) = (
            &load,
            self.sweeps
                .iter()
                .find(|s| s.value.trim_start().starts_with("rate"))
                .map(|s| s.at.clone()),
        ) {
            // Each point of a rate sweep is an open loop at one steady rate for the duration.
            let steady = match &l.model {
                LoadModel::Open { profile, .. } => {
                    l.burst.is_none()
                        && profile.stages.len() == 1
                        && profile.stages[0].from_per_s == profile.stages[0].to_per_s
                }
                LoadModel::Closed { stop } => matches!(stop, crate::worker::Stop::Duration { .. }),
            };
            if !steady {
                return Err(PlanError::new(
                    at,
                    "a rate sweep runs each point at one steady rate for the duration",
                )
                .hint("drop --requests, --ramp, stages and --burst; give --duration"));
            }
        }

        let mut watch_pids = Vec::new();
        for p in &self.pids {
            match u32::try_from(p.value) {
                Ok(v) if v > 0 => watch_pids.push(v),
                _ => {
                    return Err(PlanError::new(
                        p.at.clone(),
                        format!("{} is not a process id", p.value),
                    )
                    .hint("give a positive PID, as `pgrep NAME` prints it"));
                }
            }
        }
        let mut watch_names = Vec::new();
        for n in &self.process_names {
            if n.value.is_empty() || n.value.contains('/') {
                return Err(PlanError::new(
                    n.at.clone(),
                    format!("{:?} is not a process name", n.value),
                )
                .hint("the name as `ps -e` shows it, e.g. redis-server"));
            }
            watch_names.push(n.value.clone());
        }

        Ok(Plan {
            watch_pids,
            watch_names,
            source: self
                .file
                .map_or_else(|| "command line".to_string(), |p| p.display().to_string()),
            suite,
            objects,
            concurrency,
            size,
            reps,
            // A load run has no warm-up unless asked: wrk, wrk2 and gobench have none.
            warmup: self.warmup.map_or(!load_suite, |w| w.value),
            seed,
            targets,
            out,
            format: self.format,
            load,
            magma,
            namespace,
            sweeps,
        })
    }

    /// Refuses the shootout's sizes in a suite that does not use them.
    fn no_shootout_sizes(&self, suite: &str, hint: &str) -> Result<(), PlanError> {
        match [(&self.objects, "objects"), (&self.size, "size")]
            .into_iter()
            .find_map(|(v, name)| v.as_ref().map(|v| (v.at.clone(), name)))
        {
            Some((at, name)) => Err(PlanError::new(
                at,
                format!("{name} is a setting of the shootout suite, and this run is {suite}"),
            )
            .hint(hint.to_string())),
            None => Ok(()),
        }
    }

    /// Parses and checks every `PARAM=VALUES`: a parameter the suite has, each value within the
    /// parameter's bounds, at most [`MAX_SWEEP_POINTS`] values, one sweep per parameter.
    fn resolve_sweeps(&self, suite: &str, max_clients: u64) -> Result<Vec<Sweep>, PlanError> {
        let params: &[&'static str] = match suite {
            "namespace" => &["depth", "width", "clients"],
            "magma" => &["thousands"],
            "load" => &["clients", "rate"],
            _ => &["clients", "objects", "size"],
        };
        let mut sweeps: Vec<Sweep> = Vec::new();
        for raw in &self.sweeps {
            let bad = |msg: String| {
                PlanError::new(raw.at.clone(), msg).hint(format!(
                    "write PARAM=LIST or PARAM=A..B[:STEP], e.g. {}=1..30 or {}=1,10,100; the {suite} suite sweeps {}",
                    params[0],
                    params[0],
                    params.join(", ")
                ))
            };
            let Some((name, spec)) = raw.value.split_once('=') else {
                return Err(bad(format!("sweep {:?} has no `=`", raw.value)));
            };
            let name = match name.trim() {
                "concurrency" | "c" => "clients",
                other => other,
            };
            let Some(&param) = params.iter().find(|p| **p == name) else {
                return Err(bad(format!(
                    "the {suite} suite has no parameter {name:?} to sweep; {}",
                    did_you_mean(name, params.iter().copied())
                )));
            };
            let values =
                parse_values(spec.trim()).map_err(|e| bad(format!("sweep {name}: {e}")))?;
            let (min, max) = match param {
                "depth" => (1, crate::folders::MAX_DEPTH),
                "width" => (1, crate::folders::MAX_WIDTH),
                "clients" => (1, max_clients),
                "objects" => (1, MAX_OBJECTS),
                "size" => (MIN_SIZE as u64, MAX_SIZE as u64),
                "rate" => (1, MAX_RATE_PER_S as u64),
                _ => (1, MAX_THOUSANDS),
            };
            if let Some(v) = values.iter().find(|v| !(min..=max).contains(*v)) {
                return Err(bad(format!(
                    "sweep {name}: {v} is outside {min}..={max}, the bounds of {name}"
                )));
            }
            if sweeps.iter().any(|s| s.param == param) {
                return Err(bad(format!("{name} is swept twice")));
            }
            sweeps.push(Sweep { param, values });
        }
        Ok(sweeps)
    }

    /// The magma suite's settings; it runs one client session, so the shootout's sizes do not
    /// apply.
    fn resolve_magma(&self) -> Result<crate::magma::Params, PlanError> {
        let shootout_only = [
            (&self.objects, "objects"),
            (&self.concurrency, "concurrency"),
            (&self.size, "size"),
        ];
        if let Some((v, name)) = shootout_only
            .into_iter()
            .find_map(|(v, name)| v.as_ref().map(|v| (v, name)))
        {
            return Err(PlanError::new(
                v.at.clone(),
                format!("{name} is a setting of the shootout suite; magma runs one client session"),
            )
            .hint("size the magma suite with --thousands (elements per array, levels of the chain, objects per collection)"));
        }
        let thousands = bounded(
            self.thousands.clone(),
            "thousands",
            if self.quick {
                QUICK_THOUSANDS
            } else {
                DEFAULT_THOUSANDS
            },
            1,
            MAX_THOUSANDS,
            "T arrays of T references come back in one batched read",
        )?;
        let test_ns = match &self.test_time {
            None if self.quick => QUICK_TEST_NS,
            None => DEFAULT_TEST_NS,
            Some(t) => {
                let d = crate::units::parse_duration(&t.value)
                    .map_err(|e| PlanError::new(t.at.clone(), format!("test_time: {e}")))?;
                if d.is_zero() || d.as_secs() > 3600 {
                    return Err(PlanError::new(
                        t.at.clone(),
                        "test_time must be more than 0 and at most 1h",
                    )
                    .hint("each rate test repeats its operation this long, e.g. 1s"));
                }
                d.as_nanos() as u64
            }
        };
        Ok(crate::magma::Params {
            thousands,
            test_ns,
            seed: self
                .seed
                .as_ref()
                .map_or(DEFAULT_SEED, |s| s.value.max(0) as u64),
        })
    }

    /// Refuses magma settings in a run of another suite.
    fn no_magma_options(&self, suite: &str) -> Result<(), PlanError> {
        let at = self
            .thousands
            .as_ref()
            .map(|t| (t.at.clone(), "thousands"))
            .or_else(|| self.test_time.as_ref().map(|t| (t.at.clone(), "test_time")));
        match at {
            Some((at, name)) => Err(PlanError::new(
                at,
                format!("{name} is a setting of the magma suite, and this run is {suite}"),
            )
            .hint("add --suite magma")),
            None => Ok(()),
        }
    }

    /// Refuses load settings in a run that has no load suite.
    fn no_load_options(&self, suite: &str) -> Result<(), PlanError> {
        let given = [
            (&self.duration, "duration"),
            (&self.rate, "rate"),
            (&self.ramp, "ramp"),
            (&self.arrival, "arrival"),
            (&self.timeout, "timeout"),
            (&self.interval, "interval"),
            (&self.hlog, "hlog"),
            (&self.burst, "burst"),
            (&self.coalesce, "coalesce"),
            (&self.max_lag, "max_lag"),
        ]
        .into_iter()
        .find_map(|(v, name)| v.as_ref().map(|v| (v.at.clone(), name)))
        .or_else(|| {
            [
                (&self.requests, "requests"),
                (&self.max_connections, "max_connections"),
                (&self.threads, "threads"),
            ]
            .into_iter()
            .find_map(|(v, name)| v.as_ref().map(|v| (v.at.clone(), name)))
        })
        .or_else(|| self.stages.first().map(|s| (s.rate.at.clone(), "stages")));
        match given {
            Some((at, name)) => Err(PlanError::new(
                at,
                format!("{name} is a setting of the load suite, and this run is {suite}"),
            )
            .hint("load settings apply to http:// and tcp:// targets")),
            None => Ok(()),
        }
    }

    fn resolve_coalesce(&self) -> Result<crate::load::Coalesce, PlanError> {
        use crate::load::{Coalesce, coalesce::MAX_WINDOW_NS};
        let Some(c) = &self.coalesce else {
            return Ok(Coalesce::Auto);
        };
        let hint = "write auto, off, or a window such as 20us (at most 1ms)";
        match c.value.trim() {
            "auto" => Ok(Coalesce::Auto),
            "off" | "0" => Ok(Coalesce::Off),
            v => match crate::units::parse_duration(v) {
                Ok(d) if d.as_nanos() as u64 <= MAX_WINDOW_NS => {
                    Ok(Coalesce::Fixed(d.as_nanos() as u64))
                }
                Ok(_) => Err(
                    PlanError::new(c.at.clone(), format!("coalesce {v} is too wide")).hint(hint),
                ),
                Err(e) => Err(PlanError::new(c.at.clone(), format!("coalesce: {e}")).hint(hint)),
            },
        }
    }

    fn resolve_load(&self, connections: u64) -> Result<LoadParams, PlanError> {
        let dur =
            |v: &Option<Sp<String>>, name: &str| -> Result<Option<(u64, Origin)>, PlanError> {
                match v {
                    None => Ok(None),
                    Some(s) => {
                        let d = crate::units::parse_duration(&s.value)
                            .map_err(|e| PlanError::new(s.at.clone(), format!("{name}: {e}")))?;
                        if d.is_zero() {
                            return Err(PlanError::new(
                                s.at.clone(),
                                format!("{name} must be more than 0"),
                            ));
                        }
                        Ok(Some((d.as_nanos() as u64, s.at.clone())))
                    }
                }
            };
        let duration = dur(&self.duration, "duration")?;
        let ramp = dur(&self.ramp, "ramp")?;
        let timeout = dur(&self.timeout, "timeout")?.map_or(DEFAULT_TIMEOUT_NS, |d| d.0);
        let interval = match dur(&self.interval, "interval")? {
            None => DEFAULT_INTERVAL_NS,
            Some((ns, at)) if !(MIN_INTERVAL_NS..=MAX_INTERVAL_NS).contains(&ns) => {
                return Err(PlanError::new(at, "interval must be between 10ms and 1h")
                    .hint("the time series keeps one histogram per interval"));
            }
            Some((ns, _)) => ns,
        };
        let requests = match &self.requests {
            None => None,
            Some(r) if r.value < 1 => {
                return Err(PlanError::new(
                    r.at.clone(),
                    format!("requests must be at least 1, got {}", r.value),
                ));
            }
            Some(r) => Some((r.value as u64, r.at.clone())),
        };
        if let (Some((_, at)), Some(_)) = (&duration, &requests) {
            return Err(PlanError::new(at.clone(), "both a duration and a request count were given")
                .hint("a run ends by --duration (wrk's model) or by --requests per connection (gobench's), not both"));
        }
        let rate = match &self.rate {
            None => None,
            Some(r) => Some((
                parse_rate(&r.value).map_err(|e| PlanError::new(r.at.clone(), e))?,
                r.at.clone(),
            )),
        };
        if let (Some((_, at)), Some(_)) = (&requests, &rate) {
            return Err(PlanError::new(at.clone(), "--requests counts a closed loop's requests per connection; an open loop (--rate) runs for --duration")
                .hint("drop --requests, and give --duration"));
        }
        if let (Some(s), Some((_, at))) = (self.stages.first(), &rate) {
            let _ = s;
            return Err(
                PlanError::new(at.clone(), "both a rate and stages were given")
                    .hint("stages describe the whole profile; drop rate"),
            );
        }
        let quick_or_default = if self.quick {
            QUICK_DURATION_NS
        } else {
            DEFAULT_DURATION_NS
        };
        let mut stages: Vec<crate::schedule::Stage> = Vec::new();
        for st in &self.stages {
            let (from, to) =
                parse_rate(&st.rate.value).map_err(|e| PlanError::new(st.rate.at.clone(), e))?;
            let d = crate::units::parse_duration(&st.duration.value).map_err(|e| {
                PlanError::new(st.duration.at.clone(), format!("stage duration: {e}"))
            })?;
            if d.is_zero() {
                return Err(PlanError::new(
                    st.duration.at.clone(),
                    "a stage lasts more than 0",
                ));
            }
            stages.push(crate::schedule::Stage {
                duration_ns: d.as_nanos() as u64,
                from_per_s: from,
                to_per_s: to,
            });
        }
        let ramped = ramp.is_some();
        if let Some(((from, to), at)) = &rate {
            let total = duration.as_ref().map(|d| d.0);
            match ramp {
                Some((r, rat)) => {
                    if from == to {
                        return Err(
                            PlanError::new(rat, "--ramp needs a rate range to ramp over")
                                .hint("write --rate FROM..TO, e.g. --rate 1000..20000 --ramp 60s"),
                        );
                    }
                    let total = total.unwrap_or(r);
                    if total < r {
                        return Err(PlanError::new(
                            at.clone(),
                            "the ramp is longer than the duration",
                        )
                        .hint("the duration covers the ramp, then holds the top rate"));
                    }
                    stages.push(crate::schedule::Stage {
                        duration_ns: r,
                        from_per_s: *from,
                        to_per_s: *to,
                    });
                    if total > r {
                        stages.push(crate::schedule::Stage {
                            duration_ns: total - r,
                            from_per_s: *to,
                            to_per_s: *to,
                        });
                    }
                }
                None => stages.push(crate::schedule::Stage {
                    duration_ns: total.unwrap_or(quick_or_default),
                    from_per_s: *from,
                    to_per_s: *to,
                }),
            }
        } else if let Some((_, at)) = ramp {
            return Err(PlanError::new(at, "--ramp needs --rate FROM..TO"));
        }
        let mut burst = None;
        if let Some(b) = &self.burst {
            let Some(((from, to), _)) = rate.as_ref().filter(|_| self.stages.is_empty()) else {
                return Err(PlanError::new(
                    b.at.clone(),
                    "a burst rides on a steady open-loop rate: give --rate R and --duration",
                )
                .hint("e.g. --duration 7d --rate 100 --burst every=6h,for=10m,rate=5000"));
            };
            if from != to || ramped {
                return Err(PlanError::new(
                    b.at.clone(),
                    "a burst rides on a steady rate, not a ramp",
                ));
            }
            let parsed = parse_burst(&b.value).map_err(|e| {
                PlanError::new(b.at.clone(), e).hint(
                    "write every=DURATION for=DURATION rate=PER_S, e.g. every=6h for=10m rate=5000",
                )
            })?;
            let total = stages.iter().map(|s| s.duration_ns).sum();
            stages = parsed
                .stages(*from, total)
                .map_err(|e| PlanError::new(b.at.clone(), e))?;
            burst = Some(parsed);
        }
        let open = !stages.is_empty();
        // Each point of a rate sweep is an open loop, so the open loop's settings apply to it.
        let rate_sweep = self
            .sweeps
            .iter()
            .any(|s| s.value.trim_start().starts_with("rate"));
        if let Some(a) = self.arrival.as_ref().filter(|_| !open && !rate_sweep) {
            return Err(PlanError::new(
                a.at.clone(),
                "arrival applies to an open loop (--rate)",
            ));
        }
        let arrival = match self
            .arrival
            .as_ref()
            .map(|a| (a.value.as_str(), a.at.clone()))
        {
            None | Some(("constant", _)) => ArrivalKind::Constant,
            Some(("poisson", _)) => ArrivalKind::Poisson,
            Some((other, at)) => {
                return Err(PlanError::new(
                    at,
                    format!(
                        "unknown arrival {other:?}; {}arrivals: constant, poisson",
                        did_you_mean(other, ["constant", "poisson"])
                    ),
                ));
            }
        };
        let max_connections = match &self.max_connections {
            None => connections,
            Some(m) if m.value < connections as i64 => {
                return Err(PlanError::new(
                    m.at.clone(),
                    format!("max_connections ({}) is below the connections opened up front ({connections})", m.value),
                )
                .hint("raise max_connections, or lower -c"));
            }
            Some(m) if m.value as u64 > MAX_CONNECTIONS => {
                return Err(PlanError::new(
                    m.at.clone(),
                    format!("max_connections must be at most {MAX_CONNECTIONS}"),
                ));
            }
            Some(m) => {
                if !open && !rate_sweep {
                    return Err(PlanError::new(
                        m.at.clone(),
                        "max_connections applies to an open loop (--rate or --sweep rate=…)",
                    )
                    .hint("a closed loop keeps exactly -c connections"));
                }
                m.value as u64
            }
        };
        let cores = crate::env::cores() as u64;
        let threads = match &self.threads {
            None => cores.min(if open { u64::MAX } else { connections }).max(1),
            Some(t) if !(1..=MAX_THREADS as i64).contains(&t.value) => {
                return Err(PlanError::new(
                    t.at.clone(),
                    format!("threads must be between 1 and {MAX_THREADS}"),
                ));
            }
            Some(t) => t.value as u64,
        } as usize;
        let max_lag = match &self.max_lag {
            None => MaxLag::DEFAULT,
            Some(m) if !open && !rate_sweep => {
                return Err(PlanError::new(
                    m.at.clone(),
                    "max_lag applies to an open loop (--rate or --sweep rate=…)",
                )
                .hint("a closed loop has no schedule to fall behind"));
            }
            Some(m) => MaxLag::parse(&m.value).map_err(|e| {
                PlanError::new(m.at.clone(), format!("max_lag: {e}"))
                    .hint("write a share of the corrected p99 such as 50%, or a time such as 2ms")
            })?,
        };
        let hlog = self.hlog.as_ref().map(|h| PathBuf::from(&h.value));
        let stop_duration = duration.map(|d| d.0);
        let model = if open {
            LoadModel::Open {
                profile: crate::schedule::RateProfile { stages },
                arrival,
                max_connections,
            }
        } else {
            LoadModel::Closed {
                stop: match requests {
                    Some((n, _)) => crate::worker::Stop::Count(n),
                    None => crate::worker::Stop::Duration {
                        ns: stop_duration.unwrap_or(quick_or_default),
                    },
                },
            }
        };
        Ok(LoadParams {
            connections,
            threads,
            model,
            timeout_ns: timeout,
            interval_ns: interval,
            hlog,
            burst,
            coalesce: self.resolve_coalesce()?,
            arrival,
            max_connections,
            max_lag,
        })
    }
}

/// The family of operations a suite needs of its targets.
pub fn suite_family(suite: &str) -> Family {
    match suite {
        "load" => Family::Request,
        "magma" => Family::Graph,
        "namespace" => Family::Namespace,
        _ => Family::Kv,
    }
}

/// Why `target` cannot run `suite`, when it cannot: the reason of its `n/a` cases.
pub fn na_reason(suite: &str, target: &PlanTarget) -> Option<String> {
    let family = suite_family(suite);
    let families = target.config.families();
    if families.contains(&family) {
        return None;
    }
    let speaks: Vec<&str> = families.iter().map(|f| f.as_str()).collect();
    Some(format!(
        "{} speaks {}; the {suite} suite needs {} targets{}",
        target.name,
        speaks.join(", "),
        family.as_str(),
        if family == Family::Namespace {
            " (fs:, dyno://, host:)"
        } else {
            ""
        }
    ))
}

/// One target per topology: `host:` with `inproc,loopback` becomes `host-inproc` and
/// `host-loopback`, each with the driver option `topology`. No target means dyno's own host.
fn expand_topologies(
    targets: &[RawTarget],
    list: &Sp<String>,
) -> Result<Vec<RawTarget>, PlanError> {
    let names: Vec<&str> = list
        .value
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    if names.is_empty() {
        return Err(PlanError::new(list.at.clone(), "no topology named")
            .hint("write e.g. inproc,loopback,lan,wan"));
    }
    let base = if targets.is_empty() {
        vec![RawTarget {
            name: None,
            url: Sp::new("host:".to_string(), list.at.clone()),
            options: Vec::new(),
            process: None,
        }]
    } else {
        targets.to_vec()
    };
    let mut out = Vec::new();
    for t in &base {
        let stem = match &t.name {
            Some(n) => n.value.clone(),
            None => split_url(&t.url.value)
                .map_or_else(|| "target".to_string(), |u| u.scheme.to_string()),
        };
        let at = t
            .name
            .as_ref()
            .map_or_else(|| t.url.at.clone(), |n| n.at.clone());
        for name in &names {
            let mut e = t.clone();
            e.name = Some(Sp::new(format!("{stem}-{name}"), at.clone()));
            e.options.push((
                Sp::new("topology".to_string(), list.at.clone()),
                Sp::new(name.to_string(), list.at.clone()),
            ));
            out.push(e);
        }
    }
    Ok(out)
}

/// Parses `5000` or `1000..20000` (requests per second).
/// A periodic burst: every `every`, the last `for` of the period runs at `rate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    pub every_ns: u64,
    pub for_ns: u64,
    pub rate_per_s: f64,
}

/// The most periods a burst may repeat over: each is two stages of the rate profile, which is
/// read stage by stage as arrivals are drawn.
pub const MAX_BURST_PERIODS: u64 = 200;

impl Burst {
    /// The stages of `base` per second for `total_ns`, with this burst at the end of each period.
    fn stages(&self, base: f64, total_ns: u64) -> Result<Vec<crate::schedule::Stage>, String> {
        let periods = total_ns.div_ceil(self.every_ns);
        if periods > MAX_BURST_PERIODS {
            return Err(format!(
                "the burst repeats {periods} times over the run; at most {MAX_BURST_PERIODS}: \
                 lengthen every="
            ));
        }
        let mut out = Vec::new();
        let mut t = 0;
        while t < total_ns {
            for (len, rate) in [
                (self.every_ns - self.for_ns, base),
                (self.for_ns, self.rate_per_s),
            ] {
                let len = len.min(total_ns - t);
                if len > 0 {
                    out.push(crate::schedule::Stage {
                        duration_ns: len,
                        from_per_s: rate,
                        to_per_s: rate,
                    });
                    t += len;
                }
            }
        }
        Ok(out)
    }
}

/// Parses `every=6h for=10m rate=5000` (spaces or commas between the parts).
pub fn parse_burst(text: &str) -> Result<Burst, String> {
    let (mut every, mut dur, mut rate) = (None, None, None);
    for part in text.split([' ', ',']).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("burst part {part:?} is not KEY=VALUE"))?;
        let d = || {
            crate::units::parse_duration(v)
                .ok()
                .filter(|d| !d.is_zero())
                .map(|d| d.as_nanos() as u64)
                .ok_or_else(|| format!("burst {k}={v:?} is not a duration"))
        };
        match k {
            "every" => every = Some(d()?),
            "for" => dur = Some(d()?),
            "rate" => {
                let (a, b) = parse_rate(v)?;
                if a != b {
                    return Err("a burst's rate is one number, not a range".into());
                }
                rate = Some(a);
            }
            other => {
                return Err(format!(
                    "unknown burst part {other:?}; {}parts: every, for, rate",
                    did_you_mean(other, ["every", "for", "rate"])
                ));
            }
        }
    }
    let (Some(every_ns), Some(for_ns), Some(rate_per_s)) = (every, dur, rate) else {
        return Err(format!("burst {text:?} needs every=, for= and rate="));
    };
    if for_ns >= every_ns {
        return Err("a burst's for= must be shorter than its every=".into());
    }
    Ok(Burst {
        every_ns,
        for_ns,
        rate_per_s,
    })
}

fn parse_rate(text: &str) -> Result<(f64, f64), String> {
    let one = |t: &str| -> Result<f64, String> {
        let v: f64 = t.trim().parse().map_err(|_| format!("rate {text:?} is not a number of requests per second; write e.g. 5000 or 1000..20000"))?;
        if !(v > 0.0 && v <= MAX_RATE_PER_S) {
            return Err(format!(
                "rate {text:?} must be above 0 and at most {MAX_RATE_PER_S} per second"
            ));
        }
        Ok(v)
    };
    match text.split_once("..") {
        Some((a, b)) => Ok((one(a)?, one(b)?)),
        None => one(text).map(|v| (v, v)),
    }
}

/// `1,10,100` or `1..30` or `100..1000:100` (inclusive): the values, in the order given.
fn parse_values(spec: &str) -> Result<Vec<u64>, String> {
    let int = |t: &str| {
        t.trim()
            .replace('_', "")
            .parse::<u64>()
            .map_err(|_| format!("{t:?} is not a whole number"))
    };
    let values: Vec<u64> = if let Some((a, rest)) = spec.split_once("..") {
        let (b, step) = match rest.split_once(':') {
            Some((b, step)) => (b, int(step)?),
            None => (rest, 1),
        };
        let (a, b) = (int(a)?, int(b)?);
        if step == 0 {
            return Err("the step must be at least 1".into());
        }
        if b < a {
            return Err(format!("the range {a}..{b} is empty (it counts up)"));
        }
        if (b - a) / step >= MAX_SWEEP_POINTS as u64 {
            return Err(format!(
                "{a}..{b} in steps of {step} is more than {MAX_SWEEP_POINTS} points"
            ));
        }
        (a..=b).step_by(step as usize).collect()
    } else {
        spec.split(',').map(int).collect::<Result<_, _>>()?
    };
    if values.is_empty() {
        return Err("no values".into());
    }
    if values.len() > MAX_SWEEP_POINTS {
        return Err(format!("more than {MAX_SWEEP_POINTS} points"));
    }
    Ok(values)
}

fn bounded(
    value: Option<Sp<i64>>,
    name: &str,
    default: u64,
    min: u64,
    max: u64,
    why_max: &str,
) -> Result<u64, PlanError> {
    let Some(v) = value else { return Ok(default) };
    if v.value < min as i64 {
        return Err(PlanError::new(
            v.at,
            format!("{name} must be at least {min}, got {}", v.value),
        )
        .hint(format!("the default is {default}")));
    }
    if v.value as u64 > max {
        return Err(PlanError::new(
            v.at,
            format!("{name} must be at most {max}, got {}", v.value),
        )
        .hint(format!("{why_max}; the default is {default}")));
    }
    Ok(v.value as u64)
}

/// The parts of a target URL `scheme:rest?k=v&k2=v2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts<'a> {
    pub scheme: &'a str,
    pub rest: &'a str,
    /// Query options in order; a bare `k` means `k=true`.
    pub query: Vec<(&'a str, &'a str)>,
}

/// Splits `scheme:rest?k=v&k2=v2` into its parts; `None` when there is no valid scheme.
pub fn split_url(url: &str) -> Option<UrlParts<'_>> {
    let colon = url.find(':')?;
    let scheme = &url[..colon];
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
    {
        return None;
    }
    let rest = &url[colon + 1..];
    let (rest, query) = match rest.find('?') {
        Some(q) => (&rest[..q], &rest[q + 1..]),
        None => (rest, ""),
    };
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "true")))
        .collect();
    Some(UrlParts {
        scheme,
        rest,
        query,
    })
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

fn resolve_target(
    raw: RawTarget,
    resolver: &dyn Resolver,
    earlier: &[PlanTarget],
) -> Result<PlanTarget, PlanError> {
    let schemes = resolver.schemes();
    let url = &raw.url;
    let Some(UrlParts {
        scheme,
        rest,
        query,
    }) = split_url(&url.value)
    else {
        return Err(PlanError::new(
            url.at.clone(),
            format!("{:?} is not a target URL", url.value),
        )
        .hint(format!(
            "write SCHEME:WHERE, e.g. sqlite:/tmp/dyno.db or mem: (schemes: {}); a plan file must end in .toml",
            schemes.join(", ")
        )));
    };
    if scheme == "https" && !schemes.contains(&scheme) {
        // Not a typo of http: the user meant TLS, and a suggestion to drop it would mislead.
        return Err(PlanError::new(
            url.at.clone(),
            "https:// targets need TLS, and this dyno was built without it",
        )
        .hint("build dyno with its default features (the `tls` feature), or load the server's plain-HTTP port; nothing was run"));
    }
    if !schemes.contains(&scheme) {
        return Err(PlanError::new(
            url.at.clone(),
            format!(
                "unknown target scheme {scheme:?}; {}schemes: {}",
                did_you_mean(scheme, schemes.iter().copied()),
                schemes.join(", ")
            ),
        )
        .hint("`dyno targets` lists every driver and its URL forms"));
    }
    let (rest, query) = if resolver.query_options(scheme) {
        (rest, query)
    } else {
        let after_colon = &url.value[scheme.len() + 1..];
        (after_colon, Vec::new())
    };
    let mut options = BTreeMap::new();
    let mut origins: BTreeMap<String, Origin> = BTreeMap::new();
    for (k, v) in query {
        options.insert(k.to_string(), v.to_string());
        origins.insert(k.to_string(), url.at.clone());
    }
    for (k, v) in &raw.options {
        if options.contains_key(&k.value) && origins.get(&k.value) == Some(&url.at) {
            return Err(PlanError::new(
                k.at.clone(),
                format!("option {:?} is set both here and in the URL", k.value),
            )
            .hint("keep one of the two"));
        }
        options.insert(k.value.clone(), v.value.clone());
        origins.insert(k.value.clone(), v.at.clone());
    }
    let config = resolver.configure(scheme, rest, &options).map_err(|e| {
        let at = e
            .option
            .as_ref()
            .and_then(|o| origins.get(o).cloned())
            .unwrap_or_else(|| url.at.clone());
        let message = match &e.option {
            Some(o) if o == "topology" && e.message.starts_with("unknown option") => {
                return PlanError::new(
                    at,
                    format!(
                        "{scheme}: targets run where their address says; topologies apply to \
                         host: (dyno's own host)"
                    ),
                )
                .hint("drop --topology, or run host: (no target) in several topologies");
            }
            Some(o) => format!("{scheme}: option {o}: {}", e.message),
            None => format!("{}: {}", url.value, e.message),
        };
        PlanError {
            at,
            message,
            hint: e.hint,
        }
    })?;
    let (name, name_at) = match raw.name {
        Some(n) => (n.value, n.at),
        None => {
            let mut name = scheme.to_string();
            let mut k = 2;
            while earlier.iter().any(|t| t.name == name) {
                name = format!("{scheme}-{k}");
                k += 1;
            }
            (name, url.at.clone())
        }
    };
    if !valid_name(&name) {
        return Err(
            PlanError::new(name_at, format!("target name {name:?} is not allowed"))
                .hint("use up to 64 letters, digits, '_', '-' or '.'"),
        );
    }
    if earlier.iter().any(|t| t.name == name) {
        return Err(
            PlanError::new(name_at, format!("target name {name:?} is used twice"))
                .hint("give each target its own name"),
        );
    }
    let process = raw.process.as_ref().map(resolve_process).transpose()?;
    Ok(PlanTarget {
        name,
        url: url.value.clone(),
        config,
        process,
    })
}

fn resolve_process(p: &RawProcess) -> Result<ProcessSpec, PlanError> {
    let at = p.at.clone().unwrap_or(Origin::Arg(0));
    let given = [p.cmd.is_some(), p.pid.is_some(), p.name.is_some()];
    if given.iter().filter(|&&g| g).count() != 1 {
        return Err(PlanError::new(
            at,
            "a target's process needs exactly one of `cmd` (dyno starts it), `pid` or `name`",
        )
        .hint("e.g. cmd = \"redis-server --port 6379\" with ready = \"tcp:127.0.0.1:6379\""));
    }
    if let Some(pid) = &p.pid {
        return match u32::try_from(pid.value) {
            Ok(v) if v > 0 => Ok(ProcessSpec::Pid(v)),
            _ => Err(PlanError::new(
                pid.at.clone(),
                "pid must be a positive process id",
            )),
        };
    }
    if let Some(name) = &p.name {
        if name.value.is_empty() || name.value.contains('/') {
            return Err(
                PlanError::new(name.at.clone(), "name must be a process name")
                    .hint("the name as `ps -e` shows it, e.g. redis-server"),
            );
        }
        return Ok(ProcessSpec::Name(name.value.clone()));
    }
    let cmd = p.cmd.as_ref().expect("one of the three is given");
    if cmd.value.trim().is_empty() {
        return Err(PlanError::new(cmd.at.clone(), "cmd is empty"));
    }
    for (k, v) in [("ready", &p.ready), ("ready_timeout", &p.ready_timeout)] {
        if v.is_some() && p.cmd.is_none() {
            return Err(PlanError::new(
                at.clone(),
                format!("`{k}` is for a process dyno starts (with `cmd`)"),
            ));
        }
    }
    let Some(ready) = &p.ready else {
        return Err(PlanError::new(
            cmd.at.clone(),
            "a process dyno starts needs `ready`: the address it accepts connections on",
        )
        .hint("add e.g. ready = \"tcp:127.0.0.1:6379\""));
    };
    let addr = ready
        .value
        .strip_prefix("tcp:")
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .ok_or_else(|| {
            PlanError::new(
                ready.at.clone(),
                format!("{:?} is not a readiness check", ready.value),
            )
            .hint("write tcp:IP:PORT, e.g. tcp:127.0.0.1:6379 (dyno connects until it accepts)")
        })?;
    let ready_timeout = match &p.ready_timeout {
        None => DEFAULT_READY_TIMEOUT,
        Some(t) => crate::units::parse_duration(&t.value)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                PlanError::new(t.at.clone(), format!("{:?} is not a duration", t.value))
                    .hint("write e.g. \"30s\"")
            })?,
    };
    Ok(ProcessSpec::Start {
        cmd: cmd.value.clone(),
        ready: addr,
        ready_timeout,
    })
}

fn expect_table<'a, 'i>(
    src: &Source,
    name: &str,
    v: &'a Spanned<DeValue<'i>>,
) -> Result<&'a DeTable<'i>, PlanError> {
    match v.get_ref() {
        DeValue::Table(t) => Ok(t),
        other => Err(PlanError::new(
            src.at(v.span()),
            format!("`{name}` must be a table, not {}", type_name(other)),
        )
        .hint(format!("write it as a [{name}] section"))),
    }
}

fn expect_str(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<String, PlanError> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s.to_string()),
        other => Err(wrong_type(src, k, v, other, "a string")),
    }
}

fn expect_int(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<i64, PlanError> {
    match v.get_ref() {
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).map_err(|_| {
            PlanError::new(
                src.at(v.span()),
                format!("`{}` is out of range", k.get_ref()),
            )
        }),
        other => Err(wrong_type(src, k, v, other, "an integer")),
    }
}

/// A rate written as a number (`5000`) or a string (`"1000..20000"`).
fn expect_number_text(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<String, PlanError> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s.to_string()),
        DeValue::Integer(i) => Ok(i.to_string()),
        DeValue::Float(f) => Ok(f.as_str().to_string()),
        other => Err(wrong_type(src, k, v, other, "a number or a string")),
    }
}

/// `stages = [{ rate = 1000, duration = "30s" }, { rate = "1000..5000", duration = "1m" }]`
fn stages_from_toml(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<Vec<RawStage>, PlanError> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(wrong_type(src, k, v, v.get_ref(), "an array"));
    };
    let mut out = Vec::new();
    for item in items.iter() {
        let DeValue::Table(t) = item.get_ref() else {
            return Err(
                PlanError::new(src.at(item.span()), "a stage must be a table")
                    .hint("write { rate = 1000, duration = \"30s\" }"),
            );
        };
        let (mut rate, mut duration) = (None, None);
        for (sk, sv) in t.iter() {
            let at = src.at(sv.span());
            match sk.get_ref().as_ref() {
                "rate" => rate = Some(Sp::new(expect_number_text(src, sk, sv)?, at)),
                "duration" => duration = Some(Sp::new(expect_str(src, sk, sv)?, at)),
                other => {
                    return Err(unknown_key(
                        src,
                        sk,
                        other,
                        "a stage",
                        &["rate", "duration"],
                    ));
                }
            }
        }
        match (rate, duration) {
            (Some(rate), Some(duration)) => out.push(RawStage { rate, duration }),
            _ => {
                return Err(PlanError::new(
                    src.at(item.span()),
                    "a stage needs a rate and a duration",
                )
                .hint("write { rate = 1000, duration = \"30s\" }"));
            }
        }
    }
    Ok(out)
}

fn wrong_type(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
    found: &DeValue,
    want: &str,
) -> PlanError {
    PlanError::new(
        src.at(v.span()),
        format!("`{}` must be {want}, not {}", k.get_ref(), type_name(found)),
    )
    .hint(match want {
        "an integer" => format!("write e.g. {} = 1000 (no quotes)", k.get_ref()),
        "a boolean" => format!("write {} = true or {} = false", k.get_ref(), k.get_ref()),
        "an array" => format!("write e.g. {} = [ ... ]", k.get_ref()),
        "a number or a string" => format!(
            "write e.g. {} = 5000 or {} = \"1000..20000\"",
            k.get_ref(),
            k.get_ref()
        ),
        _ => format!("write e.g. {} = \"…\" (in quotes)", k.get_ref()),
    })
}

fn unknown_key(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    name: &str,
    section: &str,
    known: &[&str],
) -> PlanError {
    PlanError::new(
        src.at(k.span()),
        format!(
            "unknown key `{name}` in {section}; {}known keys: {}",
            did_you_mean(name, known.iter().copied()),
            known.join(", ")
        ),
    )
}

fn target_from_toml(
    src: &Source,
    name: &Spanned<std::borrow::Cow<str>>,
    body: &Spanned<DeValue>,
) -> Result<RawTarget, PlanError> {
    let name_at = src.at(name.span());
    let DeValue::Table(table) = body.get_ref() else {
        return Err(PlanError::new(
            src.at(body.span()),
            format!("target `{}` must be a table", name.get_ref()),
        )
        .hint(format!(
            "write [targets.{}] with url = \"scheme:…\" under it",
            name.get_ref()
        )));
    };
    let mut url = None;
    let mut options = Vec::new();
    let mut process = None;
    for (k, v) in table.iter() {
        if k.get_ref() == "process" {
            process = Some(process_from_toml(src, v)?);
            continue;
        }
        let text = match v.get_ref() {
            DeValue::String(s) => s.to_string(),
            DeValue::Integer(i) => i.to_string(),
            DeValue::Float(f) => f.as_str().to_string(),
            DeValue::Boolean(b) => b.to_string(),
            other => {
                return Err(PlanError::new(
                    src.at(v.span()),
                    format!(
                        "target option `{}` must be a string, number or boolean, not {}",
                        k.get_ref(),
                        type_name(other)
                    ),
                ));
            }
        };
        let at = src.at(v.span());
        if k.get_ref() == "url" {
            if !matches!(v.get_ref(), DeValue::String(_)) {
                return Err(wrong_type(src, k, v, v.get_ref(), "a string"));
            }
            url = Some(Sp::new(text, at));
        } else {
            options.push((
                Sp::new(k.get_ref().to_string(), src.at(k.span())),
                Sp::new(text, at),
            ));
        }
    }
    let url = url.ok_or_else(|| {
        PlanError::new(
            name_at.clone(),
            format!("target `{}` has no url", name.get_ref()),
        )
        .hint("add e.g. url = \"sqlite:/tmp/dyno.db\" to it")
    })?;
    Ok(RawTarget {
        name: Some(Sp::new(name.get_ref().to_string(), name_at)),
        url,
        options,
        process,
    })
}

fn process_from_toml(src: &Source, v: &Spanned<DeValue>) -> Result<RawProcess, PlanError> {
    let table = expect_table(src, "targets.NAME.process", v)?;
    let mut p = RawProcess {
        at: Some(src.at(v.span())),
        ..RawProcess::default()
    };
    for (k, v) in table.iter() {
        let at = src.at(v.span());
        let text = || match v.get_ref() {
            DeValue::String(s) => Ok(Sp::new(s.to_string(), at.clone())),
            other => Err(wrong_type(src, k, v, other, "a string")),
        };
        match k.get_ref().as_ref() {
            "cmd" => p.cmd = Some(text()?),
            "ready" => p.ready = Some(text()?),
            "ready_timeout" => p.ready_timeout = Some(text()?),
            "name" => p.name = Some(text()?),
            "pid" => match v.get_ref() {
                DeValue::Integer(i) => {
                    let n = i.as_str().parse::<i64>().map_err(|_| {
                        PlanError::new(at.clone(), "pid must be a positive process id")
                    })?;
                    p.pid = Some(Sp::new(n, at));
                }
                other => return Err(wrong_type(src, k, v, other, "an integer")),
            },
            other => {
                const KEYS: [&str; 5] = ["cmd", "ready", "ready_timeout", "pid", "name"];
                return Err(PlanError::new(
                    src.at(k.span()),
                    format!("unknown key `{other}` in a target's process"),
                )
                .hint(format!(
                    "{}keys: {}",
                    did_you_mean(other, KEYS.iter().copied()),
                    KEYS.join(", ")
                )));
            }
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{DriverError, Store};

    struct FakeConfig(BTreeMap<String, String>, &'static [Family]);

    impl TargetConfig for FakeConfig {
        fn families(&self) -> &'static [Family] {
            self.1
        }
        fn durability(&self) -> String {
            "fake".into()
        }
        fn options(&self) -> BTreeMap<String, String> {
            self.0.clone()
        }
        fn data_path(&self) -> Option<PathBuf> {
            None
        }
        fn open(&self) -> Result<Box<dyn Store>, DriverError> {
            Err(DriverError::new("fake targets do not open"))
        }
    }

    /// Four schemes: `mem` (no options), `sqlite` (option `synchronous` = normal | full), `http`
    /// (request family) and `fs` (kv and namespace families).
    struct Fake;

    impl Resolver for Fake {
        fn schemes(&self) -> Vec<&'static str> {
            vec!["mem", "sqlite", "http", "fs"]
        }
        fn default_urls(&self) -> Vec<&'static str> {
            vec!["mem:", "sqlite:"]
        }
        fn configure(
            &self,
            scheme: &str,
            _rest: &str,
            options: &BTreeMap<String, String>,
        ) -> Result<Box<dyn TargetConfig>, ConfigError> {
            for (k, v) in options {
                if scheme != "sqlite" || k != "synchronous" {
                    return Err(ConfigError::option(k, "unknown option"));
                }
                if v != "normal" && v != "full" {
                    return Err(ConfigError::option(k, format!("{v:?} is not allowed"))
                        .hint("choose normal or full"));
                }
            }
            let families: &'static [Family] = match scheme {
                "http" => &[Family::Request],
                "fs" => &[Family::Kv, Family::Namespace],
                _ => &[Family::Kv],
            };
            Ok(Box::new(FakeConfig(options.clone(), families)))
        }
    }

    fn parse(text: &str) -> Result<RawPlan, PlanError> {
        RawPlan::from_toml(Path::new("plan.toml"), text)
    }

    fn resolve(text: &str) -> Result<Plan, PlanError> {
        parse(text)?.resolve(&Fake)
    }

    fn err(text: &str) -> String {
        resolve(text).unwrap_err().to_string()
    }

    #[test]
    fn a_rate_sweep_is_an_open_loop_and_takes_its_settings() {
        let plan = |extra: &str| {
            format!(
                "[suite]\nsweep = \"rate=100,200\"\n[targets.w]\nurl = \"http://127.0.0.1:1/\"\n[load]\nduration = \"2s\"\n{extra}"
            )
        };
        let mut l = resolve(&plan("max_connections = 64\narrival = \"poisson\"\n"))
            .unwrap()
            .load
            .unwrap();
        l.set_rate(200.0);
        let LoadModel::Open {
            profile,
            arrival,
            max_connections,
        } = &l.model
        else {
            panic!("a point of a rate sweep is an open loop")
        };
        assert_eq!(*max_connections, 64);
        assert_eq!(*arrival, ArrivalKind::Poisson);
        assert_eq!(profile.duration_ns(), 2_000_000_000);
        // Without a sweep, the settings of an open loop still need one.
        let e = err("[targets.w]\nurl = \"http://127.0.0.1:1/\"\n[load]\nmax_connections = 64\n");
        assert!(e.contains("applies to an open loop"), "{e}");
    }

    #[test]
    fn bursts_ride_on_the_steady_rate_at_the_end_of_each_period() {
        let load = |extra: &str| {
            format!(
                "[targets.w]\nurl = \"http://127.0.0.1:1/\"\n[load]\nduration = \"50s\"\n{extra}"
            )
        };
        let p = resolve(&load("rate = 10\nburst = \"every=20s for=5s rate=100\"\n")).unwrap();
        let LoadModel::Open { profile, .. } = &p.load.unwrap().model else {
            panic!("an open loop")
        };
        let got: Vec<(u64, f64)> = profile
            .stages
            .iter()
            .map(|s| (s.duration_ns / 1_000_000_000, s.to_per_s))
            .collect();
        // 50 s: two full periods (15 s light, 5 s burst) and 10 s of a third.
        assert_eq!(
            got,
            [(15, 10.0), (5, 100.0), (15, 10.0), (5, 100.0), (10, 10.0)]
        );
        assert_eq!(profile.duration_ns(), 50_000_000_000);

        let e = err(&load("burst = \"every=20s for=5s rate=100\"\n"));
        assert!(e.contains("steady open-loop rate"), "{e}");
        let e = err(&load("rate = 10\nburst = \"every=5s for=5s rate=100\"\n"));
        assert!(e.contains("shorter than its every="), "{e}");
        let e = err(&load("rate = 10\nburst = \"evry=20s for=5s rate=100\"\n"));
        assert!(e.contains("did you mean \"every\""), "{e}");
        let e = err(&load(
            "rate = 10\nburst = \"every=100ms for=5ms rate=100\"\n",
        ));
        assert!(e.contains("at most 200"), "{e}");
        let e = err("[targets.a]\nurl = \"mem:\"\n[load]\nburst = \"every=1s for=1ms rate=1\"\n");
        assert!(e.contains("burst is a setting of the load suite"), "{e}");
    }

    #[test]
    fn sweeps_take_lists_and_ranges_and_are_checked_against_the_suite_and_bounds() {
        assert_eq!(parse_values("1..5").unwrap(), [1, 2, 3, 4, 5]);
        assert_eq!(
            parse_values("100..1000:300").unwrap(),
            [100, 400, 700, 1000]
        );
        assert_eq!(parse_values("1, 10,1_000").unwrap(), [1, 10, 1000]);
        assert!(parse_values("5..1").unwrap_err().contains("empty"));
        assert!(parse_values("1..5:0").unwrap_err().contains("step"));
        assert!(parse_values("0..5000").unwrap_err().contains("1000 points"));
        assert!(
            parse_values("a,b")
                .unwrap_err()
                .contains("not a whole number")
        );

        let ns = "[suite]\nname = \"namespace\"\n";
        let fs = "[targets.f]\nurl = \"fs:\"\n";
        let p = resolve(&format!(
            "{ns}sweep = [\"depth=1..30\", \"width=1,10,100,1000\"]\nsamples = 5\n{fs}"
        ))
        .unwrap();
        assert_eq!(p.reps, 5, "samples are the repetitions");
        assert_eq!(p.sweeps[0].param, "depth");
        assert_eq!(p.sweeps[0].values.len(), 30);
        assert_eq!(p.sweeps[1].values, [1, 10, 100, 1000]);
        assert_eq!(
            p.namespace,
            Some(crate::folders::Params {
                depth: 10,
                width: 100,
                clients: 10
            })
        );
        let e = err(&format!("{ns}sweep = \"dept=1..3\"\n{fs}"));
        assert!(
            e.starts_with("plan.toml:3:9: the namespace suite has no parameter \"dept\" to sweep; did you mean \"depth\"?"),
            "{e}"
        );
        assert!(
            e.contains("hint: write PARAM=LIST or PARAM=A..B[:STEP]"),
            "{e}"
        );
        let e = err(&format!("{ns}sweep = \"depth=0..3\"\n{fs}"));
        assert!(e.contains("0 is outside 1..=200"), "{e}");
        let e = err(&format!("{ns}sweep = [\"depth=1\", \"depth=2\"]\n{fs}"));
        assert!(e.contains("depth is swept twice"), "{e}");
        let e = err(&format!("{ns}reps = 2\nsamples = 3\n{fs}"));
        assert!(e.contains("reps and samples are the same setting"), "{e}");
        let e = err(&format!("{ns}objects = 3\n{fs}"));
        assert!(
            e.contains("objects is a setting of the shootout suite"),
            "{e}"
        );
        let e = err("[suite]\ndepth = 3\n");
        assert!(e.contains("add --suite namespace"), "{e}");
        let e = err(&format!("{ns}[targets.m]\nurl = \"mem:\"\n"));
        assert!(
            e.contains("the namespace suite needs namespace targets"),
            "{e}"
        );
        let e = err("[suite]\nsweep = \"depth=1..3\"\n");
        assert!(
            e.contains("the shootout suite has no parameter \"depth\""),
            "{e}"
        );
        let p = resolve("[suite]\nsweep = [\"concurrency=1,2\", \"size=100,200\"]\n").unwrap();
        assert_eq!(
            p.sweeps[0].param, "clients",
            "concurrency is swept as clients"
        );
    }

    #[test]
    fn an_empty_plan_gets_zodbshootouts_defaults_and_the_default_targets() {
        let p = resolve("").unwrap();
        assert_eq!(p.suite, "shootout");
        assert_eq!(
            (p.objects, p.concurrency, p.size, p.reps, p.warmup, p.seed),
            (1000, 2, 300, 3, true, 1)
        );
        let names: Vec<&str> = p.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["mem", "sqlite"]);
        assert_eq!(p.source, "plan.toml");
        assert!(p.format.is_none() && p.out.is_none());
    }

    #[test]
    fn quick_lowers_defaults_but_not_explicit_values() {
        let mut raw = parse("[suite]\nreps = 2\n").unwrap();
        raw.quick = true;
        let p = raw.resolve(&Fake).unwrap();
        assert_eq!((p.objects, p.reps), (QUICK_OBJECTS, 2));
    }

    #[test]
    fn a_full_plan_keeps_target_order_names_and_options() {
        let p = resolve(
            r#"
[suite]
name = "shootout"
objects = 50
concurrency = 4
size = 1024
reps = 5
warmup = false
seed = 7

[output]
dir = "out"
format = "csv"

[targets.zeta]
url = "sqlite:/tmp/z.db"
synchronous = "full"

[targets.alpha]
url = "mem:"
"#,
        )
        .unwrap();
        assert_eq!(
            (p.objects, p.concurrency, p.size, p.reps, p.warmup, p.seed),
            (50, 4, 1024, 5, false, 7)
        );
        let names: Vec<&str> = p.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha"], "columns keep the file's order");
        assert_eq!(p.targets[0].config.options()["synchronous"], "full");
        assert_eq!(p.out, Some(PathBuf::from("out")));
        assert_eq!(p.format.as_ref().map(|f| f.value.as_str()), Some("csv"));
        let rec = p.record();
        assert_eq!(rec.targets[0].url, "sqlite:/tmp/z.db");
        assert_eq!(rec.size_bytes, 1024);
    }

    #[test]
    fn url_query_options_reach_the_driver() {
        let mut raw = RawPlan::default();
        raw.targets.push(RawTarget {
            name: None,
            url: Sp::new("sqlite:/x.db?synchronous=full".into(), Origin::Arg(1)),
            options: vec![],
            process: None,
        });
        raw.targets.push(RawTarget {
            name: None,
            url: Sp::new("sqlite:/y.db".into(), Origin::Arg(2)),
            options: vec![],
            process: None,
        });
        let p = raw.resolve(&Fake).unwrap();
        assert_eq!(p.targets[0].config.options()["synchronous"], "full");
        assert_eq!(
            p.targets[1].name, "sqlite-2",
            "same scheme twice gets a suffix"
        );
        assert_eq!(p.source, "command line");
    }

    #[test]
    fn invalid_toml_names_line_and_column() {
        let e = err("[suite]\nobjects = = 3\n");
        assert!(e.starts_with("plan.toml:2:11: invalid TOML:"), "{e}");
        assert!(e.contains("hint: see the plan format"), "{e}");
    }

    #[test]
    fn unknown_keys_are_named_with_a_suggestion() {
        assert_eq!(
            err("[suite]\nobjets = 3\n"),
            "plan.toml:2:1: unknown key `objets` in [suite]; did you mean \"objects\"? known keys: \
             name, topology, objects, concurrency, size, reps, warmup, seed, thousands, test_time, depth, width, sweep, samples"
        );
        assert_eq!(
            err("[sute]\n"),
            "plan.toml:1:2: unknown key `sute` in the plan's top level; did you mean \"suite\"? \
             known keys: suite, load, output, targets"
        );
        assert_eq!(
            err("[output]\nfmt = \"csv\"\n"),
            "plan.toml:2:1: unknown key `fmt` in [output]; known keys: dir, format"
        );
    }

    #[test]
    fn wrong_types_say_what_to_write() {
        assert_eq!(
            err("[suite]\nobjects = \"10\"\n"),
            "plan.toml:2:11: `objects` must be an integer, not a string\n  hint: write e.g. \
             objects = 1000 (no quotes)"
        );
        assert_eq!(
            err("[suite]\nwarmup = 1\n"),
            "plan.toml:2:10: `warmup` must be a boolean, not an integer\n  hint: write warmup = \
             true or warmup = false"
        );
        assert_eq!(
            err("suite = 3\n"),
            "plan.toml:1:9: `suite` must be a table, not an integer\n  hint: write it as a [suite] section"
        );
    }

    #[test]
    fn out_of_range_values_give_the_bound_and_the_default() {
        assert_eq!(
            err("[suite]\nobjects = 0\n"),
            "plan.toml:2:11: objects must be at least 1, got 0\n  hint: the default is 1000"
        );
        assert_eq!(
            err("[suite]\nconcurrency = 5000\n"),
            "plan.toml:2:15: concurrency must be at most 1024, got 5000\n  hint: each client is \
             an OS thread; the default is 2"
        );
        assert!(err("[suite]\nsize = 8\n").starts_with("plan.toml:2:8: size must be at least 16"));
        assert!(err("[suite]\nreps = 0\n").starts_with("plan.toml:2:8: reps must be at least 1"));
        assert_eq!(
            err("[suite]\nseed = -1\n"),
            "plan.toml:2:8: seed must not be negative\n  hint: use any integer from 0 to 2^63-1"
        );
        let e = err("[suite]\nobjects = 1000000\nconcurrency = 100\n");
        assert!(
            e.starts_with("plan.toml:2:11: objects × concurrency × size"),
            "{e}"
        );
        assert!(e.contains("hint: lower one of"), "{e}");
        assert_eq!(
            err("[output]\ndir = \" \"\n"),
            "plan.toml:2:7: output directory is empty\n  hint: name a directory, or leave it out \
             for ./dyno-results/<time>/"
        );
    }

    #[test]
    fn unknown_suite_and_scheme_get_suggestions() {
        assert_eq!(
            err("[suite]\nname = \"shootot\"\n"),
            "plan.toml:2:8: unknown suite \"shootot\"; did you mean \"shootout\"? suites: shootout, magma, load, namespace"
        );
        let e = err("[targets.a]\nurl = \"sqlit:/tmp/a.db\"\n");
        assert!(
            e.starts_with(
                "plan.toml:2:7: unknown target scheme \"sqlit\"; did you mean \"sqlite\"? schemes: mem, sqlite, http"
            ),
            "{e}"
        );
        let e = err("[targets.a]\nurl = \"/tmp/a.db\"\n");
        assert!(
            e.starts_with("plan.toml:2:7: \"/tmp/a.db\" is not a target URL"),
            "{e}"
        );
    }

    #[test]
    fn target_problems_point_at_the_target_or_the_option() {
        assert_eq!(
            err("[targets.a]\nsynchronous = \"full\"\n"),
            "plan.toml:1:10: target `a` has no url\n  hint: add e.g. url = \"sqlite:/tmp/dyno.db\" to it"
        );
        assert_eq!(
            err("[targets.a]\nurl = \"sqlite:/a.db\"\nsynchronous = \"fast\"\n"),
            "plan.toml:3:15: sqlite: option synchronous: \"fast\" is not allowed\n  hint: choose normal or full"
        );
        assert_eq!(
            err("[targets.a]\nurl = \"sqlite:/a.db?synchronous=full\"\nsynchronous = \"full\"\n"),
            "plan.toml:3:1: option \"synchronous\" is set both here and in the URL\n  hint: keep one of the two"
        );
        assert_eq!(
            err("[targets.\"a b\"]\nurl = \"mem:\"\n"),
            "plan.toml:1:10: target name \"a b\" is not allowed\n  hint: use up to 64 letters, \
             digits, '_', '-' or '.'"
        );
        assert_eq!(
            err("[targets.a]\nurl = \"mem:\"\nsize = [1]\n"),
            "plan.toml:3:8: target option `size` must be a string, number or boolean, not an array"
        );
    }

    #[test]
    fn flags_are_named_as_flags() {
        let raw = RawPlan {
            objects: Some(Sp::new(-5, Origin::Flag("--objects"))),
            ..RawPlan::default()
        };
        assert_eq!(
            raw.resolve(&Fake).unwrap_err().to_string(),
            "--objects: objects must be at least 1, got -5\n  hint: the default is 1000"
        );
    }

    #[test]
    fn a_load_plan_with_stages_becomes_an_open_loop_profile() {
        let p = resolve(
            "[load]\nstages = [{ rate = 1000, duration = \"2s\" }, { rate = \"1000..3000\", duration = \"1s\" }]\narrival = \"poisson\"\n[targets.api]\nurl = \"http://h/\"\n",
        )
        .unwrap();
        assert_eq!(p.suite, "load", "request targets choose the load suite");
        assert!(!p.warmup, "load has no warm-up unless asked");
        assert_eq!((p.concurrency, p.reps), (10, 1));
        let l = p.load.as_ref().unwrap();
        let LoadModel::Open {
            profile,
            arrival,
            max_connections,
        } = &l.model
        else {
            panic!()
        };
        assert_eq!(*arrival, ArrivalKind::Poisson);
        assert_eq!(*max_connections, 10);
        assert_eq!(profile.stages.len(), 2);
        assert_eq!(profile.expected_count(), 2000.0 + 2000.0);
        let rec = p.record().load.unwrap();
        assert_eq!((rec.model.as_str(), rec.stages.len()), ("open", 2));
    }

    #[test]
    fn a_ramp_then_holds_the_top_rate_for_the_rest_of_the_duration() {
        let p = resolve(
            "[load]\nrate = \"1000..3000\"\nramp = \"1s\"\nduration = \"3s\"\n[targets.api]\nurl = \"http://h/\"\n",
        )
        .unwrap();
        let LoadModel::Open { profile, .. } = &p.load.unwrap().model else {
            panic!()
        };
        assert_eq!(profile.duration_ns(), 3_000_000_000);
        assert_eq!(profile.rate_at(500_000_000), Some(2000.0));
        assert_eq!(profile.rate_at(2_000_000_000), Some(3000.0));
    }

    #[test]
    fn closed_loop_defaults_and_gobench_counts() {
        let p = resolve("[targets.api]\nurl = \"http://h/\"\n").unwrap();
        let l = p.load.unwrap();
        assert!(matches!(
            l.model,
            LoadModel::Closed {
                stop: Stop::Duration {
                    ns: DEFAULT_DURATION_NS
                }
            }
        ));
        assert_eq!(l.timeout_ns, DEFAULT_TIMEOUT_NS);
        let p = resolve("[load]\nrequests = 50\n[targets.api]\nurl = \"http://h/\"\n").unwrap();
        assert!(matches!(
            p.load.unwrap().model,
            LoadModel::Closed {
                stop: Stop::Count(50)
            }
        ));
    }

    #[test]
    fn load_mistakes_are_named() {
        assert_eq!(
            err("[load]\nrat = 5\n[targets.api]\nurl = \"http://h/\"\n"),
            "plan.toml:2:1: unknown key `rat` in [load]; did you mean \"rate\"? known keys: duration, \
             requests, rate, ramp, stages, arrival, max_connections, threads, timeout, interval, hlog, burst, coalesce, max_lag"
        );
        assert_eq!(
            err("[load]\nstages = [{ rate = 5 }]\n[targets.api]\nurl = \"http://h/\"\n"),
            "plan.toml:2:11: a stage needs a rate and a duration\n  hint: write { rate = 1000, duration = \"30s\" }"
        );
        assert_eq!(
            err("[load]\nrate = 100\n"),
            "plan.toml:2:8: rate is a setting of the load suite, and this run is shootout\n  hint: load settings apply to http:// and tcp:// targets"
        );
        assert_eq!(
            err("[load]\ninterval = \"1ms\"\n[targets.api]\nurl = \"http://h/\"\n"),
            "plan.toml:2:12: interval must be between 10ms and 1h\n  hint: the time series keeps one histogram per interval"
        );
    }

    #[test]
    fn topologies_expand_each_target_into_a_column_each() {
        let mut raw =
            parse("[suite]\ntopology = \"inproc, wan\"\n[targets.a]\nurl = \"mem:\"\n").unwrap();
        let expanded = expand_topologies(&raw.targets, raw.topology.as_ref().unwrap()).unwrap();
        let names: Vec<&str> = expanded
            .iter()
            .map(|t| t.name.as_ref().unwrap().value.as_str())
            .collect();
        assert_eq!(names, ["a-inproc", "a-wan"]);
        assert_eq!(expanded[1].options.last().unwrap().1.value, "wan");
        raw.targets.clear();
        let expanded = expand_topologies(&raw.targets, raw.topology.as_ref().unwrap()).unwrap();
        assert_eq!(expanded[0].url.value, "host:", "no target: dyno's own host");
        assert_eq!(
            err("[suite]\ntopology = \",\"\n"),
            "plan.toml:2:12: no topology named\n  hint: write e.g. inproc,loopback,lan,wan"
        );
        assert_eq!(
            err("[suite]\ntopology = \"lan\"\n[targets.api]\nurl = \"http://h/\"\n"),
            "plan.toml:2:12: http: targets run where their address says; topologies apply to host: \
             (dyno's own host)\n  hint: drop --topology, or run host: (no target) in several topologies"
        );
    }

    #[test]
    fn split_url_parts() {
        let u = split_url("sqlite:/tmp/a.db?synchronous=full&x").unwrap();
        assert_eq!(u.scheme, "sqlite");
        assert_eq!(u.rest, "/tmp/a.db");
        assert_eq!(u.query, [("synchronous", "full"), ("x", "true")]);
        assert!(split_url("/tmp/a").is_none());
        assert!(split_url(":x").is_none());
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        /// A plan that uses most of the reader: every section, spans, arrays of tables.
        const VALID: &str = "[suite]\nname = \"load\"\nreps = 2\nwarmup = false\n\n[load]\nduration = \"2s\"\nmax_connections = 16\narrival = \"poisson\"\nmax_lag = \"25%\"\nstages = [{ rate = \"10..20\", duration = \"1s\" }]\n\n[output]\nformat = \"csv\"\ndir = \"out\"\n\n[targets.web]\nurl = \"http://127.0.0.1:8080/x\"\n\n[targets.api]\nurl = \"http://[::1]:8081/y\"\n";

        /// Reads and resolves `text`: a plan or an error, never a panic; an error names its place.
        fn read(text: &str) {
            match parse(text).and_then(|raw| raw.resolve(&Fake)) {
                Ok(_) => {}
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1000))]

            #[test]
            fn any_text_is_a_plan_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
                read(&String::from_utf8_lossy(&bytes));
            }

            #[test]
            fn mutated_plans_are_plans_or_errors(
                edits in prop::collection::vec((any::<usize>(), 0x20u8..0x7f), 1..6),
                cut in any::<usize>(),
            ) {
                let mut b = VALID.as_bytes().to_vec();
                for (at, v) in edits {
                    let at = at % b.len();
                    b[at] = v;
                }
                b.truncate(cut % (b.len() + 1) + b.len() / 2);
                read(&String::from_utf8_lossy(&b));
            }

            #[test]
            fn any_url_is_a_target_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..120)) {
                let url = String::from_utf8_lossy(&bytes).into_owned();
                let _ = split_url(&url);
                let raw = RawPlan {
                    targets: vec![RawTarget {
                        name: None,
                        url: Sp::new(url, Origin::Arg(1)),
                        options: Vec::new(),
                        process: None,
                    }],
                    ..RawPlan::default()
                };
                let _ = raw.resolve(&Fake);
            }
        }

        #[test]
        fn the_fuzzed_plan_is_itself_valid() {
            parse(VALID).unwrap().resolve(&Fake).unwrap();
        }
    }
}
