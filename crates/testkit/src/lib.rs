//! Real servers for dyno's tests (never mocks): nginx, Redis and PostgreSQL, each a private
//! instance on a free loopback port, in a temporary directory, stopped by its PID when dropped.
//!
//! A server that is not installed makes `start` return `None` with a printed notice, so a bare
//! `cargo test` skips what needs it; under `./scripts/test` (which installs the servers and sets
//! `DYNO_REQUIRE_SERVERS=1`) it fails the test instead.
//!
//! [`browser`] drives a headless Chromium the same way, for the HTML report.

pub mod browser;
pub mod mariadb;
pub mod tsdb;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The 13 bytes of the static file nginx serves in tests and benchmarks.
pub const HELLO: &[u8] = b"Hello, dyno!\n";

/// The first of `candidates` that exists, or `None` with a notice (a panic under
/// `DYNO_REQUIRE_SERVERS`, which `./scripts/test` sets once it installed the servers).
pub fn installed(what: &str, candidates: &[&str]) -> Option<PathBuf> {
    if let Some(p) = candidates.iter().map(PathBuf::from).find(|p| p.is_file()) {
        return Some(p);
    }
    if std::env::var_os("DYNO_REQUIRE_SERVERS").is_some() {
        panic!("{what} is required here: ./scripts/test installs it");
    }
    eprintln!("notice: {what} is not installed; skipping (./scripts/test installs it)");
    None
}

/// A free loopback port (free when asked: a server that loses it to another process exits, and
/// its starter tries again).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("binding a loopback port")
        .port()
}

/// A server process this kit started, and its directory.
struct Running {
    child: Child,
    stop_signal: i32,
    _dir: tempfile::TempDir,
}

