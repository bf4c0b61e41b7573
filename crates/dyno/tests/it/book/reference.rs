//! The reference part of the book, made from the code: the commands' `--help`, every suite's
//! settings and every plan-file key, the drivers' URL forms and options, the exit statuses and
//! the record's fields (from its JSON Schema). The committed pages must be what the code makes
//! now, so the book cannot disagree with `--help`.

use super::*;
use serde_json::Value;

/// The pages this module makes, under `docs/src/reference/`.
fn made() -> Vec<(&'static str, String)> {
    vec![
        ("commands.md", commands()),
        ("settings.md", settings()),
        ("targets.md", targets()),
        ("exit-status.md", exit_status()),
        ("record-fields.md", record_fields()),
    ]
}

const MADE_BY: &str = "<!-- Made from the code by the test `book::reference`; do not edit: \
     `DYNO_BLESS=1 cargo test -p dyno --test it book::reference` writes it again. -->\n";

#[test]
fn the_reference_pages_are_what_the_code_says() {
    let dir = book_src().join("reference");
    let bless = std::env::var_os("DYNO_BLESS").is_some();
    let mut stale = Vec::new();
    for (file, text) in made() {
        let path = dir.join(file);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        if on_disk != text {
            if bless {
                std::fs::write(&path, &text).unwrap();
            } else {
                stale.push(file);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "docs/src/reference/{{{}}} no longer match the code; run \
         `DYNO_BLESS=1 cargo test -p dyno --test it book::reference` and commit the pages",
        stale.join(",")
    );
}

/// `text` fit for a Markdown table cell: pipes escaped, angle brackets kept as text.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\n', " ")
}

/// The subcommands `dyno --help` lists, in its order.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

fn commands() -> String {
    let top = dyno_stdout(&["--help"]);
    let mut out = format!(
        "# Commands and flags\n\n{MADE_BY}\nEach command's `--help`, as dyno prints it. `-h` \
         prints a summary; the flags of a suite's own settings are also its plan-file keys \
         ([settings](settings.md)).\n\n## `dyno`\n\n```text\n{top}```\n"
    );
    for sub in subcommands(&top) {
        let help = dyno_stdout(&[&sub, "--help"]);
        out.push_str(&format!("\n## `dyno {sub}`\n\n```text\n{help}```\n"));
    }
    out
}

fn settings() -> String {
    let all = suites::suites(&suites::BUILT_IN);
    let catalogue = engine::suite::catalogue(&all);
    let mut out = format!(
        "# Settings and plan-file keys\n\n{MADE_BY}\nA suite's setting is one key, written \
         the same three ways: a flag (`--max-connections 500`), a key of `[suite]` in a plan \
         file (`max_connections = 500`), or a key of the suite's own section (`[load]`). A flag \
         given with a plan file replaces what the file says.\n\n## The suites' settings\n\n\
         | key | flag | suites | meaning |\n|---|---|---|---|\n"
    );
    for described in catalogue.by_key() {
        let s = described[0];
        let mut flag = format!("`--{}`", s.long());
        if let Some(c) = s.short {
            flag = format!("`-{c}`, {flag}");
        }
        for a in s.aliases {
            flag.push_str(&format!(", `--{a}`"));
        }
        if s.kind == engine::plan::Kind::Flag {
            flag.push_str(&format!(" (`--no-{}` turns it off)", s.long()));
        }
        if s.kind == engine::plan::Kind::Stages {
            flag = "(plan files only)".into();
        }
        let readers: Vec<String> = (catalogue.suites.iter())
            .filter(|(_, settings)| settings.iter().any(|x| x.key == s.key))
            .map(|(n, _)| format!("`{n}`"))
            .collect();
        let help: Vec<&str> = described.iter().map(|d| d.help).collect();
        out.push_str(&format!(
            "| `{}` | {flag} | {} | {} |\n",
            s.key,
            readers.join(", "),
            cell(&help.join(" "))
        ));
    }
    for section in engine::plan::keys::SECTIONS {
        out.push_str(&format!(
            "\n## {}\n\n{}\n\n| key | meaning |\n|---|---|\n",
            cell(section.title),
            section.about
        ));
        for k in section.keys {
            out.push_str(&format!("| `{}` | {} |\n", k.name, cell(k.help)));
        }
    }
    out
}

fn targets() -> String {
    let mut out = format!(
        "# Targets and their options\n\n{MADE_BY}\nEvery driver built in (the default \
         features), as `dyno targets` lists them. Options go in the URL's query \
         (`sqlite:?synchronous=full`) or as keys of `[targets.NAME]` in a plan file.\n"
    );
    for d in targets::drivers() {
        let i = d.info;
        let families: Vec<&str> = i.families.iter().map(|f| f.as_str()).collect();
        let forms: Vec<String> = i.forms.iter().map(|f| format!("`{f}`")).collect();
        out.push_str(&format!(
            "\n## `{}:`\n\n{}\n\n- forms: {}\n- operation families: {}\n- clients: {}\n",
            i.scheme,
            cell(i.summary),
            forms.join(", "),
            families.join(", "),
            cell(&i.clients.to_string())
        ));
        if !i.options.is_empty() {
            out.push_str("\n| option | default | meaning |\n|---|---|---|\n");
            for o in i.options {
                let default = match o.default {
                    "" => String::new(),
                    d => format!("`{d}`"),
                };
                out.push_str(&format!(
                    "| `{}` | {default} | {} |\n",
                    o.name,
                    cell(o.help)
                ));
            }
        }
    }
    out
}

fn exit_status() -> String {
    let help = dyno_stdout(&["run", "--help"]);
    let rows: Vec<(String, String)> = (help.lines())
        .skip_while(|l| *l != "Exit status:")
        .skip(1)
        .filter_map(|l| {
            let (code, meaning) = l.trim().split_once("  ")?;
            Some((code.to_string(), meaning.trim().to_string()))
        })
        .collect();
    assert!(rows.len() >= 5, "dyno run --help lists no exit statuses");
    let mut out = format!(
        "# Exit status\n\n{MADE_BY}\nWhat `dyno run`'s exit status means, as `dyno run \
         --help` ends. `dyno merge` exits 4 as `run` does when a threshold breaks; the other \
         commands exit 0, 1 (bad input) or 2 (a malformed command line).\n\n\
         | status | meaning |\n|---:|---|\n"
    );
    for (code, meaning) in rows {
        out.push_str(&format!("| {code} | {} |\n", cell(&meaning)));
    }
    out
}

fn record_fields() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/schema/dyno.run-2.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut out = format!(
        "# Every field of the record\n\n{MADE_BY}\nThe fields of `run.json` (`dyno.run/2`), \
         from its JSON Schema (`crates/results/schema/dyno.run-2.schema.json`), which every \
         record the tests make is checked against. Durations are integers in ns, rates per \
         second, sizes in bytes. `[]` is an element of an array; a type in *italics* is a part \
         described in its own table below.\n\n## `run.json`\n\n"
    );
    table(&schema, &mut out);
    if let Some(Value::Object(defs)) = schema.get("$defs") {
        for (name, def) in defs {
            out.push_str(&format!("\n## {name}\n\n"));
            if let Some(d) = def.get("description").and_then(Value::as_str) {
                out.push_str(&format!("{}\n\n", cell(d)));
            }
            table(def, &mut out);
        }
    }
    out
}

