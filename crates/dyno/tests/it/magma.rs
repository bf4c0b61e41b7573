//! The `magma` suite: MagmaBenchmarker's tests, in four topologies on dyno's own host.

use crate::common::*;

const TESTS: [&str; 17] = [
    "timeToDisconnect",
    "timeToConnect",
    "peakRefreshRate",
    "singleObjectRead",
    "oneThousandElementArrayRead",
    "oneThousandElementArrayOfObjectsRead",
    "oneMillionObjectPointersRead",
    "oneThousandLevelsDeepRead",
    "peakCommitRate",
    "oneThousandElementArrayCommit",
    "a1001BufferCommit",
    "aOneMillionBufferCommit",
    "getMagmaArraySize",
    "updateThousandsOfMagmaArrayElements",
    "addThousandsOfObjectsTenAtATime",
    "addThousandsOfObjectsOneHundredAtATime",
    "addThousandsOfObjectsAtOnce",
];

fn best(rec: &serde_json::Value, target: &str, test: &str) -> f64 {
    case(rec, target, test)["summary"]["ops_per_s"]["best"]
        .as_f64()
        .unwrap_or_else(|| panic!("{target} {test}: no rate"))
}

#[test]
fn magma_verifies_what_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = magma_quick(dir.path(), "o", "mock:?latency=10us&corrupt_every=7", 3);
    let c = case(&rec, "mock", "oneThousandLevelsDeepRead");
    assert_eq!(c["status"], "failed", "{c}");
    assert!(c["errors"]["corrupt"].as_u64().unwrap() > 0, "{c}");
    assert!(out.contains("failed"), "{out}");
}

#[test]
fn magma_refuses_the_shootout_sizes_and_vice_versa() {
    let dir = tempfile::tempdir().unwrap();
    dyno(dir.path())
        .args(["run", "--suite", "magma", "-c", "4", "mem:"])
        .assert()
        .code(1)
        .stderr(
            "Error: --concurrency: concurrency is a setting of the shootout suite; magma runs one client session\n  \
             hint: size the magma suite with --thousands (elements per array, levels of the chain, objects per collection)\n",
        );
    dyno(dir.path())
        .args(["run", "--thousands", "10", "mem:"])
        .assert()
        .code(1)
        .stderr(
            "Error: --thousands: thousands is a setting of the magma suite, and this run is shootout\n  \
             hint: add --suite magma\n",
        );
    dyno(dir.path())
        .args(["run", "--suite", "magma", "--thousands", "5000", "mem:"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "--thousands: thousands must be at most 2000, got 5000",
        ));
    dyno(dir.path())
        .args(["run", "--suite", "magma", "http://127.0.0.1:9/"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "speaks request; the magma suite needs graph targets",
        ));
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn four_topologies_on_the_host_in_quick_mode() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let a = dyno(dir.path())
            .args([
                "run",
                "--suite",
                "magma",
                "--quick",
                "--no-warmup",
                "--thousands",
                "10",
                "--topology",
                "inproc,loopback,lan,wan",
                "-o",
                "o",
            ])
            .assert()
            .success();
        let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
        let rec = record(&dir.path().join("o"));
        assert_schema_valid(&rec);
        assert_eq!(rec["plan"]["magma"]["thousands"], 10);
        let targets = ["host-inproc", "host-loopback", "host-lan", "host-wan"];
        for t in targets {
            for test in TESTS {
                let c = case(&rec, t, test);
                assert_eq!(c["status"], "ok", "{t} {test}: {}", c["reason"]);
            }
            let remote = t != "host-inproc";
            let server = &case(&rec, t, "oneThousandElementArrayOfObjectsRead")["server"];
            assert_eq!(server.is_object(), remote, "{t}: server figures {server}");
            if remote {
                // An array read and its objects in one batch: one GET and one MGET per operation.
                let gets = server["get"]["count"].as_u64().unwrap();
                let mgets = server["mget"]["count"].as_u64().unwrap();
                assert_eq!(gets, mgets, "{t}: {server}");
            }
        }
        // Each step out costs: a read over the emulated WAN (20 ms each way) is slower than over the
        // LAN, which is slower than loopback.
        let read = |t| best(&rec, t, "singleObjectRead");
        assert!(read("host-loopback") > read("host-lan"));
        assert!(read("host-lan") > read("host-wan"));
        assert!(
            read("host-wan") < 1000.0 / 39.0,
            "one read a round trip of ≥ 40 ms"
        );
        // Ten levels deep over the WAN: ten dependent reads of ≥ 40 ms round trips each.
        let deep_s = 1.0 / best(&rec, "host-wan", "oneThousandLevelsDeepRead");
        assert!(
            deep_s > 10.0 * 0.038,
            "ten dependent round trips: {deep_s} s"
        );

        for want in [
            "Hardware Details:",
            "thousands : 10",
            "connectionTests",
            "  oneThousandLevelsDeepRead",
            "magmaCollectionTests",
            "per second",
            " seconds",
            "topology penalty",
            "loopback → lan",
            "client / server / difference",
        ] {
            assert!(out.contains(want), "{want:?} missing from:\n{out}");
        }
    }

    #[test]
    fn the_link_of_a_topology_is_set_in_the_plan() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("plan.toml"),
            "[suite]\nname = \"magma\"\nthousands = 2\ntest_time = \"50ms\"\nreps = 1\nwarmup = false\n\
             topology = \"wan\"\n[targets.host]\nurl = \"host:\"\nwan_delay = \"5ms\"\nwan_jitter = \"0\"\nwan_rate = \"0\"\n",
        )
        .unwrap();
        dyno(dir.path())
            .args(["run", "plan.toml", "-o", "o"])
            .assert()
            .success();
        let rec = record(&dir.path().join("o"));
        assert_eq!(
            rec["plan"]["targets"][0]["durability"],
            "volatile, wan (5ms ± 0s one way, no cap)"
        );
        // A read is a round trip: never faster than twice the one-way delay.
        let read = best(&rec, "host-wan", "singleObjectRead");
        assert!(read < 101.0, "{read} reads/s over a 10 ms round trip");
    }
}
