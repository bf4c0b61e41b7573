//! pgbench's `-C` on real PostgreSQL and MariaDB: a new connection for every transaction.

use super::sql::{one, servers, store};
use std::time::{Duration, Instant};

/// The sessions PostgreSQL has counted in its `postgres` database, once they number at least
/// `want` (the count of a session that ended may come a moment after it), or after 20 s.
fn pg_sessions(url: &str, want: u64) -> u64 {
    let st = store(url);
    let mut s = st.connect_sql().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let q = "SELECT sessions FROM pg_stat_database WHERE datname = 'postgres'";
        let n: u64 = one(s.as_mut(), q).unwrap().parse().unwrap();
        if n >= want || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `-C`: each transaction on a connection of its own, on both databases — the servers count a
/// connection per transaction, the record times each in a row of its own, and the TPC-B
/// invariant still holds (the run checks it, and fails if not).
#[test]
fn with_connect_every_transaction_opens_a_connection_of_its_own() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let connections = || -> u64 {
        let out = maria.sql("SHOW GLOBAL STATUS LIKE 'Connections'");
        out.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let (pg_before, maria_before) = (pg_sessions(&pg.url(), 0), connections());
    let dir = tempfile::tempdir().unwrap();
    let args = ["run", "--suite", "sql", "-b", "tpcb-like", "-C", "-t", "20"];
    crate::common::dyno(dir.path())
        .args(args)
        .args(["-c", "2", "-o", "re", &pg.url(), &maria.url()])
        .assert()
        .success();
    let rec = crate::common::record(&dir.path().join("re"));
    crate::common::assert_schema_valid(&rec);
    assert_eq!(rec["plan"]["custom"]["sql"]["connect"], true);
    for target in ["postgres", "mysql"] {
        let c = crate::common::case(&rec, target, "tpcb-like");
        assert_eq!(c["status"], "ok", "{target}: {}", c["reason"]);
        let rep = &c["reps"][0];
        assert_eq!(rep["detail"]["custom"]["figures"]["transactions"], 40);
        let row = &rep["by_op"]["connections"];
        assert_eq!(row["count"], 40, "{target}: {row}");
        assert!(row["latency_ns"]["p50"].as_u64().unwrap() > 0, "{row}");
    }
    // Without -C, the run opens a handful (its tables, a session per client, the checks).
    let pg_new = pg_sessions(&pg.url(), pg_before + 40) - pg_before;
    assert!(
        pg_new >= 40,
        "PostgreSQL saw {pg_new} sessions for 40 transactions"
    );
    let maria_new = connections() - maria_before;
    assert!(
        maria_new >= 40,
        "MariaDB saw {maria_new} connections for 40 transactions"
    );

    // Without it, no connections row.
    crate::common::dyno(dir.path())
        .args(["run", "--suite", "sql", "-b", "select-only", "-t", "5"])
        .args(["-o", "kept", &pg.url()])
        .assert()
        .success();
    let rec = crate::common::record(&dir.path().join("kept"));
    let c = crate::common::case(&rec, "postgres", "select-only");
    assert!(c["reps"][0]["by_op"].get("connections").is_none(), "{c}");
}
