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

use crate::sweep::{Figure, Series};
use crate::view::{View, Views};
use plotters::prelude::*;
use results::RunRecord;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const SIZE: (u32, u32) = (960, 600);

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
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font; a failure would leave PNG text blank, not crash.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// One line of a plot: its name and points (x, y, and the band's low and high).
struct Line {
    name: String,
    points: Vec<(f64, f64, f64, f64)>,
    /// Indexes of points whose case was judged invalid: drawn hollow, with a legend entry.
    invalid: Vec<usize>,
}

impl Line {
    fn new(name: String, points: Vec<(f64, f64, f64, f64)>) -> Line {
        Line {
            name,
            points,
            invalid: Vec::new(),
        }
    }
}

/// How a chart draws its lines.
#[derive(Clone, PartialEq)]
enum Kind {
    /// Lines through the points (with a min–max band when `band`).
    Lines,
    /// Grouped bars: x is a category's index (named here), a bar per line side by side.
    Bars(Vec<String>),
}

/// What a plot shows, whatever the backend.
struct Chart {
    title: String,
    x_desc: String,
    y_desc: String,
    /// How an x value is labelled (log axes draw log10(x) and label it back).
    x_label: fn(f64) -> String,
    lines: Vec<Line>,
    band: bool,
    kind: Kind,
}

/// The y axis: linear from 0, or log10 with decade ticks when the values drawn span more than a
/// decade (a fast target otherwise lies flat at 0 beside a slow one).
#[derive(Clone, Copy)]
struct YAxis {
    log: bool,
    lo: f64,
    hi: f64,
}

impl YAxis {
    fn of(values: impl Iterator<Item = f64>) -> YAxis {
        let (mut lo, mut hi) = (f64::INFINITY, 0f64);
        let mut nonpositive = false;
        for v in values.filter(|v| v.is_finite()) {
            if v <= 0.0 {
                nonpositive = true;
            } else {
                lo = lo.min(v);
            }
            hi = hi.max(v);
        }
        if hi <= 0.0 {
            hi = 1.0;
        }
        if !nonpositive && lo.is_finite() && hi / lo > 10.0 {
            YAxis {
                log: true,
                lo: lo.log10().floor(),
                hi: hi.log10().ceil(),
            }
        } else {
            YAxis {
                log: false,
                lo: 0.0,
                hi: hi * 1.08,
            }
        }
    }

    /// Where a value is drawn.
    fn at(self, v: f64) -> f64 {
        if self.log {
            v.max(10f64.powf(self.lo)).log10()
        } else {
            v
        }
    }

