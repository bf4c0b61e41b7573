//! NorduGrid's levels of disturbance, and when a fault falls due.

use super::*;

/// NorduGrid's levels of disturbance (the A-Hash tables), in the order they run. `E` is
/// `level_every` (60 s unless set), the seed's "every 60th second".
pub const LEVELS: [(&str, &str); 5] = [
    (
        "centralized",
        "the targets that are one server (not a cluster of two members or more), undisturbed",
    ),
    (
        "stable",
        "the clusters (targets of two members or more), undisturbed",
    ),
    (
        "unstable-clients",
        "the clusters; every E, dyno's clients drop their sessions and open new ones",
    ),
    (
        "all-unstable",
        "the clusters; every E, one member restarted (SIGTERM, start again), the members in turn, the primary among them",
    ),
    (
        "kill-master",
        "the clusters; every E, the primary of the moment killed (SIGKILL) and started again E/2 later",
    ),
];

/// One level of a run of levels: the targets it runs (places in the plan's targets) and its
/// faults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level {
    pub name: &'static str,
    pub targets: Vec<usize>,
    pub faults: Vec<Fault>,
}

/// Resolves `levels = [...]`: each name known and given once, each with targets to run. A
/// cluster is a target of two members or more that dyno starts (`members`); any other target is
/// one server, for the centralized level. `aux` are the clusters' helpers' keys
/// (`TARGET/MEMBER`), `roles` whether it has a role query.
pub fn levels(
    names: &[Sp<String>],
    every: Option<&Sp<String>>,
    targets: &[(String, Option<Vec<String>>, bool)],
    aux: &[&str],
) -> Result<Vec<Level>, PlanError> {
    let every_ns = match every {
        Some(e) => parse_duration_setting(e, "level_every", MAX_S, "write a period such as 60s")?,
        None => 60_000_000_000,
    };
    let (clusters, single): (Vec<usize>, Vec<usize>) =
        (0..targets.len()).partition(|&i| targets[i].1.as_ref().is_some_and(|m| m.len() > 1));
    let mut out: Vec<Level> = Vec::new();
    for n in names {
        let Some(&(name, _)) = LEVELS.iter().find(|(l, _)| *l == n.value) else {
            let known: Vec<&str> = LEVELS.iter().map(|(l, _)| *l).collect();
            return Err(
                PlanError::new(n.at.clone(), format!("unknown level {:?}", n.value))
                    .hint(format!("the levels: {}", known.join(", "))),
            );
        };
        if out.iter().any(|l| l.name == name) {
            return Err(PlanError::new(
                n.at.clone(),
                format!("level {name} is listed twice"),
            ));
        }
        let mine = if name == "centralized" {
            &single
        } else {
            &clusters
        };
        if mine.is_empty() {
            return Err(nothing_to_disturb(name, n.at.clone()));
        }
        let when = When::Every(every_ns);
        let mut faults = Vec::new();
        for &i in mine {
            let (target, members, has_role) = &targets[i];
            let servers: Vec<String> = (members.iter().flatten())
                .filter(|m| !aux.contains(&m.as_str()))
                .cloned()
                .collect();
            let fault = |action, aim| Fault {
                action,
                target: target.clone(),
                members: servers.clone(),
                aim,
                when: when.clone(),
                healthy_ns: 0,
            };
            match name {
                "all-unstable" => faults.push(fault(Action::Restart, Aim::Turn)),
                "kill-master" => {
                    if !has_role {
                        return Err(PlanError::new(
                            n.at.clone(),
                            format!("level kill-master needs {target}'s role query, to find its primary"),
                        )
                        .hint(format!("add role = \"a command whose output names the primary's port\" to [targets.{target}.process]")));
                    }
                    // Started again halfway to the next kill: after the system's failover
                    // (a primary back at once, before any failover, is a restart, not a kill).
                    faults.push(fault(
                        Action::Kill {
                            after_ns: every_ns / 2,
                        },
                        Aim::Primary,
                    ))
                }
                _ => {}
            }
        }
        if name == "unstable-clients" {
            faults.push(Fault {
                action: Action::RestartClients,
                target: "clients".into(),
                members: Vec::new(),
                aim: Aim::Turn,
                when,
                healthy_ns: 0,
            });
        }
        out.push(Level {
            name,
            targets: mine.clone(),
            faults,
        });
    }
    Ok(out)
}

/// Level `name` finds none of the targets it disturbs in the plan.
fn nothing_to_disturb(name: &str, at: Origin) -> PlanError {
    if name == "centralized" {
        PlanError::new(at, "level centralized runs the targets that are one server, and the plan has none")
            .hint("add the single-server form of the system as a target of its own (e.g. [targets.redis-1] with its [targets.redis-1.process] cmd), or drop the level")
    } else {
        PlanError::new(at, format!("level {name} runs the clusters, and the plan has none"))
            .hint("add a target whose members dyno starts ([[targets.NAME.process.members]]), or drop the level")
    }
}

/// The times (into the run) a fault falls due, `seed` for a stagger's draws; at most
/// [`MAX_EVENTS`], none past `until_ns`.
pub fn schedule(when: &When, seed: u64, until_ns: u64) -> Vec<u64> {
    let mut out = Vec::new();
    match when {
        When::At(ts) => out.extend(ts.iter().copied().filter(|&t| t <= until_ns)),
        When::Every(p) => {
            let mut t = *p;
            while t <= until_ns && out.len() < MAX_EVENTS {
                out.push(t);
                t += p;
            }
        }
        When::Stagger(mean) => {
            let mut state = seed ^ 0x5EED_FA17;
            let mut t = 0u64;
            while out.len() < MAX_EVENTS {
                let draw = results::rng::splitmix64(&mut state);
                t += (draw % (2 * mean + 1)).max(1);
                if t > until_ns {
                    break;
                }
                out.push(t);
            }
        }
    }
    out
}
