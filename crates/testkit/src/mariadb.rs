//! A private MariaDB (the distribution's 10.11): `mariadb-install-db` in a temporary directory,
//! then `mariadbd` on a free loopback port with its socket there, and a user `dyno` (password
//! `secret`, `mysql_native_password`) with every privilege. Stopped with SIGTERM.

use crate::{Running, installed, on_a_free_port, quiet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub struct MariaDb {
    pub port: u16,
    socket: PathBuf,
    client: PathBuf,
    _server: Running,
}

impl MariaDb {
    pub fn start() -> Option<MariaDb> {
        let server = installed("MariaDB", &["/usr/sbin/mariadbd"])?;
        let install = installed("mariadb-install-db", &["/usr/bin/mariadb-install-db"])?;
        let client = installed("the mariadb client", &["/usr/bin/mariadb"])?;
        let mut socket = PathBuf::new();
        let (port, running) = on_a_free_port("mariadb", |port| {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let data = dir.path().join("data");
            // Its temporary tables in a directory of its own: in a shared /tmp two installs at
            // once fail now and then ("Could not remove temporary table '/tmp/#sql-temptable…'",
            // 2 of 12 side by side on 2026-11-29; none of 18 with a directory each). Its output
            // kept for the message, should it fail all the same.
            let out = Command::new(&install)
                .env("TMPDIR", dir.path())
                .args(["--no-defaults", "--auth-root-authentication-method=normal"])
                .args(["--skip-test-db", "--user=root"])
                .arg(format!("--datadir={}", data.display()))
                .output()
                .expect("running mariadb-install-db");
            assert!(
                out.status.success(),
                "mariadb-install-db failed ({}): {}{}",
                out.status,
                tail(&out.stdout),
                tail(&out.stderr)
            );
            socket = dir.path().join("mariadb.sock");
            let child = quiet(&server)
                .arg("--no-defaults")
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--tmpdir={}", dir.path().display()))
                .arg(format!("--pid-file={}", dir.path().join("pid").display()))
                .arg(format!(
                    "--log-error={}",
                    dir.path().join("error.log").display()
                ))
                .args([
                    "--user=root",
                    "--bind-address=127.0.0.1",
                    "--skip-name-resolve",
                ])
                .args([
                    "--innodb-buffer-pool-size=64M",
                    "--innodb-log-file-size=16M",
                ])
                .arg(format!("--port={port}"))
                .spawn()
                .expect("starting mariadbd");
            let mut r = Running {
                child,
                stop_signal: libc::SIGTERM,
                _dir: dir,
            };
            let ready = || root_sql(&client, &socket, "SELECT 1").is_some();
            r.ready(Duration::from_secs(30), ready).then_some(r)
        });
        let db = MariaDb {
            port,
            socket,
            client,
            _server: running,
        };
        db.sql(
            "CREATE USER dyno@'127.0.0.1' IDENTIFIED BY 'secret'; \
             GRANT ALL ON *.* TO dyno@'127.0.0.1'",
        );
        Some(db)
    }

    /// The URL dyno reaches this server by.
    pub fn url(&self) -> String {
        format!("mysql://dyno:secret@127.0.0.1:{}", self.port)
    }

    /// Runs `sql` as root over the socket; what it printed (tab-separated, no headers).
    pub fn sql(&self, sql: &str) -> String {
        root_sql(&self.client, &self.socket, sql).unwrap_or_else(|| panic!("mariadb: {sql} failed"))
    }
}

/// The last lines of a program's output.
fn tail(out: &[u8]) -> String {
    let text = String::from_utf8_lossy(out);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

fn root_sql(client: &Path, socket: &Path, sql: &str) -> Option<String> {
    let out = Command::new(client)
        .arg("--no-defaults")
        .arg(format!("--socket={}", socket.display()))
        .args(["-u", "root", "-N", "-B", "-e", sql])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
