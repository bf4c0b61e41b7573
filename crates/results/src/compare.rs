//! Judging a difference between two runs: each figure of a case as a relative change (new over
//! base, minus one) with a 95% bootstrap confidence interval over the repetitions, and a verdict
//! by criterion.rs's rule — improved or regressed only when the whole interval lies beyond
//! ±noise, "no change" otherwise, "too few repetitions" below [`MIN_REPS`] on either side, never a
//! guess. Latency distributions are also compared whole, by a Mann-Whitney U test computed from
//! the merged histograms' buckets.

use crate::Histogram;
use serde::{Deserialize, Serialize};

/// Repetitions each side needs for a verdict.
pub const MIN_REPS: usize = 3;
/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 10_000;
/// The interval's confidence.
pub const CONFIDENCE: f64 = 0.95;

/// What a comparison concluded about one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Improved,
    Regressed,
    NoChange,
    /// Fewer than [`MIN_REPS`] repetitions on a side: no interval, no verdict.
    TooFewReps,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no change",
            Verdict::TooFewReps => "too few repetitions",
        }
    }
}

/// One figure of a matched case, on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureChange {
    /// `rate`, `p50`, `p99`, `p99.9`, `max`.
    pub figure: String,
    /// The median over each side's repetitions.
    pub base: f64,
    pub new: f64,
    /// `new / base - 1`.
    pub change: f64,
    /// The 95% bootstrap interval of `change`; `null` with too few repetitions.
    pub interval: Option<[f64; 2]>,
    pub verdict: Verdict,
}

/// The median of `xs` (not empty).
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// The resampling's generator, seeded so a comparison repeats exactly.
use crate::rng::splitmix64 as next;

/// The percentile bootstrap interval of `median(new) / median(base) - 1`: each resample draws
/// each side's repetitions with replacement.
pub fn bootstrap_change(base: &[f64], new: &[f64], seed: u64) -> Option<[f64; 2]> {
    if base.is_empty() || new.is_empty() {
        return None;
    }
    let mut state = seed;
    let mut changes = Vec::with_capacity(RESAMPLES);
    let (mut b, mut n) = (vec![0.0; base.len()], vec![0.0; new.len()]);
    for _ in 0..RESAMPLES {
        for x in b.iter_mut() {
            *x = base[(next(&mut state) % base.len() as u64) as usize];
        }
        for x in n.iter_mut() {
            *x = new[(next(&mut state) % new.len() as u64) as usize];
        }
        let mb = median(&mut b);
        if mb > 0.0 {
            changes.push(median(&mut n) / mb - 1.0);
        }
    }
    if changes.is_empty() {
        return None;
    }
    changes.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let at = |q: f64| changes[((changes.len() - 1) as f64 * q).round() as usize];
    Some([at(tail), at(1.0 - tail)])
}

/// One figure's change and verdict; `higher_is_better` for rates, not for latencies.
pub fn figure(
    name: &str,
    base: &[f64],
    new: &[f64],
    higher_is_better: bool,
    noise: f64,
    seed: u64,
) -> Option<FigureChange> {
    if base.is_empty() || new.is_empty() {
        return None;
    }
    let (b, n) = (median(&mut base.to_vec()), median(&mut new.to_vec()));
    let change = if b > 0.0 { n / b - 1.0 } else { 0.0 };
    let enough = base.len() >= MIN_REPS && new.len() >= MIN_REPS;
    let interval = enough.then(|| bootstrap_change(base, new, seed)).flatten();
    let verdict = match interval {
        None => Verdict::TooFewReps,
        Some([lo, _]) if lo > noise => better_if(higher_is_better),
        Some([_, hi]) if hi < -noise => better_if(!higher_is_better),
        Some(_) => Verdict::NoChange,
    };
    Some(FigureChange {
        figure: name.to_string(),
        base: b,
        new: n,
        change,
        interval,
        verdict,
    })
}

/// The verdict of a figure that went up.
fn better_if(up_is_better: bool) -> Verdict {
    if up_is_better {
        Verdict::Improved
    } else {
        Verdict::Regressed
    }
}

/// A Mann-Whitney U test of two latency distributions from their histograms' buckets (each
/// bucket a group of ties): whether NEW's latencies tend to be larger or smaller than BASE's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RankTest {
    /// The probability that a latency of NEW exceeds one of BASE (ties counting half): 0.5 is
    /// no difference.
    pub p_new_slower: f64,
    /// The two-sided p-value (normal approximation, tie-corrected).
    pub p_value: f64,
}

