//! The history of runs: every run registers itself in its results root's history.sqlite;
//! `dyno history` lists them and a case's figures run after run; `@last`, `@prev` and
//! `@baseline:NAME` name runs for `compare`.

use crate::common::*;

#[test]
fn five_runs_are_listed_and_named_by_reference() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = d.join("results");
    for (i, latency) in ["100us", "100us", "100us", "100us", "150us"]
        .iter()
        .enumerate()
    {
        let o = dyno(d)
            .args([
                "run",
                &format!("mock:?latency={latency}"),
                "-n",
                "20",
                "--reps",
                "4",
            ])
            .args(["--quiet", "-o"])
            .arg(root.join(format!("run{i}")))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let root_s = root.to_str().unwrap();
    let o = dyno(d)
        .args(["history", "--results", root_s])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for i in 0..5 {
        assert!(text.contains(&format!("run{i}")), "{text}");
    }
    assert!(text.contains("shootout"), "{text}");
    // A case's figures, run after run: the last one slower.
    let o = dyno(d)
        .args(["history", "--results", root_s, "--case", "add on mock"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.matches("shootout add on mock").count(), 5, "{text}");
    assert!(text.contains("100µs") && text.contains("150µs"), "{text}");
    // The trend, drawn: five points of the case, the last one higher.
    let to = d.join("trend");
    let o = dyno(d)
        .args(["history", "--results", root_s, "--plot", "p50", "--to"])
        .arg(&to)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for ext in ["svg", "png", "dat"] {
        assert!(to.join(format!("trend-p50.{ext}")).is_file(), "{ext}");
    }
    let dat = std::fs::read_to_string(to.join("trend-p50.dat")).unwrap();
    let points: Vec<f64> = (dat.lines())
        .filter(|l| l.starts_with("shootout_add_on_mock"))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    assert_eq!(points.len(), 5, "{dat}");
    assert!(points[4] > points[0] * 1.4, "{points:?}");
    let svg = std::fs::read_to_string(to.join("trend-p50.svg")).unwrap();
    assert!(svg.contains("p50 over runs"), "{svg}");
    // The newest run's page shows the trend; the first run's (no earlier run) does not.
    let page = |run: &str| std::fs::read_to_string(root.join(run).join("report.html")).unwrap();
    assert!(page("run4").contains("id=\"trend\""));
    assert!(!page("run0").contains("id=\"trend\""));
    let o = dyno(d)
        .args(["history", "--results", root_s, "--plot", "p98"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("rate, p50, p99, errors"));
    // @prev against @last: the slower build regressed.
    let o = dyno(d)
        .args([
            "compare",
            "@prev",
            "@last",
            "--results",
            root_s,
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(c["cases"][0]["figures"][1]["figure"], "p50");
    assert_eq!(c["cases"][0]["figures"][1]["verdict"], "regressed");
    // A baseline, named, then compared against.
    let first = root.join("run0");
    let o = dyno(d)
        .args([
            "baseline",
            "set",
            "main",
            first.to_str().unwrap(),
            "--results",
            root_s,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = dyno(d)
        .args([
            "compare",
            "@baseline:main",
            "@prev",
            "--results",
            root_s,
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(c["cases"][0]["figures"][0]["verdict"], "no-change");
    let o = dyno(d)
        .args(["history", "--results", root_s])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("main"));
    // The gate: a run compared, as it ends, with the baseline. The slower build exits 5 and
    // names the regressed figures; the same build passes; the comparison is kept beside the run.
    let gate = |name: &str, latency: &str, more: &[&str]| {
        dyno(d)
            .args([
                "run",
                &format!("mock:?latency={latency}"),
                "-n",
                "20",
                "--reps",
                "4",
                "--quiet",
                "--compare",
                "@baseline:main",
                "-o",
            ])
            .arg(root.join(name))
            .args(more)
            .output()
            .unwrap()
    };
    let o = gate("slow", "150us", &[]);
    assert_eq!(
        o.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("regressed against @baseline:main: rate of shootout add on mock"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("dyno compare · @baseline:main"));
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("slow/compare.json")).unwrap()).unwrap();
    assert_eq!(kept["cases"][0]["figures"][1]["verdict"], "regressed");
    let o = gate("same", "100us", &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A threshold relative to the baseline: 150 µs breaks p50 < baseline * 1.2 (status 4, which
    // comes before the regression's 5); 110 µs holds it, and the record says its limit.
    let o = gate(
        "rel-slow",
        "150us",
        &["--threshold", "p50 < baseline * 1.2"],
    );
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = gate(
        "rel-ok",
        "110us",
        &["--threshold", "p50 < baseline * 1.2", "--noise", "20%"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = record(&root.join("rel-ok"));
    assert_eq!(r["thresholds"][0]["held"], true);
    let limit = r["thresholds"][0]["cases"][0]["limit"].as_str().unwrap();
    assert!(limit.starts_with("120"), "{limit}");
    // Judged as compare judges: the change's interval against the factor.
    let basis = r["thresholds"][0]["cases"][0]["basis"].as_str().unwrap();
    assert!(
        basis.contains("change +10.0%") && basis.contains("does not lie wholly beyond +20.0%"),
        "{basis}"
    );
    // Without a baseline, a relative threshold is refused before anything runs.
    let o = dyno(d)
        .args([
            "run",
            "mock:",
            "-n",
            "5",
            "--quiet",
            "--threshold",
            "p99 < baseline * 1.05",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("relative to a baseline"));
    // An unknown name, and a root without history, say so.
    let o = dyno(d)
        .args(["compare", "@baseline:nope", "@last", "--results", root_s])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("@baseline:nope"));
    let o = dyno(d)
        .args([
            "compare",
            "@last",
            "@prev",
            "--results",
            d.join("none").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("has no history yet"));
}
