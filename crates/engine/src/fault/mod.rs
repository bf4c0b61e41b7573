//! Fault plans: what a run does to its targets' processes (and the links in front of them), and
//! when, on the run's clock.
//!
//! A fault is written `ACTION key=value …` (`--fault`) or as a `[[faults]]` table:
//!
//! | action | what dyno does to the target's process |
//! |---|---|
//! | `kill` | SIGKILL, then starts it again `after` later (default 1s) and waits until it is ready |
//! | `restart` | SIGTERM (SIGKILL after 10 s), starts it again at once, waits until it is ready |
//! | `pause` | SIGSTOP, then SIGCONT `for` later (default 1s) |
//! | `partition` | cuts the member off behind its link (`link = true`) for `for` (default 1s): nothing crosses to or from it, bytes wait as TCP's would; with `clients=pass`, only from the other members (Jepsen's partitions: dyno's clients still reach it) |
//! | `slow` | the member's link (both ways, its own connections too) adds `delay` ± `jitter` and caps at `rate` for `for` |
//! | `restart-clients` | dyno's own clients drop their sessions and open new ones |
//!
//! When: `every=10s` (the first one period into the run), `at=5s,12s` (times into the run), or
//! `stagger=10s` (Jepsen's: each wait uniform in 0..20s, seeded by the plan's seed). `healthy=2s`
//! keeps at least that long between one fault's end and the next fault. `target=NAME` names the
//! target; without it, the one target whose process dyno starts.
//!
//! dyno signals only a process it started itself, checked by its PID (not yet reaped) and its
//! start time just before each signal ([`crate::process::Started::signal`]); anything else is
//! never signalled, and the event says so. When the run ends — finished, interrupted, or failed —
//! the nemesis heals first: a paused process is continued, a killed one started again, a cut or
//! slowed link opened.

use crate::clock::Clock;
use crate::plan::{Origin, PlanError, RawFault, Sp, parse_duration_setting};
use crate::process::Started;
use results::faults::FaultEvent;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod nemesis;
pub use nemesis::*;
mod levels;
pub use levels::*;

/// The most faults one fault line may do in a run (every fault loop is bounded).
pub const MAX_EVENTS: usize = 10_000;
/// The longest period, delay or duration a fault may have.
const MAX_S: u64 = 24 * 3600;

/// What is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// SIGKILL; started again after this long.
    Kill { after_ns: u64 },
    /// SIGTERM; started again at once.
    Restart,
    /// SIGSTOP for this long, then SIGCONT.
    Pause { for_ns: u64 },
    /// The member's link cut, both ways, for this long; `clients_pass`: only from the other
    /// members, dyno's clients still reach it.
    Partition { for_ns: u64, clients_pass: bool },
    /// The member's link impaired, both ways, for this long.
    Slow {
        for_ns: u64,
        spec: host::link::LinkSpec,
    },
    /// dyno's own clients drop their connections (requests in flight fail as `reset`) and open
    /// new ones: NorduGrid's "unstable clients". The load and kv suites' clients at once, the
    /// store suites' before their next test.
    RestartClients,
}

impl Action {
    /// As plans write it.
    pub fn name(self) -> &'static str {
        match self {
            Action::Kill { .. } => "kill",
            Action::Restart => "restart",
            Action::Pause { .. } => "pause",
            Action::Partition { .. } => "partition",
            Action::Slow { .. } => "slow",
            Action::RestartClients => "restart-clients",
        }
    }

    /// Acts through a member's link (the cluster must have `link = true`).
    pub fn through_link(self) -> bool {
        matches!(self, Action::Partition { .. } | Action::Slow { .. })
    }
}

/// When it is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// Every period, the first one period into the run.
    Every(u64),
    /// At these times into the run.
    At(Vec<u64>),
    /// After waits uniform in 0..2×mean.
    Stagger(u64),
}

/// Which member a fault acts on each time it falls due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aim {
    /// The members in turn (one member: that one). `member = "any"`, and the default: every
    /// member but the cluster's helpers (`aux`, such as sentinels), the primary included.
    Turn,
    /// Whichever member the cluster's role query names primary at that moment.
    Primary,
    /// A member drawn at random (seeded) among the members, the primary of the moment left out.
    OneReplica,
}

