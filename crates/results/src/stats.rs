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
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    Some(Spread {
        best: sorted[n - 1],
        median,
        min: sorted[0],
        max: sorted[n - 1],
    })
}

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
}
