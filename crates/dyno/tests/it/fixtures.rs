//! Records saved by earlier versions of dyno render as they did: `dyno report` on the fixtures in
//! `tests/fixtures/` (schema `dyno.run/1`, written before the record changes that follow it) gives
//! the same bytes in every format, and draws its HTML page and plots. `run-1/` holds records
//! written by the dyno of 2026-11-23 and `run-1-old/` ones written by the dyno of session 6,
//! before `max_lag` and `tls_handshake_ns` existed.

use crate::common::*;
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut all = Vec::new();
    for set in ["run-1", "run-1-old"] {
        let Ok(dirs) = std::fs::read_dir(root.join(set)) else {
            continue;
        };
        for d in dirs {
            all.push(d.unwrap().path());
        }
    }
    all.sort();
    assert!(all.len() >= 5, "fixtures missing: {all:?}");
    all
}

fn report(dir: &Path, args: &[&str]) -> String {
    let cwd = tempfile::tempdir().unwrap();
    let a = dyno(cwd.path())
        .arg("report")
        .arg(dir)
        .args(args)
        .assert()
        .success();
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}

#[test]
fn saved_records_render_the_same_in_every_format() {
    for dir in fixtures() {
        let name = format!(
            "{}-{}",
            dir.parent().unwrap().file_name().unwrap().to_string_lossy(),
            dir.file_name().unwrap().to_string_lossy()
        );
        assert_schema_valid(&record(&dir));
        for format in ["table", "markdown", "csv", "summary-json"] {
            let text = report(&dir, &["-f", format]);
            insta::assert_snapshot!(format!("{name}-{format}"), text);
        }
    }
}

#[test]
fn saved_records_draw_their_page_and_plots() {
    for dir in fixtures() {
        let out = tempfile::tempdir().unwrap();
        let html = out.path().join("page.html");
        let plots = out.path().join("plots");
        let cwd = tempfile::tempdir().unwrap();
        dyno(cwd.path())
            .arg("report")
            .arg(&dir)
            .arg(format!("--html={}", html.display()))
            .arg("--plots")
            .arg(&plots)
            .assert()
            .success();
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("<table"), "{}", dir.display());
        if cfg!(feature = "plots") {
            let n = std::fs::read_dir(&plots).map_or(0, |d| d.count());
            assert!(n > 0, "no plots for {}", dir.display());
        }
    }
}
