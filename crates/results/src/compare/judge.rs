//! The test behind every verdict: one figure of one case, its repetitions on each side, and the
//! run-to-run noise of this machine when the history knows it.
//!
//! The unit is the repetition, never the operation: consecutive operations are correlated, and
//! with 10⁵ of them any difference is "significant". But repetitions of one run are not the whole
//! story either: measured on this project's CI machine (bench/aa.sh), repetitions of one run
//! agree 3–4× more closely than the runs do, because the machine drifts between regimes that last
//! longer than a run. So the unit of a verdict is the run: the difference between the two runs'
//! figures is held against how much runs of this plan differ on this machine — the variance of a
//! run's figure over the earlier runs the history holds ([`super::noise`]), twice (one run a
//! side) — or against the repetitions' own spread when that is the larger (Welch). Without
//! earlier runs a verdict would rest on the repetitions alone and take the machine's drift for
//! a change, so it is withheld ("too few runs").
//!
//! The test is a t test on log values (a ratio becomes a difference; heavy right tails shrink):
//! with the runs' variance, `k − 1` degrees of freedom for `k` earlier runs (a prediction of one
//! run from k); with the repetitions', Welch's with Satterthwaite's degrees of freedom. The
//! interval is the t interval of the same quantity, so "the whole interval lies beyond ±noise"
//! (criterion.rs's rule) always implies p < α. The minimum of [`MIN_REPS`] repetitions a side
//! is benchstat's: below 4, no rank test can reach p < 0.05.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Repetitions each side needs for a verdict (benchstat: with fewer than 4 a side a rank test
/// cannot reach p < 0.05).
pub const MIN_REPS: usize = 4;
/// Earlier runs of the plan the history must hold to know the run-to-run noise: two degrees of
/// freedom, a wide but honest interval.
pub const MIN_RUNS: usize = 3;
/// The level of every test, for the whole comparison (Holm's correction over its figures).
pub const ALPHA: f64 = 0.05;
/// The power the "smallest visible change" is stated at.
pub const POWER: f64 = 0.8;

/// One side's repetitions of one figure, on the log scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Side {
    pub n: usize,
    /// Mean of the logs (the log of the geometric mean).
    pub mean: f64,
    /// Sample variance of the logs (0 for one value).
    pub var: f64,
}

impl Side {
    /// The side of `values`; `None` when empty or when a value is not above 0 (a figure of 0
    /// has no ratio).
    pub fn of(values: &[f64]) -> Option<Side> {
        if values.is_empty() || values.iter().any(|v| !(*v > 0.0 && v.is_finite())) {
            return None;
        }
        let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
        let n = logs.len();
        let mean = logs.iter().sum::<f64>() / n as f64;
        let var = match n {
            1 => 0.0,
            _ => logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64,
        };
        Some(Side { n, mean, var })
    }
}

/// How much runs of a plan differ on this machine, in one figure (log scale).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunVariance {
    /// The variance of a run's figure (the mean of its repetitions' logs) across runs.
    pub var: f64,
    /// The part of it no number of repetitions inside a run removes (the runs' variance less
    /// their repetitions' share, at least 0).
    pub between: f64,
    /// The runs it was measured over.
    pub runs: usize,
}

/// What the test found for one figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Test {
    /// `new / base - 1` of the geometric means.
    pub change: f64,
    /// Its 95% interval.
    pub interval: [f64; 2],
    /// Two-sided p-value of "no change".
    pub p_value: f64,
    /// The smallest change this data would show (at [`POWER`]), as a relative change.
    pub visible: f64,
}

/// The t test of `new` against `base`: the difference of their log means against the larger of
/// the runs' variance (`runs`, twice) and the repetitions' (Welch). `None` when a side has
/// fewer than [`MIN_REPS`] repetitions.
pub fn test(base: Side, new: Side, runs: RunVariance) -> Option<Test> {
    if base.n < MIN_REPS || new.n < MIN_REPS {
        return None;
    }
    let (vb, vn) = (base.var / base.n as f64, new.var / new.n as f64);
    let welch = (
        vb + vn,
        (vb + vn).powi(2) / (vb * vb / (base.n - 1) as f64 + vn * vn / (new.n - 1) as f64),
    );
    let by_runs = (2.0 * runs.var, runs.runs.saturating_sub(1).max(1) as f64);
    let (se2, df) = if by_runs.0 >= welch.0 { by_runs } else { welch };
    let diff = new.mean - base.mean;
    let change = diff.exp_m1();
    if se2 <= 0.0 {
        // Every repetition and run the same (a virtual clock): the difference is exact.
        let p_value = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(Test {
            change,
            interval: [change, change],
            p_value,
            visible: 0.0,
        });
    }
    let t = StudentsT::new(0.0, 1.0, df.max(1.0)).ok()?;
    let se = se2.sqrt();
    let p_value = (2.0 * (1.0 - t.cdf((diff / se).abs()))).clamp(0.0, 1.0);
    let q = t.inverse_cdf(1.0 - ALPHA / 2.0);
    let visible = ((q + t.inverse_cdf(POWER)) * se).exp_m1();
    Some(Test {
        change,
        interval: [(diff - q * se).exp_m1(), (diff + q * se).exp_m1()],
        p_value,
        visible,
    })
}

