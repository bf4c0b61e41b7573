//! sysbench's `--rand-type` distributions (sysbench 1.0's `sb_rand.c`, and the zipfian of its
//! later releases), to its definitions, drawn from the client's generator: `sb_uniform`,
//! `sb_gaussian`, `sb_special`, `sb_pareto`, `sb_zipfian`; and its `#`-templates (`random_digits`).
//! sysbench draws from its own xoroshiro128+; the values follow the same distributions, not the
//! same sequence.

use super::{Prng, Refused, span};

/// sysbench's defaults: `--rand-spec-iter`, `--rand-spec-pct`, `--rand-spec-res`,
/// `--rand-pareto-h`, `--rand-zipfian-exp`.
pub const SPEC_ITER: i64 = 12;
pub const SPEC_PCT: f64 = 1.0;
pub const SPEC_RES: f64 = 75.0;
pub const PARETO_H: f64 = 0.2;
pub const ZIPFIAN_EXP: f64 = 0.8;

/// `lb + (int)(u × n)`: where a fraction `u` of the range's `n` values lands.
fn at(lb: i64, n: f64, u: f64) -> i64 {
    lb.wrapping_add((u * n) as i64)
}

/// `sb_uniform(lb, ub)`: uniform, both bounds included (one draw).
pub fn uniform(p: &mut Prng, lb: i64, ub: i64) -> Result<i64, Refused> {
    let n = span(lb, ub)? as f64;
    Ok(at(lb, n, p.double()))
}

fn check_iter(iter: i64) -> Result<f64, Refused> {
    match iter {
        1..=1000 => Ok(iter as f64),
        _ => Err("the number of iterations must be 1 to 1000"),
    }
}

/// `sb_gaussian(lb, ub [, iter])`: the mean of `iter` uniform draws over the range (a bell).
pub fn gaussian(p: &mut Prng, lb: i64, ub: i64, iter: i64) -> Result<i64, Refused> {
    let n = span(lb, ub)? as f64;
    let iter = check_iter(iter)?;
    let mut sum = 0.0;
    for _ in 0..iter as i64 {
        sum += p.double() * n;
    }
    Ok(lb.wrapping_add((sum / iter) as i64))
}

/// `sb_special(lb, ub [, iter, pct, res])`: `res` percent of the draws fall on `pct` percent of
/// the range, just past its middle; the rest on a bell of `iter` draws over it.
pub fn special(
    p: &mut Prng,
    lb: i64,
    ub: i64,
    iter: i64,
    pct: f64,
    res: f64,
) -> Result<i64, Refused> {
    span(lb, ub)?;
    let iter = check_iter(iter)?;
    if !(0.0..=100.0).contains(&pct) || !(0.0..100.0).contains(&res) {
        return Err("the special percentages must be 0 to 100 (res below 100)");
    }
    // sysbench measures the range as ub - lb here, not ub - lb + 1.
    let t = (ub as f64) - (lb as f64);
    let rnd = p.double();
    if rnd * t * 100.0 / (100.0 - res) < t {
        let mut sum = 0.0;
        for _ in 0..iter as i64 {
            sum += p.double();
        }
        return Ok(at(lb, t, sum / iter));
    }
    let d = t * pct / 100.0;
    let hot = rnd * (d + 1.0) + t / 2.0 - t * pct / 200.0;
    Ok(lb.wrapping_add(hot as i64))
}

/// `sb_pareto(lb, ub [, h])`: Pareto with parameter `h` (0 to 1; smaller: more weight on `lb`).
pub fn pareto(p: &mut Prng, lb: i64, ub: i64, h: f64) -> Result<i64, Refused> {
    let n = span(lb, ub)? as f64;
    if !(h > 0.0 && h < 1.0) {
        return Err("the pareto parameter must be between 0 and 1");
    }
    let power = h.ln() / (1.0 - h).ln();
    Ok(at(lb, n, p.double().powf(power)))
}