/// The U test of `new` against `base`; `None` when either is empty or all values tie.
pub fn mann_whitney(base: &Histogram, new: &Histogram) -> Option<RankTest> {
    let (n1, n2) = (base.len() as f64, new.len() as f64);
    if n1 == 0.0 || n2 == 0.0 {
        return None;
    }
    // Walk both histograms' buckets in ascending value; each value is a tie group.
    let mut groups: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    for v in base.iter_recorded() {
        groups
            .entry(base.highest_equivalent(v.value_iterated_to()))
            .or_default()
            .0 += v.count_at_value() as f64;
    }
    for v in new.iter_recorded() {
        groups
            .entry(new.highest_equivalent(v.value_iterated_to()))
            .or_default()
            .1 += v.count_at_value() as f64;
    }
    let total = n1 + n2;
    let (mut below, mut rank_sum_new, mut ties) = (0.0, 0.0, 0.0);
    for (b, n) in groups.values() {
        let t = b + n;
        // The group's ranks run below+1 ..= below+t; each gets their mean.
        rank_sum_new += n * (below + (t + 1.0) / 2.0);
        ties += t * t * t - t;
        below += t;
    }
    let u_new = rank_sum_new - n2 * (n2 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0)).max(1.0));
    if var <= 0.0 {
        return None;
    }
    let z = (u_new - mean) / var.sqrt();
    use statrs::distribution::{ContinuousCDF, Normal};
    let normal = Normal::new(0.0, 1.0).ok()?;
    Some(RankTest {
        p_new_slower: u_new / (n1 * n2),
        p_value: (2.0 * (1.0 - normal.cdf(z.abs()))).min(1.0),
    })
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
    /// The two merged latency distributions compared whole; `null` without histograms.
    pub rank: Option<RankTest>,
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

/// One figure of a load repetition.
type LoadFigure = fn(&crate::Rep, &crate::LoadRep) -> f64;

/// One latency figure of a repetition's summary.
type Quantile = fn(&crate::LatencySummary) -> u64;

