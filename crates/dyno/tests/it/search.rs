//! The capacity search (`--find-max`) through the real binary: the objectives are refused where
//! a search cannot run; against a reference server whose capacity is known by construction (one
//! worker, a fixed service time) the search finds it, in a bounded number of steps; against a
//! server that stalls it says which objective broke.

use crate::common::*;
use serde_json::Value;

#[test]
fn objectives_are_refused_where_a_search_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], words: &str| {
        let o = dyno(dir.path()).arg("run").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(words), "{err}");
    };
    let url = "http://127.0.0.1:1/";
    refused(
        &["mem:", "--find-max", "p99 < 20ms"],
        "the shootout suite has no rate to search",
    );
    refused(
        &[url, "--find-max", "p99 < 20ms test=load"],
        "an objective is a figure and its limit",
    );
    refused(
        &[url, "--find-max", "p99 < 1ms", "--sweep", "rate=1,2"],
        "without sweeps",
    );
    refused(&[url, "--find-max", "p99 << 1ms"], "is not <, <=, > or >=");
}

mod servers {
    use super::*;

    /// `dyno run URL ARGS -o o` in `dir`: the record.
    fn run(dir: &std::path::Path, url: &str, args: &[&str]) -> Value {
        dyno(dir)
            .arg("run")
            .arg(url)
            .args(args)
            .args(["-o", "o"])
            .assert()
            .success();
        let rec = record(&dir.join("o"));
        assert_schema_valid(&rec);
        rec
    }

    /// One worker taking 2 ms a request: capacity 500/s by construction, measured here with a
    /// closed loop. The search for `p99 < 20ms` (ten service times) reports a maximum within
    /// 0.8–1.0 of it, in at most 12 steps, each a point of the rate sweep the plots draw.
    #[test]
    fn the_search_finds_a_known_capacity() {
        let _serial = serial();
        let s = RefServer::serve(&["--http", "--service-time", "2ms"]);
        let url = format!("http://127.0.0.1:{}/", s.port);
        let dir = tempfile::tempdir().unwrap();
        let closed = run(dir.path(), &url, &["-c", "4", "-d", "2s", "-r", "1"]);
        let capacity = closed["cases"][0]["reps"][0]["ops_per_s"].as_f64().unwrap();
        assert!(
            (400.0..=520.0).contains(&capacity),
            "closed loop: {capacity}/s"
        );
        let dir = tempfile::tempdir().unwrap();
        let rec = run(
            dir.path(),
            &url,
            &["-c", "4", "--find-max", "p99 < 20ms", "-d", "2s", "-r", "1"],
        );
        let search = &rec["search"];
        let held = search["max_held"].as_f64().unwrap();
        // The closed loop's own figure moves by about 1% from run to run: 3% of room above.
        assert!(
            (0.8 * capacity..=1.03 * capacity).contains(&held),
            "held {held}/s against a capacity of {capacity}/s: {search}"
        );
        let steps = search["steps"].as_array().unwrap();
        assert!(steps.len() <= 12, "{} steps: {search}", steps.len());
        assert!(search["min_broke"].as_f64().unwrap() > held);
        // Every step is a case of the rate sweep, and the sweep's plots are drawn.
        assert_eq!(rec["cases"].as_array().unwrap().len(), steps.len() + 1);
        assert_eq!(rec["plan"]["sweeps"][0]["param"], "rate");
        let plots: Vec<String> = std::fs::read_dir(dir.path().join("o/plots"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            plots
                .iter()
                .any(|p| p.contains("p99") && p.ends_with(".svg")),
            "{plots:?}"
        );
    }

    /// A server stalling half of every second breaks a latency objective at any rate but the
    /// lowest: the search goes down, names the objective that broke with its figure, and ends
    /// within its bound of steps.
    #[test]
    fn the_search_says_which_objective_broke() {
        let _serial = serial();
        let s = RefServer::serve(&["--http", "--stall", "500ms/1s"]);
        let url = format!("http://127.0.0.1:{}/", s.port);
        let dir = tempfile::tempdir().unwrap();
        let args = [
            "-c",
            "2",
            "--find-max",
            "errors < 5%",
            "--find-max",
            "p99 < 50ms",
        ];
        let rec = run(
            dir.path(),
            &url,
            &[&args[..], &["-d", "1s", "-r", "1"]].concat(),
        );
        let search = &rec["search"];
        let steps = search["steps"].as_array().unwrap();
        assert!(steps.len() <= 16, "{search}");
        assert_eq!(steps[0]["held"], false, "{search}");
        let why = steps[0]["why"].as_str().unwrap();
        assert!(
            why.starts_with("p99 < 50ms: ") && why.ends_with("against 50.0ms"),
            "{why}"
        );
        assert!(!search["why"].as_str().unwrap().is_empty(), "{search}");
    }
}

/// The search on the ycsb suite (its open loop at YCSB's -target): one client of a store whose
/// every operation sleeps 1 ms cannot do more than 1,000 operations/s, by construction (a
/// closed loop measures 950–980/s on a quiet machine, much less on a busy one, as a CI
/// machine running other tests is). Whatever the machine's mood, the search's steps are the
/// workload's cases at their rates, it ends within its bound, nothing above the bound held,
/// and something broke.
#[test]
fn the_search_runs_on_ycsb_too() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args(["run", "mock:?clock=real&latency=1ms", "--suite", "ycsb-c"])
        .args(["-c", "1", "-n", "100", "--operations", "1000", "-o", "o"])
        .args(["--find-max", "p99 < 10ms"])
        .assert()
        .success();
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    let search = &rec["search"];
    let steps = search["steps"].as_array().unwrap();
    assert!(steps.len() <= 16, "{search}");
    assert!(
        search["max_held"].as_f64().is_none_or(|h| h <= 1_030.0),
        "{search}"
    );
    assert!(search["min_broke"].as_f64().is_some(), "{search}");
    let swept = |c: &&serde_json::Value| c["test"] == "c" && c["sweep"]["param"] == "rate";
    let cases = rec["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(swept)
        .count();
    assert_eq!(cases, steps.len(), "a case of the workload per step");
}