/// One fault of a plan, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub action: Action,
    pub target: String,
    /// What it acts on, in turn: the target's process, or members of its cluster
    /// (`TARGET/MEMBER`).
    pub members: Vec<String>,
    /// Which of `members` each time.
    pub aim: Aim,
    pub when: When,
    /// At least this long from one fault's end to the next fault.
    pub healthy_ns: u64,
}

fn d(ns: u64) -> String {
    crate::units::duration_label(ns)
}

impl fmt::Display for Fault {
    /// As it can be written again: `kill target=redis every=10s after=1s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.action.name())?;
        if self.action != Action::RestartClients {
            write!(f, " target={}", self.target)?;
        }
        if self.aim == Aim::Primary {
            write!(f, " member=primary")?;
        } else if self.aim == Aim::OneReplica {
            write!(f, " member=one-replica")?;
        } else if let [one] = self.members.as_slice()
            && let Some((_, member)) = one.split_once('/')
        {
            write!(f, " member={member}")?;
        }
        match &self.when {
            When::Every(ns) => write!(f, " every={}", d(*ns))?,
            When::Stagger(ns) => write!(f, " stagger={}", d(*ns))?,
            When::At(ts) => {
                let ts: Vec<String> = ts.iter().map(|t| d(*t)).collect();
                write!(f, " at={}", ts.join(","))?
            }
        }
        match self.action {
            Action::Kill { after_ns } => write!(f, " after={}", d(after_ns))?,
            Action::Pause { for_ns } => write!(f, " for={}", d(for_ns))?,
            Action::Partition {
                for_ns,
                clients_pass,
            } => {
                write!(f, " for={}", d(for_ns))?;
                if clients_pass {
                    write!(f, " clients=pass")?;
                }
            }
            Action::Slow { for_ns, spec } => {
                write!(f, " for={}", d(for_ns))?;
                if !spec.delay.is_zero() {
                    write!(f, " delay={}", d(spec.delay.as_nanos() as u64))?;
                }
                if !spec.jitter.is_zero() {
                    write!(f, " jitter={}", d(spec.jitter.as_nanos() as u64))?;
                }
                if let Some(r) = spec.rate_bits_per_s {
                    write!(f, " rate={r}bit")?;
                }
            }
            Action::Restart | Action::RestartClients => {}
        }
        if self.healthy_ns > 0 {
            write!(f, " healthy={}", d(self.healthy_ns))?;
        }
        Ok(())
    }
}

impl RawFault {
    /// `kill target=t every=10s` from the command line (`--fault`).
    pub fn from_flag(text: &str) -> Result<RawFault, PlanError> {
        let at = Origin::Flag("--fault");
        let mut parts = text.split_whitespace();
        let action = parts.next().ok_or_else(|| {
            PlanError::new(at.clone(), "a fault names its action")
                .hint("e.g. --fault \"kill every=10s after=1s\"")
        })?;
        let mut words = vec![(
            Sp::new("action".to_string(), at.clone()),
            Sp::new(action.to_string(), at.clone()),
        )];
        for p in parts {
            let (k, v) = p.split_once('=').ok_or_else(|| {
                PlanError::new(at.clone(), format!("{p:?} in a fault is not KEY=VALUE"))
                    .hint("e.g. --fault \"pause target=db every=20s for=2s\"")
            })?;
            words.push((
                Sp::new(k.to_string(), at.clone()),
                Sp::new(v.to_string(), at.clone()),
            ));
        }
        Ok(RawFault {
            at: Some(at),
            words,
        })
    }

    /// Resolves the fault; `started` are the targets whose process dyno starts.
    pub fn resolve(&self, started: &[&str]) -> Result<Fault, PlanError> {
        self.resolve_among(started, &[])
    }

