//! The ycsb suite's tables: one per workload (and the load phase), operation kinds × targets —
//! the rate of the whole workload, then each kind's count, p50, p99 and failures, over the
//! measured repetitions together — then the notes and how skewed each run's keys were.

use super::{Op, WORKLOADS};
use report::grid::{Doc, status_word};
use report::units;
use results::{Case, RunRecord};
use std::io;

const KINDS: [Op; 5] = [
    Op::Insert,
    Op::Read,
    Op::Update,
    Op::Scan,
    Op::ReadModifyWrite,
];

/// The merged histogram of `kind` over `c`'s measured repetitions, with its count and failures.
fn kind_of(c: &Case, kind: Op) -> Option<(u64, u64, results::Histogram)> {
    let mut h = results::new_histogram();
    let (mut n, mut errors) = (0, 0);
    for f in c.reps.iter().filter_map(|r| r.by_op.get(kind.name())) {
        n += f.count;
        errors += f.errors;
        if let Some(one) = f
            .histogram
            .as_deref()
            .and_then(|b| results::histogram::decode(b).ok())
        {
            let _ = h.add(&one);
        }
    }
    (n > 0).then_some((n, errors, h))
}

/// What a workload does, as its title says it.
fn describe(test: &str) -> String {
    let Some(w) = WORKLOADS.iter().find(|w| w.name == test) else {
        return "load: insert every record".into();
    };
    let mix: Vec<String> = (w.mix.iter())
        .filter(|m| m.1 > 0.0)
        .map(|(op, p)| format!("{} {p}", op.name().to_lowercase()))
        .collect();
    format!(
        "workload {test}: {}; {}",
        mix.join(", "),
        format!("{:?}", w.distribution).to_lowercase()
    )
}

pub fn render(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    let p = &r.plan;
    let ops = p.ycsb.as_ref().map_or(0, |y| y.operations);
    let pace = match p.ycsb.as_ref().and_then(|y| y.rate_per_s) {
        Some(r) => format!(
            "open loop at {}/s in all (latency from each operation's intended start)",
            units::rate(r)
        ),
        None => "closed loop".into(),
    };
    doc.title(&format!(
        "dyno ycsb · {} records × 1000 B (10 fields × 100 B) · {ops} operations per workload · {} clients, {pace} · {} repetition(s)",
        p.objects, p.concurrency, p.reps
    ))?;
    let cols: Vec<&str> = p.targets.iter().map(|t| t.name.as_str()).collect();
    // The targets, and under each what a write it acknowledged survives.
    let header = vec![
        std::iter::once("".to_string())
            .chain(cols.iter().map(|c| c.to_string()))
            .collect::<Vec<_>>(),
        std::iter::once("".to_string())
            .chain(p.targets.iter().map(|t| t.durability.clone()))
            .collect::<Vec<_>>(),
    ];
    for test in r.tests_where(|_| true) {
        doc.blank()?;
        doc.heading(&describe(test))?;
        let cases: Vec<Option<&Case>> = cols.iter().map(|t| r.case_of(t, test)).collect();
        let mut body = vec![
            std::iter::once("operations/s".to_string())
                .chain(cases.iter().map(|c| match c {
                    None => "-".into(),
                    Some(c) => match (status_word(c), &c.summary) {
                        (None, Some(s)) => units::rate(s.ops_per_s.median),
                        (Some(w), _) => w.into(),
                        (None, None) => "-".into(),
                    },
                }))
                .collect::<Vec<_>>(),
        ];
        for kind in KINDS {
            let figures: Vec<Option<(u64, u64, results::Histogram)>> = cases
                .iter()
                .map(|c| c.and_then(|c| kind_of(c, kind)))
                .collect();
            if figures.iter().all(Option::is_none) {
                continue;
            }
            let row = |what: &str, f: &dyn Fn(&(u64, u64, results::Histogram)) -> String| {
                std::iter::once(format!("{} {what}", kind.name()))
                    .chain(figures.iter().map(|x| x.as_ref().map_or("-".into(), f)))
                    .collect::<Vec<_>>()
            };
            let q = |h: &results::Histogram, p: f64| {
                if h.is_empty() {
                    "-".to_string()
                } else {
                    units::latency(h.value_at_quantile(p))
                }
            };
            body.push(row("operations", &|(n, _, _)| units::count(*n)));
            body.push(row("p50", &|(_, _, h)| q(h, 0.5)));
            body.push(row("p99", &|(_, _, h)| q(h, 0.99)));
            body.push(row("failed", &|(_, e, _)| units::count(*e)));
        }
        doc.table(&header, &body)?;
    }
    doc.footer(&notes(r), r.interrupted)
}

/// The cases that did not simply pass, how skewed each test's keys were, and the shards.
fn notes(r: &RunRecord) -> Vec<String> {
    let mut notes: Vec<String> = (r.cases.iter())
        .filter_map(|c| {
            let w = status_word(c)?;
            Some(format!(
                "{} {}: {w}{}",
                c.target,
                c.test,
                c.reason
                    .as_ref()
                    .map_or(String::new(), |r| format!(": {r}"))
            ))
        })
        .collect();
    for c in &r.cases {
        // How skewed the keys really were: the most drawn key's share.
        let Some(results::Detail::Custom { figures, .. }) = c.reps.first().map(|r| &r.detail)
        else {
            continue;
        };
        let draws = figures["key_draws"].as_u64().unwrap_or(0);
        let top = figures["top_keys"][0][1].as_u64().unwrap_or(0);
        // Merged shards: distinct keys cannot be added, the largest shard's is a lower bound.
        let (distinct, bound) = match figures["distinct_keys_at_least"].as_u64() {
            Some(n) => (n, "at least "),
            None => (figures["distinct_keys"].as_u64().unwrap_or(0), ""),
        };
        if draws > 0 {
            notes.push(format!(
                "{} {}: {bound}{distinct} distinct keys in {draws} draws; the most drawn key took {bound}{:.1}%",
                c.target,
                c.test,
                100.0 * top as f64 / draws as f64
            ));
        }
        if let Some(slices) = figures["slices"].as_array() {
            let s: Vec<String> = (slices.iter().enumerate())
                .map(|(k, s)| {
                    let (a, n) = (s[0].as_u64().unwrap_or(0), s[1].as_u64().unwrap_or(0));
                    format!("shard {k} {a}..{}", a + n)
                })
                .collect();
            notes.push(format!(
                "{} {}: records loaded by {} shards: {}",
                c.target,
                c.test,
                s.len(),
                s.join(", ")
            ));
        }
    }
    notes.extend(crate::shard_note(&r.plan));
    notes
}
