//! Ctrl-C: the running case is marked `interrupted`, finished cases are kept, the record is
//! complete on disk, and dyno exits with 130.

use crate::common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Upper bound on any wait in this test; it never runs longer than this.
const LIMIT: Duration = Duration::from_secs(30);

fn all_ok(record: &serde_json::Value, target: &str) -> bool {
    record["cases"].as_array().is_some_and(|cases| {
        cases
            .iter()
            .filter(|c| c["target"] == target)
            .all(|c| c["status"] == "ok" || c["status"] == "na")
    })
}

#[test]
fn ctrl_c_keeps_finished_cases_and_marks_the_running_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    let out = dir.path().join("o");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("dyno"))
        .current_dir(dir.path())
        .env("TMPDIR", dir.path().join("tmp"))
        .args([
            "run",
            "mem:",
            "mock:?clock=real&latency=500us",
            "-n",
            "200",
            "-r",
            "5",
            "-o",
            "o",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // Wait until the record shows mem finished, then press Ctrl-C while mock runs.
    let start = Instant::now();
    loop {
        assert!(start.elapsed() < LIMIT, "mem never finished");
        let rec = std::fs::read_to_string(out.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        if rec.is_some_and(|r| all_ok(&r, "mem")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling the child this test started, by its PID.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);

    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > LIMIT {
            child.kill().unwrap();
            panic!("dyno did not stop after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("stopping after the current operation"),
        "{stderr}"
    );

    let rec = record(&out);
    assert_schema_valid(&rec);
    assert_eq!(rec["interrupted"], true);
    assert!(rec["finished"].is_string());
    assert!(all_ok(&rec, "mem"), "finished cases are kept as they were");
    let mock: Vec<&serde_json::Value> = rec["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["target"] == "mock")
        .collect();
    assert_eq!(mock.len(), 6);
    assert!(
        mock.iter().all(|c| c["status"] == "interrupted"),
        "{mock:?}"
    );
    // The table was still printed, with the interruption said.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("(the run was interrupted; finished cases are kept)"),
        "{stdout}"
    );
}

/// The tests that need a real server.
mod servers {
    use super::*;

    /// `kill -9` after a checkpoint: nothing more is written, and the record on disk says the run
    /// was cut off — the run as well as its running case.
    #[test]
    fn a_killed_run_says_interrupted_at_the_run_level_too() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let server = RefServer::start();
        let out = d.join("o");
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("dyno"))
            .current_dir(d)
            .args(["run", &format!("http://127.0.0.1:{}/", server.port)])
            .args(["-d", "20s", "-r", "1", "-c", "2", "--rate", "500"])
            .args(["--checkpoint", "1s", "--quiet", "-o", "o"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let checkpoint = loop {
            assert!(start.elapsed() < LIMIT, "no checkpoint was written");
            let rec = std::fs::read_to_string(out.join("run.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
            if let Some(r) =
                rec.filter(|r| r["cases"][0]["reps"][0]["detail"]["load"]["partial"] == true)
            {
                break r;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(checkpoint["interrupted"], true, "a record written mid-run");
        // SAFETY: signalling the child this test started, by its PID.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGKILL) }, 0);
        child.wait().unwrap();
        let rec = record(&out);
        assert_schema_valid(&rec);
        assert_eq!(rec["interrupted"], true, "{}", rec["interrupted"]);
        assert!(rec["finished"].is_null());
        assert_eq!(rec["cases"][0]["status"], "interrupted");
        assert_eq!(
            rec["cases"][0]["reps"][0]["detail"]["load"]["partial"],
            true
        );
    }
}
