//! gRPC load (`grpc://`) through the real binary: against `dyno serve --http`, which echoes
//! every call (examples/grpc/echo.proto describes them), and against a real gRPC server, etcd
//! (examples/grpc/etcd-kv.proto). Every run is bounded by a duration.

use crate::common::*;
use serde_json::Value;
use std::path::PathBuf;

fn example(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/grpc")
        .join(name);
    p.to_string_lossy().into_owned()
}

/// The calls a case made.
fn calls(c: &Value) -> u64 {
    c["reps"][0]["detail"]["load"]["requests"].as_u64().unwrap()
}

/// `dyno run URL ARGS -d 2s` in a temporary directory: the target's case and the table.
fn run(url: &str, args: &[&str]) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let a = dyno(dir.path())
        .arg("run")
        .arg(url)
        .args(["-d", "2s", "-r", "1", "-o", "o"])
        .args(args)
        .assert()
        .success();
    let rec = record(&dir.path().join("o"));
    let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    (case(&rec, "grpc", "load").clone(), out)
}

#[test]
fn calls_to_the_reference_server_are_echoed_and_a_status_is_classed_by_name() {
    let _serial = serial();
    let s = RefServer::start();
    let url = format!("grpc://127.0.0.1:{}/dyno.example.Echo/Say", s.port);
    let proto = example("echo.proto");
    let data = r#"{"key":"k","value":"aGVsbG8=","n":"7","tags":["a","b"]}"#;
    let (c, out) = run(
        &url,
        &[
            "--proto",
            &proto,
            "--data",
            data,
            "-c",
            "2",
            "--streams",
            "8",
        ],
    );
    assert!(
        c["errors"].as_object().unwrap().is_empty(),
        "{}",
        c["errors"]
    );
    assert!(calls(&c) > 1000, "{} calls in 2 s\n{out}", calls(&c));
    assert!(
        out.contains("gRPC dyno.example.Echo.Say (unary), 8 streams per connection"),
        "{out}"
    );
    // The status the call asks for (metadata the reference server reads) fails every call,
    // counted as its class with its name.
    let (c, _) = run(&url, &["--proto", &proto, "-H", "x-dyno-grpc-status: 8"]);
    assert_eq!(c["errors"]["full"], calls(&c), "{}", c["errors"]);
    let example = c["error_examples"]["full"].as_str().unwrap();
    assert_eq!(example, "gRPC RESOURCE_EXHAUSTED (8): asked for");
}

#[test]
fn etcd_answers_range_and_put_calls_and_its_refusals_are_named() {
    let _serial = serial();
    let Some(etcd) = testkit::Etcd::start() else {
        return;
    };
    let proto = example("etcd-kv.proto");
    let url = |m: &str| format!("grpc://127.0.0.1:{}/etcdserverpb.KV/{m}", etcd.port);
    let put = r#"{"key":"ZHlub19ncnBj","value":"MQ=="}"#;
    let (c, out) = run(&url("Put"), &["--proto", &proto, "--data", put, "-c", "4"]);
    assert!(
        c["errors"].as_object().unwrap().is_empty(),
        "{}",
        c["errors"]
    );
    assert!(calls(&c) > 100, "{out}");
    let range = r#"{"key":"ZHlub19ncnBj","serializable":true}"#;
    let (c, _) = run(
        &url("Range"),
        &["--proto", &proto, "--data", range, "--streams", "4"],
    );
    assert!(
        c["errors"].as_object().unwrap().is_empty(),
        "{}",
        c["errors"]
    );
    // No key: etcd refuses the call with INVALID_ARGUMENT.
    let (c, _) = run(&url("Range"), &["--proto", &proto]);
    assert_eq!(c["errors"]["application"], calls(&c), "{}", c["errors"]);
    let example = c["error_examples"]["application"].as_str().unwrap();
    assert!(
        example.starts_with("gRPC INVALID_ARGUMENT (3): etcdserver: key is not provided"),
        "{example}"
    );
    // A deadline shorter than any answer: DEADLINE_EXCEEDED, counted as a timeout.
    let (c, _) = run(
        &url("Range"),
        &["--proto", &proto, "--data", range, "--deadline", "1us"],
    );
    let timeouts = c["errors"]["timeout"].as_u64().unwrap_or(0);
    assert!(timeouts > 0, "{}", c["errors"]);
}

/// etcd:// runs the kv suite over its gRPC API (the default) and over the JSON gateway alike.
#[test]
fn the_etcd_driver_runs_the_kv_suite_over_grpc_and_over_the_gateway() {
    let _serial = serial();
    let Some(etcd) = testkit::Etcd::start() else {
        return;
    };
    for api in ["grpc", "gateway"] {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("etcd://127.0.0.1:{}?api={api}", etcd.port);
        dyno(dir.path())
            .args([
                "run", &url, "--suite", "kv", "-n", "50", "-d", "1s", "-r", "1", "-o", "o",
            ])
            .assert()
            .success();
        let rec = record(&dir.path().join("o"));
        for c in rec["cases"].as_array().unwrap() {
            assert_eq!(c["status"], "ok", "{api}: {}", c["test"]);
            assert!(
                c["errors"].as_object().unwrap().is_empty(),
                "{api}: {}",
                c["errors"]
            );
        }
        assert!(rec["cases"].as_array().unwrap().len() >= 2);
    }
}

