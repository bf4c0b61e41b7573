//! The shootout against a real Redis (a private instance on a free loopback port).

use crate::common::*;

#[test]
fn shootout_on_redis_in_its_own_prefix_and_nothing_left_behind() {
    let Some(r) = Redis::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = dyno(dir.path())
        .args(["run", "--quick", "-o", "o"])
        .arg(format!("redis://127.0.0.1:{}", r.port))
        .assert()
        .success();
    let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    assert!(
        out.contains("no AOF, no RDB"),
        "durability read from the server:\n{out}"
    );
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    for test in ["add", "update", "warm", "cold", "hot", "steamin"] {
        let c = case(&rec, "redis", test);
        let want = if test == "cold" { "na" } else { "ok" };
        assert_eq!(c["status"], want, "{test}: {}", c["reason"]);
        assert_eq!(c["topology"], "loopback");
    }
    assert_eq!(
        case(&rec, "redis", "add")["versions"]["redis"]
            .as_str()
            .unwrap()
            .split('.')
            .count(),
        3
    );
    assert_eq!(dbsize(r.port), 0, "dyno removed exactly what it wrote");
}

#[test]
fn magma_on_redis_reads_in_batches_and_leaves_nothing_behind() {
    let Some(r) = Redis::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_, rec) = magma_quick(dir.path(), "o", &format!("redis://127.0.0.1:{}", r.port), 0);
    assert_magma_ok(&rec);
    assert_eq!(dbsize(r.port), 0, "dyno removed exactly what it wrote");
}

/// 200 clients carried by 2 generator threads (fibers on event loops): every client's session
/// is its own connection, and every read it makes is checked against what it wrote (a reply
/// delivered to the wrong client would fail its test as corrupt).
#[test]
fn two_hundred_clients_on_two_threads_each_read_back_what_they_wrote() {
    let Some(r) = Redis::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (clients, objects) = (200u64, 20u64);
    dyno(dir.path())
        .args([
            "run",
            "-c",
            "200",
            "--threads",
            "2",
            "-n",
            "20",
            "--reps",
            "1",
            "-o",
            "o",
        ])
        .arg(format!("redis://127.0.0.1:{}", r.port))
        .assert()
        .success();
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    assert_eq!(rec["plan"]["threads"], 2);
    assert_eq!(rec["plan"]["concurrency"], 200);
    for test in ["add", "update", "warm", "hot", "steamin"] {
        let c = case(&rec, "redis", test);
        assert_eq!(c["status"], "ok", "{test}: {}", c["reason"]);
        let rep = &c["reps"][0];
        assert_eq!(rep["ops"].as_u64(), Some(clients * objects), "{test}");
        assert_eq!(rep["errors"].as_u64(), Some(0), "{test}");
        let per_client = rep["client_ns"].as_array().unwrap();
        assert_eq!(per_client.len() as u64, clients, "{test}");
        assert!(per_client.iter().all(|t| t.as_u64().unwrap() > 0), "{test}");
        let store = &rep["detail"]["store"];
        assert!(store["client_cpu_ns"].as_u64().unwrap() > 0, "{test}");
        if test == "warm" || test == "hot" {
            // Every read went to Redis, and each value was checked against its key and version.
            assert_eq!(
                store["storage_reads"].as_u64(),
                Some(clients * objects),
                "{test}"
            );
        }
    }
    assert_eq!(dbsize(r.port), 0, "dyno removed exactly what it wrote");
}
