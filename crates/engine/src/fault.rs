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
//! | `partition` | cuts the member off behind its link (`link = true`) for `for` (default 1s): nothing crosses to or from it, bytes wait as TCP's would |
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
    /// The member's link cut, both ways, for this long.
    Partition { for_ns: u64 },
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
            Action::Pause { for_ns } | Action::Partition { for_ns } => {
                write!(f, " for={}", d(for_ns))?
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
        const KEYS: &[&str] = &[
            "action", "target", "member", "every", "at", "stagger", "after", "for", "healthy",
            "delay", "jitter", "rate",
        ];
        if let Some((k, _)) = self
            .words
            .iter()
            .find(|(k, _)| !KEYS.contains(&k.value.as_str()))
        {
            return Err(
                PlanError::new(k.at.clone(), format!("unknown fault key {:?}", k.value))
                    .hint(format!("a fault's keys: {}", KEYS.join(", "))),
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
            Action::Pause { .. } | Action::Partition { .. } => &["for"],
            Action::Slow { .. } => &["for", "delay", "jitter", "rate"],
        };
        let misplaced = (["after", "for", "delay", "jitter", "rate"].iter())
            .filter(|k| !takes.contains(k))
            .find_map(|k| get(k).map(|v| (k, v)));
        if let Some((k, v)) = misplaced {
            return Err(PlanError::new(
                v.at.clone(),
                format!("{k} is not a setting of a {} fault", action.name()),
            )
            .hint("kill takes after= (when to start it again); pause and partition take for=; slow takes for=, delay=, jitter=, rate="));
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
            return Err(PlanError::new(
                n.at.clone(),
                if name == "centralized" {
                    "level centralized runs the targets that are one server, and the plan has none".to_string()
                } else {
                    format!("level {name} runs the clusters, and the plan has none")
                },
            )
            .hint(if name == "centralized" {
                "add the single-server form of the system as a target of its own (e.g. [targets.redis-1] with its [targets.redis-1.process] cmd), or drop the level"
            } else {
                "add a target whose members dyno starts ([[targets.NAME.process.members]]), or drop the level"
            }));
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
                let draw = crate::suites::shootout::run::splitmix(&mut state);
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

/// A target's process, as the nemesis acts on it.
pub type Member = (String, Arc<Mutex<Started>>);

/// A cluster's role query: a command whose output names the primary's port, and its members'
/// ports (`TARGET/MEMBER`).
#[derive(Debug, Clone)]
pub struct Role {
    pub cmd: String,
    pub ports: Vec<(String, u16)>,
}

impl Role {
    /// The member the query names now: the one whose port stands alone in its output.
    pub fn primary(&self) -> Result<String, String> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&self.cmd)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("the role query `{}` did not run: {e}", self.cmd))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let words: Vec<&str> = text.split(|c: char| !c.is_ascii_digit()).collect();
        (self.ports.iter())
            .find(|(_, port)| words.contains(&port.to_string().as_str()))
            .map(|(key, _)| key.clone())
            .ok_or_else(|| format!("the role query named no member: {:?}", text.trim()))
    }
}

/// The thread doing a run's faults; heals and hands over its events when stopped (or dropped).
pub struct Nemesis {
    stop: Arc<AtomicBool>,
    again: Arc<StartOver>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Gives the events once the faults healed.
    healed: Mutex<Option<std::sync::mpsc::Receiver<Vec<FaultEvent>>>>,
    /// Dropped to let the thread end.
    finish: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    /// The events, once healed.
    events: Mutex<Vec<FaultEvent>>,
}

/// A schedule started over (a level's, at each test's start): how many times it was asked, and
/// how many times the fault thread took it up (its new origin: the moment it did).
#[derive(Default)]
struct StartOver {
    asked: AtomicU64,
    taken: AtomicU64,
}

/// Mixed into the plan's seed for the nemesis's draws (`one-replica`).
const RNG_SALT: u64 = 0x0E4E_911C;

/// How long [`Nemesis::start_over`] waits for a fault under way to end: longer than any
/// level's kill (its restart comes half a period later) or pause.
const START_OVER_WAIT: Duration = Duration::from_secs(600);

/// The gates of the links in front of a cluster's members, by `TARGET/MEMBER`.
pub type Gates = std::collections::BTreeMap<String, Arc<host::link::Gate>>;

