//! `dyno report`: saved records rendered again.

use super::*;

pub(super) fn report_cmd(
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
