//! Plots drawn by dyno itself: each as SVG, PNG, and a plain `.dat` table (whitespace-separated
//! columns under a `#` header) for gnuplot users to restyle.
//!
//! - sweeps ([`crate::sweep::series`]): x = the swept parameter (a log axis when its values span
//!   more than two decades), y = the figure; per target a mean line with a min–max band;
//! - latency spectra: per test, each target's latency against percentile on HdrHistogram's log
//!   axis (`1 / (1 - q)`: 90%, 99%, 99.9% … evenly spaced);
//! - load time series: responses per second and p99 per interval, a line per target.
//!
//! The tables' figures and the plots' come from the same records: nothing here measures.

mod draw;

use crate::sweep::{Figure, Series};
use crate::view::{View, Views};
use draw::{Chart, Kind, Line, SIZE, draw, percentile, plain, pow10, register_font};
use plotters::prelude::*;
use results::RunRecord;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod series;
use series::*;

/// Why a plot could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The drawing backend failed (plotters' own message).
    #[error("drawing: {0}")]
    Draw(String),
    #[error("{path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl PlotError {
    fn write(path: &Path) -> impl FnOnce(std::io::Error) -> PlotError + '_ {
        move |error| PlotError::Write {
            path: path.to_path_buf(),
            error,
        }
    }
}
/// A font for PNG text (SVG names its font and lets the viewer draw it): DejaVu Sans, whose
/// licence is beside it in `assets/`.
/// One plot of a record: its file stem, its title, and its SVG and `.dat` texts.
pub struct Plot {
    /// The file name without extension (`sweep-depth`, `latency-add`, `series-rate` …).
    pub stem: String,
    pub title: String,
    /// The SVG document (960 × 600 with a `viewBox`, so it scales).
    pub svg: String,
    /// The same data as a whitespace-separated table under a `#` header.
    pub dat: String,
    chart: Chart,
}

impl Plot {
    fn new(stem: String, chart: Chart, dat: String) -> Result<Plot, PlotError> {
        // SVG text is laid out with the font's metrics too.
        register_font();
        let mut svg = String::new();
        draw(
            SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(),
            &chart,
        )?;
        Ok(Plot {
            stem,
            title: chart.title.clone(),
            svg,
            dat,
            chart,
        })
    }

    /// Writes `stem.svg`, `stem.png` and `stem.dat` under `dir`.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
        let path = |ext: &str| dir.join(format!("{}.{ext}", self.stem));
        let (svg, png, dat) = (path("svg"), path("png"), path("dat"));
        std::fs::write(&svg, &self.svg).map_err(PlotError::write(&svg))?;
        draw(
            BitMapBackend::new(&png, SIZE).into_drawing_area(),
            &self.chart,
        )?;
        std::fs::write(&dat, &self.dat).map_err(PlotError::write(&dat))?;
        Ok(vec![svg, png, dat])
    }
}

/// Lines over time, no band.
fn over_time(title: String, x_desc: &str, y_desc: &str, lines: Vec<Line>) -> Chart {
    Chart {
        title,
        x_desc: x_desc.into(),
        y_desc: y_desc.into(),
        x_label: plain,
        lines,
        band: false,
        kind: Kind::Lines,
        shade: Vec::new(),
        shade_label: "fault",
        limit: None,
    }
}

/// A time axis in the unit that suits its largest value.
fn time_unit(max_s: f64) -> (f64, &'static str) {
    if max_s < 1e-3 {
        (1e6, "µs")
    } else if max_s < 1.0 {
        (1e3, "ms")
    } else {
        (1.0, "s")
    }
}

