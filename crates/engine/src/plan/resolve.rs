//! The one resolution of a raw plan: values checked against their bounds, defaults filled in,
//! target URLs handed to their drivers, sweeps and topologies expanded.

use super::*;

impl RawPlan {
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
            if let Some(why) = mismatch(&suite, t) {
                return Err(PlanError::new(at.clone(), format!("target {why}"))
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
                crate::namespace::DEFAULT_CLIENTS as u64,
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
            Some(crate::namespace::Params {
                depth: bounded(
                    self.depth.clone(),
                    "depth",
                    crate::namespace::DEFAULT_DEPTH,
                    1,
                    crate::namespace::MAX_DEPTH,
                    "a folder path is at most 2048 bytes",
                )?,
                width: bounded(
                    self.width.clone(),
                    "width",
                    crate::namespace::DEFAULT_WIDTH,
                    1,
                    crate::namespace::MAX_WIDTH,
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
    pub(super) fn no_shootout_sizes(&self, suite: &str, hint: &str) -> Result<(), PlanError> {
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
    pub(super) fn resolve_sweeps(
        &self,
        suite: &str,
        max_clients: u64,
    ) -> Result<Vec<Sweep>, PlanError> {
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
                "depth" => (1, crate::namespace::MAX_DEPTH),
                "width" => (1, crate::namespace::MAX_WIDTH),
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
    pub(super) fn resolve_magma(&self) -> Result<crate::magma::Params, PlanError> {
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
    pub(super) fn no_magma_options(&self, suite: &str) -> Result<(), PlanError> {
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
    let why = mismatch(suite, target)?;
    Some(if suite_family(suite) == Family::Namespace {
        format!("{why} (fs:, dyno://, host:)")
    } else {
        why
    })
}

/// `NAME speaks kv, graph; the SUITE suite needs FAMILY targets`, when it does not speak it.
fn mismatch(suite: &str, target: &PlanTarget) -> Option<String> {
    let family = suite_family(suite);
    let families = target.config.families();
    if families.contains(&family) {
        return None;
    }
    let speaks: Vec<&str> = families.iter().map(|f| f.as_str()).collect();
    Some(format!(
        "{} speaks {}; the {suite} suite needs {} targets",
        target.name,
        speaks.join(", "),
        family.as_str()
    ))
}

/// One target per topology: `host:` with `inproc,loopback` becomes `host-inproc` and
/// `host-loopback`, each with the driver option `topology`. No target means dyno's own host.
pub(super) fn expand_topologies(
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

/// `1,10,100` or `1..30` or `100..1000:100` (inclusive): the values, in the order given.
pub(super) fn parse_values(spec: &str) -> Result<Vec<u64>, String> {
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

pub(super) fn bounded(
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

pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

pub(super) fn resolve_target(
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

pub(super) fn resolve_process(p: &RawProcess) -> Result<ProcessSpec, PlanError> {
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
