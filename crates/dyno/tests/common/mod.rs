//! Helpers shared by the integration tests: running the real binary, reading its record, and
//! checking it against the JSON Schema contract.

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

/// The dyno binary, run in `cwd`, with temporary namespaces created under `cwd/tmp`.
pub fn dyno(cwd: &Path) -> Command {
    let tmp = cwd.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut c = Command::cargo_bin("dyno").unwrap();
    c.current_dir(cwd).env("TMPDIR", &tmp);
    c
}

/// Reads `dir/run.json`.
pub fn record(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("run.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Fails with every violation when `record` does not follow `dyno.run-1.schema.json`.
pub fn assert_schema_valid(record: &Value) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/schema/dyno.run-1.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema itself is valid");
    let errors: Vec<String> = v
        .iter_errors(record)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "record violates the schema:\n{}",
        errors.join("\n")
    );
}

/// The rows of the rate table: test name and one cell per target.
pub fn rate_rows(stdout: &str) -> Vec<Vec<String>> {
    let mut lines = stdout.lines().skip_while(|l| *l != "objects/s").skip(1);
    let mut rows = Vec::new();
    // Two header lines, then the rule, then the rows until a blank line.
    let _ = lines.by_ref().take_while(|l| !l.starts_with("---")).count();
    for l in lines {
        if l.trim().is_empty() {
            break;
        }
        rows.push(l.split_whitespace().map(str::to_string).collect());
    }
    rows
}

/// True for `1,234,567`, `999`, `12.5`.
pub fn is_rate(cell: &str) -> bool {
    let digits = cell.replace(',', "");
    !digits.is_empty()
        && digits.parse::<f64>().is_ok()
        && cell
            .split(',')
            .skip(1)
            .all(|g| g.len() == 3 && g.chars().all(|c| c.is_ascii_digit()))
}

/// The case of `target` and `test` in a record.
pub fn case<'a>(record: &'a Value, target: &str, test: &str) -> &'a Value {
    record["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["target"] == target && c["test"] == test)
        .unwrap_or_else(|| panic!("no case {target} {test}"))
}

/// The 13 bytes of the static file nginx serves in tests and benchmarks.
pub const HELLO: &[u8] = b"Hello, dyno!\n";

/// A private nginx on a free loopback port, in a temporary directory; stopped (by its PID) on drop.
pub struct Nginx {
    pub port: u16,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx, or returns `None` (with a notice) when it is not installed. Under
    /// `./scripts/test` (`DYNO_REQUIRE_SERVERS=1`) a missing nginx fails the test instead.
    pub fn start() -> Option<Nginx> {
        let bin = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).is_file());
        let Some(bin) = bin else {
            if std::env::var_os("DYNO_REQUIRE_SERVERS").is_some() {
                panic!(
                    "nginx is required here: ./scripts/test installs it (apt-get install nginx)"
                );
            }
            eprintln!("notice: nginx is not installed; skipping (./scripts/test installs it)");
            return None;
        };
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            std::fs::create_dir(d.join("www")).unwrap();
            std::fs::write(d.join("www/hello.txt"), HELLO).unwrap();
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let conf = format!(
                "daemon off;\nuser root;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
                 events {{ worker_connections 4096; }}\n\
                 http {{\n  access_log off;\n  keepalive_requests 10000000;\n\
                 client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
                 uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
                 server {{\n    listen 127.0.0.1:{port};\n    root {d}/www;\n    location = /missing {{ return 404; }}\n  }}\n}}\n",
                d = d.display()
            );
            std::fs::write(d.join("nginx.conf"), conf).unwrap();
            let child = std::process::Command::new(bin)
                .arg("-p")
                .arg(d)
                .arg("-c")
                .arg(d.join("nginx.conf"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("starting nginx");
            let mut n = Nginx {
                port,
                child,
                _dir: dir,
            };
            // Ready when it answers; give up on this port after 5 s.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = n.child.try_wait() {
                    break; // it exited: the port was taken; try another
                }
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(n);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            n.stop();
        }
        panic!("nginx did not start on any of 5 free ports");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn stop(&mut self) {
        // SAFETY: signalling the nginx this helper started, by its PID.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Load tests measure timing: they run one at a time, so they do not take each other's CPU
/// (the tests of one binary otherwise run in parallel on this 2-core machine).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A private redis-server on a free loopback port, in a temporary directory, with no persistence;
/// stopped (by its PID) on drop. `None` (with a notice) when Redis is not installed, unless
/// `DYNO_REQUIRE_SERVERS=1`.
pub struct Redis {
    pub port: u16,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Redis {
    pub fn start() -> Option<Redis> {
        let Some(bin) = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
            .into_iter()
            .find(|p| Path::new(p).is_file())
        else {
            if std::env::var_os("DYNO_REQUIRE_SERVERS").is_some() {
                panic!("redis-server is required here: ./scripts/test installs it");
            }
            eprintln!(
                "notice: redis-server is not installed; skipping (./scripts/test installs it)"
            );
            return None;
        };
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = std::process::Command::new(bin)
                .args([
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .arg("--dir")
                .arg(dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("starting redis-server");
            let mut r = Redis {
                port,
                child,
                _dir: dir,
            };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = r.child.try_wait() {
                    break;
                }
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(r);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r.stop();
        }
        panic!("redis-server did not start on any of 5 free ports");
    }

    fn stop(&mut self) {
        // SAFETY: signalling the redis-server this helper started, by its PID.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `dyno run --suite magma --quick --no-warmup -o OUT TARGET` in `dir`, which must succeed;
/// returns its stdout and its (schema-checked) record.
pub fn magma_quick(dir: &Path, out: &str, target: &str) -> (String, Value) {
    let a = dyno(dir)
        .args([
            "run",
            "--suite",
            "magma",
            "--quick",
            "--no-warmup",
            "-o",
            out,
            target,
        ])
        .assert()
        .success();
    let rec = record(&dir.join(out));
    assert_schema_valid(&rec);
    (
        String::from_utf8(a.get_output().stdout.clone()).unwrap(),
        rec,
    )
}

/// Every one of the magma suite's 17 cases is `ok`.
pub fn assert_magma_ok(rec: &Value) {
    let cases = rec["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 17);
    for c in cases {
        assert_eq!(c["status"], "ok", "{}: {}", c["test"], c["reason"]);
        assert!(c["summary"]["ops_per_s"]["best"].as_f64().unwrap() > 0.0);
    }
}
