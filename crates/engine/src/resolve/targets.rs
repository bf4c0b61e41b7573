//! Each target as written, configured by its driver: its name, its topologies, its options.

use super::*;

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
            requests: Vec::new(),
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
pub(super) fn target_name(
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

/// `scheme` is one of this build's drivers', or the message says what to write.
fn known_scheme(scheme: &str, schemes: &[&str], at: &Origin) -> Result<(), PlanError> {
    if schemes.contains(&scheme) {
        return Ok(());
    }
    if scheme == "https" {
        // Not a typo of http: the user meant TLS, and a suggestion to drop it would mislead.
        return Err(PlanError::new(
            at.clone(),
            "https:// targets need TLS, and this dyno was built without it",
        )
        .hint("build dyno with its default features (the `tls` feature), or load the server's plain-HTTP port; nothing was run"));
    }
    Err(PlanError::new(
        at.clone(),
        format!(
            "unknown target scheme {scheme:?}; {}schemes: {}",
            did_you_mean(scheme, schemes.iter().copied()),
            schemes.join(", ")
        ),
    )
    .hint("`dyno targets` lists every driver and its URL forms"))
}

/// A target's driver options, and where each was written.
type Options = (BTreeMap<String, String>, BTreeMap<String, Origin>);

/// A target's driver options, from its URL's query and its plan-file keys (each once), with
/// where each was written.
fn options_of(
    url: &Sp<String>,
    query: Vec<(&str, &str)>,
    written: &[(Sp<String>, Sp<String>)],
) -> Result<Options, PlanError> {
    let mut options = BTreeMap::new();
    let mut origins: BTreeMap<String, Origin> = BTreeMap::new();
    for (k, v) in query {
        options.insert(k.to_string(), v.to_string());
        origins.insert(k.to_string(), url.at.clone());
    }
    for (k, v) in written {
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
    Ok((options, origins))
}

/// One target as written, configured by its driver: its scheme known, its options checked, its
/// name and process resolved (a cluster's ports first: its URL may name them).
pub fn resolve_target(
    mut raw: RawTarget,
    drivers: &dyn Drivers,
    earlier: &[PlanTarget],
) -> Result<PlanTarget, PlanError> {
    let schemes = drivers.schemes();
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
    known_scheme(scheme, &schemes, &url.at)?;
    let (rest, query) = if drivers.query_options(scheme) {
        (rest, query)
    } else {
        let after_colon = &url.value[scheme.len() + 1..];
        (after_colon, Vec::new())
    };
    let (options, origins) = options_of(url, query, &raw.options)?;
    let mut config = drivers.configure(scheme, rest, &options).map_err(|e| {
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
    with_requests(config.as_mut(), (scheme, &url.at, &origins), &raw.requests)?;
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

/// The plan's `[[targets.NAME.requests]]` handed to the target's driver; an error placed at
/// the request's key it names (else at the request).
fn with_requests(
    config: &mut dyn TargetConfig,
    (scheme, url_at, origins): (&str, &Origin, &BTreeMap<String, Origin>),
    requests: &[RawRequest],
) -> Result<(), PlanError> {
    let written: Vec<BTreeMap<String, String>> = (requests.iter())
        .map(|r| {
            (r.keys.iter())
                .map(|(k, v)| (k.value.clone(), v.value.clone()))
                .collect()
        })
        .collect();
    config.with_requests(&written).map_err(|(i, e)| {
        let Some(r) = requests.get(i) else {
            // Not a request's (`usize::MAX`, or no mix in the plan): the target's options'.
            let option = e.option.clone().unwrap_or_default();
            let message = format!("{scheme}: option {option}: {}", e.message);
            let at = (e.option.as_ref())
                .and_then(|o| origins.get(o))
                .unwrap_or(url_at);
            let err = PlanError::new(at.clone(), message);
            return match e.hint {
                Some(h) => err.hint(h),
                None => err,
            };
        };
        let at = (e.option.as_ref())
            .and_then(|o| r.keys.iter().find(|(k, _)| &k.value == o))
            .map_or_else(|| r.at.clone(), |(_, v)| v.at.clone());
        let which = match requests.len() {
            1 => String::new(),
            _ => format!(" {}", i + 1),
        };
        PlanError {
            at,
            message: format!("{scheme}: request{which} of the mix: {}", e.message),
            hint: e.hint,
        }
    })
}
