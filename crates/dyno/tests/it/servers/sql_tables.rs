//! pgbench's `-i` options on real PostgreSQL and MariaDB: the fillfactor, unlogged tables,
//! partitions of pgbench_accounts by range (pgbench's bounds) or hash, and foreign keys, each
//! seen in the server's catalog by a script that fails unless the tables are so; what MySQL has
//! no counterpart for, refused with the reason.

use super::sql::servers;
use std::path::Path;

/// `dyno run --suite sql ARGS -t 10 -c 2 -o OUT URL` in `dir`: its one case (the run's exit
/// status agreeing with it, and the table it printed saying why it failed, if it did), and the
/// case's status and reason.
pub(super) fn sql_case(
    dir: &Path,
    url: &str,
    args: &[&str],
    out: &str,
) -> (serde_json::Value, String, String) {
    let done = crate::common::dyno(dir)
        .args(["run", "--suite", "sql"])
        .args(args)
        .args(["-t", "10", "-c", "2", "-o", out, url])
        .assert();
    let c = crate::common::record(&dir.join(out))["cases"][0].clone();
    let status = c["status"].as_str().unwrap().to_string();
    assert_eq!(done.get_output().status.success(), status == "ok", "{c}");
    if let Some(why) = c["reason"].as_str() {
        let table = String::from_utf8_lossy(&done.get_output().stdout);
        assert!(table.contains(why), "the table says why: {why}\n{table}");
    }
    let reason = c["reason"].to_string();
    (c, status, reason)
}

/// Fails (a division by zero in a `\set`: MySQL's `SELECT 1/0` is NULL) unless the tables are as `-F 90 --unlogged-tables --partitions 3
/// --foreign-keys` make them, by range, at scale 1: pgbench's bounds give the partitions
/// 33,334, 33,334 and 33,332 accounts.
const PG_RANGE: &str = "\
SELECT count(*) AS parts FROM pg_inherits WHERE inhparent = 'pgbench_accounts'::regclass \\gset
SELECT (SELECT count(*) FROM pgbench_accounts_1) AS n1, (SELECT count(*) FROM pgbench_accounts_3) AS n3 \\gset
SELECT count(*) AS unlogged FROM pg_class WHERE relpersistence = 'u'
  AND oid IN ('pgbench_accounts_1'::regclass, 'pgbench_accounts_2'::regclass, 'pgbench_accounts_3'::regclass) \\gset
SELECT count(*) AS filled FROM pg_class WHERE reloptions @> ARRAY['fillfactor=90']
  AND oid IN ('pgbench_accounts_2'::regclass, 'pgbench_tellers'::regclass, 'pgbench_branches'::regclass) \\gset
SELECT count(*) AS fks FROM pg_constraint WHERE contype = 'f' AND conparentid = 0
  AND conrelid IN ('pgbench_history'::regclass, 'pgbench_tellers'::regclass, 'pgbench_accounts'::regclass) \\gset
SELECT partstrat AS strategy FROM pg_partitioned_table WHERE partrelid = 'pgbench_accounts'::regclass \\gset
\\if :parts <> 3 OR :n1 <> 33334 OR :n3 <> 33332 OR :unlogged <> 3 OR :filled <> 3 OR :fks <> 5
  \\set fail 1 / 0
\\endif
";

/// Fails unless pgbench_accounts is 4 partitions by hash holding every account.
const PG_HASH: &str = "\
SELECT count(*) AS parts, (SELECT count(*) FROM pgbench_accounts) AS n FROM pg_inherits
  WHERE inhparent = 'pgbench_accounts'::regclass \\gset
SELECT (partstrat = 'h')::int AS hashed FROM pg_partitioned_table WHERE partrelid = 'pgbench_accounts'::regclass \\gset
SELECT (SELECT count(*) FROM pgbench_accounts_4) AS n4 \\gset
\\if :parts <> 4 OR :n <> 400000 OR :hashed = 0 OR :n4 < 20000
  \\set fail 1 / 0
\\endif
";

/// Fails unless pgbench_accounts is 3 partitions by range with pgbench's bounds, and pgbench's
/// five foreign keys are there.
const MARIA_RANGE: &str = "\
SELECT count(*) AS parts FROM information_schema.PARTITIONS
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'pgbench_accounts' \\gset
SELECT (SELECT count(*) FROM pgbench_accounts PARTITION (p1)) AS n1,
  (SELECT count(*) FROM pgbench_accounts PARTITION (p3)) AS n3 \\gset
