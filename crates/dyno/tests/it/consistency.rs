//! `--check linearizable` on the mock, whose stale reads and lost writes are injected exactly
//! (`stale_every`, `lose_every`): the checker flags every key an injection made wrong — as a
//! sequential oracle computed here from the same history finds them — and no clean history;
//! `dyno check` reads the history again and agrees; the threshold gates on the verdict.

use crate::common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Runs `args` with `--check linearizable` into `dir/name`; its record and exit status.
fn checked(dir: &Path, name: &str, args: &[&str]) -> (Value, i32) {
    let out = dir.join(name);
    let o = dyno(dir)
        .args([
            "run",
            "--check",
            "linearizable",
            "-o",
            out.to_str().unwrap(),
        ])
        .args(args)
        .output()
        .unwrap();
    let code = o.status.code().unwrap();
    assert!(
        matches!(code, 0 | 4),
        "{}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    let rec = record(&out);
    assert_schema_valid(&rec);
    (rec, code)
}

fn verdict(rec: &Value) -> &Value {
    let v = &rec["cases"][0]["consistency"];
    // Every case of the target carries the one verdict.
    for c in rec["cases"].as_array().unwrap() {
        assert_eq!(&c["consistency"], v);
    }
    v
}

/// The history's operations, as written (`history.mock.jsonl`).
fn history(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("history.mock.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One client, so the history is sequential: a read must see the last write acknowledged
/// before it (the load's first). The keys where one did not.
fn oracle(ops: &[Value]) -> BTreeSet<u64> {
    let mut ops: Vec<&Value> = ops.iter().filter(|o| o["type"] == "ok").collect();
    ops.sort_by_key(|o| o["invoke_ns"].as_u64().unwrap());
    let mut last: BTreeMap<u64, &Value> = BTreeMap::new();
    let mut wrong = BTreeSet::new();
    for o in ops {
        let key = o["key"].as_u64().unwrap();
        match o["f"].as_str().unwrap() {
            "write" => {
                last.insert(key, &o["value"]);
            }
            _ => {
                if last.get(&key).copied() != Some(&o["value"]) {
                    wrong.insert(key);
                }
            }
        }
    }
    wrong
}

#[test]
fn injected_stale_reads_and_lost_writes_are_flagged_on_every_key_they_made_wrong() {
    let dir = tempfile::tempdir().unwrap();
    for (name, option) in [("stale", "stale_every=7"), ("lost", "lose_every=5")] {
        let url = format!("mock:?{option}");
        let args = [
            "--suite",
            "ycsb-a",
            "-n",
            "30",
            "-c",
            "1",
            "--operations",
            "3000",
        ];
        let (rec, _) = checked(dir.path(), name, &[&args[..], &[url.as_str()]].concat());
        let ops = history(&dir.path().join(name));
        let wrong = oracle(&ops);
        assert!(
            wrong.len() >= 10,
            "{option}: the injections made {wrong:?} wrong"
        );
        let v = verdict(&rec);
        assert_eq!(v["verdict"], "invalid", "{option}: {v}");
        assert_eq!(
            v["anomalies"]["not linearizable"].as_u64(),
            Some(wrong.len() as u64),
            "{option}: the checker and the oracle disagree: {v}"
        );
        for p in v["proofs"].as_array().unwrap() {
            assert!(wrong.contains(&p["key"].as_u64().unwrap()), "{p}");
            // The proof is the smallest set: two writes and the read that missed the second.
            assert_eq!(p["ops"].as_array().unwrap().len(), 3, "{p}");
            assert!(
                p["why"].as_str().unwrap().contains("had replaced it"),
                "{p}"
            );
        }
        assert_eq!(v["ops"].as_u64(), Some(ops.len() as u64), "{v}");
        // Checked again from the results directory: the same verdict, exit status 3.
        let o = dyno(dir.path())
            .args(["check", dir.path().join(name).to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(3));
        let stdout = String::from_utf8_lossy(&o.stdout);
        let count = format!("not linearizable: {} keys", wrong.len());
        assert!(
            stdout.contains("INVALID") && stdout.contains(&count),
            "{stdout}"
        );
    }
}

#[test]
fn clean_histories_are_valid_with_many_clients_and_the_threshold_holds_or_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--suite",
        "ycsb-a",
        "-n",
        "20",
        "-c",
        "8",
        "--operations",
        "4000",
    ];
    let gate = ["--threshold", "consistency == valid"];
    let (rec, code) = checked(
        dir.path(),
        "clean",
        &[&args[..], &gate, &["mock:", "mem:"]].concat(),
    );
    assert_eq!(code, 0);
    for c in rec["cases"].as_array().unwrap() {
        let v = &c["consistency"];
        assert_eq!(v["verdict"], "valid", "{v}");
        assert_eq!(v["tests"], serde_json::json!(["load", "a"]));
        assert!(v["ops"].as_u64().unwrap() >= 4000, "{v}");
    }
    assert_eq!(rec["plan"]["check"]["model"], "linearizable");
    // Eight clients at once, every 3rd read stale: caught, and the gate breaks (status 4).
    let (rec, code) = checked(
        dir.path(),
        "dirty",
        &[&args[..], &gate, &["mock:?stale_every=3"]].concat(),
    );
    assert_eq!(verdict(&rec)["verdict"], "invalid");
    assert_eq!(code, 4);
    assert_eq!(rec["thresholds"][0]["held"], false);
}

#[test]
fn the_kv_suite_checks_its_gets_sets_and_the_read_back_of_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--suite", "kv", "-d", "300ms", "-n", "40", "-c", "2", "--size", "64",
    ];
    let (rec, _) = checked(
        dir.path(),
        "clean",
        &[&args[..], &["mock:?latency=100us"]].concat(),
    );
    let v = verdict(&rec);
    assert_eq!(v["verdict"], "valid", "{v}");
    assert_eq!(
        v["tests"],
        serde_json::json!(["get", "set", "lost-writes check"])
    );
    // Every 4th write acknowledged and dropped: the read-back finds the older value.
    let (rec, _) = checked(
        dir.path(),
        "lossy",
        &[&args[..], &["mock:?latency=100us&lose_every=4"]].concat(),
    );
    let v = verdict(&rec);
    assert_eq!(v["verdict"], "invalid", "{v}");
    let lost = &rec["cases"][1]["reps"][0]["detail"]["kv"]["lost_writes"];
    assert!(lost["stale"].as_u64().unwrap() > 0, "{lost}");
    let why = v["proofs"][0]["why"].as_str().unwrap();
    assert!(why.contains("lost") || why.contains("stale"), "{why}");
}

