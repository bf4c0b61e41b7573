use super::*;

const N: usize = 1_000_000;

fn draws(f: impl Fn(&mut Prng) -> i64) -> Vec<i64> {
    let mut p = Prng::new(2026);
    (0..N).map(|_| f(&mut p)).collect()
}

fn share(d: &[i64], keep: impl Fn(i64) -> bool) -> f64 {
    d.iter().filter(|&&x| keep(x)).count() as f64 / d.len() as f64
}

fn mean_sd(d: &[i64]) -> (f64, f64) {
    let n = d.len() as f64;
    let mean = d.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = d.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// The standard normal CDF (Abramowitz and Stegun 7.1.26 through erf, to about 1e-7).
fn phi(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.3275911 * x);
    let poly = t
        * (0.254829592
            + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

#[test]
fn uniform_covers_the_range_evenly() {
    let d = draws(|p| uniform(p, 1, 1000).unwrap());
    let mut counts = vec![0u32; 1000];
    for &x in &d {
        assert!((1..=1000).contains(&x), "{x}");
        counts[(x - 1) as usize] += 1;
    }
    // Each value's count is binomial(10^6, 1/1000): mean 1000, sd about 31.6.
    let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(*lo > 1000 - 160 && *hi < 1000 + 160, "{lo}..{hi}");
}

#[test]
fn gaussian_is_the_mean_of_twelve_uniform_draws() {
    let d = draws(|p| gaussian(p, 1, 10_000, SPEC_ITER).unwrap());
    let (mean, sd) = mean_sd(&d);
    // The mean of 12 uniforms over 10,000 values: centred, sd 10,000 / sqrt(12 × 12).
    assert!((mean - 5000.5).abs() < 5.0, "{mean}");
    assert!((sd / (10_000.0 / 12.0) - 1.0).abs() < 0.01, "{sd}");
    assert!(d.iter().all(|x| (1..=10_000).contains(x)));
}

#[test]
fn special_puts_three_quarters_of_the_draws_on_one_percent_of_the_range() {
    let d = draws(|p| special(p, 1, 10_000, SPEC_ITER, SPEC_PCT, SPEC_RES).unwrap());
    assert!(d.iter().all(|x| (1..=10_000).contains(x)));
    // The hot values: rnd in [0.25, 1) over t = 9,999 and d = t / 100, from lb + 4,974 to
    // lb + 5,050. The other quarter is a bell (sd t / 12) that also lands some there.
    let (hot_lo, hot_hi) = (4975, 5051);
    let t = 9_999.0;
    let z = |x: f64| (x - t / 2.0) / (t / 12.0);
    let bell = phi(z((hot_hi) as f64)) - phi(z((hot_lo - 1) as f64));
    let want = 0.75 + 0.25 * bell;
    let got = share(&d, |x| (hot_lo..=hot_hi).contains(&x));
    assert!(
        (got - want).abs() < 0.003,
        "hot share {got}, formula {want}"
    );
    // Every hot value is about equally likely.
    let first = share(&d, |x| x == hot_lo + 10);
    let last = share(&d, |x| x == hot_hi - 10);
    assert!((first / last - 1.0).abs() < 0.1, "{first} {last}");
}

#[test]
fn pareto_follows_its_power_law() {
    let d = draws(|p| pareto(p, 1, 10_000, PARETO_H).unwrap());
    assert!(d.iter().all(|x| (1..=10_000).contains(x)));
    let power = PARETO_H.ln() / (1.0 - PARETO_H).ln();
    for q in [0.01f64, 0.1, 0.5] {
        // P(lb + n·u^power < lb + q·n) = q^(1 / power).
        let want = q.powf(1.0 / power);
        let got = share(&d, |x| ((x - 1) as f64) < q * 10_000.0);
        assert!((got - want).abs() < 0.003, "q {q}: {got} against {want}");
    }
}

#[test]
fn zipfian_gives_each_rank_its_share() {
    let n = 1000;
    let d = draws(|p| zipfian(p, 1, n, ZIPFIAN_EXP).unwrap());
    assert!(d.iter().all(|x| (1..=n).contains(x)));
    let total: f64 = (1..=n).map(|k| (k as f64).powf(-ZIPFIAN_EXP)).sum();
    for k in [1, 2, 10, 100] {
        let want = (k as f64).powf(-ZIPFIAN_EXP) / total;
        let got = share(&d, |x| x == k);
        assert!(
            (got / want - 1.0).abs() < 0.05,
            "rank {k}: {got} against {want}"
        );
    }
    // An exponent of 0 is uniform.
    let flat = draws(|p| zipfian(p, 1, 10, 0.0).unwrap());
    assert!((share(&flat, |x| x == 10) - 0.1).abs() < 0.003);
}

#[test]
fn digits_fill_a_template_of_hashes() {
    let mut p = Prng::new(1);
    let c = digits(&mut p, 10, 11).unwrap();
    assert_eq!(c.len(), 119);
    for (i, ch) in c.chars().enumerate() {
        assert_eq!(ch == '-', i % 12 == 11, "{c}");
    }
    let many: String = (0..10_000)
        .map(|_| digits(&mut p, 1, 10).unwrap())
        .collect();
    for d in '0'..='9' {
        let got = many.chars().filter(|&c| c == d).count();
        assert!((9_000..11_000).contains(&got), "{d}: {got}");
    }
    assert!(digits(&mut p, 0, 11).is_err());
    assert!(digits(&mut p, 1000, 1000).is_err());
    assert!(digits(&mut p, 1, i64::MAX).is_err());
    assert!(digits(&mut p, 2, i64::MAX).is_err());
    assert!(digits(&mut p, i64::MAX, 1).is_err());
    assert_eq!(
        digits(&mut p, 1, MAX_DIGITS).unwrap().len(),
        MAX_DIGITS as usize
    );
}

#[test]
fn bad_bounds_and_parameters_are_refused() {
    let mut p = Prng::new(1);
    assert!(uniform(&mut p, 5, 4).is_err());
    assert!(gaussian(&mut p, 1, 10, 0).is_err());
    assert!(special(&mut p, 1, 10, 12, 1.0, 100.0).is_err());
    assert!(pareto(&mut p, 1, 10, 1.0).is_err());
    assert!(zipfian(&mut p, 1, 10, -1.0).is_err());
    assert!(draw("sb_nosuch", &mut p, (1, 2), &Params::default()).is_err());
    // A one-value range is that value.
    for f in [
        "sb_uniform",
        "sb_gaussian",
        "sb_special",
        "sb_pareto",
        "sb_zipfian",
    ] {
        assert_eq!(draw(f, &mut p, (7, 7), &Params::default()), Ok(7), "{f}");
    }
}