\\if :parts <> 3 OR :n1 <> 33334 OR :n3 <> 33332
  \\set fail 1 / 0
\\endif
";
const MARIA_KEYS: &str = "\
SELECT count(*) AS fks FROM information_schema.REFERENTIAL_CONSTRAINTS
  WHERE CONSTRAINT_SCHEMA = DATABASE() \\gset
\\if :fks <> 5
  \\set fail 1 / 0
\\endif
";

#[test]
fn pgbench_init_options_shape_the_tables_on_both_databases() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("pg-range.sql", PG_RANGE),
        ("pg-hash.sql", PG_HASH),
        ("maria-range.sql", MARIA_RANGE),
        ("maria-keys.sql", MARIA_KEYS),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    // The case's status, and its reason.
    let run = |url: &str, script: &str, flags: &[&str], out: &str| {
        let args = [&["-b", "tpcb-like", "--script", script][..], flags].concat();
        let (_, status, reason) = sql_case(dir.path(), url, &args, out);
        (status, reason)
    };
    let ok = |got: (String, String), what: &str| assert_eq!(got.0, "ok", "{what}: {}", got.1);
    let range = [
        "-F",
        "90",
        "--unlogged-tables",
        "--partitions",
        "3",
        "--foreign-keys",
    ];
    ok(
        run(&pg.url(), "pg-range.sql", &range, "pg-range"),
        "postgres, by range",
    );
    let hash = [
        "--partitions",
        "4",
        "--partition-method",
        "hash",
        "--scale",
        "4",
    ];
    ok(
        run(&pg.url(), "pg-hash.sql", &hash, "pg-hash"),
        "postgres, by hash",
    );
    let parts = ["--partitions", "3"];
    ok(
        run(&maria.url(), "maria-range.sql", &parts, "maria-range"),
        "mysql, by range",
    );
    let keys = ["--foreign-keys"];
    ok(
        run(&maria.url(), "maria-keys.sql", &keys, "maria-keys"),
        "mysql, foreign keys",
    );
    // The checks can fail: the foreign keys' count without them.
    let (status, reason) = run(&maria.url(), "maria-keys.sql", &[], "maria-no-keys");
    assert_eq!(status, "failed");
    assert!(reason.contains("division by zero"), "{reason}");
    for (flags, says, out) in [
        (
            &["-F", "90"][..],
            "-F (fillfactor) is PostgreSQL's",
            "maria-f",
        ),
        (
            &["--unlogged-tables"][..],
            "--unlogged-tables is PostgreSQL's",
            "maria-u",
        ),
    ] {
        let (status, reason) = run(&maria.url(), "maria-keys.sql", flags, out);
        assert_eq!(status, "failed", "{flags:?}");
        assert!(reason.contains(says), "{reason}");
    }
}

/// A script that fails unless every page of pgbench's branches and tellers is all frozen in the
/// visibility map, every account is there, and `accounts` (the accounts' table, or one of its
/// partitions) is all frozen or, with `frozen` false, is not: as `pgbench -i` leaves them on
/// PostgreSQL 14 and later, loaded by `COPY … FREEZE` in the transaction that emptied them,
/// partitions without it (`pg_visibility`, made by the test).
fn frozen(accounts: &str, frozen: bool) -> String {
    let pages = |table: &str| {
        format!(
            "(SELECT all_frozen FROM public.pg_visibility_map_summary('{table}'))
  - (SELECT relpages FROM pg_class WHERE oid = '{table}'::regclass)"
        )
    };
    let accounts_wrong = if frozen { "<> 0" } else { "= 0" };
    format!(
        "SELECT {} + {} AS few_tellers_branches, {} AS few_accounts, (SELECT count(*) FROM pgbench_accounts) AS n \\gset
\\if :few_tellers_branches <> 0 OR :few_accounts {accounts_wrong} OR :n <> 200000
  \\set fail 1 / 0
\\endif
",
        pages("pgbench_tellers"),
        pages("pgbench_branches"),
        pages(accounts)
    )
}