#[test]
fn check_refuses_what_it_cannot_check_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let e = refused_run(
        dir.path(),
        &["--suite", "shootout", "mem:", "--check", "linearizable"],
    );
    assert!(
        e.contains("keeps no history") && e.contains("kv or ycsb"),
        "{e}"
    );
    let e = refused_run(
        dir.path(),
        &["--suite", "ycsb", "mem:", "--check", "linearisable"],
    );
    assert!(e.contains("did you mean \"linearizable\""), "{e}");
    let e = refused_run(
        dir.path(),
        &[
            "--suite",
            "ycsb",
            "mem:",
            "--threshold",
            "consistency == valid",
        ],
    );
    assert!(e.contains("--check linearizable"), "{e}");
    let e = refused_run(
        dir.path(),
        &[
            "--suite",
            "ycsb",
            "mem:",
            "--check",
            "linearizable",
            "--threshold",
            "consistency > valid",
        ],
    );
    assert!(e.contains("consistency == valid"), "{e}");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"client\":1}\n").unwrap();
    let o = dyno(dir.path())
        .args(["check", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("bad.jsonl: line 1") && e.contains("hint:"),
        "{e}"
    );
}

#[test]
fn a_verdict_turned_invalid_is_a_regression_of_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--suite",
        "ycsb-a",
        "-n",
        "20",
        "-c",
        "2",
        "--operations",
        "2000",
    ];
    let (_, code) = checked(dir.path(), "before", &[&args[..], &["mock:"]].concat());
    assert_eq!(code, 0);
    let before = dir.path().join("before");
    let out = dir.path().join("after");
    let o = dyno(dir.path())
        .args([
            "run",
            "--check",
            "linearizable",
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .args(args)
        .args([
            "mock:?stale_every=3",
            "--compare",
            before.to_str().unwrap(),
            "--allow-different",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("consistency of ") && stderr.contains("valid → invalid"),
        "{stderr}"
    );
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).unwrap()).unwrap();
    let v = &c["cases"][1]["consistency"];
    assert_eq!(
        (&v["base"], &v["new"]),
        (&"valid".into(), &"invalid".into()),
        "{c}"
    );
    // The same verdict on both sides is no regression.
    let again = dir.path().join("again");
    let o = dyno(dir.path())
        .args([
            "run",
            "--check",
            "linearizable",
            "-o",
            again.to_str().unwrap(),
            "--quiet",
        ])
        .args(args)
        .args(["mock:", "--compare", before.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
