//! `dyno compare`: runs judged against a base (see `results::compare`).

use super::*;

pub(super) fn compare_cmd(
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
