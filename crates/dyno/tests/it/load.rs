//! The load suite through the real binary, against reference servers this test starts on
//! loopback. Every run is bounded by a duration or a count.

use crate::common::*;
use host::reference::{Body, Kind, Server, Spec, Stall};
use predicates::prelude::*;
use serde_json::Value;
use std::net::TcpListener;
use std::time::Duration;

fn server(body: Body, stall: Option<Stall>) -> Server {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    Server::start(
        l,
        Spec {
            kind: Kind::Http,
            body,
            stall,
            fault: None,
            seed: 5,
            service: None,
        },
    )
    .unwrap()
}

fn load_of(rec: &Value, target: &str) -> Value {
    case(rec, target, "load")["reps"][0]["detail"]["load"].clone()
}

/// The generator's counts of one run with `args` against `s`.
fn coalescing_run(s: &Server, args: &[&str]) -> (Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .arg("run")
        .arg(format!("http://{}/", s.addr()))
        .args(["--threads", "1", "-r", "1", "-o", "o"])
        .args(args)
        .assert()
        .success();
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    let load = load_of(&rec, "http");
    assert_eq!(load["requests"], load["ok"], "every request answered");
    (rec["plan"]["load"].clone(), load["generator"].clone())
}

#[test]
fn load_settings_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "mem:", "--rate", "100"],
            "Error: --rate: rate is a setting of the load suite, and this run is shootout",
        ),
        (
            &["run", "http://127.0.0.1:9/", "-d", "1s", "--requests", "5"],
            "Error: --duration: both a duration and a request count were given",
        ),
        (
            &["run", "http://127.0.0.1:9/", "--rate", "fast"],
            "Error: --rate: rate \"fast\" is not a number of requests per second",
        ),
        (
            &[
                "run",
                "http://127.0.0.1:9/",
                "--rate",
                "100",
                "--arrival",
                "poison",
            ],
            "did you mean \"poisson\"?",
        ),
        (
            &["run", "http://127.0.0.1:9/", "--ramp", "5s"],
            "Error: --ramp: --ramp needs --rate FROM..TO",
        ),
        (
            &[
                "run",
                "http://127.0.0.1:9/",
                "-c",
                "10",
                "--rate",
                "9",
                "--max-connections",
                "5",
            ],
            "below the connections opened up front",
        ),
        (
            &["run", "http://127.0.0.1:9/", "mem:"],
            "Error: TARGET argument 1: target http speaks request; the shootout suite needs kv targets",
        ),
        (
            &["run", "--suite", "load"],
            "Error: --suite: the load suite needs a target",
        ),
        (
            &["run", "http://127.0.0.1:9/", "-H", "no colon"],
            "http: option headers: \"no colon\" is not `Name: value`",
        ),
        (
            &["run", "tcp://127.0.0.1:9?framing=lines"],
            "tcp: option framing: \"lines\" is not a framing",
        ),
        (
            &["run", "http://127.0.0.1:9/", "--coalesce", "2ms"],
            "Error: --coalesce: coalesce 2ms is too wide\n  hint: write auto, off, or a window such as 20us (at most 1ms)",
        ),
        (
            &["run", "http://127.0.0.1:9/", "--coalesce", "soon"],
            "Error: --coalesce: coalesce: \"soon\" is not a duration",
        ),
        (
            &["run", "mem:", "--coalesce", "off"],
            "Error: --coalesce: coalesce is a setting of the load suite, and this run is shootout",
        ),
    ];
    for (args, message) in cases {
        dyno(dir.path())
            .args(*args)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(*message));
    }
}

