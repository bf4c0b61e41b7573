//! The load suite against a real nginx: keep-alive and a connection per request, non-2xx
//! counting, an open loop, and HTTP/2 in the clear. nginx runs privately on a free loopback
//! port.

use crate::common::*;

fn load(rec: &serde_json::Value) -> serde_json::Value {
    case(rec, "http", "load")["reps"][0]["detail"]["load"].clone()
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
            "-r",
            "1",
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
                "-r",
                "1",
                "-d",
                "1s",
                "-c",
                "8",
                "--max-lag",
                MAX_LAG_IN_TESTS,
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

/// A CA and a certificate it signed for 127.0.0.1 and localhost: (CA PEM, chain PEM, key PEM).
fn test_pki() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    leaf.subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

#[test]
fn https_against_nginx_closed_and_open_loop_with_the_certificate_checked() {
    let _serial = serial();
    let (ca, cert, key) = test_pki();
    let Some(n) = Nginx::start_tls(&cert, &key) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &ca).unwrap();
    let url = n.url("/hello.txt");
    assert!(url.starts_with("https://"));

    // Closed and open loop on each I/O backend.
    let mut backends = vec!["epoll"];
    match engine::load::backend::uring_allowed() {
        Ok(()) => backends.push("uring"),
        Err(why) => eprintln!("io_uring not tested: {why}"),
    }
    for io in backends {
        https_closed_and_open_loop(dir.path(), &url, io);
    }

    // Mozilla's roots do not know the test's CA: every request fails, said once, exit 3.
    let a = dyno(dir.path())
        .args([
            "run",
            &url,
            "--requests",
            "5",
            "-c",
            "1",
            "--no-warmup",
            "-o",
            "unknown",
        ])
        .assert()
        .code(3);
    let out = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    assert!(out.contains("invalid peer certificate"), "{out}");
    let rec = record(&dir.path().join("unknown"));
    assert_eq!(
        case(&rec, "https", "load")["reps"][0]["detail"]["load"]["ok"],
        0
    );

    // --insecure takes any certificate and says so in the column header.
    let a = dyno(dir.path())
        .args(["run", &url, "--requests", "20", "-c", "2", "--insecure"])
        .args(["--no-warmup", "-o", "insecure"])
        .assert()
        .success();
    let out = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    assert!(out.contains("TLS, NOT verified"), "{out}");

    // A CA file that is not one is refused before anything runs.
    std::fs::write(dir.path().join("bad.pem"), "not a certificate").unwrap();
    let a = dyno(dir.path())
        .args(["run", &url, "--ca", "bad.pem", "-o", "bad"])
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(err.contains("bad.pem") && err.contains("PEM"), "{err}");
    assert!(!dir.path().join("bad").exists());
}

/// An https load's closed and open loop on the I/O backend `io`: every request answered over a
/// checked certificate, and each connection's handshake timed.
fn https_closed_and_open_loop(dir: &std::path::Path, url: &str, io: &str) {
    // Closed loop, the certificate checked against the test's CA.
    let a = dyno(dir)
        .args([
            "run",
            url,
            "--requests",
            "200",
            "-c",
            "4",
            "--ca",
            "ca.pem",
            "--io",
            io,
        ])
        .args(["--no-warmup", "-o", &format!("closed-{io}")])
        .assert()
        .success();
    let out = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    let rec = record(&dir.join(format!("closed-{io}")));
    assert_schema_valid(&rec);
    let c = case(&rec, "https", "load");
    // Every request answered; the unoptimized test build may find its own thread too busy to
    // vouch for the pace (TLS is CPU work), which is the only other outcome allowed.
    assert!(
        c["status"] == "ok"
            || (c["status"] == "invalid"
                && c["reason"]
                    .as_str()
                    .unwrap()
                    .contains("a load thread was busy")),
        "{}: {}",
        c["status"],
        c["reason"]
    );
    assert!(
        c["durability"]
            .as_str()
            .unwrap()
            .contains("TLS, verified against"),
        "{}",
        c["durability"]
    );
    let l = &c["reps"][0]["detail"]["load"];
    let ran = if io == "uring" { "io_uring" } else { "epoll" };
    assert_eq!(l["generator"]["io"], ran, "{l}");
    assert_eq!(l["ok"], 800);
    assert!(l["bytes_in"].as_u64().unwrap() >= 800 * HELLO.len() as u64);
    // One handshake per connection, timed.
    let h = &l["tls_handshake_ns"];
    assert_eq!(h["count"], l["connects"], "{l}");
    assert!(h["p50"].as_u64().unwrap() > 0);
    assert!(
        out.contains("TLS handshake p50 / p99 (per connection)"),
        "{out}"
    );

    // Open loop: the connections opened up front shake hands before the measured start.
    dyno(dir)
        .args([
            "run", url, "--rate", "200", "-d", "1s", "-r", "1", "-c", "2", "--ca", "ca.pem",
            "--io", io,
        ])
        .args(["--no-warmup", "-o", &format!("open-{io}")])
        .assert()
        .success();
    let rec = record(&dir.join(format!("open-{io}")));
    let c = case(&rec, "https", "load");
    let l = &c["reps"][0]["detail"]["load"];
    assert_eq!(l["network_failed"], 0, "{l}");
    assert!(l["ok"].as_u64().unwrap() >= 190, "{l}");
    assert!(l["tls_handshake_ns"]["count"].as_u64().unwrap() >= 2);
}