/// A table of every field below `node`: path, type, meaning.
fn table(node: &Value, out: &mut String) {
    out.push_str("| field | type | meaning |\n|---|---|---|\n");
    let mut rows = Vec::new();
    fields(node, "", &mut rows);
    for (path, ty, meaning) in rows {
        out.push_str(&format!("| `{path}` | {ty} | {} |\n", cell(&meaning)));
    }
}

/// Walks an object schema's properties (and its `oneOf` alternatives, and the items of its
/// arrays), one row per field; a `$ref` is named, not followed.
fn fields(node: &Value, prefix: &str, rows: &mut Vec<(String, String, String)>) {
    let alternatives = node.get("oneOf").and_then(Value::as_array);
    for alt in alternatives.into_iter().flatten() {
        fields(alt, prefix, rows);
    }
    let Some(Value::Object(props)) = node.get("properties") else {
        return;
    };
    for (key, p) in props {
        let path = format!("{prefix}{key}");
        if rows.iter().any(|(p, _, _)| *p == path) {
            continue;
        }
        let meaning = p.get("description").and_then(Value::as_str).unwrap_or("");
        rows.push((path.clone(), type_of(p), meaning.to_string()));
        fields(p, &format!("{path}."), rows);
        if let Some(items) = p.get("items") {
            fields(items, &format!("{path}[]."), rows);
        }
    }
}

/// A field's type as a reader wants it: `integer`, `string or null`, `array of rep`.
fn type_of(p: &Value) -> String {
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        return format!("*{}*", r.rsplit('/').next().unwrap_or(r));
    }
    if let Some(c) = p.get("const") {
        return format!("`{c}`");
    }
    if let Some(Value::Array(values)) = p.get("enum") {
        let v: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return cell(&v.join(", "));
    }
    if let Some(Value::Array(alts)) = p.get("oneOf") {
        let t: Vec<String> = alts.iter().map(type_of).collect();
        return t.join(" or ");
    }
    let ty = match p.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => {
            let t: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
            t.join(" or ")
        }
        _ => "any".into(),
    };
    match p.get("items") {
        Some(items) if ty == "array" => format!("array of {}", type_of(items)),
        _ => ty,
    }
}
