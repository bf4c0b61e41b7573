//! The load suite's tables per request: a mix's requests (each with its share, rate, failures
//! and latencies) and the checks on responses, over a case's measured repetitions.

use report::grid::Doc;
use report::units::{self, count};
use results::Case;
use std::io;

fn pct(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}

/// One request of a mix over a case's measured repetitions: its figures added up, its
/// histograms merged, and the time the repetitions ran.
struct Request {
    weight: u32,
    count: u64,
    errors: u64,
    latency: results::Histogram,
    service: results::Histogram,
    wall_ns: u64,
}

fn request_of(c: &Case, name: &str) -> Request {
    let mut out = Request {
        weight: 0,
        count: 0,
        errors: 0,
        latency: results::new_histogram(),
        service: results::new_histogram(),
        wall_ns: 0,
    };
    let decode = |h: &Option<String>| {
        h.as_deref()
            .and_then(|b| results::histogram::decode(b).ok())
    };
    for (rep, f) in (c.reps.iter()).filter_map(|r| Some((r, r.by_op.get(name)?))) {
        out.weight = f.weight.unwrap_or(0);
        out.count += f.count;
        out.errors += f.errors;
        out.wall_ns += rep.wall_ns;
        if let Some(h) = decode(&f.histogram) {
            let _ = out.latency.add(&h);
        }
        if let Some(h) = decode(&f.service_histogram) {
            let _ = out.service.add(&h);
        }
    }
    out
}

/// A target's mix: a row per request (its weight and share, rate, failures, latency from the
/// intended start and service time), over the measured repetitions.
pub(super) fn mix(c: &Case, doc: &mut Doc) -> io::Result<()> {
    let names: Vec<&String> = (c.reps.iter())
        .flat_map(|r| r.by_op.iter())
        .filter(|(_, f)| f.weight.is_some())
        .map(|(n, _)| n)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let mut all: Vec<(&String, Request)> = names.iter().map(|n| (*n, request_of(c, n))).collect();
    // The heaviest first, as a mix is usually written.
    all.sort_by(|a, b| b.1.weight.cmp(&a.1.weight).then(a.0.cmp(b.0)));
    let scenario = (c.reps.iter()).any(|r| r.load().is_some_and(|l| l.scenario.is_some()));
    let (total, weights) = (all.iter()).fold((0, 0), |(n, w), (_, r)| {
        (n + r.count, w + u64::from(r.weight))
    });
    let share = |part: u64, whole: u64| pct(part as f64 / whole.max(1) as f64);
    let header = vec![
        [
            "request",
            "weight",
            "requests (share)",
            "rate",
            "failed",
            "p50",
            "p99",
            "p99.9",
            "max",
            "service p50",
            "service p99",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let q = |h: &results::Histogram, q: f64| match h.is_empty() {
        true => "-".to_string(),
        false => units::latency(h.value_at_quantile(q)),
    };
    let body: Vec<Vec<String>> = (all.iter())
        .map(|(name, r)| {
            vec![
                name.to_string(),
                match scenario {
                    // A scenario's steps are taken in turn: their weights are not drawn.
                    true => "-".to_string(),
                    false => format!("{} ({})", r.weight, share(r.weight.into(), weights)),
                },
                format!("{} ({})", count(r.count), share(r.count, total)),
                units::rate(results::stats::per_s(r.count as f64, r.wall_ns)),
                count(r.errors),
                q(&r.latency, 0.5),
                q(&r.latency, 0.99),
                q(&r.latency, 0.999),
                q(&r.latency, 1.0),
                q(&r.service, 0.5),
                q(&r.service, 0.99),
            ]
        })
        .collect();
    doc.blank()?;
    doc.heading(&format!(
        "{}: per request of the mix (latency from the intended start; service time from the send)",
        c.target
    ))?;
    doc.table(&header, &body)
}

/// The checks on a target's responses: a row per request and check, with how many responses
/// passed and failed it over the measured repetitions.
pub(super) fn checks(c: &Case, doc: &mut Doc) -> io::Result<()> {
    let mut all = Vec::new();
    for l in c.reps.iter().filter_map(|r| r.load()) {
        results::CheckCount::add(&mut all, &l.checks);
    }
    if all.is_empty() {
        return Ok(());
    }
    let header = vec![
        ["request", "check", "passed", "failed", "passed (share)"]
            .map(String::from)
            .to_vec(),
    ];
    let body: Vec<Vec<String>> = (all.iter())
        .map(|k| {
            let n = k.passed + k.failed;
            vec![
                k.request.clone(),
                k.check.clone(),
                count(k.passed),
                count(k.failed),
                pct(k.passed as f64 / n.max(1) as f64),
            ]
        })
        .collect();
    doc.blank()?;
    doc.heading(&format!("{}: checks on responses", c.target))?;
    doc.table(&header, &body)
}

/// A scenario's iterations end to end, over the measured repetitions: how many completed and
/// failed, and the latency of the completed ones from their first step's intended start.
pub(super) fn scenario(c: &Case, doc: &mut Doc) -> io::Result<()> {
    let its: Vec<&results::Iterations> = (c.reps.iter())
        .filter_map(|r| r.load()?.scenario.as_ref())
        .collect();
    let Some(first) = its.first() else {
        return Ok(());
    };
    let mut h = results::new_histogram();
    for text in its.iter().filter_map(|it| it.histogram.as_deref()) {
        if let Ok(one) = results::histogram::decode(text) {
            let _ = h.add(&one);
        }
    }
    let q = |q: f64| match h.is_empty() {
        true => "-".to_string(),
        false => units::latency(h.value_at_quantile(q)),
    };
    let header = vec![
        ["completed", "failed", "p50", "p90", "p99", "p99.9", "max"]
            .map(String::from)
            .to_vec(),
    ];
    let body = vec![vec![
        count(its.iter().map(|it| it.completed).sum()),
        count(its.iter().map(|it| it.failed).sum()),
        q(0.5),
        q(0.9),
        q(0.99),
        q(0.999),
        q(1.0),
    ]];
    doc.blank()?;
    doc.heading(&format!(
        "{}: scenario {}: iterations, end to end from each first step's intended start",
        c.target,
        first.steps.join(" → ")
    ))?;
    doc.table(&header, &body)
}