/// `--profile`: nginx (watched by `--pid`, its worker a child) and dyno are profiled with perf
/// during the test; the flame graphs exist, are linked from the page, and name functions of each.
#[test]
fn profile_draws_nginx_and_dyno_as_flame_graphs() {
    let _serial = serial();
    let Some(n) = Nginx::start() else { return };
    if testkit::installed("perf", &["/usr/bin/perf"]).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args([
            "run",
            &n.url("/hello.txt"),
            "--duration",
            "2s",
            "-r",
            "1",
            "-c",
            "4",
        ])
        .args([
            "--pid",
            &n.pid().to_string(),
            "--profile",
            "o/profiles",
            "-o",
            "o",
        ])
        .assert()
        .success();
    let out = dir.path().join("o");
    let rec = record(&out);
    assert_schema_valid(&rec);
    let profiles = case(&rec, "http", "load")["profiles"]
        .as_array()
        .unwrap()
        .clone();
    let of = |process: &str| {
        (profiles.iter())
            .find(|p| p["process"].as_str().unwrap().starts_with(process))
            .unwrap_or_else(|| panic!("no profile of {process}: {profiles:?}"))
            .clone()
    };
    for (process, function) in [("nginx", "ngx_"), ("dyno", "engine::")] {
        let p = of(process);
        assert_eq!(p["tool"], "perf", "{p}");
        assert!(p["samples"].as_u64().unwrap() > 0, "{p}");
        let svg = p["svg"].as_str().unwrap();
        assert!(svg.starts_with("profiles/http/load/"), "{p}");
        let text = std::fs::read_to_string(out.join(svg)).unwrap();
        assert!(text.starts_with("<?xml") && text.contains("<svg"), "{svg}");
        assert!(
            text.contains(function),
            "{svg} names no {function} function"
        );
        assert!(out.join(p["folded"].as_str().unwrap()).is_file(), "{p}");
    }
    // The page links them.
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("id=\"profiles-"), "no Profiles section");
    assert!(
        page.contains("href=\"profiles/http/load/nginx"),
        "no link to nginx's graph"
    );
}

/// HTTP/2 in the clear: connections × streams clients, each request a stream; nginx's GOAWAY
/// after 300 requests per connection (and its limit of 8 streams at once) costs no request:
/// those above its last stream are sent again on a new connection. A 404 is a non-2xx
/// response; an open loop holds its rate.
#[test]
fn h2c_against_nginx_with_streams_and_goaway() {
    let _serial = serial();
    let Some(n) = Nginx::start_h2c(300, 8) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--requests",
        "250",
        "-c",
        "2",
        "--streams",
        "10",
        "-r",
        "1",
    ];
    dyno(dir.path())
        .args(args)
        .args([&n.url("/hello.txt"), "-o", "o", "--hlog", "lat.hlog"])
        .assert()
        .success();
    // The interval log holds the requests' latencies, as HTTP/1.1's does.
    let hlog = std::fs::read_to_string(dir.path().join("lat.hlog")).unwrap();
    assert!(hlog.contains("#[StartTime:"), "{hlog}");
    assert!(hlog.lines().any(|l| l.contains("HISTF")), "{hlog}");
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    let c = case(&rec, "h2c", "load");
    let l = &c["reps"][0]["detail"]["load"];
    assert_eq!(l["ok"], 2 * 10 * 250, "{l}");
    assert_eq!(l["network_failed"], 0, "{}", c["error_examples"]);
    // 5,000 requests at 300 per connection: at least 17 connections.
    assert!(l["connects"].as_u64().unwrap() >= 17, "{l}");
    assert!(l["bytes_in"].as_u64().unwrap() >= 5000 * HELLO.len() as u64);

    dyno(dir.path())
        .args(args)
        .args([&n.url("/missing"), "-o", "missing"])
        .assert()
        .success();
    let l = load_of(&record(&dir.path().join("missing")), "h2c");
    assert_eq!(l["non_2xx"], 5000, "{l}");
    assert_eq!(l["network_failed"], 0);

    dyno(dir.path())
        .args([
            "run",
            "--rate",
            "2000",
            "-d",
            "1s",
            "-c",
            "2",
            "--streams",
            "4",
            "-r",
            "1",
        ])
        .args([&n.url("/hello.txt"), "-o", "open"])
        .assert()
        .success();
    let l = load_of(&record(&dir.path().join("open")), "h2c");
    let ok = l["ok"].as_u64().unwrap();
    assert!((1900..=2100).contains(&ok), "{l}");
    // The rate asked for; whether dyno kept its pace is the machine's (its verdict is not
    // checked here: a busy test machine may rightly call the run invalid).
    assert_eq!(l["generator"]["intended_per_s"], 2000.0, "{l}");
}

