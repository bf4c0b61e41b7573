//! `dyno run` end to end on every embedded target, through the real binary.

use crate::common::*;
use predicates::prelude::*;
use std::path::Path;

const TESTS: [&str; 6] = ["add", "update", "warm", "cold", "hot", "steamin"];

#[test]
fn quick_run_on_every_embedded_target_gives_a_full_table_and_a_valid_record() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let assert = dyno(dir.path())
        .args([
            "run",
            "--quick",
            "mock:?latency=10us",
            "mem:",
            "sqlite:",
            "fs:",
            "lmdb:",
        ])
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("record written to"));
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();

    // The table: six rows, one column per target, every cell a number or n/a.
    let rows = rate_rows(&stdout);
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, TESTS, "{stdout}");
    for row in &rows {
        assert_eq!(row.len(), 6, "test + 5 targets: {row:?}\n{stdout}");
        for cell in &row[1..] {
            assert!(
                is_rate(cell) || cell == "n/a",
                "cell {cell:?} in {row:?}\n{stdout}"
            );
        }
    }
    assert_eq!(rows[3][2], "n/a", "mem has no cold state");
    assert!(
        stdout.contains("WAL sync=NORMAL") && stdout.contains("no-fsync"),
        "{stdout}"
    );
    assert!(stdout.contains("latency per object operation: p50 / p99 / p99.9"));
    assert!(
        stdout.contains("- mem cold: n/a: mem: the map in process memory is the storage itself")
    );

    // The record: valid against the schema, one case per cell, the cache states proven.
    let rec = record(&out);
    assert_schema_valid(&rec);
    assert_eq!(rec["schema"], "dyno.run/2");
    assert_eq!(rec["cases"].as_array().unwrap().len(), 30);
    assert_eq!(rec["plan"]["objects"], 100);
    assert_eq!(rec["interrupted"], false);
    assert!(rec["finished"].is_string());
    assert_eq!(rec["environment"]["filesystems"]["mem"], "none");
    for target in ["mock", "mem", "sqlite", "fs", "lmdb"] {
        for test in TESTS {
            let c = case(&rec, target, test);
            let expected = if target == "mem" && test == "cold" {
                "na"
            } else {
                "ok"
            };
            assert_eq!(c["status"], expected, "{target} {test}: {}", c["reason"]);
            if expected == "na" {
                assert!(c["reps"].as_array().unwrap().is_empty());
                continue;
            }
            assert_eq!(c["topology"], "inproc");
            assert_eq!(c["reps"].as_array().unwrap().len(), 1);
            assert!(c["warmup"].is_object(), "warm-up kept apart");
            let rep = &c["reps"][0];
            assert_eq!(rep["ops"], 200);
            assert_eq!(rep["errors"], 0);
            let reads = rep["detail"]["store"]["storage_reads"].as_u64().unwrap();
            match test {
                "steamin" => assert_eq!(reads, 0, "{target}: steamin must not touch storage"),
                "warm" | "cold" | "hot" => assert_eq!(reads, 200, "{target} {test}"),
                _ => assert_eq!(reads, 0, "{target} {test} only writes"),
            }
            let s = &c["summary"];
            assert!(s["ops_per_s"]["best"].as_f64().unwrap() > 0.0);
            assert_eq!(s["latency_ns"]["count"], 200);
            let h = results::histogram::decode(c["histogram"].as_str().unwrap()).unwrap();
            assert_eq!(h.len(), 200, "the stored histogram holds every operation");
            assert_eq!(h.max(), s["latency_ns"]["max"].as_u64().unwrap());
        }
    }
    let cold = case(&rec, "sqlite", "cold")["cache"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        cold.contains("posix_fadvise") && cold.contains("mincore"),
        "{cold}"
    );
    assert_eq!(
        case(&rec, "sqlite", "add")["versions"]["sqlite"]
            .as_str()
            .unwrap()
            .split('.')
            .count(),
        3
    );

    // Temporary namespaces are gone.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("tmp")).unwrap().collect();
    assert!(
        left.is_empty(),
        "temporary namespaces left behind: {left:?}"
    );
}

