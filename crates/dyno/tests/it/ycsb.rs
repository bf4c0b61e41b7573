//! The ycsb suite: YCSB's core workloads on the embedded targets, on a real Redis and a real
//! PostgreSQL; a table per workload with the targets as columns; every read checked; workload
//! d reading mostly recent inserts; workload e `n/a` (no ordered scan in the key-value API).

use crate::common::*;
use std::path::Path;

const ALL: &str = "ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f";

/// `dyno run --suite ALL` on `targets`; the text and the record.
fn ycsb(dir: &Path, out: &str, targets: &[&str], more: &[&str]) -> (String, serde_json::Value) {
    let o = dyno(dir)
        .args([
            "run",
            "--suite",
            ALL,
            "-n",
            "500",
            "--operations",
            "600",
            "-c",
            "3",
        ])
        .args(["--quiet", "-o", out])
        .args(targets)
        .args(more)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = record(&dir.join(out));
    assert_schema_valid(&rec);
    (String::from_utf8(o.stdout).unwrap(), rec)
}

/// Every workload's case of `target` ran and its operations add up; e is n/a.
fn assert_workloads(rec: &serde_json::Value, target: &str) {
    let load = case(rec, target, "load");
    assert_eq!(load["status"], "ok", "{target} load: {}", load["reason"]);
    assert_eq!(load["reps"][0]["by_op"]["INSERT"]["count"], 500);
    for (w, kinds) in [
        ("a", &["READ", "UPDATE"][..]),
        ("b", &["READ", "UPDATE"]),
        ("c", &["READ"]),
        ("d", &["READ", "INSERT"]),
        ("f", &["READ", "UPDATE", "READ-MODIFY-WRITE"]),
    ] {
        let c = case(rec, target, w);
        assert_eq!(c["status"], "ok", "{target} {w}: {}", c["reason"]);
        let rep = &c["reps"][0];
        assert_eq!(rep["ops"], 600, "{target} {w}");
        assert_eq!(rep["errors"], 0, "{target} {w}");
        let by_op = rep["by_op"].as_object().unwrap();
        let names: Vec<&str> = by_op.keys().map(String::as_str).collect();
        let mut want = kinds.to_vec();
        want.sort_unstable();
        assert_eq!(names, want, "{target} {w}");
        for k in kinds {
            assert!(by_op[*k]["count"].as_u64().unwrap() > 0, "{target} {w} {k}");
        }
    }
    // Workload e where the store keeps keys in order; n/a, saying why, elsewhere.
    let e = case(rec, target, "e");
    if ["sqlite", "lmdb", "postgres", "redis"].contains(&target) {
        assert_eq!(e["status"], "ok", "{target} e: {}", e["reason"]);
        let rep = &e["reps"][0];
        assert_eq!(rep["ops"], 600);
        assert_eq!(rep["errors"], 0);
        let scans = rep["by_op"]["SCAN"]["count"].as_u64().unwrap();
        assert!(scans > 500, "{scans}");
        // Scan lengths uniform over 1..=100, as workloade's maxscanlength.
        let l = &rep["detail"]["custom"]["figures"]["scan_length"];
        assert_eq!(l["count"].as_u64().unwrap(), scans);
        assert!(
            l["min"].as_u64().unwrap() >= 1 && l["max"].as_u64().unwrap() <= 100,
            "{l}"
        );
        let mean = l["mean"].as_f64().unwrap();
        assert!((mean - 50.5).abs() < 5.0, "{l}");
    } else {
        assert_eq!(e["status"], "na", "{target} e");
        assert!(
            e["reason"].as_str().unwrap().contains("keeps no key order"),
            "{e}"
        );
    }
    // Workload f: each read-modify-write is a read and an update too, as YCSB counts them.
    let f = &case(rec, target, "f")["reps"][0]["by_op"];
    let rmw = f["READ-MODIFY-WRITE"]["count"].as_u64().unwrap();
    assert_eq!(f["UPDATE"]["count"].as_u64().unwrap(), rmw);
    assert_eq!(f["READ"]["count"].as_u64().unwrap(), 600);
}