fn load_of(rec: &serde_json::Value, target: &str) -> serde_json::Value {
    case(rec, target, "load")["reps"][0]["detail"]["load"].clone()
}

/// HTTP/2 over TLS, agreed on by ALPN: the same requests and windows as in the clear, the
/// certificate checked; a server that does not agree to h2 (plain HTTPS) fails each connection
/// by name, and streams without HTTP/2 are refused before anything runs.
#[test]
fn https_h2_against_nginx_by_alpn() {
    let _serial = serial();
    let (ca, cert, key) = test_pki();
    let Some(n) = Nginx::start_tls_h2(&cert, &key) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &ca).unwrap();
    let url = n.url("/hello.txt");
    let args = [
        "--requests",
        "100",
        "-c",
        "2",
        "--streams",
        "5",
        "--ca",
        "ca.pem",
        "-r",
        "1",
    ];
    dyno(dir.path())
        .args(["run", &url, "--http-version", "2"])
        .args(args)
        .args(["-o", "h2"])
        .assert()
        .success();
    let rec = record(&dir.path().join("h2"));
    let c = case(&rec, "https", "load");
    let l = &c["reps"][0]["detail"]["load"];
    assert_eq!(l["ok"], 2 * 5 * 100, "{}", c["error_examples"]);
    assert_eq!(l["connects"], 2, "{l}");
    assert_eq!(l["tls_handshake_ns"]["count"], 2, "{l}");
    assert!(
        c["durability"]
            .as_str()
            .unwrap()
            .starts_with("HTTP/2, 5 streams"),
        "{}",
        c["durability"]
    );

    // HTTPS without HTTP/2: the handshake agrees on nothing, and each connection says so.
    let Some(plain) = Nginx::start_tls(&cert, &key) else {
        return;
    };
    dyno(dir.path())
        .args(["run", &plain.url("/hello.txt"), "--http-version", "2"])
        .args(args)
        .args(["-o", "no-h2"])
        .assert()
        .code(3);
    let c = case(&record(&dir.path().join("no-h2")), "https", "load").clone();
    assert!(
        c["error_examples"].to_string().contains("ALPN h2"),
        "{}",
        c["error_examples"]
    );

    // The default, version=auto: the server's pick by ALPN, h2 here, HTTP/1.1 where plain.
    dyno(dir.path())
        .args(["run", &url])
        .args(args)
        .args(["-o", "auto"])
        .assert()
        .success();
    let c = case(&record(&dir.path().join("auto")), "https", "load").clone();
    assert_eq!(c["reps"][0]["detail"]["load"]["ok"], 2 * 5 * 100);
    let durability = c["durability"].as_str().unwrap();
    assert!(
        durability.starts_with("HTTP/2, 5 streams per connection (h2 by ALPN)"),
        "{durability}"
    );
    let plain_args = ["--requests", "100", "-c", "2", "--ca", "ca.pem", "-r", "1"];
    dyno(dir.path())
        .args(["run", &plain.url("/hello.txt")])
        .args(plain_args)
        .args(["-o", "auto-plain"])
        .assert()
        .success();
    let c = case(&record(&dir.path().join("auto-plain")), "https", "load").clone();
    assert_eq!(c["reps"][0]["detail"]["load"]["ok"], 200);
    let durability = c["durability"].as_str().unwrap();
    assert!(
        durability.starts_with("keep-alive (HTTP/1.1 by ALPN)"),
        "{durability}"
    );
    // Streams where the server picks HTTP/1.1: the case fails saying why; with version 1.1
    // they are refused before anything runs.
    let out = dyno(dir.path())
        .args(["run", &plain.url("/hello.txt"), "--streams", "5"])
        .args(plain_args)
        .args(["-o", "auto-streams"])
        .assert()
        .failure();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned()
        + &String::from_utf8_lossy(&out.get_output().stderr);
    assert!(text.contains("picked HTTP/1.1 by ALPN"), "{text}");
    let out = dyno(dir.path())
        .args([
            "run",
            &url,
            "--http-version",
            "1.1",
            "--streams",
            "5",
            "-o",
            "refused",
        ])
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("streams are HTTP/2's"), "{err}");
}
