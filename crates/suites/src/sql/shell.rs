//! pgbench's `\shell` and `\setshell`: a command line run by `/bin/sh -c` in a process group
//! of its own, waited for on the client's fiber (which sleeps between looks, so the
//! generator's other clients go on), and stopped, with everything it started, after [`LIMIT`].
//! Its output is read by threads of their own, so a command that writes much never blocks,
//! and one that leaves a process holding its output open is not waited for past its own end.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a command may run before it is stopped (pgbench waits without end).
pub const LIMIT: Duration = Duration::from_secs(60);

/// How much of an output is kept: the first line is what is read.
const KEPT: usize = 4096;

/// What a command did: the first line it printed, and how it ended.
pub struct Ran {
    pub first_line: String,
    /// `None` when it succeeded; else its status and the first line of its error output.
    pub failed: Option<String>,
}

/// Runs `line` by the shell, sleeping with `sleep` while it runs; why not, when it could not
/// start or ran past [`LIMIT`].
pub fn run(line: &str, sleep: &mut dyn FnMut(Duration)) -> Result<Ran, String> {
    let mut child = Command::new("/bin/sh")
        .args(["-c", line])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("could not start /bin/sh: {e}"))?;
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let started = Instant::now();
    let mut pause = Duration::from_micros(100);
    let mut look = || {
        sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > LIMIT => {
                // The whole group: the shell and whatever it started. (The group is the
                // shell's own, made for it above; its id is the shell's.)
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                return Err(format!("ran past {} s and was stopped", LIMIT.as_secs()));
            }
            Ok(None) => look(),
            Err(e) => return Err(format!("could not wait for it: {e}")),
        }
    };
    let failed = (!status.success()).then(|| failure(status, first_line(err, &mut look)));
    Ok(Ran {
        first_line: first_line(out, &mut look),
        failed,
    })
}

/// A status that is not success, and what the command said on its error output.
fn failure(status: ExitStatus, said: String) -> String {
    match said.is_empty() {
        true => format!("it failed ({status})"),
        false => format!("it failed ({status}): {said}"),
    }
}

/// The first line an output reader sends: to the first newline or the output's end. A process
/// the command left behind may hold the output open: it is waited for 500 ms at most.
fn first_line(r: mpsc::Receiver<Vec<u8>>, look: &mut dyn FnMut()) -> String {
    let (mut bytes, until) = (Vec::new(), Instant::now() + Duration::from_millis(500));
    while !bytes.contains(&b'\n') && Instant::now() < until {
        match r.try_recv() {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(mpsc::TryRecvError::Empty) => look(),
            Err(mpsc::TryRecvError::Disconnected) => break,
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    text.lines().next().unwrap_or_default().to_string()
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
    (line.trim().parse::<i64>())
        .map_err(|_| format!("it must print a whole number, it printed {line:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleep(d: Duration) {
        std::thread::sleep(d)
    }

    #[test]
    fn a_command_gives_its_first_line_and_how_it_ended() {
        let ran = run("echo 42; echo 7", &mut sleep).unwrap();
        assert_eq!((ran.first_line.as_str(), ran.failed), ("42", None));
        assert_eq!(run("printf ' -3 '", &mut sleep).unwrap().first_line, " -3 ");
        assert_eq!(integer(" -3 "), Ok(-3));
        assert!(integer("3x").unwrap_err().contains("printed \"3x\""));
        assert!(integer("").is_err());
        let ran = run("echo 0; echo oops >&2; exit 3", &mut sleep).unwrap();
        assert_eq!(ran.first_line, "0", "printed before failing");
        let failed = ran.failed.unwrap();
        assert!(
            failed.contains("exit status: 3") && failed.ends_with(": oops"),
            "{failed}"
        );
        // Much output is read, not blocked on; the first line still comes.
        assert_eq!(
            run("echo 1; seq 1 200000", &mut sleep).unwrap().first_line,
            "1"
        );
        // A process left behind holding the output does not hold the client.
        let t = Instant::now();
        assert_eq!(
            run("echo 5; sleep 5 &", &mut sleep).unwrap().first_line,
            "5"
        );
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    }
}
