//! Where a run's files go and what its exit status says: an earlier run is never overwritten, a
//! foreign directory never written into, a closed pipe costs no file, and failed cases exit 3.

use crate::common::*;
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
    assert!(
        err.contains("holds earlier runs, left as they are"),
        "{err}"
    );
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

#[test]
fn summary_json_is_the_headline_figures_per_case() {
    let dir = tempfile::tempdir().unwrap();
    let a = dyno(dir.path())
        .args([
            "run",
            "--quick",
            "mem:",
            "sqlite:",
            "-f",
            "summary-json",
            "-o",
            "o",
        ])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    let doc: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(doc["schema"], "dyno.summary-1");
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 12);
    let rec = record(&dir.path().join("o"));
    for (s, c) in cases.iter().zip(rec["cases"].as_array().unwrap()) {
        assert_eq!(s["target"], c["target"]);
        assert_eq!(s["test"], c["test"]);
        assert_eq!(s["status"], c["status"]);
        if c["status"] == "ok" {
            assert_eq!(s["ops_per_s"], c["summary"]["ops_per_s"]);
            assert_eq!(s["latency_ns"]["p99"], c["summary"]["latency_ns"]["p99"]);
        }
    }
    // Far smaller than the record.
    let whole = std::fs::read(dir.path().join("o/run.json")).unwrap();
    assert!(
        text.len() * 5 < whole.len(),
        "{} vs {}",
        text.len(),
        whole.len()
    );
    // And the same from the saved record.
    let again = dyno(dir.path())
        .args(["report", "o", "-f", "summary-json"])
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&again.get_output().stdout), text);
}

#[test]
fn the_shootout_draws_its_rates_as_bars_on_a_log_axis() {
    if !cfg!(feature = "plots") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args(["run", "--quick", "mem:", "fs:", "-o", "o"])
        .assert()
        .success();
    let plots = dir.path().join("o/plots");
    let svg = std::fs::read_to_string(plots.join("shootout-rate.svg")).unwrap();
    for word in ["mem", "fs", "add", "steamin", "objects/s"] {
        assert!(svg.contains(word), "{word} missing from the bar chart");
    }
    let dat = std::fs::read_to_string(plots.join("shootout-rate.dat")).unwrap();
    let rows: Vec<&str> = dat.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 6, "{dat}");
    // mem's cold state is n/a: no bar, and `nan` in the data.
    assert!(rows.iter().any(|r| r.starts_with("cold nan ")), "{dat}");
    // mem and fs differ by more than a decade: the bars and the latency spectra are drawn on
    // log axes, labelled at whole decades (a linear axis labels 0, 50, 100 …). Which decades
    // depends on the machine's speed; at least three must be labelled on each.
    let decade_ticks = |file: &str| {
        let svg = std::fs::read_to_string(plots.join(file)).unwrap();
        svg.lines()
            .map(|l| l.trim().replace(',', ""))
            .filter(|l| {
                let d = l.strip_prefix("0.").unwrap_or(l).trim_start_matches('0');
                !d.is_empty() && d.starts_with('1') && d[1..].chars().all(|c| c == '0')
            })
            .count()
    };
    assert!(decade_ticks("shootout-rate.svg") >= 3, "bars");
    assert!(decade_ticks("latency-add.svg") >= 3, "spectrum");
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn words_users_read() {
        let dir = tempfile::tempdir().unwrap();
        // A host that refuses the token: the column says so (not "host unreachable").
        let host = RefServer::serve(&["--token", "s3cret"]);
        let port = host.port;
        let a = dyno(dir.path())
            .args(["run", "--quick", "--no-warmup", "-o", "wrong"])
            .arg(format!("dyno://127.0.0.1:{port}?token=nope"))
            .assert()
            .code(3);
        let out = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
        assert!(out.contains("unknown (refused: wrong token)"), "{out}");
        assert!(!out.contains("host unreachable"), "{out}");
        // `dyno stats` writes latencies as the report does: three significant digits.
        dyno(dir.path())
            .args(["run", "--quick", "--no-warmup", "-o", "right"])
            .arg(format!("dyno://127.0.0.1:{port}?token=s3cret"))
            .assert()
            .success();
        let a = dyno(dir.path())
            .args(["stats", &format!("127.0.0.1:{port}"), "--token", "s3cret"])
            .assert()
            .success();
        let stats = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
        drop(host);
        for cell in stats
            .lines()
            .skip(1)
            .flat_map(|l| l.split_whitespace().skip(2))
        {
            let digits = cell.chars().filter(|c| c.is_ascii_digit()).count();
            assert!(digits <= 3 && cell.ends_with('s'), "{cell} in\n{stats}");
        }

        // A cause is said once.
        std::fs::write(dir.path().join("file"), "x").unwrap();
        let a = dyno(dir.path())
            .args(["run", "--quick", "mem:", "-o", "file"])
            .assert()
            .code(1);
        let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        assert_eq!(err.matches("not a directory").count(), 1, "{err}");

        // https:// is TLS, not a typo of http: a closed port is a failed case, not bad input.
        let port = testkit::free_port();
        let a = dyno(dir.path())
            .args([
                "run",
                &format!("https://127.0.0.1:{port}/"),
                "--requests",
                "2",
            ])
            .args(["-c", "1", "--no-warmup", "-o", "tls"])
            .assert()
            .code(3);
        let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        assert!(!err.contains("did you mean"), "{err}");
        // TLS flags without an https:// target are refused, naming the flag.
        let a = dyno(dir.path())
            .args(["run", "http://127.0.0.1:1/", "--insecure"])
            .assert()
            .code(1);
        let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        assert!(
            err.contains("--insecure applies to https:// and grpcs:// targets"),
            "{err}"
        );

        // validate names the format as it is written.
        let plan = dir.path().join("p.toml");
        std::fs::write(
            &plan,
            "[targets.m]\nurl = \"mem:\"\n[output]\nformat = \"csv\"\n",
        )
        .unwrap();
        let a = dyno(dir.path())
            .arg("validate")
            .arg(&plan)
            .assert()
            .success();
        let said = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
        assert!(said.contains("format csv"), "{said}");
    }
}