/// Told when a process was started again: its old PID and its new one.
pub type Follow = Box<dyn Fn(u32, u32) + Send>;

/// What the nemesis thread does.
struct Work {
    faults: Vec<Fault>,
    members: Vec<Member>,
    follow: Follow,
    /// Bumped to have dyno's clients reconnect.
    clients: Arc<std::sync::atomic::AtomicU64>,
    /// The clusters' role queries, by target.
    roles: std::collections::BTreeMap<String, Role>,
    /// The gates of the links in front of members (`TARGET/MEMBER`).
    gates: Gates,
    clock: Clock,
    stop: Arc<AtomicBool>,
    again: Arc<StartOver>,
    events: Vec<FaultEvent>,
    /// Draws of `one-replica`, seeded by the plan's seed.
    rng: u64,
    /// Clock reading the fault times count from (the start of the run, or of a level).
    origin_ns: u64,
}

impl Work {
    /// Sleeps until `t_ns` on the run's clock; false when told to stop first.
    fn sleep_until(&self, t_ns: u64) -> bool {
        self.wait(t_ns, || false)
    }

    /// Sleeps until `t_ns` on the run's clock, 20 ms at a time; false when told to stop, or
    /// when `cut` says so, first.
    fn wait(&self, t_ns: u64, cut: impl Fn() -> bool) -> bool {
        loop {
            if self.stop.load(Ordering::Relaxed) || cut() {
                return false;
            }
            let now = self.clock.now_ns();
            if now >= t_ns {
                return true;
            }
            std::thread::sleep(Duration::from_nanos((t_ns - now).min(20_000_000)));
        }
    }

    fn member(&self, target: &str) -> Option<Arc<Mutex<Started>>> {
        (self.members.iter())
            .find(|(name, _)| name == target)
            .map(|(_, m)| m.clone())
    }

    /// Does `f` to its target now (`turn`: which of its members, in turn); records the event.
    fn act(&mut self, f: &Fault, turn: usize) {
        if f.action == Action::RestartClients {
            let now = self.clock.now_ns();
            self.clients.fetch_add(1, Ordering::Relaxed);
            self.events.push(FaultEvent {
                action: "restart-clients".into(),
                target: f.target.clone(),
                start_ns: now,
                end_ns: Some(now),
                pid: None,
                new_pid: None,
                note: None,
            });
            return;
        }
        let primary = || {
            (self.roles.get(&f.target))
                .ok_or_else(|| "no role query".to_string())
                .and_then(|r| r.primary())
        };
        let aimed = if f.aim != Aim::Turn {
            let drawn = primary().and_then(|p| match f.aim {
                Aim::OneReplica => {
                    let others: Vec<&String> = f.members.iter().filter(|m| **m != p).collect();
                    if others.is_empty() {
                        return Err(format!("no member besides the primary {p}"));
                    }
                    let draw = crate::suites::shootout::run::splitmix(&mut self.rng);
                    Ok(others[(draw % others.len() as u64) as usize].clone())
                }
                _ => Ok(p),
            });
            match drawn {
                Ok(key) => Some(key),
                Err(why) => {
                    self.events.push(FaultEvent {
                        action: f.action.name().into(),
                        target: format!(
                            "{}/{}",
                            f.target,
                            if f.aim == Aim::Primary {
                                "primary"
                            } else {
                                "one-replica"
                            }
                        ),
                        start_ns: self.clock.now_ns(),
                        end_ns: None,
                        pid: None,
                        new_pid: None,
                        note: Some(why),
                    });
                    return;
                }
            }
        } else {
            f.members.get(turn % f.members.len().max(1)).cloned()
        };
        let Some(key) = aimed else {
            return;
        };
        let key = &key;
        if f.action.through_link() {
            self.through_link(f, key);
            return;
        }
        let Some(member) = self.member(key) else {
            return;
        };
        let Ok(mut p) = member.lock() else { return };
        let start_ns = self.clock.now_ns();
        let pid = p.pid;
        let mut event = FaultEvent {
            action: f.action.name().to_string(),
            target: key.clone(),
            start_ns,
            end_ns: None,
            pid: Some(pid),
            new_pid: None,
            note: None,
        };
        let signalled = match f.action {
            Action::Kill { .. } => p.kill(),
            Action::Restart => {
                p.stop();
                Ok(())
            }
            Action::Pause { .. } => p.signal(libc::SIGSTOP),
            Action::RestartClients | Action::Partition { .. } | Action::Slow { .. } => Ok(()),
        };
        if let Err(e) = signalled {
            event.note = Some(e.to_string());
            self.events.push(event);
            return;
        }
        match f.action {
            Action::Pause { for_ns } => {
                // Continued when the pause is over, or at once when the run is stopping.
                self.sleep_until(start_ns + for_ns);
                if let Err(e) = p.signal(libc::SIGCONT) {
                    event.note = Some(e.to_string());
                }
                event.end_ns = Some(self.clock.now_ns());
            }
            Action::Kill { after_ns } => {
                self.sleep_until(start_ns + after_ns);
                self.start_again(&mut p, &mut event);
            }
            Action::Restart => self.start_again(&mut p, &mut event),
            Action::RestartClients | Action::Partition { .. } | Action::Slow { .. } => {}
        }
        self.events.push(event);
    }