fn sweep_chart(r: &RunRecord, s: &Series) -> (Chart, String) {
    let xs: Vec<u64> = s
        .lines
        .iter()
        .flat_map(|(_, l)| l.iter().map(|p| p.x))
        .collect();
    let (lo, hi) = (
        xs.iter().copied().min().unwrap_or(1).max(1),
        xs.iter().copied().max().unwrap_or(1),
    );
    let x_log = hi as f64 / lo as f64 > 100.0 && xs.iter().all(|&x| x > 0);
    let max = s
        .lines
        .iter()
        .flat_map(|(_, l)| l.iter().map(|p| p.max))
        .fold(0f64, f64::max);
    let (scale, y_desc) = match s.figure {
        Figure::Time => {
            let (k, unit) = time_unit(max);
            (k, format!("{} ({unit})", s.what))
        }
        Figure::Rate => (1.0, s.what.clone()),
    };
    let lines = s
        .lines
        .iter()
        .map(|(name, pts)| Line {
            name: name.clone(),
            invalid: pts
                .iter()
                .enumerate()
                .filter(|(_, p)| p.invalid)
                .map(|(k, _)| k)
                .collect(),
            points: pts
                .iter()
                .map(|p| {
                    let x = if x_log {
                        (p.x as f64).log10()
                    } else {
                        p.x as f64
                    };
                    (x, p.mean * scale, p.min * scale, p.max * scale)
                })
                .collect(),
        })
        .collect();
    let samples = r.plan.reps;
    let chart = Chart {
        title: format!(
            "{}: {} against {} (mean, min–max of {samples} sample{})",
            heading(&r.plan.suite, &s.test),
            s.what.split(" (").next().unwrap_or(&s.what),
            s.param,
            if samples == 1 { "" } else { "s" }
        ),
        x_desc: s.param.clone(),
        y_desc,
        x_label: if x_log { pow10 } else { plain },
        lines,
        band: true,
        kind: Kind::Lines,
        shade: search_edge(r, s, x_log),
        shade_label: "the search's edge",
        limit: objective(r, s, scale),
    };
    let mut dat = format!(
        "# dyno {} {}: {} against {}\n# {}",
        r.plan.suite, s.test, s.what, s.param, s.param
    );
    let unit = if s.figure == Figure::Time {
        "_s"
    } else {
        "_per_s"
    };
    for (name, _) in &s.lines {
        let _ = write!(dat, " {name}_mean{unit} {name}_min{unit} {name}_max{unit}");
    }
    dat.push('\n');
    let mut all: Vec<u64> = xs.clone();
    all.sort_unstable();
    all.dedup();
    for x in all {
        let _ = write!(dat, "{x}");
        for (_, l) in &s.lines {
            match l.iter().find(|p| p.x == x) {
                Some(p) => {
                    let _ = write!(dat, " {:e} {:e} {:e}", p.mean, p.min, p.max);
                }
                None => dat.push_str(" nan nan nan"),
            }
        }
        dat.push('\n');
    }
    (chart, dat)
}

/// A capacity search's edge on a chart against the rate: from the highest rate that held to
/// the lowest that broke (none outside a search).
fn search_edge(r: &RunRecord, s: &Series, x_log: bool) -> Vec<(f64, f64)> {
    let at = |v: u64| if x_log { (v as f64).log10() } else { v as f64 };
    match r.search.as_ref().map(|e| (e.max_held, e.min_broke)) {
        Some((Some(h), Some(b))) if s.param == "rate" => vec![(at(h), at(b))],
        _ => Vec::new(),
    }
}

/// A capacity search's latency objective on the chart of that percentile, as the chart draws
/// it (`scale`: seconds to its unit): `p99 < 20ms` across the p99 chart.
fn objective(r: &RunRecord, s: &Series, scale: f64) -> Option<(f64, String)> {
    use results::thresholds::{Metric, Threshold};
    let search = r.search.as_ref()?;
    (search.objectives.iter()).find_map(|text| {
        let t = Threshold::parse(text).ok()?;
        let Metric::Quantile(q) = t.metric else {
            return None;
        };
        let name = [
            (0.5, "p50"),
            (0.9, "p90"),
            (0.99, "p99"),
            (0.999, "p99.9"),
            (1.0, "max"),
        ]
        .iter()
        .find(|(p, _)| (p - q).abs() < 1e-9)?
        .1;
        (s.figure == Figure::Time && s.name.ends_with(&format!("-{name}")))
            .then(|| (t.limit / 1e9 * scale, format!("objective: {text}")))
    })
}

/// Percentiles the spectrum is drawn at: 0% up to 99.9999%.
fn spectrum_points() -> Vec<f64> {
    (0..=120)
        .map(|i| 1.0 - 10f64.powf(-(i as f64) / 20.0))
        .collect()
}

fn spectrum_chart(r: &RunRecord, view: &dyn View, test: &str) -> Option<(Chart, String)> {
    let mut hists = Vec::new();
    for c in r
        .cases
        .iter()
        .filter(|c| c.test == test && c.sweep.is_none())
    {
        if let Some(h) = c
            .histogram
            .as_deref()
            .and_then(|h| results::histogram::decode(h).ok())
            && !h.is_empty()
        {
            hists.push((c.target.clone(), h));
        }
    }
    let corrected = if view.latency_from_intended_start() {
        " (from the intended start)"
    } else {
        ""
    };
    spectra(
        format!(
            "{}: latency by percentile{corrected}",
            heading(&r.plan.suite, test)
        ),
        &format!("dyno {} {test}", r.plan.suite),
        &hists,
    )
}

