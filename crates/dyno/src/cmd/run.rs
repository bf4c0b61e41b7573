//! `dyno run`: a plan from the flags (or a file), run, its record kept (history, plots, HTML),
//! its exit status, and the gate against `--compare`.

use super::*;

/// The request flags given, as the driver options they set: (option, flag, value).
fn given_request_flags(a: &RunArgs) -> Vec<(&'static str, &'static str, String)> {
    let text: [(&'static str, &'static str, &Option<String>); 18] = [
        ("method", "--method", &a.method),
        ("body", "--body", &a.body),
        ("body_file", "--body-file", &a.body_file),
        ("requests_file", "--requests-file", &a.requests_file),
        ("scenario", "--scenario", &a.scenario),
        ("think", "--think", &a.think),
        ("templates", "--templates", &a.templates),
        ("data_rows", "--data-rows", &a.data_rows),
        ("data_order", "--data-order", &a.data_order),
        ("ca", "--ca", &a.ca),
        ("streams", "--streams", &a.streams),
        ("version", "--http-version", &a.http_version),
        ("proto", "--proto", &a.proto),
        ("data", "--data", &a.data),
        ("data_file", "--data-file", &a.data_file),
        ("deadline", "--deadline", &a.deadline),
        (
            "keepalive",
            "--no-keepalive",
            &a.no_keepalive.then(|| "false".into()),
        ),
        ("insecure", "--insecure", &a.insecure.then(|| "true".into())),
    ];
    let lists: [(&'static str, &'static str, &Vec<String>, &str); 4] = [
        ("headers", "--header", &a.headers, "\n"),
        ("checks", "--expect", &a.expect, "\n"),
        ("capture", "--capture", &a.capture, "\n"),
        ("import_path", "--import-path", &a.import_path, ","),
    ];
    let mut given: Vec<(&'static str, &'static str, String)> = (text.into_iter())
        .filter_map(|(name, flag, v)| Some((name, flag, v.clone()?)))
        .collect();
    given.extend(
        (lists.into_iter())
            .filter(|(_, _, v, _)| !v.is_empty())
            .map(|(name, flag, v, sep)| (name, flag, v.join(sep))),
    );
    if a.expect_fail {
        given.push(("checks_fail", "--expect-fail", "true".to_string()));
    }
    given
}

/// Request flags become options of the targets named on the command line: the HTTP ones of
/// every target, the TLS ones of every https:// target (and of none is refused).
pub(super) fn request_flags(a: &RunArgs, targets: &mut [RawTarget]) -> Result<()> {
    let given = given_request_flags(a);
    for (name, flag, value) in given {
        // TLS flags go to https:// and grpcs:// targets, HTTP/2's to those speaking it, gRPC's
        // to gRPC's; the others to all.
        let schemes: &[&str] = match name {
            "ca" | "insecure" => &["https:", "grpcs:"],
            "version" => &["https:"],
            "requests_file" | "templates" | "data_rows" | "data_order" | "checks"
            | "checks_fail" | "capture" | "scenario" | "think" => &["http:", "https:", "h2c:"],
            "streams" => &["h2c:", "https:", "grpc:", "grpcs:"],
            "proto" | "import_path" | "data" | "data_file" | "deadline" => &["grpc:", "grpcs:"],
            _ => &[],
        };
        let mut named = 0;
        for t in targets
            .iter_mut()
            .filter(|t| schemes.is_empty() || schemes.iter().any(|s| t.url.value.starts_with(s)))
        {
            named += 1;
            t.options.push((
                Sp::new(name.to_string(), Origin::Flag(flag)),
                Sp::new(value.clone(), Origin::Flag(flag)),
            ));
        }
        if !schemes.is_empty() && named == 0 {
            let which = schemes
                .iter()
                .map(|s| format!("{s}//"))
                .collect::<Vec<_>>()
                .join(" and ");
            return Err(PlanError::new(
                Origin::Flag(flag),
                format!("{flag} applies to {which} targets, and none was named"),
            )
            .into());
        }
    }
    Ok(())
}

