//! The run's faults and levels, and its gates (thresholds, abort_on_fail, a capacity search's
//! objectives), checked against the targets they act on.

use super::*;

/// How far into each repetition `abort_on_fail` starts checking: the first intervals of a
/// repetition (connections opening, caches filling) are no verdict on it.
const DEFAULT_ABORT_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// The members (`TARGET/MEMBER`) of the clusters dyno starts that `keep` keeps.
fn members_where(targets: &[PlanTarget], keep: impl Fn(&MemberSpec) -> bool) -> Vec<String> {
    (targets.iter())
        .flat_map(|t| match &t.process {
            Some(ProcessSpec::Members { members, .. }) => (members.iter())
                .filter(|m| keep(m))
                .map(|m| format!("{}/{}", t.name, m.name))
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

impl RawPlan {
    /// `[[faults]]` and `levels`: each fault's target and members among those dyno starts, a
    /// link where it acts through one, a role query where it aims at a primary.
    pub(super) fn resolve_faults(
        &self,
        targets: &[PlanTarget],
    ) -> Result<(Vec<crate::fault::Fault>, Vec<crate::fault::Level>), PlanError> {
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
        let aux = members_where(targets, |m| m.aux);
        let aux: Vec<&str> = aux.iter().map(String::as_str).collect();
        let has_role = |name: &str| {
            (targets.iter()).any(|t| {
                t.name == name
                    && matches!(&t.process, Some(ProcessSpec::Members { role: Some(_), .. }))
            })
        };
        let linked = members_where(targets, |m| m.listen.is_some());
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
        Ok((faults, levels))
    }

    /// The thresholds, and from how far into each repetition `abort_on_fail` checks them.
    pub(super) fn resolve_gates(
        &self,
    ) -> Result<
        (
            Vec<results::thresholds::Threshold>,
            Option<std::time::Duration>,
        ),
        PlanError,
    > {
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
        Ok((thresholds, abort_after))
    }

    /// `--find-max`: the objectives, each a threshold without scope or baseline, on a run of
    /// one target whose suite sweeps `rate`, with no sweep, level or fault of its own.
    pub(super) fn resolve_search(
        &self,
        suite: &'static dyn crate::suite::Suite,
        targets: usize,
    ) -> Result<Vec<results::thresholds::Threshold>, PlanError> {
        let Some(first) = self.find_max.first() else {
            return Ok(Vec::new());
        };
        let refuse = |why: &str, hint: &str| Err(PlanError::new(first.at.clone(), why).hint(hint));
        if !suite.sweepable().iter().any(|p| p.name == "rate") {
            return refuse(
                &format!(
                    "the {} suite has no rate to search",
                    results::Named::name(suite)
                ),
                "search with a suite that runs an open loop at a rate: load (http://, h2c://, grpc://, tcp://), ycsb or sql",
            );
        }
        if !self.sweeps.is_empty() || !self.levels.is_empty() || !self.faults.is_empty() {
            return refuse(
                "a capacity search chooses its own rates, without sweeps, levels or faults",
                "drop --sweep, --levels and --fault, or run them apart",
            );
        }
        if targets != 1 {
            return refuse(
                "a capacity search runs on one target",
                "name one target; search each in a run of its own",
            );
        }
        (self.find_max.iter())
            .map(|o| {
                let t = results::thresholds::Threshold::parse(&o.value)
                    .map_err(|e| PlanError::new(o.at.clone(), e.message).hint(e.hint))?;
                if t.baseline || t.target.is_some() || t.test.is_some() || t.level.is_some() {
                    return Err(PlanError::new(
                        o.at.clone(),
                        format!(
                            "{:?}: an objective is a figure and its limit, nothing more",
                            o.value
                        ),
                    )
                    .hint("write e.g. --find-max 'p99 < 20ms' or --find-max 'errors < 0.1%'"));
                }
                Ok(t)
            })
            .collect()
    }
}
