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
    crate::resources::render(r, &mut doc)
}
