//! Tests × targets, zodbshootout's table and the one most suites use: a rate table, a latency
//! table, the server's share where the target measures itself, topology penalties, and notes.

use crate::grid::{Doc, status_word};
use crate::units;
use results::{Case, RunRecord, Status};
use std::io;

/// The targets in column order, with their durability.
fn columns(r: &RunRecord) -> Vec<(&str, &str)> {
    r.plan
        .targets
        .iter()
        .map(|t| (t.name.as_str(), t.durability.as_str()))
        .collect()
}

fn rate_cell(c: Option<&Case>) -> String {
    match c {
        None => "-".into(),
        Some(c) => match (status_word(c), &c.summary) {
            (None, Some(s)) => units::rate(s.ops_per_s.best),
            (Some(w), _) => w.into(),
            (None, None) => "-".into(),
        },
    }
}

fn latency_cell(c: Option<&Case>) -> String {
    match c {
        None => "-".into(),
        Some(c) => match (status_word(c), &c.summary) {
            (None, Some(s)) => format!(
                "{} / {} / {}",
                units::latency(s.latency_ns.p50),
                units::latency(s.latency_ns.p99),
                units::latency(s.latency_ns.p999)
            ),
            (Some(w), _) => w.into(),
            (None, None) => "-".into(),
        },
    }
}

/// Client p50, the server's p50 for the operation the test makes (put for writes, get for
/// reads), and the difference.
fn server_cell(c: Option<&Case>) -> String {
    let Some(c) = c else { return "-".into() };
    let op = if c.test == "add" || c.test == "update" {
        "put"
    } else {
        "get"
    };
    let server = c
        .server
        .as_ref()
        .and_then(|s| s.get(op))
        .and_then(|s| s.latency_ns.as_ref())
        .map(|l| l.p50);
    match (status_word(c), c.summary.as_ref(), server) {
        (None, Some(s), Some(srv)) => format!(
            "{} / {} / {}",
            units::latency(s.latency_ns.p50),
            units::latency(srv),
            units::latency(s.latency_ns.p50.saturating_sub(srv))
        ),
        (Some(w), _, _) => w.into(),
        _ => "-".into(),
    }
}

/// Tests × targets (zodbshootout's table): title, rate table, latency table, the server's share
/// where the target measures itself, topology penalties, notes.
pub fn render(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    let p = &r.plan;
    let cols = columns(r);
    let tests = r.tests_where(|_| true);
    let reps = if p.reps == 1 {
        "1 repetition".to_string()
    } else {
        format!("best of {}", p.reps)
    };
    let title = format!(
        "dyno {} · {} objects × {} clients · {} B objects · {reps}",
        p.suite, p.objects, p.concurrency, p.size_bytes
    );
    doc.title(&title)?;
    doc.blank()?;
    let header = vec![
        std::iter::once("test".to_string())
            .chain(cols.iter().map(|(n, _)| n.to_string()))
            .collect::<Vec<_>>(),
        std::iter::once(String::new())
            .chain(cols.iter().map(|(_, d)| d.to_string()))
            .collect(),
    ];
    // One table of tests × targets: its heading, then a row per test with a cell per target;
    // a blank line between tables.
    let mut first = true;
    let mut table = |title: &str,
                     header: &[Vec<String>],
                     cell: &mut dyn FnMut(&str, &str) -> String|
     -> io::Result<()> {
        if !std::mem::take(&mut first) {
            doc.blank()?;
        }
        doc.heading(title)?;
        let body: Vec<Vec<String>> = tests
            .iter()
            .map(|t| {
                std::iter::once(t.to_string())
                    .chain(cols.iter().map(|(n, _)| cell(n, t)))
                    .collect()
            })
            .collect();
        doc.table(header, &body)
    };
    table("objects/s", &header, &mut |n, t| rate_cell(r.case_of(n, t)))?;
    table(
        "latency per object operation: p50 / p99 / p99.9",
        &header[..1],
        &mut |n, t| latency_cell(r.case_of(n, t)),
    )?;
    if r.cases.iter().any(|c| c.server.is_some()) {
        table(
            "client and server time per object operation, p50: client / server / difference (serialization + network)",
            &header[..1],
            &mut |n, t| server_cell(r.case_of(n, t)),
        )?;
    }
    let topologies: std::collections::BTreeSet<&str> =
        r.cases.iter().map(|c| c.topology.as_str()).collect();
    if topologies.len() > 1 {
        // Each cell's ratio is to the cell before it in the same row.
        let mut prev: Option<f64> = None;
        table(
            "topology penalty: objects/s, and the ratio to the column before",
            &header[..1],
            &mut |n, t| {
                if n == cols[0].0 {
                    prev = None;
                }
                let rate = r
                    .case_of(n, t)
                    .filter(|c| c.status == Status::Ok)
                    .and_then(|c| c.summary.as_ref())
                    .map(|s| s.ops_per_s.best);
                let cell = match (rate, prev) {
                    (Some(v), Some(p)) if p > 0.0 => format!("{} (×{:.3})", units::rate(v), v / p),
                    (Some(v), _) => units::rate(v),
                    (None, _) => rate_cell(r.case_of(n, t)),
                };
                prev = rate;
                cell
            },
        )?;
    }
    doc.footer(&notes(r), r.interrupted)
}

/// A note per case that did not simply pass, or whose cache state was reached another way.
fn notes(r: &RunRecord) -> Vec<String> {
    (r.cases.iter())
        .filter_map(|c| {
            let text = match (status_word(c), &c.reason, &c.cache) {
                (Some(w), Some(why), _) => format!("{w}: {why}"),
                (Some(w), None, _) => w.to_string(),
                (None, _, Some(cache)) => cache.clone(),
                (None, _, None) => return None,
            };
            Some(format!("{} {}: {text}", c.target, c.test))
        })
        .collect()
}
