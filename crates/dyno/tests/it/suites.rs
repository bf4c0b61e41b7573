//! Every suite on every embedded target it applies to: each case must be `ok`, or `n/a` with a
//! reason. This guards against a class of bug a single target hides — a suite that ends a
//! transaction it never began worked on the stores that ignore it and failed on SQLite.

use crate::common::*;

/// Runs `args` in a fresh directory, requires every case of its record to be `ok` or `n/a` with
/// a reason (naming each that is not) and the run to exit 0, and returns the record.
fn every_case_ok_or_na(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-warmup", "-o", "o"]);
    let out = dyno(dir.path()).args(&all).output().unwrap();
    let rec = record(&dir.path().join("o"));
    let bad = rec["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            let reason = c["reason"].as_str().unwrap_or("");
            !(c["status"] == "ok" || (c["status"] == "na" && !reason.is_empty()))
        })
        .map(|c| {
            format!(
                "{} {}: {}: {}",
                c["target"], c["test"], c["status"], c["reason"]
            )
        })
        .collect::<Vec<_>>();
    assert!(
        bad.is_empty(),
        "cases neither ok nor n/a:\n{}",
        bad.join("\n")
    );
    assert_eq!(out.status.code(), Some(0));
    rec
}

#[test]
fn magma_on_every_embedded_target() {
    let _serial = serial();
    let rec = every_case_ok_or_na(&[
        "sqlite:",
        "lmdb:",
        "fs:",
        "mem:",
        "--suite",
        "magma",
        "--quick",
        "--thousands",
        "10",
        "--test-time",
        "20ms",
    ]);
    assert_eq!(rec["cases"].as_array().unwrap().len(), 4 * 17);
}

#[test]
fn shootout_on_every_embedded_target() {
    let _serial = serial();
    let rec = every_case_ok_or_na(&["sqlite:", "lmdb:", "fs:", "mem:", "--quick"]);
    assert_eq!(rec["cases"].as_array().unwrap().len(), 4 * 6);
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn namespace_on_every_embedded_target() {
        let _serial = serial();
        let rec = every_case_ok_or_na(&[
            "sqlite:",
            "lmdb:",
            "fs:",
            "mem:",
            "host:",
            "--suite",
            "namespace",
            "--quick",
        ]);
        // The stores without folders are n/a, saying why; fs: and the host ran every test.
        for c in rec["cases"].as_array().unwrap() {
            let t = c["target"].as_str().unwrap();
            if t == "fs" || t == "host" {
                assert_eq!(c["status"], "ok", "{t}: {}", c["reason"]);
            } else {
                assert_eq!(c["status"], "na", "{t}");
                assert!(
                    c["reason"]
                        .as_str()
                        .unwrap()
                        .contains("the namespace suite needs namespace targets"),
                    "{}",
                    c["reason"]
                );
            }
        }
    }
}