    /// Cuts or slows the member's link for the fault's time, then opens it again (at once when
    /// the run is stopping).
    fn through_link(&mut self, f: &Fault, key: &str) {
        use host::link::GateState;
        let start_ns = self.clock.now_ns();
        let mut event = FaultEvent {
            action: f.action.name().to_string(),
            target: key.to_string(),
            start_ns,
            end_ns: None,
            pid: None,
            new_pid: None,
            note: None,
        };
        let (state, for_ns) = match f.action {
            Action::Partition { for_ns } => (GateState::Cut, for_ns),
            Action::Slow { for_ns, spec } => (GateState::Slow(spec), for_ns),
            _ => return,
        };
        match self.gates.get(key).cloned() {
            None => event.note = Some(format!("{key} has no link in front of it")),
            Some(gate) => {
                gate.set(state);
                self.sleep_until(start_ns + for_ns);
                gate.set(GateState::Open);
                event.end_ns = Some(self.clock.now_ns());
            }
        }
        self.events.push(event);
    }

    fn start_again(&self, p: &mut Started, event: &mut FaultEvent) {
        match p.start_again() {
            Ok(()) => {
                if let Some(old) = event.pid {
                    (self.follow)(old, p.pid);
                }
                event.new_pid = Some(p.pid);
                event.end_ns = Some(self.clock.now_ns());
            }
            Err(e) => event.note = Some(format!("it did not start again: {e}")),
        }
    }

    /// Waits for the schedule's next time (or the end of a healthy window): true when due;
    /// false when told to stop or to start over first.
    fn wait_due(&self, t_ns: u64, taken: u64) -> bool {
        self.wait(t_ns, || self.again.asked.load(Ordering::Acquire) != taken)
    }

    fn run(mut self, seed: u64, until_ns: u64) -> Vec<FaultEvent> {
        let mut origin = self.origin_ns;
        // Every fault's times, merged in order; each waits for the previous one to end.
        let mut due: Vec<(u64, usize)> = Vec::new();
        for (i, f) in self.faults.iter().enumerate() {
            let s = seed.wrapping_add(i as u64);
            due.extend(schedule(&f.when, s, until_ns).into_iter().map(|t| (t, i)));
        }
        due.sort_unstable();
        let mut calm_from = 0u64;
        let mut turns = vec![0usize; self.faults.len()];
        let mut taken = 0;
        loop {
            let mut next = due.iter();
            loop {
                let at = next.next().map(|&(t, i)| ((origin + t).max(calm_from), i));
                // After the last fault, only a start over (or the end) is waited for.
                if !self.wait_due(at.map_or(u64::MAX, |(t, _)| t), taken) {
                    break;
                }
                let Some((_, i)) = at else { break };
                let f = self.faults[i].clone();
                self.act(&f, turns[i]);
                turns[i] += 1;
                calm_from = self.clock.now_ns() + f.healthy_ns;
            }
            if self.stop.load(Ordering::Relaxed) {
                return self.events;
            }
            // Started over, between faults (none under way), and whole: the members in turn
            // and the draws begin again, so each test sees the same disturbance (at
            // `all-unstable`, the same member restarted first).
            taken = self.again.asked.load(Ordering::Acquire);
            origin = self.clock.now_ns();
            turns.iter_mut().for_each(|t| *t = 0);
            self.rng = seed ^ RNG_SALT;
            self.again.taken.store(taken, Ordering::Release);
        }
    }
}

