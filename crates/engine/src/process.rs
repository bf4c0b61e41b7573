//! Starts a target's server from the plan (`[targets.NAME.process] cmd = …, ready = …`), waits
//! until it accepts connections, and stops it when the run ends.
//!
//! The command runs as `sh -c "exec CMD"`, so the PID dyno watches is the server's own (a
//! compound command is written `sh -c '…; …'`). Its
//! output goes to `NAME.process.log` in the results directory. It gets a process group of its
//! own (a Ctrl-C meant for dyno does not kill the server under a finishing case) and is sent
//! SIGTERM should dyno die first (`PR_SET_PDEATHSIG`), so no server outlives its run. Stopping is
//! SIGTERM, then SIGKILL after [`STOP_GRACE`], always by the PID dyno started.

use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server has to exit after SIGTERM before it gets SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// A server dyno started; stopped when dropped.
#[derive(Debug)]
pub struct Started {
    child: Option<Child>,
    pub pid: u32,
    pub log: PathBuf,
}

/// The last lines of a log, for an error message.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n  ")
}

/// Why a target's server could not be started; each message names the command and its log.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{path}: {error}")]
    Log {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    #[error("starting `{cmd}`: {error}")]
    Spawn { cmd: String, error: std::io::Error },
    #[error(
        "`{cmd}` exited ({status}) before accepting connections on {ready}; its log ({}) ends:\n  {tail}",
        log.display()
    )]
    Exited {
        cmd: String,
        status: std::process::ExitStatus,
        ready: SocketAddr,
        log: std::path::PathBuf,
        tail: String,
    },
    #[error(
        "`{cmd}` did not accept connections on {ready} within {}; it was stopped (its log: {}); raise ready_timeout if it needs longer",
        humantime::format_duration(*timeout),
        log.display()
    )]
    NotReady {
        cmd: String,
        ready: SocketAddr,
        timeout: Duration,
        log: std::path::PathBuf,
    },
}

/// Starts `cmd` for target `name`, logging to `log_dir/NAME.process.log`, and waits (at most
/// `timeout`) until `ready` accepts a TCP connection.
pub fn start(
    name: &str,
    cmd: &str,
    ready: SocketAddr,
    timeout: Duration,
    log_dir: &Path,
) -> Result<Started, StartError> {
    let log_error = |path: &Path| {
        let path = path.to_path_buf();
        move |error| StartError::Log { path, error }
    };
    std::fs::create_dir_all(log_dir).map_err(log_error(log_dir))?;
    let log = log_dir.join(format!("{name}.process.log"));
    let out = std::fs::File::create(&log).map_err(log_error(&log))?;
    let err = out.try_clone().map_err(log_error(&log))?;
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("exec {cmd}"))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe and touches only the child being set up.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let child = command.spawn().map_err(|error| StartError::Spawn {
        cmd: cmd.to_string(),
        error,
    })?;
    let mut started = Started {
        pid: child.id(),
        child: Some(child),
        log,
    };
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(Ok(Some(status))) = started.child.as_mut().map(|c| c.try_wait()) {
            return Err(StartError::Exited {
                cmd: cmd.to_string(),
                status,
                ready,
                tail: tail(&started.log),
                log: started.log.clone(),
            });
        }
        if TcpStream::connect_timeout(&ready, Duration::from_millis(200)).is_ok() {
            return Ok(started);
        }
        if Instant::now() >= deadline {
            let log = started.log.clone();
            drop(started);
            return Err(StartError::NotReady {
                cmd: cmd.to_string(),
                ready,
                timeout,
                log,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Started {
    /// Stops the server (SIGTERM, then SIGKILL after [`STOP_GRACE`]); returns how it ended.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        // SAFETY: signalling the process this run started, by its PID.
        unsafe { libc::kill(self.pid as i32, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        child.wait().ok()
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free_addr() -> SocketAddr {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    }

    #[test]
    fn a_command_that_exits_says_so_with_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let e = start(
            "t",
            "sh -c 'echo starting; echo no such thing >&2; exit 3'",
            free_addr(),
            Duration::from_secs(5),
            dir.path(),
        )
        .unwrap_err();
        assert!(matches!(e, StartError::Exited { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("exited (exit status: 3)"), "{e}");
        assert!(e.contains("no such thing"), "{e}");
    }

    #[test]
    fn a_server_that_never_listens_is_stopped_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let e = start(
            "t",
            "sleep 30",
            free_addr(),
            Duration::from_millis(300),
            dir.path(),
        )
        .unwrap_err();
        assert!(matches!(e, StartError::NotReady { .. }), "{e}");
        assert!(e.to_string().contains("did not accept connections"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
