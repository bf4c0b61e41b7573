//! One self-contained HTML page for a set of run records: every table, every plot, the
//! environment and the resolved plan of each record.
//!
//! The page needs nothing but itself: the CSS is inline, the plots are inline SVG, there is no
//! script, no font and no address to fetch, so it opens the same offline, from a mail attachment
//! or years later. It reads on a phone: the text reflows, the plots scale to the screen's width,
//! and a table wider than the screen scrolls inside its own box instead of widening the page.
//!
//! The tables are the Markdown renderer's output turned into HTML (see [`markdown`]), so the
//! terminal, the Markdown and the page always show the same cells and notes.

use results::RunRecord;
use serde_json::Value;
use std::fmt::Write as _;
use std::io::{self, Write};

const STYLE: &str = "\
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--head:#f6f8fa;--accent:#1f77b4}\
*{box-sizing:border-box}\
body{margin:0 auto;max-width:1100px;padding:12px;font:15px/1.45 system-ui,-apple-system,\
'Segoe UI',Roboto,'DejaVu Sans',sans-serif;color:var(--fg);background:#fff}\
h1{font-size:1.5em;margin:.4em 0}h2{font-size:1.25em;margin:1.4em 0 .4em;border-bottom:1px solid \
var(--line)}h3{font-size:1.1em;margin:1em 0 .3em}h4{font-size:1em;margin:.9em 0 .3em}\
p,li{overflow-wrap:anywhere}.muted{color:var(--muted)}\
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.4em 0}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:.93em}\
th,td{border:1px solid var(--line);padding:3px 8px;vertical-align:top}\
th{background:var(--head);font-weight:600}td.r,th.r{text-align:right;white-space:nowrap}\
th.l{text-align:left}td.l{white-space:pre}\
figure{margin:1em 0}figure svg{width:100%;height:auto;display:block;border:1px solid var(--line)}\
figcaption{color:var(--muted);font-size:.9em}\
nav a{margin-right:1em;color:var(--accent)}\
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:.4em 0}\
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;overflow-wrap:anywhere}\
pre{overflow-x:auto;background:var(--head);padding:8px;font-size:.85em}\
.badge{display:inline-block;padding:0 6px;border-radius:4px;background:#d1242f;color:#fff}";

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
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

/// Inline Markdown of the renderers' cells and notes: `**bold**`, `` `code` `` and `<br>`;
/// everything else is text.
fn inline(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in s.split("<br>").enumerate() {
        if i > 0 {
            out.push_str("<br>");
        }
        let mut bold = false;
        for (j, b) in part.split("**").enumerate() {
            if j > 0 {
                out.push_str(if bold { "</strong>" } else { "<strong>" });
                bold = !bold;
            }
            let mut code = false;
            for (k, c) in b.split('`').enumerate() {
                if k > 0 {
                    out.push_str(if code { "</code>" } else { "<code>" });
                    code = !code;
                }
                out.push_str(&escape(c));
            }
            if code {
                out.push_str("</code>");
            }
        }
        if bold {
            out.push_str("</strong>");
        }
    }
    out
}

fn cells(line: &str) -> Vec<&str> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split(" | ").map(|c| c.trim_matches(' ')).collect()
}

