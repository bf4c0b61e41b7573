//! pgbench's script language, read: SQL commands (ended by `;`, over as many lines as they
//! take, with `:variables` as parameters; statements joined by `\;` into a compound command),
//! cut from the text as pgbench's lexer cuts it ([`lex`]), and the meta-commands dyno runs —
//! `\set`, `\sleep`, `\if` / `\elif` / `\else` / `\endif`, `\gset`, `\aset` and
//! `\startpipeline` / `\syncpipeline` / `\endpipeline` — plus the built-in scripts. Every
//! mistake is one message naming `FILE:LINE:COLUMN`; nothing is half-read.

use super::expr::{self, Expr};

pub(super) mod lex;

/// One command of a script, with the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub line: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// SQL with its `:variables` cut out: `parts` are the text around them (one more than
    /// `vars`), so a driver writes `$1` or `?` between. A variable joined to the word before
    /// it (`sbtest:t`) is not a parameter but part of a name: its value is written into the
    /// text, as pgbench's simple mode would, and the statement is prepared once per value;
    /// `spliced` are those variables' indexes in `vars`. `statements` is more than one in a
    /// compound command (statements joined by `\;`, sent as one query); `assign` is its
    /// `\gset` or `\aset`.
    Sql {
        text: String,
        parts: Vec<String>,
        vars: Vec<String>,
        spliced: Vec<usize>,
        statements: usize,
        assign: Option<Assign>,
    },
    Set {
        var: String,
        expr: Expr,
    },
    /// `\sleep N [us|ms|s]`: `N` a number or a variable; the unit in microseconds.
    Sleep {
        amount: Amount,
        unit_us: u64,
    },
    /// `\shell COMMAND [ARG…]` (`var` none) and `\setshell VAR COMMAND [ARG…]`: a command
    /// line for the shell, its words joined by spaces.
    Shell {
        var: Option<String>,
        words: Vec<Word>,
    },
    If(Expr),
    Elif(Expr),
    Else,
    Endif,
    /// `\startpipeline`, `\syncpipeline`, `\endpipeline`: the SQL between is sent without
    /// waiting for the replies before it (PostgreSQL's extended protocol), read at the end.
    StartPipeline,
    SyncPipeline,
    EndPipeline,
}

impl Kind {
    /// Whether it is a compound command: statements joined by `\;`, sent as one query.
    pub fn is_compound(&self) -> bool {
        matches!(self, Kind::Sql { statements, .. } if *statements > 1)
    }

    /// Whether SQL takes values from the client (variables) or gives it some (`\gset`,
    /// `\aset`): a compound command that does can only be sent with its values written in.
    pub fn exchanges_values(&self) -> bool {
        matches!(self, Kind::Sql { vars, assign, .. } if !vars.is_empty() || assign.is_some())
    }
}

/// Where a query's result goes: `\gset PREFIX` (the last statement's one row, which it must
/// give) or `\aset PREFIX` (`every` statement's last row, where it gives one), each column
/// into the variable named by the prefix and the column's name.
#[derive(Debug, Clone, PartialEq)]
pub struct Assign {
    pub prefix: String,
    pub every: bool,
}

/// A word of a `\shell` command line: as written (`::name` is `:name`), or a variable's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Word {
    Literal(String),
    Var(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Amount {
    Literal(i64),
    Var(String),
}

/// A mistake in a script, located.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// A script, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub name: String,
    pub commands: Vec<Command>,
    pub source: Source,
}

/// Where a script comes from: what the run may know of it (the invariant it keeps, the
/// conflicts it retries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    File,
    /// One of pgbench's built-ins.
    Pgbench,
    /// One of sysbench's OLTP built-ins (`sysbench.rs`).
    Sysbench,
}

