//! Private time-series databases for the tests of `--push`: Prometheus with its remote-write
//! receiver on, and InfluxDB 1.x, each from the distribution's package, on free loopback ports,
//! its data in a temporary directory; and their query APIs, asked over plain HTTP/1.1.

use crate::{Running, installed, on_a_free_port, quiet};
use serde_json::Value;
use std::io::{Read, Write};
use std::time::Duration;

/// One GET (or POST with `body`) on 127.0.0.1:`port`: the status and the body.
fn ask(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let body = match head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        true => unchunk(body),
        false => body.to_string(),
    };
    Some((status, body))
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// `s` with what a query string may not hold percent-encoded.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A private Prometheus that takes remote writes.
pub struct Prometheus {
    pub port: u16,
    _server: Running,
}

impl Prometheus {
    pub fn start() -> Option<Prometheus> {
        let bin = installed("prometheus", &["/usr/bin/prometheus"])?;
        let (port, server) = on_a_free_port("prometheus", |port| {
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("prometheus.yml");
            std::fs::write(&config, "global: {}\nscrape_configs: []\n").unwrap();
            let child = quiet(&bin)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--web.enable-remote-write-receiver")
                .spawn()
                .expect("starting prometheus");
            let mut r = Running {
                child,
                stop_signal: libc::SIGTERM,
                _dir: dir,
            };
            let ready = || ask(port, "GET", "/-/ready", "").is_some_and(|(s, _)| s == 200);
            r.ready(Duration::from_secs(30), ready).then_some(r)
        });
        Some(Prometheus {
            port,
            _server: server,
        })
    }

    /// The result of an instant PromQL query at `time` (Unix seconds): `data.result`.
    pub fn query(&self, promql: &str, time: f64) -> Value {
        let path = format!("/api/v1/query?query={}&time={time}", encode(promql));
        let (status, body) = ask(self.port, "GET", &path, "").expect("prometheus answers");
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"].clone()
    }
}

/// A private InfluxDB 1.x with database `dyno`.
pub struct Influx {
    pub port: u16,
    _server: Running,
}

impl Influx {
    pub fn start() -> Option<Influx> {
        let bin = installed("influxd", &["/usr/bin/influxd"])?;
        let (port, server) = on_a_free_port("influxd", |port| {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path().display();
            let config = dir.path().join("influxdb.conf");
            std::fs::write(
                &config,
                format!(
                    "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n\
                     [meta]\n  dir = \"{d}/meta\"\n\
                     [data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n  query-log-enabled = false\n\
                     [http]\n  bind-address = \"127.0.0.1:{port}\"\n  log-enabled = false\n\
                     [monitor]\n  store-enabled = false\n",
                    rpc = crate::free_port()
                ),
            )
            .unwrap();
            let child = quiet(&bin)
                .arg("-config")
                .arg(&config)
                .spawn()
                .expect("starting influxd");
            let mut r = Running {
                child,
                stop_signal: libc::SIGTERM,
                _dir: dir,
            };
            let ready = || ask(port, "GET", "/ping", "").is_some_and(|(s, _)| s == 204);
            r.ready(Duration::from_secs(30), ready).then_some(r)
        });
        let db = Influx {
            port,
            _server: server,
        };
        let (status, body) =
            ask(port, "POST", "/query", "q=CREATE%20DATABASE%20dyno").expect("influxd answers");
        assert_eq!(status, 200, "{body}");
        Some(db)
    }

    /// An InfluxQL query on database `dyno`: its first series (`results[0].series[0]`).
    pub fn query(&self, influxql: &str) -> Value {
        let path = format!("/query?db=dyno&epoch=ms&q={}", encode(influxql));
        let (status, body) = ask(self.port, "GET", &path, "").expect("influxd answers");
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["results"][0]["series"][0].clone()
    }
}
