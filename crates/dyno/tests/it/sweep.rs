//! Sweeps and the namespace suite: the seed's depth (to 30) and width (to 1000) plots on fs: and
//! on the benchmark host, with the plots checked as files a viewer would open.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

/// The SVG is well-formed XML with an `<svg>` root and the target's name in its text.
fn assert_svg(path: &Path, names: &[&str]) {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{}: not valid XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    for n in names {
        assert!(
            doc.descendants()
                .any(|d| d.text().map(str::trim) == Some(*n)),
            "{}: no label {n}",
            path.display()
        );
    }
}

/// The PNG decodes to an image of the plot's size with more than one colour.
fn assert_png(path: &Path) {
    let (w, h, pixels) = decode_png(&std::fs::read(path).unwrap(), &path.display().to_string());
    assert_eq!((w, h), (960, 600));
    assert!(not_blank(&pixels), "{}: a blank image", path.display());
}

/// The `.dat` has a `#` header naming each target's columns, and one row per point.
fn assert_dat(path: &Path, points: &[u64], targets: &[&str]) {
    let text = std::fs::read_to_string(path).unwrap();
    let header = text.lines().rfind(|l| l.starts_with('#')).unwrap();
    for t in targets {
        assert!(header.contains(&format!("{t}_mean_s")), "{header}");
    }
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), points.len(), "{}", path.display());
    for (row, x) in rows.iter().zip(points) {
        assert_eq!(row[0], x.to_string());
        assert_eq!(row.len(), 1 + 3 * targets.len());
        for v in &row[1..] {
            let v: f64 = v.parse().unwrap();
            assert!(v > 0.0 && v < 10.0, "{}: {v} s", path.display());
        }
    }
}

fn sweep_cases<'a>(rec: &'a Value, test: &str) -> Vec<&'a Value> {
    rec["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["test"] == test)
        .collect()
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn depth_and_width_sweeps_on_fs_and_the_host_with_their_plots() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = host::store::StoreServer::start(l, Default::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let out = dyno(dir.path())
            .args([
                "run",
                "fs:",
                &format!("dyno://{}", server.addr()),
                "--suite",
                "namespace",
                "--sweep",
                "depth=1..30",
                "--sweep",
                "width=1,10,100,1000",
                "--samples",
                "2",
                "--quick",
                "-o",
                "o",
            ])
            .assert()
            .success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        assert!(
            stdout.contains("depth: time to create and stat a folder — mean (min – max)"),
            "{stdout}"
        );
        let rec = record(&dir.path().join("o"));
        assert_schema_valid(&rec);
        assert_eq!(
            rec["plan"]["sweeps"][0]["values"].as_array().unwrap().len(),
            30
        );
        let depth = sweep_cases(&rec, "depth");
        let width = sweep_cases(&rec, "width");
        assert_eq!(depth.len(), 60, "30 points × 2 targets");
        assert_eq!(width.len(), 8, "4 points × 2 targets");
        for c in depth.iter().chain(&width) {
            assert_eq!(c["status"], "ok", "{}", c["reason"]);
            assert_eq!(c["reps"].as_array().unwrap().len(), 2, "two samples");
            assert_eq!(
                c["summary"]["latency_ns"]["count"], 4,
                "mkdir + stat per sample"
            );
        }
        let at = |cases: &[&Value], target: &str, x: u64| {
            cases
                .iter()
                .find(|c| c["target"] == target && c["sweep"]["value"] == x)
                .map(|c| c["namespace"]["location"].clone())
                .unwrap()
        };
        assert!(at(&depth, "fs", 30).as_str().unwrap().contains("dyno_"));
        // The host made every folder it was asked to, and one request each.
        let stats = host::store::fetch_stats(server.addr(), None).unwrap();
        let count = |op: &str| stats.iter().find(|s| s.op == op).map_or(0, |s| s.count);
        let chain: u64 = (1..=30u64).map(|d| d - 1).sum();
        let siblings: u64 = [1u64, 10, 100, 1000].iter().map(|w| w - 1 + 1).sum();
        // Two samples and the unmeasured warm-up at each of the 34 points.
        let samples = 3 * (30 + 4);
        assert_eq!(
            count("mkdir"),
            chain + siblings + samples,
            "untimed folders and samples"
        );
        assert_eq!(count("stat"), samples);
        assert_eq!(count("rmdir"), samples);

        let plots = dir.path().join("o/plots");
        let targets = ["fs", "dyno"];
        assert_svg(&plots.join("sweep-depth.svg"), &targets);
        assert_svg(&plots.join("sweep-width.svg"), &targets);
        assert_png(&plots.join("sweep-depth.png"));
        assert_png(&plots.join("sweep-width.png"));
        assert_dat(
            &plots.join("sweep-depth.dat"),
            &(1..=30).collect::<Vec<_>>(),
            &targets,
        );
        assert_dat(
            &plots.join("sweep-width.dat"),
            &[1, 10, 100, 1000],
            &targets,
        );

        // The report re-renders the same tables, and draws the plots again, from the record alone.
        let again = dir.path().join("again");
        let out = dyno(dir.path())
            .args(["report", "o", "--plots"])
            .arg(&again)
            .assert()
            .success();
        assert_eq!(String::from_utf8_lossy(&out.get_output().stdout), stdout);
        assert_eq!(
            std::fs::read(again.join("sweep-width.dat")).unwrap(),
            std::fs::read(plots.join("sweep-width.dat")).unwrap()
        );
    }

    #[test]
    fn the_clients_test_reports_min_mean_max_over_clients_and_per_folder_time() {
        let dir = tempfile::tempdir().unwrap();
        let out = dyno(dir.path())
            .args([
                "run",
                "fs:",
                "host:",
                "--suite",
                "namespace",
                "--sweep",
                "clients=1,4",
                "-o",
                "o",
                "--reps",
                "1",
            ])
            .assert()
            .success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        assert!(
            stdout.contains("clients: time per folder: the slowest client's time / 50"),
            "{stdout}"
        );
        let rec = record(&dir.path().join("o"));
        assert_schema_valid(&rec);
        let cases = sweep_cases(&rec, "clients");
        assert_eq!(cases.len(), 4);
        for c in &cases {
            assert_eq!(c["status"], "ok", "{}", c["reason"]);
            let n = c["sweep"]["value"].as_u64().unwrap();
            let rep = &c["reps"][0];
            assert_eq!(rep["client_ns"].as_array().unwrap().len() as u64, n);
            assert_eq!(rep["ops"], 50 * n, "50 folders per client");
            let slowest = rep["client_ns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .max()
                .unwrap();
            assert_eq!(rep["wall_ns"], slowest);
        }
        let plots = dir.path().join("o/plots");
        assert_png(&plots.join("sweep-clients.png"));
        assert_dat(
            &plots.join("sweep-clients-per-folder.dat"),
            &[1, 4],
            &["fs", "host"],
        );
    }

    #[test]
    fn suites_and_targets_that_do_not_fit_are_refused_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        dyno(dir.path())
            .args(["run", "mem:", "--suite", "namespace"])
            .assert()
            .failure()
            .stderr(predicates::str::contains(
                "target mem speaks kv, graph; the namespace suite needs namespace targets",
            ))
            .stderr(predicates::str::contains("fs: and dyno://"));
        dyno(dir.path())
            .args(["run", "mem:", "--sweep", "depth=1..3"])
            .assert()
            .failure()
            .stderr(predicates::str::contains(
                "--sweep: the shootout suite has no parameter \"depth\" to sweep",
            ));
    }
}
