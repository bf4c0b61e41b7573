//! How an `sql` record reads: pgbench's summary per target — transactions, failed, the rate
//! and the latency as a distribution, not a mean — then every SQL command's latency (pgbench's
//! `-r`), p50 / p99 / p99.9, a row per command.

use report::grid::Doc;
use report::units;
use results::{Case, RunRecord};
use std::io;

/// The `by_op` rows of an open loop's schedule lag, and of its transactions timed from their
/// actual start (service time, uncorrected: the lag left out, as wrk2's `--u_latency`).
pub(super) const LAG: &str = "schedule lag";
pub(super) const SERVICE: &str = "service time";
/// The `by_op` row of `-C`'s connections: each the last one's closing and this one's opening.
pub(super) const CONNECTIONS: &str = "connections";

/// A figure of a case's custom detail, summed over its repetitions.
pub(crate) fn figure(c: &Case, key: &str) -> u64 {
    (c.reps.iter())
        .filter_map(|r| match &r.detail {
            results::Detail::Custom { figures, .. } => figures.get(key)?.as_u64(),
            _ => None,
        })
        .sum()
}

/// The mean and the standard deviation (pgbench's "latency average" and "latency stddev"); the
/// mean alone from a record made before the deviation was kept.
fn mean_sd(l: &results::LatencySummary) -> String {
    let mean = units::latency(l.mean.round() as u64);
    match l.stdev {
        Some(sd) => format!("{mean} ± {}", units::latency(sd.round() as u64)),
        None => mean,
    }
}

pub(crate) fn three(p50: u64, p99: u64, p999: u64) -> String {
    format!(
        "{} / {} / {}",
        units::latency(p50),
        units::latency(p99),
        units::latency(p999)
    )
}