    /// Resolves the fault; `started` are the targets (and members, `TARGET/MEMBER`) whose
    /// process dyno starts, `aux` the members that are a cluster's helpers.
    pub fn resolve_among(&self, started: &[&str], aux: &[&str]) -> Result<Fault, PlanError> {
        let at = self.at.clone().unwrap_or(Origin::Default);
        let keys = crate::plan::keys::FAULT.names();
        if let Some((k, _)) = self
            .words
            .iter()
            .find(|(k, _)| !keys.contains(&k.value.as_str()))
        {
            return Err(
                PlanError::new(k.at.clone(), format!("unknown fault key {:?}", k.value))
                    .hint(format!("a fault's keys: {}", keys.join(", "))),
            );
        }
        let action = self.action(&at)?;
        let (target, members) = match action {
            Action::RestartClients => ("clients".to_string(), Vec::new()),
            _ => self.target(&at, started, aux)?,
        };
        let when = self.when(&at)?;
        let aim = match self.get("member").map(|m| m.value.as_str()) {
            Some("primary") => Aim::Primary,
            Some("one-replica") => Aim::OneReplica,
            _ => Aim::Turn,
        };
        Ok(Fault {
            action,
            target,
            members,
            aim,
            when,
            healthy_ns: self.duration("healthy")?.unwrap_or(0),
        })
    }

    fn get(&self, k: &str) -> Option<&Sp<String>> {
        self.words
            .iter()
            .find(|(key, _)| key.value == k)
            .map(|(_, v)| v)
    }

    fn duration(&self, k: &str) -> Result<Option<u64>, PlanError> {
        self.get(k)
            .map(|v| parse_duration_setting(v, k, MAX_S, "write a duration such as 10s"))
            .transpose()
    }

    /// The action, with its own setting (kill's `after`, pause's `for`) and no other's.
    fn action(&self, at: &Origin) -> Result<Action, PlanError> {
        let get = |k: &str| self.get(k);
        let dur = |k: &str| self.duration(k);
        let action = match get("action").map(|a| a.value.as_str()) {
            Some("kill") => Action::Kill {
                after_ns: dur("after")?.unwrap_or(1_000_000_000),
            },
            Some("restart") => Action::Restart,
            Some("restart-clients") => Action::RestartClients,
            Some("pause") => Action::Pause {
                for_ns: dur("for")?.unwrap_or(1_000_000_000),
            },
            Some("partition") => Action::Partition {
                for_ns: dur("for")?.unwrap_or(1_000_000_000),
                clients_pass: match get("clients").map(|c| (c.value.as_str(), c)) {
                    None | Some(("cut", _)) => false,
                    Some(("pass", _)) => true,
                    Some((other, c)) => {
                        return Err(PlanError::new(
                            c.at.clone(),
                            format!("clients={other}: a partition cuts dyno's clients off too (cut) or lets them through (pass)"),
                        )
                        .hint("write clients=cut or clients=pass"));
                    }
                },
            },
            Some("slow") => {
                let rate = match get("rate") {
                    None => None,
                    Some(r) => Some(crate::units::parse_bitrate(&r.value).map_err(|e| {
                        PlanError::new(r.at.clone(), format!("rate: {e}")).hint("e.g. rate=10mbit")
                    })?)
                    .filter(|&r| r > 0),
                };
                let spec = host::link::LinkSpec {
                    delay: Duration::from_nanos(dur("delay")?.unwrap_or(0)),
                    jitter: Duration::from_nanos(dur("jitter")?.unwrap_or(0)),
                    rate_bits_per_s: rate,
                    seed: 1,
                };
                if spec.delay.is_zero() && spec.rate_bits_per_s.is_none() {
                    return Err(PlanError::new(
                        get("action").map_or(at.clone(), |a| a.at.clone()),
                        "a slow fault needs delay= or rate=",
                    )
                    .hint(
                        "e.g. slow member=e1 every=10s for=3s delay=50ms jitter=5ms rate=10mbit",
                    ));
                }
                Action::Slow {
                    for_ns: dur("for")?.unwrap_or(1_000_000_000),
                    spec,
                }
            }
            other => {
                let at = get("action").map_or(at.clone(), |a| a.at.clone());
                return Err(PlanError::new(
                    at,
                    format!("unknown fault action {:?}", other.unwrap_or("")),
                )
                .hint("the actions: kill, restart, pause, partition, slow, restart-clients"));
            }
        };
        let takes: &[&str] = match action {
            Action::Kill { .. } => &["after"],
            Action::Restart | Action::RestartClients => &[],
            Action::Pause { .. } => &["for"],
            Action::Partition { .. } => &["for", "clients"],
            Action::Slow { .. } => &["for", "delay", "jitter", "rate"],
        };
        let misplaced = (["after", "for", "delay", "jitter", "rate", "clients"].iter())
            .filter(|k| !takes.contains(k))
            .find_map(|k| get(k).map(|v| (k, v)));
        if let Some((k, v)) = misplaced {
            return Err(PlanError::new(
                v.at.clone(),
                format!("{k} is not a setting of a {} fault", action.name()),
            )
            .hint("kill takes after= (when to start it again); pause takes for=; partition takes for= and clients=; slow takes for=, delay=, jitter=, rate="));
        }
        Ok(action)
    }

