//! `--push` into a real Prometheus (its remote-write receiver on) and a real InfluxDB 1.x, both
//! from the distribution's packages, started by the test: what they hold after a run is what
//! the record's intervals say. A destination that never answers costs the run nothing but the
//! points it did not take, counted in the record. `dyno report --push` sends a saved run.

use crate::common::*;
use testkit::tsdb::{Influx, Prometheus};

/// A run of `dyno serve --http` for 5 s at 200 requests a second, 1 s intervals, pushing to
/// `urls`: the record.
fn run(dir: &std::path::Path, name: &str, urls: &[String]) -> serde_json::Value {
    let server = RefServer::start();
    let out = dir.join(name);
    let mut cmd = dyno(dir);
    cmd.args(["run", &format!("http://127.0.0.1:{}/", server.port)])
        .args([
            "-d",
            "5s",
            "--rate",
            "200",
            "-r",
            "1",
            "--interval",
            "1s",
            "--quiet",
        ]);
    for u in urls {
        cmd.args(["--push", u]);
    }
    cmd.arg("-o").arg(&out).assert().success();
    let rec = record(&out);
    assert_schema_valid(&rec);
    rec
}

/// The record's intervals of its one repetition: (responses per second, p99 in seconds).
fn intervals(rec: &serde_json::Value) -> Vec<(f64, f64)> {
    let ivs = rec["cases"][0]["reps"][0]["detail"]["load"]["intervals"]
        .as_array()
        .unwrap();
    (ivs.iter())
        .map(|iv| {
            let secs =
                (iv["end_ns"].as_u64().unwrap() - iv["start_ns"].as_u64().unwrap()) as f64 / 1e9;
            (
                iv["responses"].as_f64().unwrap() / secs,
                iv["p99_ns"].as_f64().unwrap() / 1e9,
            )
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// A PromQL range selection's values, in time order.
fn prom_values(p: &Prometheus, promql: &str) -> Vec<f64> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let result = p.query(promql, now + 5.0);
    assert_eq!(
        result.as_array().map(Vec::len),
        Some(1),
        "one series: {result}"
    );
    (result[0]["values"].as_array().unwrap().iter())
        .map(|v| v[1].as_str().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn prometheus_and_influxdb_hold_what_the_record_says() {
    let (Some(prom), Some(influx)) = (Prometheus::start(), Influx::start()) else {
        return;
    };
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let urls = [
        format!("prom+remote://127.0.0.1:{}/api/v1/write", prom.port),
        format!("influx://127.0.0.1:{}/dyno", influx.port),
    ];
    let rec = run(dir.path(), "live", &urls);
    let want = intervals(&rec);
    assert!(want.len() >= 5, "{want:?}");
    for p in rec["push"].as_array().unwrap() {
        assert_eq!(
            (p["sent"].as_u64(), p["undelivered"].as_u64()),
            (Some(want.len() as u64), Some(0)),
            "{p}"
        );
    }
    let run = rec["started"].as_str().unwrap();
    let sel =
        |name: &str| format!("{name}{{run=\"{run}\",target=\"http\",test=\"load\",rep=\"1\"}}[1h]");
    let rates = prom_values(&prom, &sel("dyno_interval_responses_per_second"));
    let p99s = prom_values(&prom, &sel("dyno_interval_latency_p99_seconds"));
    let got: Vec<(f64, f64)> = rates.into_iter().zip(p99s).collect();
    assert_eq!(
        got.len(),
        want.len(),
        "prometheus: {got:?}, record: {want:?}"
    );
    for (g, w) in got.iter().zip(&want) {
        assert!(
            close(g.0, w.0) && close(g.1, w.1),
            "prometheus {g:?}, record {w:?}"
        );
    }

    let series = influx.query(&format!(
        "SELECT responses_per_second, latency_p99_seconds FROM dyno_interval WHERE run = '{run}' AND rep = '1'"
    ));
    let rows = series["values"]
        .as_array()
        .unwrap_or_else(|| panic!("{series}"));
    let got: Vec<(f64, f64)> = (rows.iter())
        .map(|r| (r[1].as_f64().unwrap(), r[2].as_f64().unwrap()))
        .collect();
    assert_eq!(got.len(), want.len(), "influxdb: {got:?}, record: {want:?}");
    for (g, w) in got.iter().zip(&want) {
        assert!(
            close(g.0, w.0) && close(g.1, w.1),
            "influxdb {g:?}, record {w:?}"
        );
    }

    // A saved run, sent again afterwards: the same points, taken (and the same series).
    let out = dir.path().join("live");
    let o = dyno(dir.path())
        .args(["report", out.to_str().unwrap(), "--push", &urls[1]])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{said}");
    assert!(
        said.contains(&format!("{} points taken, 0 not", want.len())),
        "{said}"
    );
    let again = influx.query(&format!(
        "SELECT count(responses_per_second) FROM dyno_interval WHERE run = '{run}'"
    ));
    assert_eq!(
        again["values"][0][1].as_u64(),
        Some(want.len() as u64),
        "{again}"
    );
}

#[test]
fn a_destination_that_never_answers_costs_the_run_only_its_points_counted() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    // Takes connections (the kernel's backlog) and never reads or answers.
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("influx://{}/dyno", hole.local_addr().unwrap());
    let rec = run(dir.path(), "hole", &[url]);
    let ivs = intervals(&rec).len() as u64;
    let p = &rec["push"][0];
    assert_eq!(p["sent"].as_u64(), Some(0), "{p}");
    assert_eq!(
        p["undelivered"].as_u64(),
        Some(ivs),
        "every interval counted: {p}"
    );
    assert!(
        p["error"].as_str().is_some_and(|e| e.contains("127.0.0.1")),
        "{p}"
    );
    // The run went on: every request answered. (Its verdict on its own pace is the machine's
    // business here; what the push costs is measured side by side in bench/http-vs-wrk.sh.)
    let load = &rec["cases"][0]["reps"][0]["detail"]["load"];
    assert_eq!(load["responses"], load["requests"], "{load}");
    assert!(load["responses"].as_u64() >= Some(900), "{load}");
    drop(hole);
}