#[test]
fn default_run_uses_the_four_embedded_targets() {
    let dir = tempfile::tempdir().unwrap();
    let assert = dyno(dir.path())
        .args(["run", "--quick", "--out", "o"])
        .assert()
        .success();
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let header = stdout.lines().find(|l| l.starts_with("test ")).unwrap();
    let cols: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(cols, ["test", "mem", "sqlite", "fs", "lmdb"]);
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    assert_eq!(rec["plan"]["source"], "command line");
}

#[test]
fn the_steamin_check_fails_when_the_storage_sees_a_read() {
    // Every 150th read returns a damaged copy: one object per client is refused during hot, so
    // the client cache misses it and steamin must go to the storage for it.
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args([
            "run",
            "mock:?latency=10us&corrupt_every=150",
            "-n",
            "100",
            "-r",
            "1",
            "--no-warmup",
            "-o",
            "o",
        ])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("2 case(s) failed"));
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    let hot = case(&rec, "mock", "hot");
    assert_eq!(hot["status"], "failed");
    assert_eq!(hot["errors"]["corrupt"], 2);
    assert!(
        hot["error_examples"]["corrupt"]
            .as_str()
            .unwrap()
            .contains("expected version 2")
    );
    let steamin = case(&rec, "mock", "steamin");
    assert_eq!(steamin["status"], "failed");
    assert_eq!(steamin["reps"][0]["detail"]["store"]["storage_reads"], 2);
    assert_eq!(
        steamin["reason"],
        "steamin: the storage saw 2 reads; every object should have come from the client cache"
    );
}

#[test]
fn failures_are_counted_by_class_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args([
            "run",
            "mock:?fail_every=10&fail_class=timeout",
            "mem:",
            "-n",
            "50",
            "-r",
            "2",
            "-o",
            "o",
        ])
        .assert()
        .code(3);
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    let add = case(&rec, "mock", "add");
    assert_eq!(add["status"], "failed");
    // 2 clients × 50 puts × 2 measured repetitions, every 10th failing.
    assert_eq!(add["errors"]["timeout"], 20);
    assert!(
        add["reason"]
            .as_str()
            .unwrap()
            .starts_with("10 of 100 operations failed (10 timeout)")
    );
    assert_eq!(
        case(&rec, "mem", "add")["status"],
        "ok",
        "other targets are unaffected"
    );
}

#[test]
fn exact_figures_on_a_virtual_clock() {
    // 100 objects per client at exactly 100 µs each (+1 ns per clock reading): the rate and
    // percentiles are known in advance.
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args([
            "run",
            "mock:?latency=100us",
            "-n",
            "100",
            "-c",
            "2",
            "-r",
            "3",
            "-o",
            "o",
        ])
        .assert()
        .success();
    let rec = record(&dir.path().join("o"));
    let warm = case(&rec, "mock", "warm");
    let s = &warm["summary"];
    // Each get: 100 µs + 1 ns (its clock reading); 100 gets + begin/commit readings per client.
    let rate = s["ops_per_s"]["best"].as_f64().unwrap();
    assert!((rate - 200.0 / 0.010_000_103).abs() < 1.0, "{rate}");
    assert_eq!(
        s["ops_per_s"]["min"], s["ops_per_s"]["max"],
        "virtual time does not vary"
    );
    let p50 = s["latency_ns"]["p50"].as_u64().unwrap();
    assert!(p50.abs_diff(100_001) <= 100, "{p50}");
    assert_eq!(s["latency_ns"]["count"], 600);
}

#[test]
fn json_format_prints_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let assert = dyno(dir.path())
        .args(["run", "--quick", "mem:", "--format", "json", "-o", "o"])
        .assert()
        .success();
    let printed: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_schema_valid(&printed);
    assert_eq!(printed, record(&dir.path().join("o")));
}

