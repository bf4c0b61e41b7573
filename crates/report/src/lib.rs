//! Renderers of run records. They only read records: nothing here measures or runs anything, so a
//! run saved years ago renders the same as it did the day it ran.
//!
//! # Layout
//!
//! - [`Format`] and [`render`]: pick a renderer by name and write records to any `Write`.
//! - [`grid`]: what every table shares (styles, the aligned grid, notes, a case's status word).
//! - [`view`]: what the renderers ask of a suite ([`View`]), found by name in a [`Views`]
//!   catalogue; the suites implement it beside how they run (the `suites` crate), so nothing here
//!   names a suite.
//! - [`table`]: a run's tables in any style: its suite's (or a sweep's), then the watched
//!   processes.
//! - [`matrix`]: tests × targets, the table most suites use (rates, latencies, the server's
//!   share, topology penalties, notes).
//! - [`sweep`]: sweeps, and suites whose tests are sweeps of their own: a figure per point (mean,
//!   min – max of the samples) per target; the series the plots draw.
//! - [`plots`] (feature `plots`, on by default): SVG, PNG and `.dat` files: sweeps, latency
//!   spectra (log axes where values span more than a decade), the shootout's rates as grouped
//!   bars, load time series (rate, p99, errors per second); invalid points drawn hollow.
//! - [`html`]: one self-contained page (inline CSS and SVG) with every table, plot, the
//!   environment and the plan.
//! - [`live`]: the run over time as the live view (`--ui`) draws it: its events, its script,
//!   and the report's section with the events frozen in it.
//! - [`resources`]: the watched processes (peak RSS, mean CPU, the RSS trend), after any table.
//! - [`csv`]: one row per case, raw numbers, for spreadsheets and scripts.
//! - [`summary`]: `summary-json`, the headline figures per case (the record is `json`).
//! - [`units`]: thousands separators and human latency units.

pub mod compare;
pub mod consistency;
pub mod csv;
pub mod grid;
pub mod html;
pub mod live;
pub mod matrix;
#[cfg(feature = "plots")]
pub mod plots;
pub mod resources;
pub mod summary;
pub mod sweep;
pub mod table;
pub mod timeline;
pub mod units;
pub mod view;

pub use view::{Flat, View, Views};

use results::RunRecord;
use std::io::{self, Write};

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned text for a terminal.
    Table,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// One row per case.
    Csv,
    /// The records themselves, one JSON document per line.
    Json,
    /// One self-contained HTML page.
    Html,
    /// The headline figures of each case, one small JSON document per record.
    SummaryJson,
    /// A format a suite brings (`View::formats`).
    Own(&'static OwnFormat),
}

/// An output format a suite brings (`-f NAME`, through `View::formats`): its name, what it is
/// (for `--help`), and its renderer, which reads any record.
#[derive(Debug)]
pub struct OwnFormat {
    pub name: &'static str,
    pub help: &'static str,
    pub render: fn(&[RunRecord], &mut dyn Write) -> io::Result<()>,
}

/// A format is its name.
impl PartialEq for OwnFormat {
    fn eq(&self, other: &OwnFormat) -> bool {
        self.name == other.name
    }
}

impl Eq for OwnFormat {}

/// One output format: its name, other names it answers to, and what it is (for `--help`).
#[derive(Debug, Clone, Copy)]
pub struct FormatInfo {
    pub format: Format,
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub help: &'static str,
}

/// Every output format of the renderers, once (the suites' own follow, from their views): the
/// names, the parser and `--help` come from here.
pub const FORMATS: &[FormatInfo] = &[
    FormatInfo {
        format: Format::Table,
        name: "table",
        aliases: &[],
        help: "aligned text",
    },
    FormatInfo {
        format: Format::Markdown,
        name: "markdown",
        aliases: &["md"],
        help: "Markdown tables",
    },
    FormatInfo {
        format: Format::Csv,
        name: "csv",
        aliases: &[],
        help: "one row per case",
    },
    FormatInfo {
        format: Format::Json,
        name: "json",
        aliases: &[],
        help: "the record",
    },
    FormatInfo {
        format: Format::SummaryJson,
        name: "summary-json",
        aliases: &["summary"],
        help: "headline figures",
    },
    FormatInfo {
        format: Format::Html,
        name: "html",
        aliases: &[],
        help: "one self-contained page",
    },
];

impl Format {
    /// The name the user writes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Own(f) => f.name,
            _ => {
                (FORMATS.iter())
                    .find(|f| f.format == self)
                    .expect("every format is in FORMATS")
                    .name
            }
        }
    }

    /// Every format: the renderers', then the suites' of `views` (which have no other names).
    fn all(views: Views) -> impl Iterator<Item = FormatInfo> {
        let own = (views.0.iter())
            .flat_map(|v| v.formats())
            .map(|f| FormatInfo {
                format: Format::Own(f),
                name: f.name,
                aliases: &[],
                help: f.help,
            });
        FORMATS.iter().copied().chain(own)
    }

    /// Every format's name, in `FORMATS`' order, then the suites'.
    pub fn names(views: Views) -> Vec<&'static str> {
        Format::all(views).map(|f| f.name).collect()
    }

    pub fn parse(name: &str, views: Views) -> Option<Format> {
        (Format::all(views))
            .find(|f| f.name == name || f.aliases.contains(&name))
            .map(|f| f.format)
    }

    /// `-f`'s help: each format and what it is.
    pub fn help(views: Views) -> String {
        let each: Vec<String> = (Format::all(views))
            .map(|f| format!("{} ({})", f.name, f.help))
            .collect();
        format!("Output format: {}", each.join(", "))
    }
}

/// Writes `records` in `format`.
pub fn render(
    format: Format,
    records: &[RunRecord],
    views: Views,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Table => records
            .iter()
            .try_for_each(|r| table::render(r, views, grid::Style::Text, out)),
        Format::Markdown => records
            .iter()
            .try_for_each(|r| table::render(r, views, grid::Style::Markdown, out)),
        Format::Csv => csv::render(records, views, out),
        Format::SummaryJson => summary::render(records, views, out),
        Format::Html => html::render(records, views, out),
        Format::Own(f) => (f.render)(records, out),
        Format::Json => records.iter().try_for_each(|r| {
            serde_json::to_writer(&mut *out, r)?;
            writeln!(out)
        }),
    }
}