impl Running {
    /// Waits (at most `limit`) until `ready()`; `false` when the process exited or time ran out.
    fn ready(&mut self, limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if ready() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // SAFETY: signalling the server this kit started, by its PID.
        unsafe { libc::kill(self.child.id() as i32, self.stop_signal) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server stopped by SIGTERM, once it accepts connections on `port` (within 5 s).
fn accepting(child: Child, dir: tempfile::TempDir, port: u16) -> Option<Running> {
    let mut r = Running {
        child,
        stop_signal: libc::SIGTERM,
        _dir: dir,
    };
    let accepts = || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
    r.ready(Duration::from_secs(5), accepts).then_some(r)
}

/// Starts a server up to five times on fresh ports (another process may take a free port first).
fn on_a_free_port(what: &str, mut start: impl FnMut(u16) -> Option<Running>) -> (u16, Running) {
    for _ in 0..5 {
        let port = free_port();
        if let Some(r) = start(port) {
            return (port, r);
        }
    }
    panic!("{what} did not start on any of 5 free ports");
}

fn quiet(bin: &Path) -> Command {
    let mut c = Command::new(bin);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    c
}

/// The token the logged nginx's `/login` hands out, and its `/account/` asks for.
pub const SHOP_TOKEN: &str = "s3cret-7";

const SHOP: &str = "    location / { return 200 \"ok\\n\"; }\n\
    location = /login { default_type application/json; return 200 '{\"token\": \"s3cret-7\"}'; }\n\
    location /account/ {\n\
      if ($http_authorization != \"Bearer s3cret-7\") { return 401 \"no token\\n\"; }\n\
      default_type application/json; return 200 '{\"ok\": true}';\n\
    }\n";

/// A private nginx serving [`HELLO`] at `/hello.txt` and a 404 at `/missing`.
pub struct Nginx {
    pub port: u16,
    scheme: &'static str,
    /// [`Nginx::start_logged`]: its access log.
    log: Option<std::path::PathBuf>,
    _server: Running,
}

impl Nginx {
    pub fn start() -> Option<Nginx> {
        Nginx::start_with(None, None, false)
    }

    /// nginx answering 200 (`ok`) to every request but `/missing`, and writing each request's
    /// method and URI to its access log ([`Nginx::requests`]): what a load really sent. It is
    /// also a tiny shop: `/login` answers `{"token": "s3cret-7"}` ([`SHOP_TOKEN`]), and
    /// `/account/…` answers `{"ok": true}` with `Authorization: Bearer s3cret-7`, else 401.
    pub fn start_logged() -> Option<Nginx> {
        Nginx::start_with(None, None, true)
    }

    /// [`Nginx::start_logged`]: every request logged so far, as `METHOD URI`.
    pub fn requests(&self) -> Vec<String> {
        let log = self.log.as_ref().expect("nginx was started with its log");
        let text = std::fs::read_to_string(log).unwrap_or_default();
        text.lines().map(str::to_string).collect()
    }

    /// nginx serving TLS with this certificate chain and key (PEM), e.g. made by rcgen.
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> Option<Nginx> {
        Nginx::start_with(Some((cert_pem, key_pem)), None, false)
    }

    /// nginx speaking HTTP/2 in the clear (`h2c://`), closing each connection with GOAWAY after
    /// `requests` requests, and at most `streams` streams at once on each.
    pub fn start_h2c(requests: u64, streams: u32) -> Option<Nginx> {
        Nginx::start_with(None, Some((requests, streams)), false)
    }

    /// nginx speaking HTTP/2 over TLS (agreed on by ALPN) and HTTP/1.1, with this certificate.
    pub fn start_tls_h2(cert_pem: &str, key_pem: &str) -> Option<Nginx> {
        Nginx::start_with(Some((cert_pem, key_pem)), Some((10_000_000, 128)), false)
    }

    fn start_with(
        tls: Option<(&str, &str)>,
        h2: Option<(u64, u32)>,
        logged: bool,
    ) -> Option<Nginx> {
        let bin = installed("nginx", &["/usr/sbin/nginx", "/usr/bin/nginx"])?;
        let mut log = None;
        let (port, server) = on_a_free_port("nginx", |port| {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let mut http = "  access_log off;\n".to_string();
            if logged {
                log = Some(d.join("access.log"));
                http = format!(
                    "  log_format requests '$request_method $request_uri';\n  access_log {}/access.log requests;\n",
                    d.display()
                );
            }
            std::fs::create_dir(d.join("www")).unwrap();
            std::fs::write(d.join("www/hello.txt"), HELLO).unwrap();
            // The listen directive's flags, then the server's other directives.
            let mut flags = String::new();
            let mut more = String::new();
            if let Some((cert, key)) = tls {
                std::fs::write(d.join("cert.pem"), cert).unwrap();
                std::fs::write(d.join("key.pem"), key).unwrap();
                flags.push_str(" ssl");
                more.push_str(&format!(
                    "    ssl_certificate {d}/cert.pem;\n    ssl_certificate_key {d}/key.pem;\n",
                    d = d.display()
                ));
            }
            let mut requests = 10_000_000;
            if let Some((per_connection, streams)) = h2 {
                requests = per_connection;
                flags.push_str(" http2");
                more.push_str(&format!("    http2_max_concurrent_streams {streams};\n"));
            }
            if logged {
                more.push_str(SHOP);
            }
            let conf = format!(
                "daemon off;\nuser root;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
                 events {{ worker_connections 4096; }}\n\
                 http {{\n{http}  keepalive_requests {requests};\n\
                 client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
                 uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
                 server {{\n    listen 127.0.0.1:{port}{flags};\n{more}    root {d}/www;\n    location = /missing {{ return 404; }}\n  }}\n}}\n",
                d = d.display()
            );
            std::fs::write(d.join("nginx.conf"), conf).unwrap();
            let child = quiet(&bin)
                .arg("-p")
                .arg(d)
                .arg("-c")
                .arg(d.join("nginx.conf"))
                .spawn()
                .expect("starting nginx");
            accepting(child, dir, port)
        });
        let scheme = match (tls, h2) {
            (Some(_), _) => "https",
            (None, Some(_)) => "h2c",
            (None, None) => "http",
        };
        Some(Nginx {
            port,
            scheme,
            log,
            _server: server,
        })
    }

    /// The master process's PID (its worker is its child).
    pub fn pid(&self) -> u32 {
        self._server.child.id()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}://127.0.0.1:{}{path}", self.scheme, self.port)
    }
}

/// A private redis-server with no persistence.
pub struct Redis {
    pub port: u16,
    _server: Running,
}

impl Redis {
    pub fn start() -> Option<Redis> {
        let bin = installed(
            "redis-server",
            &["/usr/bin/redis-server", "/usr/local/bin/redis-server"],
        )?;
        let (port, server) = on_a_free_port("redis-server", |port| {
            let dir = tempfile::tempdir().unwrap();
            let child = quiet(&bin)
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(dir.path())
                .spawn()
                .expect("starting redis-server");
            accepting(child, dir, port)
        });
        Some(Redis {
            port,
            _server: server,
        })
    }
}

/// A private single-member etcd (its gRPC API, and the JSON gateway on the same port), its
/// data in a temporary directory.
pub struct Etcd {
    pub port: u16,
    _server: Running,
}

impl Etcd {
    pub fn start() -> Option<Etcd> {
        let bin = installed("etcd", &["/usr/bin/etcd", "/usr/local/bin/etcd"])?;
        let (port, server) = on_a_free_port("etcd", |port| {
            let dir = tempfile::tempdir().unwrap();
            let client = format!("http://127.0.0.1:{port}");
            let peer = format!("http://127.0.0.1:{}", free_port());
            let child = quiet(&bin)
                .args(["--name", "dyno", "--data-dir"])
                .arg(dir.path().join("data"))
                .args(["--listen-client-urls", &client])
                .args(["--advertise-client-urls", &client])
                .args(["--listen-peer-urls", &peer])
                .args(["--initial-advertise-peer-urls", &peer])
                .args(["--initial-cluster", &format!("dyno={peer}")])
                .args(["--listen-metrics-urls", ""])
                .spawn()
                .expect("starting etcd");
            let mut r = Running {
                child,
                stop_signal: libc::SIGTERM,
                _dir: dir,
            };
            // Ready once it has a leader: its gateway answers a status.
            let ready = || {
                use std::io::{Read, Write};
                let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                    return false;
                };
                let _ = c.set_read_timeout(Some(Duration::from_secs(1)));
                let ask = "POST /v3/maintenance/status HTTP/1.1\r\nHost: etcd\r\n\
                    Content-Length: 2\r\nConnection: close\r\n\r\n{}";
                let mut answer = Vec::new();
                c.write_all(ask.as_bytes()).is_ok()
                    && c.read_to_end(&mut answer).is_ok()
                    && answer.windows(8).any(|w| w == b"\"leader\"")
            };
            r.ready(Duration::from_secs(10), ready).then_some(r)
        });
        Some(Etcd {
            port,
            _server: server,
        })
    }
}

/// A real gRPC server: grpcio's C core in Python (`grpc/echo_server.py`, its packages pinned in
/// `grpc/.venv`, which `./scripts/test` makes) serving `examples/grpc/echo.proto`'s Echo with
/// the reflection service on.
pub struct GrpcEcho {
    pub port: u16,
    _server: Running,
}

impl GrpcEcho {
    pub fn start() -> Option<GrpcEcho> {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let python = here.join("grpc/.venv/bin/python");
        let python = installed(
            "the gRPC test server's packages (crates/testkit/grpc/setup.sh)",
            &[python.to_str()?],
        )?;
        let proto = here.join("../../examples/grpc/echo.proto");
        let (port, server) = on_a_free_port("the gRPC test server", |port| {
            let dir = tempfile::tempdir().unwrap();
            let child = quiet(&python)
                .arg(here.join("grpc/echo_server.py"))
                .arg(&proto)
                .arg(port.to_string())
                .env("TMPDIR", dir.path())
                .spawn()
                .expect("starting the gRPC test server");
            let mut r = Running {
                child,
                stop_signal: libc::SIGTERM,
                _dir: dir,
            };
            // It compiles the .proto file before it listens.
            let accepts = || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
            r.ready(Duration::from_secs(20), accepts).then_some(r)
        });
        Some(GrpcEcho {
            port,
            _server: server,
        })
    }
}

/// A private PostgreSQL: `initdb` in a temporary directory (user `dyno`, trust authentication on
/// loopback only, but for the users `dyno_password`, `dyno_md5` and `dyno_scram`, who log in by
/// password with the method their name says, once a test has made them), then `postgres` on a free port; run as the `postgres` user when the tests run
/// as root (PostgreSQL refuses to run as root). Stopped with SIGINT (a fast shutdown).
pub struct Postgres {
    pub port: u16,
    _server: Running,
}

/// The newest installed PostgreSQL's `postgres`.
fn postgres_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin/postgres");
            bin.is_file().then_some((v, bin))
        })
        .collect();
    found.sort();
    let newest = found.pop().map(|(_, b)| b.display().to_string());
    installed("PostgreSQL", &[newest.as_deref().unwrap_or("")])
}

