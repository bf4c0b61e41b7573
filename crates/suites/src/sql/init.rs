//! pgbench's initialisation (`pgbench -i -s SCALE`), in dyno's own schema or database: its four
//! tables, as pgbench creates them (fillfactor 100 on PostgreSQL; InnoDB on MySQL), loaded with
//! `SCALE` branches, 10 tellers and 100,000 accounts per branch, every balance 0 and the history
//! empty; then the primary keys, and the planner's statistics.

use engine::driver::{Dialect, OpError, SqlSession};

/// Accounts per branch, tellers per branch: pgbench's.
pub const ACCOUNTS: u64 = 100_000;
pub const TELLERS: u64 = 10;

/// Rows per `INSERT` where the server cannot make them itself.
const ROWS_PER_INSERT: u64 = 5_000;

/// The tables, in the order pgbench creates them; `{with}` is the table options.
const TABLES: [(&str, &str); 4] = [
    (
        "pgbench_history",
        "tid int, bid int, aid int, delta int, mtime timestamp, filler char(22)",
    ),
    (
        "pgbench_tellers",
        "tid int not null, bid int, tbalance int, filler char(84)",
    ),
    (
        "pgbench_accounts",
        "aid int not null, bid int, abalance int, filler char(84)",
    ),
    (
        "pgbench_branches",
        "bid int not null, bbalance int, filler char(88)",
    ),
];

/// Creates and loads pgbench's tables for `scale` on `session`.
pub fn init(session: &mut dyn SqlSession, scale: u64) -> Result<(), OpError> {
    let dialect = session.dialect();
    for (name, columns) in TABLES {
        let options = match (dialect, name) {
            (_, "pgbench_history") => "",
            (Dialect::Postgres, _) => " with (fillfactor=100)",
            (Dialect::MySql, _) => "",
        };
        let engine = if dialect == Dialect::MySql {
            " ENGINE=InnoDB"
        } else {
            ""
        };
        session.batch(&format!("create table {name}({columns}){options}{engine}"))?;
    }
    let accounts = ACCOUNTS * scale;
    match dialect {
        Dialect::Postgres => {
            session.batch(&format!(
                "insert into pgbench_branches(bid, bbalance) select bid, 0 from generate_series(1, {scale}) bid; \
                 insert into pgbench_tellers(tid, bid, tbalance) select tid, (tid - 1) / {TELLERS} + 1, 0 \
                   from generate_series(1, {}) tid; \
                 insert into pgbench_accounts(aid, bid, abalance, filler) select aid, (aid - 1) / {ACCOUNTS} + 1, 0, '' \
                   from generate_series(1, {accounts}) aid",
                TELLERS * scale
            ))?;
        }
        Dialect::MySql => {
            insert_rows(session, "pgbench_branches(bid, bbalance)", scale, |b| {
                format!("({b}, 0)")
            })?;
            insert_rows(
                session,
                "pgbench_tellers(tid, bid, tbalance)",
                TELLERS * scale,
                |t| format!("({t}, {}, 0)", (t - 1) / TELLERS + 1),
            )?;
            insert_rows(
                session,
                "pgbench_accounts(aid, bid, abalance, filler)",
                accounts,
                |a| format!("({a}, {}, 0, '')", (a - 1) / ACCOUNTS + 1),
            )?;
        }
    }
    for (table, key) in [
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
        ("pgbench_accounts", "aid"),
    ] {
        session.batch(&format!("alter table {table} add primary key ({key})"))?;
    }
    match dialect {
        // As `pgbench -i` does (its step `v`): the rows' hint bits and visibility set before the
        // run, not by its first transactions; only dyno's tables (an unqualified `analyze`
        // would go through every table of the database).
        Dialect::Postgres => session.batch(
            "vacuum analyze pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history",
        ),
        Dialect::MySql => session.batch(
            "analyze table pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history",
        ),
    }
}

/// Inserts rows 1..=`count` of `table`, each written by `row`, in statements of
/// [`ROWS_PER_INSERT`].
fn insert_rows(
    session: &mut dyn SqlSession,
    table: &str,
    count: u64,
    row: impl Fn(u64) -> String,
) -> Result<(), OpError> {
    let mut first = 1;
    while first <= count {
        let last = (first + ROWS_PER_INSERT - 1).min(count);
        let values: Vec<String> = (first..=last).map(&row).collect();
        session.batch(&format!("insert into {table} values {}", values.join(", ")))?;
        first = last + 1;
    }
    Ok(())
}
