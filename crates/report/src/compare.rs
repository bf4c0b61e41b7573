//! The comparison of two runs (`dyno compare`) as a table: one row per figure of each matched
//! case — base, new, the change with its 95% interval, the verdict — then the cases of one run
//! only and the settings that differ.

use crate::grid::{Doc, Style};
use results::compare::{Comparison, FigureChange};
use std::io;

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// A figure's value as it reads: a rate per second, a latency as a duration.
fn value(f: &FigureChange, v: f64) -> String {
    match f.figure.as_str() {
        "rate" => format!("{}/s", crate::units::rate(v)),
        "read B/s" | "write B/s" => crate::units::bytes_per_s(v),
        _ => crate::units::latency(v.round() as u64),
    }
}

/// Renders `c` (`base` and `new` name the runs) in `style`.
pub fn render(
    c: &Comparison,
    (base, new): (&str, &str),
    style: Style,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    let mut doc = Doc::new(style, out);
    doc.title(&format!("dyno compare · {base} → {new}"))?;
    doc.blank()?;
    let header = vec![vec![
        "case".to_string(),
        "figure".into(),
        "base".into(),
        "new".into(),
        "change".into(),
        "95% interval".into(),
        "verdict".into(),
    ]];
    let mut body = Vec::new();
    for case in &c.cases {
        for (i, f) in case.figures.iter().enumerate() {
            let verdict = f.verdict.label();
            body.push(vec![
                if i == 0 {
                    case.case.clone()
                } else {
                    String::new()
                },
                f.figure.clone(),
                value(f, f.base),
                value(f, f.new),
                pct(f.change),
                f.interval.map_or("-".to_string(), |[lo, hi]| {
                    format!("{} … {}", pct(lo), pct(hi))
                }),
                if matches!(verdict, "improved" | "regressed") {
                    doc.strong(verdict)
                } else {
                    verdict.to_string()
                },
            ]);
        }
        for k in &case.counts {
            body.push(vec![
                String::new(),
                k.name.clone(),
                crate::units::count(k.base),
                crate::units::count(k.new),
                String::new(),
                String::new(),
                "(totals, not judged)".into(),
            ]);
        }
        if let Some(r) = case.rank {
            body.push(vec![
                String::new(),
                "latency ranks".into(),
                String::new(),
                String::new(),
                format!("P(new > base) {:.3}", r.p_new_slower),
                match r.p_value {
                    // Below what a double can tell from zero beside 1.
                    p if p < 1e-15 => "p < 1e-15".to_string(),
                    p => format!("p = {p:.2e}"),
                },
                "Mann-Whitney U".into(),
            ]);
        }
    }
    doc.table(&header, &body)?;
    let mut notes = vec![format!(
        "a verdict only when the whole 95% bootstrap interval (over repetitions) lies beyond ±{:.1}%; too few repetitions below {} a side",
        c.noise * 100.0,
        results::compare::MIN_REPS
    )];
    notes.extend(c.only_base.iter().map(|k| format!("only in {base}: {k}")));
    notes.extend(c.only_new.iter().map(|k| format!("only in {new}: {k}")));
    notes.extend(c.differences.iter().map(|d| format!("differs: {d}")));
    doc.footer(&notes, false)
}
