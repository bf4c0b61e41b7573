//! A consistency proof drawn as a timeline (SVG, for the HTML report): a row per client, each
//! operation a bar from its call to its answer (an unanswered one runs off to the right,
//! dashed), labelled with what it did; the faults under way at the time as bands behind them,
//! on the one clock of the run.

use crate::grid::escape;
use results::Proof;
use results::faults::FaultEvent;
use std::fmt::Write as _;

const WIDTH: f64 = 760.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const ROW: f64 = 48.0;
const TOP: f64 = 26.0;

/// The proof's timeline, or `None` when it holds no operation on the clock.
pub fn svg(proof: &Proof, faults: &[FaultEvent]) -> Option<String> {
    let spans = &proof.spans;
    let from = spans.iter().map(|s| s.start_ns).min()?;
    let to = (spans.iter())
        .map(|s| s.end_ns.unwrap_or(s.start_ns))
        .max()?
        .max(from + 1);
    // A margin of a tenth each side, so bars that touch the ends stay readable.
    let pad = ((to - from) / 10).max(1);
    let (t0, t1) = (from.saturating_sub(pad), to + pad);
    let x =
        |t: u64| LEFT + (t.clamp(t0, t1) - t0) as f64 / (t1 - t0) as f64 * (WIDTH - LEFT - RIGHT);
    let mut clients: Vec<u32> = spans.iter().map(|s| s.client).collect();
    clients.sort_unstable();
    clients.dedup();
    let height = TOP + ROW * clients.len() as f64 + 24.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" \
         font-family=\"sans-serif\" font-size=\"11\"><title>{}</title>",
        escape(&format!(
            "{}{}: the operations on the run's clock",
            proof.kind,
            proof.key.map_or(String::new(), |k| format!(" on key {k}"))
        ))
    );
    let bottom = TOP + ROW * clients.len() as f64;
    for f in faults {
        let end = f.end_ns.unwrap_or(t1);
        if end < t0 || f.start_ns > t1 {
            continue;
        }
        let (a, b) = (x(f.start_ns), x(end));
        let _ = write!(
            out,
            "<rect x=\"{a:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#d62728\" \
             fill-opacity=\"0.12\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#a01c1c\">{}</text>",
            (b - a).max(1.0),
            bottom - TOP,
            a + 3.0,
            TOP - 8.0,
            escape(&format!("{} {}", f.action, f.target))
        );
    }
    for (row, c) in clients.iter().enumerate() {
        let y = TOP + ROW * row as f64;
        let who = match *c {
            results::consistency::LOADER => "the load".to_string(),
            c => format!("client {c}"),
        };
        let _ = write!(out, "<text x=\"4\" y=\"{:.1}\">{who}</text>", y + 20.0);
        for (i, s) in spans.iter().filter(|s| s.client == *c).enumerate() {
            let (a, b) = (x(s.start_ns), s.end_ns.map_or(WIDTH - RIGHT, x));
            let dash = if s.end_ns.is_none() {
                " stroke-dasharray=\"4 3\""
            } else {
                ""
            };
            // A label in the right half ends at its bar's end, so it stays on the picture.
            let (at, anchor) = match a > (LEFT + WIDTH - RIGHT) / 2.0 {
                true => (b, " text-anchor=\"end\""),
                false => (a, ""),
            };
            let _ = write!(
                out,
                "<rect x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"10\" fill=\"#1f77b4\" \
                 fill-opacity=\"0.35\" stroke=\"#1f77b4\"{dash}/><text x=\"{at:.1}\" y=\"{:.1}\"{anchor}>{}</text>",
                y + 16.0,
                (b - a).max(2.0),
                // Labels of a row take turns above and below its bars, so neighbours do not
                // write over each other.
                if i % 2 == 0 { y + 12.0 } else { y + 38.0 },
                escape(&s.label)
            );
        }
    }
    let ms = |t: u64| format!("{:.3} ms", t as f64 / 1e6);
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{bottom:.1}\" y2=\"{bottom:.1}\" stroke=\"#888\"/>\
         <text x=\"{LEFT}\" y=\"{:.1}\">{}</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text></svg>",
        WIDTH - RIGHT,
        bottom + 16.0,
        ms(t0),
        WIDTH - RIGHT,
        bottom + 16.0,
        ms(t1)
    );
    Some(out)
}

/// Every proof of the record's checks as a figure, a target's once: the HTML report's section.
pub fn section(r: &results::RunRecord, n: usize) -> String {
    let mut out = String::new();
    let mut seen = Vec::new();
    for c in &r.cases {
        let Some(v) = &c.consistency else { continue };
        if seen.contains(&&v.history) {
            continue;
        }
        seen.push(&v.history);
        for p in &v.proofs {
            let Some(svg) = svg(p, &r.faults) else {
                continue;
            };
            let _ = write!(
                out,
                "<figure>{svg}<figcaption>{}: {}{}</figcaption></figure>",
                escape(&c.target),
                escape(&p.kind),
                escape(
                    &p.why
                        .as_deref()
                        .map_or(String::new(), |w| format!(" — {w}"))
                )
            );
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("<h2 id=\"consistency-{n}\">Consistency: the proofs</h2>\n{out}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::Span;

    #[test]
    fn a_proof_is_drawn_with_its_clients_and_the_faults_of_its_time() {
        let span = |client, start_ns, end_ns, label: &str| Span {
            client,
            start_ns,
            end_ns,
            label: label.into(),
        };
        let proof = Proof {
            kind: "not linearizable".into(),
            key: Some(3),
            why: Some("a stale read".into()),
            ops: Vec::new(),
            spans: vec![
                span(0, 1_000_000, Some(2_000_000), "write 1"),
                span(1, 3_000_000, Some(4_000_000), "write 2"),
                span(2, 5_000_000, None, "read <1>"),
            ],
        };
        let fault = |start_ns, end_ns| FaultEvent {
            action: "partition".into(),
            target: "etcd/e3".into(),
            start_ns,
            end_ns,
            pid: None,
            new_pid: None,
            note: None,
        };
        // One fault under way, one long over.
        let faults = [fault(2_500_000, Some(9_000_000)), fault(0, Some(10))];
        let svg = svg(&proof, &faults).unwrap();
        assert_eq!(
            svg.matches("<text x=\"4\"").count(),
            3,
            "a row per client: {svg}"
        );
        assert_eq!(svg.matches("partition etcd/e3").count(), 1, "{svg}");
        assert!(
            svg.contains("read &lt;1&gt;") && svg.contains("stroke-dasharray"),
            "{svg}"
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        let empty = Proof {
            spans: Vec::new(),
            ..proof
        };
        assert!(super::svg(&empty, &faults).is_none());
    }
}
