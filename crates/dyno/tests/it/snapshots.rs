//! The bytes users see: the table, Markdown and CSV renderers on `mock:` targets with fixed
//! latencies on a virtual clock, so every figure is exact and the snapshots are stable.

use crate::common::*;

const TARGETS: [&str; 2] = [
    "mock:?get_latency=100us&put_latency=200us&commit_latency=1ms&slow_every=50&slow_latency=5ms",
    "mock:?latency=1ms&cold=na",
];

fn render(format: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let a = dyno(dir.path())
        .arg("run")
        .args(TARGETS)
        .args([
            "-n",
            "100",
            "-c",
            "2",
            "-r",
            "2",
            "--no-warmup",
            "-o",
            "o",
            "--format",
            format,
        ])
        .assert()
        .success();
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}

#[test]
fn table() {
    insta::assert_snapshot!(render("table"));
}

#[test]
fn markdown() {
    insta::assert_snapshot!(render("markdown"));
}

#[test]
fn csv() {
    // The first column is the run's start time: the one value that changes between runs.
    let text = render("csv");
    let stable: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l.to_string()
            } else {
                let (_, rest) = l.split_once(',').unwrap();
                format!("<started>,{rest}")
            }
        })
        .collect();
    insta::assert_snapshot!(stable.join("\n"));
}