/// Builds the raw plan from the command line: a plan file, or target URLs, then the flags.
pub(super) fn raw_from_args(a: &RunArgs) -> Result<RawPlan> {
    let is_plan = |s: &str| s.ends_with(".toml");
    let mut raw = match a.targets.iter().position(|t| is_plan(t)) {
        Some(0) if a.targets.len() == 1 => {
            RawPlan::from_file(Path::new(&a.targets[0]), &crate::suites::catalogue())?
        }
        Some(_) => {
            return Err(PlanError::new(
                Origin::Arg(1),
                "a plan file and target URLs were both given",
            )
            .hint("name the targets in the plan's [targets.NAME] sections, or give URLs alone")
            .into());
        }
        None => RawPlan {
            targets: a
                .targets
                .iter()
                .enumerate()
                .map(|(i, url)| RawTarget {
                    name: None,
                    url: Sp::new(url.clone(), Origin::Arg(i + 1)),
                    options: Vec::new(),
                    process: None,
                    requests: Vec::new(),
                })
                .collect(),
            ..RawPlan::default()
        },
    };
    let flag = |v: Option<i64>, name: &'static str| v.map(|v| Sp::new(v, Origin::Flag(name)));
    let sflag =
        |v: &Option<String>, name: &'static str| v.clone().map(|v| Sp::new(v, Origin::Flag(name)));
    request_flags(a, &mut raw.targets)?;
    for (key, value) in a.settings.0.entries() {
        raw.settings.set(key, value.clone());
    }
    raw.reps = flag(a.reps, "--reps").or(raw.reps);
    raw.seed = flag(a.seed, "--seed").or(raw.seed);
    raw.suite = sflag(&a.suite, "--suite").or(raw.suite);
    raw.out = sflag(&a.out, "--out").or(raw.out);
    raw.format = sflag(&a.format, "--format").or(raw.format);
    raw.samples = flag(a.samples, "--samples").or(raw.samples);
    if !a.sweeps.is_empty() {
        // Sweeps on the command line replace the plan file's.
        raw.sweeps = a
            .sweeps
            .iter()
            .map(|s| Sp::new(s.clone(), Origin::Flag("--sweep")))
            .collect();
    }
    raw.pids
        .extend(a.pids.iter().map(|&p| Sp::new(p, Origin::Flag("--pid"))));
    raw.process_names.extend(
        a.process_names
            .iter()
            .map(|n| Sp::new(n.clone(), Origin::Flag("--process-name"))),
    );
    if a.no_warmup {
        raw.warmup = Some(Sp::new(false, Origin::Flag("--no-warmup")));
    }
    if a.warmup {
        raw.warmup = Some(Sp::new(true, Origin::Flag("--warmup")));
    }
    raw.quick |= a.quick;
    for f in &a.faults {
        raw.faults.push(engine::plan::RawFault::from_flag(f)?);
    }
    (raw.thresholds)
        .extend((a.thresholds.iter()).map(|t| Sp::new(t.clone(), Origin::Flag("--threshold"))));
    (raw.find_max)
        .extend((a.find_max.iter()).map(|t| Sp::new(t.clone(), Origin::Flag("--find-max"))));
    if a.abort_on_fail {
        raw.abort_on_fail = Some(Sp::new(true, Origin::Flag("--abort-on-fail")));
    }
    if let Some(m) = &a.check {
        raw.check = Some(Sp::new(m.clone(), Origin::Flag("--check")));
    }
    if let Some(run) = &a.compare {
        raw.baseline = Some(Sp::new(
            run.display().to_string(),
            Origin::Flag("--compare"),
        ));
    }
    Ok(raw)
}

/// How the run reports as it goes: the progress mode, the checkpoint interval, live metrics.
pub(super) struct Feedback {
    mode: crate::live::Mode,
    /// A load run of a minute or more.
    long_load: bool,
    checkpoint: std::time::Duration,
    metrics: Option<(
        crate::live::MetricsServer,
        std::sync::Arc<std::sync::Mutex<String>>,
    )>,
    /// The live view (`--ui`).
    ui: Option<crate::ui::Ui>,
}

