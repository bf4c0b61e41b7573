//! What every table shares: the two styles (terminal text and Markdown), the grid that aligns
//! cells in either, the notes under a table, and the word a cell shows when a case has no
//! number. It sits below every renderer, so renderers never import each other for it.

use results::{Case, Status};
use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Text,
    Markdown,
}

/// What a cell shows when there is no number.
pub fn status_word(c: &Case) -> Option<&'static str> {
    match c.status {
        Status::Ok => None,
        Status::Na => Some("n/a"),
        Status::Failed => Some("failed"),
        Status::Interrupted => Some("interrupted"),
        Status::Invalid => Some("invalid"),
    }
}

/// Writes a grid; the first column is left-aligned, the others right-aligned.
pub fn grid(
    out: &mut dyn Write,
    style: Style,
    header: &[Vec<String>],
    body: &[Vec<String>],
) -> io::Result<()> {
    let n = header[0].len();
    let width: Vec<usize> = (0..n)
        .map(|i| {
            header
                .iter()
                .chain(body)
                .map(|row| row[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let cell = |i: usize, s: &str| {
        let pad = width[i] - s.chars().count();
        if i == 0 {
            format!("{s}{}", " ".repeat(pad))
        } else {
            format!("{}{s}", " ".repeat(pad))
        }
    };
    match style {
        Style::Text => {
            for row in header {
                let line: Vec<String> = row.iter().enumerate().map(|(i, s)| cell(i, s)).collect();
                writeln!(out, "{}", line.join("  ").trim_end())?;
            }
            let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
            writeln!(out, "{}", rule.join("  "))?;
            for row in body {
                let line: Vec<String> = row.iter().enumerate().map(|(i, s)| cell(i, s)).collect();
                writeln!(out, "{}", line.join("  "))?;
            }
        }
        Style::Markdown => {
            // Markdown has one header row: join the header lines with a line break.
            let head: Vec<String> = (0..n)
                .map(|i| {
                    header
                        .iter()
                        .map(|r| r[i].as_str())
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join("<br>")
                })
                .collect();
            writeln!(out, "| {} |", head.join(" | "))?;
            let align: Vec<&str> = (0..n)
                .map(|i| if i == 0 { ":---" } else { "---:" })
                .collect();
            writeln!(out, "| {} |", align.join(" | "))?;
            for row in body {
                writeln!(out, "| {} |", row.join(" | "))?;
            }
        }
    }
    Ok(())
}

/// The notes under a table, and the interruption notice.
pub fn footer(
    out: &mut dyn Write,
    style: Style,
    notes: &[String],
    interrupted: bool,
) -> io::Result<()> {
    if !notes.is_empty() {
        writeln!(out)?;
        match style {
            Style::Text => writeln!(out, "notes")?,
            Style::Markdown => writeln!(out, "#### notes\n")?,
        }
        for n in notes {
            writeln!(out, "- {n}")?;
        }
    }
    if interrupted {
        writeln!(out)?;
        writeln!(out, "(the run was interrupted; finished cases are kept)")?;
    }
    writeln!(out)?;
    Ok(())
}
