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

use crate::driver::{ConfigError, TargetConfig};
use crate::suggest::did_you_mean;
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

/// The suites dyno knows.
pub const SUITES: &[&str] = &["shootout"];

/// One target as written.
#[derive(Debug, Clone, PartialEq)]
pub struct RawTarget {
    /// The column name (a plan file's table key); derived from the scheme when absent.
    pub name: Option<Sp<String>>,
    pub url: Sp<String>,
    /// Driver options (from the plan file; URL query options are added at resolution).
    pub options: Vec<(Sp<String>, Sp<String>)>,
}

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
    pub targets: Vec<RawTarget>,
    pub out: Option<Sp<String>>,
    pub format: Option<Sp<String>>,
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
}

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
                })
                .collect(),
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

const TOP_KEYS: &[&str] = &["suite", "output", "targets"];
const SUITE_KEYS: &[&str] = &[
    "name",
    "objects",
    "concurrency",
    "size",
    "reps",
    "warmup",
    "seed",
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
                            "objects" => plan.objects = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "concurrency" => {
                                plan.concurrency = Some(Sp::new(expect_int(&src, k, v)?, at))
                            }
                            "size" => plan.size = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "reps" => plan.reps = Some(Sp::new(expect_int(&src, k, v)?, at)),
                            "seed" => plan.seed = Some(Sp::new(expect_int(&src, k, v)?, at)),
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
        let suite = match self.suite {
            None => "shootout".to_string(),
            Some(s) if SUITES.contains(&s.value.as_str()) => s.value,
            Some(s) => {
                return Err(PlanError::new(
                    s.at,
                    format!(
                        "unknown suite {:?}; {}suites: {}",
                        s.value,
                        did_you_mean(&s.value, SUITES.iter().copied()),
                        SUITES.join(", ")
                    ),
                ));
            }
        };
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
        let concurrency = bounded(
            self.concurrency.clone(),
            "concurrency",
            DEFAULT_CONCURRENCY as u64,
            1,
            MAX_CONCURRENCY as u64,
            "each client is an OS thread",
        )? as u32;
        let size = bounded(
            self.size.clone(),
            "size",
            DEFAULT_SIZE as u64,
            MIN_SIZE as u64,
            MAX_SIZE as u64,
            "each object carries a 16-byte header that reads are verified against",
        )? as usize;
        let reps = bounded(
            self.reps,
            "reps",
            if self.quick { QUICK_REPS } else { DEFAULT_REPS } as u64,
            1,
            MAX_REPS as u64,
            "each repetition writes a fresh set of objects",
        )? as u32;
        let seed = match self.seed {
            None => DEFAULT_SEED,
            Some(s) if s.value >= 0 => s.value as u64,
            Some(s) => {
                return Err(PlanError::new(s.at, "seed must not be negative")
                    .hint("use any integer from 0 to 2^63-1"));
            }
        };
        let cache_bytes = objects * concurrency as u64 * size as u64;
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
        let out = match self.out {
            Some(o) if o.value.trim().is_empty() => {
                return Err(PlanError::new(o.at, "output directory is empty")
                    .hint("name a directory, or leave it out for ./dyno-results/<time>/"));
            }
            o => o.map(|o| PathBuf::from(o.value)),
        };

        let raw_targets = if self.targets.is_empty() {
            resolver
                .default_urls()
                .into_iter()
                .map(|u| RawTarget {
                    name: None,
                    url: Sp::new(u.to_string(), Origin::Default),
                    options: Vec::new(),
                })
                .collect()
        } else {
            self.targets
        };
        let mut targets: Vec<PlanTarget> = Vec::new();
        for raw in raw_targets {
            let t = resolve_target(raw, resolver, &targets)?;
            targets.push(t);
        }

        Ok(Plan {
            source: self
                .file
                .map_or_else(|| "command line".to_string(), |p| p.display().to_string()),
            suite,
            objects,
            concurrency,
            size,
            reps,
            warmup: self.warmup.is_none_or(|w| w.value),
            seed,
            targets,
            out,
            format: self.format,
        })
    }
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
    Ok(PlanTarget {
        name,
        url: url.value.clone(),
        config,
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
    for (k, v) in table.iter() {
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{DriverError, Store};

    struct FakeConfig(BTreeMap<String, String>);

    impl TargetConfig for FakeConfig {
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

    /// Two schemes: `mem` (no options) and `sqlite` (option `synchronous` = normal | full).
    struct Fake;

    impl Resolver for Fake {
        fn schemes(&self) -> Vec<&'static str> {
            vec!["mem", "sqlite"]
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
            Ok(Box::new(FakeConfig(options.clone())))
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
        });
        raw.targets.push(RawTarget {
            name: None,
            url: Sp::new("sqlite:/y.db".into(), Origin::Arg(2)),
            options: vec![],
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
             name, objects, concurrency, size, reps, warmup, seed"
        );
        assert_eq!(
            err("[sute]\n"),
            "plan.toml:1:2: unknown key `sute` in the plan's top level; did you mean \"suite\"? \
             known keys: suite, output, targets"
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
            "plan.toml:2:8: unknown suite \"shootot\"; did you mean \"shootout\"? suites: shootout"
        );
        let e = err("[targets.a]\nurl = \"sqlit:/tmp/a.db\"\n");
        assert!(
            e.starts_with(
                "plan.toml:2:7: unknown target scheme \"sqlit\"; did you mean \"sqlite\"? schemes: mem, sqlite"
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
    fn split_url_parts() {
        let u = split_url("sqlite:/tmp/a.db?synchronous=full&x").unwrap();
        assert_eq!(u.scheme, "sqlite");
        assert_eq!(u.rest, "/tmp/a.db");
        assert_eq!(u.query, [("synchronous", "full"), ("x", "true")]);
        assert!(split_url("/tmp/a").is_none());
        assert!(split_url(":x").is_none());
    }
}
