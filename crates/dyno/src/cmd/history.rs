//! `dyno history`: the runs a results root remembers, a case across them, its trend drawn.

use super::*;

pub(super) fn history_cmd(
    root: &Path,
    suite: Option<&str>,
    case: Option<&str>,
) -> Result<ExitCode> {
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
pub(super) fn history_plot(
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
