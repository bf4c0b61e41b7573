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
            "--reps",
            "300",
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
