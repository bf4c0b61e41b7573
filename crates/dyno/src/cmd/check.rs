//! `dyno check`: histories checked again without running anything — those a run wrote
//! (`--check`, in its results directory), or one file of dyno's or of Jepsen's (EDN).

use super::*;
use results::consistency::append::Txn;
use results::consistency::{Op, edn, history, verdict};
use results::{ConsistencyRecord, Verdict};

/// The exit status of a check that found an anomaly, and of one that could not decide.
pub const EXIT_INVALID: u8 = 3;
pub const EXIT_UNKNOWN: u8 = 4;

/// Reads a history file: Jepsen's EDN (`.edn`), else dyno's JSON lines.
fn read_history(path: &Path) -> Result<Vec<Op>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read history {}", path.display()))?;
    let ops = if path.extension().is_some_and(|e| e == "edn") {
        edn::read(&text)
    } else {
        history::read(text.as_bytes())
    };
    ops.map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}\n  hint: a history is dyno's (one JSON object per line, as --check writes it) or Jepsen's (a .edn file of operation maps)",
            path.display()
        )
    })
}

/// Reads a list-append history: Jepsen's EDN (`.edn`), else dyno's JSON lines.
fn read_txns(path: &Path) -> Result<Vec<Txn>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read history {}", path.display()))?;
    let txns = match path.extension().is_some_and(|e| e == "edn") {
        true => edn::read_txns(&text),
        false => history::read_txns(text.as_bytes()),
    };
    txns.map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}\n  hint: a list-append history is dyno's (a transaction per line, as the append suite writes it) or Jepsen's (a .edn file of :txn operations such as {{:type :ok, :f :txn, :value [[:append 3 7] [:r 3 [1 7]]], :process 0}})",
            path.display()
        )
    })
}

/// A history to check: the place its verdict stands for, its file, its tests, and the model
/// its run checked it for (none for a file given alone).
type Found = (String, PathBuf, Vec<String>, Option<String>);

/// The histories a results directory's record names; or the one file given.
fn histories(path: &Path) -> Result<Vec<Found>> {
    if !path.is_dir() {
        let name = path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into());
        return Ok(vec![(name, path.to_path_buf(), Vec::new(), None)]);
    }
    let mut found = Vec::new();
    for dir in results::store::record_dirs(path)? {
        let r = results::store::read_record(&dir.join(results::store::RECORD_FILE))?;
        for c in &r.cases {
            let Some(v) = &c.consistency else { continue };
            let Some(file) = &v.history else { continue };
            if !found.iter().any(|(_, p, _, _)| *p == dir.join(file)) {
                let model = Some(v.model.clone());
                found.push((c.target.clone(), dir.join(file), v.tests.clone(), model));
            }
        }
    }
    if found.is_empty() {
        bail!(
            "{}: no history to check: the run kept none (run it with --check linearizable), or give a history file",
            path.display()
        );
    }
    Ok(found)
}

/// `model`: the one asked for; else each history's run's, or linearizable for a file alone.
pub(super) fn check_cmd(path: &Path, model: Option<&str>, budget: &str) -> Result<ExitCode> {
    let known = |m: &str| {
        results::consistency::MODELS
            .iter()
            .find(|x| x.0 == m)
            .map(|x| x.0)
    };
    if let Some(m) = model.filter(|m| known(m).is_none()) {
        let names: Vec<&str> = results::consistency::MODELS.iter().map(|m| m.0).collect();
        bail!("--model {m:?}: dyno checks {}", names.join(", "));
    }
    let budget = engine::units::parse_duration(budget)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| anyhow::anyhow!("--budget {budget:?}: write a duration such as 10s"))?;
    let mut checked: Vec<(String, ConsistencyRecord)> = Vec::new();
    for (place, file, tests, ran) in histories(path)? {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
        let model = (model.or(ran.as_deref()).and_then(known)).unwrap_or("linearizable");
        let v = match results::consistency::transactional(model) {
            true => verdict::transactional(&read_txns(&file)?, (model, budget), tests, name, None),
            false => verdict::linearizable(&read_history(&file)?, budget, tests, name, None),
        };
        checked.push((place, v));
    }
    let rows: Vec<(String, &ConsistencyRecord)> =
        checked.iter().map(|(p, v)| (p.clone(), v)).collect();
    let mut text = Vec::new();
    report::consistency::table(
        &rows,
        &mut report::grid::Doc::new(report::grid::Style::Text, &mut text),
    )?;
    print_out(&text)?;
    let worst = checked.iter().map(|(_, v)| v.verdict).max();
    Ok(match worst {
        Some(Verdict::Invalid) => ExitCode::from(EXIT_INVALID),
        Some(Verdict::Unknown) => ExitCode::from(EXIT_UNKNOWN),
        _ => ExitCode::SUCCESS,
    })
}
