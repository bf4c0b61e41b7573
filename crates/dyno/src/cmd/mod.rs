//! The commands: glue between the command line, the engine, the drivers and the renderers. One
//! file per subcommand; here the dispatch, the one resolution `run` and `validate` share, the exit
//! statuses, and the helpers several commands use (a run named on the command line, its record).

mod check;
mod compare;
mod drivers;
mod history;
mod keep;
mod merge;
mod render;
mod run;
mod validate;

use self::{
    check::*, compare::*, drivers::*, history::*, keep::*, merge::*, render::*, run::*, validate::*,
};
use crate::cli::{Cli, Command, RunArgs};
use anyhow::{Context, Result, bail};
use engine::plan::{Origin, PlanError, RawPlan, RawTarget, Sp};
use engine::suite::Plan;
use report::Format;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Set by Ctrl-C; every worker checks it between operations.
static INTERRUPT: AtomicBool = AtomicBool::new(false);

use crate::exit::{EXIT_FAILED_CASES, EXIT_INTERRUPTED, EXIT_REGRESSED, EXIT_THRESHOLDS};

/// Writes `bytes` to standard output. A reader that went away (`dyno run … | head -1`) ends the
/// printing quietly, as Unix tools do: everything on disk was written before.
fn print_out(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing the report to standard output"),
    }
}

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run_cmd(*args),
        Command::Validate {
            plan,
            shard,
            rendezvous,
        } => validate(&plan, shard.as_deref(), rendezvous.is_some()),
        Command::Report {
            dir,
            format,
            plots,
            html,
            push,
        } => report_cmd(&dir, &format, (plots.as_deref(), html), &push),
        Command::Merge { dirs, out, format } => merge_cmd(&dirs, out.as_deref(), &format),
        Command::Compare {
            base,
            new,
            results,
            noise,
            format,
            out,
            allow_different,
        } => compare_cmd(
            (&base, &new[..]),
            &results,
            (&noise, &format, out.as_deref()),
            allow_different,
        ),
        Command::History {
            results,
            suite,
            case,
            plot,
            to,
        } => match plot {
            None => history_cmd(&results, suite.as_deref(), case.as_deref()),
            Some(metric) => history_plot(&results, suite.as_deref(), case, &metric, to),
        },
        Command::Baseline {
            action: crate::cli::BaselineAction::Set { name, run, results },
        } => {
            let h = results::history::History::open(&results)?;
            let dir = run_dir(&run, &results)?;
            h.set_baseline(&name, &dir)?;
            eprintln!("dyno: @baseline:{name} is {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Check {
            path,
            model,
            budget,
        } => check_cmd(&path, model.as_deref(), &budget),
        Command::Targets => targets_cmd(),
        Command::AdapterCheck { url } => crate::adapter_check::check(&url),
        Command::Serve(args) => crate::serve::serve(args),
        Command::Stats { addr, token } => crate::serve::stats(&addr, token.as_deref()),
        Command::Link(args) => crate::serve::link(args),
    }
}

/// A resolved plan and its output format: what `run` executes and `validate` checks.
struct Resolved {
    plan: Plan,
    format: Format,
}

fn parse_format(f: Option<&Sp<String>>) -> Result<Format, PlanError> {
    let Some(f) = f else { return Ok(Format::Table) };
    Format::parse(&f.value, crate::suites::views()).ok_or_else(|| {
        PlanError::new(
            f.at.clone(),
            format!(
                "unknown format {:?}; {}formats: {}",
                f.value,
                engine::suggest::did_you_mean(&f.value, Format::names(crate::suites::views())),
                Format::names(crate::suites::views()).join(", ")
            ),
        )
    })
}

/// The single place where input is checked, for `run` and `validate` alike.
fn resolve(raw: RawPlan) -> Result<Resolved, PlanError> {
    let plan = raw.resolve(crate::suites::all(), &targets::Registry)?;
    let format = parse_format(plan.format.as_ref())?;
    Ok(Resolved { plan, format })
}

/// The results root whose history names runs for a run writing to `out`: `out` itself when it
/// holds a history, else its parent when that does, else `out` (`dyno-results` by default).
fn history_root(out: Option<&Path>) -> PathBuf {
    let out = out.unwrap_or(Path::new(results::store::DEFAULT_ROOT));
    let has = |p: &Path| p.join(results::history::FILE).is_file();
    match out.parent() {
        Some(parent) if !has(out) && has(parent) => parent.to_path_buf(),
        _ => out.to_path_buf(),
    }
}

/// Reads `--noise 2%`.
fn parse_noise(noise: &str) -> Result<f64> {
    Ok((noise.strip_suffix('%'))
        .and_then(|n| n.trim().parse::<f64>().ok())
        .filter(|n| n.is_finite() && (0.0..100.0).contains(n))
        .ok_or_else(|| {
            anyhow::anyhow!("--noise {noise:?}: write a percentage below 100, e.g. --noise 2%")
        })?
        / 100.0)
}

/// One saved run: a results directory holding one record, or a record file.
fn one_record(path: &Path) -> Result<results::RunRecord> {
    let mut records = results::store::load(path)?;
    if records.len() != 1 {
        bail!(
            "{}: holds {} runs; name one run's directory or its run.json",
            path.display(),
            records.len()
        );
    }
    Ok(records.remove(0))
}

/// A run named on the command line: a path, or `@last`, `@prev`, `@baseline:NAME` from the
/// history in `root`.
fn run_dir(run: &Path, root: &Path) -> Result<PathBuf> {
    let text = run.to_string_lossy();
    if !text.starts_with('@') {
        return Ok(run.to_path_buf());
    }
    if !root.join(results::history::FILE).is_file() {
        bail!(
            "{text}: {} has no history yet (every run registers itself there as it finishes; --results names another root)",
            root.display()
        );
    }
    Ok(results::history::History::open(root)?.resolve(&text)?)
}
