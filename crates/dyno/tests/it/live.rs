//! Live feedback: status lines per interval, silence when piped or `--quiet`, and Prometheus
//! metrics scraped while a run goes.

use crate::common::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const DYNO: &str = env!("CARGO_BIN_EXE_dyno");

fn get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn status_lines_one_per_interval_and_silence_when_asked() {
        let _g = serial();
        let s = RefServer::start();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{}/", s.port);
        let run = |extra: &[&str]| {
            let o = dyno(dir.path())
                .args([
                    "run",
                    &url,
                    "--rate",
                    "100",
                    "--duration",
                    "3s",
                    "-r",
                    "1",
                    "-o",
                    "out",
                ])
                .args(extra)
                .output()
                .unwrap();
            assert!(o.status.success());
            String::from_utf8_lossy(&o.stderr).to_string()
        };
        let lines = run(&["--progress", "lines"]);
        let status: Vec<&str> = lines
            .lines()
            .filter(|l| l.contains("resp/s, p50"))
            .collect();
        assert!(status.len() >= 2 && status.len() <= 3, "{lines}");
        assert!(
            status[0].starts_with("dyno: [     1s/3s] http load: 100 resp/s"),
            "{lines}"
        );
        // Each repetition (here the warm-up, then the measured one) prints its own intervals.
        let twice = run(&["--progress", "lines", "--warmup"]);
        let firsts = twice
            .lines()
            .filter(|l| l.starts_with("dyno: [     1s/3s] http load:"))
            .count();
        assert_eq!(firsts, 2, "{twice}");
        // Piped stdout: no progress by default; --quiet: not even the informational lines.
        let auto = run(&[]);
        assert!(!auto.contains("resp/s") && !auto.contains('\r'), "{auto}");
        assert!(auto.contains("dyno: record written to"));
        let quiet = run(&["--quiet"]);
        assert!(quiet.is_empty(), "{quiet}");
        let o = dyno(dir.path())
            .args(["run", &url, "--progress", "loud"])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains("--progress: unknown progress mode \"loud\""),
            "{e}"
        );
    }

    #[test]
    fn prometheus_metrics_are_served_while_the_run_goes() {
        let _g = serial();
        let s = RefServer::start();
        let dir = tempfile::tempdir().unwrap();
        let port = testkit::free_port();
        let mut child = std::process::Command::new(DYNO)
            .current_dir(dir.path())
            .args(["run", &format!("http://127.0.0.1:{}/", s.port)])
            .args(["--rate", "200", "--duration", "5s", "-r", "1", "-o", "out"])
            .args(["--metrics-addr", &format!("127.0.0.1:{port}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let scrape = || {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                if let Some(r) = get(port, "/metrics")
                    && metric(&r, "dyno_responses_total").is_some()
                {
                    return r;
                }
                assert!(Instant::now() < deadline, "no metrics served");
                std::thread::sleep(Duration::from_millis(100));
            }
        };
        std::thread::sleep(Duration::from_millis(1500));
        let first = scrape();
        std::thread::sleep(Duration::from_millis(1200));
        let second = scrape();
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
        assert!(first.contains("Content-Type: text/plain; version=0.0.4"));
        let a = metric(
            &first,
            "dyno_responses_total{target=\"http\",test=\"load\"}",
        )
        .unwrap();
        let b = metric(
            &second,
            "dyno_responses_total{target=\"http\",test=\"load\"}",
        )
        .unwrap();
        assert!(a >= 150.0 && b > a + 100.0, "{a} then {b}");
        for needle in [
            "# TYPE dyno_latency_seconds summary",
            "dyno_latency_seconds{target=\"http\",test=\"load\",quantile=\"0.99\"}",
            "dyno_errors_total{target=\"http\",test=\"load\",class=\"refused\"} 0",
            "# TYPE dyno_interval_responses_per_second gauge",
            "dyno_cases 1",
        ] {
            assert!(second.contains(needle), "missing {needle}:\n{second}");
        }
        let p99 = metric(
            &second,
            "dyno_latency_seconds{target=\"http\",test=\"load\",quantile=\"0.99\"}",
        )
        .unwrap();
        assert!(p99 > 0.0 && p99 < 1.0, "{p99}");
        let rate = metric(&second, "dyno_interval_responses_per_second").unwrap();
        assert!((150.0..=250.0).contains(&rate), "{rate}");
        assert!(get(port, "/other").unwrap().starts_with("HTTP/1.1 404"));
        assert!(child.wait().unwrap().success());
        // Gone with the run.
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    }
}
