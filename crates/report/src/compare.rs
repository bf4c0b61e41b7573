//! The comparison of two runs (`dyno compare`) as a table: one row per figure of each matched
//! case — base, new, the change with its 95% interval and p-value, the verdict, the smallest
//! change these runs could show — then what the verdicts rest on, the cases of one run only and
//! the settings that differ.

use crate::grid::{Doc, Style};
use results::compare::{Comparison, FigureChange};
use std::io;

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// A p-value as it reads: two significant digits, and no false precision near 0.
fn p_value(p: f64) -> String {
    match p {
        p if p < 1e-4 => "< 0.0001".to_string(),
        p if p < 0.01 => format!("{p:.4}"),
        p => format!("{p:.2}"),
    }
}

/// What the verdicts rest on: the unit, the test, the noise band, the runs.
fn basis(c: &Comparison) -> Vec<String> {
    use results::compare::{ALPHA, MIN_REPS, MIN_RUNS};
    let runs = match c.runs {
        n if n >= MIN_RUNS => format!(
            "this machine's run-to-run noise, measured over {n} runs of the plan in the history"
        ),
        n => format!(
            "this machine's run-to-run noise, unknown: {n} run(s) of the plan in the history, {MIN_RUNS} needed (\"too few runs\": run it again)"
        ),
    };
    vec![
        format!(
            "verdicts: a t test of the runs' figures (log scale) against the larger of {runs} and the repetitions' spread (Welch); α = {:.0}% for the whole comparison (Holm); a change counts when its whole interval lies beyond ±{:.1}%; no test below {MIN_REPS} repetitions a side",
            ALPHA * 100.0,
            c.noise * 100.0,
        ),
        "visible beyond: the smallest change these runs would show 4 times in 5".to_string(),
    ]
}

/// The power note: how many repetitions would show a change of ±noise in each case's rate, or
/// that only more runs would.
fn power(c: &Comparison) -> Vec<String> {
    let band = format!("±{:.1}%", c.noise * 100.0);
    (c.cases.iter())
        .filter_map(|k| {
            let f = k.figures.iter().find(|f| f.figure == "rate" && f.p_value.is_some())?;
            Some(match f.reps_needed {
                Some(n) => format!("to see a {band} change in the rate of {}: {n} repetitions a side", k.case),
                None => format!(
                    "a {band} change in the rate of {} is hidden by the run-to-run noise (±{:.1}%) whatever the repetitions: make each repetition longer (to average over the machine's drift) or use a quieter machine",
                    k.case,
                    f.run_noise.unwrap_or(0.0) * 100.0
                ),
            })
        })
        .collect()
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
        "p".into(),
        "verdict".into(),
        "visible beyond".into(),
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
                f.p_value.map_or("-".to_string(), p_value),
                if matches!(verdict, "improved" | "regressed") {
                    doc.strong(verdict)
                } else {
                    verdict.to_string()
                },
                f.visible
                    .map_or("-".to_string(), |v| format!("±{:.1}%", v * 100.0)),
            ]);
        }
        if let Some(v) = &case.consistency {
            let word = |v: Option<results::Verdict>| v.map_or("unchecked", results::Verdict::name);
            body.push(vec![
                String::new(),
                "consistency".into(),
                word(v.base).into(),
                word(v.new).into(),
                String::new(),
                String::new(),
                String::new(),
                if v.worse() {
                    doc.strong("regressed")
                } else {
                    "(not worse)".into()
                },
                String::new(),
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
                String::new(),
                "(totals, not judged)".into(),
                String::new(),
            ]);
        }
    }
    doc.table(&header, &body)?;
    let mut notes = basis(c);
    notes.extend(power(c));
    notes.extend(c.only_base.iter().map(|k| format!("only in {base}: {k}")));
    notes.extend(c.only_new.iter().map(|k| format!("only in {new}: {k}")));
    notes.extend(c.differences.iter().map(|d| format!("differs: {d}")));
    doc.footer(&notes, false)
}