#[test]
fn the_six_workloads_on_the_embedded_targets() {
    let dir = tempfile::tempdir().unwrap();
    let (text, rec) = ycsb(dir.path(), "all", &[], &[]);
    for t in ["mem", "sqlite", "fs", "lmdb"] {
        assert_workloads(&rec, t);
    }
    // A table per workload, the targets as columns.
    for w in [
        "load: insert every record",
        "workload a: read 0.5, update 0.5; zipfian",
        "workload d: read 0.95, insert 0.05; latest",
        "workload e: insert 0.05, scan 0.95; zipfian",
        "workload f: read 0.5, read-modify-write 0.5; zipfian",
    ] {
        assert!(text.contains(w), "{w}:\n{text}");
    }
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("mem"))
        .unwrap();
    let cols: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(cols, ["mem", "sqlite", "fs", "lmdb"], "{text}");
    // Under each target, what its acknowledged writes survive.
    assert!(
        text.contains("volatile") && text.contains("fsync at commit"),
        "{text}"
    );
    assert_eq!(
        rec["plan"]["ycsb"]["workloads"],
        serde_json::json!(["a", "b", "c", "d", "e", "f"])
    );
    // The same streams of draws on every target: the same keys, the same mix.
    let keys =
        |t: &str| case(&rec, t, "c")["reps"][0]["detail"]["custom"]["figures"]["top_keys"].clone();
    assert_eq!(keys("mem"), keys("lmdb"));
    // Workload d reads recent inserts: its most drawn keys are among the newest tenth.
    let d = &case(&rec, "mem", "d")["reps"][0]["detail"]["custom"]["figures"];
    let top: Vec<i64> = (d["top_keys"].as_array().unwrap().iter())
        .map(|k| k[0].as_i64().unwrap())
        .collect();
    assert!(top.len() >= 5, "{d}");
    assert!(top.iter().all(|&k| k >= 450), "recent keys first: {top:?}");
    // Workload c's zipfian is skewed: its most drawn key is far above a uniform 1/500.
    let c = &case(&rec, "mem", "c")["reps"][0]["detail"]["custom"]["figures"];
    let share = c["top_keys"][0][1].as_f64().unwrap() / c["key_draws"].as_f64().unwrap();
    assert!(share > 10.0 / 500.0, "{c}");
}

/// A target that hands back damaged copies fails the workloads that read, naming the record.
#[test]
fn every_read_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let o = dyno(dir.path())
        .args([
            "run",
            "--suite",
            "ycsb-c",
            "-n",
            "100",
            "--operations",
            "200",
            "--quiet",
            "-o",
            "o",
        ])
        .arg("mock:?corrupt_every=50")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rec = record(&dir.path().join("o"));
    let c = case(&rec, "mock", "c");
    assert_eq!(c["status"], "failed");
    assert!(
        c["reason"]
            .as_str()
            .unwrap()
            .contains("a read came back wrong: record"),
        "{c}"
    );
    // An unknown workload is refused with the list.
    let o = dyno(dir.path())
        .args(["run", "--suite", "ycsb-a,ycsb-g", "mem:"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("\"ycsb-g\" is not one of YCSB's core workloads"),
        "{err}"
    );
}

