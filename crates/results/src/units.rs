//! How a time reads for people, the same in every table, message and plot of dyno.

/// Nanoseconds in the largest unit that keeps three significant digits (never `1000µs`): `850ns`, `12.3µs`,
/// `1.23ms`, `2.50s`.
pub fn latency(ns: u64) -> String {
    let v = ns as f64;
    let (value, unit) = if ns < 1_000 {
        return format!("{ns}ns");
    } else if ns < 999_500 {
        (v / 1e3, "µs")
    } else if ns < 999_500_000 {
        (v / 1e6, "ms")
    } else {
        (v / 1e9, "s")
    };
    // The bounds as the value rounds: 9.996 is written 10.0, not 10.00 (four digits).
    if value < 9.995 {
        format!("{value:.2}{unit}")
    } else if value < 99.95 {
        format!("{value:.1}{unit}")
    } else {
        format!("{value:.0}{unit}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn three_significant_digits_in_the_unit_that_fits() {
        use super::latency;
        assert_eq!(latency(850), "850ns");
        assert_eq!(latency(12_345), "12.3µs");
        assert_eq!(latency(2_457_600), "2.46ms");
        assert_eq!(latency(999_999), "1.00ms");
        assert_eq!(latency(999_499), "999µs");
        assert_eq!(latency(9_998), "10.0µs");
        assert_eq!(latency(99_960), "100µs");
        assert_eq!(latency(9_994), "9.99µs");
        assert_eq!(latency(2_500_000_000), "2.50s");
    }
}
