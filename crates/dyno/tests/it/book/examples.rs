//! The book's examples, run. A ```` ```console ```` block holds commands (`$ dyno …`, as typed
//! in a shell; a line ending in `\` goes on) each followed by the text it prints, standard
//! output and standard error as a terminal shows them. Every block runs in a fresh directory
//! with `dyno` on the `PATH` (the binary under test) and the repository's `examples/` and
//! `adapters/` beside it, as in a clone; its commands run in turn there, in one shell session,
//! and each must exit 0 (an example of a failure shows `; echo "exit status: $?"`).
//!
//! The comparison is of the text a user sees, with the figures that change run to run masked
//! in both: every number is `#`, a unit right after a number is dropped, runs of spaces are one
//! space, and a table's rule is `--`. Words, flags, rows, columns and their order must match. An
//! expected line `...` stands for any lines (none included), and `[..]` in a line for any text.
//! ```` ```sh ```` blocks are not run: they need a server or a long time.

use super::*;
use std::process::Command;

/// One command of an example and the text it prints.
#[derive(Debug)]
struct Step {
    command: String,
    expected: Vec<String>,
}

/// One ```` ```console ```` block: its page, its first line, its steps.
#[derive(Debug)]
struct Example {
    page: String,
    line: usize,
    steps: Vec<Step>,
}

/// The console blocks of a page.
fn examples(page: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, l)) = lines.next() {
        if l.trim_end() != "```console" {
            continue;
        }
        let mut ex = Example {
            page: name(page),
            line: n + 1,
            steps: Vec::new(),
        };
        // The command goes on: after a `\`, or until the end of a here-document.
        let (mut continued, mut until) = (false, None::<String>);
        for (_, l) in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            if continued || until.is_some() {
                let step = ex.steps.last_mut().unwrap();
                step.command.push('\n');
                step.command.push_str(l);
                continued = l.ends_with('\\');
                if until.as_deref() == Some(l) {
                    until = None;
                }
            } else if let Some(cmd) = l.strip_prefix("$ ") {
                ex.steps.push(Step {
                    command: cmd.to_string(),
                    expected: Vec::new(),
                });
                continued = l.ends_with('\\');
                until = here_document(cmd);
            } else {
                let step = ex.steps.last_mut();
                let step = step.unwrap_or_else(|| {
                    panic!("{}:{}: output before a `$ ` command", name(page), n + 1)
                });
                step.expected.push(l.to_string());
            }
        }
        out.push(ex);
    }
    out
}

/// The word that ends a here-document the command starts (`cat > plan.toml <<'EOF'`).
fn here_document(command: &str) -> Option<String> {
    let (_, rest) = command.split_once("<<")?;
    let word = rest.trim_start_matches('-').split_whitespace().next()?;
    Some(word.trim_matches(|c| c == '\'' || c == '"').to_string())
}

/// A line with its changing figures masked (see the module's note).
fn mask(line: &str) -> String {
    const UNITS: [&str; 19] = [
        "ns", "µs", "us", "ms", "s", "min", "h", "B", "kB", "KiB", "MB", "MiB", "GB", "GiB",
        "bit/s", "kbit/s", "Mbit/s", "Gbit/s", "B/s",
    ];
    let mut words = Vec::new();
    for word in line.split_whitespace() {
        let mut w = String::new();
        let mut chars = word.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() {
                while chars
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
                {
                    chars.next();
                }
                w.push('#');
                // A unit glued to its number: `2.5ms`, `1.2k`.
                while chars.peek().is_some_and(|c| c.is_alphabetic()) {
                    chars.next();
                }
            } else {
                w.push(c);
            }
        }
        let unit_after_number =
            words.last().is_some_and(|p: &String| p.ends_with('#')) && UNITS.contains(&w.as_str());
        if w.len() >= 2 && w.chars().all(|c| c == '-') {
            words.push("--".into());
        } else if !unit_after_number {
            words.push(w);
        }
    }
    words.join(" ")
}

