//! pgbench's `-i` options on real PostgreSQL and MariaDB: the fillfactor, unlogged tables,
//! partitions of pgbench_accounts by range (pgbench's bounds) or hash, and foreign keys, each
//! seen in the server's catalog by a script that fails unless the tables are so; what MySQL has
//! no counterpart for, refused with the reason.

use super::sql::servers;

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
        let _ = crate::common::dyno(dir.path())
            .args([
                "run",
                "--suite",
                "sql",
                "-b",
                "tpcb-like",
                "--script",
                script,
            ])
            .args(flags)
            .args(["-t", "10", "-c", "2", "-o", out, url])
            .assert();
        let c = crate::common::record(&dir.path().join(out))["cases"][0].clone();
        (
            c["status"].as_str().unwrap().to_string(),
            c["reason"].to_string(),
        )
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
