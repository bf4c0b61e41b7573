//! The commands: glue between the command line, the engine, the drivers and the renderers.

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

/// The exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: u8 = 130;

/// The exit code of a run that completed with one or more failed cases (the target erred, or a
/// check failed). Bad input is 1, a malformed command line 2; a failed case is data, recorded
/// and rendered, and this code tells a script about it.
const EXIT_FAILED_CASES: u8 = 3;

/// The exit code of a run whose cases all ran but that broke one of its thresholds.
const EXIT_THRESHOLDS: u8 = 4;

/// The exit code of a run that held its thresholds but that `--compare` found regressed.
const EXIT_REGRESSED: u8 = 5;

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
        Command::Validate { plan } => validate(&plan),
        Command::Report {
            dir,
            format,
            plots,
            html,
        } => report_cmd(&dir, &format, plots.as_deref(), html),
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
    Format::parse(&f.value).ok_or_else(|| {
        PlanError::new(
            f.at.clone(),
            format!(
                "unknown format {:?}; {}formats: {}",
                f.value,
                engine::suggest::did_you_mean(&f.value, Format::NAMES.iter().copied()),
                Format::NAMES.join(", ")
            ),
        )
    })
}

/// The single place where input is checked, for `run` and `validate` alike.
fn resolve(raw: RawPlan) -> Result<Resolved, PlanError> {
    let plan = raw.resolve(&crate::suites::Plans)?;
    let format = parse_format(plan.format.as_ref())?;
    Ok(Resolved { plan, format })
}

/// Request flags become options of the targets named on the command line: the HTTP ones of
/// every target, the TLS ones of every https:// target (and of none is refused).
fn request_flags(a: &RunArgs, targets: &mut [RawTarget]) -> Result<()> {
    let mut given: Vec<(&'static str, &'static str, String)> = Vec::new();
    if let Some(m) = &a.method {
        given.push(("method", "--method", m.clone()));
    }
    if !a.headers.is_empty() {
        given.push(("headers", "--header", a.headers.join("\n")));
    }
    if let Some(b) = &a.body {
        given.push(("body", "--body", b.clone()));
    }
    if let Some(f) = &a.body_file {
        given.push(("body_file", "--body-file", f.clone()));
    }
    if a.no_keepalive {
        given.push(("keepalive", "--no-keepalive", "false".to_string()));
    }
    if let Some(ca) = &a.ca {
        given.push(("ca", "--ca", ca.clone()));
    }
    if a.insecure {
        given.push(("insecure", "--insecure", "true".to_string()));
    }
    for (name, flag, value) in given {
        let tls = matches!(name, "ca" | "insecure");
        let mut named = 0;
        for t in targets
            .iter_mut()
            .filter(|t| !tls || t.url.value.starts_with("https:"))
        {
            named += 1;
            t.options.push((
                Sp::new(name.to_string(), Origin::Flag(flag)),
                Sp::new(value.clone(), Origin::Flag(flag)),
            ));
        }
        if tls && named == 0 {
            return Err(PlanError::new(
                Origin::Flag(flag),
                format!("{flag} applies to https:// targets, and none was named"),
            )
            .into());
        }
    }
    Ok(())
}

