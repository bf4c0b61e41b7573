//! Numbers for people: thousands separators, latencies in the unit that fits.

/// `1234567.8` → `1,234,568`; below 100 one decimal is kept (`12.5`).
pub fn rate(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v < 100.0 {
        return format!("{v:.1}");
    }
    separated(&format!("{:.0}", v))
}

/// A count with thousands separators: `1,234,567`, `0`.
pub fn count(n: u64) -> String {
    separated(&n.to_string())
}

fn separated(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Latencies in the unit that fits (`1.23ms`): one rule for every figure dyno prints, kept in
/// `results` so that the engine's own messages (the generator's verdict) read the same.
pub use results::units::latency;

/// Bytes in SI units (as gobench and wrk report them): `13.9 MB`.
pub fn bytes(n: u64) -> String {
    si(n as f64, "B")
}

/// Bytes per second in SI units: `13.9 MB/s`.
pub fn bytes_per_s(v: f64) -> String {
    si(v, "B/s")
}

/// Bits per second in SI units: `111 Mbit/s`.
pub fn bits_per_s(v: f64) -> String {
    si(v, "bit/s")
}

fn si(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let (value, prefix) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        return format!("{v:.0} {unit}");
    };
    if value < 10.0 {
        format!("{value:.2} {prefix}{unit}")
    } else if value < 100.0 {
        format!("{value:.1} {prefix}{unit}")
    } else {
        format!("{value:.0} {prefix}{unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_have_separators() {
        assert_eq!(rate(1_234_567.8), "1,234,568");
        assert_eq!(rate(999.4), "999");
        assert_eq!(rate(1000.0), "1,000");
        assert_eq!(rate(12.25), "12.2");
        assert_eq!(rate(f64::NAN), "-");
        assert_eq!(count(0), "0");
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn si_units() {
        assert_eq!(bytes_per_s(4_030_304.0), "4.03 MB/s");
        assert_eq!(bits_per_s(111e6), "111 Mbit/s");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(12_590_000_000), "12.6 GB");
    }

    #[test]
    fn latencies_pick_their_unit() {
        assert_eq!(latency(850), "850ns");
        assert_eq!(latency(12_345), "12.3µs");
        assert_eq!(latency(1_234_567), "1.23ms");
        assert_eq!(latency(250_000_000), "250ms");
        assert_eq!(latency(2_500_000_000), "2.50s");
    }
}