#[test]
fn a_dead_endpoint_fails_its_case_and_says_why() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .arg("run")
        .arg(format!("http://{addr}/"))
        .args(["--requests", "3", "-c", "2", "-r", "1", "-o", "o"])
        .assert()
        .code(3)
        .stdout(predicate::str::contains("6 × refused"));
    let rec = record(&dir.path().join("o"));
    let c = case(&rec, "http", "load");
    assert_eq!(c["status"], "failed");
    assert_eq!(c["reason"], "no response to any of 6 requests");
    assert_eq!(c["errors"]["refused"], 6);
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn closed_loop_for_a_duration_with_the_full_report() {
        let _serial = serial();
        let s = server(Body::Json, None);
        let dir = tempfile::tempdir().unwrap();
        let a = dyno(dir.path())
            .arg("run")
            .arg(format!("http://{}/build/version", s.addr()))
            .args([
                "-d",
                "1s",
                "-r",
                "1",
                "-c",
                "8",
                "-o",
                "o",
                "--hlog",
                "lat.hlog",
                "--interval",
                "250ms",
            ])
            .assert()
            .success();
        let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
        assert!(
            out.starts_with("dyno load · closed loop, 8 connections, 1.00s · 1 repetition"),
            "{out}"
        );
        for row in [
            "requests",
            "successful",
            "network failed",
            "bad requests (non-2xx)",
            "rate (responses/s)",
            "read throughput",
            "write throughput",
            "test time",
            "connections/s (mean / peak)",
            "outstanding (mean / max)",
            "bytes moved (in + out)",
            "bit rate (in + out)",
            "dropped (no response)",
            "latency p99.99",
            "service time p99 (uncorrected)",
            "within 100 ms",
            "within 10 s",
            "generator: CPU per request",
            "generator: verdict",
        ] {
            assert!(
                out.lines().any(|l| l.starts_with(row)),
                "row {row:?} missing:\n{out}"
            );
        }
        let rec = record(&dir.path().join("o"));
        assert_schema_valid(&rec);
        assert_eq!(
            rec["plan"]["suite"], "load",
            "http targets pick the load suite"
        );
        assert_eq!(rec["plan"]["load"]["model"], "closed");
        let c = case(&rec, "http", "load");
        assert_eq!(c["topology"], "loopback");
        assert!(
            c["status"] == "ok" || c["status"] == "invalid",
            "{}",
            c["reason"]
        );
        let l = load_of(&rec, "http");
        assert!(l["responses"].as_u64().unwrap() > 500);
        assert_eq!(l["responses"], l["ok"]);
        assert_eq!(l["connects"], 8);
        assert_eq!(l["within"].as_array().unwrap().len(), 7);
        assert!(
            l["intervals"].as_array().unwrap().len() >= 4,
            "250 ms intervals over 1 s"
        );
        assert!(c["summary"]["service_ns"].is_object());

        // The interval log reads back with HdrHistogram's own parser, and holds every response.
        let total = crate::common::hlog_count(&dir.path().join("lat.hlog"));
        assert_eq!(total, l["responses"].as_u64().unwrap());
    }

    #[test]
    fn gobench_model_clients_times_requests() {
        let _serial = serial();
        let s = server(Body::Sizes { min: 5, max: 20000 }, None);
        let dir = tempfile::tempdir().unwrap();
        dyno(dir.path())
            .arg("run")
            .arg(format!("http://{}/", s.addr()))
            .args([
                "--clients",
                "5",
                "--requests",
                "200",
                "-o",
                "o",
                "--no-keepalive",
            ])
            .assert()
            .success();
        let rec = record(&dir.path().join("o"));
        assert_schema_valid(&rec);
        let l = load_of(&rec, "http");
        assert_eq!(l["requests"], 1000);
        assert_eq!(l["ok"], 1000);
        assert_eq!(
            l["connects"], 1000,
            "--no-keepalive: a connection per request"
        );
        assert_eq!(rec["plan"]["load"]["requests_per_connection"], 200);
    }

    #[test]
    fn old_and_new_side_by_side_in_one_table() {
        let _serial = serial();
        let old = server(
            Body::Sizes {
                min: 2000,
                max: 2000,
            },
            None,
        );
        let new = server(Body::Json, None);
        let dir = tempfile::tempdir().unwrap();
        let plan = format!(
            "[suite]\nconcurrency = 4\n[load]\nrequests = 100\n\n[targets.old]\nurl = \"http://{}/\"\n\n[targets.new]\nurl = \"http://{}/\"\nheaders = \"X-Version: new\"\n",
            old.addr(),
            new.addr()
        );
        std::fs::write(dir.path().join("p.toml"), plan).unwrap();
        let a = dyno(dir.path())
            .args(["run", "p.toml", "-o", "o"])
            .assert()
            .success();
        let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
        let header = out.lines().nth(2).unwrap();
        assert_eq!(
            header.split_whitespace().collect::<Vec<_>>(),
            ["old", "new"],
            "{out}"
        );
        let requests = out.lines().find(|l| l.starts_with("requests")).unwrap();
        assert_eq!(
            requests.split_whitespace().collect::<Vec<_>>(),
            ["requests", "400", "400"]
        );
        let rec = record(&dir.path().join("o"));
        let (o, n) = (load_of(&rec, "old"), load_of(&rec, "new"));
        assert!(o["bytes_in"].as_u64().unwrap() > 400 * 2000);
        assert!(n["bytes_in"].as_u64().unwrap() < 400 * 200);
    }

    #[test]
    fn open_loop_reports_intended_and_achieved_rate() {
        let _serial = serial();
        let s = server(Body::Json, None);
        valid_within_three_tries(|| {
            let dir = tempfile::tempdir().unwrap();
            dyno(dir.path())
                .arg("run")
                .arg(format!("http://{}/", s.addr()))
                .args([
                    "--rate",
                    "500",
                    "-r",
                    "1",
                    "-d",
                    "1s",
                    "-c",
                    "4",
                    "--arrival",
                    "poisson",
                    "--max-lag",
                    MAX_LAG_IN_TESTS,
                    "-o",
                    "o",
                ])
                .assert()
                .success();
            let rec = record(&dir.path().join("o"));
            assert_schema_valid(&rec);
            assert_eq!(rec["plan"]["load"]["model"], "open");
            assert_eq!(rec["plan"]["load"]["arrival"], "poisson");
            let g = &load_of(&rec, "http")["generator"];
            assert_eq!(g["intended_per_s"], 500.0);
            let achieved = g["achieved_per_s"].as_f64().unwrap();
            assert!((400.0..600.0).contains(&achieved), "{achieved}");
            assert!(g["lag_ns"]["p99"].as_u64().is_some());
            g.clone()
        });
    }

    #[test]
    fn a_rate_sweep_runs_each_point_as_an_open_loop_and_plots_rate_and_p99() {
        let _serial = serial();
        let s = server(Body::Json, None);
        let dir = tempfile::tempdir().unwrap();
        let out = dyno(dir.path())
            .arg("run")
            .arg(format!("http://{}/", s.addr()))
            .args([
                "--sweep",
                "rate=200,400,800",
                "-r",
                "1",
                "-d",
                "1s",
                "-c",
                "2",
                // A rate sweep is an open loop: its connection cap is accepted.
                "--max-connections",
                "8",
                "-o",
                "o",
            ])
            .assert()
            .success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        let rec = record(&dir.path().join("o"));
        assert_schema_valid(&rec);
        let cases = rec["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 3);
        for (c, rate) in cases.iter().zip([200.0, 400.0, 800.0]) {
            assert_eq!(c["sweep"]["param"], "rate");
            let l = &c["reps"][0]["detail"]["load"];
            assert_eq!(l["generator"]["intended_per_s"], rate);
            let achieved = l["generator"]["achieved_per_s"].as_f64().unwrap();
            assert!((achieved / rate - 1.0).abs() < 0.2, "{achieved} for {rate}");
        }
        assert!(stdout.contains("load: responses per second — "), "{stdout}");
        assert!(
            stdout.contains("load: p99 latency from the intended start"),
            "{stdout}"
        );
        assert_eq!(rec["plan"]["load"]["max_connections"], 8);
        // Every point is plotted and in the table, even one the generator judged invalid (as a busy
        // machine can make it at any rate): marked, with its reason under the table.
        let dat = std::fs::read_to_string(dir.path().join("o/plots/sweep-load-p99.dat")).unwrap();
        let plotted = dat.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(plotted, 3, "{dat}\n{stdout}");
        // Mark the middle point invalid, as the verdict would, and render the record again.
        let path = dir.path().join("o/run.json");
        let mut rec = rec;
        let why = "dyno dispatched 1% of requests 2.00ms or more late, beyond its pace";
        rec["cases"][1]["status"] = "invalid".into();
        rec["cases"][1]["reason"] = why.into();
        std::fs::write(&path, serde_json::to_vec(&rec).unwrap()).unwrap();
        let again = dir.path().join("again");
        let out = dyno(dir.path())
            .args(["report", "o", "--plots"])
            .arg(&again)
            .assert()
            .success();
        let table = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        let row = table
            .lines()
            .find(|l| l.starts_with("400 "))
            .unwrap_or_else(|| panic!("no row for 400/s:\n{table}"));
        assert!(row.trim_end().ends_with(" invalid"), "{row}");
        assert!(
            table.contains(&format!("- http load at rate 400: marked invalid: {why}")),
            "{table}"
        );
        let dat = std::fs::read_to_string(again.join("sweep-load-p99.dat")).unwrap();
        assert_eq!(dat.lines().filter(|l| !l.starts_with('#')).count(), 3);
        let svg = std::fs::read_to_string(again.join("sweep-load-p99.svg")).unwrap();
        assert!(svg.contains("hollow: invalid"), "the legend names the mark");
        assert!(
            !svg.contains("load load"),
            "the suite and the test are one word"
        );
        // Not with a count of requests, a ramp or a burst.
        let o = dyno(dir.path())
            .arg("run")
            .arg(format!("http://{}/", s.addr()))
            .args(["--sweep", "rate=100,200", "--requests", "10"])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains("--sweep: a rate sweep runs each point at one steady rate"),
            "{e}"
        );
    }

    /// `--rate 1000` for 10 s (and `extra`) against a server stalling 500 ms every 5 s, which
    /// it otherwise handles with ease: 10% of requests are due inside a stall and wait for its
    /// end (0..500 ms, uniformly), so the corrected p99 is 450 ms, checked here with every
    /// request sent and none failed. The case and what the run printed.
    fn stalled_run(scheme: &str, path: &str, extra: &[&str]) -> (Value, String) {
        let stall = Stall {
            pause: Duration::from_millis(500),
            every: Duration::from_secs(5),
        };
        let s = server(Body::Json, Some(stall));
        let dir = tempfile::tempdir().unwrap();
        let a = dyno(dir.path())
            .arg("run")
            .arg(format!("{scheme}://{}{path}", s.addr()))
            .args([
                "--rate",
                "1000",
                "-r",
                "1",
                "-d",
                "10s",
                "--timeout",
                "3s",
                "-o",
                "o",
            ])
            .args(extra)
            .assert()
            .success();
        let rec = record(&dir.path().join("o"));
        let c = case(&rec, scheme, "load").clone();
        let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
        let p99 = c["summary"]["latency_ns"]["p99"].as_u64().unwrap() as f64 / 1e6;
        assert!(
            (405.0..=495.0).contains(&p99),
            "corrected p99 {p99} ms, expected 450 ± 10%\n{out}"
        );
        let l = load_of(&rec, scheme);
        assert_eq!(l["network_failed"], 0, "{}", c["error_examples"]);
        assert!(
            (9_900..=10_100).contains(&l["requests"].as_u64().unwrap()),
            "{l}"
        );
        (c, out)
    }

    /// On each I/O backend (io_uring where this kernel allows it).
    #[test]
    fn coordinated_omission_is_corrected_against_a_stalling_server() {
        let _serial = serial();
        let mut backends = vec![("epoll", "epoll")];
        if engine::load::backend::uring_allowed().is_ok() {
            backends.push(("uring", "io_uring"));
        }
        for (io, ran) in backends {
            // The uncorrected service time does not see the queueing.
            let (c, out) = stalled_run("http", "/", &["-c", "10", "--io", io]);
            let service_p99 = c["summary"]["service_ns"]["p99"].as_u64().unwrap() as f64 / 1e6;
            assert!(
                service_p99 < 50.0,
                "{io}: uncorrected p99 {service_p99} ms hides the stall\n{out}"
            );
            assert!(out.contains("service time p99 (uncorrected)"));
            assert_eq!(c["reps"][0]["detail"]["load"]["generator"]["io"], ran);
        }
    }

    /// With io_uring refused (the engine's switch for it), `--io auto` runs on epoll and the
    /// record says why; `--io uring` fails, saying what to do.
    #[test]
    fn a_refused_io_uring_falls_back_or_fails_as_asked() {
        let _serial = serial();
        let s = server(Body::Json, None);
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://{}/", s.addr());
        let args = ["--requests", "50", "-c", "2", "-r", "1"];
        dyno(dir.path())
            .env(engine::load::backend::REFUSE_URING, "1")
            .args(["run", &url, "-o", "auto"])
            .args(args)
            .assert()
            .success()
            .stdout(predicate::str::is_match(r"syscalls per request +[0-9.]+ \(epoll\)").unwrap());
        let g = &load_of(&record(&dir.path().join("auto")), "http")["generator"];
        assert_eq!(g["io"], "epoll", "{g}");
        let why = g["io_reason"].as_str().unwrap();
        assert!(why.starts_with("io_uring refused"), "{why}");
        let o = dyno(dir.path())
            .env(engine::load::backend::REFUSE_URING, "1")
            .args(["run", &url, "--io", "uring", "-o", "uring"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!o.status.success(), "{out}");
        assert!(
            format!("{out}{err}").contains("--io uring: io_uring refused"),
            "{out}{err}"
        );
    }

    /// The same stall over HTTP/2, 4 connections × 25 streams: a request due inside the stall
    /// waits for its end, whether it waits for a stream of its own or sits on one at the
    /// server, and its latency says so from its intended start. (Up to 100 requests are at the
    /// server during a stall, so the service time's p99 sees it too; its p50 does not.)
    #[test]
    fn coordinated_omission_is_corrected_over_h2c() {
        let _serial = serial();
        let (c, out) = stalled_run("h2c", "/", &["-c", "4", "--streams", "25"]);
        let service_p50 = c["summary"]["service_ns"]["p50"].as_u64().unwrap() as f64 / 1e6;
        assert!(service_p50 < 20.0, "service p50 {service_p50} ms\n{out}");
    }

    /// And over gRPC unary calls (the reference server echoes them), 4 connections × 25
    /// streams.
    #[test]
    fn coordinated_omission_is_corrected_over_grpc() {
        let _serial = serial();
        let proto = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/grpc/echo.proto"
        );
        let args = [
            "-c",
            "4",
            "--streams",
            "25",
            "--proto",
            proto,
            "--data",
            r#"{"key":"k"}"#,
        ];
        let (c, out) = stalled_run("grpc", "/dyno.example.Echo/Say", &args);
        let service_p50 = c["summary"]["service_ns"]["p50"].as_u64().unwrap() as f64 / 1e6;
        assert!(service_p50 < 20.0, "service p50 {service_p50} ms\n{out}");
    }

    #[test]
    fn coalescing_is_recorded_and_only_waits_where_asked() {
        let _serial = serial();
        let s = server(Body::Json, None);
        // A fixed window with 16 connections in flight: responses are taken in windows of exactly
        // that width, and the run says so.
        let (plan, g) = coalescing_run(&s, &["-d", "1s", "-c", "16", "--coalesce", "200us"]);
        assert_eq!(plan["coalesce"], "200us");
        assert!(g["coalesced"].as_u64().unwrap() > 0, "{g}");
        assert_eq!(g["window_mean_ns"], 200_000.0);
        assert!(g["wakeups"].as_u64().unwrap() >= g["coalesced"].as_u64().unwrap());
        assert!(g["sleep_cost_ns"].as_u64().unwrap() > 0);
        // Off: never.
        let (plan, g) = coalescing_run(&s, &["-d", "1s", "-c", "16", "--coalesce", "off"]);
        assert_eq!(plan["coalesce"], "off");
        assert_eq!(g["coalesced"], 0);
        // The default, auto, with one connection: a ping-pong has nothing to gather.
        let (plan, g) = coalescing_run(&s, &["--requests", "300", "-c", "1"]);
        assert_eq!(plan["coalesce"], "auto");
        assert_eq!(g["coalesced"], 0, "{g}");
        // An open loop whose requests fall due closer together than the fixed window: it paces
        // itself, each request late by at most about the window, and still keeps the rate.
        let (plan, g) = coalescing_run(
            &s,
            &[
                "--rate",
                "5000",
                "-d",
                "1s",
                "-c",
                "4",
                "--coalesce",
                "1ms",
                "--max-lag",
                "2ms",
            ],
        );
        assert_eq!(plan["max_lag"], "2ms");
        assert!(g["coalesced"].as_u64().unwrap() > 0, "{g}");
        assert_eq!(g["pace_ns"], 1_000_000);
        let lag_p50 = g["lag_ns"]["p50"].as_u64().unwrap();
        assert!((100_000..5_000_000).contains(&lag_p50), "{g}");
        let achieved = g["achieved_per_s"].as_f64().unwrap();
        assert!((4_000.0..6_000.0).contains(&achieved), "{g}");
        // Lateness within the pace is by design: the run is invalid only when its lag p99 goes past
        // --max-lag (here 2 ms) on top of the pace (which a busy machine can still make it do).
        let lag_p99 = g["lag_ns"]["p99"].as_u64().unwrap();
        assert_eq!(g["valid"], lag_p99 <= 1_000_000 + 2_000_000, "{g}");
        // The same rate with coalescing off wakes for each request.
        let (_, g) = coalescing_run(
            &s,
            &["--rate", "5000", "-d", "1s", "-c", "4", "--coalesce", "off"],
        );
        assert_eq!(g["coalesced"], 0, "{g}");
    }

    #[test]
    fn an_invalid_run_is_said_in_the_table_and_the_notes() {
        // Whether a generator kept up is decided by a pure rule (unit-tested in the engine); here the
        // record of a real run is marked as an invalid one would be, and `dyno report` must say so.
        let _serial = serial();
        let s = server(Body::Json, None);
        let dir = tempfile::tempdir().unwrap();
        dyno(dir.path())
            .arg("run")
            .arg(format!("http://{}/", s.addr()))
            .args(["--requests", "20", "-c", "2", "-r", "1", "-o", "o"])
            .assert()
            .success();
        let path = dir.path().join("o/run.json");
        let mut rec: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let why = "dyno dispatched 1% of requests more than 13.4 ms late (its own schedule lag, not the target's): the generator could not keep the rate";
        rec["cases"][0]["status"] = "invalid".into();
        rec["cases"][0]["reason"] = why.into();
        rec["cases"][0]["reps"][0]["detail"]["load"]["generator"]["valid"] = false.into();
        rec["cases"][0]["reps"][0]["detail"]["load"]["generator"]["reason"] = why.into();
        assert_schema_valid(&rec);
        std::fs::write(&path, serde_json::to_vec(&rec).unwrap()).unwrap();
        dyno(dir.path())
            .args(["report", "o"])
            .assert()
            .success()
            .stdout(predicate::str::is_match(r"generator: verdict +INVALID \(see notes\)").unwrap())
            .stdout(predicate::str::contains(format!("- http: invalid: {why}")));
    }
}
