//! Soak runs: a steady rate with periodic bursts, streamed to an `.hlog` and checkpointed into
//! the record while it runs, so a dyno killed mid-run (SIGKILL: no chance to clean up) leaves a
//! log of whole intervals and a record of everything up to its last checkpoint; and the RSS
//! leak verdict on a server that keeps memory per request against one that does not.

use crate::common::*;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::path::Path;
use std::time::{Duration, Instant};

const DYNO: &str = env!("CARGO_BIN_EXE_dyno");

/// A plan whose targets are reference servers dyno starts: (name, path) each.
fn plan(dir: &Path, targets: &[(&str, &str)]) -> std::path::PathBuf {
    let mut text = String::from("[suite]\nname = \"load\"\nreps = 1\n");
    for (name, path) in targets {
        let port = testkit::free_port();
        text.push_str(&format!(
            "\n[targets.{name}]\nurl = \"http://127.0.0.1:{port}{path}\"\n\
             [targets.{name}.process]\ncmd = \"{DYNO} serve --http --listen 127.0.0.1:{port}\"\n\
             ready = \"tcp:127.0.0.1:{port}\"\n"
        ));
    }
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Each interval of an `.hlog`: (start s, length s, count).
fn hlog_intervals(path: &Path) -> Vec<(f64, f64, u64)> {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.ends_with(b"\n"), "the log ends mid-line");
    IntervalLogIterator::new(&bytes)
        .filter_map(|e| match e.expect("every line of the log parses") {
            LogEntry::Interval(h) => Some(h),
            _ => None,
        })
        .map(|h| {
            let hist: hdrhistogram::Histogram<u64> =
                hdrhistogram::serialization::Deserializer::new()
                    .deserialize(&mut std::io::Cursor::new(base64_decode(
                        h.encoded_histogram(),
                    )))
                    .expect("every histogram decodes");
            (
                h.start_timestamp().as_secs_f64(),
                h.duration().as_secs_f64(),
                hist.len(),
            )
        })
        .collect()
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn a_soak_killed_mid_run_leaves_a_whole_hlog_and_its_checkpoints() {
        let _g = serial();
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path(), &[("web", "/")]);
        let (out, hlog) = (dir.path().join("out"), dir.path().join("soak.hlog"));
        // Two minutes of 20 req/s with 200 req/s for the last 3 s of every 10 s; checkpoints every
        // 3 s (the default is a minute); killed 14 s in.
        let mut child = std::process::Command::new(DYNO)
            .current_dir(dir.path())
            .arg("run")
            .arg(&plan)
            .args([
                "--rate",
                "20",
                "--duration",
                "2m",
                "-r",
                "1",
                "--interval",
                "1s",
            ])
            .args(["--burst", "every=10s for=3s rate=200", "--checkpoint", "3s"])
            .arg("--hlog")
            .arg(&hlog)
            .arg("-o")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        std::thread::sleep(Duration::from_secs(14));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let killed_at = started.elapsed().as_secs_f64();

        // The record: valid, with the repetition as of its last checkpoint (at most 3 s old).
        let rec = record(&out);
        assert_schema_valid(&rec);
        assert!(rec["finished"].is_null());
        let case = &rec["cases"][0];
        assert_eq!(case["status"], "interrupted");
        let reason = case["reason"].as_str().unwrap();
        let secs: f64 = reason
            .strip_prefix("checkpoint: repetition 1 was still running, ")
            .and_then(|r| r.strip_suffix(" s in, when this record was written"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{reason}"));
        assert!(secs >= killed_at - 4.5 && secs <= killed_at, "{reason}");
        let rep = &case["reps"][0]["detail"]["load"];
        assert_eq!(rep["partial"], true);
        let ivs = rep["intervals"].as_array().unwrap();
        assert!(
            ivs.len() as f64 >= killed_at - 3.0 - 1.5,
            "{} intervals in the checkpoint of a run killed {killed_at:.1} s in",
            ivs.len()
        );
        // The burst is in the checkpoint: 7–10 s at 200/s, the rest at 20/s.
        let per_s: Vec<u64> = ivs
            .iter()
            .map(|i| i["responses"].as_u64().unwrap())
            .collect();
        assert!(
            per_s[..6].iter().all(|&n| (15..=25).contains(&n)),
            "{per_s:?}"
        );
        assert!(
            per_s[7..10].iter().all(|&n| (180..=220).contains(&n)),
            "{per_s:?}"
        );
        let total: u64 = per_s.iter().sum();
        assert_eq!(rep["responses"].as_u64(), Some(total));
        assert!(
            case["summary"].is_null() || case["summary"]["latency_ns"]["p50"].as_u64() > Some(0)
        );
        // The watched server is in the checkpoint too.
        assert!(rec["resources"][0]["samples"].as_array().unwrap().len() >= 3);
        let server = rec["resources"][0]["pid"].as_u64().unwrap();

        // The .hlog: every line whole and decodable, one a second up to the kill, and it agrees
        // with the checkpoint on every interval the checkpoint holds.
        let logged = hlog_intervals(&hlog);
        assert!(
            logged.len() as f64 >= killed_at - 2.5,
            "{} intervals logged in {killed_at:.1} s",
            logged.len()
        );
        for (k, (start, len, _)) in logged.iter().enumerate() {
            assert!(
                (start - k as f64).abs() < 0.05 && (len - 1.0).abs() < 0.05,
                "{logged:?}"
            );
        }
        for (k, n) in per_s.iter().enumerate() {
            assert_eq!(logged[k].2, *n, "interval {k}");
        }

        // The server dyno started did not outlive it (it is told to stop when dyno dies).
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(server) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!alive(server), "the server {server} outlived a killed dyno");
    }

    #[test]
    fn the_leak_verdict_tells_a_growing_server_from_a_flat_one() {
        let _g = serial();
        // Each server in a run of its own: in one run of both, the leaky one's series was half
        // growth and half plateau (while the other ran), a bend whose interval, widened for
        // its samples' dependence, reached zero in one run of three.
        let run = |name: &str, path: &str| {
            let dir = tempfile::tempdir().unwrap();
            let plan = plan(dir.path(), &[(name, path)]);
            let out = dir.path().join("out");
            let run = dyno(dir.path())
                .arg("run")
                .arg(&plan)
                .args(["--rate", "20", "--duration", "12s", "-r", "1", "-o"])
                .arg(&out)
                .assert()
                .success();
            let stdout = String::from_utf8_lossy(&run.get_output().stdout).to_string();
            let rec = record(&out);
            assert_schema_valid(&rec);
            let s = rec["resources"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["target"] == name)
                .unwrap();
            (s["summary"]["rss_trend"].clone(), stdout)
        };
        // One server keeps 256 KiB per request (20/s: 5 MiB/s); the other keeps nothing.
        let (leaky, stdout) = run("leaky", "/retain/256");
        assert_eq!(leaky["verdict"], "growing", "{leaky}");
        let mib_per_s = leaky["slope_per_s"].as_f64().unwrap() / 1048576.0;
        // 5 MiB/s while it is loaded, none while it starts.
        assert!(mib_per_s > 0.5 && mib_per_s < 6.0, "{mib_per_s} MiB/s");
        assert!(leaky["low_per_s"].as_f64().unwrap() > 0.0);
        assert!(stdout.contains("growing +"), "{stdout}");
        let (steady, stdout) = run("steady", "/");
        assert_eq!(steady["verdict"], "flat", "{steady}");
        assert!(stdout.contains("flat "), "{stdout}");
    }
}
