//! InfluxDB's line protocol (the 1.x `/write` API): a line per interval, measurement
//! `dyno_interval`, the labels as tags, each figure a field named as its Prometheus series
//! without the measurement's prefix, the time in milliseconds.

use super::{Point, SERIES};
use std::fmt::Write as _;

/// The measurement every line writes.
pub const MEASUREMENT: &str = "dyno_interval";

/// A tag's key or value with the line protocol's special characters escaped.
fn tag(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            ',' | '=' | ' ' => {
                out.push('\\');
                out.push(c);
            }
            // A line ends a point: a tag never holds one (an escaped space stands in).
            '\n' | '\r' => out.push_str("\\ "),
            c => out.push(c),
        }
    }
    out
}

/// The body of one write of `points`.
pub fn body(points: &[Point]) -> Vec<u8> {
    let mut out = String::new();
    for p in points {
        out.push_str(MEASUREMENT);
        let mut labels: Vec<&(&str, String)> = p.labels.iter().collect();
        labels.sort();
        for (k, v) in labels.into_iter().filter(|(_, v)| !v.is_empty()) {
            let _ = write!(out, ",{}={}", tag(k), tag(v));
        }
        for (i, (name, _, value)) in SERIES.iter().enumerate() {
            let field = name.trim_start_matches("dyno_interval_");
            let sep = if i == 0 { ' ' } else { ',' };
            let v = value(&p.iv);
            let _ = write!(out, "{sep}{field}={}", if v.is_finite() { v } else { 0.0 });
        }
        let _ = writeln!(out, " {}", p.unix_ms);
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_per_point_tags_escaped_fields_named_after_the_series() {
        let labels = std::sync::Arc::new(vec![
            ("target", "web, a=b".to_string()),
            ("level", String::new()),
        ]);
        let iv = results::IntervalRecord {
            start_ns: 0,
            end_ns: 500_000_000,
            responses: 200,
            p50_ns: 250_000,
            ..Default::default()
        };
        let text = String::from_utf8(body(&[Point {
            labels,
            unix_ms: 1_764_230_968_000,
            iv,
        }]))
        .unwrap();
        assert!(
            text.starts_with(r"dyno_interval,target=web\,\ a\=b responses_per_second=400,"),
            "{text}"
        );
        assert!(text.contains(",latency_p50_seconds=0.00025,"), "{text}");
        assert!(
            text.ends_with(" 1764230968000\n") && text.lines().count() == 1,
            "{text}"
        );
    }
}
