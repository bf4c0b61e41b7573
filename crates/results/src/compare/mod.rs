//! Judging a difference between two runs: each figure of a case as a relative change (new over
//! base, minus one, of the geometric means over the repetitions) with its 95% interval, a
//! p-value, and a verdict by criterion.rs's rule — improved or regressed only when the test
//! holds for the comparison as a whole (Holm's correction at α = 5% over every figure judged)
//! and the whole interval lies beyond ±noise; "no change" otherwise; "too few repetitions"
//! below [`MIN_REPS`] a side and "too few runs" while the history holds fewer than [`MIN_RUNS`]
//! earlier runs of the plan to measure this machine's run-to-run noise — never a guess.
//! [`judge`] says what the test is and why; [`noise`] measures the run-to-run part.

pub mod judge;
pub mod noise;

pub use judge::{ALPHA, MIN_REPS, MIN_RUNS};
pub use noise::{RunNoise, run_noise};

use judge::{RunVariance, Side};
use serde::{Deserialize, Serialize};

/// A run others are judged against, with this machine's run-to-run noise of its plan (from the
/// history of its results root).
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub record: crate::RunRecord,
    pub noise: RunNoise,
}

/// What a comparison concluded about one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Improved,
    Regressed,
    NoChange,
    /// Fewer than [`MIN_REPS`] repetitions on a side: no test, no verdict.
    TooFewReps,
    /// Fewer than [`MIN_RUNS`] earlier runs of the plan on this machine: its run-to-run noise
    /// is unknown, and the repetitions alone would take the machine's drift for a change.
    TooFewRuns,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no change",
            Verdict::TooFewReps => "too few repetitions",
            Verdict::TooFewRuns => "too few runs",
        }
    }
}

/// One figure of a matched case, on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureChange {
    /// `rate`, `p50`, `p99`, `p99.9`, `max`, and a load case's `read B/s`, `write B/s`,
    /// `test time`.
    pub figure: String,
    /// The geometric mean over each side's repetitions.
    pub base: f64,
    pub new: f64,
    /// `new / base - 1`.
    pub change: f64,
    /// The 95% interval of `change`; `null` without a test.
    pub interval: Option<[f64; 2]>,
    /// The two-sided p-value of "no change" (before Holm's correction); `null` without a test.
    pub p_value: Option<f64>,
    /// The smallest change these runs would show 4 times in 5 (relative); `null` without a test.
    pub visible: Option<f64>,
    /// This machine's run-to-run noise of the figure: one standard deviation of a run's figure
    /// across the earlier runs (relative); `null` when the history has too few.
    pub run_noise: Option<f64>,
    /// Repetitions a side that would show a change of ±noise (4 times in 5); `null` without a
    /// test, or when the run-to-run noise alone hides such a change (more runs are needed, not
    /// more repetitions).
    pub reps_needed: Option<usize>,
    pub verdict: Verdict,
}

/// A figure every case may have: its name, how to read it from a repetition, which way is
/// better.
#[derive(Clone, Copy)]
pub struct Figure {
    pub name: &'static str,
    pub of: fn(&crate::Rep) -> Option<f64>,
    pub higher_is_better: bool,
}

/// The figures compared, in the table's order: the rate and the latency percentiles of every
/// case, then a load case's throughput in bytes and its test time (gobench's figures).
pub const FIGURES: [Figure; 8] = [
    Figure {
        name: "rate",
        of: |r| (r.ops > 0).then_some(r.ops_per_s),
        higher_is_better: true,
    },
    Figure {
        name: "p50",
        of: |r| r.latency_ns.as_ref().map(|l| l.p50 as f64),
        higher_is_better: false,
    },
    Figure {
        name: "p99",
        of: |r| r.latency_ns.as_ref().map(|l| l.p99 as f64),
        higher_is_better: false,
    },
    Figure {
        name: "p99.9",
        of: |r| r.latency_ns.as_ref().map(|l| l.p999 as f64),
        higher_is_better: false,
    },
    Figure {
        name: "max",
        of: |r| r.latency_ns.as_ref().map(|l| l.max as f64),
        higher_is_better: false,
    },
    Figure {
        name: "read B/s",
        of: |r| r.detail.load().map(|l| l.read_bytes_per_s),
        higher_is_better: true,
    },
    Figure {
        name: "write B/s",
        of: |r| r.detail.load().map(|l| l.write_bytes_per_s),
        higher_is_better: true,
    },
    Figure {
        name: "test time",
        of: |r| r.detail.load().map(|_| r.wall_ns as f64),
        higher_is_better: false,
    },
];

/// The values of figure `f` in `c`'s repetitions that have it.
pub fn values(c: &crate::Case, f: Figure) -> Vec<f64> {
    c.reps.iter().filter_map(f.of).collect()
}

