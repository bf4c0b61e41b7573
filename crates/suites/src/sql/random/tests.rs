use super::*;

/// pgbench 15.18's own draws (`pgbench -n -t 2 --random-seed=42 -f s.sql` with one client,
/// each `\set` wrapped in `debug()`), run against a private PostgreSQL on 2026-11-26: the
/// generator, its seeding and every function must give exactly these.
#[test]
fn the_draws_are_pgbenchs_own() {
    let mut base = Prng::new(42);
    let mut client = Prng::new(base.next_u64());
    let default_seed = base.next_u64() as i64;
    assert_eq!(default_seed, 4306334408478191133);
    let round = |c: &mut Prng| {
        [
            uniform(c, 1, 1_000_000).unwrap(),
            exponential(c, 1, 1000, 5.0).unwrap(),
            gaussian(c, 1, 1000, 2.5).unwrap(),
            zipfian(c, 1, 1000, 1.5).unwrap(),
            permute(7, 1000, default_seed).unwrap(),
            permute(7, 1000, 12345).unwrap(),
            hash_murmur2(42, default_seed),
            hash_fnv1a(42, 7),
            hash_murmur2(-1, 0),
            uniform(c, -5000, 5000).unwrap(),
            permute(123_456_789, 1_000_003, -9).unwrap(),
        ]
    };
    let fixed = [
        942,
        260,
        416645645586623766,
        2765047632110736392,
        4219408603045787357,
    ];
    let first = round(&mut client);
    assert_eq!(first[..4], [668251, 333, 398, 12]);
    assert_eq!(first[4..9], fixed);
    assert_eq!(first[9..], [-4944, 903860]);
    let second = round(&mut client);
    assert_eq!(second[..4], [743950, 21, 749, 10]);
    assert_eq!(second[4..9], fixed);
    assert_eq!(second[9], -1696);
}

const N: usize = 1_000_000;

/// The largest distance between the empirical CDF of `draws` over [lb, ub] and `cdf(k)` =
/// P(X < lb + k) (Kolmogorov–Smirnov's statistic).
fn ks(draws: &[i64], lb: i64, ub: i64, cdf: impl Fn(f64) -> f64) -> f64 {
    let n = (ub - lb + 1) as usize;
    let mut counts = vec![0usize; n];
    for &d in draws {
        assert!((lb..=ub).contains(&d), "{d} outside [{lb}, {ub}]");
        counts[(d - lb) as usize] += 1;
    }
    let mut below = 0usize;
    let mut worst: f64 = 0.0;
    for (k, c) in counts.iter().enumerate() {
        below += c;
        let want = cdf((k + 1) as f64);
        worst = worst.max((below as f64 / draws.len() as f64 - want).abs());
    }
    worst
}

/// At 10^6 draws, a KS distance above 0.002 has a chance under 10^-3 (1.95 / √N).
const KS_LIMIT: f64 = 0.002;

fn draws(f: impl FnMut(&mut Prng) -> i64) -> Vec<i64> {
    let mut p = Prng::new(7);
    let mut f = f;
    (0..N).map(|_| f(&mut p)).collect()
}

#[test]
fn uniform_exponential_gaussian_and_zipfian_draw_their_distributions() {
    let d = draws(|p| uniform(p, 1, 100).unwrap());
    assert!(ks(&d, 1, 100, |k| k / 100.0) < KS_LIMIT);

    // P(X < lb + k) = (1 − e^(−p·k/n)) / (1 − e^(−p)).
    let d = draws(|p| exponential(p, 1, 100, 5.0).unwrap());
    let cdf = |k: f64| (1.0 - (-5.0 * k / 100.0).exp()) / (1.0 - (-5.0f64).exp());
    assert!(ks(&d, 1, 100, cdf) < KS_LIMIT);

    // A normal cut at ±p: P(X < lb + k) = (Φ(2p·k/n − p) − Φ(−p)) / (Φ(p) − Φ(−p)).
    let d = draws(|p| gaussian(p, 1, 100, 2.5).unwrap());
    let phi = |x: f64| 0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2));
    let cdf = |k: f64| (phi(5.0 * k / 100.0 - 2.5) - phi(-2.5)) / (phi(2.5) - phi(-2.5));
    assert!(ks(&d, 1, 100, cdf) < KS_LIMIT);

    // Zipf: P(rank k) = k^−s / H(n, s); the top key's share against the formula too.
    let s = 1.5;
    let h: f64 = (1..=1000).map(|k| (k as f64).powf(-s)).sum();
    let d = draws(|p| zipfian(p, 1, 1000, s).unwrap());
    let cdf = |k: f64| (1..=k as usize).map(|j| (j as f64).powf(-s)).sum::<f64>() / h;
    assert!(ks(&d, 1, 1000, cdf) < KS_LIMIT);
    let top = d.iter().filter(|&&x| x == 1).count() as f64 / N as f64;
    assert!(
        (top - 1.0 / h).abs() < 0.002,
        "top share {top}, formula {}",
        1.0 / h
    );
}

/// The error function (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    if x < 0.0 { -y } else { y }
}

#[test]
fn permute_is_a_bijection_that_depends_on_its_seed() {
    for size in [1i64, 2, 3, 10, 1000, 65_539] {
        for seed in [0i64, 1, -9, 4306334408478191133] {
            let mut seen = vec![false; size as usize];
            for i in 0..size {
                let v = permute(i, size, seed).unwrap();
                assert!(!seen[v as usize], "size {size} seed {seed}: {v} twice");
                seen[v as usize] = true;
            }
            // i is taken modulo size.
            assert_eq!(permute(size + 3, size, seed), permute(3 % size, size, seed));
        }
    }
    let a: Vec<i64> = (0..1000).map(|i| permute(i, 1000, 1).unwrap()).collect();
    let b: Vec<i64> = (0..1000).map(|i| permute(i, 1000, 2).unwrap()).collect();
    assert_ne!(a, b);
    assert_ne!(a, (0..1000).collect::<Vec<_>>());
}

#[test]
fn bad_parameters_are_refused_in_pgbenchs_words() {
    let p = &mut Prng::new(1);
    assert_eq!(uniform(p, 5, 4), Err("empty range given to random"));
    assert_eq!(
        uniform(p, i64::MIN, i64::MAX),
        Err("random range is too large")
    );
    assert!(exponential(p, 1, 10, 0.0).is_err());
    assert!(gaussian(p, 1, 10, 1.9).is_err());
    assert!(zipfian(p, 1, 10, 1.0).is_err());
    assert!(zipfian(p, 1, 10, f64::NAN).is_err());
    assert!(permute(1, 0, 0).is_err());
    assert_eq!(uniform(p, 3, 3), Ok(3));
    assert_eq!(zipfian(p, 3, 3, 2.0), Ok(3));
}
