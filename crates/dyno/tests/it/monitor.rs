//! Process monitoring: a target's server started from the plan and watched while it is told to
//! allocate; a process given by PID; the plan's and flags' mistakes.

use crate::common::*;
use std::path::Path;

const DYNO: &str = env!("CARGO_BIN_EXE_dyno");

fn plan(dir: &Path, port: u16, path: &str) -> std::path::PathBuf {
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[suite]\nname = \"load\"\n\n[targets.web]\nurl = \"http://127.0.0.1:{port}{path}\"\n\n\
             [targets.web.process]\ncmd = \"{DYNO} serve --http --listen 127.0.0.1:{port}\"\n\
             ready = \"tcp:127.0.0.1:{port}\"\n"
        ),
    )
    .unwrap();
    plan
}

#[test]
fn mistakes_in_watching_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = |args: &[&str]| {
        let o = dyno(dir.path()).args(args).output().unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let e = err(&["run", "mem:", "--quick", "--pid", "0"]);
    assert!(e.contains("--pid") && e.contains("not a process id"), "{e}");
    let e = err(&[
        "run",
        "mem:",
        "--quick",
        "--process-name",
        "no-such-process-dyno",
    ]);
    assert!(e.contains("no running process is named"), "{e}");

    let plan = dir.path().join("p.toml");
    let write = |body: &str| std::fs::write(&plan, body).unwrap();
    write("[targets.a]\nurl = \"mem:\"\n[targets.a.process]\ncmd = \"sleep 1\"\n");
    let e = err(&["run", plan.to_str().unwrap()]);
    assert!(e.contains("p.toml:4") && e.contains("needs `ready`"), "{e}");
    write("[targets.a]\nurl = \"mem:\"\n[targets.a.process]\ncmd = \"x\"\nready = \"localhost\"\n");
    let e = err(&["run", plan.to_str().unwrap()]);
    assert!(e.contains("p.toml:5") && e.contains("tcp:IP:PORT"), "{e}");
    write(
        "[targets.a]\nurl = \"mem:\"\n[targets.a.process]\ncmd = \"x\"\nredy = \"tcp:127.0.0.1:1\"\n",
    );
    let e = err(&["run", plan.to_str().unwrap()]);
    assert!(
        e.contains("unknown key `redy`") && e.contains("did you mean"),
        "{e}"
    );
    // A server that exits at once: the run stops before any case, quoting its log.
    let port = testkit::free_port();
    write(&format!(
        "[targets.a]\nurl = \"mem:\"\n[targets.a.process]\ncmd = \"sh -c 'echo bad config >&2; exit 2'\"\n\
         ready = \"tcp:127.0.0.1:{port}\"\n"
    ));
    let e = err(&["run", plan.to_str().unwrap(), "-o", "out"]);
    assert!(
        e.contains("exited (exit status: 2)") && e.contains("bad config"),
        "{e}"
    );
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn a_started_server_is_watched_while_it_allocates_and_stopped_after() {
        let _g = serial();
        let dir = tempfile::tempdir().unwrap();
        let port = testkit::free_port();
        // Every request makes the server keep 1 MiB more: 10 a second for 4 s.
        let plan = plan(dir.path(), port, "/retain/1024");
        let out = dir.path().join("out");
        let assert = dyno(dir.path())
            .arg("run")
            .arg(&plan)
            .args([
                "--rate",
                "10",
                "--duration",
                "4s",
                "-c",
                "1",
                "-r",
                "1",
                "-o",
            ])
            .arg(&out)
            .assert()
            .success();
        let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
        let rec = record(&out);
        assert_schema_valid(&rec);
        let series = &rec["resources"][0];
        assert_eq!(series["target"], "web");
        assert_eq!(series["source"], "started");
        assert_eq!(series["command"], "dyno");
        let pid = series["pid"].as_u64().unwrap();
        let samples = series["samples"].as_array().unwrap();
        assert!(samples.len() >= 4, "{} samples", samples.len());
        // On the run's clock, a second apart (the last one at the end).
        let t: Vec<u64> = samples
            .iter()
            .map(|s| s["t_ns"].as_u64().unwrap())
            .collect();
        assert!(t.windows(2).all(|w| w[1] > w[0]), "{t:?}");
        assert!(
            t[1] - t[0] > 900_000_000 && t[1] - t[0] < 1_500_000_000,
            "{t:?}"
        );
        // RSS rises with what the server was told to keep (40 requests × 1 MiB), never falling.
        let rss: Vec<u64> = samples
            .iter()
            .map(|s| s["rss_bytes"].as_u64().unwrap())
            .collect();
        let requests = rec["cases"][0]["reps"][0]["detail"]["load"]["ok"]
            .as_u64()
            .unwrap();
        assert!(requests >= 30, "{requests} requests");
        let grew = rss.last().unwrap() - rss[0];
        assert!(
            grew >= (requests - 2) << 20 && grew <= (requests + 16) << 20,
            "RSS grew {grew} bytes for {requests} MiB kept: {rss:?}"
        );
        assert!(
            rss.windows(2).all(|w| w[1] + (1 << 20) >= w[0]),
            "RSS fell: {rss:?}"
        );
        assert!(rss[2] > rss[1] && rss[1] > rss[0], "{rss:?}");
        let summary = &series["summary"];
        assert_eq!(
            summary["peak_rss_bytes"].as_u64(),
            rss.iter().max().copied()
        );
        assert!(summary["max_threads"].as_u64().unwrap() >= 2);
        assert!(summary["max_open_files"].as_u64().unwrap() >= 3);
        // The plan names the process; the table, the plots and the log are there.
        assert!(
            rec["plan"]["targets"][0]["process"]
                .as_str()
                .unwrap()
                .starts_with("started by dyno: ")
        );
        assert!(stdout.contains("watched processes"), "{stdout}");
        assert!(
            stdout.contains(&format!("web (dyno {pid}, started)")),
            "{stdout}"
        );
        for f in [
            "resources-rss.svg",
            "resources-rss.png",
            "resources-cpu.dat",
        ] {
            assert!(out.join("plots").join(f).is_file(), "{f}");
        }
        assert!(out.join("web.process.log").is_file());
        // dyno stopped the server it started.
        assert!(!alive(pid), "the server {pid} outlived the run");
    }

    #[test]
    fn a_process_given_by_pid_is_watched_and_left_running() {
        let _g = serial();
        let dir = tempfile::tempdir().unwrap();
        let server = RefServer::start();
        let port = server.port;
        let out = dir.path().join("out");
        dyno(dir.path())
            .arg("run")
            .arg(format!("http://127.0.0.1:{port}/"))
            .args(["--duration", "1500ms", "-c", "2", "-r", "1", "--pid"])
            .arg(server.child.id().to_string())
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let rec = record(&out);
        assert_schema_valid(&rec);
        let s = &rec["resources"][0];
        assert_eq!(s["pid"].as_u64(), Some(u64::from(server.child.id())));
        assert_eq!(s["source"], "pid");
        assert!(s["target"].is_null());
        assert!(s["samples"].as_array().unwrap().len() >= 2);
        // Closed-loop load keeps the server busy: its CPU shows.
        assert!(
            s["summary"]["mean_cpu_percent"].as_f64().unwrap() > 1.0,
            "{s}"
        );
        assert_eq!(
            rec["plan"]["watch"][0],
            format!("pid {}", server.child.id())
        );
        assert!(
            alive(u64::from(server.child.id())),
            "dyno stopped a process it did not start"
        );
    }
}