/// One figure's change before the comparison's verdicts: the test, or why there is none.
fn figure(
    f: Figure,
    (base, new): (Side, Side),
    runs: Option<RunVariance>,
    noise: f64,
) -> (FigureChange, Option<judge::Test>) {
    let tested = runs.and_then(|v| judge::test(base, new, v));
    let pooled = (base.var * (base.n - 1) as f64 + new.var * (new.n - 1) as f64)
        / ((base.n + new.n).saturating_sub(2).max(1)) as f64;
    let verdict = if base.n < MIN_REPS || new.n < MIN_REPS {
        Verdict::TooFewReps
    } else if runs.is_none() {
        Verdict::TooFewRuns
    } else {
        Verdict::NoChange
    };
    let change = FigureChange {
        figure: f.name.to_string(),
        base: base.mean.exp(),
        new: new.mean.exp(),
        change: (new.mean - base.mean).exp_m1(),
        interval: tested.map(|t| t.interval),
        p_value: tested.map(|t| t.p_value),
        visible: tested.map(|t| t.visible),
        run_noise: runs.map(|v| v.var.sqrt().exp_m1()),
        reps_needed: (tested.zip(runs)).and_then(|(_, v)| judge::reps_for(noise, pooled, v)),
        verdict,
    };
    (change, tested)
}

/// The verdict of a figure that went up.
fn better_if(up_is_better: bool) -> Verdict {
    if up_is_better {
        Verdict::Improved
    } else {
        Verdict::Regressed
    }
}

/// One case present in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseComparison {
    /// The case's identity, as `CaseId` shows it.
    pub case: String,
    /// Repetitions on each side.
    pub reps: [usize; 2],
    /// `rate` (operations per second), then the latency figures (`p50`, `p99`, `p99.9`, `max`)
    /// of the repetitions that have them.
    pub figures: Vec<FigureChange>,
    /// A load case's totals over its repetitions on each side (gobench's lines: requests,
    /// successful, network failed, bad requests); empty for other cases. Shown, not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counts: Vec<Count>,
    /// The consistency verdict on each side, when either run checked its history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<VerdictChange>,
}

/// A consistency verdict on each side (`None`: that run kept no history).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictChange {
    pub base: Option<crate::Verdict>,
    pub new: Option<crate::Verdict>,
}

impl VerdictChange {
    /// Worse on the new side: valid before and not now, or invalid now and not before.
    pub fn worse(&self) -> bool {
        let rank = |v: Option<crate::Verdict>| match v {
            None | Some(crate::Verdict::Valid) => 0,
            Some(crate::Verdict::Unknown) => 1,
            Some(crate::Verdict::Invalid) => 2,
        };
        self.new.is_some() && rank(self.new) > rank(self.base)
    }
}

/// A total on both sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    pub name: String,
    pub base: u64,
    pub new: u64,
}

/// A load case's totals over its measured repetitions; `None` for other cases.
fn load_totals(c: &crate::Case) -> Option<[(&'static str, u64); 4]> {
    let loads: Vec<&crate::LoadRep> = c.reps.iter().filter_map(|r| r.detail.load()).collect();
    if loads.is_empty() {
        return None;
    }
    let sum = |f: fn(&crate::LoadRep) -> u64| loads.iter().map(|l| f(l)).sum::<u64>();
    Some([
        ("requests", sum(|l| l.requests)),
        ("successful (2xx)", sum(|l| l.ok)),
        ("network failed", sum(|l| l.network_failed)),
        ("bad requests (!2xx)", sum(|l| l.non_2xx)),
    ])
}

/// Two runs compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The changes that count: beyond ±this (relative).
    pub noise: f64,
    /// Earlier runs of the plan on this machine the run-to-run noise was measured over.
    pub runs: usize,
    pub cases: Vec<CaseComparison>,
    /// Cases of one run only (by identity), listed rather than dropped.
    pub only_base: Vec<String>,
    pub only_new: Vec<String>,
    /// Settings that differ between the runs (rate, concurrency, sizes, durability, dyno's
    /// version, the machine): a comparison across them compares more than the change.
    pub differences: Vec<String>,
}

/// What differs between the runs besides the code under test.
pub fn differences(base: &crate::RunRecord, new: &crate::RunRecord) -> Vec<String> {
    let mut out = Vec::new();
    let mut differ = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{what}: {a} → {b}"));
        }
    };
    let (pb, pn) = (&base.plan, &new.plan);
    differ("suite", pb.suite.clone(), pn.suite.clone());
    differ(
        "clients",
        pb.concurrency.to_string(),
        pn.concurrency.to_string(),
    );
    differ("objects", pb.objects.to_string(), pn.objects.to_string());
    differ(
        "size (bytes)",
        pb.size_bytes.to_string(),
        pn.size_bytes.to_string(),
    );
    differ(
        "load settings (rate, duration, …)",
        json(&pb.load),
        json(&pn.load),
    );
    differ("magma settings", json(&pb.magma), json(&pn.magma));
    differ(
        "namespace settings",
        json(&pb.namespace),
        json(&pn.namespace),
    );
    differ("kv settings", json(&pb.kv), json(&pn.kv));
    differ(
        "load generators (shards merged)",
        pb.merged.len().max(1).to_string(),
        pn.merged.len().max(1).to_string(),
    );
    differ(
        "dyno version",
        base.dyno.version.clone(),
        new.dyno.version.clone(),
    );
    let (eb, en) = (&base.environment, &new.environment);
    differ("CPU", eb.cpu_model.clone(), en.cpu_model.clone());
    differ("cores", eb.cores.to_string(), en.cores.to_string());
    differ("kernel", eb.kernel.clone(), en.kernel.clone());
    for c in &base.cases {
        if let Some(n) = new.case(&c.id()) {
            differ(
                &format!("durability of {}", c.target),
                c.durability.clone(),
                n.durability.clone(),
            );
        }
    }
    out.dedup();
    out
}

