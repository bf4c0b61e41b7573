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
//! name = "shootout"      # a suite of the registry (`dyno run --help` lists them)
//! objects = 1000         # per client (-n)
//! concurrency = 2        # clients (-c)
//! size = 300             # bytes per object (a suite's settings: here, or in its own
//! reps = 3               #   section, e.g. [load] duration = "10s")
//! warmup = true
//! seed = 1
//!
//! [output]
//! dir = "dyno-results/mine"
//! format = "table"       # an output format (`dyno run --help` lists them)
//!
//! [targets.sqlite_full]  # one column per target, in file order
//! url = "sqlite:/tmp/dyno_full.db"
//! synchronous = "full"   # any other key is a driver option
//! ```

mod file;
pub mod keys;
pub mod setting;

pub use setting::{Catalogue, Given, Kind, Setting, Value};

use crate::driver::TargetConfig;
use crate::suggest::did_you_mean;
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
    /// `[[targets.NAME.requests]]`: a mix of named requests sent instead of the one the URL
    /// says.
    pub requests: Vec<RawRequest>,
}

/// One `[[targets.NAME.requests]]` table: its keys and values as written (an array of
/// header lines joined by line breaks).
#[derive(Debug, Clone, PartialEq)]
pub struct RawRequest {
    pub at: Origin,
    pub keys: Vec<(Sp<String>, Sp<String>)>,
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
    /// `[[targets.NAME.process.members]]`: a cluster of processes dyno starts, in order.
    pub members: Vec<RawMember>,
    /// A cluster's role query: a command whose output names the primary's port (`{port.NAME}`
    /// filled in), asked when a fault aims at `member = "primary"`.
    pub role: Option<Sp<String>>,
    /// `link = true`: dyno's link in front of each member but the helpers (`aux`), each member
    /// listening on `{listen.port}` (and `{listen.peer}`) and reached by everyone else through
    /// `{port}` (and `{peer}`) — what `partition` and `slow` faults act on.
    pub link: Option<Sp<bool>>,
}

/// One member of a cluster as written. Its `cmd`, `ready` and `file` may use `{port}` and
/// `{peer}` (free ports on 127.0.0.1 dyno allocates for it), `{listen.port}` and
/// `{listen.peer}` (where it listens: the same, unless a link stands in front of it),
/// `{port.OTHER}` and `{peer.OTHER}` (another member's), `{dir}` (the results directory) and
/// `{file}` (where its `file` text is written before it starts); the target's URL may use
/// `{port.NAME}`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawMember {
    pub at: Origin,
    pub name: Sp<String>,
    pub cmd: Sp<String>,
    pub ready: Option<Sp<String>>,
    pub file: Option<Sp<String>>,
    /// A helper of the cluster (a sentinel), not a server of its data: the `any` and
    /// `one-replica` aims leave it alone.
    pub aux: Option<Sp<bool>>,
}

