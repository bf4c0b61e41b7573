//! Sweeps, and suites whose tests are sweeps of their own: a figure per point of a swept parameter,
//! per target, as the mean, min and max of the point's samples (repetitions). The table and the
//! plots read the same [`Series`].

use crate::grid::{Doc, status_word};
use crate::units;
pub use crate::view::Figure;
use crate::view::{SweepFigure, View};
use results::{Case, RunRecord};
use std::io;

/// One point of one target's line.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Values the point summarizes (samples; for per-client figures, clients × samples).
    pub n: usize,
    /// The case was judged `invalid` (the generator could not keep up): its figures are shown,
    /// marked, and the notes say why.
    pub invalid: bool,
}

/// One plot's worth: a figure against a parameter, a line per target.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// A file-name stem, e.g. `depth` or `clients-per-folder`.
    pub name: String,
    pub param: String,
    pub test: String,
    pub figure: Figure,
    /// What the y axis shows, e.g. "time to create and stat a folder".
    pub what: String,
    /// Per target (in column order): its points, and the notes of points with no figure.
    pub lines: Vec<(String, Vec<Point>)>,
    pub notes: Vec<String>,
    /// Points with no figure, by line index and x: the word the table shows (`n/a`, `failed`).
    pub words: Vec<(usize, u64, &'static str)>,
}

fn stat(values: &[f64], x: u64) -> Option<Point> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    Some(Point {
        x,
        mean: values.iter().sum::<f64>() / n as f64,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        n,
        invalid: false,
    })
}

/// Every series of a record: one per swept parameter × test × figure. Outside a sweep, a suite
/// whose tests are sweeps of their own ([`View::own_sweep`]) gives one-point series at the
/// plan's values.
pub fn series(r: &RunRecord, view: &dyn View) -> Vec<Series> {
    let mut params: Vec<String> = r.plan.sweeps.iter().map(|s| s.param.clone()).collect();
    let swept = !params.is_empty();
    if !swept {
        params.push(String::new());
    }
    let targets: Vec<&str> = r.plan.targets.iter().map(|t| t.name.as_str()).collect();
    let mut out = Vec::new();
    for param in &params {
        let in_sweep = |c: &&Case| match &c.sweep {
            Some(p) => &p.param == param,
            None => !swept,
        };
        for test in r.tests_where(|c| in_sweep(&c)) {
            let own = view.own_sweep(r, test);
            let x_of = |c: &Case| match &c.sweep {
                Some(p) => p.value,
                None => own.unwrap_or(0),
            };
            let param_name = match (swept, own) {
                (true, _) => param.clone(),
                (false, Some(_)) => test.to_string(),
                (false, None) => String::new(),
            };
            for SweepFigure {
                suffix,
                what,
                figure,
                values: extract,
            } in view.sweep_figures(test)
            {
                let mut lines = Vec::new();
                let mut notes = Vec::new();
                let mut words = Vec::new();
                for (li, t) in targets.iter().enumerate() {
                    let mut points = Vec::new();
                    for c in r
                        .cases
                        .iter()
                        .filter(in_sweep)
                        .filter(|c| c.target == *t && c.test == test)
                    {
                        let note = |w: &str| {
                            format!(
                                "{t} {test} at {param_name} {}: {w}{}",
                                x_of(c),
                                c.reason
                                    .as_deref()
                                    .map(|r| format!(": {r}"))
                                    .unwrap_or_default()
                            )
                        };
                        match status_word(c) {
                            None => points.extend(stat(&extract(c), x_of(c))),
                            // An invalid point has its figures: shown, marked, explained.
                            Some(w) if c.status == results::Status::Invalid => {
                                let point = stat(&extract(c), x_of(c))
                                    .map(|p| Point { invalid: true, ..p });
                                match point {
                                    Some(p) => {
                                        points.push(p);
                                        notes.push(note("marked invalid"));
                                    }
                                    None => {
                                        notes.push(note(w));
                                        words.push((li, x_of(c), w));
                                    }
                                }
                            }
                            Some(w) => {
                                notes.push(note(w));
                                words.push((li, x_of(c), w));
                            }
                        }
                    }
                    // By the parameter (a capacity search runs its points in its own order).
                    points.sort_by_key(|p| p.x);
                    lines.push((t.to_string(), points));
                }
                out.push(Series {
                    name: format!("{test}{suffix}"),
                    param: param_name.clone(),
                    test: test.to_string(),
                    figure,
                    what: what.to_string(),
                    lines,
                    notes,
                    words,
                });
            }
        }
    }
    // File names must not collide when a test appears in several sweeps.
    if params.len() > 1 {
        for s in out.iter_mut().filter(|s| s.param != s.test) {
            s.name = format!("{}-{}", s.param, s.name);
        }
    }
    out
}

/// A figure in the table: a time in its unit, a rate with separators.
pub fn cell(figure: Figure, v: f64) -> String {
    match figure {
        Figure::Time => units::latency((v * 1e9).round() as u64),
        Figure::Rate => units::rate(v),
    }
}

/// The sweep tables: per series, a row per point, a column per target: mean (min – max).
pub fn render(r: &RunRecord, view: &dyn View, doc: &mut Doc) -> io::Result<()> {
    let p = &r.plan;
    let samples = if p.reps == 1 {
        "1 sample".to_string()
    } else {
        format!("{} samples", p.reps)
    };
    let mut settings: Vec<String> = view.settings_line(r).into_iter().collect();
    for s in &p.sweeps {
        let v = &s.values;
        settings.push(match v.len() {
            1 => format!("{} = {}", s.param, v[0]),
            _ => format!(
                "{} swept over {} points, {}…{}",
                s.param,
                v.len(),
                v[0],
                v[v.len() - 1]
            ),
        });
    }
    let title = format!("dyno {} · {} · {samples}", p.suite, settings.join(" · "));
    doc.title(&title)?;
    let all = series(r, view);
    for s in &all {
        doc.blank()?;
        let stat = if p.reps > 1 || s.lines.iter().any(|(_, l)| l.iter().any(|p| p.n > 1)) {
            "mean (min – max)"
        } else {
            "one sample"
        };
        doc.heading(&format!("{}: {} — {stat}", s.test, s.what))?;
        let header = vec![
            std::iter::once(s.param.clone())
                .chain(s.lines.iter().map(|(t, _)| t.clone()))
                .collect::<Vec<_>>(),
        ];
        // The points in the order they ran.
        let mut xs: Vec<u64> = Vec::new();
        for p in s.lines.iter().flat_map(|(_, l)| l) {
            if !xs.contains(&p.x) {
                xs.push(p.x);
            }
        }
        let body: Vec<Vec<String>> = xs
            .iter()
            .map(|x| {
                std::iter::once(x.to_string())
                    .chain(s.lines.iter().enumerate().map(|(li, (_, l))| {
                        match l.iter().find(|p| p.x == *x) {
                            None => s
                                .words
                                .iter()
                                .find(|(wl, wx, _)| *wl == li && wx == x)
                                .map_or("-", |w| w.2)
                                .into(),
                            Some(p) => {
                                let v = if p.n == 1 {
                                    cell(s.figure, p.mean)
                                } else {
                                    format!(
                                        "{} ({} – {})",
                                        cell(s.figure, p.mean),
                                        cell(s.figure, p.min),
                                        cell(s.figure, p.max)
                                    )
                                };
                                if p.invalid { format!("{v} invalid") } else { v }
                            }
                        }
                    }))
                    .collect()
            })
            .collect();
        doc.table(&header, &body)?;
        doc.list(&s.notes)?;
    }
    Ok(())
}
