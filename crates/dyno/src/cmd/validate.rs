//! `dyno validate`: the plan resolved and checked by the code `run` uses, nothing run.

use super::*;

/// Checks the plan at `path`, and as shard `shard` (`I/N`) when given (`meet`: with a
/// rendezvous), as `run` would.
pub(super) fn validate(path: &Path, shard: Option<&str>, meet: bool) -> Result<ExitCode> {
    let Resolved { plan, format } =
        resolve(RawPlan::from_file(path, &crate::suites::catalogue())?)?;
    engine::runner::preflight(&plan)?;
    shard_of(shard, meet, &plan)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}: ok — suite {}, {} objects × {} clients, {} B, {} repetition(s){}, format {}",
        path.display(),
        plan.suite.name(),
        plan.objects,
        plan.clients,
        plan.size,
        plan.reps,
        if plan.warmup { " + warm-up" } else { "" },
        format.name()
    )?;
    for t in &plan.targets {
        let opts: Vec<String> = t
            .config
            .options()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        writeln!(
            out,
            "  {:<12} {:<40} {} [{}]",
            t.name,
            results::redact_url(&t.url),
            t.config.durability(),
            opts.join(" ")
        )?;
    }
    for t in plan.targets.iter().filter(|t| t.process.is_some()) {
        if let Some(p) = &t.process {
            writeln!(out, "  {} process: {p}", t.name)?;
        }
    }
    for f in &plan.faults {
        writeln!(out, "  fault: {f}")?;
    }
    if let Some(c) = &plan.check {
        let budget = c.budget.as_secs_f64();
        writeln!(out, "  check: {}, at most {budget} s per key", c.model)?;
    }
    for l in &plan.levels {
        let targets: Vec<&str> = (l.targets.iter())
            .map(|&i| plan.targets[i].name.as_str())
            .collect();
        let faults: Vec<String> = l.faults.iter().map(|f| f.to_string()).collect();
        writeln!(
            out,
            "  level {}: {}; {}",
            l.name,
            targets.join(", "),
            if faults.is_empty() {
                "undisturbed".to_string()
            } else {
                faults.join("; ")
            }
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
