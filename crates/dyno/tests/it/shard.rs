//! Shards: N `dyno run --shard I/N` processes against one server on loopback, met at a
//! rendezvous, then `dyno merge`. The merge is checked against the shards' own records, added
//! up here independently (HdrHistogram decoded by hand, bucket by bucket); an open loop's rate
//! is split so that the merged arrivals interleave evenly; a shard that never comes, a plan
//! that differs and a missing rank are refused by name.

use crate::common::*;
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Starts shard `i` of `n` (`dyno run ARGS --shard i/n --rendezvous ADDR -o out`: it writes
/// out/shard-I).
fn shard(dir: &Path, args: &[&str], (i, n): (u32, u32), rendezvous: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_dyno"))
        .current_dir(dir)
        .args(["run"])
        .args(args)
        .args(["--shard", &format!("{i}/{n}"), "--rendezvous", rendezvous])
        .args(["-o", "out", "-q", "--rendezvous-wait", "30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `n` shards of `args` together and waits for all; panics with their output if one fails.
fn run_shards(dir: &Path, args: &[&str], n: u32) {
    let rendezvous = format!("127.0.0.1:{}", testkit::free_port());
    let children: Vec<Child> = (0..n)
        .map(|i| shard(dir, args, (i, n), &rendezvous))
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        let o = c.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "shard {i}: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

/// `dyno merge out EXTRA…` in `dir`.
fn merge(dir: &Path, extra: &[&str]) -> std::process::Output {
    dyno(dir)
        .args(["merge", "out"])
        .args(extra)
        .output()
        .unwrap()
}

fn decode(text: &str) -> Histogram<u64> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap();
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .unwrap()
}

/// Histograms added here, independently of dyno's merge.
fn added(parts: impl IntoIterator<Item = Histogram<u64>>) -> Histogram<u64> {
    let mut sum = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    sum.auto(true);
    for h in parts {
        sum.add(h).unwrap();
    }
    sum
}

/// A histogram's buckets: (value, count) of each recorded one.
fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

fn load(rec: &Value) -> &Value {
    &rec["cases"][0]["reps"][0]["detail"]["load"]
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The decoded histogram of `op` in `test`'s first repetition on `target` of a ycsb record.
fn ycsb_op(rec: &Value, target: &str, test: &str, op: &str) -> Histogram<u64> {
    let c = case(rec, target, test);
    decode(c["reps"][0]["by_op"][op]["histogram"].as_str().unwrap())
}

#[test]
fn ycsb_shards_need_a_rendezvous_and_a_store_they_can_share() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let o = dyno(dir.path())
        .args(["run", "--suite", "ycsb", "mem:", "-c", "2"])
        .args(["--shard", "0/2", "-o", "out"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("give --rendezvous"), "{err}");
    // A store in dyno's own process cannot be shared: rank 0 says so and the other shard
    // ends with it, both at once.
    let rendezvous = format!("127.0.0.1:{}", testkit::free_port());
    let t = std::time::Instant::now();
    let children: Vec<Child> = (0..2)
        .map(|i| {
            shard(
                dir.path(),
                &["--suite", "ycsb", "mem:", "-n", "100", "-c", "2"],
                (i, 2),
                &rendezvous,
            )
        })
        .collect();
    let outs: Vec<String> = (children.into_iter())
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            assert!(!o.status.success());
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .collect();
    assert!(t.elapsed() < std::time::Duration::from_secs(20), "at once");
    assert!(
        outs[0].contains("data lives in this process"),
        "{}",
        outs[0]
    );
    assert!(outs[1].contains("rank 0 could not open"), "{}", outs[1]);
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn ycsb_shards_load_their_slices_into_one_namespace_and_merge_exactly() {
        let _g = serial();
        let (Some(redis), Some(pg)) = (Redis::start(), testkit::Postgres::start()) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let redis_url = format!("redis://127.0.0.1:{}", redis.port);
        // 3,001 records over 3 shards: slices of 1,001, 1,000 and 1,000, one after the other; 7
        // clients (3, 2, 2) share each workload's 3,001 operations. Two targets, one after the
        // other: the shards meet as often on each.
        run_shards(
            dir.path(),
            &[
                "--suite",
                "ycsb",
                &redis_url,
                &pg.url(),
                "-n",
                "3001",
                "--operations",
                "3001",
                "-c",
                "7",
                "--threshold",
                "errors <= 0",
            ],
            3,
        );
        let shards: Vec<Value> = (0..3)
            .map(|i| record(&dir.path().join(format!("out/shard-{i}"))))
            .collect();
        let targets = ["redis", "postgres"];
        for target in targets {
            let mut namespaces = Vec::new();
            for (i, s) in shards.iter().enumerate() {
                assert_schema_valid(s);
                let load = case(s, target, "load");
                let figures = &load["reps"][0]["detail"]["custom"]["figures"];
                let (start, count) = [(0, 1001), (1001, 1000), (2001, 1000)][i];
                assert_eq!(n(&figures["insertstart"]), start, "shard {i}");
                assert_eq!(n(&figures["insertcount"]), count, "shard {i}");
                assert_eq!(n(&load["reps"][0]["ops"]), count);
                assert_eq!(n(&load["reps"][0]["clients"]), [3, 2, 2][i]);
                // Every workload ran, and every read, of any shard's records, came back right.
                for test in ["a", "b", "c", "d", "e", "f"] {
                    let c = case(s, target, test);
                    assert_eq!(
                        c["status"], "ok",
                        "shard {i} {target} {test}: {}",
                        c["reason"]
                    );
                    for (op, f) in c["reps"][0]["by_op"].as_object().unwrap() {
                        assert_eq!(n(&f["errors"]), 0, "shard {i} {target} {test} {op}");
                    }
                }
                namespaces.push(load["namespace"]["location"].as_str().unwrap().to_string());
            }
            assert!(
                namespaces.iter().all(|n| *n == namespaces[0]),
                "one namespace: {namespaces:?}"
            );
            assert!(namespaces[0].contains("dyno_shard_"), "{}", namespaces[0]);
        }
        // Rank 0 deleted each once every shard was done: nothing is left on either server.
        assert_eq!(dbsize(redis.port), 0, "no key left behind");
        assert_eq!(dyno_schemas(&pg.url()), 0, "no schema left behind");
        // Workload a's operations by global client number: clients 0–4 take 429, 5 and 6 take
        // 428; shard 0 runs clients 0–2, shard 1 3–4, shard 2 5–6.
        let ops = |s: &Value, target: &str, t: &str| n(&case(s, target, t)["reps"][0]["ops"]);
        assert_eq!(
            shards
                .iter()
                .map(|s| ops(s, "redis", "a"))
                .collect::<Vec<_>>(),
            [1287, 858, 856]
        );
        let o = merge(dir.path(), &["-o", "merged"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let merged = record(&dir.path().join("merged"));
        assert_schema_valid(&merged);
        // Each kind's histogram: the shards' added bucket by bucket, here, by hand.
        for target in targets {
            for t in ["load", "a", "b", "c", "d", "e", "f"] {
                assert_eq!(ops(&merged, target, t), 3001, "{target} {t}");
                let parts: u64 = shards.iter().map(|s| ops(s, target, t)).sum();
                assert_eq!(ops(&merged, target, t), parts);
            }
            for (test, op) in [
                ("load", "INSERT"),
                ("a", "READ"),
                ("a", "UPDATE"),
                ("e", "SCAN"),
            ] {
                let expected = added(shards.iter().map(|s| ycsb_op(s, target, test, op)));
                let got = ycsb_op(&merged, target, test, op);
                assert_eq!(buckets(&got), buckets(&expected), "{target} {test} {op}");
            }
        }
        let figures = &case(&merged, "redis", "load")["reps"][0]["detail"]["custom"]["figures"];
        assert_eq!(
            figures["slices"],
            serde_json::json!([[0, 1001], [1001, 1000], [2001, 1000]])
        );
        let a = &case(&merged, "redis", "a")["reps"][0]["detail"]["custom"]["figures"];
        assert_eq!(n(&a["key_draws"]), 3001);
        assert!(a["distinct_keys_at_least"].as_u64().unwrap() > 0, "{a}");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains(
                "redis load: records loaded by 3 shards: shard 0 0..1001, shard 1 1001..2001, shard 2 2001..3001"
            ),
            "{text}"
        );
        // Judged, compared and rendered as any run.
        assert_eq!(
            merged["thresholds"][0]["held"], true,
            "{}",
            merged["thresholds"]
        );
        let c = dyno(dir.path())
            .args(["compare", "out/shard-0", "merged"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&c.stderr);
        assert!(
            err.contains("load generators (shards merged): 1 → 3"),
            "{err}"
        );
        let again = dyno(dir.path())
            .args(["report", "merged", "-f", "markdown"])
            .output()
            .unwrap();
        assert!(again.status.success());
        assert!(String::from_utf8_lossy(&again.stdout).contains("3 shards merged"));
        drop((redis, pg));
    }

    #[test]
    fn kv_shards_write_their_own_keys_and_check_them_back() {
        let _g = serial();
        let Some(redis) = Redis::start() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let target = format!("redis://127.0.0.1:{}", redis.port);
        // 300 entries loaded in slices of 100; 5 clients (2, 2, 1), each setting its own 60 keys
        // (k mod 5 = its number among all), for 1 s a test.
        let args = [
            "--suite",
            "kv",
            &target,
            "-n",
            "300",
            "-c",
            "5",
            "--duration",
            "1s",
        ];
        run_shards(dir.path(), &args, 3);
        let shards: Vec<Value> = (0..3)
            .map(|i| record(&dir.path().join(format!("out/shard-{i}"))))
            .collect();
        let kv = |r: &Value, t: &str| case(r, "redis", t)["reps"][0]["detail"]["kv"].clone();
        for (i, s) in shards.iter().enumerate() {
            assert_schema_valid(s);
            for t in ["get", "set"] {
                let c = case(s, "redis", t);
                assert_eq!(c["status"], "ok", "shard {i} {t}: {}", c["reason"]);
                assert_eq!(n(&c["reps"][0]["clients"]), [2, 2, 1][i]);
            }
            // Every own key written in a second, and each shard checks only its clients'.
            let lost = &kv(s, "set")["lost_writes"];
            assert_eq!(n(&lost["checked"]), [120, 120, 60][i], "{lost}");
        }
        assert_eq!(dbsize(redis.port), 0, "rank 0 deleted the shared keys");
        let o = merge(dir.path(), &["-o", "merged"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let merged = record(&dir.path().join("merged"));
        assert_schema_valid(&merged);
        for t in ["get", "set"] {
            let m = kv(&merged, t);
            for f in ["issued", "ok", "definite", "indefinite"] {
                let parts: u64 = shards.iter().map(|s| n(&kv(s, t)[f])).sum();
                assert_eq!(n(&m[f]), parts, "{t} {f}");
            }
            // The series added interval by interval: as many requests as in the whole.
            let per_interval: u64 = (m["intervals"].as_array().unwrap().iter())
                .map(|i| n(&i["ok"]))
                .sum();
            assert_eq!(per_interval, n(&m["ok"]), "{t}");
        }
        // Every key had one writer among all shards' clients: had two shards' clients shared a key,
        // one's older write would overwrite the other's acknowledged one, and read back as stale.
        let lost = &kv(&merged, "set")["lost_writes"];
        assert_eq!(n(&lost["checked"]), 300, "{lost}");
        assert_eq!(
            n(&lost["missing"]) + n(&lost["stale"]) + n(&lost["unread"]),
            0,
            "{lost}"
        );
        assert!(String::from_utf8_lossy(&o.stdout).contains("3 shards merged"));
        // Faults act from one generator: a sharded kv run with them is refused.
        let o = dyno(dir.path())
            .args(["run", "--suite", "kv", &target, "-c", "2"])
            .args(["--fault", "restart-clients every=500ms"])
            .args(["--shard", "0/2", "--rendezvous", "127.0.0.1:1", "-o", "x"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("run without them for now"), "{err}");
        drop(redis);
    }

    #[test]
    fn eight_shards_merge_exactly_into_one_record() {
        let _g = serial();
        let server = RefServer::start();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{}/", server.port);
        // A closed loop: 8 connections, one per shard, 300 requests each; two thresholds, judged
        // on the merged run only (each shard exits 0: run_shards asserts it).
        run_shards(
            dir.path(),
            &[
                &url,
                "-c",
                "8",
                "--requests",
                "300",
                "--threshold",
                "errors <= 0",
                "--threshold",
                "rate > 1000000000",
            ],
            8,
        );
        let o = merge(dir.path(), &["-o", "merged"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(4),
            "the merged run broke a threshold: {err}"
        );
        assert!(
            err.contains("threshold(s) failed: rate > 1000000000"),
            "{err}"
        );
        let merged = record(&dir.path().join("merged"));
        assert_schema_valid(&merged);
        let shards: Vec<Value> = (0..8)
            .map(|i| record(&dir.path().join(format!("out/shard-{i}"))))
            .collect();
        for (i, s) in shards.iter().enumerate() {
            assert_schema_valid(s);
            assert_eq!(s["plan"]["shard"]["index"], i as u64);
            assert_eq!(n(&load(s)["requests"]), 300, "one connection of 300");
            // Its interval log, tagged with its rank.
            let log =
                std::fs::read_to_string(dir.path().join(format!("out/shard-{i}/latency.hlog")))
                    .unwrap();
            assert!(log.contains(&format!("shard {i} of 8")), "{log}");
        }
        // The merged interval log: the shards' added interval by interval.
        let log = std::fs::read_to_string(dir.path().join("merged/latency.hlog")).unwrap();
        assert!(log.contains("dyno merge of 8 shards"), "{log}");
        assert!(log.lines().any(|l| l.starts_with("0.000,")), "{log}");
        // Counts: the sum of the shards'.
        let sum = |f: &dyn Fn(&Value) -> &Value| shards.iter().map(|s| n(f(s))).sum::<u64>();
        let m = load(&merged);
        assert_eq!(n(&m["requests"]), 2400);
        assert_eq!(n(&m["requests"]), sum(&|s| &load(s)["requests"]));
        assert_eq!(n(&m["responses"]), sum(&|s| &load(s)["responses"]));
        assert_eq!(n(&m["ok"]), sum(&|s| &load(s)["ok"]));
        assert_eq!(
            n(&merged["cases"][0]["reps"][0]["ops"]),
            sum(&|s| &s["cases"][0]["reps"][0]["ops"])
        );
        // The histogram: the shards' added bucket by bucket, here, by hand.
        let of = |r: &Value| {
            decode(
                r["cases"][0]["reps"][0]["by_op"]["request"]["histogram"]
                    .as_str()
                    .unwrap(),
            )
        };
        let expected = added(shards.iter().map(of));
        let got = of(&merged);
        assert_eq!(got.len(), 2400);
        assert_eq!(got.len(), expected.len());
        assert_eq!(buckets(&got), buckets(&expected), "bucket by bucket");
        assert_eq!(got.max(), expected.max());
        // The case's histogram too, and the percentiles the table shows come from it.
        let case_h = decode(merged["cases"][0]["histogram"].as_str().unwrap());
        assert_eq!(buckets(&case_h), buckets(&expected));
        assert_eq!(
            n(&merged["cases"][0]["summary"]["latency_ns"]["p99"]),
            expected.value_at_quantile(0.99)
        );
        // Each shard's self-check kept; the merged verdict is theirs together.
        let checks = m["shards"].as_array().unwrap();
        assert_eq!(checks.len(), 8);
        let all_valid = checks.iter().all(|c| c["generator"]["valid"] == true);
        assert_eq!(m["generator"]["valid"], all_valid);
        assert_eq!(merged["plan"]["merged"].as_array().unwrap().len(), 8);
        assert!(merged["plan"]["shard"].is_null());
        let judged: Vec<(&str, bool)> = (merged["thresholds"].as_array().unwrap().iter())
            .map(|t| {
                (
                    t["threshold"].as_str().unwrap(),
                    t["held"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            judged,
            [("errors <= 0", true), ("rate > 1000000000", false)],
            "{}",
            merged["thresholds"]
        );
        // Compared with itself: nothing changed, and nothing differs.
        let c = dyno(dir.path())
            .args(["compare", "merged", "merged"])
            .output()
            .unwrap();
        assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
        // Against one of its shards: the number of generators differs, and compare says so.
        let c = dyno(dir.path())
            .args(["compare", "out/shard-0", "merged"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&c.stderr);
        assert!(
            err.contains("load generators (shards merged): 1 → 8"),
            "{err}"
        );
        // The merged run renders as any other, and is the run the history knows: a shard's part
        // is not registered (it would read as a run of the plan at 1/8 of its load).
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("2,400"), "{text}");
        assert!(dir.path().join("merged/report.html").is_file());
        assert!(!dir.path().join("out/history.sqlite").exists());
        let h = dyno(dir.path())
            .args(["history", "--results", "."])
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&h.stdout);
        assert!(h.status.success(), "{}", String::from_utf8_lossy(&h.stderr));
        assert!(listed.contains("merged"), "{listed}");
        assert!(!listed.contains("shard-"), "{listed}");
        let again = dyno(dir.path())
            .args(["report", "merged", "-f", "markdown"])
            .output()
            .unwrap();
        assert!(again.status.success());
        drop(server);
    }

    /// Shards of gRPC calls (HTTP/2 underneath, several streams per connection) merge as
    /// HTTP/1.1's do: counts added, the histogram the sum of the shards', thresholds judged on
    /// the merged run.
    #[test]
    fn grpc_shards_merge_exactly() {
        let _g = serial();
        let server = RefServer::start();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("grpc://127.0.0.1:{}/dyno.example.Echo/Say", server.port);
        let proto = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/grpc/echo.proto"
        );
        let args = [
            &url,
            "--proto",
            proto,
            "-c",
            "2",
            "--streams",
            "4",
            "--requests",
            "200",
        ];
        let mut args = args.to_vec();
        args.extend(["--threshold", "errors <= 0", "--threshold", "p99 < 10s"]);
        run_shards(dir.path(), &args, 2);
        let o = merge(dir.path(), &["-o", "merged"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let merged = record(&dir.path().join("merged"));
        assert_schema_valid(&merged);
        let shards: Vec<Value> = (0..2)
            .map(|i| record(&dir.path().join(format!("out/shard-{i}"))))
            .collect();
        // One connection each, 4 streams of 200 calls.
        for s in &shards {
            assert_eq!(n(&load(s)["ok"]), 800, "{}", load(s));
        }
        assert_eq!(n(&load(&merged)["ok"]), 1600);
        let h = |r: &Value| decode(r["cases"][0]["histogram"].as_str().unwrap());
        let sum = added(shards.iter().map(h));
        assert_eq!(buckets(&h(&merged)), buckets(&sum));
        assert_eq!(
            merged["thresholds"][1]["held"], true,
            "{}",
            merged["thresholds"]
        );
    }

    #[test]
    fn four_shards_split_an_open_loop_rate_and_their_arrivals_interleave() {
        // Alone (every test here is serial): the spacing measured is of real sends, which a busy
        // machine delays. 400/s: a gap of 2.5 ms, far above a loopback round trip.
        let _g = serial();
        let server = RefServer::start();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{}/", server.port);
        let (rate, gap) = (400.0, 2_500_000.0);
        run_shards(
            dir.path(),
            &[
                &url,
                "-c",
                "8",
                "--rate",
                "400",
                "--duration",
                "3s",
                "-r",
                "1",
                "--max-lag",
                "1s",
            ],
            4,
        );
        let o = merge(dir.path(), &["-o", "merged", "-f", "json"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let merged = record(&dir.path().join("merged"));
        assert_schema_valid(&merged);
        let m = load(&merged);
        // Each shard asked for a quarter; together the rate asked for, within 2%.
        for i in 0..4 {
            let s = record(&dir.path().join(format!("out/shard-{i}")));
            assert_eq!(load(&s)["generator"]["intended_per_s"], 100.0);
            assert!(s["plan"]["shard"]["rtt_ns"].is_u64());
        }
        let achieved = m["generator"]["achieved_per_s"].as_f64().unwrap();
        assert!(
            (achieved - rate).abs() <= rate * 0.02,
            "merged rate {achieved} against {rate}"
        );
        let requests = n(&m["requests"]) as f64;
        assert!(
            (requests - rate * 3.0).abs() <= rate * 3.0 * 0.02,
            "{requests}"
        );
        // The merged arrivals: one every 1/rate, each shard's interleaved between the others'.
        let a = &m["interarrival"];
        assert_eq!(a["intended_gap_ns"], gap);
        let gaps = decode(a["histogram"].as_str().unwrap());
        assert_eq!(gaps.len() + 1, n(&a["sends"]));
        let window_s = n(&a["window_ns"]) as f64 / 1e9;
        let sends = n(&a["sends"]) as f64;
        assert!(
            (sends - rate * window_s).abs() <= rate * window_s * 0.02 + 4.0,
            "{a}"
        );
        // Evenly spaced: the median gap is the intended one (a shard that started off its phase,
        // or all shards at once, would make gaps of 0 and 4/rate instead).
        let p50 = gaps.value_at_quantile(0.5) as f64;
        assert!((p50 - gap).abs() < gap * 0.15, "median gap {p50} ns: {a}");
        let p25 = gaps.value_at_quantile(0.25) as f64;
        assert!(p25 > gap * 0.5, "a quarter of the gaps under {p25} ns: {a}");
        drop(server);
    }

    #[test]
    fn a_shard_that_never_comes_fails_the_run_naming_its_rank() {
        let _g = serial();
        let server = RefServer::start();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{}/", server.port);
        let rendezvous = format!("127.0.0.1:{}", testkit::free_port());
        let o = dyno(dir.path())
            .args(["run", &url, "--requests", "10", "-c", "3"])
            .args(["--shard", "0/3", "--rendezvous", &rendezvous])
            .args(["--rendezvous-wait", "1s", "-o", "out"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("shards 1, 2 of 3 did not arrive"), "{err}");
        // --shard auto outside Slurm or a Job says what it looked for.
        let o = dyno(dir.path())
            .args(["run", &url, "--shard", "2/4"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--shard needs -o DIR"), "{err}");
        let o = dyno(dir.path())
            .args(["run", &url, "--shard", "auto"])
            .env_remove("SLURM_PROCID")
            .env_remove("JOB_COMPLETION_INDEX")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("SLURM_PROCID") && err.contains("JOB_COMPLETION_INDEX"),
            "{err}"
        );
        // A swept client count below the shards' would leave a shard with nothing to do.
        let o = dyno(dir.path())
            .args(["run", &url, "-c", "4", "--sweep", "clients=1,4"])
            .args(["--shard", "0/2", "-o", "out"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("1 clients cannot be split over 2 shards"),
            "{err}"
        );
        // A plan that starts its server would start it once per shard: refused, before anything
        // starts.
        let plan = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/faults.toml");
        let o = dyno(dir.path())
            .args(["run", plan, "--shard", "0/2", "-o", "out"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("dyno starts target web's processes, and every shard would start its own"),
            "{err}"
        );
        drop(server);
    }

    #[test]
    fn merge_refuses_shards_of_other_plans_and_missing_ranks() {
        let _g = serial();
        let server = RefServer::start();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{}/", server.port);
        // Runs of two shards with different request counts, and one of three.
        for (tag, requests, shards) in [("a", "20", 2), ("b", "30", 2), ("c", "20", 3)] {
            let sub = dir.path().join(tag);
            std::fs::create_dir(&sub).unwrap();
            run_shards(&sub, &[&url, "-c", "3", "--requests", requests], shards);
        }
        // `dyno merge DIRS…` refused, and why.
        let refused = |dirs: &[&str]| -> String {
            let o = dyno(dir.path()).arg("merge").args(dirs).output().unwrap();
            assert_eq!(o.status.code(), Some(1), "merge {dirs:?} was not refused");
            String::from_utf8_lossy(&o.stderr).into_owned()
        };
        let err = refused(&["a/out/shard-0", "b/out/shard-1"]);
        assert!(
            err.contains("shard 1 ran another plan") && err.contains("requests_per_connection"),
            "{err}"
        );
        let err = refused(&["a/out/shard-0", "a/out/shard-0"]);
        assert!(err.contains("shard 0 is given twice"), "{err}");
        let err = refused(&["c/out/shard-0", "c/out/shard-1"]);
        assert!(err.contains("shard 2 of 3 missing"), "{err}");
        let err = refused(&["a/out/shard-0", "c/out/shard-1"]);
        assert!(err.contains("is a shard of 3"), "{err}");
        // A plain run is not a shard.
        let o = dyno(dir.path())
            .args([
                "run",
                &url,
                "--requests",
                "5",
                "-c",
                "1",
                "-o",
                "plain",
                "-q",
            ])
            .output()
            .unwrap();
        assert!(o.status.success());
        let err = refused(&["a/out/shard-0", "plain"]);
        assert!(err.contains("not a shard's record"), "{err}");
        drop(server);
    }
}
