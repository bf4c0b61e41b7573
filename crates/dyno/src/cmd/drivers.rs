//! `dyno targets`: the drivers built in, their URL forms and options.

use super::*;

pub(super) fn targets_cmd() -> Result<ExitCode> {
    use std::fmt::Write;
    let mut out = String::new();
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
    print_out(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
