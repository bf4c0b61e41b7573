//! `summary-json`: the headline figures of each case as one small JSON document per record, for
//! scripts and dashboards that do not want the whole record (histograms, series, environment).
//! Everything here is read from the record; `dyno report DIR -f summary-json` gives the same. The
//! figures every case has, then each suite's own under its key (`View::flat`).

use crate::Views;
use results::{Case, RunRecord};
use serde_json::{Value, json};
use std::io::{self, Write};

/// The summary's own schema name: its fields change only with it.
pub const SCHEMA: &str = "dyno.summary-1";

fn case(c: &Case, views: Views) -> Value {
    let s = c.summary.as_ref();
    let mut doc = json!({
        "target": c.target,
        "test": c.test,
        "topology": c.topology,
        "sweep": c.sweep.as_ref().map(|p| json!({"param": p.param, "value": p.value})),
        "status": c.status,
        "reason": c.reason,
        "durability": c.durability,
        "reps": c.reps.len(),
        "ops_per_s": s.map(|s| json!({
            "best": s.ops_per_s.best,
            "median": s.ops_per_s.median,
            "min": s.ops_per_s.min,
            "max": s.ops_per_s.max,
        })),
        "latency_ns": s.map(|s| json!({
            "p50": s.latency_ns.p50,
            "p90": s.latency_ns.p90,
            "p99": s.latency_ns.p99,
            "p999": s.latency_ns.p999,
            "max": s.latency_ns.max,
        })),
        "service_ns": s.and_then(|s| s.service_ns.as_ref()).map(|l| json!({
            "p50": l.p50,
            "p99": l.p99,
            "max": l.max,
        })),
        "errors": c.errors.values().sum::<u64>(),
    });
    for f in views.flat() {
        doc[f.key] = (f.json)(c);
    }
    doc
}

/// One line of JSON per record: the run's identity and a summary per case.
pub fn render(records: &[RunRecord], views: Views, out: &mut dyn Write) -> io::Result<()> {
    for r in records {
        let doc = json!({
            "schema": SCHEMA,
            "started": r.started,
            "dyno": r.dyno.version,
            "suite": r.plan.suite,
            "interrupted": r.interrupted,
            "cases": r.cases.iter().map(|c| case(c, views)).collect::<Vec<_>>(),
        });
        serde_json::to_writer(&mut *out, &doc)?;
        writeln!(out)?;
    }
    Ok(())
}