/// Holm's step-down correction: which of `p_values` are rejected at [`ALPHA`] for the family as
/// a whole (the chance of any false claim in it stays at α).
pub fn holm(p_values: &[f64]) -> Vec<bool> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut rejected = vec![false; m];
    for (rank, &i) in order.iter().enumerate() {
        if p_values[i] > ALPHA / (m - rank) as f64 {
            break;
        }
        rejected[i] = true;
    }
    rejected
}

/// Repetitions a side that bring the repetition part of the smallest visible change down to
/// `change` (relative), with `side_var` the pooled variance of one repetition (log scale) and
/// `runs` the run-to-run part; `None` when the run-to-run part alone is larger than `change`
/// (no number of repetitions helps: alternate whole runs instead).
pub fn reps_for(change: f64, side_var: f64, runs: RunVariance) -> Option<usize> {
    // Normal quantiles: a plan, not a verdict.
    let z = 1.959_964 + 0.841_621;
    let budget = ((change.abs()).ln_1p() / z).powi(2) - 2.0 * runs.between;
    if budget <= 0.0 {
        return None;
    }
    Some(((2.0 * side_var / budget).ceil() as usize).max(MIN_REPS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(values: &[f64]) -> Side {
        Side::of(values).unwrap()
    }

    const NONE: RunVariance = RunVariance {
        var: 0.0,
        between: 0.0,
        runs: 10,
    };

    #[test]
    fn a_ten_percent_shift_is_found_and_its_interval_holds_it() {
        let base = side(&[100.0, 101.0, 99.0, 100.5, 99.5]);
        let new = side(&[110.0, 111.0, 109.0, 110.5, 109.5]);
        let t = test(base, new, NONE).unwrap();
        assert!((t.change - 0.10).abs() < 0.001, "{t:?}");
        assert!(t.p_value < 1e-6, "{t:?}");
        assert!(t.interval[0] > 0.08 && t.interval[1] < 0.12, "{t:?}");
    }

    #[test]
    fn run_to_run_noise_widens_the_interval_and_hides_what_it_explains() {
        let base = side(&[100.0, 101.0, 99.0, 100.5, 99.5]);
        let new = side(&[110.0, 111.0, 109.0, 110.5, 109.5]);
        // Runs that differ by about 15% (log sd 0.15) explain a 10% step.
        let noisy = RunVariance {
            var: 0.15f64.powi(2),
            between: 0.15f64.powi(2),
            runs: 20,
        };
        let t = test(base, new, noisy).unwrap();
        assert!(t.p_value > 0.3, "{t:?}");
        assert!(t.interval[0] < 0.0 && t.interval[1] > 0.2, "{t:?}");
        assert!(t.visible > 0.5, "{t:?}");
        assert_eq!(reps_for(0.10, 0.0001, noisy), None);
        assert_eq!(reps_for(0.10, 0.0001, NONE), Some(MIN_REPS));
        assert!(reps_for(0.01, 0.01, NONE).unwrap() > 100);
    }

    #[test]
    fn too_few_repetitions_are_not_tested() {
        let three = side(&[1.0, 2.0, 3.0]);
        assert_eq!(test(three, side(&[1.0, 2.0, 3.0, 4.0]), NONE), None);
        assert!(Side::of(&[1.0, 0.0]).is_none());
    }

    #[test]
    fn identical_repetitions_compare_exactly() {
        let a = side(&[5.0; 4]);
        let t = test(a, a, NONE).unwrap();
        assert_eq!((t.change, t.p_value), (0.0, 1.0));
        let t = test(a, side(&[6.0; 4]), NONE).unwrap();
        assert_eq!(t.p_value, 0.0);
    }

    #[test]
    fn holm_rejects_in_order_and_stops_at_the_first_that_holds() {
        assert_eq!(
            holm(&[0.01, 0.04, 0.001, 0.5]),
            vec![true, false, true, false]
        );
        // 0.012 ≤ 0.05/3 → yes; then 0.03 > 0.05/2 → stop, though 0.04 < 0.05.
        assert_eq!(holm(&[0.012, 0.03, 0.04]), vec![true, false, false]);
        assert!(holm(&[]).is_empty());
    }

    /// Welch's t over repetitions drawn from one normal (log) distribution, no run-to-run
    /// noise: the share of p < 0.05 is at α (seeded: 2,000 comparisons of 5 against 5).
    #[test]
    fn null_p_values_are_uniform_enough() {
        let mut s = 11u64;
        let mut normal = || {
            // Box–Muller from two uniforms.
            let u = |s: &mut u64| {
                ((crate::rng::splitmix64(s) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
            };
            let (a, b) = (u(&mut s), u(&mut s));
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        };
        let mut below = 0;
        for _ in 0..2000 {
            let mut draw = || (0..5).map(|_| (0.05 * normal()).exp()).collect::<Vec<_>>();
            let (b, n) = (draw(), draw());
            if test(side(&b), side(&n), NONE).unwrap().p_value < ALPHA {
                below += 1;
            }
        }
        // α = 5% of 2,000 is 100; binomial sd ≈ 10.
        assert!((60..=140).contains(&below), "{below} of 2000");
    }
}
