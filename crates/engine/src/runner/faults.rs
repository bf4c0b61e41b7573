//! The run's nemesis and what a stage's faults offer its suite: the roles of clusters, the effects of faults on each case.

use super::*;

/// The thread doing a stage's faults, when it has any; it tells the monitor of each process
/// started again, and `watch` of each event.
pub(super) fn nemesis(
    plan: &Plan,
    stage: &Stage,
    watched: &Watched,
    (clock, clients): (&Clock, &Arc<AtomicU64>),
    watch: Option<Arc<dyn Watch>>,
) -> Option<crate::fault::Nemesis> {
    if stage.faults.is_empty() {
        return None;
    }
    let monitor = watched.monitor.clone();
    let links = watched.links.clone();
    let follow = Box::new(move |old, new| {
        if let Some(m) = &monitor {
            m.follow(old, new);
        }
        for l in &links {
            l.follow(old, new);
        }
    });
    let gates = (watched.links.iter())
        .flat_map(|l| l.gates.iter().map(|(k, g)| (k.clone(), g.clone())))
        .collect();
    let (faults, members) = (
        stage.faults.clone(),
        (
            watched.started.clone(),
            clients.clone(),
            roles(&stage.targets),
            gates,
        ),
    );
    // A level's faults count from its start, and start over with each test (its suite says
    // when: `StageFaults::test_starts`), none due at or past a test's duration; a plain run's
    // count from the run's start.
    let (origin, until) = if stage.level.is_some() {
        let until = (plan.settings.rep_duration_ns()).map_or(u64::MAX, |d| d.saturating_sub(1));
        (clock.now_ns(), until)
    } else {
        (0, u64::MAX)
    };
    let bounds = (plan.seed, origin, until);
    Some(crate::fault::Nemesis::start(
        faults,
        members,
        (follow, watch),
        clock.clone(),
        bounds,
    ))
}

/// A stage's faults as its suite steers them: a level's schedule starts over with each test.
pub(super) struct Faults<'n> {
    pub(super) nemesis: Option<&'n crate::fault::Nemesis>,
    pub(super) per_test: bool,
}

impl crate::suite::StageFaults for Faults<'_> {
    fn heal(&self) {
        if let Some(n) = self.nemesis {
            n.heal();
        }
    }
    fn test_starts(&self) {
        if let (Some(n), true) = (self.nemesis, self.per_test) {
            n.start_over();
        }
    }
}

/// The clusters' role queries, by target, with their members' ports.
pub(super) fn roles(
    targets: &[&PlanTarget],
) -> std::collections::BTreeMap<String, crate::fault::Role> {
    use crate::plan::ProcessSpec;
    (targets.iter())
        .filter_map(|t| match &t.process {
            Some(ProcessSpec::Members {
                members,
                role: Some(cmd),
                ..
            }) => Some((
                t.name.clone(),
                crate::fault::Role {
                    cmd: cmd.clone(),
                    // Announced (the link's, when linked) and listened on.
                    ports: (members.iter())
                        .flat_map(|m| {
                            let key = format!("{}/{}", t.name, m.name);
                            let listen = m.listen.map(|l| (key.clone(), l[0]));
                            [(key, m.port)].into_iter().chain(listen)
                        })
                        .collect(),
                },
            )),
            _ => None,
        })
        .collect()
}

/// What each fault did to `case`, from its measured repetitions' time series.
pub(super) fn fault_effects(
    events: &[results::faults::FaultEvent],
    case: &Case,
) -> Vec<results::faults::FaultEffect> {
    (case.reps.iter())
        .filter_map(|r| r.detail.series())
        .flat_map(|(intervals, started_ns)| results::faults::effects(events, intervals, started_ns))
        .collect()
}
