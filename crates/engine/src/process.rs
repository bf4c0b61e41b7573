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

/// A server dyno started; stopped when dropped. It can be signalled, stopped and started again
/// (the fault plans do), always checking first that its PID is still the process dyno started.
#[derive(Debug)]
pub struct Started {
    child: Option<Child>,
    pub pid: u32,
    pub log: PathBuf,
    /// The process's start time (`/proc/PID/stat` field 22): a PID reused by another process
    /// has another.
    start_time: Option<u64>,
    cmd: String,
    ready: SocketAddr,
    ready_timeout: Duration,
}

/// Why a process was not signalled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotOurs {
    #[error("PID {0} has exited: there is no process of dyno's to signal")]
    Exited(u32),
    #[error(
        "PID {0} is no longer the process dyno started (its start time differs): not signalled"
    )]
    Reused(u32),
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
    std::fs::create_dir_all(log_dir).map_err(log_error(log_dir))?;
    let mut started = Started {
        child: None,
        pid: 0,
        log: log_dir.join(format!("{name}.process.log")),
        start_time: None,
        cmd: cmd.to_string(),
        ready,
        ready_timeout: timeout,
    };
    started.spawn(false)?;
    Ok(started)
}

fn log_error(path: &Path) -> impl FnOnce(std::io::Error) -> StartError {
    let path = path.to_path_buf();
    move |error| StartError::Log { path, error }
}

impl Started {
    /// Runs the command (its output appended to the log when `again`) and waits until it
    /// accepts connections; stops it and says why when it does not.
    fn spawn(&mut self, again: bool) -> Result<(), StartError> {
        let log = &self.log;
        let out = (std::fs::OpenOptions::new()
            .create(true)
            .append(again)
            .write(true))
        .truncate(!again)
        .open(log)
        .map_err(log_error(log))?;
        let err = out.try_clone().map_err(log_error(log))?;
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("exec {}", self.cmd))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        // The child gets SIGTERM when dyno dies — or when the *thread* that started it ends (the
        // parent-death signal is a thread's): whoever starts a process keeps its thread alive
        // as long as the process should live (the runner's thread; the nemesis' until its
        // stage ends).
        // SAFETY: prctl is async-signal-safe and touches only the child being set up.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let child = command.spawn().map_err(|error| StartError::Spawn {
            cmd: self.cmd.clone(),
            error,
        })?;
        self.pid = child.id();
        self.start_time = crate::monitor::start_time(self.pid);
        self.child = Some(child);
        let deadline = Instant::now() + self.ready_timeout;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                self.child = None;
                return Err(StartError::Exited {
                    cmd: self.cmd.clone(),
                    status,
                    ready: self.ready,
                    tail: tail(&self.log),
                    log: self.log.clone(),
                });
            }
            if TcpStream::connect_timeout(&self.ready, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.stop();
                return Err(StartError::NotReady {
                    cmd: self.cmd.clone(),
                    ready: self.ready,
                    timeout: self.ready_timeout,
                    log: self.log.clone(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `signal` to the process, if it is still the one dyno started: not exited (its PID
    /// not reaped, so not reusable) and with the start time it had.
    pub fn signal(&mut self, signal: i32) -> Result<(), NotOurs> {
        let child = self.child.as_mut().ok_or(NotOurs::Exited(self.pid))?;
        if !matches!(child.try_wait(), Ok(None)) {
            return Err(NotOurs::Exited(self.pid));
        }
        if crate::monitor::start_time(self.pid) != self.start_time {
            return Err(NotOurs::Reused(self.pid));
        }
        // SAFETY: signalling the process this run started, by its PID, checked just above.
        unsafe { libc::kill(self.pid as i32, signal) };
        Ok(())
    }

    /// SIGKILL, and waits for the process to be gone.
    pub fn kill(&mut self) -> Result<(), NotOurs> {
        self.signal(libc::SIGKILL)?;
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        Ok(())
    }

    /// Starts the command again, after the process ended; waits until it accepts connections.
    pub fn start_again(&mut self) -> Result<(), StartError> {
        self.stop();
        self.spawn(true)
    }

    /// Whether a process of dyno's is running.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Stops the server (SIGTERM, then SIGKILL after [`STOP_GRACE`]); returns how it ended. A
    /// stopped (paused) server is continued first, or it could not act on SIGTERM.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        // SAFETY: signalling the process this run started (not reaped: its PID is still ours).
        unsafe {
            libc::kill(self.pid as i32, libc::SIGCONT);
            libc::kill(self.pid as i32, libc::SIGTERM);
        }
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

    #[test]
    fn a_process_is_signalled_only_while_it_is_the_one_dyno_started() {
        let child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let mut p = Started {
            pid,
            start_time: crate::monitor::start_time(pid).map(|t| t + 1),
            child: Some(child),
            log: PathBuf::new(),
            cmd: "sleep 30".into(),
            ready: free_addr(),
            ready_timeout: Duration::from_secs(1),
        };
        // Another start time: another process behind the same PID. Not signalled.
        assert_eq!(p.signal(libc::SIGKILL), Err(NotOurs::Reused(pid)));
        assert!(p.running(), "the process was not touched");
        p.start_time = crate::monitor::start_time(pid);
        assert_eq!(p.kill(), Ok(()));
        assert!(!p.running());
        // Once reaped, its PID is no longer dyno's to signal.
        assert_eq!(p.signal(libc::SIGKILL), Err(NotOurs::Exited(pid)));
    }
}