/// One member of a cluster, resolved: its ports known, `{dir}` and `{file}` filled in when it
/// starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpec {
    pub name: String,
    /// Where the others reach it: its own port and its peers' (`{port}`, `{peer}`).
    pub port: u16,
    pub peer: u16,
    /// Behind a link: the ports it listens on (`{listen.port}`, `{listen.peer}`), the link's
    /// in front of them on `port` and `peer`.
    pub listen: Option<[u16; 2]>,
    /// A helper (a sentinel), left alone by the `any` and `one-replica` aims.
    pub aux: bool,
    pub cmd: String,
    pub ready: std::net::SocketAddr,
    pub file: Option<String>,
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
    /// A cluster dyno starts, member after member (each ready before the next starts), and
    /// watches and stops like one process each.
    Members {
        members: Vec<MemberSpec>,
        ready_timeout: std::time::Duration,
        /// The role query, its ports filled in.
        role: Option<String>,
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
            ProcessSpec::Members { members, .. } => {
                let each: Vec<String> = (members.iter())
                    .map(|m| match m.listen {
                        Some(l) => format!(
                            "{} (127.0.0.1:{}, behind a link to :{}): {}",
                            m.name, m.port, l[0], m.cmd
                        ),
                        None => format!("{} (127.0.0.1:{}): {}", m.name, m.port, m.cmd),
                    })
                    .collect();
                write!(f, "started by dyno, members: {}", each.join("; "))
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
    /// The suites' settings written (`-n`, `depth = 10`, `[load] rate`…), each described once
    /// by the suite that reads it ([`Setting`]).
    pub settings: Given,
    pub reps: Option<Sp<i64>>,
    pub warmup: Option<Sp<bool>>,
    pub seed: Option<Sp<i64>>,
    /// `--quick`: smaller defaults (100 objects, 1 repetition) for a fast look.
    pub quick: bool,
    /// `PARAM=LIST` or `PARAM=A..B[:STEP]`, each a sweep of its own.
    pub sweeps: Vec<Sp<String>>,
    /// Samples per point: the repetitions, named as sweeps name them.
    pub samples: Option<Sp<i64>>,
    pub targets: Vec<RawTarget>,
    /// `--pid`: processes to watch for the whole run.
    pub pids: Vec<Sp<i64>>,
    /// `--process-name`: processes to watch, by name.
    pub process_names: Vec<Sp<String>>,
    /// `[[faults]]` and `--fault`: what to do to the targets' processes, and when.
    pub faults: Vec<RawFault>,
    /// `levels = [...]` (`--levels`): NorduGrid's levels of disturbance, each run in turn.
    pub levels: Vec<Sp<String>>,
    /// How often the unstable levels disturb (`level_every`, 60s by default).
    pub level_every: Option<Sp<String>>,
    /// `[thresholds] checks = [...]` and `--threshold`: the run's pass/fail criteria.
    pub thresholds: Vec<Sp<String>>,
    /// `--find-max`: a capacity search's objectives (the highest rate at which all hold).
    pub find_max: Vec<Sp<String>>,
    /// `[thresholds] baseline` and `--compare`: the run relative thresholds are held to.
    pub baseline: Option<Sp<String>>,
    /// `[thresholds] abort_on_fail` and `--abort-on-fail`: stop the run at the first threshold a
    /// load case breaks while it runs; `abort_after`: from how far into each repetition.
    pub abort_on_fail: Option<Sp<bool>>,
    pub abort_after: Option<Sp<String>>,
    /// `[check] model` and `--check`: the history kept and checked; `budget`: the time per key.
    pub check: Option<Sp<String>>,
    pub check_budget: Option<Sp<String>>,
    pub out: Option<Sp<String>>,
    pub format: Option<Sp<String>>,
}

/// A fault as written (`--fault`, `[[faults]]`): its place, and its words (`action` among
/// them); `engine::fault` resolves it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawFault {
    pub at: Option<Origin>,
    pub words: Vec<(Sp<String>, Sp<String>)>,
}

/// One stage of an open-loop profile, as written (`{ rate = "1000..5000", duration = "30s" }`).
#[derive(Debug, Clone, PartialEq)]
pub struct RawStage {
    pub rate: Sp<String>,
    pub duration: Sp<String>,
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

/// One sweep: a parameter and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// The parameter, as its suite names it (`clients`, `objects`, `size`, `rate`, …).
    pub param: &'static str,
    pub values: Vec<u64>,
}

/// The most points one sweep may have.
pub const MAX_SWEEP_POINTS: usize = 1000;

/// zodbshootout's defaults: 1000 objects per client, 2 clients, 300-byte objects; and 5
/// repetitions where zodbshootout takes the best of 3, so that two runs can be compared with
/// the defaults (a test needs 4 a side, `results::compare::MIN_REPS`; one more keeps that
/// when a repetition fails).
pub const DEFAULT_OBJECTS: u64 = 1000;
pub const DEFAULT_CLIENTS: u32 = 2;
pub const DEFAULT_SIZE: usize = 300;
pub const DEFAULT_REPS: u32 = 5;
/// `--quick`: enough objects for stable figures in well under a second per target.
pub const QUICK_OBJECTS: u64 = 100;
pub const QUICK_REPS: u32 = 1;
pub const DEFAULT_SEED: u64 = 1;

