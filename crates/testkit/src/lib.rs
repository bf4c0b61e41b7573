//! Real servers for dyno's tests (never mocks): each a private instance on a free loopback port,
//! in a temporary directory, stopped by its PID when dropped.
//!
//! A server that is not installed makes `start` return `None` with a printed notice, so a bare
//! `cargo test` skips what needs it; under `./scripts/test` (which installs the servers and sets
//! `DYNO_REQUIRE_SERVERS=1`) it fails the test instead.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `None` with a notice, or a panic under `DYNO_REQUIRE_SERVERS`.
fn missing<T>(what: &str) -> Option<T> {
    if std::env::var_os("DYNO_REQUIRE_SERVERS").is_some() {
        panic!("{what} is required here: ./scripts/test installs it");
    }
    eprintln!("notice: {what} is not installed; skipping (./scripts/test installs it)");
    None
}

/// A free loopback port (free when asked; the caller retries if another process takes it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("binding a loopback port")
        .port()
}

/// A private PostgreSQL: `initdb` in a temporary directory (user `dyno`, trust authentication on
/// loopback only), then `postgres` on a free port. Run as the `postgres` user when the tests run
/// as root (PostgreSQL refuses to run as root).
pub struct Postgres {
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

/// The newest installed PostgreSQL's bin directory.
fn postgres_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
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

fn command(bin: &Path, user: Option<(u32, u32)>) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(bin);
    c.env("LC_ALL", "C")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some((uid, gid)) = user {
        c.uid(uid).gid(gid);
    }
    c
}

impl Postgres {
    pub fn start() -> Option<Postgres> {
        let Some(bin) = postgres_bin() else {
            return missing("PostgreSQL");
        };
        let user = run_as();
        let dir = tempfile::tempdir().expect("a temporary directory");
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown");
        }
        let data = dir.path().join("data");
        let ok = command(&bin.join("initdb"), user)
            .arg("-D")
            .arg(&data)
            .args(["-U", "dyno", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .status()
            .expect("running initdb");
        assert!(ok.success(), "initdb failed: {ok}");
        let port = free_port();
        let child = command(&bin.join("postgres"), user)
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .arg("-k")
            .arg(dir.path())
            .spawn()
            .expect("starting postgres");
        let mut pg = Postgres {
            port,
            child,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = pg.child.try_wait() {
                panic!("postgres exited at start ({status}); was port {port} taken?");
            }
            let ready = command(&bin.join("pg_isready"), None)
                .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Some(pg);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("postgres did not become ready within 30 s");
    }

    /// The URL dyno reaches this server by.
    pub fn url(&self) -> String {
        format!("postgres://dyno@127.0.0.1:{}/postgres", self.port)
    }

    fn stop(&mut self) {
        // SAFETY: signalling the postgres this helper started, by its PID (SIGINT: fast shutdown).
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
