//! A true Zipf(θ) over items `0..n`: P(i) ∝ 1 / (i+1)^θ, drawn by inverting the cumulative
//! distribution (a binary search over precomputed partial sums), for any θ > 0. YCSB's
//! `exact` key chooser and the request templates' `{{zipf N THETA}}` draw from it. Memory: one
//! f64 per item.

#[derive(Debug, Clone)]
pub struct ExactZipf {
    /// `cdf[i]` = P(item ≤ i).
    cdf: Vec<f64>,
}

impl ExactZipf {
    pub fn new(n: usize, theta: f64) -> ExactZipf {
        let mut cdf = Vec::with_capacity(n);
        let mut sum = 0.0;
        for i in 0..n {
            sum += 1.0 / ((i + 1) as f64).powf(theta);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        ExactZipf { cdf }
    }

    /// The item a uniform draw `u` in [0, 1) picks.
    #[inline]
    pub fn at(&self, u: f64) -> usize {
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1)
    }

    /// The probability of item `i`.
    pub fn p(&self, i: usize) -> f64 {
        self.cdf[i] - if i == 0 { 0.0 } else { self.cdf[i - 1] }
    }
}
