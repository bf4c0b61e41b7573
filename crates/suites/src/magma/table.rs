//! The `magma` suite as MagmaBenchmarker prints it: a header with the hardware, the OS, dyno and
//! each target, then the tests by group, `N per second` or `N seconds` (a rate under one per
//! second reads as the seconds one operation took, as the seed prints it), one column per target.
//! With several topologies a penalty table follows (each column's rate against the column before:
//! the serialization, LAN and WAN penalties), and, where the server measured itself, the client's
//! time per operation split into the server's and the rest.

use super::list::{MAGMA, Unit, magma_test};
use report::grid::{Doc, status_word};
use report::units;
use results::{Case, RunRecord, Status};
use std::io;

/// The best repetition's rate, when the case is ok.
fn best(c: Option<&Case>) -> Option<f64> {
    c.filter(|c| c.status == Status::Ok)
        .and_then(|c| c.summary.as_ref())
        .map(|s| s.ops_per_s.best)
        .filter(|v| *v > 0.0)
}

/// `259.5 per second`, or `10.2 seconds` when it is a duration (or under one per second).
pub fn figure(unit: Unit, per_s: f64) -> String {
    if unit == Unit::PerSecond && per_s >= 1.0 {
        let v = if per_s >= 100.0 {
            units::rate(per_s)
        } else {
            format!("{per_s:.2}")
        };
        return format!("{v} per second");
    }
    format!("{} seconds", seconds(1.0 / per_s))
}

/// Four significant digits: `0.0006251`, `1.771`, `12.58`.
fn seconds(s: f64) -> String {
    if s >= 1000.0 {
        return format!("{s:.0}");
    }
    let digits = (3 - s.log10().floor() as i32).clamp(0, 12) as usize;
    format!("{s:.digits$}")
}

fn cell(r: &RunRecord, target: &str, test: &str) -> String {
    let c = r.case_of(target, test);
    let unit = magma_test(test).map_or(Unit::PerSecond, |t| t.unit);
    match (c.and_then(status_word), best(c)) {
        (Some(w), _) => w.to_string(),
        (None, Some(v)) => figure(unit, v),
        (None, None) => "-".to_string(),
    }
}

