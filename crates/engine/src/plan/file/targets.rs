//! `[targets.NAME]`: a target's URL, driver options and process (or cluster of members).

use super::*;

/// `[[targets.NAME.process.members]]`: each a table of `name`, `cmd`, `ready`, `file`.
pub(super) fn members_from_toml(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<Vec<RawMember>, PlanError> {
    let mut out = Vec::new();
    for (t, at) in tables(src, k, v, "[[…members]]")? {
        let (mut name, mut cmd, mut ready, mut file, mut aux) = (None, None, None, None, None);
        for (key, value) in t.iter() {
            if key.get_ref() == "aux" {
                match value.get_ref() {
                    DeValue::Boolean(b) => aux = Some(Sp::new(*b, src.at(value.span()))),
                    other => return Err(wrong_type(src, key, value, other, "a boolean")),
                }
                continue;
            }
            let text = Sp::new(expect_str(src, key, value)?, src.at(value.span()));
            match key.get_ref().as_ref() {
                "name" => name = Some(text),
                "cmd" => cmd = Some(text),
                "ready" => ready = Some(text),
                "file" => file = Some(text),
                other => {
                    return Err(unknown_key(
                        src,
                        key,
                        other,
                        "a cluster member",
                        &keys::MEMBER.names(),
                    ));
                }
            }
        }
        let missing = |what: &str| {
            PlanError::new(at.clone(), format!("a cluster member needs `{what}`"))
                .hint("e.g. { name = \"a\", cmd = \"redis-server --port {port}\" }")
        };
        out.push(RawMember {
            name: name.ok_or_else(|| missing("name"))?,
            cmd: cmd.ok_or_else(|| missing("cmd"))?,
            ready,
            file,
            aux,
            at,
        });
    }
    Ok(out)
}

pub(super) fn target_from_toml(
    src: &Source,
    name: &Spanned<std::borrow::Cow<str>>,
    body: &Spanned<DeValue>,
) -> Result<RawTarget, PlanError> {
    let name_at = src.at(name.span());
    let DeValue::Table(table) = body.get_ref() else {
        return Err(PlanError::new(
            src.at(body.span()),
            format!("target `{}` must be a table", name.get_ref()),
        )
        .hint(format!(
            "write [targets.{}] with url = \"scheme:…\" under it",
            name.get_ref()
        )));
    };
    let mut url = None;
    let mut options = Vec::new();
    let mut process = None;
    let mut requests = Vec::new();
    for (k, v) in table.iter() {
        if k.get_ref() == "process" {
            process = Some(process_from_toml(src, v)?);
            continue;
        }
        if k.get_ref() == "requests" {
            requests = requests_from_toml(src, k, v)?;
            continue;
        }
        let text = match v.get_ref() {
            DeValue::String(s) => s.to_string(),
            DeValue::Integer(i) => i.to_string(),
            DeValue::Float(f) => f.as_str().to_string(),
            DeValue::Boolean(b) => b.to_string(),
            // Lines (headers, checks): an array of strings, one a line.
            DeValue::Array(lines) => joined(src, k, lines)?,
            other => {
                return Err(PlanError::new(
                    src.at(v.span()),
                    format!(
                        "target option `{}` must be a string, number, boolean or array of lines, not {}",
                        k.get_ref(),
                        type_name(other)
                    ),
                ));
            }
        };
        let at = src.at(v.span());
        if k.get_ref() == "url" {
            if !matches!(v.get_ref(), DeValue::String(_)) {
                return Err(wrong_type(src, k, v, v.get_ref(), "a string"));
            }
            url = Some(Sp::new(text, at));
        } else {
            options.push((
                Sp::new(k.get_ref().to_string(), src.at(k.span())),
                Sp::new(text, at),
            ));
        }
    }
    let url = url.ok_or_else(|| {
        PlanError::new(
            name_at.clone(),
            format!("target `{}` has no url", name.get_ref()),
        )
        .hint("add e.g. url = \"sqlite:/tmp/dyno.db\" to it")
    })?;
    Ok(RawTarget {
        name: Some(Sp::new(name.get_ref().to_string(), name_at)),
        url,
        options,
        process,
        requests,
    })
}

/// An array of lines (headers, checks) as one text, a line each.
fn joined(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    lines: &toml::de::DeArray<'_>,
) -> Result<String, PlanError> {
    let mut all = Vec::new();
    for line in lines.iter() {
        all.push(expect_str(src, k, line)?);
    }
    Ok(all.join("\n"))
}

/// `[[targets.NAME.requests]]`: each a table of the keys [`keys::REQUEST`] lists, strings or
/// numbers (`headers` also an array of lines).
fn requests_from_toml(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<Vec<RawRequest>, PlanError> {
    let mut out = Vec::new();
    for (t, at) in tables(src, k, v, "[[targets.NAME.requests]]")? {
        let mut keys = Vec::new();
        for (key, value) in t.iter() {
            let name = key.get_ref();
            if !keys::REQUEST.names().contains(&name.as_ref()) {
                let what = "a request of a mix";
                return Err(unknown_key(src, key, name, what, &keys::REQUEST.names()));
            }
            let text = match value.get_ref() {
                DeValue::String(s) => s.to_string(),
                DeValue::Integer(i) => i.to_string(),
                DeValue::Boolean(b) => b.to_string(),
                DeValue::Array(lines)
                    if matches!(name.as_ref(), "headers" | "checks" | "capture") =>
                {
                    joined(src, key, lines)?
                }
                other => return Err(wrong_type(src, key, value, other, "a string")),
            };
            keys.push((
                Sp::new(name.to_string(), src.at(key.span())),
                Sp::new(text, src.at(value.span())),
            ));
        }
        out.push(RawRequest { at, keys });
    }
    Ok(out)
}

pub(super) fn process_from_toml(
    src: &Source,
    v: &Spanned<DeValue>,
) -> Result<RawProcess, PlanError> {
    let table = expect_table(src, "targets.NAME.process", v)?;
    let mut p = RawProcess {
        at: Some(src.at(v.span())),
        ..RawProcess::default()
    };
    for (k, v) in table.iter() {
        let at = src.at(v.span());
        let text = || match v.get_ref() {
            DeValue::String(s) => Ok(Sp::new(s.to_string(), at.clone())),
            other => Err(wrong_type(src, k, v, other, "a string")),
        };
        match k.get_ref().as_ref() {
            "cmd" => p.cmd = Some(text()?),
            "ready" => p.ready = Some(text()?),
            "ready_timeout" => p.ready_timeout = Some(text()?),
            "role" => p.role = Some(text()?),
            "name" => p.name = Some(text()?),
            "members" => p.members = members_from_toml(src, k, v)?,
            "link" => match v.get_ref() {
                DeValue::Boolean(b) => p.link = Some(Sp::new(*b, at)),
                other => return Err(wrong_type(src, k, v, other, "a boolean")),
            },
            "pid" => match v.get_ref() {
                DeValue::Integer(i) => {
                    let n = i.as_str().parse::<i64>().map_err(|_| {
                        PlanError::new(at.clone(), "pid must be a positive process id")
                    })?;
                    p.pid = Some(Sp::new(n, at));
                }
                other => return Err(wrong_type(src, k, v, other, "an integer")),
            },
            other => {
                let keys = keys::PROCESS.names();
                return Err(PlanError::new(
                    src.at(k.span()),
                    format!("unknown key `{other}` in a target's process"),
                )
                .hint(format!(
                    "{}keys: {}",
                    did_you_mean(other, keys.iter().copied()),
                    keys.join(", ")
                )));
            }
        }
    }
    Ok(p)
}