/// Objects per client are numbered in 24 bits of the key (see `shootout::key`).
pub const MAX_OBJECTS: u64 = (1 << 24) - 1;
/// One OS thread per client; past this the machine, not the target, is measured.
pub const MAX_CLIENTS: u32 = 1024;
/// Each object starts with a 16-byte header (its key and version) that reads are checked against.
pub const MIN_SIZE: usize = 16;
/// Objects are held whole in memory by the client cache; 64 MiB keeps one object per op sane.
pub const MAX_SIZE: usize = 64 << 20;
pub const MAX_REPS: u32 = 1000;

/// Generator threads at most: beyond the cores they only contend; this bounds a typo.
pub const MAX_GENERATOR_THREADS: usize = 256;
/// The client object caches hold every object of every client: bounded to keep dyno's memory sane.
pub const MAX_CACHE_BYTES: u64 = 4 << 30;

/// The time series' interval ([`setting::shared::INTERVAL`]), in ns: 1 s unless the plan
/// says, 10 ms to 1 h.
pub fn interval_ns(v: Option<&Sp<String>>) -> Result<u64, PlanError> {
    let Some(v) = v else {
        return Ok(1_000_000_000);
    };
    let d = crate::units::parse_duration(&v.value)
        .map_err(|e| PlanError::new(v.at.clone(), format!("interval: {e}")))?;
    match d.as_nanos() {
        ns if (10_000_000..=3_600_000_000_000).contains(&ns) => Ok(ns as u64),
        _ => Err(
            PlanError::new(v.at.clone(), "interval must be between 10ms and 1h")
                .hint("the time series keeps one histogram per interval"),
        ),
    }
}

/// A duration setting (`test_time = "1s"`): more than 0 and at most `max_s` seconds.
pub fn parse_duration_setting(
    v: &Sp<String>,
    name: &str,
    max_s: u64,
    hint: &str,
) -> Result<u64, PlanError> {
    let d = crate::units::parse_duration(&v.value)
        .map_err(|e| PlanError::new(v.at.clone(), format!("{name}: {e}")))?;
    if d.is_zero() || d.as_secs() > max_s {
        return Err(PlanError::new(
            v.at.clone(),
            format!(
                "{name} must be more than 0 and at most {}",
                humantime::format_duration(std::time::Duration::from_secs(max_s))
            ),
        )
        .hint(hint.to_string()));
    }
    Ok(d.as_nanos() as u64)
}

/// `1,10,100` or `1..30` or `100..1000:100` (inclusive): the values, in the order given.
pub fn parse_values(spec: &str) -> Result<Vec<u64>, BadValue> {
    let int = |t: &str| {
        t.trim()
            .replace('_', "")
            .parse::<u64>()
            .map_err(|_| BadValue(format!("{t:?} is not a whole number")))
    };
    let values: Vec<u64> = if let Some((a, rest)) = spec.split_once("..") {
        let (b, step) = match rest.split_once(':') {
            Some((b, step)) => (b, int(step)?),
            None => (rest, 1),
        };
        let (a, b) = (int(a)?, int(b)?);
        if step == 0 {
            return Err(BadValue("the step must be at least 1".into()));
        }
        if b < a {
            return Err(BadValue(format!(
                "the range {a}..{b} is empty (it counts up)"
            )));
        }
        if (b - a) / step >= MAX_SWEEP_POINTS as u64 {
            return Err(BadValue(format!(
                "{a}..{b} in steps of {step} is more than {MAX_SWEEP_POINTS} points"
            )));
        }
        (a..=b).step_by(step as usize).collect()
    } else {
        spec.split(',').map(int).collect::<Result<_, _>>()?
    };
    if values.is_empty() {
        return Err(BadValue("no values".into()));
    }
    if values.len() > MAX_SWEEP_POINTS {
        return Err(BadValue(format!("more than {MAX_SWEEP_POINTS} points")));
    }
    Ok(values)
}

pub fn bounded(
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

pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}
