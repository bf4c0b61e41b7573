//! How a kv record reads: the seed's two tables (get and set, a row per level or target).

use super::*;

/// Seconds, as the seed prints them.
fn secs(ns: f64) -> String {
    format!("{:.6}", ns / 1e9)
}

/// The min / median / max of some durations.
fn spread(mut v: Vec<u64>) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.sort_unstable();
    format!(
        "{} / {} / {}",
        units::latency(v[0]),
        units::latency(v[v.len() / 2]),
        units::latency(v[v.len() - 1])
    )
}

/// One row: a case's figures over its measured repetitions.
fn row(c: &Case) -> Vec<String> {
    let label = match &c.level {
        Some(l) => format!("{} · {l}", c.target),
        None => c.target.clone(),
    };
    let kvs: Vec<&KvRep> = c.reps.iter().filter_map(|r| r.detail.kv()).collect();
    let Some(lat) = (c.summary.as_ref().map(|s| s.latency_ns))
        .or_else(|| c.reps.first().and_then(|r| r.latency_ns))
    else {
        let word = report::grid::status_word(c).unwrap_or("-");
        let mut r = vec![label];
        r.extend(std::iter::repeat_n(word.to_string(), 11));
        return r;
    };
    let sum = |f: fn(&KvRep) -> u64| kvs.iter().map(|k| f(k)).sum::<u64>();
    let hist = c
        .histogram
        .as_ref()
        .and_then(|h| results::histogram::decode(h).ok());
    let min = hist.as_ref().map_or(0, |h| h.min());
    let effects: Vec<&FaultEffect> = c.faults.iter().collect();
    let lost = kvs
        .iter()
        .filter_map(|k| k.lost_writes.as_ref())
        .next_back();
    vec![
        label,
        secs(lat.mean),
        secs(min as f64),
        secs(lat.max as f64),
        units::count(sum(|k| k.ok)),
        format!(
            "{} / {} / {}",
            units::latency(lat.p50),
            units::latency(lat.p99),
            units::latency(lat.p999)
        ),
        format!("{} / {}", sum(|k| k.definite), sum(|k| k.indefinite)),
        sum(|k| k.reconnects).to_string(),
        effects.len().to_string(),
        spread(effects.iter().filter_map(|e| e.recovery_ns).collect()),
        effects
            .iter()
            .map(|e| e.unavailable_ns)
            .max()
            .map_or("-".into(), units::latency),
        match lost {
            None => "-".into(),
            Some(l) => format!(
                "{} of {}{}",
                l.missing + l.stale,
                l.checked,
                if l.unread > 0 {
                    format!(" ({} unread)", l.unread)
                } else {
                    String::new()
                }
            ),
        },
    ]
}

impl results::Named for Kv {
    fn name(&self) -> &'static str {
        "kv"
    }
}

impl report::View for Kv {
    fn table(&self, r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
        let duration = r.plan.kv.map_or(0, |k| k.duration_ns);
        doc.title(&format!(
            "dyno kv · {} entries × {} clients · {} B values · {} per test",
            r.plan.objects,
            r.plan.concurrency,
            r.plan.size_bytes,
            units::latency(duration)
        ))?;
        let header = vec![
            [
                "level",
                "Average (s)",
                "Min. (s)",
                "Max. (s)",
                "No. of requests",
                "p50 / p99 / p99.9",
                "failed / unknown",
                "reconnects",
                "faults",
                "recovery min / median / max",
                "longest unavailable",
                "lost writes",
            ]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>(),
        ];
        let mut notes = Vec::new();
        for test in TESTS {
            let cases: Vec<&Case> = r.cases.iter().filter(|c| c.test == test).collect();
            if cases.is_empty() {
                continue;
            }
            doc.blank()?;
            doc.heading(if test == "get" {
                "Getting: one entry read per request"
            } else {
                "Setting: one entry written (and acknowledged) per request"
            })?;
            let body: Vec<Vec<String>> = cases.iter().map(|c| row(c)).collect();
            doc.table(&header, &body)?;
            for c in &cases {
                if let (Some(why), Some(word)) = (&c.reason, report::grid::status_word(c)) {
                    notes.push(format!("{} {test}: {word}: {why}", c.target));
                }
                for l in (c.reps.iter())
                    .filter_map(|r| r.detail.kv())
                    .filter_map(|k| k.lost_writes.as_ref())
                {
                    for e in &l.examples {
                        notes.push(format!("{} lost: {e}", c.target));
                    }
                }
            }
        }
        notes.push(
            "failed / unknown: failed operations that certainly did nothing / writes sent whose outcome is unknown (neither failed nor done)".into(),
        );
        notes.push("recovery: from each fault to the first of 3 intervals of 100 ms back at 90% of the rate before it, with p99 within 2× (the book, \"Faults and levels\")".into());
        notes.extend(crate::shard_note(&r.plan));
        doc.footer(&notes, r.interrupted)
    }
}
