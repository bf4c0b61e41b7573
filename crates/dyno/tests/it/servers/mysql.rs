//! The store suites against a real MariaDB through `mysql://` (a private instance on a free
//! loopback port, started by `testkit`): each in a database of dyno's own, dropped after.

use crate::common::*;
use testkit::mariadb::MariaDb;

/// `dyno run --quick ARGS… URL -o OUT`, which must succeed; its stdout and its record.
fn run(dir: &std::path::Path, out: &str, args: &[&str], url: &str) -> (String, serde_json::Value) {
    let a = dyno(dir)
        .args(["run", "--quick", "-o", out])
        .args(args)
        .arg(url)
        .assert()
        .success();
    let rec = record(&dir.join(out));
    assert_schema_valid(&rec);
    (
        String::from_utf8(a.get_output().stdout.clone()).unwrap(),
        rec,
    )
}

#[test]
fn the_store_suites_run_on_mariadb_in_a_database_of_their_own() {
    let Some(db) = MariaDb::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = run(dir.path(), "shootout", &[], &db.url());
    assert!(
        out.contains("innodb_flush_log_at_trx_commit=1 no binlog"),
        "durability read from the server:\n{out}"
    );
    for test in ["add", "update", "warm", "cold", "hot", "steamin"] {
        let c = case(&rec, "mysql", test);
        let want = if test == "cold" { "na" } else { "ok" };
        assert_eq!(c["status"], want, "{test}: {}", c["reason"]);
    }
    let version = &case(&rec, "mysql", "add")["versions"]["mariadb"];
    assert!(version.as_str().unwrap().starts_with("10."), "{version}");

    let (_, rec) = magma_quick(dir.path(), "magma", &db.url(), 0);
    assert_magma_ok(&rec);

    let (_, rec) = run(dir.path(), "kv", &["--suite", "kv", "-d", "1s"], &db.url());
    for test in ["get", "set"] {
        let c = case(&rec, "mysql", test);
        assert_eq!(c["status"], "ok", "{test}: {}", c["reason"]);
        assert!(c["reps"][0]["ops"].as_u64().unwrap() > 100, "{test}: {c}");
    }

    // YCSB's six workloads, e's scans included, every read checked.
    let (_, rec) = run(dir.path(), "ycsb", &["--suite", "ycsb"], &db.url());
    for test in ["load", "a", "b", "c", "d", "e", "f"] {
        let c = case(&rec, "mysql", test);
        assert_eq!(c["status"], "ok", "{test}: {}", c["reason"]);
        assert_eq!(c["reps"][0]["errors"], 0, "{test}: {c}");
    }
    let left =
        db.sql("SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'dyno%'");
    assert_eq!(left.trim(), "0", "dyno dropped every database it created");
}
