//! Plan files: TOML read with every value's place (file:line:column), unknown keys named with a
//! suggestion, and values of the wrong type refused.

use super::*;

mod targets;
use targets::*;

// ---------------------------------------------------------------------------------------------
// Plan files
// ---------------------------------------------------------------------------------------------

pub(super) struct Source<'a> {
    path: Arc<str>,
    text: &'a str,
}

impl Source<'_> {
    pub(super) fn at(&self, span: std::ops::Range<usize>) -> Origin {
        let offset = span.start.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Origin::File {
            path: self.path.clone(),
            line,
            column,
        }
    }
}

pub(super) type Spanned<T> = toml::Spanned<T>;

pub(super) fn type_name(v: &DeValue) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

impl RawPlan {
    /// Reads a plan file.
    pub fn from_file(path: &Path, settings: &Catalogue) -> Result<RawPlan, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            PlanError::new(
                Origin::Flag("PLAN"),
                format!("cannot read plan file {}: {e}", path.display()),
            )
            .hint("give the path of a TOML plan file; `dyno validate PLAN.toml` checks one")
        })?;
        RawPlan::from_toml(path, &text, settings)
    }

    /// Parses a plan file's text; `path` is used only in messages, `settings` are what the
    /// suites' sections may hold.
    pub fn from_toml(path: &Path, text: &str, settings: &Catalogue) -> Result<RawPlan, PlanError> {
        let src = Source {
            path: Arc::from(path.display().to_string()),
            text,
        };
        let doc = DeTable::parse(text).map_err(|e| {
            let at = src.at(e.span().unwrap_or(0..0));
            PlanError::new(at, format!("invalid TOML: {}", e.message().trim_end()))
                .hint("see the book's \"Plan files\" and its reference of plan-file keys (`[suite]`, `[output]`, `[targets.NAME]`)")
        })?;
        let mut plan = RawPlan {
            file: Some(path.to_path_buf()),
            ..RawPlan::default()
        };
        for (key, value) in doc.get_ref().iter() {
            match key.get_ref().as_ref() {
                "suite" => {
                    let table = expect_table(&src, "suite", value)?;
                    suite_section(&src, table, &mut plan, settings)?
                }
                "output" => output_section(&src, expect_table(&src, "output", value)?, &mut plan)?,
                "faults" => plan.faults = faults_from_toml(&src, key, value)?,
                "thresholds" => {
                    let table = expect_table(&src, "thresholds", value)?;
                    thresholds_section(&src, table, &mut plan)?
                }
                "check" => check_section(&src, expect_table(&src, "check", value)?, &mut plan)?,
                "targets" => {
                    let table = expect_table(&src, "targets", value)?;
                    for (name, body) in table.iter() {
                        plan.targets.push(target_from_toml(&src, name, body)?);
                    }
                }
                other if settings.in_section(other).is_some() => {
                    let table = expect_table(&src, other, value)?;
                    settings_section(&src, other, table, &mut plan, settings)?;
                }
                other => {
                    let known: Vec<&str> = keys::TOP
                        .names()
                        .into_iter()
                        .chain(settings.names())
                        .collect();
                    return Err(unknown_key(
                        &src,
                        key,
                        other,
                        "the plan's top level",
                        &known,
                    ));
                }
            }
        }
        Ok(plan)
    }
}

/// The `[output]` section: where the run goes, and its format.
fn output_section(src: &Source, table: &DeTable<'_>, plan: &mut RawPlan) -> Result<(), PlanError> {
    for (k, v) in table.iter() {
        let at = src.at(v.span());
        match k.get_ref().as_ref() {
            "dir" => plan.out = Some(Sp::new(expect_str(src, k, v)?, at)),
            "format" => plan.format = Some(Sp::new(expect_str(src, k, v)?, at)),
            other => {
                return Err(unknown_key(
                    src,
                    k,
                    other,
                    "[output]",
                    &keys::OUTPUT.names(),
                ));
            }
        }
    }
    Ok(())
}

