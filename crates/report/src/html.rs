//! One self-contained HTML page for a set of run records: every table, every plot, the
//! environment and the resolved plan of each record.
//!
//! The page needs nothing but itself: the CSS is inline, the plots are inline SVG, there is no
//! font and no address to fetch, so it opens the same offline, from a mail attachment or years
//! later. Its one script, when a case kept a time series, draws the section "Over time" as the
//! live view drew it, from the events frozen in the page ([`crate::live`]); everything else
//! reads the same without it. It reads on a phone: the text reflows, the plots scale to the screen's width,
//! and a table wider than the screen scrolls inside its own box instead of widening the page.
//!
//! The tables are the Markdown renderer's output turned into HTML (see [`markdown`]), so the
//! terminal, the Markdown and the page always show the same cells and notes.

use results::RunRecord;
use serde_json::Value;
use std::fmt::Write as _;
use std::io::{self, Write};

pub const STYLE: &str = "\
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
.badge{display:inline-block;padding:0 6px;border-radius:4px;background:#d1242f;color:#fff}\
dl.figs{grid-template-columns:repeat(auto-fill,minmax(9.5em,1fr));display:grid;gap:2px 14px}\
dl.figs div{display:flex;flex-direction:column}dl.figs dd{margin:0;font-variant-numeric:tabular-nums}\
.case h2 .muted,.case h3 .muted{font-weight:normal;font-size:.85em}\
svg.chart{width:100%;height:auto;display:block;border:1px solid var(--line)}\
svg.chart text{font:11px system-ui,sans-serif;fill:var(--muted)}\
svg.chart .grid{stroke:#eaeef2}svg.chart .axis{stroke:var(--line)}\
svg.chart polyline{fill:none;stroke-width:1.6}\
svg.chart rect.fault{fill:#d1242f;fill-opacity:.13}svg.chart rect.fault.open{fill-opacity:.22}\
svg.chart text.fault{fill:#d1242f}\
.c0{stroke:#1f77b4}.c1{stroke:#ff7f0e}.c2{stroke:#2ca02c}.c3{stroke:#d62728}\
.c4{stroke:#9467bd;stroke-dasharray:5 3}\
.k0{fill:#1f77b4}.k1{fill:#ff7f0e}.k2{fill:#2ca02c}.k3{fill:#d62728}.k4{fill:#9467bd}\
.faults-box li{font-variant-numeric:tabular-nums}";

pub use crate::grid::escape;

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
    let mut tables = Vec::new();
    crate::table::render(r, views, crate::grid::Style::Html, &mut tables)?;
    let tables = String::from_utf8_lossy(&tables);
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
    out.push_str(&tables);
    plots_section(r, views, n, out);
    out.push_str(&crate::live::section(r, n));
    out.push_str(&crate::timeline::section(r, n));
    profiles_section(r, n, out);
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

/// `--profile`'s flame graphs: a row per test, target and process, linked (paths relative to the
/// results directory, where the page is written).
fn profiles_section(r: &RunRecord, n: usize, out: &mut String) {
    let rows: Vec<_> = (r.cases.iter())
        .flat_map(|c| c.profiles.iter().map(move |p| (c, p)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h2 id=\"profiles-{n}\">Profiles</h2><p class=\"muted\">CPU profiles of each test's \
         first measured repetition (<code>--profile</code>): perf for native code, py-spy for \
         Python.</p><table><thead><tr><th>test</th><th>target</th><th>process</th><th>tool</th>\
         <th>event</th><th>samples</th><th>flame graph</th><th>note</th></tr></thead><tbody>"
    );
    for (c, p) in rows {
        let link = match &p.svg {
            Some(svg) => {
                let href = if svg.starts_with('/') {
                    format!("file://{svg}")
                } else {
                    svg.clone()
                };
                format!("<a href=\"{}\">{}</a>", escape(&href), escape(svg))
            }
            None => "—".to_string(),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.test),
            escape(&c.target),
            escape(&p.process),
            p.pid,
            escape(&p.tool),
            escape(&p.event),
            p.samples,
            link,
            escape(p.note.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</tbody></table>\n");
}

/// The history's trend of the cases on the page: rate and p99 over the runs registered with
/// them (a plot each, when some case has a figure in two runs).
fn trend_section(trend: &[results::history::CaseRow], out: &mut String) {
    #[cfg(feature = "plots")]
    {
        use crate::plots::{TrendMetric, trend as plot};
        let mut figures = String::new();
        for metric in [TrendMetric::Rate, TrendMetric::P99] {
            match plot(metric, trend) {
                Ok(Some(p)) => {
                    let _ = writeln!(
                        figures,
                        "<figure>{}<figcaption>{} · <code>dyno history --plot {}</code></figcaption></figure>",
                        scalable(&p.svg),
                        escape(&p.title),
                        metric.name()
                    );
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = writeln!(
                        figures,
                        "<p>The trend could not be drawn: {}</p>",
                        escape(&e.to_string())
                    );
                }
            }
        }
        if !figures.is_empty() {
            let _ = writeln!(
                out,
                "<section><h2 id=\"trend\">Trend</h2><p class=\"muted\">These cases in the runs \
                 of the results directory's history, up to this one.</p>\n{figures}</section>"
            );
        }
    }
    #[cfg(not(feature = "plots"))]
    let _ = (trend, out);
}

/// Writes the page for `records` (usually one run; each gets its own section).
pub fn render(records: &[RunRecord], views: crate::Views, out: &mut dyn Write) -> io::Result<()> {
    render_with_trend(records, views, &[], out)
}

/// [`render`], with a section drawing `trend`: the history of the records' cases.
pub fn render_with_trend(
    records: &[RunRecord],
    views: crate::Views,
    trend: &[results::history::CaseRow],
    out: &mut dyn Write,
) -> io::Result<()> {
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
    trend_section(trend, &mut page);
    if page.contains("<section class=\"dyno-view\"") {
        let _ = writeln!(
            page,
            "<script>{}dynoView.thaw();</script>",
            crate::live::SCRIPT
        );
    }
    page.push_str("</body>\n</html>\n");
    out.write_all(page.as_bytes())
}

/// The page of a comparison (`dyno compare -f html`): for each run judged against the base,
/// its compare table; then each case's latency spectra of the base and every judged run on one
/// plot.
pub fn compare_page(
    (base, rb): (&str, &RunRecord),
    judged: &[(&str, &RunRecord, &results::compare::Comparison)],
    out: &mut dyn Write,
) -> io::Result<()> {
    let names: Vec<&str> = judged.iter().map(|(n, _, _)| *n).collect();
    let title = format!("dyno compare · {base} → {}", names.join(", "));
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        t = escape(&title)
    );
    for (name, _, c) in judged {
        let mut table = Vec::new();
        crate::compare::render(c, (base, name), crate::grid::Style::Html, &mut table)?;
        page.push_str(&String::from_utf8_lossy(&table));
    }
    let _ = writeln!(page, "<h2 id=\"spectra\">Latency spectra, every run</h2>");
    // The cases matched in any comparison, in the base's order.
    let mut cases: Vec<&str> = Vec::new();
    for (_, _, c) in judged {
        for k in &c.cases {
            if !cases.contains(&k.case.as_str()) {
                cases.push(&k.case);
            }
        }
    }
    #[cfg(feature = "plots")]
    for case in cases {
        let hist = |r: &RunRecord| {
            (r.cases.iter().find(|k| k.id().to_string() == case))
                .and_then(|k| k.histogram.as_deref())
                .and_then(|h| results::histogram::decode(h).ok())
        };
        let runs: Vec<(&str, Option<results::Histogram>)> = std::iter::once((base, hist(rb)))
            .chain(judged.iter().map(|(n, r, _)| (*n, hist(r))))
            .collect();
        match crate::plots::overlay(case, &runs) {
            Ok(Some(p)) => {
                let _ = writeln!(
                    page,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    scalable(&p.svg),
                    escape(&p.title)
                );
            }
            Ok(None) => {
                let _ = writeln!(
                    page,
                    "<p class=\"muted\">{}: no latency histogram in any run.</p>",
                    escape(case)
                );
            }
            Err(e) => {
                let _ = writeln!(
                    page,
                    "<p>{}: the spectra could not be drawn: {}</p>",
                    escape(case),
                    escape(&e.to_string())
                );
            }
        }
    }
    #[cfg(not(feature = "plots"))]
    {
        let _ = (rb, cases);
        page.push_str(
            "<p class=\"muted\">This dyno was built without plots (feature <code>plots</code>).</p>\n",
        );
    }
    page.push_str("</body>\n</html>\n");
    out.write_all(page.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

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