/// Whether `actual` matches `expected`, both masked: `...` lines match any lines, `[..]` any
/// text within a line.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((e, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| line_matches(e, a) && matches(rest, more)),
    }
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let mut parts = expected.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, p) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(p);
        }
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The masked, non-blank lines of a text.
fn masked(lines: impl Iterator<Item = impl AsRef<str>>) -> Vec<String> {
    lines
        .map(|l| mask(l.as_ref()))
        .filter(|l| !l.is_empty())
        .collect()
}

/// Marks the end of a step in the session's output, with the step's exit status after it.
const STEP_END: &str = "@@book-example-step-status:";

/// Runs one example as one shell session (variables and background jobs live from one command
/// to the next, as in a terminal), at most two minutes; its failures, as messages. Whatever the
/// session left running is stopped: it is a process group of its own.
fn run(ex: &Example, bin_dir: &Path) -> Vec<String> {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    // As in a clone: the repository's plans and adapters at their paths.
    let repo = book_src().join("../..");
    for shared in ["examples", "adapters"] {
        std::os::unix::fs::symlink(repo.join(shared), dir.path().join(shared)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut script = String::from("exec 2>&1 </dev/null\n");
    for step in &ex.steps {
        script.push_str(&format!("{}\necho \"{STEP_END}$?\"\n", step.command));
    }
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir.path())
        .env("PATH", &path)
        .env("TMPDIR", dir.path().join("tmp"))
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut text).ok();
        String::from_utf8_lossy(&text).into_owned()
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: a signal to the process group this test started (its id is the shell's PID).
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    child.wait().unwrap();
    let text = reader.join().unwrap();
    let mut outputs = text.split(STEP_END);
    let mut failures = Vec::new();
    let mut printed = outputs.next().unwrap_or("").to_string();
    for step in &ex.steps {
        // Each later piece starts with the step's status, then the next step's output.
        let (status, next) = match outputs.next() {
            Some(piece) => piece.split_once('\n').unwrap_or((piece, "")),
            None => ("did not finish within 2 minutes", ""),
        };
        let (expected, actual) = (masked(step.expected.iter()), masked(printed.lines()));
        if status != "0" || !matches(&expected, &actual) {
            failures.push(format!(
                "{}:{}: `{}` (exit status {status}) printed:\n{printed}\n-- the book shows:\n{}\n",
                ex.page,
                ex.line,
                step.command,
                step.expected.join("\n")
            ));
        }
        printed = next.to_string();
    }
    failures
}

#[test]
fn every_example_in_the_book_prints_what_the_book_shows() {
    share_machine();
    let bin = assert_cmd::cargo::cargo_bin("dyno");
    let all: Vec<Example> = pages().iter().flat_map(|p| examples(p)).collect();
    assert!(
        all.len() >= 10,
        "only {} runnable examples in the book",
        all.len()
    );
    let failures: Vec<String> = all
        .iter()
        .flat_map(|ex| run(ex, bin.parent().unwrap()))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_comparison_masks_figures_and_nothing_else() {
    let m = |s: &str| masked(s.lines());
    // Figures, units and alignment move run to run: masked.
    let book = m("add     2,857,420  250ns / 8.02µs\n-------  ---\nsize 300 B  took 7.5 s");
    let today = m("add       981,002  1.2ms / 15µs\n----  -----------\nsize 12 MB  took 11 s");
    assert!(matches(&book, &today));
    // Words and flags do not: a renamed flag or a missing row fails.
    assert!(!matches(
        &m("error: unexpected argument '--reps'"),
        &m("error: unexpected argument '--repetitions'")
    ));
    assert!(!matches(&m("add 1\nwarm 2"), &m("add 1")));
    assert!(!matches(&m("add 1"), &m("add 1\nwarm 2")));
    // `...` takes any lines, `[..]` any text.
    assert!(matches(
        &m("add 1\n...\nhot 3"),
        &m("add 1\nwarm 2\ncold 5\nhot 3")
    ));
    assert!(matches(&m("add 1\n...\nhot 3"), &m("add 1\nhot 3")));
    assert!(matches(
        &m("results in [..]/run"),
        &m("results in dyno-results/abc/run")
    ));
    assert!(!matches(
        &m("results in [..]/run"),
        &m("results in dyno-results/abc/walk")
    ));
}
