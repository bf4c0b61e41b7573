//! Request mixes through the real binary: a plan's `[[targets.NAME.requests]]` and a vegeta
//! requests file, each request drawn by weight and measured under its name; bad mixes refused
//! where they were written, before anything runs.

use crate::common::*;
use serde_json::Value;

/// A plan of one target at `url` whose mix is `requests` (TOML tables' bodies).
fn plan(dir: &std::path::Path, url: &str, requests: &[&str]) -> std::path::PathBuf {
    let mut text = format!("[targets.shop]\nurl = \"{url}\"\nheaders = \"X-Shop: 1\"\n");
    for r in requests {
        text.push_str(&format!("\n[[targets.shop.requests]]\n{r}\n"));
    }
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_bad_mix_is_refused_where_it_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let url = "http://127.0.0.1:9/";
    let run = |requests: &[&str]| {
        let p = plan(d, url, requests);
        refused_run(d, &[p.to_str().unwrap(), "--suite", "load"])
    };
    let err = run(&["path = \"/a\"", "path = \"/b\"\nwieght = 2"]);
    assert!(err.contains("plan.toml:10:1"), "{err}");
    assert!(err.contains("did you mean \"weight\"?"), "{err}");
    let err = run(&["weight = 0", "weight = 0"]);
    assert!(err.contains("every request's weight is 0"), "{err}");
    let err = run(&["path = \"/a\"", "path = \"b\""]);
    assert!(
        err.contains("plan.toml:9:8: http: request 2 of the mix: \"b\" is not a path"),
        "{err}"
    );
    let err = run(&["name = \"x\"", "name = \"x\""]);
    assert!(err.contains("\"x\" names two requests"), "{err}");
    // A check or a template of one request is placed at that request's key.
    let err = run(&[
        "path = \"/a\"",
        "path = \"/b\"\nchecks = [\"stauts == 200\"]",
    ]);
    assert!(
        err.contains("plan.toml:10:10: http: request 2 of the mix: check `stauts == 200`"),
        "{err}"
    );
    let err = run(&["path = \"/a\"", "path = \"/b/{{sequ}}\""]);
    assert!(
        err.contains(
            "plan.toml:9:8: http: request 2 of the mix: at column 4: unknown template field"
        ),
        "{err}"
    );
    let err = run(&["headers = [\"Content-Length: 3\"]"]);
    assert!(err.contains("Content-Length is set by dyno"), "{err}");
    // A mix on a target that sends no HTTP requests.
    std::fs::write(
        d.join("kv.toml"),
        "[targets.m]\nurl = \"mem:\"\n[[targets.m.requests]]\npath = \"/\"\n",
    )
    .unwrap();
    let err = refused_run(d, &["kv.toml"]);
    assert!(err.contains("takes no mix of requests"), "{err}");

    // A requests file: its line named.
    let f = d.join("targets.txt");
    std::fs::write(
        &f,
        "GET http://127.0.0.1:9/a\n\nGET http://127.0.0.1:10/b\n",
    )
    .unwrap();
    let err = refused_run(d, &[url, "--requests-file", "targets.txt"]);
    assert!(
        err.contains("targets.txt:3: http://127.0.0.1:10/b is not on the target's"),
        "{err}"
    );
    let err = refused_run(d, &["mem:", "--requests-file", "targets.txt"]);
    assert!(
        err.contains("--requests-file applies to http:// and https:// and h2c:// targets"),
        "{err}"
    );
}

/// Each request's count in `rec`'s first repetition, by name, and their sum.
fn counts(rec: &Value) -> (std::collections::BTreeMap<String, u64>, u64) {
    let by_op = rec["cases"][0]["reps"][0]["by_op"].as_object().unwrap();
    let counts: std::collections::BTreeMap<String, u64> = (by_op.iter())
        .map(|(k, v)| (k.clone(), v["count"].as_u64().unwrap()))
        .collect();
    let total = counts.values().sum();
    (counts, total)
}

mod servers {
    use super::*;

