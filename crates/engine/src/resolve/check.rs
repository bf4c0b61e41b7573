//! `--check` and `[check]`: the model a run's histories are checked against, which the suite
//! must know how to keep, and the time the check may spend on one key.

use crate::plan::{PlanError, RawPlan};
use crate::suggest::did_you_mean;
use crate::suite::{Check, Suite};
use results::consistency::MODELS;
use results::thresholds::{Metric, Threshold};
use std::time::Duration;

/// The most time a check spends on one key unless told.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(10);

impl RawPlan {
    /// The check, if asked for; `thresholds` (resolved from the plan's) may gate on it only then.
    pub(super) fn resolve_check(
        &self,
        suite: &dyn Suite,
        thresholds: &[Threshold],
    ) -> Result<Option<Check>, PlanError> {
        let Some(model) = &self.check else {
            let gate = (self.thresholds.iter().zip(thresholds))
                .find(|(_, p)| p.metric == Metric::Consistency);
            if let Some((t, _)) = gate {
                return Err(PlanError::new(
                    t.at.clone(),
                    format!(
                        "threshold {:?} reads a history's check, and the run keeps none",
                        t.value
                    ),
                )
                .hint("add --check linearizable (or [check] model = \"linearizable\")"));
            }
            return match &self.check_budget {
                Some(b) => Err(
                    PlanError::new(b.at.clone(), "budget is a setting of a check").hint(
                        "add model = \"linearizable\" under [check] (or --check), or drop budget",
                    ),
                ),
                None => Ok(None),
            };
        };
        let names: Vec<&str> = MODELS.iter().map(|m| m.0).collect();
        let Some(&(name, _)) = MODELS.iter().find(|m| m.0 == model.value.trim()) else {
            return Err(PlanError::new(
                model.at.clone(),
                format!("{:?} is not a consistency model dyno checks", model.value),
            )
            .hint(format!(
                "{}dyno checks: {}",
                did_you_mean(&model.value, names.iter().copied()),
                names.join(", ")
            )));
        };
        if !suite.checks().contains(&name) {
            let suite_name = results::Named::name(suite);
            return Err(PlanError::new(
                model.at.clone(),
                format!("the {suite_name} suite keeps no history to check for {name}"),
            )
            .hint(match results::consistency::transactional(name) {
                true => "check transactions with the append suite (on postgres:// or mysql://), or drop --check",
                false => "check with the kv or ycsb suite (each key a register), or drop --check",
            }));
        }
        let budget = match &self.check_budget {
            None => DEFAULT_BUDGET,
            Some(b) => crate::units::parse_duration(&b.value)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    PlanError::new(b.at.clone(), format!("{:?} is not a duration", b.value))
                        .hint("write e.g. budget = \"30s\": the most time spent on one key")
                })?,
        };
        Ok(Some(Check {
            model: name,
            budget,
            dir: None,
        }))
    }
}
