//! Fault plans on a process dyno starts: killed on a schedule and started again, every event on
//! the run's clock with its recovery time; a process dyno did not start is never signalled; an
//! interrupted pause heals and leaves nothing behind, a single process or a cluster's member.

use crate::common::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// A plan: open-loop load on dyno's reference HTTP server, which dyno starts, with `faults`.
fn plan(dir: &Path, port: u16, duration: &str, faults: &str) -> std::path::PathBuf {
    let dyno = env!("CARGO_BIN_EXE_dyno");
    let text = format!(
        r#"[suite]
name = "load"
reps = 1

[load]
duration = "{duration}"
rate = 2000
interval = "100ms"
max_lag = "100%"

[targets.web]
url = "http://127.0.0.1:{port}/"

[targets.web.process]
cmd = "{dyno} serve --http --listen 127.0.0.1:{port}"
ready = "tcp:127.0.0.1:{port}"

{faults}
"#
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the plan file `plan` (results in `dir/out`); its record, checked against the schema.
fn run_plan(dir: &Path, plan: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let out = dir.join("out");
    dyno(dir)
        .args([
            "run",
            plan.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .success();
    let rec = record(&out);
    assert_schema_valid(&rec);
    (out, rec)
}

/// The process's state letter (`R`, `S`, `T` …), or `None` when it is gone (or a zombie).
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let s = stat[stat.rfind(')')? + 2..].chars().next()?;
    (s != 'Z').then_some(s)
}

/// Runs `plan`, whose first fault pauses one of the `members` processes dyno starts for 15 s,
/// interrupts dyno (SIGINT) during the pause, and checks that it healed and left nothing.
fn interrupt_during_pause(dir: &Path, plan: &Path, members: usize) {
    let out = dir.join("out");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dyno"))
        .current_dir(dir)
        .args([
            "run",
            plan.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The processes dyno started: its children.
    let deadline = Instant::now() + Duration::from_secs(20);
    let started: Vec<u32> = loop {
        let kids =
            std::fs::read_to_string(format!("/proc/{}/task/{}/children", child.id(), child.id()))
                .unwrap_or_default();
        let kids: Vec<u32> = kids
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if kids.len() >= members {
            break kids;
        }
        assert!(
            Instant::now() < deadline,
            "dyno started {kids:?}, not {members} processes"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Into the pause: one of them is stopped.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !started.iter().any(|&p| state(p) == Some('T')) {
        assert!(Instant::now() < deadline, "no process was ever paused");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling the dyno this test started, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    for p in started {
        assert_eq!(
            state(p),
            None,
            "process {p} is gone, not left stopped or running"
        );
    }
    let rec = record(&out);
    assert_eq!(rec["interrupted"], true);
    let e = &rec["faults"][0];
    assert_eq!(e["action"], "pause");
    let held = e["end_ns"].as_u64().unwrap() - e["start_ns"].as_u64().unwrap();
    assert!(
        held < 14_000_000_000,
        "healed at the interruption, not after 15 s: {held}"
    );
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn a_killed_server_is_started_again_and_every_fault_has_its_recovery() {
        let _g = serial();
        let dir = tempfile::tempdir().unwrap();
        let port = testkit::free_port();
        // Another `dyno serve`, which dyno did not start: same name, another PID.
        let bystander = RefServer::start();
        let p = plan(
            dir.path(),
            port,
            "4s",
            "[[faults]]\naction = \"kill\"\nevery = \"1s\"\nafter = \"300ms\"\n",
        );
        let (out, rec) = run_plan(dir.path(), &p);
        assert_eq!(
            rec["plan"]["faults"][0],
            "kill target=web every=1s after=300ms"
        );
        let events = rec["faults"].as_array().unwrap();
        assert!((3..=4).contains(&events.len()), "{events:?}");
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e["action"], "kill");
            assert!(e["note"].is_null(), "{e}");
            let (pid, new) = (e["pid"].as_u64().unwrap(), e["new_pid"].as_u64().unwrap());
            assert_ne!(pid, new, "started again as another process");
            // The last one may be healed early, when the run ends.
            let down = e["end_ns"].as_u64().unwrap() - e["start_ns"].as_u64().unwrap();
            assert!(down >= 300_000_000 || i == 3, "{down}");
        }
        let case = &rec["cases"][0];
        let load = &case["reps"][0]["detail"]["load"];
        // Every request is accounted for: a response (ok or not) or a failure.
        let n = |k: &str| load[k].as_u64().unwrap();
        assert_eq!(
            n("ok") + n("non_2xx") + n("network_failed"),
            n("requests"),
            "{load}"
        );
        assert!(n("network_failed") > 0, "the kills cost requests: {load}");
        // Each fault inside the series has its effect: a time without any successful response, and
        // a recovery no sooner than the server was back and before the next fault. (On a loaded
        // machine a noisy interval can hide one recovery; two of three must show.)
        let effects = case["faults"].as_array().unwrap();
        assert!(effects.len() >= 3, "{effects:?}");
        let mut recovered = 0;
        for (i, e) in effects.iter().take(3).enumerate() {
            assert_eq!(e["event"], i);
            assert!(e["unavailable_ns"].as_u64().unwrap() >= 200_000_000, "{e}");
            if let Some(r) = e["recovery_ns"].as_u64() {
                assert!((300_000_000..1_000_000_000).contains(&r), "{e}");
                recovered += 1;
            }
        }
        assert!(recovered >= 2, "{effects:?}");
        // The table shows them.
        let text = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(text.contains("faults: recovery time"), "no faults table");
        // The process dyno did not start is untouched.
        assert!(matches!(state(bystander.child.id()), Some('S' | 'R')));
        // The server's resource series follows it across its restarts: one series, the last PID,
        // sampled all along.
        let last = events.last().unwrap()["new_pid"].as_u64().unwrap() as u32;
        let series = rec["resources"].as_array().unwrap();
        assert_eq!(series.len(), 1);
        assert_eq!(series[0]["pid"], last);
        let restarted = events[2]["end_ns"].as_u64().unwrap();
        let samples = series[0]["samples"].as_array().unwrap();
        assert!(
            (samples.iter())
                .any(|s| s["t_ns"].as_u64() > Some(restarted) && s["processes"].as_u64() > Some(0)),
            "sampled after the third restart: {samples:?}"
        );
        // Nothing dyno started is left running.
        assert_eq!(state(last), None, "the server dyno started was stopped");
    }

    #[test]
    fn an_interrupted_pause_heals_and_leaves_no_process_behind() {
        let _g = serial();
        let dir = tempfile::tempdir().unwrap();
        let port = testkit::free_port();
        let p = plan(
            dir.path(),
            port,
            "20s",
            "[[faults]]\naction = \"pause\"\nat = \"1s\"\nfor = \"15s\"\n",
        );
        interrupt_during_pause(dir.path(), &p, 1);
    }

    #[test]
    fn an_interrupted_pause_of_a_linked_member_leaves_no_member_stopped_or_behind() {
        let _g = serial();
        let dir = tempfile::tempdir().unwrap();
        let dyno_bin = env!("CARGO_BIN_EXE_dyno");
        // Two members behind links, load through member a's link; member a paused.
        let text = format!(
            r#"[suite]
    name = "load"

    [load]
    duration = "20s"
    rate = 500
    interval = "100ms"
    max_lag = "100%"

    [targets.web]
    url = "http://127.0.0.1:{{port.a}}/"

    [targets.web.process]
    link = true

    [[targets.web.process.members]]
    name = "a"
    cmd = "{dyno_bin} serve --http --listen 127.0.0.1:{{listen.port}}"

    [[targets.web.process.members]]
    name = "b"
    cmd = "{dyno_bin} serve --http --listen 127.0.0.1:{{listen.port}}"

    [[faults]]
    action = "pause"
    member = "a"
    at = "1s"
    for = "15s"
    "#
        );
        let plan = dir.path().join("cluster.toml");
        std::fs::write(&plan, text).unwrap();
        interrupt_during_pause(dir.path(), &plan, 2);
    }

    #[test]
    fn restarted_clients_open_new_connections_and_lose_no_request_uncounted() {
        let _g = serial();
        let dir = tempfile::tempdir().unwrap();
        // A server dyno did not start: restarting dyno's own clients needs none.
        let s = RefServer::start();
        let out = dir.path().join("out");
        dyno(dir.path())
            .args([
                "run",
                &format!("http://127.0.0.1:{}/", s.port),
                "-c",
                "4",
                "--threads",
                "1",
                "--duration",
                "2s",
                "-r",
                "1",
                "--fault",
                "restart-clients every=500ms",
                "-o",
                out.to_str().unwrap(),
                "--quiet",
            ])
            .assert()
            .success();
        let rec = record(&out);
        assert_schema_valid(&rec);
        assert_eq!(rec["plan"]["faults"][0], "restart-clients every=500ms");
        let events = rec["faults"].as_array().unwrap();
        assert!((3..=4).contains(&events.len()), "{events:?}");
        assert!(
            events
                .iter()
                .all(|e| e["action"] == "restart-clients" && e["pid"].is_null())
        );
        let load = &rec["cases"][0]["reps"][0]["detail"]["load"];
        let n = |k: &str| load[k].as_u64().unwrap();
        // Each restart opened the 4 connections again.
        assert!(n("connects") >= 4 * (1 + 3), "{load}");
        assert_eq!(
            n("ok") + n("non_2xx") + n("network_failed"),
            n("requests"),
            "{load}"
        );
    }

    #[test]
    fn a_cluster_starts_member_by_member_and_faults_take_its_members_in_turn() {
        let _g = serial();
        let dir = tempfile::tempdir().unwrap();
        let dyno_bin = env!("CARGO_BIN_EXE_dyno");
        let text = format!(
            r#"[suite]
    name = "load"
    reps = 1

    [load]
    duration = "4s"
    rate = 1000
    interval = "100ms"

    [targets.web]
    url = "http://127.0.0.1:{{port.a}}/"

    [[targets.web.process.members]]
    name = "a"
    cmd = "{dyno_bin} serve --http --listen 127.0.0.1:{{port}}"

    [[targets.web.process.members]]
    name = "b"
    cmd = "sh -c 'echo a is on {{port.a}} > {{file}}.seen; exec {dyno_bin} serve --http --listen 127.0.0.1:{{port}}'"
    file = "b listens on {{port}}"

    [[faults]]
    action = "kill"
    target = "web"
    every = "800ms"
    after = "200ms"
    "#
        );
        let plan = dir.path().join("cluster.toml");
        std::fs::write(&plan, text).unwrap();
        let (out, rec) = run_plan(dir.path(), &plan);
        let process = rec["plan"]["targets"][0]["process"].as_str().unwrap();
        assert!(
            process.starts_with("started by dyno, members: a (127.0.0.1:"),
            "{process}"
        );
        // The URL got member a's port, and b's file and command got theirs.
        let url = rec["plan"]["targets"][0]["url"]
            .as_str()
            .unwrap()
            .to_string();
        let port_a: u16 = url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches('/')
            .parse()
            .unwrap();
        let conf = out.join("web.b.conf");
        assert!(
            std::fs::read_to_string(&conf)
                .unwrap()
                .starts_with("b listens on ")
        );
        let seen = std::fs::read_to_string(out.join("web.b.conf.seen")).unwrap();
        assert_eq!(seen.trim(), format!("a is on {port_a}"));
        // The faults took the members in turn, each started again.
        let events = rec["faults"].as_array().unwrap();
        assert!(events.len() >= 3, "{events:?}");
        let targets: Vec<&str> = events
            .iter()
            .map(|e| e["target"].as_str().unwrap())
            .collect();
        assert_eq!(&targets[..3], ["web/a", "web/b", "web/a"]);
        assert!(
            events
                .iter()
                .all(|e| e["new_pid"].is_u64() && e["note"].is_null()),
            "{events:?}"
        );
        // One resource series per member.
        assert_eq!(rec["resources"].as_array().unwrap().len(), 2);
        // The load ran on a: its kills cost requests.
        let load = &rec["cases"][0]["reps"][0]["detail"]["load"];
        assert!(load["network_failed"].as_u64().unwrap() > 0, "{load}");
    }

    /// The shootout's clients restart between tests: their sessions and caches are dropped, so a
    /// `steamin` test (every read from the client's cache) after a restart reads from the store,
    /// where it otherwise reads none.
    #[test]
    fn restarted_shootout_clients_start_their_next_test_afresh() {
        let dir = tempfile::tempdir().unwrap();
        // A real 1 ms per operation: each test of 50 objects takes about 50 ms.
        let run = |fault: Option<&str>| {
            let out = dir
                .path()
                .join(if fault.is_some() { "faulted" } else { "calm" });
            let mut cmd = dyno(dir.path());
            cmd.args(["run", "mock:?clock=real&latency=1ms", "-n", "50", "-c", "1"])
                .args(["--reps", "2", "--no-warmup", "--quiet", "-o"])
                .arg(&out);
            if let Some(f) = fault {
                cmd.args(["--fault", f]);
            }
            let o = cmd.output().unwrap();
            // A restart before steamin fails its check (the store saw reads): exit 3.
            let ok = if fault.is_some() { 0..=3 } else { 0..=0 };
            assert!(
                ok.contains(&o.status.code().unwrap()),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
            record(&out)
        };
        let steamin_reads = |rec: &serde_json::Value| -> u64 {
            let steamin = (rec["cases"].as_array().unwrap().iter())
                .find(|c| c["test"] == "steamin")
                .unwrap();
            (steamin["reps"].as_array().unwrap().iter())
                .map(|r| r["detail"]["store"]["storage_reads"].as_u64().unwrap())
                .sum()
        };
        let calm = run(None);
        assert_eq!(steamin_reads(&calm), 0, "steamin reads the client cache");
        let faulted = run(Some("restart-clients every=20ms"));
        assert_schema_valid(&faulted);
        assert!(
            faulted["faults"].as_array().unwrap().len() >= 5,
            "{}",
            faulted["faults"]
        );
        assert!(
            steamin_reads(&faulted) > 0,
            "a client restarted before steamin read from the store"
        );
        // And the case says why its check failed.
        let steamin = (faulted["cases"].as_array().unwrap().iter())
            .find(|c| c["test"] == "steamin")
            .unwrap();
        let why = steamin["reason"].as_str().unwrap_or("");
        assert!(why.contains("restart-clients"), "{why}");
    }
}