pub(super) fn feedback(args: &RunArgs, plan: &Plan) -> Result<Feedback> {
    let long_load = (plan.settings.rep_duration_ns()).is_some_and(|ns| ns >= 60_000_000_000);
    let mode =
        crate::live::Mode::choose(&args.progress, args.quiet, long_load).ok_or_else(|| {
            PlanError::new(
                Origin::Flag("--progress"),
                format!(
                    "unknown progress mode {:?}; {}modes: {}",
                    args.progress,
                    engine::suggest::did_you_mean(
                        &args.progress,
                        crate::live::Mode::NAMES.iter().copied()
                    ),
                    crate::live::Mode::NAMES.join(", ")
                ),
            )
        })?;
    let checkpoint = match &args.checkpoint {
        None => engine::runner::DEFAULT_CHECKPOINT,
        Some(c) => engine::units::parse_duration(c)
            .ok()
            .filter(|d| *d >= std::time::Duration::from_secs(1))
            .ok_or_else(|| {
                PlanError::new(
                    Origin::Flag("--checkpoint"),
                    format!("{c:?} is not a duration of a second or more"),
                )
                .hint("write e.g. 1m or 10s")
            })?,
    };
    let metrics = match &args.metrics_addr {
        None => None,
        Some(addr) => {
            let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
            let server = crate::live::MetricsServer::start(addr, text.clone()).map_err(|e| {
                PlanError::new(
                    Origin::Flag("--metrics-addr"),
                    format!("cannot serve metrics on {addr}: {e}"),
                )
                .hint("give a free local address, e.g. 127.0.0.1:9091")
            })?;
            Some((server, text))
        }
    };
    for url in &args.push {
        crate::push::Dest::parse(url).map_err(|e| PlanError::new(Origin::Flag("--push"), e))?;
    }
    let ui = match &args.ui {
        None => None,
        Some(addr) => Some(crate::ui::Ui::start(addr, args.ui_stop.then_some(&INTERRUPT)).map_err(|e| {
            PlanError::new(
                Origin::Flag("--ui"),
                format!("cannot serve the live view on {addr:?}: {e}"),
            )
            .hint("leave the address out for a free port on 127.0.0.1, or give a free one, e.g. --ui=127.0.0.1:8080")
        })?),
    };
    Ok(Feedback {
        ui,
        mode,
        long_load,
        checkpoint,
        metrics,
    })
}

/// Ctrl-C stops the run after the current operation; a second one quits at once. Installed
/// once per process (a test runs `dyno run` several times in one).
pub(super) fn stop_on_ctrl_c() -> Result<()> {
    static PRESSES: AtomicUsize = AtomicUsize::new(0);
    static INSTALLED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        ctrlc::set_handler(|| {
            if PRESSES.fetch_add(1, Ordering::SeqCst) == 0 {
                INTERRUPT.store(true, Ordering::SeqCst);
                eprintln!("\ndyno: stopping after the current operation; finished cases are kept (Ctrl-C again to quit now)");
            } else {
                std::process::exit(i32::from(EXIT_INTERRUPTED));
            }
        })
        .map_err(|e| e.to_string())
    });
    installed
        .clone()
        .map_err(|e| anyhow::anyhow!("installing the Ctrl-C handler: {e}"))
}

/// The exit status of a finished run: interrupted, some case failed, or success; stderr says why.
pub(super) fn exit_code(record: &results::RunRecord) -> ExitCode {
    let failed = record
        .cases
        .iter()
        .filter(|c| c.status == results::Status::Failed)
        .count();
    if failed > 0 {
        eprintln!("dyno: {failed} case(s) failed; the notes under the table say why");
    }
    if record.interrupted {
        eprintln!("dyno: interrupted");
        return ExitCode::from(EXIT_INTERRUPTED);
    }
    if failed > 0 {
        return ExitCode::from(EXIT_FAILED_CASES);
    }
    if let Some(s) = &record.plan.shard
        && !record.plan.thresholds.is_empty()
    {
        eprintln!(
            "dyno: shard {} of {}: the thresholds are judged on the merged run (dyno merge), not on one shard's part",
            s.index, s.count
        );
        return ExitCode::SUCCESS;
    }
    let broken: Vec<&str> = (record.thresholds.iter())
        .filter(|t| !t.held)
        .map(|t| t.threshold.as_str())
        .collect();
    if let Some(a) = &record.aborted {
        eprintln!(
            "dyno: aborted: threshold \"{}\" broke on {} while it ran ({} against {})",
            a.threshold, a.case, a.value, a.limit
        );
    }
    if !broken.is_empty() {
        eprintln!("dyno: threshold(s) failed: {}", broken.join("; "));
        return ExitCode::from(EXIT_THRESHOLDS);
    }
    ExitCode::SUCCESS
}

