//! Bad input gets one clear message naming the place and the fix, and touches nothing.

use crate::common::*;
use predicates::prelude::*;
use std::path::Path;

fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = if p.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            (p.display().to_string(), bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_foreign_sqlite_database_is_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("app.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "PRAGMA journal_mode=WAL; CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);
             INSERT INTO users (name) VALUES ('ada'), ('grace');",
        )
        .unwrap();
    }
    let before = files_under(dir.path());
    for args in [
        vec!["run".to_string()],
        vec!["run".into(), "--quick".into()],
    ] {
        dyno(dir.path())
            .args(&args)
            .arg(format!("sqlite:{}", db.display()))
            .args(["-o", "out"])
            .assert()
            .code(1)
            .stderr(predicate::str::starts_with(format!(
                "Error: target sqlite (sqlite:{}): refusing to use {}: the database exists and dyno did not create it",
                db.display(),
                db.display()
            )));
    }
    let mut after = files_under(dir.path());
    after.retain(|(p, _)| !p.ends_with("/tmp") && !p.ends_with("/out"));
    assert_eq!(
        before, after,
        "the database and its directory are byte-identical"
    );
}

#[test]
fn a_file_that_is_not_a_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("notes.txt");
    std::fs::write(&f, "precious notes, not a database\n").unwrap();
    for scheme in ["sqlite", "lmdb", "fs"] {
        dyno(dir.path())
            .arg("run")
            .arg(format!("{scheme}:{}", f.display()))
            .assert()
            .code(1)
            .stderr(predicate::str::contains("refusing to use"));
    }
    assert_eq!(
        std::fs::read(&f).unwrap(),
        b"precious notes, not a database\n"
    );
}

#[test]
fn a_non_empty_directory_dyno_did_not_create_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("keep.me"), "important").unwrap();
    let before = files_under(&data);
    for scheme in ["fs", "lmdb"] {
        dyno(dir.path())
            .arg("run")
            .arg(format!("{scheme}:{}", data.display()))
            .assert()
            .code(1)
            .stderr(predicate::str::contains(format!(
                "refusing to use {}: the directory is not empty and dyno did not create it",
                data.display()
            )));
    }
    assert_eq!(files_under(&data), before);
    // validate finds the same problem, reading only.
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        format!("[targets.t]\nurl = \"fs:{}\"\n", data.display()),
    )
    .unwrap();
    dyno(dir.path())
        .args(["validate", "p.toml"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("refusing to use"));
    assert_eq!(files_under(&data), before);
}

#[test]
fn nothing_is_touched_when_any_target_refuses() {
    // The first target is fine, the second is foreign: the run stops before creating anything.
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("x"), "x").unwrap();
    let fresh = dir.path().join("fresh");
    dyno(dir.path())
        .arg("run")
        .arg(format!("fs:{}", fresh.display()))
        .arg(format!("fs:{}", foreign.display()))
        .assert()
        .code(1);
    assert!(!fresh.exists(), "the good target was not created either");
}

#[test]
fn dyno_reuses_what_it_created() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        dyno(dir.path())
            .args(["run", "--quick", "-n", "10"])
            .arg(format!("sqlite:{}/mine.db", dir.path().display()))
            .arg(format!("fs:{}/tree", dir.path().display()))
            .arg(format!("lmdb:{}/kv", dir.path().display()))
            .assert()
            .success();
    }
    assert!(dir.path().join("tree/.dyno-namespace").is_file());
}

#[test]
fn bad_flags_name_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["run", "-n", "0"],
            1,
            "Error: --objects: objects must be at least 1, got 0\n  hint: the default is 1000\n",
        ),
        (
            &["run", "-c", "-3"],
            1,
            "Error: --concurrency: concurrency must be at least 1, got -3\n",
        ),
        (
            &["run", "--size", "4"],
            1,
            "Error: --size: size must be at least 16, got 4\n",
        ),
        (
            &["run", "--format", "xml"],
            1,
            "Error: --format: unknown format \"xml\"; formats: table, markdown, csv, json, summary-json, html, ycsb\n",
        ),
        (&["run", "--format", "jsn"], 1, "did you mean \"json\"?"),
        (
            &["run", "--suite", "magmaa"],
            1,
            "Error: --suite: unknown suite \"magmaa\"; did you mean \"magma\"? suites: shootout, magma, load, namespace, kv, ycsb, sql, append\n",
        ),
        (
            &["run", "postgress://x"],
            1,
            "Error: TARGET argument 1: unknown target scheme \"postgress\"",
        ),
        (
            &["run", "mem:", "sqlit:/x"],
            1,
            "Error: TARGET argument 2: unknown target scheme \"sqlit\"; did you mean \"sqlite\"?",
        ),
        (
            &["run", "sqlite:?synchronous=sometimes"],
            1,
            "Error: TARGET argument 1: sqlite: option synchronous: \"sometimes\" is not allowed; choose one of off, normal, full, extra\n",
        ),
        (&["run", "mock:?latncy=1ms"], 1, "did you mean \"latency\"?"),
        (
            &["run", "mem:", "plan.toml"],
            1,
            "a plan file and target URLs were both given",
        ),
        (
            &["run", "missing.toml"],
            1,
            "Error: PLAN: cannot read plan file missing.toml",
        ),
        (
            &["run", "-n", "abc"],
            2,
            "invalid value 'abc' for '--objects <OBJECTS>'",
        ),
        (
            &["run", "--objcts", "5"],
            2,
            "unexpected argument '--objcts'",
        ),
        (&["frobnicate"], 2, "unrecognized subcommand 'frobnicate'"),
    ];
    for (args, code, message) in cases {
        dyno(dir.path())
            .args(*args)
            .assert()
            .code(*code)
            .stdout("")
            .stderr(predicate::str::contains(*message));
    }
}

#[test]
fn bad_plans_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        ("[suite]\nobjects = \n", "plan.toml:2:11: invalid TOML:"),
        (
            "[suite]\nobject = 5\n",
            "plan.toml:2:1: unknown key `object` in [suite]; did you mean \"objects\"?",
        ),
        (
            "[targets.a]\nurl = \"sqlite:\"\nsynchronous = \"often\"\n",
            "plan.toml:3:15: sqlite: option synchronous:",
        ),
        ("[targets.a]\nurl = \"fs:\"\n", ""),
        (
            "[output]\nformat = \"pdf\"\n",
            "plan.toml:2:10: unknown format \"pdf\"",
        ),
    ];
    for (text, message) in cases {
        std::fs::write(dir.path().join("plan.toml"), text).unwrap();
        let a = dyno(dir.path()).args(["validate", "plan.toml"]).assert();
        if message.is_empty() {
            a.success();
        } else {
            a.code(1)
                .stderr(predicate::str::starts_with(format!("Error: {message}")));
            // run goes through the same checks and stops before running anything.
            dyno(dir.path())
                .args(["run", "plan.toml"])
                .assert()
                .code(1)
                .stderr(predicate::str::starts_with(format!("Error: {message}")));
        }
    }
    assert!(!dir.path().join("dyno-results").exists(), "no run started");
}