/// The `[check]` section: the model a history is checked against, and the time per key.
fn check_section(src: &Source, table: &DeTable<'_>, plan: &mut RawPlan) -> Result<(), PlanError> {
    for (k, v) in table.iter() {
        let at = src.at(v.span());
        match k.get_ref().as_ref() {
            "model" => plan.check = Some(Sp::new(expect_str(src, k, v)?, at)),
            "budget" => plan.check_budget = Some(Sp::new(expect_str(src, k, v)?, at)),
            other => {
                return Err(unknown_key(src, k, other, "[check]", &keys::CHECK.names()));
            }
        }
    }
    Ok(())
}

/// The `[thresholds]` section: the checks, the baseline they may be held to, and aborting.
fn thresholds_section(
    src: &Source,
    table: &DeTable<'_>,
    plan: &mut RawPlan,
) -> Result<(), PlanError> {
    for (k, v) in table.iter() {
        match (k.get_ref().as_ref(), v.get_ref()) {
            ("checks", DeValue::Array(all)) => {
                for item in all.iter() {
                    match item.get_ref() {
                        DeValue::String(one) => plan
                            .thresholds
                            .push(Sp::new(one.to_string(), src.at(item.span()))),
                        other => {
                            return Err(wrong_type(
                                src,
                                k,
                                item,
                                other,
                                "a threshold such as \"p99 < 10ms\"",
                            ));
                        }
                    }
                }
            }
            ("baseline", DeValue::String(run)) => {
                plan.baseline = Some(Sp::new(run.to_string(), src.at(v.span())));
            }
            ("abort_on_fail", DeValue::Boolean(b)) => {
                plan.abort_on_fail = Some(Sp::new(*b, src.at(v.span())));
            }
            ("abort_on_fail", other) => {
                return Err(wrong_type(src, k, v, other, "true or false"));
            }
            ("abort_after", DeValue::String(d)) => {
                plan.abort_after = Some(Sp::new(d.to_string(), src.at(v.span())));
            }
            ("abort_after", other) => {
                return Err(wrong_type(src, k, v, other, "a duration such as \"5s\""));
            }
            ("baseline", other) => {
                return Err(wrong_type(
                    src,
                    k,
                    v,
                    other,
                    "a run: a results directory, @last, @prev or @baseline:NAME",
                ));
            }
            ("checks", other) => {
                return Err(wrong_type(
                    src,
                    k,
                    v,
                    other,
                    "a list of thresholds, e.g. [\"p99 < 10ms\"]",
                ));
            }
            (other, _) => {
                return Err(unknown_key(
                    src,
                    k,
                    other,
                    "[thresholds]",
                    &keys::THRESHOLDS.names(),
                ));
            }
        }
    }
    Ok(())
}

/// The `[suite]` section: the suite, the run's repetitions and sweeps, and any suite's settings.
fn suite_section(
    src: &Source,
    table: &DeTable<'_>,
    plan: &mut RawPlan,
    settings: &Catalogue,
) -> Result<(), PlanError> {
    for (k, v) in table.iter() {
        let at = src.at(v.span());
        match k.get_ref().as_ref() {
            "name" => plan.suite = Some(Sp::new(expect_str(src, k, v)?, at)),
            "reps" => plan.reps = Some(Sp::new(expect_int(src, k, v)?, at)),
            "seed" => plan.seed = Some(Sp::new(expect_int(src, k, v)?, at)),
            "samples" => plan.samples = Some(Sp::new(expect_int(src, k, v)?, at)),
            "level_every" => plan.level_every = Some(Sp::new(expect_str(src, k, v)?, at)),
            "levels" => match v.get_ref() {
                DeValue::Array(all) => {
                    for item in all.iter() {
                        match item.get_ref() {
                            DeValue::String(one) => plan
                                .levels
                                .push(Sp::new(one.to_string(), src.at(item.span()))),
                            other => {
                                return Err(wrong_type(src, k, item, other, "a level's name"));
                            }
                        }
                    }
                }
                other => {
                    return Err(wrong_type(
                        src,
                        k,
                        v,
                        other,
                        "an array of level names, e.g. [\"centralized\", \"stable\", \"kill-master\"]",
                    ));
                }
            },
            "sweep" => match v.get_ref() {
                DeValue::String(one) => plan.sweeps.push(Sp::new(one.to_string(), at)),
                DeValue::Array(all) => {
                    for item in all.iter() {
                        let at = src.at(item.span());
                        match item.get_ref() {
                            DeValue::String(one) => plan.sweeps.push(Sp::new(one.to_string(), at)),
                            other => {
                                return Err(wrong_type(
                                    src,
                                    k,
                                    item,
                                    other,
                                    "a string like \"depth=1..30\"",
                                ));
                            }
                        }
                    }
                }
                other => {
                    return Err(wrong_type(
                        src,
                        k,
                        v,
                        other,
                        "a string like \"depth=1..30\" or an array of them",
                    ));
                }
            },
            "warmup" => match v.get_ref() {
                DeValue::Boolean(b) => plan.warmup = Some(Sp::new(*b, at)),
                other => return Err(wrong_type(src, k, v, other, "a boolean")),
            },
            other => match settings.in_section("suite").and_then(|s| find(&s, other)) {
                Some(setting) => plan.settings.set(setting.key, value(src, setting, k, v)?),
                None => {
                    return Err(settings.unknown(
                        src.at(k.span()),
                        other,
                        "suite",
                        &keys::RUN.names(),
                    ));
                }
            },
        }
    }
    Ok(())
}

