//! How a suite's record reads: the part of each suite the renderers ask for.
//!
//! The renderers never name a suite. Each suite implements [`View`] (beside how it runs), and the
//! caller hands the renderers a [`Views`] catalogue; a record of a suite the catalogue does not
//! know (a newer dyno's, a suite compiled out) is drawn by [`Generic`]: tests × targets.

use crate::grid::Doc;
use results::{Case, RunRecord};
use std::io;

/// What a series' figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Seconds (smaller is better).
    Time,
    /// Per second (larger is better).
    Rate,
}

/// One figure a sweep's point gives for a test: its file-name suffix, what the y axis shows, its
/// kind, and the values of one case (one per repetition, or per client).
pub struct SweepFigure {
    pub suffix: &'static str,
    pub what: &'static str,
    pub figure: Figure,
    pub values: fn(&Case) -> Vec<f64>,
}

/// The rate per repetition: the figure of most tests.
pub fn rates(c: &Case) -> Vec<f64> {
    c.reps.iter().map(|r| r.ops_per_s).collect()
}

/// The wall time per repetition, in seconds.
pub fn times(c: &Case) -> Vec<f64> {
    c.reps.iter().map(|r| r.wall_ns as f64 / 1e9).collect()
}

/// What the renderers ask of a suite.
pub trait View: results::Named + Sync {
    /// The suite's tables and notes (the watched processes follow, for every suite).
    fn table(&self, r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
        crate::matrix::render(r, doc)
    }

    /// The figures a test gives at each point of a sweep.
    fn sweep_figures(&self, test: &str) -> Vec<SweepFigure> {
        let _ = test;
        vec![SweepFigure {
            suffix: "",
            what: "operations per second",
            figure: Figure::Rate,
            values: rates,
        }]
    }

    /// For a suite whose tests are each a sweep of their own parameter even outside a sweep:
    /// that parameter's value for `test` in `r`. `None` (the default): tests are not series.
    fn own_sweep(&self, r: &RunRecord, test: &str) -> Option<u64> {
        let _ = (r, test);
        None
    }

    /// What a sweep table's title says of the suite's own settings, if anything.
    fn settings_line(&self, r: &RunRecord) -> Option<String> {
        let _ = r;
        None
    }

    /// Whether latency is measured from each operation's intended start (an open loop's).
    fn latency_from_intended_start(&self) -> bool {
        false
    }

    /// Whether the tests' rates are drawn as grouped bars (a group per test, a bar per target).
    fn rate_bars(&self) -> bool {
        false
    }

    /// The output formats this suite brings (`-f NAME`), beside the renderers' own.
    fn formats(&self) -> &'static [crate::OwnFormat] {
        &[]
    }

    /// The figures this suite adds to every case of the flat formats (`csv`, `summary-json`).
    fn flat(&self) -> Option<&'static Flat> {
        None
    }
}

/// Figures a suite adds to each case of the flat formats, after the common ones: `csv`'s columns
/// (empty in a case without them) and `summary-json`'s key (null in a case without them).
pub struct Flat {
    pub key: &'static str,
    pub columns: &'static [&'static str],
    /// The `csv` fields of one case, comma-separated, or `None` where it has none.
    pub csv: fn(&Case) -> Option<String>,
    /// The `summary-json` value of one case (null where it has none).
    pub json: fn(&Case) -> serde_json::Value,
}

/// The view of a suite no catalogue knows: tests × targets.
pub struct Generic;

impl results::Named for Generic {
    fn name(&self) -> &'static str {
        ""
    }
}

impl View for Generic {}

/// The views the renderers may use, found by the suite's name.
#[derive(Clone, Copy)]
pub struct Views<'a>(pub &'a [&'a dyn View]);

impl<'a> Views<'a> {
    /// The flat figures the suites add, in the catalogue's order.
    pub fn flat(&self) -> impl Iterator<Item = &'static Flat> + 'a {
        self.0.iter().filter_map(|v| v.flat())
    }

    /// The view of `suite`, or [`Generic`].
    pub fn of(&self, suite: &str) -> &'a dyn View {
        self.0
            .iter()
            .copied()
            .find(|v| v.name() == suite)
            .unwrap_or(&Generic)
    }

    /// No suite known: every record drawn as tests × targets.
    pub const NONE: Views<'static> = Views(&[]);
}
