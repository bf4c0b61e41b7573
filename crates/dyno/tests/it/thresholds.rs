//! Thresholds on the mock target's virtual clock (every operation takes exactly its latency): one
//! that holds exits 0, one that breaks exits 4 and names itself, a threshold that scopes no case
//! fails, and a malformed one gets a located message (exit 1).

use crate::common::*;
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

/// The tests that need a real server.
mod servers {
    use super::*;

    /// `abort_on_fail`: a load run against a server that stalls half the time breaks `max < 20ms`
    /// in its first intervals and stops there (status 4, the record says where) instead of running
    /// its 30 s; the same threshold without the flag would have run to the end. A threshold that
    /// holds lets the run finish. Misplaced settings are located.
    #[test]
    fn abort_on_fail_stops_a_load_run_at_the_first_broken_threshold() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let stalled = RefServer::serve(&["--http", "--stall", "100ms/200ms"]);
        let url = format!("http://127.0.0.1:{}/", stalled.port);
        let load = |out: &str, args: &[&str]| {
            let o = dyno(d)
                .args(["run", &url, "-c", "4", "--reps", "1", "--quiet", "-o", out])
                .args(args)
                .output()
                .unwrap();
            let rec = d.join(out).join("run.json");
            let r = rec.is_file().then(|| record(&d.join(out)));
            (o, r)
        };
        let (o, r) = load(
            "aborted",
            &["-d", "30s", "--threshold", "max < 20ms", "--abort-on-fail"],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "{err}");
        assert!(
            err.contains("aborted: threshold \"max < 20ms\" broke on load on"),
            "{err}"
        );
        let r = r.unwrap();
        assert_schema_valid(&r);
        let a = &r["aborted"];
        assert_eq!(a["threshold"], "max < 20ms");
        assert_eq!(a["limit"], "20.0ms");
        let after = a["after_ns"].as_u64().unwrap();
        assert!((2_000_000_000..10_000_000_000).contains(&after), "{a}");
        assert_eq!(r["interrupted"], false);
        assert_eq!(r["thresholds"][0]["held"], false);
        assert_eq!(r["plan"]["abort_after_ns"], 2_000_000_000u64);
        let case = &r["cases"][0];
        assert!(
            case["reason"]
                .as_str()
                .unwrap()
                .starts_with("stopped: threshold \"max < 20ms\" broke"),
            "{case}"
        );
        // One that holds: the run goes to its end.
        let (o, r) = load(
            "held",
            &["-d", "3s", "--threshold", "p99 < 10s", "--abort-on-fail"],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r = r.unwrap();
        assert!(r.get("aborted").is_none(), "{}", r["aborted"]);
        assert_eq!(r["cases"][0]["status"], "ok");
        // Settings out of place.
        let (o, _) = load("none", &["-d", "1s", "--abort-on-fail"]);
        assert_eq!(o.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&o.stderr).contains("no threshold to abort on"));
        let plan = d.join("p.toml");
        std::fs::write(
            &plan,
            format!("[targets.web]\nurl = \"{url}\"\n\n[thresholds]\nchecks = [\"max < 20ms\"]\nabort_after = \"1s\"\n"),
        )
        .unwrap();
        let o = dyno(d).arg("validate").arg(&plan).output().unwrap();
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("p.toml:6") && err.contains("abort_on_fail = true"),
            "{err}"
        );
    }
}