fn header_block(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    let e = &r.environment;
    let m = r.plan.magma.as_ref();
    let mut lines = vec![
        format!("The date is {}", r.started),
        "Hardware Details:".to_string(),
        format!("cpu : {}", e.cpu_model),
        format!("cores : {}", e.cores),
        format!("memory : {}", units::bytes(e.memory_bytes)),
        "OS Details:".to_string(),
        format!("os : {}", e.os),
        format!("kernel : {}", e.kernel),
        "dyno Details:".to_string(),
        format!("version : {} ({})", r.dyno.version, r.dyno.commit),
        format!(
            "repetitions : {}{}",
            r.plan.reps,
            if r.plan.warmup {
                " (after one warm-up)"
            } else {
                ""
            }
        ),
    ];
    if let Some(m) = m {
        lines.push(format!("test time : {}", units::latency(m.test_ns)));
        lines.push("Benchmarker Details:".to_string());
        lines.push(format!("thousands : {}", m.thousands));
    }
    lines.push("Target Details:".to_string());
    for t in &r.plan.targets {
        let versions = r
            .cases
            .iter()
            .find(|c| c.target == t.name)
            .map(|c| {
                c.versions
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let topology = r
            .cases
            .iter()
            .find(|c| c.target == t.name)
            .map_or("", |c| c.topology.as_str());
        let mut line = format!(
            "{} : {} · {} · topology {topology}",
            t.name, t.url, t.durability
        );
        if !versions.is_empty() {
            line.push_str(&format!(" · {versions}"));
        }
        lines.push(line);
    }
    // A line each, the "Details:" lines in bold.
    doc.lines(&lines)?;
    doc.blank()
}

/// Renders one magma run.
pub fn render(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    let reps = if r.plan.reps == 1 {
        "1 repetition".to_string()
    } else {
        format!("best of {}", r.plan.reps)
    };
    let title = format!("dyno magma · one client session · {reps}");
    doc.title(&title)?;
    doc.blank()?;
    header_block(r, doc)?;
    let cols: Vec<&str> = r.plan.targets.iter().map(|t| t.name.as_str()).collect();
    let tests: Vec<&super::list::MagmaTest> = MAGMA
        .iter()
        .filter(|t| r.cases.iter().any(|c| c.test == t.name))
        .collect();
    let header = vec![
        std::iter::once("Benchmarks".to_string())
            .chain(cols.iter().map(|c| c.to_string()))
            .collect::<Vec<_>>(),
    ];
    let mut body: Vec<Vec<String>> = Vec::new();
    let mut group = "";
    for t in &tests {
        if t.group != group {
            group = t.group;
            let label = doc.strong(group);
            body.push(
                std::iter::once(label)
                    .chain(cols.iter().map(|_| String::new()))
                    .collect(),
            );
        }
        body.push(
            std::iter::once(format!("  {}", t.name))
                .chain(cols.iter().map(|c| cell(r, c, t.name)))
                .collect(),
        );
    }
    doc.table(&header, &body)?;

    penalty(r, doc, &cols, &tests)?;
    if r.cases.iter().any(|c| c.server.is_some()) {
        doc.blank()?;
        doc.heading("time per operation: client / server / difference (serialization + network)")?;
        // A connection test times one half of connect-and-close, and the server sees both.
        let body: Vec<Vec<String>> = tests
            .iter()
            .filter(|t| t.group != "connectionTests")
            .map(|t| {
                std::iter::once(t.name.to_string())
                    .chain(cols.iter().map(|c| split_cell(r.case_of(c, t.name))))
                    .collect()
            })
            .collect();
        doc.table(&header, &body)?;
    }

    let notes: Vec<String> = r
        .cases
        .iter()
        .filter_map(|c| {
            let w = status_word(c)?;
            Some(match &c.reason {
                Some(why) => format!("{} {}: {w}: {why}", c.target, c.test),
                None => format!("{} {}: {w}", c.target, c.test),
            })
        })
        .collect();
    doc.footer(&notes, r.interrupted)
}

/// With several topologies: each column's rate against the one before it.
fn penalty(
    r: &RunRecord,
    doc: &mut Doc,
    cols: &[&str],
    tests: &[&super::list::MagmaTest],
) -> io::Result<()> {
    let topologies: std::collections::BTreeSet<&str> =
        r.cases.iter().map(|c| c.topology.as_str()).collect();
    if topologies.len() > 1 && cols.len() > 1 {
        doc.blank()?;
        doc.heading(
            "topology penalty: each column against the one before (×0.25 = a quarter of the rate)",
        )?;
        let head = vec![
            std::iter::once("test".to_string())
                .chain(cols.iter().enumerate().map(|(i, c)| {
                    let topo = |n: &str| {
                        r.cases
                            .iter()
                            .find(|x| x.target == n)
                            .map_or(n.to_string(), |x| x.topology.clone())
                    };
                    if i == 0 {
                        topo(c)
                    } else {
                        format!("{} → {}", topo(cols[i - 1]), topo(c))
                    }
                }))
                .collect::<Vec<_>>(),
        ];
        let body: Vec<Vec<String>> = tests
            .iter()
            .map(|t| {
                std::iter::once(t.name.to_string())
                    .chain(cols.iter().enumerate().map(|(i, c)| {
                        if i == 0 {
                            return cell(r, c, t.name);
                        }
                        match (
                            best(r.case_of(cols[i - 1], t.name)),
                            best(r.case_of(c, t.name)),
                        ) {
                            (Some(p), Some(v)) => ratio(v / p),
                            _ => "-".to_string(),
                        }
                    }))
                    .collect()
            })
            .collect();
        doc.table(&head, &body)?;
    }
    Ok(())
}

/// `×0.159`, and three significant digits below 0.1: `×0.000320`.
fn ratio(x: f64) -> String {
    if x >= 0.1 || x <= 0.0 {
        return format!("×{x:.3}");
    }
    let digits = (2 - x.log10().floor() as i32).clamp(3, 12) as usize;
    format!("×{x:.digits$}")
}

/// The client's mean time per operation over the measured repetitions, the server's time for the
/// requests those operations made (every request kind, summed), and the difference.
fn split_cell(c: Option<&Case>) -> String {
    let Some(c) = c else { return "-".into() };
    if let Some(w) = status_word(c) {
        return w.into();
    }
    let (Some(server), Some(s)) = (&c.server, &c.summary) else {
        return "-".into();
    };
    let ops = s.latency_ns.count.max(1) as f64;
    let client = s.latency_ns.mean;
    let server_ns: f64 = server
        .iter()
        // The figures were fetched with a request of their own.
        .filter(|(op, _)| op.as_str() != "stats")
        .filter_map(|(_, o)| o.latency_ns.as_ref().map(|l| l.mean * o.count as f64))
        .sum::<f64>()
        / ops;
    format!(
        "{} / {} / {}",
        units::latency(client as u64),
        units::latency(server_ns as u64),
        units::latency((client - server_ns).max(0.0) as u64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_the_seed_prints_them() {
        assert_eq!(figure(Unit::PerSecond, 259.496), "259 per second");
        assert_eq!(figure(Unit::PerSecond, 11.928), "11.93 per second");
        assert_eq!(figure(Unit::PerSecond, 26622.4), "26,622 per second");
        // Under one per second: the seconds one operation took.
        assert_eq!(figure(Unit::PerSecond, 0.1), "10.00 seconds");
        assert_eq!(figure(Unit::Seconds, 1.0 / 1.771), "1.771 seconds");
        assert_eq!(figure(Unit::Seconds, 1.0 / 0.000625), "0.0006250 seconds");
        assert_eq!(ratio(0.159), "×0.159");
        assert_eq!(ratio(0.000_320_4), "×0.000320");
        assert_eq!(ratio(0.0144), "×0.0144");
    }
}
