//! This machine's run-to-run noise, measured over earlier runs of the same plan: the part of a
//! difference between two runs that no number of repetitions inside them can show.
//!
//! The runs counted are those the history holds that differ from the base in nothing
//! [`super::differences`] lists (suite, settings, dyno's version, the machine). For each case and
//! figure: the variance of the runs' log means, which is what a verdict is held to; and, for the
//! power note, the part of it that is the runs' own — less each run's repetition noise over its
//! repetitions (a random-effects estimate, floored at 0) — which more repetitions cannot shrink.

use super::judge::{MIN_RUNS, RunVariance, Side};
use crate::RunRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The run-to-run variance of each (case, figure) the earlier runs tell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunNoise {
    /// Earlier runs of the same plan on the same machine that were read.
    pub runs: usize,
    /// By case identity, then figure name.
    pub figures: BTreeMap<String, BTreeMap<String, RunVariance>>,
}

impl RunNoise {
    /// The run-to-run variance of `figure` of `case`; `None` when fewer than [`MIN_RUNS`] runs
    /// had it.
    pub fn of(&self, case: &str, figure: &str) -> Option<RunVariance> {
        self.figures.get(case)?.get(figure).copied()
    }
}

/// The run-to-run noise of `base`'s cases over `earlier` (the base itself may be among them; a
/// run that is to be judged must not be).
pub fn run_noise(base: &RunRecord, earlier: &[RunRecord]) -> RunNoise {
    let same: Vec<&RunRecord> = (earlier.iter())
        .filter(|r| super::differences(base, r).is_empty())
        .collect();
    let mut figures = BTreeMap::new();
    for case in &base.cases {
        let id = case.id();
        let mut by_figure = BTreeMap::new();
        for f in super::FIGURES {
            let sides: Vec<Side> = (same.iter())
                .filter_map(|r| r.case(&id))
                .filter_map(|c| Side::of(&super::values(c, f)))
                .collect();
            if sides.len() < MIN_RUNS {
                continue;
            }
            let k = sides.len() as f64;
            let mean = sides.iter().map(|s| s.mean).sum::<f64>() / k;
            let between = sides.iter().map(|s| (s.mean - mean).powi(2)).sum::<f64>() / (k - 1.0);
            let within = sides.iter().map(|s| s.var / s.n as f64).sum::<f64>() / k;
            let v = RunVariance {
                var: between,
                between: (between - within).max(0.0),
                runs: sides.len(),
            };
            by_figure.insert(f.name.to_string(), v);
        }
        if !by_figure.is_empty() {
            figures.insert(id.to_string(), by_figure);
        }
    }
    RunNoise {
        runs: same.len(),
        figures,
    }
}
