//! The adapter protocol (`exec:`): the conformance kit passes on the reference adapter and
//! fails, with a reason naming what the adapter did, on broken ones — a wrong handshake,
//! garbage, a crash mid-test, a hang past the timeout — and a run on a broken adapter fails its
//! cases, never dyno.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn helper_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../adapters/python")
}

/// An adapter: the reference one with `patch` (Python) applied before it serves.
fn adapter(dir: &Path, name: &str, patch: &str) -> String {
    let path = dir.join(name);
    let text = format!(
        "import sys, time\nsys.path.insert(0, {helper:?})\nimport dyno_adapter as d\nimport reference as r\n{patch}\nd.run(r.Reference)\n",
        helper = helper_dir().canonicalize().unwrap().display().to_string()
    );
    std::fs::write(&path, text).unwrap();
    format!("exec:{}", path.display())
}

fn check(dir: &Path, url: &str) -> (i32, String) {
    let o = dyno(dir).args(["adapter-check", url]).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).to_string(),
    )
}

#[test]
fn the_reference_adapter_passes_the_kit_and_runs_the_shootout() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("exec:{}", helper_dir().join("reference.py").display());
    // Both framings: JSON lines, and binary frames (the default when the adapter has them).
    for (framing, says) in [("json", "json framing"), ("binary", "binary framing")] {
        let (code, out) = check(dir.path(), &format!("{url}?framing={framing}"));
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("13 checks passed"), "{out}");
        assert!(!out.contains("client cache"), "{out}");
        assert!(out.contains(says), "{out}");
        assert!(!out.contains("FAIL"), "{out}");
    }
    // An adapter of the binary framing from before its get_many frame answers it "no binary
    // kind": dyno asks it in JSON from then on, and the kit's batched reads still pass.
    let old = adapter(dir.path(), "old.py", "d.GET_MANY = 0x7f");
    let (code, out) = check(dir.path(), &format!("{old}?framing=binary"));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("13 checks passed") && out.contains("get_many"),
        "{out}"
    );
    dyno(dir.path())
        .args([
            "run",
            "-n",
            "30",
            "-c",
            "3",
            "--reps",
            "1",
            "--threads",
            "1",
            "-o",
            "o",
            &url,
        ])
        .assert()
        .success();
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    // Named after the adapter (its file's stem), not the scheme.
    assert_eq!(rec["cases"][0]["target"], "reference");
    // Three adapter sessions on one generator thread: each waits on its pipes as a fiber.
    assert_eq!(rec["plan"]["threads"], 1);
    for test in ["add", "update", "warm", "hot", "steamin"] {
        let c = case(&rec, "reference", test);
        assert_eq!(c["status"], "ok", "{test}: {}", c["reason"]);
    }
    // Every warm and hot read reached the adapter's storage (its own count), steamin none.
    assert_eq!(
        case(&rec, "reference", "warm")["reps"][0]["detail"]["store"]["storage_reads"],
        90
    );
    assert_eq!(
        case(&rec, "reference", "steamin")["reps"][0]["detail"]["store"]["storage_reads"],
        0
    );
    let cold = case(&rec, "reference", "cold");
    assert_eq!(cold["status"], "na");
    assert!(
        cold["reason"]
            .as_str()
            .unwrap()
            .contains("no cache below dyno"),
        "{cold}"
    );
    assert_eq!(
        case(&rec, "reference", "add")["versions"]["adapter"],
        "reference (sqlite3)"
    );
}

#[test]
fn a_wrong_handshake_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let url = adapter(dir.path(), "v2.py", "d.PROTOCOL = 2");
    let (code, out) = check(dir.path(), &url);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  handshake"), "{out}");
    assert!(out.contains("speaks protocol 2, dyno speaks 1"), "{out}");
}

#[test]
fn garbage_on_stdout_is_named_with_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let url = adapter(
        dir.path(),
        "garbage.py",
        "def babble(stdout, reply):\n    stdout.write(b'hello from the adapter\\n'); stdout.flush()\nd._write = babble",
    );
    let (code, out) = check(dir.path(), &url);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("wrote a line that is not a JSON object: \"hello from the adapter\""),
        "{out}"
    );
}

#[test]
fn a_crash_mid_test_fails_the_check_and_the_cases_not_dyno() {
    let dir = tempfile::tempdir().unwrap();
    // Sessions die at their first get, saying why on stderr.
    let url = adapter(
        dir.path(),
        "crash.py",
        "orig = r.Reference.get\ndef get(self, key):\n    print('dying at get', key, file=sys.stderr); sys.stderr.flush(); sys.exit(3)\nr.Reference.get = get",
    );
    let (code, out) = check(dir.path(), &url);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  get each back"), "{out}");
    assert!(out.contains("exited (exit status: 3)"), "{out}");
    assert!(out.contains("ends: \"dying at get 1\""), "{out}");
    // A run: the cases that read fail with that reason; the run ends, exit 3.
    let o = dyno(dir.path())
        .args(["run", "-n", "10", "-c", "2", "--reps", "1", "-o", "o", &url])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rec = record(&dir.path().join("o"));
    assert_eq!(case(&rec, "crash", "add")["status"], "ok");
    let warm = case(&rec, "crash", "warm");
    assert_eq!(warm["status"], "failed");
    let reason = warm["reason"].as_str().unwrap();
    assert!(reason.contains("exited"), "{warm}");
    // Its standard error is kept in the results directory, and the reason names the file.
    let out = dir.path().join("o");
    assert!(reason.contains("its stderr (o/adapter-"), "{reason}");
    let logs: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".stderr"))
        .collect();
    assert!(
        logs.iter().any(|e| std::fs::read_to_string(e.path())
            .unwrap()
            .contains("dying at get")),
        "{logs:?}"
    );
}

#[test]
fn a_hang_past_the_timeout_is_named_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let url = adapter(
        dir.path(),
        "hang.py",
        "def get(self, key):\n    time.sleep(3600)\nr.Reference.get = get",
    ) + "?timeout=1s";
    let t0 = Instant::now();
    let (code, out) = check(dir.path(), &url);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("did not answer within 1s (hung)"), "{out}");
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
}