/// `log1p(x) / x`, exact near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `expm1(x) / x`, exact near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// `sb_zipfian(lb, ub [, exp])`: Zipf with exponent `exp` ≥ 0 over the range (rank 1 at `lb`),
/// by rejection-inversion (Hörmann and Derflinger), as sysbench draws it.
pub fn zipfian(p: &mut Prng, lb: i64, ub: i64, e: f64) -> Result<i64, Refused> {
    let n = span(lb, ub)? as f64;
    if !(0.0..=1000.0).contains(&e) {
        return Err("the zipfian exponent must be 0 to 1000");
    }
    let big_h = |x: f64| {
        let l = x.ln();
        helper2((1.0 - e) * l) * l
    };
    let small_h = |x: f64| (-e * x.ln()).exp();
    let h_inv = |y: f64| {
        let t = (y * (1.0 - e)).max(-1.0);
        (helper1(t) * y).exp()
    };
    let x1 = big_h(1.5) - 1.0;
    let s = 2.0 - h_inv(big_h(2.5) - small_h(2.0));
    let hn = big_h(n + 0.5);
    loop {
        let u = hn + p.double() * (x1 - hn);
        let x = h_inv(u);
        let k = (x + 0.5).floor().clamp(1.0, n);
        if k - x <= s || u >= big_h(k + 0.5) - small_h(k) {
            return Ok(lb.wrapping_add(k as i64 - 1));
        }
    }
}

/// A draw of the distribution named by its function (`sb_special`…), with parameters `o`.
pub fn draw(
    function: &str,
    p: &mut Prng,
    (lb, ub): (i64, i64),
    o: &Params,
) -> Result<i64, Refused> {
    match function {
        "sb_uniform" => uniform(p, lb, ub),
        "sb_gaussian" => gaussian(p, lb, ub, o.spec_iter),
        "sb_special" => special(p, lb, ub, o.spec_iter, o.spec_pct, o.spec_res),
        "sb_pareto" => pareto(p, lb, ub, o.pareto_h),
        "sb_zipfian" => zipfian(p, lb, ub, o.zipfian_exp),
        _ => Err("no such sysbench distribution"),
    }
}

/// sysbench's `--rand-spec-iter` (also the gaussian's iterations), `--rand-spec-pct`,
/// `--rand-spec-res`, `--rand-pareto-h` and `--rand-zipfian-exp`: its distributions' parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    pub spec_iter: i64,
    pub spec_pct: f64,
    pub spec_res: f64,
    pub pareto_h: f64,
    pub zipfian_exp: f64,
}

impl Default for Params {
    /// sysbench's defaults.
    fn default() -> Params {
        Params {
            spec_iter: SPEC_ITER,
            spec_pct: SPEC_PCT,
            spec_res: SPEC_RES,
            pareto_h: PARETO_H,
            zipfian_exp: ZIPFIAN_EXP,
        }
    }
}

impl Params {
    /// A script's call of `function` (`sb_special`…) drawing from 1 to `:table_size` with
    /// these parameters.
    pub fn call(&self, function: &str) -> String {
        let args = match function {
            "sb_special" => format!(
                ", {}, {:?}, {:?}",
                self.spec_iter, self.spec_pct, self.spec_res
            ),
            "sb_gaussian" => format!(", {}", self.spec_iter),
            "sb_pareto" => format!(", {:?}", self.pareto_h),
            "sb_zipfian" => format!(", {:?}", self.zipfian_exp),
            _ => String::new(),
        };
        format!("{function}(1, :table_size{args})")
    }
}

/// The most characters `random_digits` writes.
pub const MAX_DIGITS: i64 = 4096;

/// `random_digits(groups, width)`: `groups` runs of `width` random digits joined by `-`, as
/// sysbench fills a template of `#` (its c column is `random_digits(10, 11)`, pad `(5, 11)`).
pub fn digits(p: &mut Prng, groups: i64, width: i64) -> Result<String, Refused> {
    let fits = (1..=MAX_DIGITS).contains(&groups)
        && (1..=MAX_DIGITS).contains(&width)
        && groups * (width + 1) - 1 <= MAX_DIGITS;
    if !fits {
        return Err("random_digits needs groups and width of at least 1, 4096 characters at most");
    }
    let mut out = String::with_capacity((groups * (width + 1)) as usize);
    for g in 0..groups {
        if g > 0 {
            out.push('-');
        }
        for _ in 0..width {
            out.push(char::from(b'0' + (p.double() * 10.0) as u8));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