#[test]
fn report_renders_saved_records_exactly_as_run_printed_them() {
    let dir = tempfile::tempdir().unwrap();
    let run = dyno(dir.path())
        .args([
            "run",
            "--quick",
            "mock:?latency=5us",
            "mem:",
            "-o",
            "runs/one",
        ])
        .assert()
        .success();
    let printed = run.get_output().stdout.clone();
    dyno(dir.path())
        .args(["report", "runs/one"])
        .assert()
        .success()
        .stdout(predicate::eq(printed.as_slice()));
    // A directory of runs renders each.
    dyno(dir.path())
        .args(["run", "--quick", "mem:", "-o", "runs/two"])
        .assert()
        .success();
    let both = dyno(dir.path())
        .args(["report", "runs", "-f", "csv"])
        .assert()
        .success();
    let csv = String::from_utf8(both.get_output().stdout.clone()).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + 12 + 6,
        "header + 2 targets × 6 + 1 target × 6"
    );
    dyno(dir.path())
        .args(["report", "nowhere"])
        .assert()
        .failure()
        .stderr(predicate::str::starts_with("Error: nowhere: "));
}

#[test]
fn a_plan_file_runs_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[suite]\nobjects = 20\nreps = 1\n\n[output]\ndir = \"planned\"\nformat = \"markdown\"\n\n\
         [targets.fast]\nurl = \"mem:\"\n\n[targets.safe]\nurl = \"sqlite:\"\nsynchronous = \"full\"\n",
    )
    .unwrap();
    dyno(dir.path())
        .args(["validate", "plan.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "plan.toml: ok — suite shootout, 20 objects × 2 clients",
        ))
        .stdout(predicate::str::contains("WAL sync=FULL"));
    dyno(dir.path())
        .args(["run", "plan.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "| test | fast<br>volatile | safe<br>WAL sync=FULL |",
        ));
    let rec = record(&dir.path().join("planned"));
    assert_schema_valid(&rec);
    assert_eq!(rec["plan"]["targets"][1]["options"]["synchronous"], "full");
    assert!(
        rec["plan"]["source"]
            .as_str()
            .unwrap()
            .ends_with("plan.toml")
    );
}

#[test]
fn the_example_plans_in_the_repository_are_valid() {
    for name in [
        "shootout.toml",
        "faults.toml",
        "redis-sentinel.toml",
        "etcd.toml",
        "partition.toml",
        "consistency.toml",
        "ahash.toml",
        "zodb-zeo.toml",
    ] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let example = root.join("examples").join(name);
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = dyno(dir.path());
        if name.starts_with("zodb") {
            // An adapter's path is relative to where dyno runs: the repository's root.
            cmd.current_dir(&root);
        }
        let a = cmd.arg("validate").arg(example).assert().success();
        let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
        if name == "ahash.toml" {
            // Each level with its targets and faults, as resolved.
            assert!(
                out.contains("level centralized: redis-1, etcd-1; undisturbed"),
                "{out}"
            );
            assert!(
                out.contains("level kill-master: redis, etcd; kill target=redis member=primary every=60s after=30s"),
                "{out}"
            );
        }
    }
}

#[test]
fn targets_lists_every_driver() {
    let dir = tempfile::tempdir().unwrap();
    let a = dyno(dir.path()).arg("targets").assert().success();
    let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    for scheme in ["mem:", "sqlite:", "fs:", "lmdb:", "mock:"] {
        assert!(
            out.lines().any(|l| l.starts_with(scheme)),
            "{scheme} missing:\n{out}"
        );
    }
    assert!(out.contains("families: kv"));
    assert!(out.contains("synchronous") && out.contains("[default: normal]"));
}

#[test]
fn a_panicking_driver_fails_its_case_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args([
            "run",
            "mock:?panic_every=30",
            "mem:",
            "-n",
            "20",
            "-r",
            "1",
            "--no-warmup",
            "-o",
            "o",
        ])
        .assert()
        .code(3);
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    // Each session's 30th operation is its 10th update: both clients panic there.
    let update = case(&rec, "mock", "update");
    assert_eq!(update["status"], "failed");
    let reason = update["reason"].as_str().unwrap();
    assert!(
        reason
            .contains("client 0: the driver panicked: mock: operation 30 panics (panic_every=30)"),
        "{reason}"
    );
    assert_eq!(case(&rec, "mock", "add")["status"], "ok");
    assert_eq!(case(&rec, "mem", "update")["status"], "ok");
}