/// dyno loads pgbench's tables on PostgreSQL as `pgbench -i` does by default, frozen; a
/// partition of pgbench_accounts, which pgbench copies without `FREEZE` (PostgreSQL refuses it
/// on a partitioned table), is not, and the check that it is fails.
#[test]
fn pgbench_tables_are_loaded_frozen_as_pgbench_loads_them() {
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let st = super::sql::store(&pg.url());
    let mut s = st.connect_sql().unwrap();
    s.batch("create extension if not exists pg_visibility schema public")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, accounts, is_frozen) in [
        ("whole.sql", "pgbench_accounts", true),
        ("part.sql", "pgbench_accounts_1", false),
        ("part-frozen.sql", "pgbench_accounts_1", true),
    ] {
        std::fs::write(dir.path().join(name), frozen(accounts, is_frozen)).unwrap();
    }
    let run = |script: &str, flags: &[&str], out: &str| {
        let args = [&["--script", script, "--scale", "2"][..], flags].concat();
        let (_, status, reason) = sql_case(dir.path(), &pg.url(), &args, out);
        (status, reason)
    };
    let (status, reason) = run("whole.sql", &[], "whole");
    assert_eq!(status, "ok", "{reason}");
    let (status, reason) = run("part.sql", &["--partitions", "2"], "partitioned");
    assert_eq!(status, "ok", "{reason}");
    let (status, reason) = run("part-frozen.sql", &["--partitions", "2"], "part-frozen");
    assert_eq!(status, "failed");
    assert!(reason.contains("division by zero"), "{reason}");
}

/// Fails unless sbtest1's id is a plain integer column with a secondary index and no primary
/// key, and k has no index (sysbench's `--auto-inc off --secondary on --create-secondary
/// off`), on PostgreSQL.
const PG_SBTEST: &str = "\
SELECT count(*) AS primaries FROM pg_index WHERE indrelid = 'sbtest1'::regclass AND indisprimary \\gset
SELECT count(*) AS xid, coalesce(sum((indexname = 'k_1')::int), 0) AS k FROM pg_indexes
  WHERE schemaname = current_schema() AND indexname IN ('xid_1', 'k_1') \\gset
SELECT count(*) AS serial FROM information_schema.columns
  WHERE table_schema = current_schema() AND table_name = 'sbtest1' AND column_name = 'id' AND column_default IS NOT NULL \\gset
\\if :primaries <> 0 OR :xid - :k <> 1 OR :k <> 0 OR :serial <> 0
  \\set fail 1 / 0
\\endif
";
/// The same on MariaDB.
const MARIA_SBTEST: &str = "\
SELECT coalesce(sum(INDEX_NAME = 'PRIMARY'), 0) AS primaries, coalesce(sum(INDEX_NAME = 'xid'), 0) AS xid,
  coalesce(sum(INDEX_NAME = 'k_1'), 0) AS k FROM information_schema.STATISTICS
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'sbtest1' \\gset
SELECT count(*) AS serial FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
  AND TABLE_NAME = 'sbtest1' AND COLUMN_NAME = 'id' AND EXTRA LIKE '%auto_increment%' \\gset
\\if :primaries <> 0 OR :xid <> 1 OR :k <> 0 OR :serial <> 0
  \\set fail 1 / 0
\\endif
";

/// sysbench's `--auto-inc off`, `--secondary on` and `--create-secondary off` shape its tables on both databases (the
/// mix still keeps every table at its size: the run checks it), and the check can fail.
#[test]
fn sysbench_table_options_shape_its_tables_on_both_databases() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pg.sql"), PG_SBTEST).unwrap();
    std::fs::write(dir.path().join("maria.sql"), MARIA_SBTEST).unwrap();
    let run = |url: &str, script: &str, flags: &[&str], out: &str| {
        let sysbench = [
            "-b",
            "oltp_read_write",
            "--table-size",
            "1000",
            "--rand-type",
            "uniform",
        ];
        let args = [
            &sysbench[..],
            &["--max-tries", "100", "--script", script],
            flags,
        ]
        .concat();
        let (_, status, reason) = sql_case(dir.path(), url, &args, out);
        (status, reason)
    };
    let options = [
        "--auto-inc",
        "off",
        "--secondary",
        "on",
        "--create-secondary",
        "off",
    ];
    for (url, script) in [(pg.url(), "pg.sql"), (maria.url(), "maria.sql")] {
        let (status, reason) = run(&url, script, &options, &format!("{script}-on"));
        assert_eq!(status, "ok", "{url}: {reason}");
        let (status, reason) = run(&url, script, &[], &format!("{script}-off"));
        assert_eq!(status, "failed", "{url}");
        assert!(reason.contains("division by zero"), "{reason}");
    }
}