/// Builds the raw plan from the command line: a plan file, or target URLs, then the flags.
fn raw_from_args(a: &RunArgs) -> Result<RawPlan> {
    let is_plan = |s: &str| s.ends_with(".toml");
    let mut raw = match a.targets.iter().position(|t| is_plan(t)) {
        Some(0) if a.targets.len() == 1 => RawPlan::from_file(Path::new(&a.targets[0]))?,
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
                })
                .collect(),
            ..RawPlan::default()
        },
    };
    let flag = |v: Option<i64>, name: &'static str| v.map(|v| Sp::new(v, Origin::Flag(name)));
    let sflag =
        |v: &Option<String>, name: &'static str| v.clone().map(|v| Sp::new(v, Origin::Flag(name)));
    request_flags(a, &mut raw.targets)?;
    raw.duration = sflag(&a.duration, "--duration").or(raw.duration);
    raw.requests = flag(a.requests, "--requests").or(raw.requests);
    raw.rate = sflag(&a.rate, "--rate").or(raw.rate);
    raw.ramp = sflag(&a.ramp, "--ramp").or(raw.ramp);
    raw.arrival = sflag(&a.arrival, "--arrival").or(raw.arrival);
    raw.max_connections = flag(a.max_connections, "--max-connections").or(raw.max_connections);
    raw.threads = flag(a.threads, "--threads").or(raw.threads);
    raw.timeout = sflag(&a.timeout, "--timeout").or(raw.timeout);
    raw.interval = sflag(&a.interval, "--interval").or(raw.interval);
    raw.hlog = sflag(&a.hlog, "--hlog").or(raw.hlog);
    raw.burst = sflag(&a.burst, "--burst").or(raw.burst);
    raw.coalesce = sflag(&a.coalesce, "--coalesce").or(raw.coalesce);
    raw.max_lag = sflag(&a.max_lag, "--max-lag").or(raw.max_lag);
    raw.objects = flag(a.objects, "--objects").or(raw.objects);
    raw.concurrency = flag(a.concurrency, "--concurrency").or(raw.concurrency);
    raw.reps = flag(a.reps, "--reps").or(raw.reps);
    raw.size = flag(a.size, "--size").or(raw.size);
    raw.seed = flag(a.seed, "--seed").or(raw.seed);
    raw.suite = sflag(&a.suite, "--suite").or(raw.suite);
    raw.out = sflag(&a.out, "--out").or(raw.out);
    raw.format = sflag(&a.format, "--format").or(raw.format);
    raw.topology = sflag(&a.topology, "--topology").or(raw.topology);
    raw.thousands = flag(a.thousands, "--thousands").or(raw.thousands);
    raw.operations = flag(a.operations, "--operations").or(raw.operations);
    raw.zipf = sflag(&a.zipf, "--zipf").or(raw.zipf);
    raw.test_time = sflag(&a.test_time, "--test-time").or(raw.test_time);
    raw.depth = flag(a.depth, "--depth").or(raw.depth);
    raw.width = flag(a.width, "--width").or(raw.width);
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
    if a.abort_on_fail {
        raw.abort_on_fail = Some(Sp::new(true, Origin::Flag("--abort-on-fail")));
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
struct Feedback {
    mode: crate::live::Mode,
    /// A load run of a minute or more.
    long_load: bool,
    checkpoint: std::time::Duration,
    metrics: Option<(
        crate::live::MetricsServer,
        std::sync::Arc<std::sync::Mutex<String>>,
    )>,
}

fn feedback(args: &RunArgs, plan: &Plan) -> Result<Feedback> {
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
    Ok(Feedback {
        mode,
        long_load,
        checkpoint,
        metrics,
    })
}

/// Ctrl-C stops the run after the current operation; a second one quits at once.
fn stop_on_ctrl_c() -> Result<()> {
    static PRESSES: AtomicUsize = AtomicUsize::new(0);
    ctrlc::set_handler(|| {
        if PRESSES.fetch_add(1, Ordering::SeqCst) == 0 {
            INTERRUPT.store(true, Ordering::SeqCst);
            eprintln!("\ndyno: stopping after the current operation; finished cases are kept (Ctrl-C again to quit now)");
        } else {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    })
    .context("installing the Ctrl-C handler")?;
    Ok(())
}

/// The exit status of a finished run: interrupted, some case failed, or success; stderr says why.
fn exit_code(record: &results::RunRecord) -> ExitCode {
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

fn run_cmd(args: RunArgs) -> Result<ExitCode> {
    let Resolved { mut plan, format } = resolve(raw_from_args(&args)?)?;
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
    let shard = shard_of(&args, &plan)?;
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
    let fb = feedback(&args, &plan)?;
    let placement = results::store::claim_run_dir(
        plan.out.as_deref(),
        std::time::SystemTime::now(),
    )
    .map_err(|e| match e {
        results::store::StoreError::Foreign { .. } => anyhow::Error::new(e).context(
            "-o/--out: give a new or empty directory, or one dyno made (a new run there goes \
                 into a subdirectory of its own)",
        ),
        e => anyhow::Error::new(e).context("creating the results directory"),
    })?;
    let out_dir = placement.dir().to_path_buf();
    // A long load run streams its intervals to an .hlog in the results directory unless told
    // where: its time series is then complete on disk however long it runs.
    // A shard's too: `dyno merge` adds the shards' logs interval by interval.
    if fb.long_load || shard.is_some() {
        plan.settings.stream_into(&out_dir);
    }
    let rendezvous = match &shard {
        Some((s, id)) => {
            let met = meet(&args, *s, id)?;
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
    let quiet = args.quiet;
    let info = |line: String| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    if let Some((server, _)) = &fb.metrics {
        info(format!(
            "dyno: live metrics at http://{}/metrics",
            server.addr
        ));
    }
    if let results::store::Placement::Beside { asked, dir } = &placement {
        info(format!(
            "dyno: {} holds earlier runs, left as they are; this run goes to {}",
            asked.display(),
            dir.display()
        ));
    }
    let record_path = out_dir.join(results::store::RECORD_FILE);

    stop_on_ctrl_c()?;

    info(format!(
        "dyno: {} on {} target(s): {}; record: {}",
        plan.suite.name(),
        plan.targets.len(),
        plan.targets
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        record_path.display()
    ));
    let dyno = results::DynoInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        commit: env!("DYNO_COMMIT").to_string(),
    };
    let mut sink = |r: &results::RunRecord| {
        results::store::write_atomic(&record_path, r).map_err(engine::runner::SinkError::from)
    };
    let mut display = crate::live::Display::new(fb.mode, fb.metrics.as_ref().map(|m| m.1.clone()));
    // An adapter's standard error is kept beside the record (adapter-PID-N.stderr).
    targets::exec::set_log_dir(&out_dir);
    let profiles = match &args.profile {
        Some(dir) => Some(
            crate::profile::Profiles::new(dir, &out_dir)
                .with_context(|| format!("--profile {}: making the directory", dir.display()))?,
        ),
        None => None,
    };
    let outcome = engine::runner::run(
        &plan,
        dyno,
        engine::runner::Hooks {
            interrupt: &INTERRUPT,
            logs: &out_dir,
            checkpoint: fb.checkpoint,
            progress: &mut |p| display.update(p),
            profiler: profiles
                .as_ref()
                .map(|p| p as &dyn engine::runner::Profiler),
            rendezvous: rendezvous.as_ref(),
        },
        &mut sink,
    )?;
    for w in &outcome.warnings {
        eprintln!("dyno: warning: {w}");
    }

    // Every file first, then the terminal: a closed pipe must not cost a file.
    let mut text = Vec::new();
    report::render(
        format,
        std::slice::from_ref(&outcome.record),
        report::Views(&crate::suites::views()),
        &mut text,
    )
    .context("rendering the report")?;
    info(format!("dyno: record written to {}", record_path.display()));
    keep_run(&out_dir, &outcome.record, quiet);
    // The gate: the run against the one --compare named, beside the run's record.
    let gate = match (&args.compare, &plan.baseline) {
        (Some(_), Some((named, base))) => {
            let c = results::compare::compare(&base.record, &outcome.record, noise, &base.noise);
            let to = out_dir.join("compare.json");
            if let Err(e) = std::fs::write(&to, serde_json::to_vec_pretty(&c)?) {
                eprintln!("dyno: warning: {}: {e}", to.display());
            }
            report::compare::render(
                &c,
                (&named.value, &out_dir.display().to_string()),
                report::grid::Style::Text,
                &mut text,
            )?;
            Some(c)
        }
        _ => None,
    };
    print_out(&text)?;

    let code = exit_code(&outcome.record);
    let Some(c) = gate.filter(|_| code == ExitCode::SUCCESS) else {
        return Ok(code);
    };
    if !c.differences.is_empty() && !args.allow_different {
        bail!(
            "--compare: the runs differ in more than the change under test (the run is recorded; its comparison is in {}):\n  {}\n(give --allow-different to judge them anyway)",
            out_dir.join("compare.json").display(),
            c.differences.join("\n  ")
        );
    }
    let regressed: Vec<String> = (c.cases.iter())
        .flat_map(|k| {
            (k.figures.iter())
                .filter(|f| f.verdict == results::compare::Verdict::Regressed)
                .map(move |f| format!("{} of {}", f.figure, k.case))
        })
        .collect();
    if !regressed.is_empty() {
        eprintln!(
            "dyno: regressed against {}: {}",
            args.compare.as_deref().unwrap_or(Path::new("?")).display(),
            regressed.join("; ")
        );
        return Ok(ExitCode::from(EXIT_REGRESSED));
    }
    Ok(code)
}

/// What a finished run leaves beside its record: its place in its results root's history, its
/// plots and its HTML report. A shard's part of a run is not registered (its figures are a part
/// of the plan's, and would read as a run of it in the trends): `dyno merge` registers the
/// whole.
fn keep_run(out_dir: &Path, record: &results::RunRecord, quiet: bool) {
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
fn trend_rows(dir: &Path, record: &results::RunRecord) -> Vec<results::history::CaseRow> {
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

fn validate(path: &Path) -> Result<ExitCode> {
    let Resolved { plan, format } = resolve(RawPlan::from_file(path)?)?;
    engine::runner::preflight(&plan)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}: ok — suite {}, {} objects × {} clients, {} B, {} repetition(s){}, format {}",
        path.display(),
        plan.suite.name(),
        plan.objects,
        plan.concurrency,
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

/// Draws a record's plots (SVG, PNG, `.dat`) into `dir`; a failure is a warning, not a lost run.
fn write_plots(record: &results::RunRecord, dir: &Path, quiet: bool) {
    #[cfg(feature = "plots")]
    match report::plots::write_all(record, report::Views(&crate::suites::views()), dir) {
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
fn write_html(
    records: &[results::RunRecord],
    trend: &[results::history::CaseRow],
    path: &Path,
) -> Result<()> {
    let mut page = Vec::new();
    report::html::render_with_trend(
        records,
        report::Views(&crate::suites::views()),
        trend,
        &mut page,
    )
    .context("rendering the HTML report")?;
    let tmp = path.with_extension("html.tmp");
    std::fs::write(&tmp, &page)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("writing {}", path.display()))
}

fn report_cmd(
    dir: &Path,
    format: &str,
    plots: Option<&Path>,
    html: Option<Option<PathBuf>>,
) -> Result<ExitCode> {
    let format = parse_format(Some(&Sp::new(format.to_string(), Origin::Flag("--format"))))?;
    let records = results::store::load(dir)?;
    if let Some(html) = html {
        let path = html.unwrap_or_else(|| {
            if dir.is_dir() {
                dir.join("report.html")
            } else {
                dir.with_file_name("report.html")
            }
        });
        let trend = match records.as_slice() {
            [r] if dir.is_dir() => trend_rows(dir, r),
            _ => Vec::new(),
        };
        write_html(&records, &trend, &path)?;
        eprintln!("dyno: HTML report written to {}", path.display());
    }
    let mut text = Vec::new();
    report::render(
        format,
        &records,
        report::Views(&crate::suites::views()),
        &mut text,
    )
    .context("rendering the report")?;
    if let Some(to) = plots {
        if cfg!(not(feature = "plots")) {
            bail!("--plots: this dyno was built without plots; build it with `--features plots`");
        }
        for (i, r) in records.iter().enumerate() {
            let dir = if records.len() == 1 {
                to.to_path_buf()
            } else {
                to.join(format!("{:03}", i + 1))
            };
            write_plots(r, &dir, false);
        }
    }
    print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `--shard`: which shard this run is, and the identity of its plan (what every shard must
/// share: the resolved plan less what is a generator's own, its threads).
fn shard_of(args: &RunArgs, plan: &Plan) -> Result<Option<(engine::shard::Shard, String)>> {
    let Some(text) = &args.shard else {
        return Ok(None);
    };
    let shard = engine::shard::Shard::parse(text, &|k| std::env::var(k).ok())
        .map_err(|e| anyhow::anyhow!("--shard {text}: {e}"))?;
    match plan.suite.name() {
        "load" => {}
        // A store suite's shards share a namespace and meet between its phases.
        s @ ("ycsb" | "kv") if args.rendezvous.is_none() => bail!(
            "--shard {text}: the {s} suite's shards share one namespace and all load it before any test: give --rendezvous HOST:PORT (rank 0's)"
        ),
        "kv" if !plan.faults.is_empty() || !plan.levels.is_empty() => bail!(
            "--shard {text}: faults act on the target's processes from one generator, and the kv suite's shards run without them for now: drop the plan's faults and levels, or run one generator"
        ),
        "ycsb" | "kv" => {}
        other => bail!(
            "--shard splits the load suite's load (rate, connections) and the ycsb and kv suites' entries and clients; the {other} suite cannot be sharded yet: run one generator"
        ),
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
    // Every point's clients are split: a shard with none would do nothing of its part.
    let fewest = (plan.sweeps.iter())
        .filter(|s| s.param == "clients")
        .flat_map(|s| s.values.iter().copied())
        .chain([u64::from(plan.concurrency)])
        .min()
        .unwrap_or(0);
    if fewest < u64::from(shard.count) {
        bail!(
            "--shard {text}: {fewest} clients cannot be split over {} shards: give -c (and every swept client count) at least {}",
            shard.count,
            shard.count
        );
    }
    Ok(Some((shard, results::merge::plan_identity(&plan.record()))))
}

/// `--rendezvous`: meets the other shards (rank 0 listens); `None` without it.
fn meet(
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

fn merge_cmd(dirs: &[PathBuf], out: Option<&Path>, format: &str) -> Result<ExitCode> {
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
    let (mut record, logs) = results::merge::merge(shards)?;
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
    let mut text = Vec::new();
    report::render(
        format,
        std::slice::from_ref(&record),
        report::Views(&crate::suites::views()),
        &mut text,
    )
    .context("rendering the report")?;
    print_out(&text)?;
    eprintln!(
        "dyno: {} shards merged into {}",
        record.plan.merged.len(),
        dir.join(results::store::RECORD_FILE).display()
    );
    Ok(exit_code(&record))
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

fn history_cmd(root: &Path, suite: Option<&str>, case: Option<&str>) -> Result<ExitCode> {
    if !root.join(results::history::FILE).is_file() {
        bail!(
            "{}: no history there (every run registers itself in its results root as it finishes; --results names another root)",
            root.display()
        );
    }
    let h = results::history::History::open(root)?;
    let mut out = Vec::new();
    let mut doc = report::grid::Doc::new(report::grid::Style::Text, &mut out);
    match case {
        None => {
            let header = vec![
                [
                    "run",
                    "started",
                    "suite",
                    "commit",
                    "dyno",
                    "baselines",
                    "directory",
                ]
                .map(String::from)
                .to_vec(),
            ];
            let body: Vec<Vec<String>> = (h.runs(suite)?.into_iter())
                .map(|r| {
                    vec![
                        r.id.to_string(),
                        r.started,
                        r.suite,
                        r.commit
                            .map_or("-".into(), |c| c.chars().take(12).collect()),
                        r.dyno,
                        r.baselines.join(", "),
                        r.dir,
                    ]
                })
                .collect();
            doc.table(&header, &body)?;
        }
        Some(case) => {
            let header = vec![
                ["run", "started", "case", "rate", "p50", "p99", "errors"]
                    .map(String::from)
                    .to_vec(),
            ];
            let lat = |v: Option<u64>| v.map_or("-".into(), results::units::latency);
            let body: Vec<Vec<String>> = (h.cases(case)?.into_iter())
                .map(|c| {
                    vec![
                        c.run.to_string(),
                        c.started,
                        c.case,
                        c.rate
                            .map_or("-".into(), |r| format!("{}/s", report::units::rate(r))),
                        lat(c.p50_ns),
                        lat(c.p99_ns),
                        c.errors.to_string(),
                    ]
                })
                .collect();
            doc.table(&header, &body)?;
        }
    }
    print_out(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `dyno history --plot METRIC`: the trend of the cases (those whose identity contains `case`,
/// or every case of the suite's runs) as SVG, PNG and `.dat`.
fn history_plot(
    root: &Path,
    suite: Option<&str>,
    case: Option<String>,
    metric: &str,
    to: Option<PathBuf>,
) -> Result<ExitCode> {
    #[cfg(feature = "plots")]
    {
        use report::plots::TrendMetric;
        let m = TrendMetric::parse(metric).ok_or_else(|| {
            anyhow::anyhow!(
                "--plot {metric:?}: the history keeps {}",
                TrendMetric::NAMES.join(", ")
            )
        })?;
        if !root.join(results::history::FILE).is_file() {
            bail!(
                "{}: no history there (every run registers itself in its results root as it finishes; --results names another root)",
                root.display()
            );
        }
        let h = results::history::History::open(root)?;
        let runs: std::collections::HashSet<i64> =
            h.runs(suite)?.into_iter().map(|r| r.id).collect();
        let rows: Vec<_> = (h.cases(case.as_deref().unwrap_or(""))?.into_iter())
            .filter(|r| runs.contains(&r.run))
            .collect();
        let mut cases: Vec<&str> = rows.iter().map(|r| r.case.as_str()).collect();
        cases.sort_unstable();
        cases.dedup();
        const MOST: usize = 20;
        if cases.len() > MOST {
            bail!(
                "--plot: {} cases match, more than a plot shows apart ({MOST}); narrow them with --case TEXT or --suite NAME",
                cases.len()
            );
        }
        let Some(plot) = report::plots::trend(m, &rows)? else {
            bail!(
                "--plot {metric}: no case {}has that figure in two runs yet; a trend needs two",
                case.map_or(String::new(), |c| format!("matching {c:?} "))
            );
        };
        let dir = to.unwrap_or_else(|| root.to_path_buf());
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for f in plot.write(&dir)? {
            eprintln!("dyno: wrote {}", f.display());
        }
        Ok(ExitCode::SUCCESS)
    }
    #[cfg(not(feature = "plots"))]
    {
        let _ = (root, suite, case, metric, to);
        bail!("--plot: this dyno was built without plots; build it with `--features plots`")
    }
}

/// Registers a finished run in its results root's history; a failure is a warning, the run's
/// record is written already.
fn register(out_dir: &Path, record: &results::RunRecord) {
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

fn compare_cmd(
    (base, news): (&Path, &[PathBuf]),
    root: &Path,
    (noise, format, out): (&str, &str, Option<&Path>),
    allow_different: bool,
) -> Result<ExitCode> {
    let noise = parse_noise(noise)?;
    let style = match format {
        "table" => Some(report::grid::Style::Text),
        "markdown" => Some(report::grid::Style::Markdown),
        "json" | "html" => None,
        other => bail!("--format {other:?}: compare writes table, markdown, json or html"),
    };
    if out.is_some() && format != "html" {
        bail!("--out: only -f html writes a file; the other formats go to standard output");
    }
    let base = run_dir(base, root)?;
    let b = one_record(&base)?;
    let base_name = base.display().to_string();
    // Every run read and every comparison made before anything is printed.
    let mut judged = Vec::new();
    for new in news {
        let new = run_dir(new, root)?;
        let n = one_record(&new)?;
        let runs = crate::baseline::with_noise(&base, b.clone(), root, Some(&new)).noise;
        let c = results::compare::compare(&b, &n, noise, &runs);
        if !c.differences.is_empty() && !allow_different {
            bail!(
                "{} and {} differ in more than the change under test:\n  {}\n(give --allow-different to compare them anyway)",
                base_name,
                new.display(),
                c.differences.join("\n  ")
            );
        }
        judged.push((new.display().to_string(), n, c));
    }
    let mut text = Vec::new();
    match style {
        Some(style) => {
            for (i, (name, _, c)) in judged.iter().enumerate() {
                if i > 0 {
                    text.push(b'\n');
                }
                report::compare::render(c, (&base_name, name), style, &mut text)?;
            }
        }
        None if format == "html" => {
            let path = out.unwrap_or(Path::new("compare.html"));
            let sides: Vec<(&str, &results::RunRecord, &results::compare::Comparison)> = (judged
                .iter())
            .map(|(name, n, c)| (name.as_str(), n, c))
            .collect();
            let mut page = Vec::new();
            report::html::compare_page((&base_name, &b), &sides, &mut page)?;
            std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("dyno: the comparison's page is {}", path.display());
        }
        None => {
            // One comparison is an object; several, an array of them in the order given.
            match judged.as_slice() {
                [(_, _, c)] => serde_json::to_writer_pretty(&mut text, c)?,
                all => serde_json::to_writer_pretty(
                    &mut text,
                    &all.iter().map(|(_, _, c)| c).collect::<Vec<_>>(),
                )?,
            }
            text.push(b'\n');
        }
    }
    print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn targets_cmd() -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    for d in targets::drivers() {
        let i = d.info;
        let families: Vec<&str> = i.families.iter().map(|f| f.as_str()).collect();
        writeln!(out, "{}:  {}", i.scheme, i.summary)?;
        writeln!(out, "    families: {}", families.join(", "))?;
        writeln!(out, "    forms:    {}", i.forms.join("   "))?;
        writeln!(out, "    clients:  {}", i.clients)?;
        for o in i.options {
            let default = if o.default.is_empty() {
                String::new()
            } else {
                format!(" [default: {}]", o.default)
            };
            writeln!(out, "    {:<15} {}{default}", o.name, o.help)?;
        }
        writeln!(out)?;
    }
    if targets::drivers().is_empty() {
        bail!("no drivers are built in");
    }
    Ok(ExitCode::SUCCESS)
}
