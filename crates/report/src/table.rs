//! A run's tables in any style: its suite's (through its [`crate::View`]) or, in a sweep, the
//! sweep's; then the watched processes. Text, Markdown and HTML share the cells.

use crate::grid::{Doc, Style};
use crate::view::Views;
use results::RunRecord;
use std::io::{self, Write};

/// Renders one run: a sweep's tables or its suite's, and their notes, then the watched processes.
pub fn render(r: &RunRecord, views: Views, style: Style, out: &mut dyn Write) -> io::Result<()> {
    let view = views.of(&r.plan.suite);
    let mut doc = Doc::new(style, out);
    if r.plan.sweeps.is_empty() {
        view.table(r, &mut doc)?;
    } else {
        crate::sweep::render(r, view, &mut doc)?;
    }
    crate::resources::render(r, &mut doc)?;
    crate::consistency::render(r, &mut doc)?;
    search(r, &mut doc)?;
    thresholds(r, &mut doc)
}

/// A capacity search: each step's rate and verdict, then the edge it found and why it ended.
fn search(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    let Some(s) = &r.search else {
        return Ok(());
    };
    doc.heading(&format!("capacity search: {}", s.objectives.join(", ")))?;
    if let Some(p) = s.probe_per_s {
        let p = crate::units::count(p.round() as u64);
        doc.line(&format!(
            "the plan's own load first (the probe): {p}/s; the steps from half of it"
        ))?;
    }
    let header = vec![vec![
        "step".to_string(),
        "rate (/s)".into(),
        "".into(),
        "why".into(),
    ]];
    let body: Vec<Vec<String>> = (s.steps.iter().enumerate())
        .map(|(i, step)| {
            let verdict = if step.held {
                "held".to_string()
            } else {
                doc.strong("broke")
            };
            let why = step.why.clone().unwrap_or_default();
            vec![
                (i + 1).to_string(),
                crate::units::count(step.rate),
                verdict,
                why,
            ]
        })
        .collect();
    doc.table(&header, &body)?;
    let rate =
        |r: Option<u64>| r.map_or("none".into(), |r| format!("{}/s", crate::units::count(r)));
    doc.line(&format!(
        "highest rate that held: {}; lowest that broke: {} ({})",
        rate(s.max_held),
        rate(s.min_broke),
        s.why
    ))?;
    doc.blank()
}

/// The thresholds, each held or failed, with the cases that broke it (or how many held).
fn thresholds(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    if r.thresholds.is_empty() {
        return Ok(());
    }
    doc.heading("thresholds")?;
    let header = vec![vec!["threshold".to_string(), "".into(), "cases".into()]];
    let body: Vec<Vec<String>> = (r.thresholds.iter())
        .map(|t| {
            let broken: Vec<String> = (t.cases.iter())
                .filter(|c| !c.held)
                .map(|c| {
                    let limit = c
                        .limit
                        .as_ref()
                        .map_or(String::new(), |l| format!(" (limit {l})"));
                    format!(
                        "{}: {}{limit}",
                        c.case,
                        c.value.as_deref().unwrap_or("no figure")
                    )
                })
                .collect();
            let cases = match (t.cases.len(), broken.is_empty()) {
                (0, _) => "no case in its scope".to_string(),
                (n, true) => format!("held on {n}"),
                (_, false) => broken.join("; "),
            };
            let verdict = if t.held {
                "held".to_string()
            } else {
                doc.strong("FAILED")
            };
            vec![t.threshold.clone(), verdict, cases]
        })
        .collect();
    doc.table(&header, &body)?;
    if let Some(a) = &r.aborted {
        doc.line(&format!(
            "aborted: \"{}\" broke on {} while it ran ({} against {}, {:.1} s into a repetition); the run stopped there",
            a.threshold,
            a.case,
            a.value,
            a.limit,
            a.after_ns as f64 / 1e9
        ))?;
    }
    doc.blank()
}