/// A run made ready, once: the plan (never changed after this), how it reports, where its
/// record goes, and, for a shard, how it met the others.
pub(super) struct Prepared {
    plan: Plan,
    format: Format,
    /// `--noise`: the gate's ±band of "no change".
    noise: f64,
    fb: Feedback,
    placement: results::store::Placement,
    out_dir: PathBuf,
    rendezvous: Option<engine::shard::Rendezvous>,
    /// Where the live figures go (`--push`).
    push: Option<std::sync::Arc<crate::push::Push>>,
}

/// Everything the run needs, made from the command line in one place: the resolved plan, its
/// baseline (with its run-to-run noise), its shard and the results directory.
pub(super) fn prepare(args: &RunArgs) -> Result<Prepared> {
    let Resolved { mut plan, format } = resolve(raw_from_args(args)?)?;
    let noise = parse_noise(&args.noise)?;
    if let Some(named) = plan.baseline_ref.clone() {
        let root = history_root(plan.out.as_deref());
        let baseline = run_dir(Path::new(&named.value), &root)
            .and_then(|dir| Ok(crate::baseline::with_noise(&dir, one_record(&dir)?, &root, None)))
            .map_err(|e| {
                PlanError::new(named.at.clone(), format!("the baseline run: {e:#}")).hint(
                    "name a results directory, its run.json, or @last, @prev, @baseline:NAME of the history in the results root",
                )
            })?;
        plan.baseline = Some((named, std::sync::Arc::new(baseline)));
    }
    engine::runner::preflight(&plan)?;
    let shard = shard_of(args.shard.as_deref(), args.rendezvous.is_some(), &plan)?;
    if let Some((s, _)) = &shard {
        // Every shard writes into DIR/shard-I: a shared directory (or gathered later) that
        // `dyno merge DIR` reads whole.
        let Some(out) = &plan.out else {
            bail!(
                "--shard needs -o DIR: each shard writes DIR/shard-I, and `dyno merge DIR` adds them up"
            );
        };
        plan.out = Some(out.join(format!("shard-{}", s.index)));
    }
    let fb = feedback(args, &plan)?;
    // Said before the shards meet, which may take a while: the page is there meanwhile.
    if !args.quiet {
        if let Some((server, _)) = &fb.metrics {
            eprintln!("dyno: live metrics at http://{}/metrics", server.addr);
        }
        if let Some(ui) = &fb.ui {
            eprintln!("dyno: live view at {}", ui.url);
        }
    }
    let placement = claim(plan.out.as_deref())?;
    let out_dir = placement.dir().to_path_buf();
    if let Some(c) = &mut plan.check {
        c.dir = Some(out_dir.clone());
    }
    // A long load run streams its intervals to an .hlog in the results directory unless told
    // where: its time series is then complete on disk however long it runs.
    // A shard's too: `dyno merge` adds the shards' logs interval by interval.
    if fb.long_load || shard.is_some() {
        plan.settings.stream_into(&out_dir);
    }
    let rendezvous = match &shard {
        Some((s, id)) => {
            let met = meet(args, *s, id)?;
            plan.shard = Some(results::ShardRecord {
                index: s.index,
                count: s.count,
                rendezvous: met.as_ref().map(|m| m.address.clone()),
                clock_offset_ns: met.as_ref().map_or(0, |m| m.clock_offset_ns),
                rtt_ns: met.as_ref().map_or(0, |m| m.rtt_ns),
                host: engine::env::hostname(),
            });
            met
        }
        None => None,
    };
    let push = match args.push.is_empty() {
        true => None,
        false => {
            let mut base = vec![("suite", plan.suite.name().to_string())];
            if let Some(s) = &plan.shard {
                base.push(("shard", format!("{}/{}", s.index, s.count)));
            }
            let push = crate::push::Push::start(&args.push, base, plan.warmup);
            Some(std::sync::Arc::new(
                push.map_err(|e| anyhow::anyhow!("--push: {e}"))?,
            ))
        }
    };
    Ok(Prepared {
        push,
        plan,
        format,
        noise,
        fb,
        placement,
        out_dir,
        rendezvous,
    })
}

