//! A count over a time: the one rate every figure of dyno is computed with. It sits below both
//! the record (whose intervals derive their rates) and the statistics.

/// `n` per second over `ns` nanoseconds; 0 when no time passed (a rate, never a division by 0).
pub fn per_s(n: f64, ns: u64) -> f64 {
    if ns == 0 { 0.0 } else { n * 1e9 / ns as f64 }
}
