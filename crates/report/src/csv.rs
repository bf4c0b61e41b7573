//! One CSV row per case: raw numbers (rates per second, latencies in ns), for scripts; the
//! columns every case has, then each suite's own (`View::flat`).

use crate::Views;
use results::RunRecord;
use std::io::{self, Write};

const HEADER: &str = "run_started,suite,target,durability,test,status,reps,ops_per_s_best,ops_per_s_median,ops_per_s_min,ops_per_s_max,p50_ns,p90_ns,p99_ns,p999_ns,p9999_ns,max_ns,mean_ns,errors,reason";

/// Quotes a field when it holds a comma, quote or newline.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn render(records: &[RunRecord], views: Views, out: &mut dyn Write) -> io::Result<()> {
    let own: String = views
        .flat()
        .map(|f| format!(",{}", f.columns.join(",")))
        .collect();
    writeln!(out, "{HEADER}{own}")?;
    for r in records {
        for c in &r.cases {
            let (rates, lat) = match &c.summary {
                Some(s) => (
                    format!(
                        "{:.1},{:.1},{:.1},{:.1}",
                        s.ops_per_s.best, s.ops_per_s.median, s.ops_per_s.min, s.ops_per_s.max
                    ),
                    format!(
                        "{},{},{},{},{},{},{:.1}",
                        s.latency_ns.p50,
                        s.latency_ns.p90,
                        s.latency_ns.p99,
                        s.latency_ns.p999,
                        s.latency_ns.p9999,
                        s.latency_ns.max,
                        s.latency_ns.mean
                    ),
                ),
                None => (",,,".into(), ",,,,,,".into()),
            };
            let own: String = (views.flat())
                .map(|f| match (f.csv)(c) {
                    Some(fields) => format!(",{fields}"),
                    None => ",".repeat(f.columns.len()),
                })
                .collect();
            writeln!(
                out,
                "{},{},{},{},{},{},{},{rates},{lat},{},{}{own}",
                field(&r.started),
                field(&c.suite),
                field(&c.target),
                field(&c.durability),
                field(&c.test),
                c.status.as_str(),
                c.reps.len(),
                c.errors.values().sum::<u64>(),
                field(c.reason.as_deref().unwrap_or(""))
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
