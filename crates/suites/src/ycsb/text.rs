//! YCSB's own text output (`-f ycsb`, of any suite's records), so scripts written for YCSB read
//! dyno's runs: for each
//! measured repetition of each case, a comment line naming it, then YCSB's lines —
//! `[OVERALL], RunTime(ms)`, `[OVERALL], Throughput(ops/sec)`, and for each operation kind
//! `Operations`, `AverageLatency(us)`, `MinLatency(us)`, `MaxLatency(us)`,
//! `95thPercentileLatency(us)`, `99thPercentileLatency(us)`, `Return=OK` (and `Return=ERROR`
//! when some failed) — as YCSB's text exporter writes them with its HdrHistogram measurements.
//! Latencies are whole microseconds, the average a decimal, as YCSB prints them.

use results::{Case, Rep, RunRecord};
use std::io::{self, Write};

fn block(out: &mut dyn Write, c: &Case, i: usize, rep: &Rep) -> io::Result<()> {
    writeln!(
        out,
        "# dyno {} {} on {} ({}), repetition {}",
        c.suite,
        c.test,
        c.target,
        c.topology,
        i + 1
    )?;
    let ms = rep.wall_ns as f64 / 1e6;
    writeln!(out, "[OVERALL], RunTime(ms), {}", ms.round() as u64)?;
    let throughput = if rep.wall_ns > 0 {
        rep.ops as f64 * 1e9 / rep.wall_ns as f64
    } else {
        0.0
    };
    writeln!(out, "[OVERALL], Throughput(ops/sec), {throughput}")?;
    for (kind, f) in &rep.by_op {
        let us = |ns: u64| ns / 1000;
        writeln!(out, "[{kind}], Operations, {}", f.count)?;
        let h = f
            .histogram
            .as_deref()
            .and_then(|b| results::histogram::decode(b).ok())
            .filter(|h| !h.is_empty());
        match h {
            Some(h) => {
                writeln!(out, "[{kind}], AverageLatency(us), {}", h.mean() / 1000.0)?;
                writeln!(out, "[{kind}], MinLatency(us), {}", us(h.min()))?;
                writeln!(out, "[{kind}], MaxLatency(us), {}", us(h.max()))?;
                for p in [95.0, 99.0] {
                    writeln!(
                        out,
                        "[{kind}], {p:.0}thPercentileLatency(us), {}",
                        us(h.value_at_quantile(p / 100.0))
                    )?;
                }
            }
            None => {
                if let Some(l) = &f.latency_ns {
                    writeln!(out, "[{kind}], AverageLatency(us), {}", l.mean / 1000.0)?;
                    writeln!(out, "[{kind}], MaxLatency(us), {}", us(l.max))?;
                    writeln!(out, "[{kind}], 99thPercentileLatency(us), {}", us(l.p99))?;
                }
            }
        }
        writeln!(
            out,
            "[{kind}], Return=OK, {}",
            f.count - f.errors.min(f.count)
        )?;
        if f.errors > 0 {
            writeln!(out, "[{kind}], Return=ERROR, {}", f.errors)?;
        }
    }
    Ok(())
}

/// Writes every measured repetition of every case of `records`.
pub fn render(records: &[RunRecord], out: &mut dyn Write) -> io::Result<()> {
    for r in records {
        for c in &r.cases {
            for (i, rep) in c.reps.iter().enumerate() {
                block(out, c, i, rep)?;
            }
        }
    }
    Ok(())
}
