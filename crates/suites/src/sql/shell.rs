//! pgbench's `\shell` and `\setshell`: a command line run by `/bin/sh -c`, waited for on the
//! client's fiber (which sleeps between looks, so the generator's other clients go on), and
//! stopped after [`LIMIT`]. Its output is read by threads of their own, so a command that
//! writes much never blocks, and one that leaves a process holding its output open is not
//! waited for past its own end.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a command may run before it is stopped (pgbench waits without end).
pub const LIMIT: Duration = Duration::from_secs(60);

/// How much of an output is kept: the first line is what is read.
const KEPT: usize = 4096;

/// Runs `line` by the shell; its output's first line (without the newline), or why it failed:
/// it could not start, it ran past [`LIMIT`], or it ended with a failing status (with the
/// first line it wrote to its error output).
pub fn run(line: &str, sleep: &mut dyn FnMut(Duration)) -> Result<String, String> {
    let mut child = Command::new("/bin/sh")
        .args(["-c", line])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start /bin/sh: {e}"))?;
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let started = Instant::now();
    let mut pause = Duration::from_micros(100);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the command ran past {} s and was stopped",
                    LIMIT.as_secs()
                ));
            }
            Ok(None) => {
                sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            }
            Err(e) => return Err(format!("could not wait for the command: {e}")),
        }
    };
    let first_line = |r: mpsc::Receiver<Vec<u8>>| {
        // Read to the first newline or the output's end. A process the command left behind
        // may hold the output open: it is not waited for long.
        let (mut bytes, until) = (Vec::new(), Instant::now() + Duration::from_millis(500));
        while !bytes.contains(&b'\n') {
            let left = until.saturating_duration_since(Instant::now());
            match r.recv_timeout(left) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(_) => break,
            }
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        text.lines().next().unwrap_or_default().to_string()
    };
    if !status.success() {
        let said = first_line(err);
        let said = if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        };
        return Err(format!("the command failed ({status}){said}"));
    }
    Ok(first_line(out))
}

/// A thread reading `pipe` to its end: the first [`KEPT`] bytes come on the channel as they
/// are read, the rest is drained.
fn reader(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let (mut sent, mut buf) = (0, [0u8; 4096]);
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                let keep = n.min(KEPT - sent);
                if keep > 0 && tx.send(buf[..keep].to_vec()).is_ok() {
                    sent += keep;
                }
            }
        });
    }
    rx
}

/// The integer `\setshell` stores: the line as C's `strtol` reads a whole one (blanks around
/// it allowed), or why not.
pub fn integer(line: &str) -> Result<i64, String> {
    (line.trim().parse::<i64>()).map_err(|_| {
        format!("\\setshell: the command must print a whole number, it printed {line:?}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleep(d: Duration) {
        std::thread::sleep(d)
    }

    #[test]
    fn a_command_gives_its_first_line_or_says_why_it_failed() {
        assert_eq!(run("echo 42; echo 7", &mut sleep).unwrap(), "42");
        assert_eq!(run("printf ' -3 '", &mut sleep).unwrap(), " -3 ");
        assert_eq!(integer(" -3 "), Ok(-3));
        assert!(integer("3x").unwrap_err().contains("printed \"3x\""));
        assert!(integer("").is_err());
        let e = run("echo oops >&2; exit 3", &mut sleep).unwrap_err();
        assert!(e.contains("exit status: 3") && e.ends_with(": oops"), "{e}");
        // Much output is read, not blocked on; the first line still comes.
        let many = run("echo 1; seq 1 200000", &mut sleep).unwrap();
        assert_eq!(many, "1");
        // A process left behind holding the output does not hold the client.
        let t = Instant::now();
        assert_eq!(run("echo 5; sleep 8 &", &mut sleep).unwrap(), "5");
        assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    }
}