/// The uid and gid to run PostgreSQL as: `postgres` when we are root, else ourselves.
fn run_as() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = std::ffi::CString::new("postgres").expect("no NUL");
    // SAFETY: getpwnam with a valid C string; the result is read at once, before another call.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(
        !pw.is_null(),
        "running as root, and there is no postgres user to run PostgreSQL as"
    );
    // SAFETY: pw is non-null and points to the passwd entry just returned.
    Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

fn as_user(bin: &Path, user: Option<(u32, u32)>) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = quiet(bin);
    c.env("LC_ALL", "C");
    if let Some((uid, gid)) = user {
        c.uid(uid).gid(gid);
    }
    c
}

impl Postgres {
    pub fn start() -> Option<Postgres> {
        let postgres = postgres_bin()?;
        let bin = postgres.parent().expect("a bin directory");
        let user = run_as();
        let (port, server) = on_a_free_port("postgres", |port| {
            let dir = tempfile::tempdir().expect("a temporary directory");
            if let Some((uid, gid)) = user {
                std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown");
            }
            let data = dir.path().join("data");
            let ok = as_user(&bin.join("initdb"), user)
                .arg("-D")
                .arg(&data)
                .args(["-U", "dyno", "--auth=trust", "-E", "UTF8", "--no-sync"])
                .status()
                .expect("running initdb");
            assert!(ok.success(), "initdb failed: {ok}");
            // Users a test may make to log in by password: one per method dyno speaks.
            let hba = "host all dyno_password 127.0.0.1/32 password\n\
                       host all dyno_md5 127.0.0.1/32 md5\n\
                       host all dyno_scram 127.0.0.1/32 scram-sha-256\n\
                       host all all 127.0.0.1/32 trust\nlocal all all trust\n";
            std::fs::write(data.join("pg_hba.conf"), hba).expect("writing pg_hba.conf");
            let child = as_user(&postgres, user)
                .arg("-D")
                .arg(&data)
                .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
                .arg("-k")
                .arg(dir.path())
                .spawn()
                .expect("starting postgres");
            let mut r = Running {
                child,
                stop_signal: libc::SIGINT,
                _dir: dir,
            };
            // Accepting a connection is not enough: it must also have finished starting up.
            let ready = || {
                quiet(&bin.join("pg_isready"))
                    .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
                    .status()
                    .is_ok_and(|s| s.success())
            };
            r.ready(Duration::from_secs(30), ready).then_some(r)
        });
        Some(Postgres {
            port,
            _server: server,
        })
    }

    /// The URL dyno reaches this server by.
    pub fn url(&self) -> String {
        format!("postgres://dyno@127.0.0.1:{}/postgres", self.port)
    }
}

/// A test server's accept, bounded: the connection that came within `within`, or a panic
/// saying none did (a test fails rather than hangs).
pub fn accept_within(
    l: &std::net::TcpListener,
    within: std::time::Duration,
) -> std::net::TcpStream {
    l.set_nonblocking(true).unwrap();
    let deadline = std::time::Instant::now() + within;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).unwrap();
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "no connection came within {within:?}"
                );
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}
