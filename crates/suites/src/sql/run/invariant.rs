//! What the scripts keep, checked after the run: TPC-B's invariant and sysbench's table sizes.

use super::super::SqlSettings;
use super::super::script::{Script, Source};
use engine::driver::{SqlSession, Store};

/// The invariants the scripts keep: TPC-B's (every delta added to an account is in the
/// history, and with tpcb-like to its teller and its branch), and sysbench's (a delete and an
/// insert of one id in one transaction keep every table's rows).
pub(super) fn invariant(store: &dyn Store, s: &SqlSettings) -> Result<(), String> {
    let mut session = store.connect_sql().map_err(|e| e.to_string())?;
    session.set_timeout(engine::driver::SETUP_TIMEOUT);
    if let Some(o) = s.oltp.as_ref().filter(|o| !o.skip_trx) {
        for t in 1..=o.tables {
            let rows = sum(&mut *session, "count(*)", &format!("sbtest{t}"))?;
            if rows != o.table_size.to_string() {
                return Err(format!(
                    "sbtest{t} has {rows} rows, not {}: a delete and its insert did not stay together",
                    o.table_size
                ));
            }
        }
    }
    // Only pgbench's built-ins that write, alone or with reads only, keep a known invariant.
    let is = |sc: &Script, name: &str| sc.source == Source::Pgbench && sc.name == name;
    let reads = |sc: &Script| is(sc, "select-only") || sc.source == Source::Sysbench;
    let keeps = |name: &str| {
        s.scripts.iter().any(|(sc, _)| is(sc, name))
            && s.scripts.iter().all(|(sc, _)| is(sc, name) || reads(sc))
    };
    let tables: &[&str] = if keeps("tpcb-like") {
        &["pgbench_accounts", "pgbench_tellers", "pgbench_branches"]
    } else if keeps("simple-update") {
        &["pgbench_accounts"]
    } else {
        return Ok(());
    };
    let deltas = sum(&mut *session, "sum(delta)", "pgbench_history")?;
    for table in tables {
        let column = match *table {
            "pgbench_accounts" => "sum(abalance)",
            "pgbench_tellers" => "sum(tbalance)",
            _ => "sum(bbalance)",
        };
        let got = sum(&mut *session, column, table)?;
        if got != deltas {
            return Err(format!(
                "the TPC-B invariant does not hold: {column} of {table} is {got}, the history's deltas sum to {deltas}"
            ));
        }
    }
    Ok(())
}

fn sum(session: &mut dyn SqlSession, column: &str, table: &str) -> Result<String, String> {
    // Both servers write a sum of integers as an integer (PostgreSQL's bigint, MySQL's DECIMAL
    // with no fraction): the texts compare.
    let stmt =
        (session.prepare(&[format!("SELECT {column} FROM {table}")])).map_err(|e| e.to_string())?;
    let mut got = None;
    session
        .execute(
            stmt,
            &[],
            Some(&mut |_, cols: &engine::driver::SqlRow<'_>| {
                got = cols.first().and_then(|c| c.1.map(str::to_string))
            }),
        )
        .map_err(|e| e.to_string())?;
    // The sum of no rows is NULL: 0, as the history's is before any write.
    Ok(got.unwrap_or_else(|| "0".into()))
}