/// The run's results directory, claimed.
fn claim(out: Option<&Path>) -> Result<results::store::Placement> {
    results::store::claim_run_dir(out, std::time::SystemTime::now()).map_err(|e| match e {
        results::store::StoreError::Foreign { .. } => anyhow::Error::new(e).context(
            "-o/--out: give a new or empty directory, or one dyno made (a new run there goes \
                 into a subdirectory of its own)",
        ),
        e => anyhow::Error::new(e).context("creating the results directory"),
    })
}

pub(super) fn run_cmd(args: RunArgs) -> Result<ExitCode> {
    let p = prepare(&args)?;
    let info = |line: String| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    if let results::store::Placement::Beside { asked, dir } = &p.placement {
        info(format!(
            "dyno: {} holds earlier runs, left as they are; this run goes to {}",
            asked.display(),
            dir.display()
        ));
    }
    stop_on_ctrl_c()?;
    let record_path = p.out_dir.join(results::store::RECORD_FILE);
    info(format!(
        "dyno: {} on {} target(s): {}; record: {}",
        p.plan.suite.name(),
        p.plan.targets.len(),
        (p.plan.targets.iter())
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        record_path.display()
    ));
    let mut outcome = match execute(&args, &p, &record_path) {
        Ok(o) => o,
        Err(e) => {
            // An open page hears that the run is over.
            if let Some(ui) = &p.fb.ui {
                ui.finish(None);
            }
            return Err(e);
        }
    };
    if let Some(push) = &p.push {
        // What each destination took goes in the record, written again.
        outcome.record.push = push.finish(std::time::Duration::from_secs(5));
        if let Err(e) = results::store::write_atomic(&record_path, &outcome.record) {
            eprintln!("dyno: warning: the push counts are not in the record: {e}");
        }
    }
    for w in &outcome.warnings {
        eprintln!("dyno: warning: {w}");
    }
    info(format!("dyno: record written to {}", record_path.display()));
    let code = finish(&args, &p, &outcome.record);
    if let Some(ui) = &p.fb.ui {
        ui.feed().record(&outcome.record, true);
        let report = std::fs::read_to_string(p.out_dir.join("report.html")).ok();
        ui.finish(report.as_deref());
    }
    code
}

/// Runs the prepared plan, its record written to `record_path` after every repetition.
fn execute(args: &RunArgs, p: &Prepared, record_path: &Path) -> Result<engine::runner::RunOutcome> {
    let dyno = results::DynoInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        commit: env!("DYNO_COMMIT").to_string(),
    };
    let ui = p.fb.ui.as_ref();
    let mut sink = |r: &results::RunRecord| {
        if let Some(ui) = ui {
            ui.feed().record(r, false);
        }
        if let Some(push) = &p.push {
            push.named(r);
        }
        results::store::write_atomic(record_path, r).map_err(engine::runner::SinkError::from)
    };
    let metrics = p.fb.metrics.as_ref().map(|m| m.1.clone());
    let mut display = crate::live::Display::new(p.fb.mode, metrics);
    // An adapter's standard error is kept beside the record (adapter-PID-N.stderr).
    targets::exec::set_log_dir(&p.out_dir);
    let profiles = match &args.profile {
        Some(dir) => Some(
            crate::profile::Profiles::new(dir, &p.out_dir)
                .with_context(|| format!("--profile {}: making the directory", dir.display()))?,
        ),
        None => None,
    };
    let hooks = engine::runner::Hooks {
        interrupt: &INTERRUPT,
        logs: &p.out_dir,
        checkpoint: p.fb.checkpoint,
        progress: &mut |x| {
            display.update(x);
            if let Some(ui) = ui {
                ui.feed().progress(x);
            }
            if let Some(push) = &p.push {
                push.progress(x);
            }
        },
        profiler: (profiles.as_ref()).map(|x| x as &dyn engine::runner::Profiler),
        rendezvous: p.rendezvous.as_ref(),
        watch: watch(ui, p.push.as_ref()),
    };
    Ok(engine::runner::run(&p.plan, dyno, hooks, &mut sink)?)
}

