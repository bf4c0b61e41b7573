//! Thresholds on the mock target's virtual clock (every operation takes exactly its latency): one
//! that holds exits 0, one that breaks exits 4 and names itself, a threshold that scopes no case
//! fails, and a malformed one gets a located message (exit 1).

mod common;

use common::*;
use std::path::Path;

/// `dyno run mock:…` with `args`; exit code, stdout, stderr, and the record.
fn run(dir: &Path, target: &str, args: &[&str]) -> (i32, String, String, serde_json::Value) {
    let out = dir.join(format!("out-{}", args.len()));
    let _ = std::fs::remove_dir_all(&out);
    let o = dyno(dir)
        .args([
            "run",
            target,
            "-n",
            "50",
            "-c",
            "2",
            "--reps",
            "3",
            "--no-warmup",
            "-o",
        ])
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    let rec = if out.join("run.json").is_file() {
        let r = record(&out);
        assert_schema_valid(&r);
        r
    } else {
        serde_json::Value::Null
    };
    (
        o.status.code().unwrap(),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
        rec,
    )
}

#[test]
fn a_threshold_that_holds_exits_0_and_one_that_breaks_exits_4_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (code, stdout, stderr, rec) = run(
        d,
        "mock:?latency=1ms",
        &[
            "--threshold",
            "p99 < 2ms",
            "--threshold",
            "rate > 1000 test=add",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let t = rec["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert!(t.iter().all(|t| t["held"] == true), "{t:?}");
    // Every case scoped by p99, only add by the rate (2 clients at 1 ms: 2,000/s).
    assert_eq!(t[0]["cases"].as_array().unwrap().len(), 6);
    assert_eq!(t[1]["cases"].as_array().unwrap().len(), 1);
    assert_eq!(rec["plan"]["thresholds"][0], "p99 < 2ms");
    assert!(
        stdout.contains("thresholds") && stdout.contains("held on 6"),
        "{stdout}"
    );

    let (code, stdout, stderr, rec) = run(
        d,
        "mock:?latency=1ms",
        &[
            "--threshold",
            "p99 < 500us test=add",
            "--threshold",
            "p50 <= 1100us",
        ],
    );
    assert_eq!(code, 4, "{stderr}");
    assert!(
        stderr.contains("threshold(s) failed: p99 < 500us test=add"),
        "{stderr}"
    );
    let t = rec["thresholds"].as_array().unwrap();
    assert_eq!(t[0]["held"], false);
    assert_eq!(t[0]["cases"][0]["value"], "1.00ms", "{t:?}");
    assert_eq!(t[1]["held"], true);
    assert!(stdout.contains("FAILED"), "{stdout}");
}

#[test]
fn errors_and_scopes_are_checked_and_bad_thresholds_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // One operation in 50 fails: 2%.
    let (code, _, _, rec) = run(
        d,
        "mock:?fail_every=50",
        &[
            "--threshold",
            "errors < 1% test=add",
            "--threshold",
            "errors < 3% test=add",
        ],
    );
    assert_eq!(code, 3, "a case with failures fails first");
    let t = rec["thresholds"].as_array().unwrap();
    assert_eq!(t[0]["held"], false, "{t:?}");
    assert_eq!(t[1]["held"], true, "{t:?}");
    // A scope that names no case fails: a misspelt target must not pass.
    let (code, stdout, _, _) = run(d, "mock:", &["--threshold", "p99 < 1s target=nosuch"]);
    assert_eq!(code, 4);
    assert!(stdout.contains("no case in its scope"), "{stdout}");
    // Malformed, on the command line and in a plan file: where, and how to write it.
    let (code, _, stderr, _) = run(d, "mock:", &["--threshold", "p99 ~ 1ms"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--threshold") && stderr.contains("is not <, <=, > or >="),
        "{stderr}"
    );
    let plan = d.join("plan.toml");
    std::fs::write(
        &plan,
        "[targets.m]\nurl = \"mock:\"\n\n[thresholds]\nchecks = [\"p99 < 1ms\", \"p98 < 1ms\"]\n",
    )
    .unwrap();
    let o = dyno(d)
        .args(["validate", plan.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("plan.toml:5") && err.contains("unknown metric \"p98\""),
        "{err}"
    );
    assert!(err.contains("METRIC OP VALUE"), "{err}");
}
