//! Redis behind Sentinel, started by dyno as a cluster of six members (a primary, two replicas,
//! three sentinels): `redis+sentinel://` finds the primary through the sentinels, and follows a
//! failover when a fault kills the primary.

use crate::common::*;
use std::path::Path;

/// The cluster plan, with `extra` appended (flags go on the command line).
fn plan(dir: &Path, extra: &str) -> Option<std::path::PathBuf> {
    let redis = testkit::installed("redis-server", &["/usr/bin/redis-server"])?;
    let cli = testkit::installed("redis-cli", &["/usr/bin/redis-cli"])?;
    let redis = redis.display();
    let server = format!("{redis} --port {{port}} --save '' --appendonly no");
    let sentinel = "port {port}\\nsentinel monitor m 127.0.0.1 {port.p} 2\\nsentinel down-after-milliseconds m 1000\\nsentinel failover-timeout m 3000\\n";
    let mut text = String::from(
        r#"[suite]
name = "shootout"

[targets.r]
url = "redis+sentinel://127.0.0.1:{port.s1},127.0.0.1:{port.s2},127.0.0.1:{port.s3}/m"

[targets.r.process]
"#,
    );
    // Who is primary now: the sentinels' answer names its port.
    text.push_str(&format!(
        "role = \"{} -p {{port.s2}} sentinel get-master-addr-by-name m\"\n",
        cli.display()
    ));
    let member = |name: &str, cmd: &str, file: Option<&str>| {
        let file = file
            .map(|f| format!("file = \"{f}\"\n"))
            .unwrap_or_default();
        format!("\n[[targets.r.process.members]]\nname = \"{name}\"\ncmd = \"{cmd}\"\n{file}")
    };
    text.push_str(&member("p", &server, None));
    for r in ["r1", "r2"] {
        text.push_str(&member(
            r,
            &format!("{server} --replicaof 127.0.0.1 {{port.p}}"),
            None,
        ));
    }
    for s in ["s1", "s2", "s3"] {
        text.push_str(&member(
            s,
            &format!("{redis} {{file}} --sentinel"),
            Some(sentinel),
        ));
    }
    text.push_str(extra);
    let path = dir.join("sentinel.toml");
    std::fs::write(&path, text).unwrap();
    Some(path)
}

#[test]
fn the_primary_is_found_through_sentinel_and_followed_after_a_failover() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(p) = plan(
        dir.path(),
        "\n[[faults]]\naction = \"kill\"\nmember = \"primary\"\nat = \"2s,8s\"\nafter = \"3s\"\n",
    ) else {
        return;
    };
    let out = dir.path().join("out");
    let o = dyno(dir.path())
        .args([
            "run",
            p.to_str().unwrap(),
            "-n",
            "50",
            "-c",
            "2",
            // Enough for the second kill at 8 s: since writes go as one pipelined MULTI, 300
            // repetitions could end before it on a fast machine.
            "--reps",
            "1000",
            "--no-warmup",
        ])
        .args(["-o", out.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    // An operation in flight when the primary died failed (its outcome is unknown): such a case
    // is failed, and the run exits 3.
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rec = record(&out);
    assert_schema_valid(&rec);
    // The role query named the first primary, then the replica Sentinel promoted.
    let events = rec["faults"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["target"], "r/p");
    let second = events[1]["target"].as_str().unwrap();
    assert!(second == "r/r1" || second == "r/r2", "{events:?}");
    assert!(events.iter().all(|e| e["note"].is_null()), "{events:?}");
    // Sessions that found no primary asked the sentinels again until the failover named a new
    // one, no sooner than Sentinel's down-after-milliseconds (1 s), and every case ran clean. A
    // session idle through the failover (kept from warm into hot, since cold is n/a before any
    // session closes) finds the new primary at once when it next works: only the longest
    // reconnection must have waited for the failover.
    let cases = rec["cases"].as_array().unwrap();
    let follows: Vec<&serde_json::Value> = (cases.iter())
        .filter_map(|c| c["server"].get("reconnect"))
        .collect();
    let count: u64 = follows.iter().filter_map(|r| r["count"].as_u64()).sum();
    assert!(count >= 1, "no reconnection: {cases:?}");
    let longest = (follows.iter())
        .map(|r| r["latency_ns"]["max"].as_u64().unwrap())
        .max()
        .unwrap_or(0);
    assert!(
        (1_000_000_000..30_000_000_000).contains(&longest),
        "{follows:?}"
    );
    for c in cases.iter().filter(|c| c["status"] == "failed") {
        let why = c["reason"].as_str().unwrap();
        assert!(
            why.contains("reset") || why.contains("refused") || why.contains("io"),
            "{why}"
        );
    }
    // The repetitions after the failover ran on the new primary, clean.
    let add = cases.iter().find(|c| c["test"] == "add").unwrap();
    let reps = add["reps"].as_array().unwrap();
    assert!(reps.len() >= 250, "{} repetitions", reps.len());
    assert!(
        reps[reps.len() - 10..].iter().all(|r| r["errors"] == 0),
        "{reps:?}"
    );
    let versions = &add["versions"]["redis"];
    assert!(versions.as_str().unwrap().starts_with('7'), "{versions}");
}

#[test]
fn a_primary_back_empty_before_sentinel_noticed_lost_acknowledged_writes_and_the_check_says_so() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    // Killed 2 s in and started again 200 ms later — sooner than Sentinel's
    // down-after-milliseconds (1 s) — the primary, without persistence, comes back empty and
    // still primary; its replicas resynchronise from it and empty too (Redis's documentation
    // warns of exactly this). Every write it had acknowledged is gone.
    let fault =
        "\n[[faults]]\naction = \"kill\"\nmember = \"primary\"\nat = [\"2s\"]\nafter = \"200ms\"\n";
    let Some(p) = plan(dir.path(), fault) else {
        return;
    };
    let out = dir.path().join("out");
    let args = [
        "--suite",
        "ycsb-a",
        "-n",
        "20",
        "-c",
        "2",
        "--operations",
        "8000",
    ];
    let o = dyno(dir.path())
        .args([
            "run",
            p.to_str().unwrap(),
            "--rate",
            "2000",
            "--check",
            "linearizable",
        ])
        .args(args)
        .args(["-o", out.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rec = record(&out);
    assert_schema_valid(&rec);
    let events = rec["faults"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (&events[0]["target"], &events[0]["note"]),
        (&"r/p".into(), &serde_json::Value::Null)
    );
    let v = &rec["cases"][1]["consistency"];
    assert_eq!(v["verdict"], "invalid", "{v}");
    // A read after the restart found nothing where a write had been acknowledged before it
    // began: the proof names both.
    let proofs = v["proofs"].as_array().unwrap();
    let lost = proofs.iter().find(|p| {
        p["why"]
            .as_str()
            .is_some_and(|w| w.ends_with("a write lost"))
    });
    let lost = lost.unwrap_or_else(|| panic!("no lost write among {proofs:?}"));
    let ops: Vec<&str> = lost["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert!(
        ops.iter().any(|o| o.contains(" write ")) && ops.iter().any(|o| o.contains(" read ")),
        "{lost}"
    );
    let why = lost["why"].as_str().unwrap();
    assert!(
        why.contains("found nothing") && why.contains("had been acknowledged"),
        "{why}"
    );
}
