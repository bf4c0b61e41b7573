//! What a finished run leaves beside its record: its place in the history, its plots and its
//! HTML report (`run`, `merge` and `report` all keep a run this way).

use super::*;

/// What a finished run leaves beside its record: its place in its results root's history, its
/// plots and its HTML report. A shard's part of a run is not registered (its figures are a part
/// of the plan's, and would read as a run of it in the trends): `dyno merge` registers the
/// whole.
pub(super) fn keep_run(out_dir: &Path, record: &results::RunRecord, quiet: bool) {
    if record.plan.shard.is_none() {
        register(out_dir, record);
    }
    write_plots(record, &out_dir.join("plots"), quiet);
    let html = out_dir.join("report.html");
    let trend = trend_rows(out_dir, record);
    match write_html(std::slice::from_ref(record), &trend, &html) {
        Ok(()) if quiet => {}
        Ok(()) => eprintln!("dyno: HTML report written to {}", html.display()),
        Err(e) => eprintln!("dyno: warning: {e:#}"),
    }
}

/// The history of `record`'s cases (at most 12 of them, the last 50 runs each) up to the run in
/// `dir`, from its results root's history: the HTML report's trend. Empty without a history.
pub(super) fn trend_rows(
    dir: &Path,
    record: &results::RunRecord,
) -> Vec<results::history::CaseRow> {
    let Some(root) = dir.parent() else {
        return Vec::new();
    };
    if !root.join(results::history::FILE).is_file() {
        return Vec::new();
    }
    let names: Vec<String> = (record.cases.iter().take(12))
        .map(|c| c.id().to_string())
        .collect();
    results::history::History::open(root)
        .and_then(|h| h.trend(&names, dir, 50))
        .unwrap_or_else(|e| {
            eprintln!("dyno: warning: the history's trend is left out: {e}");
            Vec::new()
        })
}

/// Draws a record's plots (SVG, PNG, `.dat`) into `dir`; a failure is a warning, not a lost run.
pub(super) fn write_plots(record: &results::RunRecord, dir: &Path, quiet: bool) {
    #[cfg(feature = "plots")]
    match report::plots::write_all(record, crate::suites::views(), dir) {
        Ok(files) if files.is_empty() || quiet => {}
        Ok(files) => eprintln!(
            "dyno: {} plot files (SVG, PNG, .dat) written to {}",
            files.len(),
            dir.display()
        ),
        Err(e) => eprintln!("dyno: warning: the plots could not be drawn: {e}"),
    }
    #[cfg(not(feature = "plots"))]
    {
        let _ = (record, dir, quiet);
    }
}

/// Writes the HTML page of `records` to `path` (atomically: a reader never sees half a page).
pub(super) fn write_html(
    records: &[results::RunRecord],
    trend: &[results::history::CaseRow],
    path: &Path,
) -> Result<()> {
    let mut page = Vec::new();
    report::html::render_with_trend(records, crate::suites::views(), trend, &mut page)
        .context("rendering the HTML report")?;
    let tmp = path.with_extension("html.tmp");
    std::fs::write(&tmp, &page)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("writing {}", path.display()))
}

/// Registers a finished run in its results root's history; a failure is a warning, the run's
/// record is written already.
pub(super) fn register(out_dir: &Path, record: &results::RunRecord) {
    let Some(root) = out_dir.parent() else { return };
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let registered = results::history::History::open(root)
        .and_then(|mut h| h.register(out_dir, record, commit.as_deref()));
    if let Err(e) = registered {
        eprintln!("dyno: warning: the run was not registered in the history: {e}");
    }
}