fn table(rows: &[&str], out: &mut String) {
    let Some((head, rest)) = rows.split_first() else {
        return;
    };
    let (align, body): (Vec<bool>, &[&str]) = match rest.split_first() {
        Some((a, body)) if a.contains("---") => {
            (cells(a).iter().map(|c| c.ends_with(':')).collect(), body)
        }
        _ => (Vec::new(), rest),
    };
    let class = |i: usize| {
        if align.get(i).copied().unwrap_or(false) {
            "r"
        } else {
            "l"
        }
    };
    out.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for (i, c) in cells(head).iter().enumerate() {
        let _ = write!(out, "<th class=\"{}\">{}</th>", class(i), inline(c));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in body {
        out.push_str("<tr>");
        // Cells keep their leading spaces (magma indents its test names under their group).
        let line = row.trim().trim_start_matches('|').trim_end_matches('|');
        for (i, c) in line.split(" | ").enumerate() {
            let c = c.strip_prefix(' ').unwrap_or(c).trim_end();
            let _ = write!(out, "<td class=\"{}\">{}</td>", class(i), inline(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// Turns the Markdown that dyno's own renderers write (headings, pipe tables, `- ` lists,
/// paragraphs whose lines end in two spaces) into HTML. It is not a general Markdown parser: it
/// knows only what [`crate::table`] and its siblings produce.
pub fn markdown(md: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim().is_empty() {
            i += 1;
        } else if line.starts_with('|') {
            let start = i;
            while i < lines.len() && lines[i].starts_with('|') {
                i += 1;
            }
            table(&lines[start..i], &mut out);
        } else if let Some(h) = line.strip_prefix('#') {
            let level = 1 + h.chars().take_while(|&c| c == '#').count();
            let text = h.trim_start_matches('#').trim();
            // The page's own headings are h1 and h2; a record's start at h3.
            let level = level.clamp(3, 6);
            let _ = writeln!(out, "<h{level}>{}</h{level}>", inline(text));
            i += 1;
        } else if line.starts_with("- ") {
            out.push_str("<ul>\n");
            while i < lines.len() && lines[i].starts_with("- ") {
                let _ = writeln!(out, "<li>{}</li>", inline(&lines[i][2..]));
                i += 1;
            }
            out.push_str("</ul>\n");
        } else {
            out.push_str("<p>");
            let mut first = true;
            while i < lines.len()
                && !lines[i].trim().is_empty()
                && !lines[i].starts_with('|')
                && !lines[i].starts_with('#')
                && !lines[i].starts_with("- ")
            {
                if !first {
                    out.push_str("<br>\n");
                }
                first = false;
                out.push_str(&inline(lines[i].trim_end()));
                i += 1;
            }
            out.push_str("</p>\n");
        }
    }
    out
}

/// A JSON value flattened into `(path, value)` rows: `targets[0].name = mem`.
fn flatten(prefix: &str, v: &Value, rows: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, v, rows);
            }
        }
        Value::Array(a) if a.iter().all(|v| !v.is_object() && !v.is_array()) => {
            let items: Vec<String> = a.iter().map(scalar).collect();
            rows.push((prefix.to_string(), format!("[{}]", items.join(", "))));
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), v, rows);
            }
        }
        v => rows.push((prefix.to_string(), scalar(v))),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        v => v.to_string(),
    }
}

fn key_values(v: &Value, out: &mut String) {
    let mut rows = Vec::new();
    flatten("", v, &mut rows);
    out.push_str("<dl class=\"kv\">\n");
    for (k, v) in rows {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(&k), escape(&v));
    }
    out.push_str("</dl>\n");
}

/// An inline SVG that scales with the page: the fixed size goes, the `viewBox` stays.
#[cfg(feature = "plots")]
fn scalable(svg: &str) -> String {
    let end = svg.find('>').unwrap_or(0);
    let (open, rest) = svg.split_at(end);
    let open = open
        .split(' ')
        .filter(|a| !a.starts_with("width=") && !a.starts_with("height="))
        .collect::<Vec<_>>()
        .join(" ");
    format!("{open} role=\"img\"{rest}")
}

fn plots_section(r: &RunRecord, views: crate::Views, n: usize, out: &mut String) {
    #[cfg(feature = "plots")]
    match crate::plots::plots(r, views) {
        Ok(plots) if plots.is_empty() => {}
        Ok(plots) => {
            let _ = writeln!(out, "<h2 id=\"plots-{n}\">Plots</h2>");
            for p in plots {
                let _ = writeln!(
                    out,
                    "<figure>{}<figcaption>{} · data: <code>plots/{}.dat</code></figcaption></figure>",
                    scalable(&p.svg),
                    escape(&p.title),
                    escape(&p.stem)
                );
            }
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "<h2 id=\"plots-{n}\">Plots</h2><p>The plots could not be drawn: {}</p>",
                escape(&e.to_string())
            );
        }
    }
    #[cfg(not(feature = "plots"))]
    {
        let _ = (r, views, n);
        let _ = writeln!(
            out,
            "<h2 id=\"plots-{n}\">Plots</h2><p class=\"muted\">This dyno was built without plots \
             (feature <code>plots</code>).</p>"
        );
    }
}

