//! The load suite against a real nginx: keep-alive and a connection per request, non-2xx
//! counting, and an open loop. nginx runs privately on a free loopback port.

mod common;

use common::*;

fn load(rec: &serde_json::Value) -> serde_json::Value {
    case(rec, "http", "load")["reps"][0]["load"].clone()
}

#[test]
fn keep_alive_against_nginx() {
    let _serial = serial();
    let Some(n) = Nginx::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args([
            "run",
            &n.url("/hello.txt"),
            "--requests",
            "500",
            "-c",
            "4",
            "-o",
            "o",
        ])
        .assert()
        .success();
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    let l = load(&rec);
    assert_eq!(l["ok"], 2000);
    assert_eq!(l["connects"], 4, "nginx keeps the connections alive");
    assert_eq!(l["network_failed"], 0);
    assert!(l["bytes_in"].as_u64().unwrap() >= 2000 * HELLO.len() as u64);
}

#[test]
fn connection_per_request_against_nginx() {
    let _serial = serial();
    let Some(n) = Nginx::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args([
            "run",
            &n.url("/hello.txt"),
            "--requests",
            "100",
            "-c",
            "4",
            "--no-keepalive",
            "-o",
            "o",
        ])
        .assert()
        .success();
    let l = load(&record(&dir.path().join("o")));
    assert_eq!(l["ok"], 400);
    assert_eq!(l["connects"], 400);
}

#[test]
fn non_2xx_from_nginx_are_bad_requests_not_network_failures() {
    let _serial = serial();
    let Some(n) = Nginx::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args([
            "run",
            &n.url("/missing"),
            "--requests",
            "50",
            "-c",
            "2",
            "-o",
            "o",
        ])
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "100 × application (first: HTTP 4xx response)",
        ));
    let rec = record(&dir.path().join("o"));
    let l = load(&rec);
    assert_eq!(l["non_2xx"], 100);
    assert_eq!(l["network_failed"], 0);
    assert_eq!(l["ok"], 0);
    assert_eq!(
        case(&rec, "http", "load")["status"],
        "ok",
        "the server answered: its answers are data"
    );
}

#[test]
fn open_loop_against_nginx() {
    let _serial = serial();
    let Some(n) = Nginx::start() else { return };
    valid_within_three_tries(|| {
        let dir = tempfile::tempdir().unwrap();
        dyno(dir.path())
            .args([
                "run",
                &n.url("/hello.txt"),
                "--rate",
                "2000",
                "-d",
                "1s",
                "-c",
                "8",
                "-o",
                "o",
            ])
            .assert()
            .success();
        let l = load(&record(&dir.path().join("o")));
        let ok = l["ok"].as_u64().unwrap();
        assert!((1_980..=2_020).contains(&ok), "{ok}");
        l["generator"].clone()
    });
}
