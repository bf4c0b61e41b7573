//! `dyno report`: saved records rendered again.

use super::*;
use anyhow::anyhow;

pub(super) fn report_cmd(
    dir: &Path,
    format: &str,
    (plots, html): (Option<&Path>, Option<Option<PathBuf>>),
    push: &[String],
) -> Result<ExitCode> {
    let format = parse_format(Some(&Sp::new(format.to_string(), Origin::Flag("--format"))))?;
    for url in push {
        crate::push::Dest::parse(url).map_err(|e| anyhow!("--push: {e}"))?;
    }
    let records = results::store::load(dir)?;
    if !push.is_empty() {
        push_saved(&records, push)?;
    }
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
    report::render(format, &records, crate::suites::views(), &mut text)
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

/// Sends saved runs' time series to `urls`, and says what each destination took.
fn push_saved(records: &[results::RunRecord], urls: &[String]) -> Result<()> {
    let push =
        crate::push::Push::start(urls, Vec::new(), false).map_err(|e| anyhow!("--push: {e}"))?;
    for r in records {
        let points = crate::push::points_of(r).map_err(|e| anyhow!("--push: {e}"))?;
        // In batches the queue holds, waiting for room rather than dropping a saved run's points.
        for chunk in points.chunks(500) {
            push.queue_waiting(chunk.to_vec());
        }
    }
    for p in push.finish(std::time::Duration::from_secs(60)) {
        eprintln!(
            "dyno: pushed to {}: {} points taken, {} not{}",
            p.url,
            p.sent,
            p.undelivered,
            p.error.map(|e| format!(" (last: {e})")).unwrap_or_default()
        );
    }
    Ok(())
}
