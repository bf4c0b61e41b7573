//! Drawing a chart with plotters: the embedded font, the palette, the y axis (log past a
//! decade), bars and lines with their bands and invalid points.

use super::PlotError;
use plotters::prelude::*;

pub(super) const SIZE: (u32, u32) = (960, 600);

const FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
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

pub(super) fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font; a failure would leave PNG text blank, not crash.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// One line of a plot: its name and points (x, y, and the band's low and high).
pub(super) struct Line {
    pub(super) name: String,
    pub(super) points: Vec<(f64, f64, f64, f64)>,
    /// Indexes of points whose case was judged invalid: drawn hollow, with a legend entry.
    pub(super) invalid: Vec<usize>,
}

impl Line {
    pub(super) fn new(name: String, points: Vec<(f64, f64, f64, f64)>) -> Line {
        Line {
            name,
            points,
            invalid: Vec::new(),
        }
    }
}

/// How a chart draws its lines.
#[derive(Clone, PartialEq)]
pub(super) enum Kind {
    /// Lines through the points (with a min–max band when `band`).
    Lines,
    /// Grouped bars: x is a category's index (named here), a bar per line side by side.
    Bars(Vec<String>),
}

/// What a plot shows, whatever the backend.
pub(super) struct Chart {
    pub(super) title: String,
    pub(super) x_desc: String,
    pub(super) y_desc: String,
    /// How an x value is labelled (log axes draw log10(x) and label it back).
    pub(super) x_label: fn(f64) -> String,
    pub(super) lines: Vec<Line>,
    pub(super) band: bool,
    pub(super) kind: Kind,
    /// Spans of x shaded behind the lines (fault windows, a capacity search's edge), and their
    /// label for the legend.
    pub(super) shade: Vec<(f64, f64)>,
    pub(super) shade_label: &'static str,
    /// A level drawn across the chart, with its label (a capacity search's objective).
    pub(super) limit: Option<(f64, String)>,
}

/// The y axis: linear from 0, or log10 with decade ticks when the values drawn span more than a
/// decade (a fast target otherwise lies flat at 0 beside a slow one).
#[derive(Clone, Copy)]
pub(super) struct YAxis {
    pub(super) log: bool,
    pub(super) lo: f64,
    pub(super) hi: f64,
}

impl YAxis {
    pub(super) fn of(values: impl Iterator<Item = f64>) -> YAxis {
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
    pub(super) fn at(self, v: f64) -> f64 {
        if self.log {
            v.max(10f64.powf(self.lo)).log10()
        } else {
            v
        }
    }

    /// A tick's label: the value; on a log axis only at whole decades.
    pub(super) fn label(self, y: f64) -> String {
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

pub(super) fn plain(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

pub(super) fn pow10(x: f64) -> String {
    plain(10f64.powf(x).round())
}

/// `1 / (1 - q)` on a log axis, labelled as the percentile.
pub(super) fn percentile(x: f64) -> String {
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

/// What is drawn behind and across the lines: shaded spans of x (faults, a search's edge) and
/// a level (a search's objective), each in the legend.
fn draw_marks<DB: DrawingBackend>(
    chart: &mut Plane<'_, DB>,
    c: &Chart,
    y: &YAxis,
    (x0, x1): (f64, f64),
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| PlotError::Draw(e.to_string());
    for (i, &(a, b)) in c.shade.iter().enumerate() {
        let grey = RGBColor(120, 120, 120).mix(0.18);
        let drawn = chart
            .draw_series(std::iter::once(Rectangle::new(
                [(a.max(x0), y.lo), (b.min(x1), y.hi)],
                grey.filled(),
            )))
            .map_err(err)?;
        if i == 0 {
            drawn
                .label(c.shade_label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], grey.filled()));
        }
    }
    if let Some((v, label)) = &c.limit {
        let red = RGBColor(190, 30, 45);
        chart
            .draw_series(DashedLineSeries::new(
                [(x0, y.at(*v)), (x1, y.at(*v))],
                8,
                5,
                red.stroke_width(2),
            ))
            .map_err(err)?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2)));
    }
    Ok(())
}

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

pub(super) fn draw<DB: DrawingBackend>(
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
    let y = YAxis::of(
        c.lines
            .iter()
            .flat_map(|l| {
                l.points
                    .iter()
                    .flat_map(move |p| [p.1, p.2, p.3].into_iter().take(drawn))
            })
            .chain(c.limit.iter().map(|(v, _)| *v)),
    );
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
    draw_marks(&mut chart, c, &y, (x0, x1))?;
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
