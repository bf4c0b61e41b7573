//! Where a run's files go and what its exit status says: an earlier run is never overwritten, a
//! foreign directory never written into, a closed pipe costs no file, and failed cases exit 3.

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_second_run_into_the_same_directory_keeps_the_first() {
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args(["run", "--quick", "mem:", "-o", "nightly"])
        .assert()
        .success();
    let first = std::fs::read(dir.path().join("nightly/run.json")).unwrap();
    let html = std::fs::read(dir.path().join("nightly/report.html")).unwrap();
    let a = dyno(dir.path())
        .args(["run", "--quick", "mem:", "-o", "nightly"])
        .assert()
        .success();
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(err.contains("holds earlier runs, left as they are"), "{err}");
    // The first run's files are byte for byte what they were.
    assert_eq!(
        std::fs::read(dir.path().join("nightly/run.json")).unwrap(),
        first
    );
    assert_eq!(
        std::fs::read(dir.path().join("nightly/report.html")).unwrap(),
        html
    );
    // The second went into a subdirectory of its own, with its own record and report.
    let subdirs: Vec<_> = std::fs::read_dir(dir.path().join("nightly"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.join("run.json").is_file())
        .collect();
    assert_eq!(subdirs.len(), 1, "{subdirs:?}");
    assert!(subdirs[0].join("report.html").is_file());
    assert_ne!(std::fs::read(subdirs[0].join("run.json")).unwrap(), first);
}

#[test]
fn a_foreign_directory_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("thesis.tex"), "mine").unwrap();
    let a = dyno(dir.path())
        .args(["run", "--quick", "mem:", "-o", "theirs"])
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        err.contains("give a new or empty directory") && err.contains("dyno did not make it"),
        "{err}"
    );
    assert_eq!(err.matches("Error:").count(), 1, "{err}");
    assert_eq!(files(&theirs), ["thesis.tex"]);
    // An empty directory is fine.
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    dyno(dir.path())
        .args(["run", "--quick", "mem:", "-o", "empty"])
        .assert()
        .success();
    assert!(dir.path().join("empty/run.json").is_file());
}

#[test]
fn a_closed_pipe_loses_no_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    // `dyno run … | head -c 1`: the reader takes one byte and goes away.
    let mut dyno = Command::new(env!("CARGO_BIN_EXE_dyno"))
        .args(["run", "--quick", "mem:", "sqlite:", "-o", "o"])
        .current_dir(dir.path())
        .env("TMPDIR", dir.path().join("tmp"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end at once: every write to stdout then fails with EPIPE.
    drop(dyno.stdout.take());
    let out = dyno.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
    let o = dir.path().join("o");
    assert!(o.join("run.json").is_file());
    assert!(o.join("report.html").is_file());
    if cfg!(feature = "plots") {
        assert!(o.join("plots").is_dir(), "{:?}", files(&o));
    }
}

#[test]
fn failed_cases_exit_3_and_stay_in_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let a = dyno(dir.path())
        .args([
            "run",
            "--quick",
            "--no-warmup",
            "mock:?fail_every=1",
            "mem:",
            "-o",
            "o",
        ])
        .assert()
        .code(3);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(err.contains("case(s) failed"), "{err}");
    let rec = record(&dir.path().join("o"));
    assert_eq!(case(&rec, "mock", "add")["status"], "failed");
    assert_eq!(case(&rec, "mem", "add")["status"], "ok");
    // A load run on a closed port: every case failed, and the status says so.
    let port = testkit::free_port();
    dyno(dir.path())
        .args([
            "run",
            &format!("http://127.0.0.1:{port}/"),
            "--duration",
            "200ms",
            "-r",
            "1",
            "--no-warmup",
            "-o",
            "closed",
        ])
        .assert()
        .code(3);
}