    /// The target named, or the one whose process dyno starts.
    /// The target named (or the one whose process dyno starts), and what the fault acts on:
    /// its process, or the member named (`member=`), or each member of its cluster in turn.
    fn target(
        &self,
        at: &Origin,
        started: &[&str],
        aux: &[&str],
    ) -> Result<(String, Vec<String>), PlanError> {
        let target_of = |key: &str| key.split('/').next().unwrap_or(key).to_string();
        let mut targets: Vec<String> = started.iter().map(|k| target_of(k)).collect();
        targets.dedup();
        let target = match self.get("target") {
            Some(t) if targets.contains(&t.value) => t.value.clone(),
            Some(t) => {
                return Err(PlanError::new(
                    t.at.clone(),
                    format!("target {:?} has no process dyno starts", t.value),
                )
                .hint("a fault acts on a target with [targets.NAME.process] cmd = … and ready = … (or members); dyno signals only processes it started"));
            }
            None => match targets.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(PlanError::new(at.clone(), "a fault needs a target whose process dyno starts")
                        .hint("add [targets.NAME.process] with cmd = … and ready = …: dyno signals only processes it started"));
                }
                _ => {
                    return Err(PlanError::new(
                        at.clone(),
                        "several targets have processes: name one",
                    )
                    .hint(format!("add target= one of {}", targets.join(", "))));
                }
            },
        };
        let mine: Vec<String> = (started.iter())
            .filter(|k| target_of(k) == target)
            .map(|k| k.to_string())
            .collect();
        // In turn, or drawn: the servers of the data, not the helpers.
        let servers: Vec<String> = (mine.iter())
            .filter(|k| !aux.contains(&k.as_str()))
            .cloned()
            .collect();
        let cluster = mine.iter().any(|k| k.contains('/'));
        let members = match self.get("member") {
            None => servers,
            Some(m) if m.value == "any" => servers,
            // Whichever member the role query names when the fault falls due; or another.
            Some(m) if (m.value == "primary" || m.value == "one-replica") && cluster => servers,
            Some(m) => {
                let key = format!("{target}/{}", m.value);
                if !mine.contains(&key) {
                    let names: Vec<&str> = (mine.iter())
                        .filter_map(|k| k.split_once('/'))
                        .map(|(_, n)| n)
                        .collect();
                    return Err(PlanError::new(
                        m.at.clone(),
                        format!("target {target} has no member {:?}", m.value),
                    )
                    .hint(format!(
                        "its members: {}; or any, primary, one-replica",
                        names.join(", ")
                    )));
                }
                vec![key]
            }
        };
        Ok((target, members))
    }

    /// When: every, at or stagger.
    fn when(&self, at: &Origin) -> Result<When, PlanError> {
        let get = |k: &str| self.get(k);
        let dur = |k: &str| self.duration(k);
        Ok(match (dur("every")?, get("at"), dur("stagger")?) {
            (Some(p), None, None) => When::Every(p),
            (None, None, Some(p)) => When::Stagger(p),
            (None, Some(list), None) => {
                let mut ts = Vec::new();
                for t in list
                    .value
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                {
                    let v = Sp::new(t.to_string(), list.at.clone());
                    ts.push(parse_duration_setting(
                        &v,
                        "at",
                        MAX_S,
                        "write times into the run, e.g. at=5s,12s",
                    )?);
                }
                if ts.is_empty() || ts.len() > MAX_EVENTS {
                    return Err(PlanError::new(
                        list.at.clone(),
                        format!("at= lists 1 to {MAX_EVENTS} times"),
                    ));
                }
                ts.sort_unstable();
                When::At(ts)
            }
            _ => {
                return Err(PlanError::new(
                    at.clone(),
                    "a fault needs exactly one of every=, at= and stagger=",
                )
                .hint("e.g. every=10s, at=5s,12s, or stagger=10s (waits uniform in 0..20s)"));
            }
        })
    }
}

#[cfg(test)]
mod tests;