#[test]
fn four_topologies_in_one_command_with_the_penalty_table() {
    let dir = tempfile::tempdir().unwrap();
    let a = dyno(dir.path())
        .args([
            "run",
            "--topology",
            "inproc,loopback,lan,wan",
            "-n",
            "10",
            "-r",
            "1",
            "--no-warmup",
            "-o",
            "o",
        ])
        .assert()
        .success();
    let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    let header = out.lines().find(|l| l.starts_with("test ")).unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "test",
            "host-inproc",
            "host-loopback",
            "host-lan",
            "host-wan"
        ]
    );
    assert!(
        out.contains("topology penalty: objects/s, and the ratio to the column before"),
        "{out}"
    );
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    for (target, topology) in [
        ("host-inproc", "inproc"),
        ("host-loopback", "loopback"),
        ("host-lan", "lan"),
        ("host-wan", "wan"),
    ] {
        let c = case(&rec, target, "warm");
        assert_eq!(c["topology"], topology);
        assert_eq!(c["status"], "ok", "{target}: {}", c["reason"]);
    }
    // Each WAN read waits a 40 ms round trip (20 ms each way through the link emulator).
    let wan_p50 = case(&rec, "host-wan", "warm")["summary"]["latency_ns"]["p50"]
        .as_u64()
        .unwrap();
    assert!((36_000_000..50_000_000).contains(&wan_p50), "{wan_p50}");
    let lan = case(&rec, "host-lan", "warm")["summary"]["ops_per_s"]["best"]
        .as_f64()
        .unwrap();
    let inproc = case(&rec, "host-inproc", "warm")["summary"]["ops_per_s"]["best"]
        .as_f64()
        .unwrap();
    assert!(
        lan < inproc / 10.0,
        "a 0.5 ms round trip per read costs: {lan} vs {inproc}"
    );
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn the_shootout_runs_on_the_benchmark_host_and_stats_show_the_server_side() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = host::store::StoreServer::start(l, Default::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        dyno(dir.path())
            .args(["run", "--quick", "-o", "o"])
            .arg(format!("dyno://{}", server.addr()))
            .assert()
            .success()
            .stdout(predicate::str::contains(
                "client and server time per object operation",
            ));
        let rec = record(&dir.path().join("o"));
        assert_schema_valid(&rec);
        for test in TESTS {
            let c = case(&rec, "dyno", test);
            let want = if test == "cold" { "na" } else { "ok" };
            assert_eq!(c["status"], want, "{test}: {}", c["reason"]);
        }
        // The server's own figures for the measured repetition: 2 clients × 100 objects each.
        let add = &case(&rec, "dyno", "add")["server"];
        assert_eq!(add["put"]["count"], 200, "{add}");
        assert_eq!(add["begin"]["count"], 2);
        assert_eq!(add["commit"]["count"], 2);
        assert_eq!(case(&rec, "dyno", "warm")["server"]["get"]["count"], 200);
        let steamin = &case(&rec, "dyno", "steamin")["server"];
        assert!(
            steamin["get"].is_null(),
            "no reads reached the server: {steamin}"
        );
        assert_eq!(steamin["begin"]["count"], 2, "only the transactions did");
        let server_p50 = add["put"]["latency_ns"]["p50"].as_u64().unwrap();
        let client_p50 = case(&rec, "dyno", "add")["summary"]["latency_ns"]["p50"]
            .as_u64()
            .unwrap();
        assert!(
            server_p50 < client_p50,
            "the server's part is a part: {server_p50} < {client_p50}"
        );
        let a = dyno(dir.path())
            .args(["stats", &server.addr().to_string()])
            .assert()
            .success();
        let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
        let puts = out.lines().find(|l| l.starts_with("put ")).unwrap();
        // 2 clients × 100 objects × (add + update) × (warm-up + 1 repetition).
        assert_eq!(puts.split_whitespace().nth(1), Some("800"), "{out}");

        // The magma suite on the same host, its server figures beside the client's.
        let (out, rec) = magma_quick(dir.path(), "magma", &format!("dyno://{}", server.addr()), 0);
        assert_magma_ok(&rec);
        let read = &case(&rec, "dyno", "oneThousandElementArrayOfObjectsRead")["server"];
        assert_eq!(read["get"]["count"], read["mget"]["count"], "{read}");
        assert!(out.contains("client / server / difference"), "{out}");
    }
}