    /// Three weighted requests, 100,000 in all, at nginx: each request's count is within 2% of
    /// its weight's share, nginx's log holds exactly what dyno counted under each name, and
    /// the table has a row per request.
    #[test]
    fn a_mix_sends_each_request_in_its_share() {
        let _serial = serial();
        let n = Nginx::start_logged().expect("nginx (./scripts/test installs it)");
        let dir = tempfile::tempdir().unwrap();
        let p = plan(
            dir.path(),
            &n.url("/"),
            &[
                "name = \"item\"\npath = \"/items/1\"\nweight = 5",
                "name = \"search\"\npath = \"/search?q=lamp\"\nweight = 3",
                "name = \"order\"\nmethod = \"POST\"\npath = \"/orders\"\nbody = '{\"id\": 7}'\nheaders = [\"Content-Type: application/json\"]\nweight = 2",
            ],
        );
        let out = dyno(dir.path())
            .arg("run")
            .arg(&p)
            .args([
                "--suite",
                "load",
                "--requests",
                "25000",
                "-c",
                "4",
                "-r",
                "1",
                "-o",
                "o",
            ])
            .assert()
            .success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        let rec = record(&dir.path().join("o"));
        assert_schema_valid(&rec);
        let (counts, total) = counts(&rec);
        assert_eq!(total, 100_000);
        for (name, weight) in [("item", 5), ("search", 3), ("order", 2)] {
            let share = counts[name] as f64 / total as f64;
            let want = weight as f64 / 10.0;
            assert!(
                (share / want - 1.0).abs() < 0.02,
                "{name}: {share} of the requests, against {want}"
            );
            let figures = &rec["cases"][0]["reps"][0]["by_op"][name];
            assert_eq!(figures["weight"], weight);
            assert_eq!(figures["errors"], 0);
            assert!(figures["service_ns"]["p99"].as_u64().unwrap() > 0);
        }
        let log = n.requests();
        let sent = |line: &str| log.iter().filter(|l| *l == line).count() as u64;
        assert_eq!(log.len() as u64, total, "nginx saw every request once");
        assert_eq!(sent("GET /items/1"), counts["item"]);
        assert_eq!(sent("GET /search?q=lamp"), counts["search"]);
        assert_eq!(sent("POST /orders"), counts["order"]);
        for row in [
            "shop: per request of the mix",
            "item     5 (50.00%)",
            "order    2 (20.00%)",
        ] {
            assert!(stdout.contains(row), "{row:?} in\n{stdout}");
        }
        let options = &rec["plan"]["targets"][0]["options"]["requests"];
        assert_eq!(options, "item ×5; search ×3; order ×2");
    }

    /// A vegeta requests file on HTTP/2 (h2c://, four streams per connection) at dyno's
    /// reference server: each request measured under its name, a HEAD among them.
    #[test]
    fn a_requests_file_on_http2() {
        let _serial = serial();
        let s = RefServer::start();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("h2c://127.0.0.1:{}", s.port);
        std::fs::write(
            dir.path().join("targets.txt"),
            format!(
                "GET {url}/a\nX-Trace: 1\n\n# the body is a file\nPOST /b\n@body.json\n\nHEAD /a\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join("body.json"), "{\"k\": 1}").unwrap();
        dyno(dir.path())
            .args(["run", &format!("{url}/"), "--requests-file", "targets.txt"])
            .args([
                "--streams",
                "4",
                "-c",
                "2",
                "--requests",
                "1500",
                "-r",
                "1",
                "-o",
                "o",
            ])
            .assert()
            .success();
        let rec = record(&dir.path().join("o"));
        assert_schema_valid(&rec);
        let (counts, total) = counts(&rec);
        assert_eq!(total, 2 * 4 * 1500);
        assert_eq!(
            counts.keys().collect::<Vec<_>>(),
            ["GET /a", "HEAD /a", "POST /b"]
        );
        for (name, n) in &counts {
            let share = *n as f64 / total as f64;
            assert!((share - 1.0 / 3.0).abs() < 0.03, "{name}: {share}");
            assert_eq!(
                rec["cases"][0]["reps"][0]["by_op"][name]["errors"], 0,
                "{name}"
            );
        }
    }
}
