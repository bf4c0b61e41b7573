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

mod file;
mod resolve;
#[cfg(test)]
mod tests;

pub use resolve::{UrlParts, bounded, na_reason, parse_duration_setting, split_url};

use crate::driver::{ConfigError, Family, TargetConfig};
use crate::suggest::did_you_mean;
use crate::suite::{Settings, Suite};
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

/// A value as written that cannot be used, and why; the plan's error adds where it was written
/// and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadValue(pub String);

impl From<BadValue> for String {
    fn from(b: BadValue) -> String {
        b.0
    }
}

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

/// What resolution needs from the drivers: their schemes and a pure `configure`; and the suites.
pub trait Resolver {
    /// The suites a plan may name, in the order a run without one tries them.
    fn suites(&self) -> &[&'static dyn Suite] {
        &crate::suites::BUILT_IN
    }
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
    pub suite: &'static dyn Suite,
    /// The suite's own settings (see [`crate::suite::settings`]).
    pub settings: Box<dyn Settings>,
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
    /// Each sweep varies one parameter over its values, the others at the plan's.
    pub sweeps: Vec<Sweep>,
    /// Processes watched for the whole run, whatever the target (`--pid`, `--process-name`).
    pub watch_pids: Vec<u32>,
    pub watch_names: Vec<String>,
}

/// One sweep: a parameter and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// The parameter, as its suite names it (`clients`, `objects`, `size`, `rate`, …).
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

impl Plan {
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
        };
        self.settings.record(&mut r);
        r
    }
}