/// A plan section as JSON, to see whether two differ.
fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Compares every case of `new` with the same case of `base`; figures move beyond ±`noise`
/// (relative, e.g. 0.02) to count, and `runs` is this machine's run-to-run noise of the plan
/// ([`run_noise`] over the history, without `new`).
pub fn compare(
    base: &crate::RunRecord,
    new: &crate::RunRecord,
    noise: f64,
    runs: &RunNoise,
) -> Comparison {
    let mut cases = Vec::new();
    let mut tests = Vec::new();
    let mut only_base = Vec::new();
    for b in &base.cases {
        let id = b.id();
        let Some(n) = new.case(&id) else {
            only_base.push(id.to_string());
            continue;
        };
        let key = id.to_string();
        let mut figures = Vec::new();
        for f in FIGURES {
            let Some(sides) = Side::of(&values(b, f)).zip(Side::of(&values(n, f))) else {
                continue;
            };
            let (change, tested) = figure(f, sides, runs.of(&key, f.name), noise);
            tests.push(((cases.len(), figures.len()), f.higher_is_better, tested));
            figures.push(change);
        }
        let counts = match (load_totals(b), load_totals(n)) {
            (Some(tb), Some(tn)) => (tb.into_iter().zip(tn))
                .map(|((name, base), (_, new))| Count {
                    name: name.to_string(),
                    base,
                    new,
                })
                .collect(),
            _ => Vec::new(),
        };
        let verdict = |c: &crate::Case| c.consistency.as_ref().map(|v| v.verdict);
        let consistency = (verdict(b).is_some() || verdict(n).is_some()).then(|| VerdictChange {
            base: verdict(b),
            new: verdict(n),
        });
        cases.push(CaseComparison {
            case: key,
            reps: [b.reps.len(), n.reps.len()],
            figures,
            counts,
            consistency,
        });
    }
    // One family: the chance of any false claim in the whole comparison stays at α.
    let tested: Vec<_> = tests
        .iter()
        .filter_map(|(at, up, t)| Some((*at, *up, (*t)?)))
        .collect();
    let p_values: Vec<f64> = tested.iter().map(|(_, _, t)| t.p_value).collect();
    for (((c, f), up, t), rejected) in tested.iter().zip(judge::holm(&p_values)) {
        let [lo, hi] = t.interval;
        let verdict = &mut cases[*c].figures[*f].verdict;
        if rejected && lo > noise {
            *verdict = better_if(*up);
        } else if rejected && hi < -noise {
            *verdict = better_if(!*up);
        }
    }
    let only_new = (new.cases.iter())
        .filter(|c| base.case(&c.id()).is_none())
        .map(|c| c.id().to_string())
        .collect();
    Comparison {
        noise,
        runs: runs.runs,
        cases,
        only_base,
        only_new,
        differences: differences(base, new),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(v: &[f64]) -> Side {
        Side::of(v).unwrap()
    }

    const QUIET: RunVariance = RunVariance {
        var: 0.0,
        between: 0.0,
        runs: 5,
    };

    #[test]
    fn a_ten_percent_drop_in_rate_is_a_regression_and_in_latency_an_improvement() {
        let rate = FIGURES[0];
        let base = side(&[1000.0, 1010.0, 990.0, 1005.0, 995.0]);
        let new = side(&[900.0, 909.0, 891.0, 904.5, 895.5]);
        let (f, t) = figure(rate, (base, new), Some(QUIET), 0.02);
        assert_eq!(
            f.verdict,
            Verdict::NoChange,
            "verdicts come with the family"
        );
        let t = t.unwrap();
        assert!(t.interval[1] < -0.02 && t.p_value < 0.001, "{t:?}");
        assert_eq!(better_if(rate.higher_is_better), Verdict::Improved);
        assert_eq!(better_if(!FIGURES[2].higher_is_better), Verdict::Improved);
    }

    #[test]
    fn without_repetitions_or_runs_there_is_no_test() {
        let rate = FIGURES[0];
        let three = side(&[1.0, 1.0, 1.0]);
        let five = side(&[2.0; 5]);
        let (f, t) = figure(rate, (three, five), Some(QUIET), 0.02);
        assert_eq!(
            (f.verdict, t, f.interval),
            (Verdict::TooFewReps, None, None)
        );
        assert!((f.change - 1.0).abs() < 1e-12);
        let (f, t) = figure(rate, (five, five), None, 0.02);
        assert_eq!(
            (f.verdict, t, f.run_noise),
            (Verdict::TooFewRuns, None, None)
        );
    }
}
