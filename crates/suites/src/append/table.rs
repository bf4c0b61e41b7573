//! How an `append` record reads: per target, the transactions tried and how they ended —
//! committed, aborted (they did not happen), unknown (a commit whose answer was lost) — the
//! rate of those that committed, and their latency as a distribution. The consistency verdict
//! follows, as for every suite.

use crate::sql::table::{figure, three};
use report::grid::Doc;
use report::units;
use results::RunRecord;
use std::io;

pub(super) fn render(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    let plan = r.plan.custom.get("append");
    let number = |key: &str| plan.and_then(|p| p[key].as_u64()).unwrap_or(0);
    let how = match plan.and_then(|p| p["duration_ns"].as_u64()) {
        Some(d) => format!("for {}", units::latency(d)),
        None => format!("× {} transactions", number("transactions_per_client")),
    };
    doc.title(&format!(
        "dyno append · {} keys · {} clients {how} · {} · {} repetition(s)",
        number("keys"),
        r.plan.concurrency,
        plan.and_then(|p| p["isolation"].as_str()).unwrap_or("?"),
        r.plan.reps
    ))?;
    let header = [
        "target",
        "transactions",
        "committed",
        "aborted",
        "unknown",
        "committed/s",
        "p50 / p99 / p99.9",
        "max",
    ]
    .map(String::from)
    .to_vec();
    let mut body = Vec::new();
    let mut notes = Vec::new();
    for c in &r.cases {
        let label = format!("{} · {}", c.target, c.durability);
        let Some(s) = &c.summary else {
            let word = report::grid::status_word(c).unwrap_or("-").to_string();
            let mut row = vec![label];
            row.extend(std::iter::repeat_n(word, header.len() - 1));
            body.push(row);
            if let Some(why) = &c.reason {
                notes.push(format!("{}: {why}", c.target));
            }
            continue;
        };
        let (committed, aborted, unknown) = (
            figure(c, "committed"),
            figure(c, "aborted"),
            figure(c, "unknown"),
        );
        let l = s.latency_ns;
        body.push(vec![
            label,
            units::count(committed + aborted + unknown),
            units::count(committed),
            units::count(aborted),
            units::count(unknown),
            units::count(s.ops_per_s.best.round() as u64),
            three(l.p50, l.p99, l.p999),
            units::latency(l.max),
        ]);
    }
    doc.blank()?;
    doc.heading("transactions (latency from the first statement's start to the commit's answer)")?;
    doc.table(&[header], &body)?;
    notes.push("committed/s counts the transactions that committed; an aborted one (a serialization failure, a deadlock, a guard that failed, a connection that failed before the commit was sent) did not happen; an unknown one's commit got no answer".into());
    doc.footer(&notes, r.interrupted)
}
