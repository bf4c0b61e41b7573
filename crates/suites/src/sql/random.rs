//! pgbench's pseudo-random generator and random functions, to its definitions (PostgreSQL 15
//! and later): the same seed gives the same draws as pgbench's `pg_prng`, so a script's
//! `random_zipfian`, `permute` or `hash` pick what pgbench's would.

pub mod sysbench;

/// xoroshiro128**, seeded through splitmix64 (`pg_prng`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prng {
    s0: u64,
    s1: u64,
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Prng {
    pub fn new(seed: u64) -> Prng {
        let mut x = seed;
        let (s0, s1) = (splitmix64(&mut x), splitmix64(&mut x));
        if s0 == 0 && s1 == 0 {
            return Prng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            };
        }
        Prng { s0, s1 }
    }

    pub fn next_u64(&mut self) -> u64 {
        let (s0, mut s1) = (self.s0, self.s1);
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        s1 ^= s0;
        self.s0 = s0.rotate_left(24) ^ s1 ^ (s1 << 16);
        self.s1 = s1.rotate_left(37);
        val
    }

    /// Uniform in [0, 1).
    pub fn double(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 * f64::powi(2.0, -52)
    }

    /// Uniform in [a, b], both included; `a` without a draw when `b <= a`.
    pub fn uint_range(&mut self, a: u64, b: u64) -> u64 {
        if b <= a {
            return a;
        }
        let range = b - a;
        let shift = range.leading_zeros();
        loop {
            let v = self.next_u64() >> shift;
            if v <= range {
                return a + v;
            }
        }
    }

    /// A standard normal draw (Box–Muller, one of the pair).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.double();
        let u2 = 1.0 - self.double();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }
}

/// What a random function refuses, in pgbench's words.
pub type Refused = &'static str;

/// The number of values in [lb, ub], checked as pgbench checks it.
pub(crate) fn span(lb: i64, ub: i64) -> Result<u64, Refused> {
    if lb > ub {
        return Err("empty range given to random");
    }
    let n = (ub as i128) - (lb as i128) + 1;
    if n > i64::MAX as i128 {
        return Err("random range is too large");
    }
    Ok(n as u64)
}

/// `random(lb, ub)`: uniform, both bounds included.
pub fn uniform(p: &mut Prng, lb: i64, ub: i64) -> Result<i64, Refused> {
    let n = span(lb, ub)?;
    Ok(lb.wrapping_add(p.uint_range(0, n - 1) as i64))
}

/// `random_exponential(lb, ub, parameter)`: exponential over the range, cut at its end;
/// `parameter` > 0 (larger: more weight on `lb`).
pub fn exponential(p: &mut Prng, lb: i64, ub: i64, parameter: f64) -> Result<i64, Refused> {
    let n = span(lb, ub)?;
    if parameter.is_nan() || parameter <= 0.0 {
        return Err("exponential parameter must be greater than zero");
    }
    let cut = (-parameter).exp();
    let u = 1.0 - p.double();
    let r = -(cut + (1.0 - cut) * u).ln() / parameter;
    Ok(lb.wrapping_add((n as f64 * r) as i64))
}

/// The least `random_gaussian` parameter pgbench allows.
pub const MIN_GAUSSIAN_PARAM: f64 = 2.0;

/// `random_gaussian(lb, ub, parameter)`: a normal centred on the range, cut at `parameter`
/// standard deviations each side (at least 2).
pub fn gaussian(p: &mut Prng, lb: i64, ub: i64, parameter: f64) -> Result<i64, Refused> {
    let n = span(lb, ub)?;
    if parameter.is_nan() || parameter < MIN_GAUSSIAN_PARAM {
        return Err("gaussian parameter must be at least 2.0");
    }
    let z = loop {
        let z = p.normal();
        if -parameter <= z && z < parameter {
            break z;
        }
    };
    let r = (z + parameter) / (2.0 * parameter);
    Ok(lb.wrapping_add((n as f64 * r) as i64))
}

/// `random_zipfian`'s parameter bounds.
pub const ZIPF_MIN: f64 = 1.001;
pub const ZIPF_MAX: f64 = 1000.0;

/// `random_zipfian(lb, ub, s)`: Zipf with exponent `s` over the range (rank 1 at `lb`), by
/// rejection-inversion; `s` in [1.001, 1000].
pub fn zipfian(p: &mut Prng, lb: i64, ub: i64, s: f64) -> Result<i64, Refused> {
    let n = span(lb, ub)?;
    if s.is_nan() || !(ZIPF_MIN..=ZIPF_MAX).contains(&s) {
        return Err("zipfian parameter must be in range [1.001, 1000]");
    }
    if n <= 1 {
        return Ok(lb);
    }
    let b = 2f64.powf(s - 1.0);
    loop {
        let u = p.double();
        let v = p.double();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
            return Ok(lb - 1 + x as i64);
        }
    }
}

/// `permute(i, size, seed)`: a pseudo-random permutation of [0, size), the same for a seed;
/// `i` taken modulo `size`.
pub fn permute(i: i64, size: i64, seed: i64) -> Result<i64, Refused> {
    if size <= 0 {
        return Err("permute size parameter must be greater than zero");
    }
    if size == 1 {
        return Ok(0);
    }
    let size = size as u64;
    let mut p = Prng::new(seed as u64);
    let mut v = (i as u64) % size;
    let masklen = 63 - size.leading_zeros();
    let mask = (1u64 << masklen) - 1;
    let mix = |x: u64, m: u64, r: u64| {
        let x = (x.wrapping_mul(m) ^ r) & mask;
        ((x << 1) & mask) | (x >> (masklen - 1))
    };
    for _ in 0..6 {
        let m = (p.next_u64() & mask) | 1;
        let r = p.next_u64() & mask;
        if v <= mask {
            v = mix(v, m, r);
        }
        let m = (p.next_u64() & mask) | 1;
        let r = p.next_u64() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - mix(t, m, r);
        }
        v = (v + p.uint_range(0, size - 1)) % size;
    }
    Ok(v as i64)
}

/// `hash_fnv1a(v, seed)`.
pub fn hash_fnv1a(v: i64, seed: i64) -> i64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed as u64;
    let mut v = v as u64;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
        v >>= 8;
    }
    h as i64
}

/// `hash(v, seed)`, `hash_murmur2(v, seed)`: MurmurHash64A of the 8-byte value.
pub fn hash_murmur2(v: i64, seed: i64) -> i64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    let mut h = (seed as u64) ^ M.wrapping_mul(8);
    let mut k = (v as u64).wrapping_mul(M);
    k ^= k >> 47;
    k = k.wrapping_mul(M);
    h ^= k;
    h = h.wrapping_mul(M);
    h ^= h >> 47;
    h = h.wrapping_mul(M);
    h ^= h >> 47;
    h as i64
}

#[cfg(test)]
mod tests;