    /// A tick's label: the value; on a log axis only at whole decades.
    fn label(self, y: f64) -> String {
        let trim = |v: f64| {
            format!("{v:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        };
        if !self.log {
            return trim(y);
        }
        if (y - y.round()).abs() > 1e-6 {
            return String::new();
        }
        // A whole decade, written exactly: 1000, 1, 0.001.
        match y.round() as i32 {
            k if k >= 0 => crate::units::count(10u64.pow(k.min(19) as u32)),
            k => format!("0.{}1", "0".repeat((-k - 1) as usize)),
        }
    }
}

fn plain(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

fn pow10(x: f64) -> String {
    plain(10f64.powf(x).round())
}

/// `1 / (1 - q)` on a log axis, labelled as the percentile.
fn percentile(x: f64) -> String {
    let q = 100.0 * (1.0 - 10f64.powf(-x));
    if x <= 0.0 {
        "0%".into()
    } else {
        let s = format!("{q:.4}");
        format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// The chart the helpers draw on: linear coordinates, the y axis as [`YAxis`] maps it.
type Plane<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A group of bars per category, a bar per line, each category's name under its group.
fn draw_bars<DB: DrawingBackend>(
    chart: &mut Plane<'_, DB>,
    c: &Chart,
    cats: &[String],
    y: &YAxis,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| PlotError::Draw(e.to_string());
    let n = c.lines.len().max(1) as f64;
    for (i, l) in c.lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(l.points.iter().map(|p| {
                let left = p.0 + 0.1 + 0.8 * i as f64 / n;
                let right = left + 0.8 / n;
                Rectangle::new(
                    [(left, y.at(0.0).max(y.lo)), (right, y.at(p.1))],
                    color.filled(),
                )
            }))
            .map_err(err)?
            .label(&l.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    for (k, name) in cats.iter().enumerate() {
        chart
            .draw_series(std::iter::once(Text::new(
                name.clone(),
                (k as f64 + 0.5, y.lo),
                TextStyle::from(("sans-serif", 15).into_font()).pos(
                    plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Top,
                    ),
                ),
            )))
            .map_err(err)?;
    }
    Ok(())
}

/// Each line, its band (min – max) where the chart has one, its points, and its invalid points
/// hollow; whether any point was invalid.
fn draw_lines<DB: DrawingBackend>(
    chart: &mut Plane<'_, DB>,
    c: &Chart,
    y: &YAxis,
) -> Result<bool, PlotError>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| PlotError::Draw(e.to_string());
    let mut any_invalid = false;
    for (i, l) in c.lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        if c.band && l.points.len() > 1 {
            let band: Vec<(f64, f64)> = l
                .points
                .iter()
                .map(|p| (p.0, y.at(p.2)))
                .chain(l.points.iter().rev().map(|p| (p.0, y.at(p.3))))
                .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(band, color.mix(0.18))))
                .map_err(err)?;
        }
        chart
            .draw_series(LineSeries::new(
                l.points.iter().map(|p| (p.0, y.at(p.1))),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(&l.name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        if c.band {
            chart
                .draw_series(
                    l.points
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| !l.invalid.contains(k))
                        .map(|(_, p)| Circle::new((p.0, y.at(p.1)), 3, color.filled())),
                )
                .map_err(err)?;
        }
        // Invalid points: hollow and larger, never left out.
        chart
            .draw_series(
                l.invalid
                    .iter()
                    .filter_map(|k| l.points.get(*k))
                    .map(|p| Circle::new((p.0, y.at(p.1)), 6, color.stroke_width(2))),
            )
            .map_err(err)?;
        any_invalid |= !l.invalid.is_empty();
    }
    Ok(any_invalid)
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    c: &Chart,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| PlotError::Draw(e.to_string());
    root.fill(&WHITE).map_err(err)?;
    let xs = c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    // The mean, and the band's low and high where a band is drawn.
    let drawn = if c.band { 3 } else { 1 };
    let y = YAxis::of(c.lines.iter().flat_map(|l| {
        l.points
            .iter()
            .flat_map(move |p| [p.1, p.2, p.3].into_iter().take(drawn))
    }));
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    }
    if let Kind::Bars(cats) = &c.kind {
        (x0, x1) = (0.0, cats.len().max(1) as f64);
    }
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, y.lo..y.hi)
        .map_err(err)?;
    let x_label = c.x_label;
    let bars = matches!(c.kind, Kind::Bars(_));
    let decades = (y.hi - y.lo).round() as usize + 1;
    let x_fmt = |x: &f64| x_label(*x);
    let y_fmt = |v: &f64| y.label(*v);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(&c.x_desc)
        .y_desc(&c.y_desc)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 15));
    if y.log {
        mesh.y_labels(decades.max(2));
    }
    if bars {
        mesh.disable_x_mesh().x_labels(0);
    }
    mesh.draw().map_err(err)?;
    if let Kind::Bars(cats) = &c.kind {
        draw_bars(&mut chart, c, cats, &y)?;
    }
    let any_invalid = !bars && draw_lines(&mut chart, c, &y)?;
    if any_invalid {
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(err)?
            .label("hollow: invalid (generator lagged; see the notes)")
            .legend(|(x, y)| Circle::new((x + 10, y), 6, BLACK.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

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
    fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
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
    if hists.is_empty() {
        return None;
    }
    let qs = spectrum_points();
    let max_ns = hists.iter().map(|(_, h)| h.max()).max().unwrap_or(1);
    let (k, unit) = time_unit(max_ns as f64 / 1e9);
    let mut dat = format!(
        "# dyno {} {test}: latency by percentile\n# percentile one_over_1_minus_q",
        r.plan.suite
    );
    for (name, _) in &hists {
        let _ = write!(dat, " {name}_s");
    }
    dat.push('\n');
    for &q in &qs {
        let _ = write!(dat, "{:.6} {:e}", q * 100.0, 1.0 / (1.0 - q));
        for (_, h) in &hists {
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
    let corrected = if view.latency_from_intended_start() {
        " (from the intended start)"
    } else {
        ""
    };
    Some((
        Chart {
            title: format!(
                "{}: latency by percentile{corrected}",
                heading(&r.plan.suite, test)
            ),
            x_desc: "percentile".into(),
            y_desc: format!("latency ({unit})"),
            x_label: percentile,
            lines,
            band: false,
            kind: Kind::Lines,
        },
        dat,
    ))
}

/// The load time series: responses per second and p99 per interval, a line per target (each
/// target's first measured repetition). One `.dat` holds both, a row per target and interval.
fn series_charts(r: &RunRecord) -> Vec<(&'static str, Chart, String)> {
    let mut dat = String::from(
        "# dyno load: per interval, each target's first repetition\n\
         # target start_s end_s responses_per_s p50_s p99_s max_s errors\n",
    );
    let (mut rate, mut p99, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for c in r.cases.iter().filter(|c| c.sweep.is_none()) {
        let Some(l) = c.reps.first().and_then(|rep| rep.load()) else {
            continue;
        };
        let line = |points| Line::new(c.target.clone(), points);
        let (mut per_s, mut p, mut e) = (Vec::new(), Vec::new(), Vec::new());
        for i in &l.intervals {
            let n = i.responses_per_s();
            let _ = writeln!(
                dat,
                "{} {:.3} {:.3} {n:.1} {:e} {:e} {:e} {}",
                c.target,
                i.start_ns as f64 / 1e9,
                i.end_ns as f64 / 1e9,
                i.p50_ns as f64 / 1e9,
                i.p99_ns as f64 / 1e9,
                i.max_ns as f64 / 1e9,
                i.errors
            );
            let t = i.end_ns as f64 / 1e9;
            per_s.push((t, n, n, n));
            let ms = i.p99_ns as f64 / 1e6;
            p.push((t, ms, ms, ms));
            let err = results::stats::per_s(i.errors as f64, i.end_ns - i.start_ns);
            e.push((t, err, err, err));
        }
        if !per_s.is_empty() {
            rate.push(line(per_s));
            p99.push(line(p));
            errors.push(line(e));
        }
    }
    if rate.is_empty() {
        return Vec::new();
    }
    let chart = |title: &str, y_desc: &str, lines| Chart {
        title: format!("load: {title} per interval"),
        x_desc: "time (s)".into(),
        y_desc: y_desc.into(),
        x_label: plain,
        lines,
        band: false,
        kind: Kind::Lines,
    };
    vec![
        (
            "series-rate",
            chart("responses per second", "responses/s", rate),
            dat.clone(),
        ),
        (
            "series-p99",
            chart("p99 latency", "p99 (ms)", p99),
            dat.clone(),
        ),
        (
            "series-errors",
            chart("errors per second", "errors/s", errors),
            dat,
        ),
    ]
}

/// The watched processes: RSS and CPU against the run's time, a line per process. One `.dat`
/// holds both, a row per process and sample.
fn resource_charts(r: &RunRecord) -> Vec<(&'static str, Chart, String)> {
    if r.resources.iter().all(|p| p.samples.is_empty()) {
        return Vec::new();
    }
    let mut dat = String::from(
        "# dyno: watched processes, one row per sample\n\
         # process t_s cpu_percent rss_bytes threads open_files read_bytes written_bytes \
         disk_read_bytes disk_written_bytes\n",
    );
    let (mut rss, mut cpu) = (Vec::new(), Vec::new());
    for p in &r.resources {
        let name = crate::resources::label(p);
        let col = stem(&name);
        let (mut m, mut c) = (Vec::new(), Vec::new());
        for s in p.samples.iter().filter(|s| s.processes > 0) {
            let t = s.t_ns as f64 / 1e9;
            let opt = |v: Option<u64>| v.map_or_else(|| "nan".to_string(), |v| v.to_string());
            let _ = writeln!(
                dat,
                "{col} {t:.3} {:.2} {} {} {} {} {} {} {}",
                s.cpu_percent,
                s.rss_bytes,
                s.threads,
                s.open_files,
                opt(s.read_bytes),
                opt(s.written_bytes),
                opt(s.disk_read_bytes),
                opt(s.disk_written_bytes)
            );
            let mib = s.rss_bytes as f64 / 1048576.0;
            m.push((t, mib, mib, mib));
            c.push((t, s.cpu_percent, s.cpu_percent, s.cpu_percent));
        }
        rss.push(Line::new(name.clone(), m));
        cpu.push(Line::new(name, c));
    }
    let chart = |title: &str, y_desc: &str, lines| Chart {
        title: format!("watched processes: {title}"),
        x_desc: "time since the run's start (s)".into(),
        y_desc: y_desc.into(),
        x_label: plain,
        lines,
        band: false,
        kind: Kind::Lines,
    };
    vec![
        (
            "resources-rss",
            chart("resident memory", "RSS (MiB)", rss),
            dat.clone(),
        ),
        (
            "resources-cpu",
            chart("CPU", "CPU (% of one core)", cpu),
            dat,
        ),
    ]
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
        out.push(Plot::new(name.to_string(), chart, dat)?);
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
    fn percentile_labels_read_as_hdrhistogram_plots_do() {
        assert_eq!(percentile(0.0), "0%");
        assert_eq!(percentile(1.0), "90%");
        assert_eq!(percentile(2.0), "99%");
        assert_eq!(percentile(3.0), "99.9%");
        assert_eq!(pow10(2.0), "100");
        assert_eq!(stem("a b/c"), "a_b_c");
        assert_eq!(heading("load", "load"), "load");
        assert_eq!(heading("shootout", "add"), "shootout add");
    }

    #[test]
    fn the_y_axis_goes_log_with_decade_ticks_past_a_decade() {
        // 0.04 to 250: four decades, so log, from 0.01 to 1000.
        let y = YAxis::of([0.04, 3.0, 250.0].into_iter());
        assert!(y.log);
        assert_eq!((y.lo, y.hi), (-2.0, 3.0));
        assert_eq!(y.label(-2.0), "0.01");
        assert_eq!(y.label(0.0), "1");
        assert_eq!(y.label(3.0), "1,000");
        assert_eq!(y.label(1.5), "", "ticks only at whole decades");
        assert!((y.at(100.0) - 2.0).abs() < 1e-12);
        // Within a decade, or with a zero (errors per second), linear from 0.
        assert!(!YAxis::of([2.0, 15.0].into_iter()).log);
        let z = YAxis::of([0.0, 5.0, 500.0].into_iter());
        assert!(!z.log);
        assert_eq!(z.lo, 0.0);
    }
}