/// Latency against percentile, a line per named histogram; `None` when there is none.
fn spectra(
    title: String,
    dat_title: &str,
    hists: &[(String, results::Histogram)],
) -> Option<(Chart, String)> {
    if hists.is_empty() {
        return None;
    }
    let qs = spectrum_points();
    let max_ns = hists.iter().map(|(_, h)| h.max()).max().unwrap_or(1);
    let (k, unit) = time_unit(max_ns as f64 / 1e9);
    let mut dat = format!("# {dat_title}: latency by percentile\n# percentile one_over_1_minus_q");
    for (name, _) in hists {
        let _ = write!(dat, " {name}_s");
    }
    dat.push('\n');
    for &q in &qs {
        let _ = write!(dat, "{:.6} {:e}", q * 100.0, 1.0 / (1.0 - q));
        for (_, h) in hists {
            let _ = write!(dat, " {:e}", h.value_at_quantile(q) as f64 / 1e9);
        }
        dat.push('\n');
    }
    let lines = hists
        .iter()
        .map(|(name, h)| {
            let points = qs
                .iter()
                .map(|&q| {
                    let v = h.value_at_quantile(q) as f64 / 1e9 * k;
                    ((1.0 / (1.0 - q)).log10(), v, v, v)
                })
                .collect();
            Line::new(name.clone(), points)
        })
        .collect();
    Some((
        Chart {
            title,
            x_desc: "percentile".into(),
            y_desc: format!("latency ({unit})"),
            x_label: percentile,
            lines,
            band: false,
            kind: Kind::Lines,
            shade: Vec::new(),
            shade_label: "fault",
            limit: None,
        },
        dat,
    ))
}

/// One case's latency spectra in several runs overlaid (`dyno compare -f html`), each named;
/// `None` when no run has a histogram of it.
pub fn overlay(
    case: &str,
    runs: &[(&str, Option<results::Histogram>)],
) -> Result<Option<Plot>, PlotError> {
    let hists: Vec<(String, results::Histogram)> = (runs.iter())
        .filter_map(|(n, h)| {
            (h.as_ref())
                .filter(|h| !h.is_empty())
                .map(|h| (n.to_string(), h.clone()))
        })
        .collect();
    match spectra(format!("{case}: latency by percentile"), case, &hists) {
        Some((chart, dat)) => Plot::new(format!("compare-{}", stem(case)), chart, dat).map(Some),
        None => Ok(None),
    }
}

/// A figure the history keeps of every case, drawn over runs by [`trend`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrendMetric {
    Rate,
    P50,
    P99,
    Errors,
}

impl TrendMetric {
    pub const NAMES: [&str; 4] = ["rate", "p50", "p99", "errors"];

