//! `dyno compare` on the mock target's virtual clock (exact latencies): a slower build is a
//! regression with an interval that excludes zero, an identical one is no change, too few
//! repetitions give no verdict, and runs whose settings differ are refused unless allowed.

mod common;

use common::*;
use std::path::Path;

fn run(dir: &Path, name: &str, latency: &str, args: &[&str]) -> String {
    let out = dir.join(name);
    let o = dyno(dir)
        .args([
            "run",
            &format!("mock:?latency={latency}"),
            "-n",
            "50",
            "--quiet",
            "-o",
        ])
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.to_str().unwrap().to_string()
}

fn compare(dir: &Path, args: &[&str]) -> std::process::Output {
    dyno(dir).arg("compare").args(args).output().unwrap()
}

fn json(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The figure `name` of the case whose identity starts with `case`.
fn figure<'a>(c: &'a serde_json::Value, case: &str, name: &str) -> &'a serde_json::Value {
    let case = (c["cases"].as_array().unwrap().iter())
        .find(|k| k["case"].as_str().unwrap().starts_with(case))
        .unwrap();
    (case["figures"].as_array().unwrap().iter())
        .find(|f| f["figure"] == name)
        .unwrap()
}

#[test]
fn ten_percent_slower_regresses_and_the_same_build_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reps = ["--reps", "5", "-c", "2"];
    let base = run(d, "base", "100us", &reps);
    let again = run(d, "again", "100us", &reps);
    let slower = run(d, "slower", "110us", &reps);
    let c = json(&compare(d, &[&base, &slower, "--format", "json"]));
    let rate = figure(&c, "shootout add", "rate");
    assert_eq!(rate["verdict"], "regressed", "{rate}");
    let hi = rate["interval"][1].as_f64().unwrap();
    assert!(hi < 0.0, "the interval excludes 0: {rate}");
    let p99 = figure(&c, "shootout add", "p99");
    assert_eq!(p99["verdict"], "regressed", "{p99}");
    assert!(p99["interval"][0].as_f64().unwrap() > 0.0, "{p99}");
    let rank = &c["cases"][0]["rank"];
    assert!(rank["p_new_slower"].as_f64().unwrap() > 0.99, "{rank}");
    // The other way round, an improvement; the same build, no change.
    let c = json(&compare(d, &[&slower, &base, "--format", "json"]));
    assert_eq!(figure(&c, "shootout add", "rate")["verdict"], "improved");
    let c = json(&compare(d, &[&base, &again, "--format", "json"]));
    for case in c["cases"].as_array().unwrap() {
        for f in case["figures"].as_array().unwrap() {
            assert_eq!(f["verdict"], "no-change", "{f}");
        }
    }
    // The table says it in words.
    let o = compare(d, &[&base, &slower]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("regressed") && text.contains("95% interval"),
        "{text}"
    );
    let o = compare(d, &[&base, &slower, "--format", "markdown"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("| shootout add on mock"));
}

#[test]
fn too_few_repetitions_give_no_verdict_and_other_settings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let two = run(d, "two", "100us", &["--reps", "2", "-c", "2"]);
    let slow = run(d, "slow", "200us", &["--reps", "2", "-c", "2"]);
    let c = json(&compare(d, &[&two, &slow, "--format", "json"]));
    let rate = figure(&c, "shootout add", "rate");
    assert_eq!(rate["verdict"], "too-few-reps", "{rate}");
    assert!(rate["interval"].is_null());
    // Three clients against two: listed, refused, then compared when allowed.
    let three = run(d, "three", "100us", &["--reps", "2", "-c", "3"]);
    let o = compare(d, &[&two, &three]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("clients: 2 → 3") && err.contains("--allow-different"),
        "{err}"
    );
    json(&compare(
        d,
        &[&two, &three, "--allow-different", "--format", "json"],
    ));
    // A malformed noise says how to write it.
    let o = compare(d, &[&two, &three, "--noise", "two"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--noise 2%"));
}
