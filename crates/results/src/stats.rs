//! Statistics as pure functions over samples.
//!
//! Two kinds of sample reach a report: the repetitions of one case (a handful of rates, summarized
//! as best / median / min / max), and the operations of one case (millions of latencies, held in a
//! merged histogram and summarized by percentiles). Percentiles are never averaged: histograms are
//! merged first, then read.

use crate::histogram::Histogram;
use crate::record::{LatencySummary, Spread};

/// The spread of a set of repetitions of a higher-is-better figure (a rate).
///
/// `best` is the highest value, as zodbshootout reports; `median` is the middle value (the mean
/// of the two middle values for an even count). Returns `None` for an empty sample.
pub fn spread(samples: &[f64]) -> Option<Spread> {
    if samples.is_empty() {
        return None;
    }
    assert!(
        samples.iter().all(|s| s.is_finite()),
        "a sample of rates holds only finite values: {samples:?}"
    );
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    Some(Spread {
        best: sorted[n - 1],
        median: median_of_sorted(&sorted),
        min: sorted[0],
        max: sorted[n - 1],
    })
}

/// The middle value of a sorted, non-empty sample (the mean of the two middle values for an even
/// count).
fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

pub use crate::rate::per_s;

/// The percentiles dyno reports, read from one (merged) histogram. `None` when it is empty.
pub fn latency_summary(h: &Histogram) -> Option<LatencySummary> {
    if h.is_empty() {
        return None;
    }
    Some(LatencySummary {
        p50: h.value_at_quantile(0.50),
        p90: h.value_at_quantile(0.90),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        p9999: h.value_at_quantile(0.9999),
        max: h.max(),
        mean: h.mean(),
        stdev: Some(h.stdev()),
        count: h.len(),
    })
}

/// Merges histograms (of several workers or several repetitions) into one.
pub fn merge<'a>(parts: impl IntoIterator<Item = &'a Histogram>) -> Histogram {
    let mut out = crate::histogram::new_histogram();
    for h in parts {
        out.add(h)
            .expect("histograms of one range always merge without resizing");
    }
    out
}

/// Points the Theil–Sen slope is computed over: a longer series is thinned evenly to this many,
/// which keeps the pairs (n² / 2, about 130,000) cheap for a week-long run.
pub const TREND_POINTS: usize = 512;

/// The Theil–Sen slope of `points` (x, y): the median of the slopes of every pair, with Sen's
/// distribution-free 95% confidence interval (from Kendall's S). Robust: up to 29% of the points
/// may be wild without moving it. Returns `(slope, low, high)`, or `None` below 3 points or when
/// every x is the same.
pub fn theil_sen(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    sen_interval(&thin(points), 1.0)
}

/// `points`, thinned evenly to [`TREND_POINTS`] when longer.
fn thin(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    assert!(
        points.iter().all(|(x, y)| x.is_finite() && y.is_finite()),
        "trend points are finite"
    );
    if points.len() > TREND_POINTS {
        (0..TREND_POINTS)
            .map(|i| points[i * (points.len() - 1) / (TREND_POINTS - 1)])
            .collect()
    } else {
        points.to_vec()
    }
}

