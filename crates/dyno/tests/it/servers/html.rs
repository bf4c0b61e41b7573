//! The HTML report: one self-contained page per run, checked as bytes (nothing fetched, every
//! plot inline, the same page from the record alone) and in a real headless Chromium (no console
//! errors, every plot drawn, readable at a phone's width).

use crate::common::*;
use std::path::Path;
use testkit::browser::Browser;

/// A quick shootout on four embedded targets: its results directory.
fn quick_run(root: &Path) -> std::path::PathBuf {
    let out = root.join("out");
    dyno(root)
        .args(["run", "--quick", "-o"])
        .arg(&out)
        .assert()
        .success();
    out
}

#[test]
fn the_page_is_self_contained_and_made_again_from_the_record_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = quick_run(dir.path());
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let rec = record(&out);

    // Nothing to fetch: no scripts, no external files, links only within the page.
    for attr in ["src=", "<script", "<link", "url(", "@import"] {
        assert!(!page.contains(attr), "the page refers to something: {attr}");
    }
    for href in page.split("href=\"").skip(1) {
        assert!(href.starts_with('#'), "a link out of the page: {href:.40}");
    }
    // Every plot the run drew, inline.
    let svgs = std::fs::read_dir(out.join("plots"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("svg".as_ref()))
        .count();
    assert!(svgs >= 5, "{svgs} plots");
    assert_eq!(page.matches("<svg").count(), svgs);
    // Every table, the environment and the plan.
    for needle in [
        "<h4>objects/s</h4>",
        "<h4>latency per object operation: p50 / p99 / p99.9</h4>",
        "<h4>notes</h4>",
        "<th class=\"r\">lmdb<br>fsync at commit</th>",
        "<td class=\"l\">steamin</td>",
        "<h2 id=\"environment-0\">Environment</h2>",
        "<h2 id=\"plan-0\">Plan</h2>",
        "<dt>seed</dt>",
        "<dt>targets[3].url</dt>",
    ] {
        assert!(page.contains(needle), "missing {needle}");
    }
    let cpu = rec["environment"]["cpu_model"].as_str().unwrap();
    assert!(page.contains(&format!("<dd>{cpu}</dd>")), "no CPU model");
    // The warm rate of each target, as the terminal table shows it.
    for c in rec["cases"].as_array().unwrap() {
        if c["test"] == "warm" {
            let best = c["summary"]["ops_per_s"]["best"].as_f64().unwrap();
            let cell = format!("{}", best.round() as u64);
            let grouped: String = cell
                .chars()
                .rev()
                .collect::<Vec<_>>()
                .chunks(3)
                .map(|g| g.iter().collect::<String>())
                .collect::<Vec<_>>()
                .join(",")
                .chars()
                .rev()
                .collect();
            assert!(page.contains(&format!(">{grouped}</td>")), "no {grouped}");
        }
    }

    // `dyno report --html` makes the same page from run.json alone.
    let again = dir.path().join("again.html");
    dyno(dir.path())
        .args(["report"])
        .arg(&out)
        .arg(format!("--html={}", again.display()))
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&again).unwrap(), page);
    // And `--html` with no file writes beside the record; `--format html` to stdout.
    std::fs::remove_file(out.join("report.html")).unwrap();
    dyno(dir.path())
        .args(["report", "--html"])
        .arg(&out)
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(out.join("report.html")).unwrap(),
        page
    );
    let stdout = dyno(dir.path())
        .args(["report", "--format", "html"])
        .arg(&out)
        .output()
        .unwrap()
        .stdout;
    assert_eq!(String::from_utf8(stdout).unwrap(), page);
}

/// The console check can fail: a page with a script error and a missing image is caught.
#[test]
fn the_browser_check_sees_console_errors_and_failed_loads() {
    let Some(browser) = Browser::start(800, 600) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><title>bad</title><img src=\"missing.png\" alt=\"\">\
         <script>console.error('deliberate')</script>",
    )
    .unwrap();
    browser.open(&format!("file://{}", bad.display()));
    let log = browser.console();
    let severe: Vec<_> = log.iter().filter(|e| e.level == "SEVERE").collect();
    assert!(
        severe.iter().any(|e| e.message.contains("deliberate")),
        "{log:?}"
    );
    assert!(
        severe.iter().any(|e| e.message.contains("missing.png")),
        "{log:?}"
    );
}

#[test]
fn the_page_in_headless_chromium_has_no_console_errors_and_fits_a_phone() {
    let Some(browser) = Browser::start(1280, 900) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = quick_run(dir.path());
    let page = out.join("report.html");
    let svgs = std::fs::read_to_string(&page)
        .unwrap()
        .matches("<svg")
        .count();
    browser.open(&format!("file://{}", page.display()));

    let log = browser.console();
    let bad: Vec<_> = log
        .iter()
        .filter(|e| e.level == "SEVERE" || e.level == "WARNING")
        .collect();
    assert!(bad.is_empty(), "console: {bad:?}");

    // Every plot is drawn with a size, and the tables are tables.
    let drawn = browser.eval(
        "return [...document.querySelectorAll('figure svg')]
            .filter(s => s.getBoundingClientRect().width > 300 && s.getBoundingClientRect().height > 150).length",
    );
    assert_eq!(drawn.as_u64(), Some(svgs as u64));
    let tables = browser.eval("return document.querySelectorAll('table').length");
    assert_eq!(tables.as_u64(), Some(2));

    let shot = browser.screenshot();
    let (w, _, pixels) = decode_png(&shot, "the desktop screenshot");
    assert_eq!(w, 1280);
    assert!(not_blank(&pixels));
    std::fs::write(dir.path().join("desktop.png"), &shot).unwrap();

    // A phone: the page does not scroll sideways (wide tables scroll in their own box) and the
    // plots shrink to the screen.
    browser.resize(390, 844);
    let fits = browser.eval(
        "return [document.documentElement.scrollWidth, window.innerWidth,
                 Math.max(...[...document.querySelectorAll('figure svg')]
                     .map(s => s.getBoundingClientRect().right))]",
    );
    let [scroll, inner, right] = [0, 1, 2].map(|i| fits[i].as_f64().unwrap());
    assert!(inner <= 400.0, "the window did not shrink: {fits}");
    assert!(
        scroll <= inner,
        "the page scrolls sideways on a phone: {fits}"
    );
    assert!(right <= inner, "a plot is wider than a phone: {fits}");
    let (_, _, pixels) = decode_png(&browser.screenshot(), "the phone screenshot");
    assert!(not_blank(&pixels));
    assert!(browser.console().is_empty());
}