/// A suite's own section (`[load]`): its settings.
fn settings_section(
    src: &Source,
    section: &str,
    table: &DeTable<'_>,
    plan: &mut RawPlan,
    settings: &Catalogue,
) -> Result<(), PlanError> {
    let mine = settings.in_section(section).unwrap_or_default();
    for (k, v) in table.iter() {
        let key = k.get_ref().as_ref();
        let Some(setting) = find(&mine, key) else {
            return Err(settings.unknown(src.at(k.span()), key, section, &[]));
        };
        plan.settings.set(setting.key, value(src, setting, k, v)?);
    }
    Ok(())
}

fn find(settings: &[&'static Setting], key: &str) -> Option<&'static Setting> {
    settings.iter().find(|s| s.key == key).copied()
}

/// A setting's value as its kind wants it, with its place.
fn value(
    src: &Source,
    setting: &Setting,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<Sp<Value>, PlanError> {
    let value = match setting.kind {
        Kind::Int => Value::Int(expect_int(src, k, v)?),
        Kind::Text => Value::Text(expect_str(src, k, v)?),
        Kind::Number => Value::Text(expect_number_text(src, k, v)?),
        Kind::Stages => Value::Stages(stages_from_toml(src, k, v)?),
        Kind::Flag => match v.get_ref() {
            DeValue::Boolean(b) => Value::Int(i64::from(*b)),
            other => return Err(wrong_type(src, k, v, other, "a boolean")),
        },
    };
    Ok(Sp::new(value, src.at(v.span())))
}

pub(super) fn expect_table<'a, 'i>(
    src: &Source,
    name: &str,
    v: &'a Spanned<DeValue<'i>>,
) -> Result<&'a DeTable<'i>, PlanError> {
    match v.get_ref() {
        DeValue::Table(t) => Ok(t),
        other => Err(PlanError::new(
            src.at(v.span()),
            format!("`{name}` must be a table, not {}", type_name(other)),
        )
        .hint(format!("write it as a [{name}] section"))),
    }
}

/// Each table of an array of tables (`[[…]]`, or an array of inline tables), with its place.
fn tables<'a, 'i>(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &'a Spanned<DeValue<'i>>,
    what: &str,
) -> Result<Vec<(&'a DeTable<'i>, Origin)>, PlanError> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(wrong_type(
            src,
            k,
            v,
            v.get_ref(),
            &format!("an array of tables ({what})"),
        ));
    };
    (items.iter())
        .map(|item| match item.get_ref() {
            DeValue::Table(t) => Ok((t, src.at(item.span()))),
            other => Err(wrong_type(
                src,
                k,
                item,
                other,
                &format!("a table ({what})"),
            )),
        })
        .collect()
}

/// `[[faults]]`: each a table of strings (`at` may be an array of them).
fn faults_from_toml(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<Vec<RawFault>, PlanError> {
    let mut out = Vec::new();
    for (t, at) in tables(src, k, v, "[[faults]]")? {
        let mut words = Vec::new();
        for (key, value) in t.iter() {
            let at = src.at(value.span());
            let text = match value.get_ref() {
                DeValue::Array(list) => {
                    let mut parts = Vec::new();
                    for x in list.iter() {
                        parts.push(expect_str(src, key, x)?);
                    }
                    parts.join(",")
                }
                _ => expect_str(src, key, value)?,
            };
            words.push((
                Sp::new(key.get_ref().to_string(), src.at(key.span())),
                Sp::new(text, at),
            ));
        }
        out.push(RawFault {
            at: Some(at),
            words,
        });
    }
    Ok(out)
}

pub(super) fn expect_str(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<String, PlanError> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s.to_string()),
        other => Err(wrong_type(src, k, v, other, "a string")),
    }
}

