//! The targets' processes: found or started, watched for the whole run.

use super::*;

/// The processes a run starts and watches: the targets' servers it started (stopped when this
/// is dropped) and the monitor sampling every watched process.
pub(super) struct Watched {
    /// The started processes, by target: the fault plans act on them.
    pub(super) started: Vec<crate::fault::Member>,
    pub(super) monitor: Option<std::sync::Arc<crate::monitor::Monitor>>,
    /// The links in front of clusters' members (`link = true`).
    pub(super) links: Vec<Arc<crate::links::Links>>,
}

/// A process to watch that is not there.
#[derive(Debug, thiserror::Error)]
pub(super) enum Missing {
    #[error("no process has PID {0}")]
    Pid(u32),
    #[error("no running process is named {0:?}")]
    Name(String),
}

/// The watches a PID or a name stands for now (a name may match several processes).
pub(super) fn find(
    spec: &crate::plan::ProcessSpec,
    target: Option<String>,
) -> Result<Vec<crate::monitor::Watch>, Missing> {
    use crate::plan::ProcessSpec;
    use results::WatchSource;
    let watch = |pid, source| crate::monitor::Watch {
        target: target.clone(),
        pid,
        source,
    };
    match spec {
        ProcessSpec::Pid(pid) => match crate::monitor::command(*pid) {
            Some(_) => Ok(vec![watch(*pid, WatchSource::Pid)]),
            None => Err(Missing::Pid(*pid)),
        },
        ProcessSpec::Name(name) => {
            let pids = crate::monitor::find_by_name(name);
            if pids.is_empty() {
                return Err(Missing::Name(name.clone()));
            }
            Ok(pids
                .into_iter()
                .map(|p| watch(p, WatchSource::Name))
                .collect())
        }
        ProcessSpec::Start { .. } | ProcessSpec::Members { .. } => {
            unreachable!("a started process is watched once started")
        }
    }
}

/// Starts one member of a target's cluster: its file written first (`{dir}` is the results
/// directory, `{file}` the file's path), then its command, ready before the next member starts.
pub(super) fn start_member(
    target: &str,
    m: &crate::plan::MemberSpec,
    timeout: Duration,
    logs: &Path,
) -> Result<crate::process::Started, String> {
    let name = format!("{target}.{}", m.name);
    let file = logs.join(format!("{name}.conf"));
    let fill = |t: &str| {
        t.replace("{dir}", &logs.display().to_string())
            .replace("{file}", &file.display().to_string())
    };
    if let Some(text) = &m.file {
        std::fs::create_dir_all(logs)
            .and_then(|()| std::fs::write(&file, fill(text)))
            .map_err(|e| format!("writing {}: {e}", file.display()))?;
    }
    crate::process::start(&name, &fill(&m.cmd), m.ready, timeout, logs)
        .map_err(|e| format!("member {}: {e}", m.name))
}

/// Starts `targets`' servers and the monitor; finds processes given by PID or name.
pub(super) fn watch(
    plan: &Plan,
    targets: &[&PlanTarget],
    clock: &Clock,
    logs: &Path,
) -> Result<Watched, RunError> {
    use crate::plan::ProcessSpec;
    let mut started = Vec::new();
    let mut watches = Vec::new();
    let mut links = Vec::new();
    for t in targets {
        let refused = |message: String| RunError::Refused {
            name: t.name.clone(),
            url: results::redact_url(&t.url),
            message,
        };
        // A process dyno started: watched, and kept (by `TARGET` or `TARGET/MEMBER`) for the
        // faults.
        // A cluster's member is watched as `TARGET/MEMBER`: its series follows the member across
        // restarts, whatever its PID.
        let mut keep = |key: String, s: crate::process::Started| {
            watches.push(crate::monitor::Watch {
                target: Some(key.clone()),
                pid: s.pid,
                source: results::WatchSource::Started,
            });
            started.push((key, std::sync::Arc::new(std::sync::Mutex::new(s))));
        };
        match &t.process {
            None => {}
            Some(ProcessSpec::Start {
                cmd,
                ready,
                ready_timeout,
            }) => {
                let s = crate::process::start(&t.name, cmd, *ready, *ready_timeout, logs)
                    .map_err(|e| refused(e.to_string()))?;
                keep(t.name.clone(), s);
            }
            Some(ProcessSpec::Members {
                members,
                ready_timeout,
                ..
            }) => {
                // The links first: the members reach each other through them.
                let linked = if members.iter().any(|m| m.listen.is_some()) {
                    let l = crate::links::Links::start(&t.name, members).map_err(refused)?;
                    links.push(Arc::new(l));
                    links.last().cloned()
                } else {
                    None
                };
                for m in members {
                    let s = start_member(&t.name, m, *ready_timeout, logs).map_err(refused)?;
                    let key = format!("{}/{}", t.name, m.name);
                    if let Some(l) = &linked {
                        l.started(&key, s.pid);
                    }
                    keep(key, s);
                }
            }
            Some(spec) => watches
                .extend((find(spec, Some(t.name.clone()))).map_err(|e| refused(e.to_string()))?),
        }
    }
    let flags = (plan.watch_pids.iter())
        .map(|&p| ("--pid", ProcessSpec::Pid(p)))
        .chain((plan.watch_names.iter()).map(|n| ("--process-name", ProcessSpec::Name(n.clone()))));
    for (flag, spec) in flags {
        watches.extend(find(&spec, None).map_err(|e| RunError::Watch(format!("{flag}: {e}")))?);
    }
    let monitor = if watches.is_empty() {
        None
    } else {
        let m = crate::monitor::Monitor::start(&watches, clock.clone(), crate::monitor::INTERVAL)
            .map_err(|e| RunError::Watch(e.to_string()))?;
        Some(std::sync::Arc::new(m))
    };
    Ok(Watched {
        started,
        monitor,
        links,
    })
}