impl Nemesis {
    /// Starts doing `faults` to `members` on `clock` (the run's), their times counted from
    /// `origin_ns` on it (the start of the run, or of a level), until `until_ns` after it;
    /// `follow` is told of each process started again.
    pub fn start(
        faults: Vec<Fault>,
        (members, clients, roles, gates): (
            Vec<Member>,
            Arc<std::sync::atomic::AtomicU64>,
            std::collections::BTreeMap<String, Role>,
            Gates,
        ),
        follow: Follow,
        clock: Clock,
        (seed, origin_ns, until_ns): (u64, u64, u64),
    ) -> Nemesis {
        let stop = Arc::new(AtomicBool::new(false));
        let again = Arc::new(StartOver::default());
        let work = Work {
            again: again.clone(),
            faults,
            members,
            follow,
            clients,
            roles,
            gates,
            clock,
            stop: stop.clone(),
            events: Vec::new(),
            rng: seed ^ RNG_SALT,
            origin_ns,
        };
        let (healed_tx, healed) = std::sync::mpsc::channel();
        let (finish, finish_rx) = std::sync::mpsc::channel::<()>();
        // The thread outlives the heal, until the stage ends: a process it started again gets
        // SIGTERM when the thread that started it ends (the parent-death signal is a thread's),
        // and it must live on after the heal.
        let thread = std::thread::Builder::new()
            .name("dyno-nemesis".into())
            .spawn(move || {
                let _ = healed_tx.send(work.run(seed, until_ns));
                let _ = finish_rx.recv();
            })
            .expect("spawning the fault thread");
        Nemesis {
            stop,
            again,
            thread: Mutex::new(Some(thread)),
            healed: Mutex::new(Some(healed)),
            finish: Mutex::new(Some(finish)),
            events: Mutex::new(Vec::new()),
        }
    }

    /// The schedule starts over from now (a level's, at a test's start): returns once the fault
    /// thread has taken it up, which it does between faults, never during one (a test starts
    /// on a whole system). After the final heal, nothing happens.
    pub fn start_over(&self) {
        if self.stop.load(Ordering::Relaxed) {
            return;
        }
        let again = &self.again;
        let asked = again.asked.fetch_add(1, Ordering::AcqRel) + 1;
        let t0 = std::time::Instant::now();
        while again.taken.load(Ordering::Acquire) < asked
            && !self.stop.load(Ordering::Relaxed)
            && t0.elapsed() < START_OVER_WAIT
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Heals (a paused process continued, a killed one started again) and returns the events.
    pub fn stop(self) -> Vec<FaultEvent> {
        self.end();
        (self.events.lock().map(|mut e| std::mem::take(&mut *e))).unwrap_or_default()
    }

    /// The final heal, before the run ends (a suite's check after the faults, such as the
    /// lost-writes read-back, calls it): no further fault, a paused process continued, a killed
    /// one started again; returns once done. Later calls do nothing.
    pub fn heal(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let healed = self.healed.lock().ok().and_then(|mut h| h.take());
        if let Some(events) = healed.and_then(|h| h.recv().ok())
            && let Ok(mut e) = self.events.lock()
        {
            *e = events;
        }
    }

    /// Heals, then lets the thread end (the processes it started again get their parent-death
    /// signal: the stage is ending, and stops them anyway).
    fn end(&self) {
        self.heal();
        drop(self.finish.lock().ok().and_then(|mut f| f.take()));
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
    }
}

impl Drop for Nemesis {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawFault {
        RawFault::from_flag(text).unwrap()
    }