fn record_section(
    r: &RunRecord,
    views: crate::Views,
    n: usize,
    out: &mut String,
) -> io::Result<()> {
    let mut md = Vec::new();
    crate::table::render(r, views, crate::grid::Style::Markdown, &mut md)?;
    let md = String::from_utf8_lossy(&md);
    let _ = writeln!(
        out,
        "<section><h2 id=\"results-{n}\">Results{}</h2>",
        if r.interrupted {
            " <span class=\"badge\">interrupted</span>"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "<p class=\"muted\">dyno {} ({}) · started {} · finished {} · {} case(s) · schema {}</p>",
        escape(&r.dyno.version),
        escape(&r.dyno.commit),
        escape(&r.started),
        escape(r.finished.as_deref().unwrap_or("—")),
        r.cases.len(),
        escape(&r.schema)
    );
    out.push_str(&markdown(&md));
    plots_section(r, views, n, out);
    let _ = writeln!(out, "<h2 id=\"environment-{n}\">Environment</h2>");
    key_values(&serde_json::to_value(&r.environment)?, out);
    let _ = writeln!(out, "<h2 id=\"plan-{n}\">Plan</h2>");
    let plan = serde_json::to_value(&r.plan)?;
    key_values(&plan, out);
    let _ = writeln!(
        out,
        "<details><summary>The plan as JSON</summary><pre>{}</pre></details>",
        escape(&serde_json::to_string_pretty(&plan)?)
    );
    out.push_str("</section>\n");
    Ok(())
}

/// Writes the page for `records` (usually one run; each gets its own section).
pub fn render(records: &[RunRecord], views: crate::Views, out: &mut dyn Write) -> io::Result<()> {
    let title = match records {
        [r] => format!("dyno {} · {}", r.plan.suite, r.started),
        rs => format!("dyno · {} runs", rs.len()),
    };
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n",
        t = escape(&title)
    );
    for (n, r) in records.iter().enumerate() {
        if records.len() > 1 {
            let _ = writeln!(
                page,
                "<h1 id=\"run-{n}\">{} · {}</h1>",
                escape(&r.plan.suite),
                escape(&r.started)
            );
        }
        let _ = writeln!(
            page,
            "<nav><a href=\"#results-{n}\">results</a><a href=\"#plots-{n}\">plots</a>\
             <a href=\"#environment-{n}\">environment</a><a href=\"#plan-{n}\">plan</a></nav>"
        );
        record_section(r, views, n, &mut page)?;
    }
    page.push_str("</body>\n</html>\n");
    out.write_all(page.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_tables_headings_lists_and_escapes() {
        let md = "### dyno x · 1 < 2\n\n| test | a<br>fsync |\n| :--- | ---: |\n| **g** |  |\n|   add | 1,000 |\n\n- a & b: `x`\n- c\n\nline one  \n**bold:**  \n";
        let html = markdown(md);
        assert!(html.contains("<h3>dyno x · 1 &lt; 2</h3>"), "{html}");
        assert!(html.contains("<th class=\"r\">a<br>fsync</th>"), "{html}");
        assert!(
            html.contains("<td class=\"l\"><strong>g</strong></td>"),
            "{html}"
        );
        assert!(
            html.contains("<td class=\"l\">  add</td><td class=\"r\">1,000</td>"),
            "{html}"
        );
        assert!(
            html.contains("<li>a &amp; b: <code>x</code></li>"),
            "{html}"
        );
        assert!(
            html.contains("<p>line one<br>\n<strong>bold:</strong></p>"),
            "{html}"
        );
        assert_eq!(html.matches("<tr>").count(), 2 + 1);
    }

    #[test]
    fn flattening_names_every_leaf() {
        let v: Value =
            serde_json::json!({"a": {"b": 1, "c": [1, 2]}, "t": [{"n": "x"}], "z": null});
        let mut rows = Vec::new();
        flatten("", &v, &mut rows);
        let rows: Vec<String> = rows.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(rows, ["a.b=1", "a.c=[1, 2]", "t[0].n=x", "z=—"]);
    }
}
