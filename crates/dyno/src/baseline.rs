//! A baseline as comparisons and relative thresholds need it: the run's record, and this
//! machine's run-to-run noise of its plan, measured over the earlier runs its results root's
//! history holds (see `results::compare::noise`).

use results::compare::{Baseline, run_noise};
use std::path::{Path, PathBuf};

/// The most recent runs read to measure the run-to-run noise: enough for a steady estimate,
/// few enough that reading their records stays under a second.
pub const MAX_RUNS: usize = 30;

/// `record` (the run in `dir`) with the run-to-run noise of its plan from the history of `dir`'s
/// results root (its parent when that holds a history, else `root`), leaving out the run in
/// `judged` (the run to be compared must not measure its own noise).
pub fn with_noise(
    dir: &Path,
    record: results::RunRecord,
    root: &Path,
    judged: Option<&Path>,
) -> Baseline {
    let has = |p: &Path| p.join(results::history::FILE).is_file();
    let root = match dir.parent() {
        Some(p) if has(p) => p.to_path_buf(),
        _ => root.to_path_buf(),
    };
    let earlier = earlier_runs(&root, (dir, &record.plan.suite), judged);
    let noise = run_noise(&record, &earlier);
    Baseline { record, noise }
}

/// The records of the latest [`MAX_RUNS`] runs of `suite` registered in `root`'s history with
/// the plan of the base in `base_dir` (and its commit, when it was registered with one), but
/// the one in `judged`. A run whose record cannot be read is left out (it may have been moved).
fn earlier_runs(
    root: &Path,
    (base_dir, suite): (&Path, &str),
    judged: Option<&Path>,
) -> Vec<results::RunRecord> {
    if !root.join(results::history::FILE).is_file() {
        return Vec::new();
    }
    let runs = match results::history::History::open(root).and_then(|h| h.runs(Some(suite))) {
        Ok(runs) => runs,
        Err(e) => {
            eprintln!(
                "dyno: warning: the history's runs are not read for the run-to-run noise: {e}"
            );
            return Vec::new();
        }
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    // The base's own plan (targets and options included), and its own build when the history
    // knows its commit: runs of another plan or build would count their differences as the
    // machine's noise. A base the history does not hold has no runs to measure it by.
    let Some(own) = runs.iter().find(|r| same(Path::new(&r.dir), base_dir)) else {
        return Vec::new();
    };
    (runs.iter().rev())
        .filter(|r| r.plan_hash == own.plan_hash)
        .filter(|r| own.commit.is_none() || r.commit == own.commit)
        .map(|r| PathBuf::from(&r.dir))
        .filter(|d| !judged.is_some_and(|j| same(d, j)))
        .take(MAX_RUNS)
        .filter_map(|d| results::store::read_record(&d.join("run.json")).ok())
        .collect()
}