/// `COPY … FROM STDIN` on PostgreSQL: rows sent in as many messages as they fill, counted by the
/// server; a bad row refused with the server's word for it and nothing loaded; a statement that
/// is no copy refused; the session usable after each.
#[test]
fn copy_in_loads_rows_and_refuses_a_bad_one_whole() {
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let st = super::sql::store(&pg.url());
    let mut s = st.connect_sql().unwrap();
    s.batch("create table copied (a int, b text)").unwrap();
    let mut next = 0;
    let rows = s.copy_in("copy copied from stdin", &mut |out| {
        for _ in 0..700 {
            out.extend_from_slice(format!("{next}\tx\n").as_bytes());
            next += 1;
        }
        next < 7_000
    });
    assert_eq!(rows.unwrap(), 7_000);
    let count = |s: &mut dyn engine::driver::SqlSession| {
        super::sql::one(s, "select count(*) from copied").unwrap()
    };
    assert_eq!(count(s.as_mut()), "7000");
    let mut sent = false;
    let bad = s.copy_in("copy copied from stdin", &mut |out| {
        out.extend_from_slice(b"1\ty\nnot a number\tz\n");
        sent = !sent;
        sent
    });
    let e = bad.unwrap_err().to_string();
    assert!(e.contains("invalid input syntax for type integer"), "{e}");
    assert_eq!(count(s.as_mut()), "7000");
    // A bad row first, then up to 20,000 chunks of good ones: the copy stops soon after the
    // server's refusal arrives rather than making and sending them all.
    let mut chunks = 0;
    let bad = s.copy_in("copy copied from stdin", &mut |out| {
        if chunks == 0 {
            out.extend_from_slice(b"not a number\tz\n");
        }
        for i in 0..700 {
            out.extend_from_slice(format!("{i}\tx\n").as_bytes());
        }
        chunks += 1;
        chunks < 20_000
    });
    let e = bad.unwrap_err().to_string();
    assert!(e.contains("invalid input syntax for type integer"), "{e}");
    assert!(chunks < 2_000, "{chunks} chunks made after the refusal");
    assert_eq!(count(s.as_mut()), "7000");
    let e = s
        .copy_in("select 1", &mut |_| false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`select 1` is no COPY … FROM STDIN"), "{e}");
    assert_eq!(count(s.as_mut()), "7000");
    s.batch("drop table copied").unwrap();
}

/// sysbench's built-ins retry their conflicts as sysbench does when `--max-tries` is not
/// given: until the transaction succeeds (each try drawing afresh). Four clients deleting and
/// inserting among three ids conflict often: every transaction still succeeds, some retried.
/// With `--max-tries 1` some fail, counted but in no latency (as pgbench's figures).
#[test]
fn sysbench_built_ins_retry_their_conflicts_until_they_pass() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |url: &str, target: &str, out: &str, tries: &[&str]| {
        crate::common::dyno(dir.path())
            .args(["run", "--suite", "sql", "-b", "oltp_write_only"])
            .args(["--table-size", "3", "-c", "4", "-t", "30", "-o", out, url])
            .args(tries)
            .assert()
            .success();
        let rec = crate::common::record(&dir.path().join(out));
        let c = crate::common::case(&rec, target, "oltp_write_only");
        assert_eq!(c["status"], "ok", "{out}: {}", c["reason"]);
        (
            rec["plan"]["custom"]["sql"]["max_tries"].clone(),
            c["reps"][0].clone(),
        )
    };
    for (url, target) in [(pg.url(), "postgres"), (maria.url(), "mysql")] {
        let (tries, rep) = run(&url, target, target, &[]);
        assert!(tries.is_null(), "{tries}");
        let figures = &rep["detail"]["custom"]["figures"];
        assert_eq!(figures["transactions"], 120, "{target}: {figures}");
        assert_eq!(figures["failed"], 0, "{target}: {figures}");
        assert!(
            figures["retried"].as_u64().unwrap() > 0,
            "{target}: {figures}"
        );
    }
    let (_, rep) = run(&pg.url(), "postgres", "once", &["--max-tries", "1"]);
    let failed = rep["detail"]["custom"]["figures"]["failed"]
        .as_u64()
        .unwrap();
    assert!(failed > 0, "{rep}");
    assert_eq!(rep["latency_ns"]["count"].as_u64(), Some(120 - failed));
    // Each failure counted at the command it came at, once.
    let at: u64 = (rep["by_op"].as_object().unwrap().values())
        .map(|o| o["errors"].as_u64().unwrap())
        .sum();
    assert_eq!(at, failed, "{}", rep["by_op"]);
}