/// The Theil–Sen slope of `points` and Sen's interval, the variance of Kendall's S multiplied
/// by `factor` (1 for independent points).
fn sen_interval(points: &[(f64, f64)], factor: f64) -> Option<(f64, f64, f64)> {
    let n = points.len();
    if n < 3 {
        return None;
    }
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let dx = points[j].0 - points[i].0;
            if dx != 0.0 {
                slopes.push((points[j].1 - points[i].1) / dx);
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let m = slopes.len();
    let median = median_of_sorted(&slopes);
    // Sen (1968): C = z·sqrt(var S), var S = n(n-1)(2n+5)/18 (no ties); the interval runs from
    // the ((m - C)/2)-th to the ((m + C)/2 + 1)-th ordered slope.
    let nf = n as f64;
    let c = 1.96 * (nf * (nf - 1.0) * (2.0 * nf + 5.0) / 18.0 * factor).sqrt();
    let lo = (((m as f64 - c) / 2.0).floor().max(0.0) as usize).min(m - 1);
    let hi = (((m as f64 + c) / 2.0).ceil() as usize).min(m - 1);
    Some((median, slopes[lo], slopes[hi]))
}

/// Effective independent points below which the autocorrelation correction does not go: a
/// series of a few dozen samples cannot tell a slow wander from a bend (memory that rose and
/// stayed), and the bend is what a leak looks like under a load that stops.
const MIN_EFFECTIVE_POINTS: f64 = 10.0;

/// [`theil_sen`] of a series whose points are not independent: Sen's interval widened by Yue and
/// Wang's (2004) variance factor `1 + 2 Σ (1 − k/n) ρₖ` over the autocorrelations ρₖ of the
/// residuals from the line, summed while they stay positive (Geyer's initial positive sequence)
/// up to lag n/3, and bounded so that [`MIN_EFFECTIVE_POINTS`] remain. A sampled RSS is such a
/// series — each sample the last one plus a little — and taken as independent points a flat
/// process that wanders would read as a leak.
fn theil_sen_dependent(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let (slope, _, _) = theil_sen(points)?;
    let n = points.len().min(TREND_POINTS);
    let thinned = thin(points);
    let r: Vec<f64> = thinned.iter().map(|(x, y)| y - slope * x).collect();
    let mean = r.iter().sum::<f64>() / n as f64;
    let var: f64 = r.iter().map(|v| (v - mean).powi(2)).sum();
    let factor = match var > 0.0 {
        false => 1.0,
        true => {
            1.0 + (1..=n / 3)
                .map(|k| {
                    (0..n - k)
                        .map(|i| (r[i] - mean) * (r[i + k] - mean))
                        .sum::<f64>()
                        / var
                })
                .take_while(|rho| *rho > 0.0)
                .enumerate()
                .map(|(i, rho)| 2.0 * (1.0 - (i + 1) as f64 / n as f64) * rho)
                .sum::<f64>()
        }
    };
    let factor = factor.min((n as f64 / MIN_EFFECTIVE_POINTS).max(1.0));
    sen_interval(&thinned, factor)
}

/// The trend of a series sampled at `points` (seconds, value): growing when the whole 95%
/// interval of the slope — its points' autocorrelation taken out first — is above zero and even
/// its low end grows the series by more than 1% of the median value and more than `floor` (so
/// a few pages of noise are not a leak); shrinking when the mirror holds; flat otherwise.
/// `None` below 10 points: too short to say. Seeded in the tests: a flat process that wanders
/// (AR(1), ρ = 0.9) is called a trend 5 times in 50, against 36 with its points taken as
/// independent.
pub fn trend(points: &[(f64, f64)], floor: f64) -> Option<crate::record::Trend> {
    if points.len() < 10 {
        return None;
    }
    let (slope, low, high) = theil_sen_dependent(points)?;
    let span = points[points.len() - 1].0 - points[0].0;
    let mut ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    ys.sort_by(f64::total_cmp);
    let median = median_of_sorted(&ys);
    let matters = |s: f64| (s * span).abs() > (0.01 * median.abs()).max(floor);
    // The near end of the interval must matter, not only the estimate.
    let verdict = if low > 0.0 && matters(low) {
        "growing"
    } else if high < 0.0 && matters(high) {
        "shrinking"
    } else {
        "flat"
    };
    Some(crate::record::Trend {
        slope_per_s: slope,
        low_per_s: low,
        high_per_s: high,
        verdict: verdict.to_string(),
    })
}

impl crate::record::OpFigures {
    /// The figures of `count` operations, `errors` of them failed, with latencies `h`.
    pub fn of(count: u64, errors: u64, h: &crate::Histogram) -> crate::record::OpFigures {
        crate::record::OpFigures {
            count,
            errors,
            latency_ns: latency_summary(h),
            histogram: (!h.is_empty()).then(|| crate::histogram::encode(h)),
            weight: None,
            service_ns: None,
            service_histogram: None,
            error_classes: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::new_histogram;

    #[test]
    fn spread_of_odd_and_even_samples() {
        let s = spread(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.best, s.median, s.min, s.max), (3.0, 2.0, 1.0, 3.0));
        let s = spread(&[4.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.best, s.median, s.min, s.max), (10.0, 3.0, 1.0, 10.0));
        assert!(spread(&[]).is_none());
    }

    #[test]
    #[should_panic(expected = "finite")]
    fn spread_refuses_nan() {
        spread(&[1.0, f64::NAN]);
    }

    #[test]
    fn merged_percentiles_are_those_of_all_values_not_an_average() {
        // Worker A saw 99 fast operations, worker B one slow one. Averaging each worker's p99
        // would give ~5 ms; the true p99 of the 100 operations is fast, and the max is slow.
        let mut a = new_histogram();
        let mut b = new_histogram();
        for _ in 0..99 {
            a.record(100_000).unwrap();
        }
        b.record(10_000_000).unwrap();
        let m = merge([&a, &b]);
        let s = latency_summary(&m).unwrap();
        assert_eq!(s.count, 100);
        assert!(s.p50.abs_diff(100_000) <= 100, "{}", s.p50);
        assert!(s.p99.abs_diff(100_000) <= 100, "{}", s.p99);
        assert!(s.max.abs_diff(10_000_000) <= 10_000, "{}", s.max);
        assert!((s.mean - 199_000.0).abs() < 500.0, "{}", s.mean);
    }

    #[test]
    fn empty_histogram_has_no_summary() {
        assert!(latency_summary(&new_histogram()).is_none());
    }

    #[test]
    fn theil_sen_finds_the_line_through_outliers() {
        // y = 2x + 1 with two wild points: the slope stays 2, and the interval holds it.
        let mut pts: Vec<(f64, f64)> = (0..50).map(|i| (i as f64, 2.0 * i as f64 + 1.0)).collect();
        pts[10].1 = 1e6;
        pts[40].1 = -1e6;
        let (slope, lo, hi) = theil_sen(&pts).unwrap();
        assert_eq!(slope, 2.0);
        assert!(lo <= 2.0 && hi >= 2.0, "{lo} {hi}");
        assert!(theil_sen(&pts[..2]).is_none());
        assert!(theil_sen(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]).is_none());
    }

    #[test]
    fn trend_verdicts() {
        let series = |f: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            (0..120).map(|i| (i as f64, f(i as f64))).collect()
        };
        const MIB: f64 = 1048576.0;
        // 100 MiB steady, with a saw of ±2 MiB: flat.
        let flat = series(&|t| {
            100.0 * MIB
                + if (t as u64).is_multiple_of(2) {
                    2.0
                } else {
                    -2.0
                } * MIB
        });
        assert_eq!(trend(&flat, MIB).unwrap().verdict, "flat");
        // 100 MiB growing 0.5 MiB/s with noise: growing, the slope near 0.5 MiB/s.
        let grow = series(&|t| {
            100.0 * MIB
                + 0.5 * MIB * t
                + if (t as u64).is_multiple_of(3) {
                    MIB
                } else {
                    0.0
                }
        });
        let g = trend(&grow, MIB).unwrap();
        assert_eq!(g.verdict, "growing");
        assert!((g.slope_per_s / MIB - 0.5).abs() < 0.05, "{g:?}");
        assert!(g.low_per_s > 0.0 && g.high_per_s >= g.slope_per_s);
        // A slope that is real but tiny (64 KiB over the run): flat by the floor.
        let tiny = series(&|t| 100.0 * MIB + 512.0 * t);
        assert_eq!(trend(&tiny, MIB).unwrap().verdict, "flat");
        let shrink = series(&|t| 300.0 * MIB - MIB * t);
        assert_eq!(trend(&shrink, MIB).unwrap().verdict, "shrinking");
        assert!(trend(&grow[..9], MIB).is_none());
        // A flat process that wanders and comes back (each sample 0.9 of the last one's
        // excursion plus a new one: AR(1), about ±2 MiB around 100 MiB) is not a leak, though
        // its 120 points, taken as independent, would say it is most of the time.
        let mut state = 5u64;
        let (mut claimed, mut naive) = (0, 0);
        for _ in 0..50 {
            let mut excursion = 0.0;
            let walk: Vec<(f64, f64)> = (0..120)
                .map(|i| {
                    // The sum of 4 uniforms on ±0.75 MiB: about normal, sd 0.87 MiB.
                    let shock: f64 = (0..4)
                        .map(|_| {
                            let u = (crate::rng::splitmix64(&mut state) >> 11) as f64;
                            (u / (1u64 << 53) as f64 - 0.5) * 1.5 * MIB
                        })
                        .sum();
                    excursion = 0.9 * excursion + shock;
                    (i as f64, 100.0 * MIB + excursion)
                })
                .collect();
            let t = trend(&walk, MIB).unwrap();
            claimed += usize::from(t.verdict != "flat");
            let (_, lo, hi) = theil_sen(&walk).unwrap();
            naive += usize::from(lo > 0.0 || hi < 0.0);
        }
        eprintln!(
            "flat AR(1) series called a trend: {claimed} of 50 (independent points: {naive})"
        );
        assert!(claimed <= 5, "{claimed} of 50 random walks called a trend");
        assert!(naive >= 20, "independent points' intervals: {naive} of 50");
        // A long series is thinned, not refused.
        let long: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64, i as f64)).collect();
        assert_eq!(theil_sen(&long).unwrap().0, 1.0);
    }
}