/// `-f ycsb` is YCSB's text output: a parser written to YCSB's format reads every run, with the
/// same counts as the record.
#[test]
fn ycsb_text_output_parses_as_ycsbs() {
    let dir = tempfile::tempdir().unwrap();
    let o = dyno(dir.path())
        .args([
            "run",
            "--suite",
            "ycsb-a,ycsb-f",
            "-n",
            "200",
            "--operations",
            "300",
            "-c",
            "2",
        ])
        .args(["--quiet", "-f", "ycsb", "-o", "o", "mem:"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parse_ycsb.py");
    let mut parse = std::process::Command::new("python3")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    parse.stdin.take().unwrap().write_all(&o.stdout).unwrap();
    let parsed = parse.wait_with_output().unwrap();
    assert!(parsed.status.success());
    let runs: serde_json::Value = serde_json::from_slice(&parsed.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 3, "load, a, f: {runs:?}");
    let rec = record(&dir.path().join("o"));
    for (run, test) in runs.iter().zip(["load", "a", "f"]) {
        let rep = &case(&rec, "mem", test)["reps"][0];
        let ms = run["OVERALL"]["RunTime(ms)"].as_f64().unwrap();
        assert!(
            (ms - rep["wall_ns"].as_f64().unwrap() / 1e6).abs() <= 0.5,
            "{test}"
        );
        for (kind, f) in rep["by_op"].as_object().unwrap() {
            let got = &run[kind.as_str()];
            assert_eq!(got["Operations"], f["count"], "{test} {kind}");
            assert_eq!(got["Return=OK"], f["count"], "{test} {kind}");
            let p99 = got["99thPercentileLatency(us)"].as_u64().unwrap();
            let max = got["MaxLatency(us)"].as_u64().unwrap();
            assert!(p99 <= max, "{test} {kind}");
        }
    }
    assert_eq!(
        runs[2]["READ-MODIFY-WRITE"]["Operations"],
        runs[2]["UPDATE"]["Operations"]
    );
}

/// `--zipf exact:θ`: a true Zipf over the records; its most drawn key takes about its analytic
/// share. A malformed mode is refused with the forms.
#[test]
fn an_exact_zipf_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let o = dyno(dir.path())
        .args([
            "run",
            "--suite",
            "ycsb-c",
            "-n",
            "500",
            "--operations",
            "2000",
            "--zipf",
            "exact:1.2",
        ])
        .args(["--quiet", "-o", "o", "mem:"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    assert_eq!(rec["plan"]["ycsb"]["zipf"], "exact:1.2");
    let f = &case(&rec, "mem", "c")["reps"][0]["detail"]["custom"]["figures"];
    let p0 = 1.0 / (1..=500).map(|i| 1.0 / f64::from(i).powf(1.2)).sum::<f64>();
    let top = &f["top_keys"][0];
    assert_eq!(top[0], 0, "the most popular key is the first: {f}");
    let share = top[1].as_f64().unwrap() / f["key_draws"].as_f64().unwrap();
    assert!((share / p0 - 1.0).abs() < 0.15, "{share} against {p0}");
    let o = dyno(dir.path())
        .args(["run", "--suite", "ycsb-c", "--zipf", "exact:-1", "mem:"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exact:THETA"));
}

/// `--rate` is YCSB's `-target`, done right: an open loop whose latency counts from each
/// operation's intended start. On the mock's virtual clock (every read takes exactly 100 µs), one
/// client asked for 20,000 reads/s can do 10,000: the queue grows by 50 µs an operation, so the
/// last of 1,000 reads waits about 50 ms — which the latency shows and the service time (100 µs)
/// does not. At 5,000/s nothing queues.
#[test]
fn an_open_loop_counts_from_the_intended_start() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &str, rate: &str| {
        let o = dyno(dir.path())
            .args([
                "run",
                "--suite",
                "ycsb-c",
                "-n",
                "100",
                "--operations",
                "1000",
                "-c",
                "1",
            ])
            .args(["--rate", rate, "--quiet", "-o", out, "mock:?latency=100us"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rec = record(&dir.path().join(out));
        assert_schema_valid(&rec);
        case(&rec, "mock", "c")["reps"][0]["by_op"].clone()
    };
    let over = run("over", "20000");
    let max = over["READ"]["latency_ns"]["max"].as_f64().unwrap();
    assert!(
        (max / 50e6 - 1.0).abs() < 0.02,
        "the last read waited ~50 ms: {max}"
    );
    let service = over["READ (service time)"]["latency_ns"]["max"]
        .as_f64()
        .unwrap();
    assert!((service / 100e3 - 1.0).abs() < 0.02, "{service}");
    let under = run("under", "5000");
    let max = under["READ"]["latency_ns"]["max"].as_f64().unwrap();
    assert!((max / 100e3 - 1.0).abs() < 0.02, "no queue: {max}");
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn the_workloads_on_redis_and_postgres() {
        let (Some(redis), Some(pg)) = (Redis::start(), testkit::Postgres::start()) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let redis_url = format!("redis://127.0.0.1:{}", redis.port);
        let (_, rec) = ycsb(dir.path(), "servers", &[&redis_url, &pg.url()], &[]);
        assert_workloads(&rec, "redis");
        assert_workloads(&rec, "postgres");
    }

    /// Workload e on dyno's own host, in process (`host:`) and over its wire protocol (`dyno://`):
    /// the host scans in key order (its memory store walks its keys; its LMDB store is a range).
    #[test]
    fn workload_e_on_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let host = RefServer::serve(&[]);
        let remote = format!("dyno://127.0.0.1:{}", host.port);
        let o = dyno(dir.path())
            .args([
                "run",
                "--suite",
                "ycsb-e",
                "-n",
                "300",
                "--operations",
                "400",
                "-c",
                "2",
            ])
            .args(["--quiet", "-o", "o", "host:", &remote])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rec = record(&dir.path().join("o"));
        for t in ["host", "dyno"] {
            let e = case(&rec, t, "e");
            assert_eq!(e["status"], "ok", "{t}: {}", e["reason"]);
            let rep = &e["reps"][0];
            assert_eq!(rep["errors"], 0, "{t}");
            assert!(rep["by_op"]["SCAN"]["count"].as_u64().unwrap() > 300, "{t}");
        }
    }
}
