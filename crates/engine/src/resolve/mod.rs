//! The one resolution of a raw plan: values checked against their bounds, defaults filled in,
//! target URLs handed to their drivers, sweeps and topologies expanded.

use crate::driver::{ConfigError, Family, TargetConfig};
use crate::plan::setting::shared;
use crate::plan::*;
use crate::suggest::did_you_mean;
use crate::suite::{Common, Plan, Suite};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[cfg(test)]
mod tests;

/// What resolution needs from the drivers: their schemes and a pure `configure`; and the suites.
pub trait Resolver {
    /// The suites a plan may name, in the order a run without one tries them.
    fn suites(&self) -> &[&'static dyn Suite];
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

impl RawPlan {
    /// Checks every value, fills defaults and configures each target through `resolver`.
    pub fn resolve(self, resolver: &dyn Resolver) -> Result<Plan, PlanError> {
        let suites = resolver.suites();
        let named = match &self.suite {
            None => None,
            Some(s) => match suites.iter().find(|x| x.answers_to(&s.value)) {
                Some(x) => Some((*x, s.at.clone())),
                None => {
                    let names: Vec<&str> = suites.iter().map(|s| s.name()).collect();
                    return Err(PlanError::new(
                        s.at.clone(),
                        format!(
                            "unknown suite {:?}; {}suites: {}",
                            s.value,
                            did_you_mean(&s.value, names.iter().copied()),
                            names.join(", ")
                        ),
                    ));
                }
            },
        };
        let out = match &self.out {
            Some(o) if o.value.trim().is_empty() => {
                return Err(PlanError::new(o.at.clone(), "output directory is empty")
                    .hint("name a directory, or leave it out for ./dyno-results/<time>/"));
            }
            o => o.as_ref().map(|o| PathBuf::from(&o.value)),
        };

        // Targets first: their families decide the suite when none is named.
        let (targets, target_at) = self.resolve_targets(resolver, named.as_ref())?;
        let suite: &'static dyn Suite = match named {
            Some((s, _)) => s,
            None => suites
                .iter()
                .find(|s| (targets.iter()).all(|t| t.config.families().contains(&s.family())))
                .or(suites.first())
                .copied()
                .expect("a registry holds at least one suite"),
        };
        check_families(suite, &targets, &target_at)?;
        self.only_settings_of(suite, suites)?;

        let Shared {
            objects,
            concurrency,
            threads,
            size,
            reps,
            seed,
        } = self.shared(suite)?;
        let sweeps = self.resolve_sweeps(suite)?;
        let settings = suite.resolve(
            &self,
            &Common {
                objects,
                concurrency,
                size,
                seed,
                quick: self.quick,
                sweeps: &sweeps,
            },
        )?;
        let (watch_pids, watch_names) = self.watched()?;
        // What the faults may act on: a target's process, or each member of its cluster.
        let started: Vec<String> = (targets.iter())
            .flat_map(|t| match &t.process {
                Some(ProcessSpec::Start { .. }) => vec![t.name.clone()],
                Some(ProcessSpec::Members { members, .. }) => (members.iter())
                    .map(|m| format!("{}/{}", t.name, m.name))
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        let started: Vec<&str> = started.iter().map(String::as_str).collect();
        let aux: Vec<String> = (targets.iter())
            .flat_map(|t| match &t.process {
                Some(ProcessSpec::Members { members, .. }) => (members.iter())
                    .filter(|m| m.aux)
                    .map(|m| format!("{}/{}", t.name, m.name))
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        let aux: Vec<&str> = aux.iter().map(String::as_str).collect();
        let has_role = |name: &str| {
            (targets.iter()).any(|t| {
                t.name == name
                    && matches!(&t.process, Some(ProcessSpec::Members { role: Some(_), .. }))
            })
        };
        let linked: Vec<String> = (targets.iter())
            .flat_map(|t| match &t.process {
                Some(ProcessSpec::Members { members, .. }) => (members.iter())
                    .filter(|m| m.listen.is_some())
                    .map(|m| format!("{}/{}", t.name, m.name))
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        let mut faults = Vec::new();
        for raw in &self.faults {
            let f = raw.resolve_among(&started, &aux)?;
            if f.action.through_link()
                && let Some(m) = f.members.iter().find(|m| !linked.contains(m))
            {
                return Err(PlanError::new(
                    raw.at.clone().unwrap_or(Origin::Default),
                    format!("a {} fault acts through a member's link, and {m} has none", f.action.name()),
                )
                .hint(format!(
                    "set link = true in [targets.{}.process] (its members, helpers excepted, then listen on {{listen.port}} and announce {{port}}); the link stands in front of cluster members only",
                    f.target
                )));
            }
            if f.aim != crate::fault::Aim::Turn && !has_role(&f.target) {
                return Err(PlanError::new(
                    raw.at.clone().unwrap_or(Origin::Default),
                    format!("member = \"primary\" or \"one-replica\" needs {}'s role query", f.target),
                )
                .hint(format!(
                    "add role = \"a command whose output names the primary's port\" to [targets.{}.process], e.g. redis-cli -p {{port.s1}} sentinel get-master-addr-by-name m",
                    f.target
                )));
            }
            faults.push(f);
        }
        if let (Some(l), Some(f)) = (self.levels.first(), self.faults.first()) {
            return Err(PlanError::new(
                f.at.clone().unwrap_or(Origin::Default),
                "a run of levels has the levels' own faults",
            )
            .hint(format!(
                "drop [[faults]] (--fault), or drop levels (given at {l})",
                l = l.at
            )));
        }
        let levels = crate::fault::levels(
            &self.levels,
            self.level_every.as_ref(),
            &(targets.iter())
                .map(|t| match &t.process {
                    Some(ProcessSpec::Members { members, role, .. }) => (
                        t.name.clone(),
                        Some(
                            (members.iter())
                                .map(|m| format!("{}/{}", t.name, m.name))
                                .collect(),
                        ),
                        role.is_some(),
                    ),
                    _ => (t.name.clone(), None, false),
                })
                .collect::<Vec<_>>(),
            &aux,
        )?;
        if let (None, Some(e)) = (self.levels.first(), &self.level_every) {
            return Err(PlanError::new(e.at.clone(), "level_every is a setting of a run of levels")
                .hint("add levels = [\"centralized\", \"stable\", \"unstable-clients\", \"all-unstable\", \"kill-master\"], or drop level_every"));
        }
        let thresholds = (self.thresholds.iter())
            .map(|t| {
                results::thresholds::Threshold::parse(&t.value)
                    .map_err(|e| PlanError::new(t.at.clone(), e.message).hint(e.hint))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let (None, Some((t, _))) = (
            &self.baseline,
            (self.thresholds.iter().zip(&thresholds)).find(|(_, p)| p.baseline),
        ) {
            return Err(PlanError::new(
                t.at.clone(),
                format!("threshold {:?} is relative to a baseline, and the run names none", t.value),
            )
            .hint("name the run it is held to: --compare RUN, or baseline = \"@baseline:main\" under [thresholds]"));
        }
        let abort_on = self.abort_on_fail.as_ref().filter(|a| a.value);
        let abort_after = match (abort_on, &self.abort_after) {
            (None, Some(a)) => {
                return Err(PlanError::new(a.at.clone(), "abort_after is a setting of abort_on_fail")
                    .hint("add abort_on_fail = true under [thresholds] (or --abort-on-fail), or drop abort_after"));
            }
            (Some(on), _) if thresholds.is_empty() => {
                return Err(PlanError::new(
                    on.at.clone(),
                    "abort_on_fail, and no threshold to abort on",
                )
                .hint("add checks = [\"p99 < 10ms\"] under [thresholds], or --threshold"));
            }
            (None, None) => None,
            (Some(_), None) => Some(DEFAULT_ABORT_AFTER),
            (Some(_), Some(a)) => Some(crate::units::parse_duration(&a.value).map_err(|_| {
                PlanError::new(a.at.clone(), format!("{:?} is not a duration", a.value))
                    .hint("write e.g. abort_after = \"5s\" (0s checks from the first interval)")
            })?),
        };
        Ok(Plan {
            levels,
            thresholds,
            abort_after,
            baseline: None,
            baseline_ref: self.baseline,
            watch_pids,
            watch_names,
            shard: None,
            faults,
            source: self
                .file
                .map_or_else(|| "command line".to_string(), |p| p.display().to_string()),
            suite,
            settings,
            objects,
            concurrency,
            threads,
            size,
            reps,
            warmup: self.warmup.map_or(suite.default_warmup(), |w| w.value),
            seed,
            targets,
            out,
            format: self.format,
            sweeps,
        })
    }

    /// The settings every suite has, checked against their bounds (`-c`'s are the suite's).
    fn shared(&self, suite: &dyn Suite) -> Result<Shared, PlanError> {
        let clients = suite.clients();
        let concurrency = bounded(
            self.settings.int(&shared::CONCURRENCY),
            "concurrency",
            clients.default,
            1,
            clients.max,
            clients.why,
        )? as u32;
        let objects = bounded(
            self.settings.int(&shared::OBJECTS),
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
            self.settings.int(&shared::SIZE),
            "size",
            DEFAULT_SIZE as u64,
            MIN_SIZE as u64,
            MAX_SIZE as u64,
            "each object carries a 16-byte header that reads are verified against",
        )? as usize;
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
            suite.default_reps(self.quick) as u64,
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
        let threads = match &self.settings.int(&shared::THREADS) {
            None => crate::fiber::default_threads(),
            Some(t) if !(1..=MAX_GENERATOR_THREADS as i64).contains(&t.value) => {
                return Err(PlanError::new(
                    t.at.clone(),
                    format!("threads must be between 1 and {MAX_GENERATOR_THREADS}"),
                )
                .hint("one per core dyno may use is the default; more only contend"));
            }
            Some(t) => t.value as usize,
        };
        Ok(Shared {
            objects,
            concurrency,
            threads,
            size,
            reps,
            seed,
        })
    }

    /// The targets as written (or the default ones), each configured by its driver, with where
    /// each was written.
    fn resolve_targets(
        &self,
        resolver: &dyn Resolver,
        named: Option<&(&'static dyn Suite, Origin)>,
    ) -> Result<(Vec<PlanTarget>, Vec<Origin>), PlanError> {
        let raw_targets = if let Some(t) = &self.settings.text(&shared::TOPOLOGY) {
            expand_topologies(&self.targets, t)?
        } else if self.targets.is_empty() {
            if let Some((s, at)) = named.filter(|(s, _)| s.family() == Family::Request) {
                return Err(PlanError::new(
                    at.clone(),
                    format!("the {} suite needs a target", s.name()),
                )
                .hint("name one, e.g. dyno run http://127.0.0.1:8080/ or tcp://127.0.0.1:7000"));
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
        Ok((targets, target_at))
    }

    /// Refuses a setting of another suite: each suite reads only its own.
    fn only_settings_of(
        &self,
        suite: &dyn Suite,
        suites: &[&'static dyn Suite],
    ) -> Result<(), PlanError> {
        let has = |s: &dyn Suite, key: &str| s.settings().iter().any(|x| x.key == key);
        for (name, at) in self.settings.iter() {
            if has(suite, name) {
                continue;
            }
            let Some(owner) = suites.iter().find(|s| has(**s, name)) else {
                continue;
            };
            let at = at.clone();
            return Err(suite.refuse(name, *owner, &at).unwrap_or_else(|| {
                PlanError::new(
                    at,
                    format!(
                        "{name} is a setting of the {} suite, and this run is {}",
                        owner.name(),
                        suite.name()
                    ),
                )
                .hint(owner.owner_hint())
            }));
        }
        Ok(())
    }

    /// `--pid` and `--process-name`, checked.
    fn watched(&self) -> Result<(Vec<u32>, Vec<String>), PlanError> {
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
        Ok((watch_pids, watch_names))
    }

    /// Parses and checks every `PARAM=VALUES`: a parameter the suite has, each value within the
    /// parameter's bounds, at most [`MAX_SWEEP_POINTS`] values, one sweep per parameter.
    pub fn resolve_sweeps(&self, suite: &dyn Suite) -> Result<Vec<Sweep>, PlanError> {
        let params = suite.sweepable();
        let names: Vec<&str> = params.iter().map(|p| p.name).collect();
        let mut sweeps: Vec<Sweep> = Vec::new();
        for raw in &self.sweeps {
            let bad = |msg: String| {
                PlanError::new(raw.at.clone(), msg).hint(format!(
                    "write PARAM=LIST or PARAM=A..B[:STEP], e.g. {}=1..30 or {}=1,10,100; the {} suite sweeps {}",
                    names[0],
                    names[0],
                    suite.name(),
                    names.join(", ")
                ))
            };
            let Some((name, spec)) = raw.value.split_once('=') else {
                return Err(bad(format!("sweep {:?} has no `=`", raw.value)));
            };
            let name = match name.trim() {
                "concurrency" | "c" => "clients",
                other => other,
            };
            let Some(param) = params.iter().find(|p| p.name == name) else {
                return Err(bad(format!(
                    "the {} suite has no parameter {name:?} to sweep; {}",
                    suite.name(),
                    did_you_mean(name, names.iter().copied())
                )));
            };
            let values =
                parse_values(spec.trim()).map_err(|e| bad(format!("sweep {name}: {e}")))?;
            let (min, max) = (param.min, param.max);
            if let Some(v) = values.iter().find(|v| !(min..=max).contains(*v)) {
                return Err(bad(format!(
                    "sweep {name}: {v} is outside {min}..={max}, the bounds of {name}"
                )));
            }
            if sweeps.iter().any(|s| s.param == param.name) {
                return Err(bad(format!("{name} is swept twice")));
            }
            sweeps.push(Sweep {
                param: param.name,
                values,
            });
        }
        Ok(sweeps)
    }
}

/// The settings every suite has.
struct Shared {
    objects: u64,
    concurrency: u32,
    threads: usize,
    size: usize,
    reps: u32,
    seed: u64,
}

/// Refuses a target that cannot run `suite`. A store that lacks a store suite's family, beside
/// others that have it, runs as `n/a` cases with the reason ([`na_reason`]); a run where none
/// has it is refused.
fn check_families(
    suite: &dyn Suite,
    targets: &[PlanTarget],
    target_at: &[Origin],
) -> Result<(), PlanError> {
    let family = suite.family();
    let some_fit = (targets.iter()).any(|t| t.config.families().contains(&family));
    for (t, at) in targets.iter().zip(target_at) {
        let store = t.config.families().contains(&Family::Kv);
        if some_fit && store && family != Family::Kv && family != Family::Request {
            continue;
        }
        if let Some(why) = mismatch(suite, t) {
            return Err(
                PlanError::new(at.clone(), format!("target {why}")).hint(suite.targets_hint())
            );
        }
    }
    Ok(())
}

/// Why `target` cannot run `suite`, when it cannot: the reason of its `n/a` cases.
pub fn na_reason(suite: &dyn Suite, target: &PlanTarget) -> Option<String> {
    let why = mismatch(suite, target)?;
    Some(if suite.family() == Family::Namespace {
        format!("{why} (fs:, dyno://, host:)")
    } else {
        why
    })
}

/// `NAME speaks kv, graph; the SUITE suite needs FAMILY targets`, when it does not speak it.
fn mismatch(suite: &dyn Suite, target: &PlanTarget) -> Option<String> {
    let family = suite.family();
    let families = target.config.families();
    if families.contains(&family) {
        return None;
    }
    let speaks: Vec<&str> = families.iter().map(|f| f.as_str()).collect();
    Some(format!(
        "{} speaks {}; the {} suite needs {} targets",
        target.name,
        speaks.join(", "),
        suite.name(),
        family.as_str()
    ))
}

/// One target per topology: `host:` with `inproc,loopback` becomes `host-inproc` and
/// `host-loopback`, each with the driver option `topology`. No target means dyno's own host.
pub fn expand_topologies(
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

/// The target's column name: as written, or its driver's default name or else its scheme
/// (`sqlite`, `sqlite-2`, …); valid and not taken.
fn target_name(
    written: Option<Sp<String>>,
    scheme: &str,
    url_at: &Origin,
    earlier: &[PlanTarget],
) -> Result<String, PlanError> {
    let (name, name_at) = match written {
        Some(n) => (n.value, n.at),
        None => {
            let mut name = scheme.to_string();
            let mut k = 2;
            while earlier.iter().any(|t| t.name == name) {
                name = format!("{scheme}-{k}");
                k += 1;
            }
            (name, url_at.clone())
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
    Ok(name)
}

pub fn resolve_target(
    mut raw: RawTarget,
    resolver: &dyn Resolver,
    earlier: &[PlanTarget],
) -> Result<PlanTarget, PlanError> {
    let schemes = resolver.schemes();
    // A cluster's members get their ports first: the URL may name them (`{port.NAME}`).
    let ports = match &raw.process {
        Some(p) if !p.members.is_empty() => allocate_ports(p)?,
        _ => BTreeMap::new(),
    };
    if !ports.is_empty() {
        raw.url.value = fill(&raw.url, None, &ports)?;
    }
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
    let base = config.default_name().filter(|n| valid_name(n));
    let name = target_name(
        raw.name,
        base.as_deref().unwrap_or(scheme),
        &url.at,
        earlier,
    )?;
    let process = match &raw.process {
        Some(p) if !p.members.is_empty() => Some(resolve_members(p, &ports)?),
        Some(p) => Some(resolve_process(p)?),
        None => None,
    };
    Ok(PlanTarget {
        name,
        url: url.value.clone(),
        config,
        process,
    })
}

/// A member's ports: where the others reach it (`{port}`, `{peer}`), and where it listens
/// (`{listen.port}`, `{listen.peer}`: the same two unless a link stands in front of it).
type Ports = [u16; 4];

/// Free ports on 127.0.0.1 for each member, by name (names checked: valid, once each): its own
/// (`{port}`) and a second for its peers (`{peer}`, e.g. etcd's Raft port); behind a link
/// (`link = true`, helpers excepted), two more it listens on, the link taking the first two. A
/// port is free when it is allocated (all of them held open together, so no two are the
/// same); the members and links bind them moments later.
fn allocate_ports(p: &RawProcess) -> Result<BTreeMap<String, Ports>, PlanError> {
    let linked = p.link.as_ref().is_some_and(|l| l.value);
    let mut ports = BTreeMap::new();
    let mut held = Vec::new();
    for m in &p.members {
        if !valid_name(&m.name.value) {
            return Err(PlanError::new(
                m.name.at.clone(),
                format!("member name {:?} is not allowed", m.name.value),
            )
            .hint("use up to 64 letters, digits, '_', '-' or '.'"));
        }
        let mut free = || {
            let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| {
                PlanError::new(m.at.clone(), format!("no free port on 127.0.0.1: {e}"))
            })?;
            let port = l
                .local_addr()
                .map_err(|e| PlanError::new(m.at.clone(), e.to_string()))?
                .port();
            held.push(l);
            Ok::<u16, PlanError>(port)
        };
        let (port, peer) = (free()?, free()?);
        let aux = m.aux.as_ref().is_some_and(|a| a.value);
        let own = if linked && !aux {
            [port, peer, free()?, free()?]
        } else {
            [port, peer, port, peer]
        };
        if ports.insert(m.name.value.clone(), own).is_some() {
            return Err(PlanError::new(
                m.name.at.clone(),
                format!("member {:?} is named twice", m.name.value),
            ));
        }
    }
    Ok(ports)
}

/// `text` with `{port}`, `{peer}`, `{listen.port}` and `{listen.peer}` (the member's own, when
/// it has them), `{port.NAME}` and `{peer.NAME}` filled in; `{dir}` and `{file}` are left for
/// when the member starts.
fn fill(
    text: &Sp<String>,
    own: Option<Ports>,
    ports: &BTreeMap<String, Ports>,
) -> Result<String, PlanError> {
    let mut out = String::new();
    let mut rest = text.value.as_str();
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let key = &rest[open + 1..open + close];
        // Braces around anything but a name (awk's `{ print $1 }`, a shell's `${x}`) are the
        // command's own.
        let name_like = !key.is_empty()
            && (key.bytes()).all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !name_like || rest[..open].ends_with('$') {
            out.push_str(&rest[open..open + close + 1]);
            rest = &rest[open + close + 1..];
            continue;
        }
        let bad = |why: String| {
            PlanError::new(text.at.clone(), why).hint(format!(
                "write {{port}}, {{peer}}, {{listen.port}}, {{listen.peer}}, {{port.NAME}}, {{peer.NAME}} (members: {}), {{dir}} or {{file}}",
                ports.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        };
        let slot = match key {
            "port" => Some(0),
            "peer" => Some(1),
            "listen.port" => Some(2),
            "listen.peer" => Some(3),
            _ => None,
        };
        match (key, slot) {
            (_, Some(i)) => match own {
                Some(p) => out.push_str(&p[i].to_string()),
                None => {
                    return Err(bad(format!(
                        "{{{key}}} names a member's own port; here, name the member: {{port.NAME}}"
                    )));
                }
            },
            ("dir" | "file", _) => out.push_str(&rest[open..open + close + 1]),
            (k, None) => {
                let port = match k.split_once('.') {
                    Some(("port", n)) => ports.get(n).map(|p| p[0]),
                    Some(("peer", n)) => ports.get(n).map(|p| p[1]),
                    _ => None,
                };
                match port {
                    Some(p) => out.push_str(&p.to_string()),
                    None => return Err(bad(format!("{{{k}}} names no member's port"))),
                }
            }
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A cluster: each member's command, readiness (its own port unless said) and file, with the
/// ports filled in.
fn resolve_members(
    p: &RawProcess,
    ports: &BTreeMap<String, Ports>,
) -> Result<ProcessSpec, PlanError> {
    let at = p.at.clone().unwrap_or(Origin::Default);
    if p.cmd.is_some() || p.pid.is_some() || p.name.is_some() || p.ready.is_some() {
        return Err(PlanError::new(
            at,
            "a target's process is one `cmd`, or `members`, not both",
        )
        .hint("give each member its own cmd (and ready) under [[targets.NAME.process.members]]"));
    }
    let mut members = Vec::new();
    for m in &p.members {
        let own = ports[&m.name.value];
        let linked = own[2] != own[0];
        if m.cmd.value.trim().is_empty() {
            return Err(PlanError::new(m.cmd.at.clone(), "cmd is empty"));
        }
        // Behind a link, the member listens where the link sends it, never on the link's port.
        let listens = |t: &Option<Sp<String>>| {
            t.as_ref()
                .is_some_and(|t| t.value.contains("{listen.port}"))
        };
        if linked && !listens(&Some(m.cmd.clone())) && !listens(&m.file) {
            return Err(PlanError::new(
                m.cmd.at.clone(),
                format!("member {} is behind a link (link = true) but does not listen on {{listen.port}}", m.name.value),
            )
            .hint("bind {listen.port} (and {listen.peer}) and announce {port} (and {peer}), e.g. redis-server --port {listen.port} --replica-announce-port {port}; or mark a helper aux = true"));
        }
        let ready = match &m.ready {
            None => std::net::SocketAddr::from(([127, 0, 0, 1], own[2])),
            Some(r) => {
                let text = fill(r, Some(own), ports)?;
                ready_addr(&Sp::new(text, r.at.clone()))?
            }
        };
        members.push(MemberSpec {
            name: m.name.value.clone(),
            port: own[0],
            peer: own[1],
            listen: linked.then_some([own[2], own[3]]),
            aux: m.aux.as_ref().is_some_and(|a| a.value),
            cmd: fill(&m.cmd, Some(own), ports)?,
            ready,
            file: m
                .file
                .as_ref()
                .map(|f| fill(f, Some(own), ports))
                .transpose()?,
        });
    }
    if p.link.as_ref().is_some_and(|l| l.value) && members.iter().all(|m| m.listen.is_none()) {
        return Err(PlanError::new(
            p.link.as_ref().map_or(at, |l| l.at.clone()),
            "link = true, but every member is a helper (aux): no link to place",
        )
        .hint("the links stand in front of the members that hold the data"));
    }
    let role = p.role.as_ref().map(|r| fill(r, None, ports)).transpose()?;
    Ok(ProcessSpec::Members {
        members,
        ready_timeout: ready_timeout(p)?,
        role,
    })
}

/// `tcp:IP:PORT`: dyno connects until it accepts.
fn ready_addr(ready: &Sp<String>) -> Result<std::net::SocketAddr, PlanError> {
    (ready.value.strip_prefix("tcp:"))
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .ok_or_else(|| {
            PlanError::new(
                ready.at.clone(),
                format!("{:?} is not a readiness check", ready.value),
            )
            .hint("write tcp:IP:PORT, e.g. tcp:127.0.0.1:6379 (dyno connects until it accepts)")
        })
}

/// How far into each repetition `abort_on_fail` starts checking: the first intervals of a
/// repetition (connections opening, caches filling) are no verdict on it.
const DEFAULT_ABORT_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a started process may take to accept connections.
fn ready_timeout(p: &RawProcess) -> Result<std::time::Duration, PlanError> {
    match &p.ready_timeout {
        None => Ok(DEFAULT_READY_TIMEOUT),
        Some(t) => crate::units::parse_duration(&t.value)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                PlanError::new(t.at.clone(), format!("{:?} is not a duration", t.value))
                    .hint("write e.g. \"30s\"")
            }),
    }
}

pub fn resolve_process(p: &RawProcess) -> Result<ProcessSpec, PlanError> {
    let at = p.at.clone().unwrap_or(Origin::Arg(0));
    if let Some(r) = &p.role {
        return Err(
            PlanError::new(r.at.clone(), "a role query is a cluster's (members)")
                .hint("move the process into [[targets.NAME.process.members]], or drop role"),
        );
    }
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
    let addr = ready_addr(ready)?;
    let ready_timeout = ready_timeout(p)?;
    Ok(ProcessSpec::Start {
        cmd: cmd.value.clone(),
        ready: addr,
        ready_timeout,
    })
}
