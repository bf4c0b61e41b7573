//! The run over time as the live view draws it: the events the page `dyno run --ui` serves is
//! fed (made here, so the live page and the report speak one language), the script that draws
//! them ([`SCRIPT`]), and the report's section holding the same events frozen in the page
//! ([`section`]), drawn there by the same script. So the report a run leaves is the live view
//! with its data kept, not a second picture of it.
//!
//! The events are JSON objects with a `kind`:
//! - `run`: the plan (`plan`);
//! - `case`: a repetition begins (`n` and `cases` its case's place, `target`, `test`, `rep`
//!   from 1 among the measured ones or 0 for the warm-up, `reps` the measured ones,
//!   `started_ns` on the run's clock, `planned_ns`, `level`);
//! - `interval`: one interval of it (`started_ns` its repetition's, `iv` the record's interval,
//!   `rate`, `errors` by class so far, and where known `cpu` dyno's share of a core and
//!   `requests` started so far);
//! - `fault`: a fault begins, or is over (`event`, the record's fault event).

use results::faults::FaultEvent;
use results::{IntervalRecord, RunRecord};
use serde_json::{Map, Value, json};

/// The script drawing the events (`dynoView.view(root, hooks)` on a live page,
/// `dynoView.thaw()` on a report).
pub const SCRIPT: &str = include_str!("view.js");

/// The run's event: what the view reads of the plan.
pub fn run(r: &RunRecord) -> Value {
    json!({"kind": "run", "plan": r.plan})
}

/// A repetition as the view names it.
pub struct RepStart<'a> {
    pub case: usize,
    pub cases: usize,
    pub target: &'a str,
    pub test: &'a str,
    /// From 1 among the measured ones; 0 the warm-up.
    pub rep: u32,
    /// The measured ones.
    pub reps: u32,
    /// When its load began, on the run's clock.
    pub started_ns: u64,
    pub planned_ns: Option<u64>,
    pub level: Option<&'a str>,
}

/// A repetition begins.
pub fn case(r: &RepStart) -> Value {
    json!({"kind": "case", "n": r.case, "cases": r.cases, "target": r.target, "test": r.test,
        "rep": r.rep, "reps": r.reps, "started_ns": r.started_ns, "planned_ns": r.planned_ns,
        "level": r.level})
}

/// One interval of the repetition that began at `started_ns`: `errors` by class so far; `cpu`
/// dyno's share of a core and `requests` started so far, where known.
pub fn interval(
    started_ns: u64,
    iv: &IntervalRecord,
    errors: &Map<String, Value>,
    cpu: Option<f64>,
    requests: Option<u64>,
) -> Value {
    json!({"kind": "interval", "started_ns": started_ns, "iv": iv,
        "rate": iv.responses_per_s(), "errors": errors, "cpu": cpu, "requests": requests})
}

/// A fault begins, or is over.
pub fn fault(e: &FaultEvent) -> Value {
    json!({"kind": "fault", "event": e})
}

/// The events of a finished run, from its record: the plan, each repetition that kept a time
/// series (the warm-up too) with its intervals (errors by class: the repetition's, with its
/// last interval), and the faults.
pub fn frozen(r: &RunRecord) -> Vec<Value> {
    let mut out = vec![run(r)];
    let planned_ns = r.plan.load.as_ref().and_then(|l| l.duration_ns);
    for (n, c) in r.cases.iter().enumerate() {
        let reps = c.reps.len() as u32;
        let all = c.warmup.iter().map(|w| (0, w));
        let all = all.chain(
            c.reps
                .iter()
                .enumerate()
                .map(|(k, rep)| (k as u32 + 1, rep)),
        );
        for (k, rep) in all {
            let Some((intervals, started_ns)) = rep.detail.series() else {
                continue;
            };
            out.push(case(&RepStart {
                case: n,
                cases: r.cases.len(),
                target: &c.target,
                test: &c.test,
                rep: k,
                reps,
                started_ns,
                planned_ns,
                level: c.level.as_deref(),
            }));
            let errors = error_classes(c, rep);
            let none = Map::new();
            for (i, iv) in intervals.iter().enumerate() {
                let last = i + 1 == intervals.len();
                let errors = if last { &errors } else { &none };
                out.push(interval(started_ns, iv, errors, None, None));
            }
        }
    }
    out.extend(r.faults.iter().map(fault));
    out
}

/// A repetition's failures by class: its requests' (a mix's); the case's, when it has one
/// repetition; what no class accounts for, as `unclassified`.
fn error_classes(c: &results::Case, rep: &results::Rep) -> Map<String, Value> {
    let mut errors: std::collections::BTreeMap<String, u64> = Default::default();
    for (class, count) in rep.by_op.values().flat_map(|o| &o.error_classes) {
        *errors.entry(class.clone()).or_default() += count;
    }
    if errors.is_empty() && c.reps.len() == 1 && std::ptr::eq(rep, &c.reps[0]) {
        errors.clone_from(&c.errors);
    }
    let classified: u64 = errors.values().sum();
    if rep.errors > classified {
        errors.insert("unclassified".into(), rep.errors - classified);
    }
    errors.into_iter().map(|(k, v)| (k, v.into())).collect()
}

/// The report's section "Over time" for record `n`: the view's charts of every repetition,
/// drawn by [`SCRIPT`] from the events frozen after it; empty when no case kept a time series.
/// The page must carry [`SCRIPT`] and call `dynoView.thaw()` once.
pub fn section(r: &RunRecord, n: usize) -> String {
    let events = frozen(r);
    if !events.iter().any(|e| e["kind"] == "interval") {
        return String::new();
    }
    let data = script_json(&Value::Array(events));
    format!(
        "<section class=\"dyno-view\" id=\"over-time-{n}\"><h2>Over time</h2>\
         <p class=\"muted\">Each repetition as the live view (<code>--ui</code>) drew it, \
         interval by interval, from the intervals and faults kept in the record.</p>\
         <div class=\"dyno-view-body\"><noscript><p class=\"muted\">These charts are drawn by \
         the page's own script: allow it to see them (the plots above need none).</p></noscript>\
         </div></section>\n<script type=\"application/json\">{data}</script>\n"
    )
}

/// JSON to sit in a script element: no `<` at all (`</script`, `<!--` would change how the
/// element is read); `\u003c` reads as `<`, and only strings hold one.
fn script_json(v: &Value) -> String {
    v.to_string().replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_end_in_the_data_cannot_end_the_element() {
        let v = Value::Array(vec![json!({"a": "</script><!--<script>x()"})]);
        let text = script_json(&v);
        assert!(!text.contains('<'), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
        assert!(!SCRIPT.contains("</script"), "the script would end itself");
    }
}