/// pgbench's built-in scripts, by name.
pub const BUILT_IN: [(&str, &str); 3] = [
    (
        "tpcb-like",
        "\\set aid random(1, 100000 * :scale)\n\\set bid random(1, 1 * :scale)\n\
         \\set tid random(1, 10 * :scale)\n\\set delta random(-5000, 5000)\nBEGIN;\n\
         UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
         SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
         UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n\
         UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n\
         INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
         END;\n",
    ),
    (
        "simple-update",
        "\\set aid random(1, 100000 * :scale)\n\\set bid random(1, 1 * :scale)\n\
         \\set tid random(1, 10 * :scale)\n\\set delta random(-5000, 5000)\nBEGIN;\n\
         UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
         SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
         INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
         END;\n",
    ),
    (
        "select-only",
        "\\set aid random(1, 100000 * :scale)\n\
         SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    ),
];

/// The built-in script `name` (pgbench's `-b`; a unique prefix is enough, as in pgbench).
pub fn built_in(name: &str) -> Result<Script, String> {
    let found: Vec<_> = BUILT_IN
        .iter()
        .filter(|(n, _)| n.starts_with(name))
        .collect();
    match found.as_slice() {
        [(n, text)] => parse(n, text)
            .map(|s| Script {
                source: Source::Pgbench,
                ..s
            })
            .map_err(|e| format!("built-in {n}: {}", e.message)),
        _ => Err(format!(
            "no built-in script {name:?}; the built-ins: {}",
            BUILT_IN.map(|(n, _)| n).join(", ")
        )),
    }
}

fn is_name(c: char, first: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || !c.is_ascii() || (!first && c.is_ascii_digit())
}

/// Whether `name` is a variable's name: a letter (any script's) or `_`, then those or digits.
pub(crate) fn is_variable(name: &str) -> bool {
    name.chars().next().is_some_and(|c| is_name(c, true)) && name.chars().all(|c| is_name(c, false))
}

/// Reads a script's text. `name` names it in messages.
pub fn parse(name: &str, text: &str) -> Result<Script, ScriptError> {
    let mut commands = Vec::new();
    for piece in lex::pieces(text)? {
        match piece {
            lex::Piece::Sql {
                text,
                line,
                column,
                starts,
            } => commands.push(sql(text, line, column, &starts)?),
            lex::Piece::Meta { text, line, column } => {
                if let Some(kind) = meta_command(&text, line, column, &mut commands)? {
                    commands.push(Command { line, kind });
                }
            }
        }
    }
    check_nesting(&commands)?;
    check_pipelines(&commands)?;
    if commands.is_empty() {
        return Err(ScriptError {
            line: 1,
            column: 1,
            message: format!("{name}: the script has no command"),
        });
    }
    Ok(Script {
        name: name.to_string(),
        commands,
        source: Source::File,
    })
}

/// An SQL command beginning at `line`:`column`, its statements beginning at `starts`; each
/// statement is checked to stay in dyno's schema.
fn sql(text: String, line: usize, column: usize, starts: &[usize]) -> Result<Command, ScriptError> {
    for (k, &from) in starts.iter().enumerate() {
        let to = starts.get(k + 1).map_or(text.len(), |&n| n);
        if let Err((at, why)) = super::confine::check(&text[from..to]) {
            // The place in the file: lines into the command, and the column on that line.
            let before = &text[..from + at];
            let lines = before.matches('\n').count();
            let column = match before.rfind('\n') {
                Some(n) => before.len() - n,
                None => column + before.len(),
            };
            return Err(err(line + lines, column, why));
        }
    }
    let text = commit_for_end(text, starts);
    let (parts, vars, spliced) = split_vars(&text);
    Ok(Command {
        line,
        kind: Kind::Sql {
            text,
            parts,
            vars,
            spliced,
            statements: starts.len(),
            assign: None,
        },
    })
}

/// A compound command's `END` (PostgreSQL's word for `COMMIT`) written as `COMMIT`: the same
/// to PostgreSQL, and a statement MySQL has. (An `END` of its own, the MySQL session sends as
/// `COMMIT` itself; in a compound command it cannot see the statements.)
fn commit_for_end(text: String, starts: &[usize]) -> String {
    if starts.len() < 2 {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for (k, &from) in starts.iter().enumerate() {
        let piece = &text[from..starts.get(k + 1).map_or(text.len(), |&n| n)];
        let word = piece.trim().trim_end_matches(';').trim();
        match word.eq_ignore_ascii_case("end") {
            true => out.push_str(&piece.replacen(word, "COMMIT", 1)),
            false => out.push_str(piece),
        }
    }
    out
}

/// The text around each `:name` (a `::cast` is kept as it is), and which names are joined to
/// the word before them.
fn split_vars(text: &str) -> (Vec<String>, Vec<String>, Vec<usize>) {
    let (mut parts, mut vars, mut spliced) = (Vec::new(), Vec::new(), Vec::new());
    let mut part = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c != ':' {
            part.push(c);
            continue;
        }
        match chars.peek() {
            Some(&(_, n)) if is_name(n, true) => {
                let mut name = String::new();
                while let Some(&(_, n)) = chars.peek() {
                    if !is_name(n, false) {
                        break;
                    }
                    name.push(n);
                    chars.next();
                }
                if part.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                    spliced.push(vars.len());
                }
                parts.push(std::mem::take(&mut part));
                vars.push(name);
            }
            _ => {
                part.push(':');
                while let Some(&(_, ':')) = chars.peek() {
                    part.push(':');
                    chars.next();
                }
            }
        }
    }
    parts.push(part);
    (parts, vars, spliced)
}