pub(super) fn expect_int(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<i64, PlanError> {
    match v.get_ref() {
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).map_err(|_| {
            PlanError::new(
                src.at(v.span()),
                format!("`{}` is out of range", k.get_ref()),
            )
        }),
        other => Err(wrong_type(src, k, v, other, "an integer")),
    }
}

/// A rate written as a number (`5000`) or a string (`"1000..20000"`).
pub(super) fn expect_number_text(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<String, PlanError> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s.to_string()),
        DeValue::Integer(i) => Ok(i.to_string()),
        DeValue::Float(f) => Ok(f.as_str().to_string()),
        other => Err(wrong_type(src, k, v, other, "a number or a string")),
    }
}

/// `stages = [{ rate = 1000, duration = "30s" }, { rate = "1000..5000", duration = "1m" }]`
pub(super) fn stages_from_toml(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
) -> Result<Vec<RawStage>, PlanError> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(wrong_type(src, k, v, v.get_ref(), "an array"));
    };
    let mut out = Vec::new();
    for item in items.iter() {
        let DeValue::Table(t) = item.get_ref() else {
            return Err(
                PlanError::new(src.at(item.span()), "a stage must be a table")
                    .hint("write { rate = 1000, duration = \"30s\" }"),
            );
        };
        let (mut rate, mut duration) = (None, None);
        for (sk, sv) in t.iter() {
            let at = src.at(sv.span());
            match sk.get_ref().as_ref() {
                "rate" => rate = Some(Sp::new(expect_number_text(src, sk, sv)?, at)),
                "duration" => duration = Some(Sp::new(expect_str(src, sk, sv)?, at)),
                other => {
                    return Err(unknown_key(src, sk, other, "a stage", &keys::STAGE.names()));
                }
            }
        }
        match (rate, duration) {
            (Some(rate), Some(duration)) => out.push(RawStage { rate, duration }),
            _ => {
                return Err(PlanError::new(
                    src.at(item.span()),
                    "a stage needs a rate and a duration",
                )
                .hint("write { rate = 1000, duration = \"30s\" }"));
            }
        }
    }
    Ok(out)
}

pub(super) fn wrong_type(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    v: &Spanned<DeValue>,
    found: &DeValue,
    want: &str,
) -> PlanError {
    PlanError::new(
        src.at(v.span()),
        format!("`{}` must be {want}, not {}", k.get_ref(), type_name(found)),
    )
    .hint(match want {
        "an integer" => format!("write e.g. {} = 1000 (no quotes)", k.get_ref()),
        "a boolean" => format!("write {} = true or {} = false", k.get_ref(), k.get_ref()),
        "an array" => format!("write e.g. {} = [ ... ]", k.get_ref()),
        "a number or a string" => format!(
            "write e.g. {} = 5000 or {} = \"1000..20000\"",
            k.get_ref(),
            k.get_ref()
        ),
        _ => format!("write e.g. {} = \"…\" (in quotes)", k.get_ref()),
    })
}

pub(super) fn unknown_key(
    src: &Source,
    k: &Spanned<std::borrow::Cow<str>>,
    name: &str,
    section: &str,
    known: &[&str],
) -> PlanError {
    PlanError::new(
        src.at(k.span()),
        format!(
            "unknown key `{name}` in {section}; {}known keys: {}",
            did_you_mean(name, known.iter().copied()),
            known.join(", ")
        ),
    )
}
