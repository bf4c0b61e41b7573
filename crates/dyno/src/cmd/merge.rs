//! `--shard` (this generator's part of a plan, the rendezvous) and `dyno merge` (shards'
//! records made one).

use super::*;

/// `--shard`: which shard this run is, and the identity of its plan (what every shard must
/// share: the resolved plan less what is a generator's own, its threads).
pub(super) fn shard_of(
    shard: Option<&str>,
    meet: bool,
    plan: &Plan,
) -> Result<Option<(engine::shard::Shard, String)>> {
    let Some(text) = shard else {
        return Ok(None);
    };
    let shard = engine::shard::Shard::parse(text, &|k| std::env::var(k).ok())
        .map_err(|e| anyhow::anyhow!("--shard {text}: {e}"))?;
    if !plan.suite.shardable() {
        let can: Vec<&str> = (crate::suites::all().iter())
            .filter(|s| s.shardable())
            .map(|s| s.name())
            .collect();
        bail!(
            "--shard {text}: the {} suite cannot be sharded yet (these can: {}): run one generator",
            plan.suite.name(),
            can.join(", ")
        );
    }
    if let Err(e) = plan.suite.shard_rule(plan, shard, meet) {
        bail!("--shard {text}: {e}");
    }
    if plan.check.is_some() {
        bail!(
            "--shard {text}: a history is checked whole, and each shard sees only its own clients' operations: run --check on one generator"
        );
    }
    // A server the plan starts would be started once per shard, each on its own machine.
    if let Some(t) = (plan.targets.iter()).find(|t| {
        matches!(
            t.process,
            Some(
                engine::plan::ProcessSpec::Start { .. } | engine::plan::ProcessSpec::Members { .. }
            )
        )
    }) {
        bail!(
            "--shard {text}: dyno starts target {}'s processes, and every shard would start its own: start the server once yourself, and give the shards its address",
            t.name
        );
    }
    Ok(Some((shard, results::merge::plan_identity(&plan.record()))))
}

/// `--rendezvous`: meets the other shards (rank 0 listens); `None` without it.
pub(super) fn meet(
    args: &RunArgs,
    shard: engine::shard::Shard,
    plan_id: &str,
) -> Result<Option<engine::shard::Rendezvous>> {
    let Some(addr) = &args.rendezvous else {
        return Ok(None);
    };
    let wait = engine::units::parse_duration(&args.rendezvous_wait)
        .map_err(|e| anyhow::anyhow!("--rendezvous-wait {}: {e}", args.rendezvous_wait))?;
    if !args.quiet {
        eprintln!(
            "dyno: shard {} of {} meeting the others at {addr}",
            shard.index, shard.count
        );
    }
    Ok(Some(engine::shard::Rendezvous::join(
        shard, addr, plan_id, wait,
    )?))
}

pub(super) fn merge_cmd(dirs: &[PathBuf], out: Option<&Path>, format: &str) -> Result<ExitCode> {
    let format = parse_format(Some(&Sp::new(format.to_string(), Origin::Flag("--format"))))?;
    // Each path: a shard's results directory (or its run.json), or the directory the shards
    // wrote into (`-o DIR` of every shard: DIR/shard-I).
    let mut shards = Vec::new();
    for d in dirs {
        let found = if d.is_file() {
            vec![
                d.parent()
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            ]
        } else {
            results::store::record_dirs(d)?
        };
        for dir in found {
            let record = one_record(&dir)?;
            shards.push(results::merge::ShardInput { record, dir });
        }
    }
    // Each suite adds its own figures; a case of a suite this build does not know is refused.
    let detail = |suite: &str, parts: &results::merge::Parts| match crate::suites::all()
        .iter()
        .find(|s| s.name() == suite)
    {
        Some(s) => s.merge_detail(parts),
        None => results::merge::refuse(format!(
            "the {suite} suite is not in this build of dyno: merge its shards with the dyno that ran them"
        )),
    };
    let (mut record, logs) = results::merge::merge(shards, &detail)?;
    // The shards' thresholds are judged here, on the whole load (a shard judged only its
    // part); a relative one needs a baseline run, which a merge has none of.
    let mut thresholds = Vec::new();
    for text in &record.plan.thresholds {
        match results::thresholds::Threshold::parse(text) {
            Ok(t) if t.baseline => eprintln!(
                "dyno: threshold \"{text}\" is relative to a baseline: not judged on the merged run (compare it with `dyno compare BASE MERGED`)"
            ),
            Ok(t) => thresholds.push(t),
            Err(e) => bail!("the shards' threshold \"{text}\": {e}"),
        }
    }
    record.thresholds = results::thresholds::evaluate(&thresholds, &record, None);
    let placement = results::store::claim_run_dir(out, std::time::SystemTime::now())
        .context("-o/--out: give a new or empty directory, or one dyno made")?;
    let dir = placement.dir();
    for log in &logs {
        let ivs: Vec<results::hlog::LogInterval> = (log.intervals.iter())
            .map(|(start_ns, end_ns, h)| results::hlog::LogInterval {
                start_ns: *start_ns,
                end_ns: *end_ns,
                histogram: h,
            })
            .collect();
        let start = std::time::UNIX_EPOCH
            + std::time::Duration::from_nanos(
                (record.cases.iter())
                    .flat_map(|c| c.reps.iter())
                    .find_map(|r| r.load().and_then(|l| l.start_unix_ns))
                    .unwrap_or(0),
            );
        results::hlog::write(&dir.join(&log.file), start, &log.comment, &ivs)
            .with_context(|| format!("writing {}", dir.join(&log.file).display()))?;
    }
    results::store::write_atomic(&dir.join(results::store::RECORD_FILE), &record)?;
    keep_run(dir, &record, false);
    // Said before the report, as the plots and the HTML are: a reader piping the report
    // (`| head`) sees the lines on stderr in one order, not raced against the pipe's reader.
    eprintln!(
        "dyno: {} shards merged into {}",
        record.plan.merged.len(),
        dir.join(results::store::RECORD_FILE).display()
    );
    let mut text = Vec::new();
    report::render(
        format,
        std::slice::from_ref(&record),
        crate::suites::views(),
        &mut text,
    )
    .context("rendering the report")?;
    print_out(&text)?;
    Ok(exit_code(&record))
}
