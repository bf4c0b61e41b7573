//! The load figures of a case in the flat formats: `csv`'s columns after the common ones and
//! `summary-json`'s `load` object, both of the case's best repetition (the most responses per
//! second).

use super::table::best;
use report::Flat;
use results::Case;
use serde_json::{Value, json};

pub(super) static FLAT: Flat = Flat {
    key: "load",
    columns: &[
        "requests",
        "ok",
        "non_2xx",
        "network_failed",
        "unsent",
        "service_p50_ns",
        "service_p99_ns",
        "generator_valid",
    ],
    csv,
    json,
};

fn csv(c: &Case) -> Option<String> {
    let l = best(c)?;
    let svc = l.service_ns.as_ref();
    Some(format!(
        "{},{},{},{},{},{},{},{}",
        l.requests,
        l.ok,
        l.non_2xx,
        l.network_failed,
        l.unsent,
        svc.map_or(String::new(), |s| s.p50.to_string()),
        svc.map_or(String::new(), |s| s.p99.to_string()),
        l.generator.valid
    ))
}

fn json(c: &Case) -> Value {
    best(c).map_or(Value::Null, |l| {
        json!({
            "requests": l.requests,
            "responses_per_s": l.responses_per_s,
            "non_2xx": l.non_2xx,
            "network_failed": l.network_failed,
            "intended_per_s": l.generator.intended_per_s,
            "generator_valid": l.generator.valid,
        })
    })
}