fn err(line: usize, column: usize, message: impl Into<String>) -> ScriptError {
    ScriptError {
        line,
        column,
        message: message.into(),
    }
}

/// One meta-command (the text after its `\`); `None` for `\gset` and `\aset`, which join the
/// SQL before.
fn meta_command(
    meta: &str,
    line: usize,
    column: usize,
    commands: &mut [Command],
) -> Result<Option<Kind>, ScriptError> {
    let word_end = meta.find(char::is_whitespace).unwrap_or(meta.len());
    let word = meta[..word_end].to_ascii_lowercase();
    let args = meta[word_end..].trim();
    // Where the arguments start, for an expression's columns.
    let args_at = column + 1 + meta.len() - meta[word_end..].trim_start().len();
    let expression =
        |text: &str| expr::parse(text).map_err(|e| err(line, args_at + e.at, e.message));
    Ok(Some(match word.as_str() {
        "set" => {
            let (var, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
            if !is_variable(var) {
                return Err(err(
                    line,
                    args_at,
                    format!("\\set needs a variable's name, not {var:?}"),
                ));
            }
            let at = args_at + args.len() - rest.trim_start().len();
            let expr = expr::parse(rest).map_err(|e| err(line, at + e.at, e.message))?;
            Kind::Set {
                var: var.to_string(),
                expr,
            }
        }
        "sleep" => sleep(args, line, args_at)?,
        "if" => Kind::If(expression(args)?),
        "elif" => Kind::Elif(expression(args)?),
        "else" | "endif" | "startpipeline" | "syncpipeline" | "endpipeline" if !args.is_empty() => {
            return Err(err(line, args_at, format!("\\{word} takes no argument")));
        }
        "else" => Kind::Else,
        "endif" => Kind::Endif,
        "startpipeline" => Kind::StartPipeline,
        "syncpipeline" => Kind::SyncPipeline,
        "endpipeline" => Kind::EndPipeline,
        "gset" | "aset" => {
            if args.split_whitespace().nth(1).is_some() {
                return Err(err(
                    line,
                    args_at,
                    format!("\\{word} takes one prefix at most"),
                ));
            }
            let to = Assign {
                prefix: args.to_string(),
                every: word == "aset",
            };
            match commands.last_mut().map(|c| &mut c.kind) {
                Some(Kind::Sql { assign, .. }) if assign.is_none() => *assign = Some(to),
                _ => {
                    return Err(err(
                        line,
                        column,
                        format!("\\{word} must follow an SQL command"),
                    ));
                }
            }
            return Ok(None);
        }
        "shell" | "setshell" => shell(&word, args, line, args_at)?,
        other => return Err(err(line, column, format!("invalid command \\{other}"))),
    }))
}

/// `\shell COMMAND [ARG…]` or `\setshell VAR COMMAND [ARG…]`: words split at blanks, as
/// pgbench splits them; `:name` a variable's value, `::name` the text `:name`.
fn shell(word: &str, args: &str, line: usize, at: usize) -> Result<Kind, ScriptError> {
    let mut words = args.split_whitespace();
    let var = match word {
        "setshell" => match words.next() {
            Some(v) if is_variable(v) => Some(v.to_string()),
            v => {
                let v = v.unwrap_or_default();
                return Err(err(
                    line,
                    at,
                    format!("\\setshell needs a variable's name, not {v:?}"),
                ));
            }
        },
        _ => None,
    };
    let mut out = Vec::new();
    for w in words {
        out.push(match w.strip_prefix(':') {
            Some(rest) if rest.starts_with(':') => Word::Literal(rest.to_string()),
            Some(name) if is_variable(name) => Word::Var(name.to_string()),
            Some(_) => {
                return Err(err(
                    line,
                    at,
                    format!(
                        "\\{word}: {w:?} is not a :variable (write ::{} for the text {w})",
                        &w[1..]
                    ),
                ));
            }
            None => Word::Literal(w.to_string()),
        });
    }
    let words = out;
    if words.is_empty() {
        return Err(err(line, at, format!("\\{word} needs a command to run")));
    }
    Ok(Kind::Shell { var, words })
}

/// `\sleep N [us|ms|s]` (the unit may be joined to the number).
fn sleep(args: &str, line: usize, at: usize) -> Result<Kind, ScriptError> {
    let (num, unit) = match args.split_once(char::is_whitespace) {
        Some((n, u)) => (n, u.trim()),
        None => {
            let split = args
                .find(|c: char| c.is_ascii_alphabetic() && !args.starts_with(':'))
                .unwrap_or(args.len());
            (&args[..split], &args[split..])
        }
    };
    if num.is_empty() {
        return Err(err(
            line,
            at,
            format!("\\sleep: {args:?} is not a whole number or a :variable"),
        ));
    }
    let unit_us = match unit.to_ascii_lowercase().as_str() {
        "" | "s" => 1_000_000,
        "ms" => 1_000,
        "us" => 1,
        u => {
            return Err(err(
                line,
                at,
                format!("\\sleep: unknown time unit {u:?} (us, ms or s)"),
            ));
        }
    };
    let amount = match num.strip_prefix(':') {
        Some(var) if !var.is_empty() => Amount::Var(var.to_string()),
        _ => Amount::Literal(num.parse().map_err(|_| {
            err(
                line,
                at,
                format!("\\sleep: {num:?} is not a whole number or a :variable"),
            )
        })?),
    };
    Ok(Kind::Sleep { amount, unit_us })
}

/// `\if` … `\endif` nest as pgbench requires.
fn check_nesting(commands: &[Command]) -> Result<(), ScriptError> {
    // For each open `\if`: its line, and whether its `\else` was seen.
    let mut open: Vec<(usize, bool)> = Vec::new();
    for c in commands {
        match c.kind {
            Kind::If(_) => open.push((c.line, false)),
            Kind::Elif(_) | Kind::Else => match open.last_mut() {
                None => return Err(err(c.line, 1, "\\elif or \\else without a matching \\if")),
                Some((_, true)) => return Err(err(c.line, 1, "\\elif or \\else after \\else")),
                Some((_, seen)) => *seen = matches!(c.kind, Kind::Else),
            },
            Kind::Endif if open.pop().is_none() => {
                return Err(err(c.line, 1, "\\endif without a matching \\if"));
            }
            _ => {}
        }
    }
    match open.last() {
        Some((line, _)) => Err(err(*line, 1, "\\if without a matching \\endif")),
        None => Ok(()),
    }
}

/// Pipelines open and close as pgbench requires, and hold only what can be pipelined: SQL
/// whose result no later command needs (no `\gset`) and whose text is fixed (no variable
/// joined to a name). A pipeline ends in the `\if` branch it began in.
fn check_pipelines(commands: &[Command]) -> Result<(), ScriptError> {
    // The line of the open pipeline's `\startpipeline`; per open `\if`, that as it began.
    let mut open: Option<usize> = None;
    let mut ifs: Vec<Option<usize>> = Vec::new();
    let branch_end = |open: Option<usize>, at_if: Option<usize>, line| match (open, at_if) {
        (Some(from), None) => Err(err(
            line,
            1,
            format!(
                "the pipeline begun on line {from} must end (\\endpipeline) in the \\if branch it began in"
            ),
        )),
        (None, Some(_)) => Err(err(
            line,
            1,
            "a pipeline open at the \\if must stay open to the end of each of its branches",
        )),
        _ => Ok(()),
    };
    for c in commands {
        match (&c.kind, open) {
            (Kind::StartPipeline, Some(from)) => {
                return Err(err(
                    c.line,
                    1,
                    format!("\\startpipeline inside the pipeline begun on line {from}"),
                ));
            }
            (Kind::StartPipeline, None) => open = Some(c.line),
            (Kind::SyncPipeline | Kind::EndPipeline, None) => {
                return Err(err(
                    c.line,
                    1,
                    "\\syncpipeline or \\endpipeline outside a pipeline (\\startpipeline begins one)",
                ));
            }
            (Kind::EndPipeline, Some(_)) => open = None,
            (
                Kind::Sql {
                    assign: Some(a), ..
                },
                Some(_),
            ) => {
                let word = if a.every { "aset" } else { "gset" };
                return Err(err(
                    c.line,
                    1,
                    format!(
                        "\\{word} in a pipeline: its result comes only at \\endpipeline; end the pipeline before it"
                    ),
                ));
            }
            (Kind::Sql { statements, .. }, Some(_)) if *statements > 1 => {
                return Err(err(
                    c.line,
                    1,
                    "a compound command (\\;) in a pipeline: it is sent as one query of the simple protocol, which pipelines do not carry",
                ));
            }
            (Kind::Sql { spliced, vars, .. }, Some(_)) if !spliced.is_empty() => {
                return Err(err(
                    c.line,
                    1,
                    format!(
                        "\"{}\" is joined to a name, which makes a statement per value: not in a pipeline (its statements are prepared before it begins)",
                        vars[spliced[0]]
                    ),
                ));
            }
            (Kind::If(_), _) => ifs.push(open),
            (Kind::Elif(_) | Kind::Else, _) => {
                branch_end(open, *ifs.last().expect("nested"), c.line)?
            }
            (Kind::Endif, _) => branch_end(open, ifs.pop().expect("nested"), c.line)?,
            _ => {}
        }
    }
    match open {
        Some(from) => Err(err(
            from,
            1,
            "\\startpipeline without \\endpipeline before the script's end",
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