pub(super) fn render(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    let sql = r.plan.custom.get("sql");
    // pgbench's scale and sysbench's tables, as the scripts used them.
    let mut data = Vec::new();
    if let Some(scale) = sql.and_then(|s| s["scale"].as_u64()) {
        data.push(format!("scale {scale}"));
    }
    if let Some(o) = sql.map(|s| &s["sysbench"]).filter(|o| o.is_object()) {
        data.push(format!(
            "{} × sbtest of {} rows · --rand-type {}",
            o["tables"],
            units::count(o["table_size"].as_u64().unwrap_or(0)),
            o["rand_type"].as_str().unwrap_or("?")
        ));
    }
    let mut how = match sql.and_then(|s| s["transactions_per_client"].as_u64()) {
        Some(t) => format!("{t} transactions per client"),
        None => units::latency(sql.and_then(|s| s["duration_ns"].as_u64()).unwrap_or(0)),
    };
    if let Some(rate) = sql.and_then(|s| s["rate_per_s"].as_f64()) {
        how = format!(
            "open loop at {}/s · {how}",
            units::count(rate.round() as u64)
        );
    }
    // How statements were sent, and the tries a transaction had, when given: what pgbench's
    // report heads its figures with.
    let mut sent = vec![format!(
        "-M {}",
        sql.and_then(|s| s["query_mode"].as_str()).unwrap_or("?")
    )];
    if let Some(t) = sql.and_then(|s| s["max_tries"].as_u64()) {
        sent.push(format!("--max-tries {t}"));
    }
    doc.title(&format!(
        "dyno sql · {} · {} clients · {} · {how} · {} repetition(s)",
        data.join(" · "),
        r.plan.concurrency,
        sent.join(" · "),
        r.plan.reps
    ))?;
    let header = vec![
        [
            "target",
            "script",
            "transactions",
            "failed",
            "transactions/s",
            "mean ± sd",
            "p50 / p99 / p99.9",
            "max",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let mut body = Vec::new();
    let mut notes = Vec::new();
    for c in &r.cases {
        let label = format!("{} · {}", c.target, c.durability);
        notes.extend(case_notes(c));
        let Some(s) = &c.summary else {
            let word = report::grid::status_word(c).unwrap_or("-").to_string();
            let mut row = vec![label, c.test.clone()];
            row.extend(std::iter::repeat_n(word, 6));
            body.push(row);
            continue;
        };
        let l = s.latency_ns;
        body.push(vec![
            label,
            c.test.clone(),
            units::count(figure(c, "transactions")),
            units::count(figure(c, "failed")),
            units::count(s.ops_per_s.best.round() as u64),
            mean_sd(&l),
            three(l.p50, l.p99, l.p999),
            units::latency(l.max),
        ]);
    }
    doc.blank()?;
    doc.heading(
        "transactions (latency of the whole script: from its intended start in an open loop, else from its first command's start)",
    )?;
    doc.table(&header, &body)?;
    statements(r, doc)?;
    notes.push("transactions/s counts the transactions that succeeded; a failed one was rolled back and is counted by its class".into());
    doc.footer(&notes, r.interrupted)
}

/// Every command's latency, a row per command and a column per target (pgbench's `-r`).
fn statements(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    let Some(first) = r.cases.first() else {
        return Ok(());
    };
    let commands: Vec<&String> = (first.reps.first()).map_or(Vec::new(), |rep| {
        (rep.by_op.keys())
            .filter(|k| ![LAG, SERVICE, CONNECTIONS].contains(&k.as_str()))
            .collect()
    });
    if commands.is_empty() {
        return Ok(());
    }
    let mut header = vec!["command".to_string()];
    header.extend(r.cases.iter().map(|c| c.target.clone()));
    let body: Vec<Vec<String>> = (commands.iter())
        .map(|name| {
            let mut row = vec![(*name).clone()];
            for c in &r.cases {
                let op = c.reps.iter().rev().find_map(|rep| rep.by_op.get(*name));
                let mut cell = match op.and_then(|o| o.latency_ns) {
                    Some(l) => three(l.p50, l.p99, l.p999),
                    None => "-".into(),
                };
                if let Some(n) = op.map(|o| o.errors).filter(|&n| n > 0) {
                    cell = format!("{cell} · {} failed", units::count(n));
                }
                row.push(cell);
            }
            row
        })
        .collect();
    doc.blank()?;
    doc.heading("latency per command: p50 / p99 / p99.9, and the transactions that failed at it (SCRIPT:LINE and its first words, or sysbench's name for it)")?;
    doc.table(&[header], &body)
}

/// What a case's notes say: why it failed, an open loop's lag, retries and conflicts, late and
/// skipped transactions, and an example of each class of failure.
fn case_notes(c: &Case) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(why), Some(word)) = (&c.reason, report::grid::status_word(c)) {
        out.push(format!("{} {}: {word}: {why}", c.target, c.test));
    }
    let open_loop = [
        (
            LAG,
            "schedule lag (a transaction's start after its intended start, from which its latency runs)",
        ),
        (
            SERVICE,
            "service time (a transaction timed from its actual start, the lag left out)",
        ),
        (
            CONNECTIONS,
            "a new connection for each transaction (-C): closing one and opening the next, the opening outside the transaction's latency in a closed loop and inside it in an open loop; each connection's",
        ),
    ];
    for (key, what) in open_loop {
        if let Some(l) = (c.reps.iter().rev()).find_map(|rep| rep.by_op.get(key)?.latency_ns) {
            out.push(format!(
                "{}: {what} p50 / p99 / max: {} / {} / {}",
                c.target,
                units::latency(l.p50),
                units::latency(l.p99),
                units::latency(l.max)
            ));
        }
    }
    let (retried, retries) = (figure(c, "retried"), figure(c, "retries"));
    let (serial, deadlock, other) = (
        figure(c, "failed_serialization"),
        figure(c, "failed_deadlock"),
        figure(c, "failed_other_conflict"),
    );
    if retried + serial + deadlock + other > 0 {
        out.push(format!(
            "{}: {retried} transactions retried ({retries} retries); failed for a serialization failure: {serial}, for a deadlock: {deadlock}, for another conflict sysbench retries: {other}",
            c.target
        ));
    }
    let (late, skipped) = (figure(c, "late"), figure(c, "skipped"));
    if late + skipped > 0 {
        out.push(format!(
            "{}: {late} transactions later than the latency limit, {skipped} skipped (already that late when due)",
            c.target
        ));
    }
    for (class, n) in &c.errors {
        if let Some(e) = c.error_examples.get(class) {
            out.push(format!(
                "{} {}: {n} failed as {class}, e.g. {e}",
                c.target, c.test
            ));
        }
    }
    out
}