/// What is told of the run's clock and faults: the live view, the pushes.
fn watch(
    ui: Option<&crate::ui::Ui>,
    push: Option<&std::sync::Arc<crate::push::Push>>,
) -> Option<std::sync::Arc<dyn engine::runner::Watch>> {
    let mut all: Vec<std::sync::Arc<dyn engine::runner::Watch>> = Vec::new();
    all.extend(ui.map(crate::ui::Ui::watch));
    all.extend(push.map(|p| p.clone() as std::sync::Arc<dyn engine::runner::Watch>));
    (!all.is_empty()).then(|| std::sync::Arc::new(crate::follow::Fan(all)) as _)
}

/// What follows a run: the report printed, the run kept (history, plots, HTML), the gate
/// against `--compare`, and the exit status.
fn finish(args: &RunArgs, p: &Prepared, record: &results::RunRecord) -> Result<ExitCode> {
    // Every file first, then the terminal: a closed pipe must not cost a file.
    let mut text = Vec::new();
    report::render(
        p.format,
        std::slice::from_ref(record),
        crate::suites::views(),
        &mut text,
    )
    .context("rendering the report")?;
    keep_run(&p.out_dir, record, args.quiet);
    // The gate: the run against the one --compare named, beside the run's record.
    let gate = match (&args.compare, &p.plan.baseline) {
        (Some(_), Some((named, base))) => {
            let c = results::compare::compare(&base.record, record, p.noise, &base.noise);
            let to = p.out_dir.join("compare.json");
            if let Err(e) = std::fs::write(&to, serde_json::to_vec_pretty(&c)?) {
                eprintln!("dyno: warning: {}: {e}", to.display());
            }
            let names = (named.value.as_str(), &*p.out_dir.display().to_string());
            report::compare::render(&c, names, report::grid::Style::Text, &mut text)?;
            Some(c)
        }
        _ => None,
    };
    print_out(&text)?;
    let code = exit_code(record);
    match gate.filter(|_| code == ExitCode::SUCCESS) {
        Some(c) => gate_code(args, p, &c),
        None => Ok(code),
    }
}

/// The gate's verdict: settings that differ are refused, a regressed figure (or a consistency
/// verdict turned worse) exits 5.
fn gate_code(args: &RunArgs, p: &Prepared, c: &results::compare::Comparison) -> Result<ExitCode> {
    if !c.differences.is_empty() && !args.allow_different {
        bail!(
            "--compare: the runs differ in more than the change under test (the run is recorded; its comparison is in {}):\n  {}\n(give --allow-different to judge them anyway)",
            p.out_dir.join("compare.json").display(),
            c.differences.join("\n  ")
        );
    }
    let regressed: Vec<String> = (c.cases.iter())
        .flat_map(|k| {
            (k.figures.iter())
                .filter(|f| f.verdict == results::compare::Verdict::Regressed)
                .map(move |f| format!("{} of {}", f.figure, k.case))
        })
        .chain((c.cases.iter()).filter_map(|k| {
            let v = k.consistency.filter(|v| v.worse())?;
            let word = |v: Option<results::Verdict>| v.map_or("unchecked", results::Verdict::name);
            Some(format!(
                "consistency of {}: {} → {}",
                k.case,
                word(v.base),
                word(v.new)
            ))
        }))
        .collect();
    if !regressed.is_empty() {
        eprintln!(
            "dyno: regressed against {}: {}",
            args.compare.as_deref().unwrap_or(Path::new("?")).display(),
            regressed.join("; ")
        );
        return Ok(ExitCode::from(EXIT_REGRESSED));
    }
    Ok(ExitCode::SUCCESS)
}