/// A server-streaming method: every message timed from its call's intended start, the first
/// of each call apart, the call's latency its last message's.
#[test]
fn each_message_of_a_streamed_response_is_timed_from_the_calls_intended_start() {
    let _serial = serial();
    let s = RefServer::start();
    let url = format!("grpc://127.0.0.1:{}/dyno.example.Echo/Repeat", s.port);
    let proto = example("echo.proto");
    let args = [
        "--proto",
        &proto,
        "-H",
        "x-dyno-grpc-messages: 5",
        "--streams",
        "4",
    ];
    let (c, out) = run(&url, &args);
    assert!(
        c["errors"].as_object().unwrap().is_empty(),
        "{}",
        c["errors"]
    );
    let l = &c["reps"][0]["detail"]["load"];
    let m = &l["messages"];
    assert_eq!(m["calls"], l["ok"], "{m}");
    assert_eq!(
        m["messages"].as_u64(),
        l["ok"].as_u64().map(|n| 5 * n),
        "{m}"
    );
    let (first, each) = (&m["first_ns"], &m["each_ns"]);
    assert!(first["p50"].as_u64() <= each["p50"].as_u64(), "{m}");
    assert!(
        each["max"].as_u64() <= c["summary"]["latency_ns"]["max"].as_u64(),
        "{m}"
    );
    assert!(
        out.contains("gRPC dyno.example.Echo.Repeat (server streaming)"),
        "{out}"
    );
    assert!(
        out.contains("messages per call (streamed)") && out.contains("5.00"),
        "{out}"
    );
    assert!(out.contains("first message p50 / p99"), "{out}");
}

/// A real gRPC server (grpcio, in Python) with its reflection service on: dyno learns the
/// method from the server when no .proto file is given, and the calls, unary and streamed, are
/// what they are with the file.
#[test]
fn a_grpcio_server_is_called_with_its_own_reflection_or_a_proto_file() {
    let _serial = serial();
    let Some(server) = testkit::GrpcEcho::start() else {
        return;
    };
    let url = |m: &str| format!("grpc://127.0.0.1:{}/dyno.example.Echo/{m}", server.port);
    let data = r#"{"key":"k","n":3}"#;
    let (c, out) = run(&url("Say"), &["--data", data, "-c", "2", "--streams", "4"]);
    assert!(
        c["errors"].as_object().unwrap().is_empty(),
        "{}",
        c["errors"]
    );
    assert!(calls(&c) > 100, "{out}");
    assert!(out.contains("gRPC dyno.example.Echo.Say (unary)"), "{out}");
    let (c, _) = run(&url("Repeat"), &["--data", data, "--streams", "2"]);
    let m = &c["reps"][0]["detail"]["load"]["messages"];
    assert_eq!(
        m["messages"].as_u64(),
        m["calls"].as_u64().map(|n| 3 * n),
        "{m}"
    );
    let proto = example("echo.proto");
    let (c, _) = run(&url("Say"), &["--proto", &proto, "--data", data]);
    assert!(
        c["errors"].as_object().unwrap().is_empty(),
        "{}",
        c["errors"]
    );
    // A method the server does not have: named, with the ones it has.
    let dir = tempfile::tempdir().unwrap();
    let o = dyno(dir.path())
        .args(["run", &url("Shout"), "-d", "1s", "-r", "1"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(
        text.contains("has no method Shout; its methods: Say, Repeat"),
        "{text}"
    );
}

/// A mix of two methods of a real gRPC server, each described by its reflection: a row per
/// method, the calls in their weights' shares, and only the streaming one's messages counted.
#[test]
fn a_mix_of_methods_has_a_row_per_method() {
    let _serial = serial();
    let Some(server) = testkit::GrpcEcho::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        r#"[targets.echo]
url = "grpc://127.0.0.1:{}/dyno.example.Echo/Say"
data = '{{"key": "k", "n": 2}}'

[[targets.echo.requests]]
name = "say"
weight = 3

[[targets.echo.requests]]
name = "repeat"
path = "dyno.example.Echo/Repeat"
body = '{{"key": "r", "n": 3}}'
"#,
        server.port
    );
    std::fs::write(dir.path().join("echo.toml"), plan).unwrap();
    let out = dyno(dir.path())
        .args([
            "run",
            "echo.toml",
            "--suite",
            "load",
            "-d",
            "2s",
            "-r",
            "1",
            "--streams",
            "4",
            "-o",
            "o",
        ])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("echo: per request of the mix"), "{text}");
    assert!(text.contains("gRPC, a mix of 2 calls"), "{text}");
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    let rep = &rec["cases"][0]["reps"][0];
    let (say, repeat) = (
        rep["by_op"]["say"]["count"].as_u64().unwrap(),
        rep["by_op"]["repeat"]["count"].as_u64().unwrap(),
    );
    assert!(repeat > 20, "{say} says, {repeat} repeats");
    let share = say as f64 / (say + repeat) as f64;
    assert!((share - 0.75).abs() < 0.06, "say's share {share}");
    assert_eq!(rep["by_op"]["say"]["errors"], 0);
    assert_eq!(rep["by_op"]["repeat"]["errors"], 0);
    let m = &rep["detail"]["load"]["messages"];
    assert_eq!(
        m["calls"].as_u64(),
        Some(repeat),
        "only Repeat streams: {m}"
    );
}
