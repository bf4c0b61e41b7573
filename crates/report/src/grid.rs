//! What every table shares: the styles (terminal text, Markdown, the HTML page), the document
//! the renderers describe their tables in ([`Doc`]), the grid that aligns cells, the notes under
//! a table, and the word a cell shows when a case has no number. It sits below every renderer, so renderers never import each other for it.

use results::{Case, Status};
use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Aligned text for a terminal.
    Text,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// HTML elements for the page (`<h3>`, `<table>`, `<ul>` …).
    Html,
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

/// A document being written in one style: what the table renderers describe (a title, the
/// headings, tables, lists and lines) and how each style spells it. The renderers never format
/// for a style themselves, so the terminal, Markdown and the HTML page show the same tables
/// from the same description.
pub struct Doc<'a> {
    pub style: Style,
    out: &'a mut dyn Write,
}

impl<'a> Doc<'a> {
    pub fn new(style: Style, out: &'a mut dyn Write) -> Doc<'a> {
        Doc { style, out }
    }

    /// A run's title.
    pub fn title(&mut self, t: &str) -> io::Result<()> {
        match self.style {
            Style::Text => writeln!(self.out, "{t}"),
            Style::Markdown => writeln!(self.out, "### {t}"),
            Style::Html => writeln!(self.out, "<h3>{}</h3>", escape(t)),
        }
    }

    /// A table's heading.
    pub fn heading(&mut self, t: &str) -> io::Result<()> {
        match self.style {
            Style::Text => writeln!(self.out, "{t}"),
            Style::Markdown => writeln!(self.out, "#### {t}\n"),
            Style::Html => writeln!(self.out, "<h4>{}</h4>", escape(t)),
        }
    }

    /// A blank line between blocks (the page spaces its blocks itself).
    pub fn blank(&mut self) -> io::Result<()> {
        match self.style {
            Style::Text | Style::Markdown => writeln!(self.out),
            Style::Html => Ok(()),
        }
    }

    /// A line of prose.
    pub fn line(&mut self, t: &str) -> io::Result<()> {
        match self.style {
            Style::Text | Style::Markdown => writeln!(self.out, "{t}"),
            Style::Html => writeln!(self.out, "<p>{}</p>", escape(t)),
        }
    }

    /// Lines kept apart, as a header block (`key : value`); those ending in `:` in bold.
    pub fn lines(&mut self, lines: &[String]) -> io::Result<()> {
        match self.style {
            Style::Text => lines.iter().try_for_each(|l| writeln!(self.out, "{l}")),
            Style::Markdown => lines.iter().try_for_each(|l| {
                if l.ends_with(':') {
                    writeln!(self.out, "**{l}**  ")
                } else {
                    writeln!(self.out, "{l}  ")
                }
            }),
            Style::Html => {
                let body: Vec<String> = (lines.iter())
                    .map(|l| match l.ends_with(':') {
                        true => format!("<strong>{}</strong>", escape(l)),
                        false => escape(l),
                    })
                    .collect();
                writeln!(self.out, "<p>{}</p>", body.join("<br>\n"))
            }
        }
    }

    /// A bulleted list.
    pub fn list(&mut self, items: &[String]) -> io::Result<()> {
        match self.style {
            Style::Text | Style::Markdown => {
                items.iter().try_for_each(|n| writeln!(self.out, "- {n}"))
            }
            Style::Html if items.is_empty() => Ok(()),
            Style::Html => {
                writeln!(self.out, "<ul>")?;
                for n in items {
                    writeln!(self.out, "<li>{}</li>", escape(n))?;
                }
                writeln!(self.out, "</ul>")
            }
        }
    }

    /// A label set apart in a table's first column (a group of rows).
    pub fn strong(&self, s: &str) -> String {
        match self.style {
            Style::Markdown => format!("**{s}**"),
            Style::Text | Style::Html => s.to_string(),
        }
    }

    /// A table: header rows, then the body; the first column left-aligned, the others right.
    pub fn table(&mut self, header: &[Vec<String>], body: &[Vec<String>]) -> io::Result<()> {
        grid(self.out, self.style, header, body)
    }

    /// The notes under a table, and the interruption notice.
    pub fn footer(&mut self, notes: &[String], interrupted: bool) -> io::Result<()> {
        if !notes.is_empty() {
            self.blank()?;
            self.heading("notes")?;
            self.list(notes)?;
        }
        if interrupted {
            self.blank()?;
            self.line("(the run was interrupted; finished cases are kept)")?;
        }
        self.blank()
    }
}

/// Text made safe for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Writes a grid; the first column is left-aligned, the others right-aligned.
fn grid(
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
        Style::Html => {
            // Cells escaped; the header's lines, as in Markdown, in one row with line breaks.
            let row = |cells: &[String], tag: &str| -> String {
                let cells: Vec<String> = (cells.iter().enumerate())
                    .map(|(i, c)| {
                        // The page's CSS: the first column keeps its spaces (magma indents its
                        // tests under their group), the others align right.
                        let class = if i == 0 { "l" } else { "r" };
                        format!("<{tag} class=\"{class}\">{c}</{tag}>")
                    })
                    .collect();
                format!("<tr>{}</tr>", cells.concat())
            };
            let head: Vec<String> = (0..n)
                .map(|i| {
                    (header.iter())
                        .map(|r| r[i].as_str())
                        .filter(|s| !s.is_empty())
                        .map(escape)
                        .collect::<Vec<_>>()
                        .join("<br>")
                })
                .collect();
            writeln!(out, "<div class=\"scroll\"><table>\n<thead>")?;
            writeln!(out, "{}", row(&head, "th"))?;
            writeln!(out, "</thead>\n<tbody>")?;
            for r in body {
                let cells: Vec<String> = r.iter().map(|c| escape(c)).collect();
                writeln!(out, "{}", row(&cells, "td"))?;
            }
            writeln!(out, "</tbody></table></div>")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One description, three spellings.
    fn page(style: Style) -> String {
        let mut out = Vec::new();
        let mut d = Doc::new(style, &mut out);
        d.title("dyno x · 1 < 2").unwrap();
        d.blank().unwrap();
        d.lines(&["Hardware:".into(), "cpu : a & b".into()])
            .unwrap();
        d.heading("rates").unwrap();
        let group = d.strong("g");
        let header = [
            vec!["test".to_string(), "a".into()],
            vec![String::new(), "fsync".into()],
        ];
        let body = [
            vec![group, String::new()],
            vec!["  add".to_string(), "1,000".into()],
        ];
        d.table(&header, &body).unwrap();
        d.footer(&["a: failed: x < y".into()], true).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_document_reads_as_text_markdown_and_html() {
        assert_eq!(
            page(Style::Text),
            "dyno x · 1 < 2\n\nHardware:\ncpu : a & b\nrates\ntest       a\n       fsync\n-----  -----\ng           \n  add  1,000\n\nnotes\n- a: failed: x < y\n\n(the run was interrupted; finished cases are kept)\n\n"
        );
        let md = page(Style::Markdown);
        assert!(
            md.starts_with("### dyno x · 1 < 2\n\n**Hardware:**  \ncpu : a & b  \n#### rates\n\n"),
            "{md}"
        );
        assert!(
            md.contains(
                "| test | a<br>fsync |\n| :--- | ---: |\n| **g** |  |\n|   add | 1,000 |\n"
            ),
            "{md}"
        );
        let html = page(Style::Html);
        assert!(html.starts_with("<h3>dyno x · 1 &lt; 2</h3>\n<p><strong>Hardware:</strong><br>\ncpu : a &amp; b</p>\n<h4>rates</h4>\n"), "{html}");
        assert!(
            html.contains("<tr><th class=\"l\">test</th><th class=\"r\">a<br>fsync</th></tr>"),
            "{html}"
        );
        assert!(
            html.contains("<tr><td class=\"l\">  add</td><td class=\"r\">1,000</td></tr>"),
            "{html}"
        );
        assert!(html.contains("<h4>notes</h4>\n<ul>\n<li>a: failed: x &lt; y</li>\n</ul>\n<p>(the run was interrupted"), "{html}");
        assert!(
            !html.contains("\n\n"),
            "the page spaces its blocks itself: {html}"
        );
    }
}