    pub fn parse(name: &str) -> Option<TrendMetric> {
        Some(match name {
            "rate" => TrendMetric::Rate,
            "p50" => TrendMetric::P50,
            "p99" => TrendMetric::P99,
            "errors" => TrendMetric::Errors,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    fn of(self, c: &results::history::CaseRow) -> Option<f64> {
        match self {
            TrendMetric::Rate => c.rate,
            TrendMetric::P50 => c.p50_ns.map(|v| v as f64),
            TrendMetric::P99 => c.p99_ns.map(|v| v as f64),
            TrendMetric::Errors => Some(c.errors as f64),
        }
    }
}

/// The trend of `metric` over the runs of a history: x is the run's number in the history, a
/// line per case (in the order the rows name them). `None` when no case has a figure in two
/// runs: one point is no trend.
pub fn trend(
    metric: TrendMetric,
    rows: &[results::history::CaseRow],
) -> Result<Option<Plot>, PlotError> {
    let mut cases: Vec<(&str, Vec<(i64, f64)>)> = Vec::new();
    for r in rows {
        let Some(v) = metric.of(r) else { continue };
        match cases.iter_mut().find(|(c, _)| *c == r.case) {
            Some((_, points)) => points.push((r.run, v)),
            None => cases.push((&r.case, vec![(r.run, v)])),
        }
    }
    cases.retain(|(_, p)| p.len() >= 2);
    if cases.is_empty() {
        return Ok(None);
    }
    let latency = matches!(metric, TrendMetric::P50 | TrendMetric::P99);
    let max = (cases.iter().flat_map(|(_, p)| p.iter().map(|p| p.1))).fold(0.0, f64::max);
    let (k, unit) = if latency {
        let (k, unit) = time_unit(max / 1e9);
        (k / 1e9, unit)
    } else {
        (
            1.0,
            if metric == TrendMetric::Rate {
                "/s"
            } else {
                ""
            },
        )
    };
    let mut dat = format!("# dyno history: {} by run\n# case run value", metric.name());
    dat.push('\n');
    for (case, points) in &cases {
        for (run, v) in points {
            let _ = writeln!(dat, "{} {run} {v:e}", stem(case));
        }
    }
    let lines = (cases.iter())
        .map(|(case, points)| {
            let points = (points.iter())
                .map(|&(run, v)| (run as f64, v * k, v * k, v * k))
                .collect();
            Line::new(case.to_string(), points)
        })
        .collect();
    let y_desc = match metric {
        TrendMetric::Rate => "operations per second".to_string(),
        TrendMetric::Errors => "failed operations".to_string(),
        _ => format!("{} ({unit})", metric.name()),
    };
    let mut chart = over_time(
        format!("{} over runs", metric.name()),
        "run (its number in the history)",
        &y_desc,
        lines,
    );
    // Runs are whole numbers: no tick between two.
    chart.x_label = |x| match x.fract() {
        0.0 => plain(x),
        _ => String::new(),
    };
    Plot::new(format!("trend-{}", metric.name()), chart, dat).map(Some)
}

/// A plot's subject: the suite and the test, once when they are the same (`load`, not `load load`).
fn heading(suite: &str, test: &str) -> String {
    if suite == test {
        suite.to_string()
    } else {
        format!("{suite} {test}")
    }
}

/// The shootout's rates as grouped bars: a group per test, a bar per target (the best of the
/// repetitions, as the table shows). A case with no rate (n/a, failed) has no bar; its cell in
/// the `.dat` is `nan`.
fn rate_bars(r: &RunRecord, view: &dyn View) -> Option<(Chart, String)> {
    if !view.rate_bars() {
        return None;
    }
    let tests = r.tests_where(|c| c.sweep.is_none());
    let targets: Vec<&str> = r.plan.targets.iter().map(|t| t.name.as_str()).collect();
    let rate = |t: &str, test: &str| {
        r.case_of(t, test)
            .filter(|c| crate::grid::status_word(c).is_none())
            .and_then(|c| c.summary.as_ref())
            .map(|s| s.ops_per_s.best)
    };
    let mut dat = format!(
        "# dyno {}: objects per second, best of {} repetition(s)\n# test",
        r.plan.suite, r.plan.reps
    );
    for t in &targets {
        let _ = write!(dat, " {t}_per_s");
    }
    dat.push('\n');
    for test in &tests {
        dat.push_str(test);
        for t in &targets {
            match rate(t, test) {
                Some(v) => {
                    let _ = write!(dat, " {v:.1}");
                }
                None => dat.push_str(" nan"),
            }
        }
        dat.push('\n');
    }
    let lines: Vec<Line> = targets
        .iter()
        .map(|t| {
            let points = tests
                .iter()
                .enumerate()
                .filter_map(|(k, test)| rate(t, test).map(|v| (k as f64, v, v, v)))
                .collect();
            Line::new(t.to_string(), points)
        })
        .collect();
    if lines.iter().all(|l| l.points.is_empty()) {
        return None;
    }
    Some((
        Chart {
            title: format!(
                "{}: objects per second by test (best of the repetitions)",
                r.plan.suite
            ),
            x_desc: "test".into(),
            y_desc: "objects/s".into(),
            x_label: plain,
            lines,
            band: false,
            kind: Kind::Bars(tests.iter().map(|t| t.to_string()).collect()),
            shade: Vec::new(),
            shade_label: "fault",
            limit: None,
        },
        dat,
    ))
}

/// A name safe as a file name.
fn stem(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Every plot of a record, in the order the tables show their figures.
pub fn plots(r: &RunRecord, views: Views) -> Result<Vec<Plot>, PlotError> {
    let mut out = Vec::new();
    let view = views.of(&r.plan.suite);
    let own_sweeps = (r.tests_where(|_| true).iter()).any(|t| view.own_sweep(r, t).is_some());
    if !r.plan.sweeps.is_empty() || own_sweeps {
        for s in crate::sweep::series(r, view) {
            if s.lines.iter().all(|(_, l)| l.is_empty()) {
                continue;
            }
            let (chart, dat) = sweep_chart(r, &s);
            out.push(Plot::new(format!("sweep-{}", stem(&s.name)), chart, dat)?);
        }
    }
    if let Some((chart, dat)) = rate_bars(r, view) {
        out.push(Plot::new(
            format!("{}-rate", stem(&r.plan.suite)),
            chart,
            dat,
        )?);
    }
    let tests = r.tests_where(|c| c.sweep.is_none());
    for t in tests {
        if let Some((chart, dat)) = spectrum_chart(r, view, t) {
            out.push(Plot::new(format!("latency-{}", stem(t)), chart, dat)?);
        }
    }
    for (name, chart, dat) in series_charts(r).into_iter().chain(resource_charts(r)) {
        out.push(Plot::new(name, chart, dat)?);
    }
    Ok(out)
}

/// Writes every plot of a record into `dir` (created if needed); returns the files written.
pub fn write_all(r: &RunRecord, views: Views, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(PlotError::write(dir))?;
    let mut files = Vec::new();
    for p in plots(r, views)? {
        files.extend(p.write(dir)?);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_stems_and_headings() {
        assert_eq!(stem("a b/c"), "a_b_c");
        assert_eq!(heading("tally", "tally"), "tally");
        assert_eq!(heading("tally", "add"), "tally add");
    }
}