    #[test]
    fn faults_resolve_and_read_back_as_written() {
        let f = raw("kill every=10s after=500ms")
            .resolve(&["redis"])
            .unwrap();
        assert_eq!(f.to_string(), "kill target=redis every=10s after=500ms");
        let f = raw("pause target=b at=12s,5s for=2s healthy=1s")
            .resolve(&["a", "b"])
            .unwrap();
        assert_eq!(f.when, When::At(vec![5_000_000_000, 12_000_000_000]));
        assert_eq!(f.to_string(), "pause target=b at=5s,12s for=2s healthy=1s");
        let e = |t: &str, started: &[&str]| raw(t).resolve(started).unwrap_err().to_string();
        assert!(e("kill every=1s", &[]).contains("needs a target whose process dyno starts"));
        assert!(e("kill every=1s", &["a", "b"]).contains("name one"));
        assert!(e("kill target=c every=1s", &["a"]).contains("has no process dyno starts"));
        assert!(e("kill every=1s at=2s", &["a"]).contains("exactly one of"));
        assert!(e("pause every=1s after=1s", &["a"]).contains("after is not a setting"));
        assert!(e("explode every=1s", &["a"]).contains("unknown fault action"));
        assert!(e("kill every=1s colour=red", &["a"]).contains("unknown fault key"));
        assert!(RawFault::from_flag("kill every").is_err());
        // A cluster's members in turn, or the one named.
        let f = raw("kill target=r every=5s")
            .resolve(&["r/p", "r/q", "web"])
            .unwrap();
        assert_eq!(f.members, ["r/p", "r/q"]);
        assert_eq!(f.to_string(), "kill target=r every=5s after=1s");
        let f = raw("kill target=r member=q every=5s")
            .resolve(&["r/p", "r/q"])
            .unwrap();
        assert_eq!(f.to_string(), "kill target=r member=q every=5s after=1s");
        assert!(e("kill target=r member=z every=1s", &["r/p"]).contains("has no member \"z\""));
        // dyno's own clients need no process of a target.
        let f = raw("restart-clients every=30s").resolve(&[]).unwrap();
        assert_eq!(f.to_string(), "restart-clients every=30s");
    }

    #[test]
    fn a_role_query_names_the_member_whose_port_stands_alone_in_its_output() {
        let role = |cmd: &str| Role {
            cmd: cmd.into(),
            ports: vec![("r/p".into(), 6379), ("r/q".into(), 16379)],
        };
        assert_eq!(
            role("printf '127.0.0.1\\n16379\\n'").primary(),
            Ok("r/q".into())
        );
        assert_eq!(
            role("echo master 127.0.0.1:6379").primary(),
            Ok("r/p".into())
        );
        assert!(
            role("echo 163790")
                .primary()
                .unwrap_err()
                .contains("named no member")
        );
    }

    #[test]
    fn a_schedule_started_over_counts_again_from_that_moment() {
        // restart-clients at 60 ms and 120 ms of each schedule (none past 150 ms), as a level
        // with two tests would see them.
        let f = raw("restart-clients every=60ms").resolve(&[]).unwrap();
        let clock = Clock::monotonic();
        let clients = Arc::new(AtomicU64::new(0));
        let n = Nemesis::start(
            vec![f],
            (
                Vec::new(),
                clients.clone(),
                Default::default(),
                Default::default(),
            ),
            Box::new(|_, _| {}),
            clock.clone(),
            (1, 0, 150_000_000),
        );
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            clients.load(Ordering::Relaxed),
            2,
            "the first schedule, whole"
        );
        let again = clock.now_ns();
        n.start_over();
        let taken = clock.now_ns();
        assert!(
            taken - again < 100_000_000,
            "taken up between faults at once"
        );
        std::thread::sleep(Duration::from_millis(300));
        n.heal();
        n.start_over(); // after the final heal: nothing, at once
        let events = n.stop();
        assert_eq!(events.len(), 4, "{events:?}");
        assert_eq!(clients.load(Ordering::Relaxed), 4);
        let second: Vec<u64> = events[2..].iter().map(|e| e.start_ns - again).collect();
        assert!(
            (60_000_000..100_000_000).contains(&second[0])
                && (120_000_000..160_000_000).contains(&second[1]),
            "the second schedule counts from its start: {second:?}"
        );
    }

    #[test]
    fn schedules_are_bounded_and_staggers_stay_within_twice_the_mean() {
        assert_eq!(schedule(&When::Every(3), 0, 10), [3, 6, 9]);
        assert_eq!(schedule(&When::Every(1), 0, u64::MAX).len(), MAX_EVENTS);
        assert_eq!(schedule(&When::At(vec![2, 8, 20]), 0, 10), [2, 8]);
        let s = schedule(&When::Stagger(1_000), 7, 1_000_000);
        assert!(
            s.windows(2).all(|w| w[1] > w[0] && w[1] - w[0] <= 2_000),
            "{s:?}"
        );
        assert!((400..=2_000).contains(&s.len()), "{}", s.len());
        assert_eq!(s, schedule(&When::Stagger(1_000), 7, 1_000_000), "seeded");
    }
}
