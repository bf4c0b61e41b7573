//! `--check`'s verdicts: a row per target (at each point and level) with what its history held
//! and what the check found, then each anomaly's proof — the operations that cannot be ordered.

use crate::grid::Doc;
use results::consistency::transactional;
use results::{ConsistencyRecord, RunRecord, Verdict};
use std::io;

/// The proofs shown per target in the table's notes (the record keeps up to 5).
const SHOWN: usize = 2;

/// Each target's verdict once, with the case's place (target, sweep point, level).
fn verdicts(r: &RunRecord) -> Vec<(String, &ConsistencyRecord)> {
    let mut out: Vec<(String, &ConsistencyRecord)> = Vec::new();
    for c in &r.cases {
        let Some(v) = &c.consistency else { continue };
        let mut place = c.target.clone();
        if let Some(s) = &c.sweep {
            place += &format!(" {}={}", s.param, s.value);
        }
        if let Some(l) = &c.level {
            place += &format!(" at {l}");
        }
        if !out.iter().any(|(p, _)| *p == place) {
            out.push((place, v));
        }
    }
    out
}

pub fn render(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    table(&verdicts(r), doc)
}

/// The verdicts' table and notes: a row per place (a target at a point, or a history file).
pub fn table(all: &[(String, &ConsistencyRecord)], doc: &mut Doc) -> io::Result<()> {
    let Some((_, first)) = all.first() else {
        return Ok(());
    };
    doc.heading(&format!("consistency: {}", first.model))?;
    let header = vec![vec![
        "target".to_string(),
        "verdict".into(),
        "operations".into(),
        "keys".into(),
        "found".into(),
        "checked in".into(),
    ]];
    let body: Vec<Vec<String>> = (all.iter())
        .map(|(place, v)| {
            let verdict = match v.verdict {
                Verdict::Valid => "valid".to_string(),
                Verdict::Invalid => doc.strong("INVALID"),
                Verdict::Unknown => "unknown".to_string(),
            };
            // A register's anomaly is counted in keys; a transactional one, in cycles or reads.
            let found: Vec<String> = (v.anomalies.iter())
                .map(|(kind, n)| match kind.as_str() {
                    "not linearizable" => {
                        format!("{kind}: {n} key{}", if *n == 1 { "" } else { "s" })
                    }
                    _ => format!("{kind}: {n}"),
                })
                .collect();
            vec![
                place.clone(),
                verdict,
                crate::units::count(v.ops),
                crate::units::count(v.keys),
                if found.is_empty() {
                    "nothing".into()
                } else {
                    found.join(", ")
                },
                crate::units::latency(v.check_ns),
            ]
        })
        .collect();
    doc.table(&header, &body)?;
    let mut notes = Vec::new();
    for (place, v) in all {
        let of = match v.tests.is_empty() {
            true => String::new(),
            false => format!(" of {}", v.tests.join(", ")),
        };
        notes.push(format!(
            "{place}: the history{of} ({}){}",
            v.history.as_deref().unwrap_or("kept in memory only"),
            if v.unknown.is_empty() {
                String::new()
            } else {
                format!("; unknown: {}", v.unknown.join("; "))
            }
        ));
        for p in v.proofs.iter().take(SHOWN) {
            let key = p.key.map_or(String::new(), |k| format!(" on key {k}"));
            let why = p
                .why
                .as_deref()
                .map_or(String::new(), |w| format!(" — {w}"));
            let what = match transactional(&v.model) {
                true => "the transactions",
                false => "the operations that cannot be ordered",
            };
            notes.push(format!(
                "{place}: {}{key}{why}; {what}: {}",
                p.kind,
                p.ops.join("; ")
            ));
        }
    }
    doc.list(&notes)?;
    doc.blank()
}