/// A plan section as JSON, to see whether two differ.
fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Compares every case of `new` with the same case of `base`; figures move beyond ±`noise`
/// (relative, e.g. 0.02) to count. The bootstrap is seeded: the same runs compare the same way.
pub fn compare(base: &crate::RunRecord, new: &crate::RunRecord, noise: f64) -> Comparison {
    let mut cases = Vec::new();
    let mut only_base = Vec::new();
    for (i, b) in base.cases.iter().enumerate() {
        let id = b.id();
        let Some(n) = new.case(&id) else {
            only_base.push(id.to_string());
            continue;
        };
        let seed = 0xC0A1_u64.wrapping_add(i as u64);
        let side = |c: &crate::Case, f: &dyn Fn(&crate::Rep) -> Option<f64>| -> Vec<f64> {
            c.reps.iter().filter_map(f).collect()
        };
        let mut figures = Vec::new();
        let rate = |r: &crate::Rep| (r.ops > 0).then_some(r.ops_per_s);
        figures.extend(figure(
            "rate",
            &side(b, &rate),
            &side(n, &rate),
            true,
            noise,
            seed,
        ));
        let quantiles: [(&str, Quantile); 4] = [
            ("p50", |l| l.p50),
            ("p99", |l| l.p99),
            ("p99.9", |l| l.p999),
            ("max", |l| l.max),
        ];
        for (name, q) in quantiles {
            let lat = |r: &crate::Rep| r.latency_ns.as_ref().map(|l| q(l) as f64);
            figures.extend(figure(
                name,
                &side(b, &lat),
                &side(n, &lat),
                false,
                noise,
                seed,
            ));
        }
        // A load case's throughput in bytes and its test time, gobench's figures.
        let load_figures: [(&str, LoadFigure, bool); 3] = [
            ("read B/s", |_, l| l.read_bytes_per_s, true),
            ("write B/s", |_, l| l.write_bytes_per_s, true),
            ("test time", |r, _| r.wall_ns as f64, false),
        ];
        for (name, of, higher_is_better) in load_figures {
            let get = |r: &crate::Rep| r.detail.load().map(|l| of(r, l));
            figures.extend(figure(
                name,
                &side(b, &get),
                &side(n, &get),
                higher_is_better,
                noise,
                seed,
            ));
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
        let decode = |c: &crate::Case| {
            (c.histogram.as_deref()).and_then(|h| crate::histogram::decode(h).ok())
        };
        let rank = decode(b)
            .zip(decode(n))
            .and_then(|(hb, hn)| mann_whitney(&hb, &hn));
        cases.push(CaseComparison {
            case: id.to_string(),
            reps: [b.reps.len(), n.reps.len()],
            figures,
            counts,
            rank,
        });
    }
    let only_new = (new.cases.iter())
        .filter(|c| base.case(&c.id()).is_none())
        .map(|c| c.id().to_string())
        .collect();
    Comparison {
        noise,
        cases,
        only_base,
        only_new,
        differences: differences(base, new),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values around `center`, ±`spread` relative, seeded.
    fn noisy(center: f64, spread: f64, n: usize, state: &mut u64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let u = (next(state) >> 11) as f64 / (1u64 << 53) as f64;
                center * (1.0 + spread * (2.0 * u - 1.0))
            })
            .collect()
    }

    #[test]
    fn ten_percent_slower_is_a_regression_whose_interval_excludes_zero() {
        let mut s = 7;
        let base = noisy(1000.0, 0.01, 5, &mut s);
        let new = noisy(900.0, 0.01, 5, &mut s);
        let rate = figure("rate", &base, &new, true, 0.02, 1).unwrap();
        assert_eq!(rate.verdict, Verdict::Regressed, "{rate:?}");
        let [lo, hi] = rate.interval.unwrap();
        assert!(lo < -0.07 && hi < -0.02, "{rate:?}");
        // The same change in a latency is a regression the other way round.
        let p99 = figure("p99", &new, &base, false, 0.02, 1).unwrap();
        assert_eq!(p99.verdict, Verdict::Regressed, "{p99:?}");
        let faster = figure("p99", &base, &new, false, 0.02, 1).unwrap();
        assert_eq!(faster.verdict, Verdict::Improved, "{faster:?}");
    }

    #[test]
    fn fewer_than_three_repetitions_give_no_verdict() {
        let f = figure("rate", &[1.0, 1.0], &[2.0, 2.0, 2.0], true, 0.02, 1).unwrap();
        assert_eq!(f.verdict, Verdict::TooFewReps);
        assert_eq!(f.interval, None);
        assert!((f.change - 1.0).abs() < 1e-12);
    }

    /// 200 comparisons of two samples of one distribution (±5% noise, 5 repetitions each):
    /// how often a verdict other than "no change" comes out. Measured: 2 of 200 (1%).
    #[test]
    fn null_comparisons_rarely_claim_a_change() {
        let mut s = 42;
        let mut claimed = 0;
        for i in 0..200 {
            let base = noisy(1000.0, 0.05, 5, &mut s);
            let new = noisy(1000.0, 0.05, 5, &mut s);
            let f = figure("rate", &base, &new, true, 0.02, i).unwrap();
            if f.verdict != Verdict::NoChange {
                claimed += 1;
            }
        }
        eprintln!("null comparisons claiming a change: {claimed} of 200");
        assert!(claimed <= 10, "{claimed} of 200 (at most 5%)");
    }

    #[test]
    fn the_rank_test_sees_a_shift_and_no_shift() {
        let mut base = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        let mut same = base.clone();
        let mut slower = base.clone();
        let mut s = 3;
        for _ in 0..2000 {
            let u = next(&mut s) % 1000;
            base.record(100_000 + u * 100).unwrap();
            let v = next(&mut s) % 1000;
            same.record(100_000 + v * 100).unwrap();
            slower.record(110_000 + v * 100).unwrap();
        }
        let none = mann_whitney(&base, &same).unwrap();
        assert!(none.p_value > 0.01, "{none:?}");
        assert!((none.p_new_slower - 0.5).abs() < 0.05, "{none:?}");
        let shift = mann_whitney(&base, &slower).unwrap();
        assert!(shift.p_value < 1e-6, "{shift:?}");
        assert!(shift.p_new_slower > 0.55, "{shift:?}");
        // Every value tied: nothing to rank.
        let mut one = Histogram::new_with_bounds(1, 1000, 3).unwrap();
        one.record(5).unwrap();
        assert_eq!(mann_whitney(&one, &one.clone()), None);
    }
}
