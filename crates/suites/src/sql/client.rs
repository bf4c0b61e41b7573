//! One client running a pgbench script on a SQL session: `\set` evaluated with the client's
//! own generator, `\if` branches taken, `\sleep` slept, every SQL command made ready once
//! (prepared, under pgbench's `-M prepared`; one without variables that the server will not
//! prepare sent as written) and run with the variables' values as text, `\gset` and `\aset`
//! storing what a query gave, the SQL of a pipeline queued and its replies read at
//! `\endpipeline`. Each SQL command is timed apart.

use super::eval::{Env, Value, Vars, eval};
use super::random::Prng;
use super::script::{Amount, Assign, Kind, Script, Word};
use engine::driver::{OpError, SqlParam, SqlSession};
use std::time::{Duration, Instant};

mod code;
pub use code::ServerCode;

/// A failure of a transaction: the script's line, and what went wrong (a server's error keeps
/// its class).
#[derive(Debug)]
pub enum Failure {
    /// The script asked for something impossible (an undefined variable, a division by zero).
    Script { line: usize, message: String },
    /// The server (or the connection) failed a statement.
    Sql { line: usize, error: OpError },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Script { line, message } => write!(f, "line {line}: {message}"),
            Failure::Sql { line, error } => write!(f, "line {line}: {error}"),
        }
    }
}

/// How a command's SQL reaches the server.
enum Prepared {
    /// Sent as written (no variable, no `\gset` or `\aset`, and the server would not prepare
    /// it).
    Text,
    /// Prepared once.
    Once(usize),
    /// Prepared once per value of the variables spliced into its text: those values (joined
    /// by a space), and the statement.
    PerValue(Vec<(String, usize)>),
    /// Prepared once, and queued in its pipeline (its reply read at `\endpipeline`).
    Piped(usize),
    /// Prepared at its first run: when the session began the server did not know a table,
    /// function, column, type or schema it names, which the script may make before it.
    Later,
}

/// `parts` prepared on the server, a refusal failing the command at `line`.
fn prepare(session: &mut dyn SqlSession, parts: &[String], line: usize) -> Result<usize, Failure> {
    (session.prepare(parts)).map_err(|error| Failure::Sql { line, error })
}

/// What becomes of a statement's reply.
#[derive(Clone, Copy)]
enum Reply<'a> {
    /// Its rows are counted.
    Count,
    /// Into variables (`\gset` or `\aset`), from a command of this many statements.
    Assign(&'a Assign, usize),
    /// None yet: the statement is queued in a pipeline.
    Queue,
}

/// A script made ready for one session: its prepared statements, and where each branch of an
/// `\if` goes.
pub struct Ready<'a> {
    pub(crate) script: &'a Script,
    /// Per command: how its SQL is sent.
    stmts: Vec<Prepared>,
    /// Per `\if`, `\elif` and `\else`: the next branch's command (or the `\endif`).
    next_branch: Vec<usize>,
    /// Per `\if`, `\elif` and `\else`: its `\endif`.
    endif: Vec<usize>,
}

/// Prepares `script`'s SQL on `session` (SQL with a variable spliced into its text, when it
/// first runs with each value).
pub fn ready<'a>(script: &'a Script, session: &mut dyn SqlSession) -> Result<Ready<'a>, Failure> {
    let n = script.commands.len();
    let mut stmts = Vec::with_capacity(n);
    // Whether the command is in a pipeline (they neither nest nor cross an `\if`'s branches).
    let mut piped = false;
    for c in &script.commands {
        match c.kind {
            Kind::StartPipeline => {
                if let Err(why) = session.pipelines() {
                    return Err(Failure::Script {
                        line: c.line,
                        message: format!("\\startpipeline: {why}"),
                    });
                }
                piped = true;
            }
            Kind::EndPipeline => piped = false,
            _ => {}
        }
        // Every SQL command is made ready once, as the query mode says. Under `-M prepared`
        // it is prepared, as pgbench and sysbench prepare even `BEGIN` and `COMMIT`: one with
        // variables, a `\gset` or `\aset` or in a pipeline must be (at its first run if it
        // names what the server does not know yet), and one without that the server will
        // not prepare (several statements in one) is sent as written. Under the other modes
        // nothing reaches the server here.
        stmts.push(match &c.kind {
            // A compound command is one query of several statements: sent as written, unless
            // its values are written in (`-M simple`, which the plan then has).
            k if k.is_compound() && !k.exchanges_values() => Prepared::Text,
            Kind::Sql { spliced, .. } if !spliced.is_empty() => Prepared::PerValue(Vec::new()),
            Kind::Sql { parts, .. } if piped => Prepared::Piped(prepare(session, parts, c.line)?),
            Kind::Sql {
                parts,
                vars,
                assign,
                ..
            } if !vars.is_empty() || assign.is_some() => match prepare(session, parts, c.line) {
                Ok(stmt) => Prepared::Once(stmt),
                // As pgbench prepares each command just before its first run.
                Err(Failure::Sql { error, .. })
                    if ServerCode::of(&error.message)
                        .is_some_and(ServerCode::names_the_unknown) =>
                {
                    Prepared::Later
                }
                Err(f) => return Err(f),
            },
            Kind::Sql { parts, .. } => match session.prepare(parts) {
                Ok(stmt) => Prepared::Once(stmt),
                // A connection lost or a reply late is no answer: the client ends, as for any
                // other statement. The server's refusal sends it as written.
                Err(error) if error.class.is_connection() => {
                    return Err(Failure::Sql {
                        line: c.line,
                        error,
                    });
                }
                Err(_) => Prepared::Text,
            },
            _ => Prepared::Text,
        });
    }
    let (mut next_branch, mut endif) = (vec![n; n], vec![n; n]);
    // The branch markers of each open `\if`.
    let mut open: Vec<Vec<usize>> = Vec::new();
    for (i, c) in script.commands.iter().enumerate() {
        match c.kind {
            Kind::If(_) => open.push(vec![i]),
            Kind::Elif(_) | Kind::Else => {
                if let Some(marks) = open.last_mut() {
                    next_branch[*marks.last().unwrap()] = i;
                    marks.push(i);
                }
            }
            Kind::Endif => {
                for m in open.pop().unwrap_or_default() {
                    endif[m] = i;
                    if next_branch[m] == n {
                        next_branch[m] = i;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(Ready {
        script,
        stmts,
        next_branch,
        endif,
    })
}

/// A client's state between transactions: its variables and its generator.
pub struct Client {
    pub vars: Vars,
    pub prng: Prng,
    pub default_seed: i64,
    /// The parameters of the statement being run (their text reused, so a value costs no
    /// allocation).
    texts: Vec<Slot>,
    /// The spliced values of the statement being found (reused).
    key: String,
    /// In a pipeline: each SQL command queued (its index) and when (reused).
    queued: Vec<(usize, Instant)>,
    /// The command running, or the last one run: where the script's failure came, if it did
    /// (a pipelined one's, when its reply failed).
    pub(crate) at: usize,
}

impl Client {
    pub fn new(vars: Vars, prng: Prng, default_seed: i64) -> Client {
        Client {
            vars,
            prng,
            default_seed,
            texts: Vec::new(),
            key: String::new(),
            queued: Vec::new(),
            at: 0,
        }
    }

    fn eval(&mut self, e: &super::expr::Expr, at: (&str, usize)) -> Result<Value, Failure> {
        let line = at.1;
        let mut env = Env {
            vars: &self.vars,
            prng: &mut self.prng,
            default_seed: self.default_seed,
            at,
        };
        eval(e, &mut env).map_err(|message| Failure::Script { line, message })
    }

    /// Runs the script once (one transaction, in pgbench's words). `timed` sees each SQL
    /// command's index and time; `sleep` sleeps (on the client's fiber, or its thread).
    pub fn run(
        &mut self,
        ready: &mut Ready<'_>,
        session: &mut dyn SqlSession,
        timed: &mut dyn FnMut(usize, Duration),
        sleep: &mut dyn FnMut(Duration),
    ) -> Result<(), Failure> {
        let commands = &ready.script.commands;
        let stmts = &mut ready.stmts;
        let (mut pc, mut jumped) = (0, false);
        while pc < commands.len() {
            let i = pc;
            let c = &commands[i];
            pc += 1;
            self.at = i;
            // Whether this command was reached by leaving a branch whose condition was false.
            let arrived = std::mem::replace(&mut jumped, false);
            match &c.kind {
                Kind::Set { var, expr } => {
                    let v = self.eval(expr, (&ready.script.name, c.line))?;
                    // A variable set before keeps its name's allocation.
                    match self.vars.get_mut(var) {
                        Some(slot) => *slot = v,
                        None => drop(self.vars.insert(var.clone(), v)),
                    }
                }
                // A branch that ran reaches the next one's marker: on past the `\endif`.
                Kind::Elif(_) | Kind::Else if !arrived => pc = ready.endif[i],
                Kind::If(e) | Kind::Elif(e) => {
                    if !self.truthy(e, (&ready.script.name, c.line))? {
                        pc = ready.next_branch[i];
                        jumped = true;
                    }
                }
                Kind::Else | Kind::Endif => {}
                Kind::Sleep { amount, unit_us } => sleep(self.sleep_for(amount, *unit_us, c.line)?),
                Kind::Shell { var, words } => self.shell(var.as_deref(), words, c.line, sleep)?,
                Kind::StartPipeline => {
                    // A pipeline a failed transaction left open, the session abandons.
                    session.start_pipeline().map_err(|error| Failure::Sql {
                        line: c.line,
                        error,
                    })?;
                    self.queued.clear();
                }
                Kind::SyncPipeline => (session.sync_segment()).map_err(|error| Failure::Sql {
                    line: c.line,
                    error,
                })?,
                Kind::EndPipeline => self.end_pipeline(c.line, commands, session, timed)?,
                Kind::Sql { .. } if let Prepared::Piped(stmt) = stmts[i] => {
                    let queued = Instant::now();
                    self.sql(stmt, &c.kind, Reply::Queue, c.line, session)?;
                    self.queued.push((i, queued));
                }
                Kind::Sql {
                    text,
                    assign,
                    statements,
                    ..
                } => {
                    // A statement prepared for a new spliced value is made before its clock
                    // starts: the command's time is its run's, as with the others.
                    let stmt = match &mut stmts[i] {
                        Prepared::Text => None,
                        p => Some(self.statement(p, &c.kind, c.line, session)?),
                    };
                    let started = Instant::now();
                    match stmt {
                        None => session.batch(text).map_err(|error| Failure::Sql {
                            line: c.line,
                            error,
                        })?,
                        Some(stmt) => {
                            let reply = (assign.as_ref())
                                .map_or(Reply::Count, |a| Reply::Assign(a, *statements));
                            self.sql(stmt, &c.kind, reply, c.line, session)?
                        }
                    }
                    timed(i, started.elapsed());
                }
            }
        }
        ended(session, commands.last().map_or(1, |c| c.line))
    }

    /// `\sleep`'s time: its number, or its variable's (read as pgbench reads it, C's `atoi`
    /// of its text), in its unit.
    fn sleep_for(&self, amount: &Amount, unit_us: u64, line: usize) -> Result<Duration, Failure> {
        let n = match amount {
            Amount::Literal(n) => *n,
            Amount::Var(v) => {
                (value(&self.vars, v, line)?.atoi()).map_err(|message| Failure::Script {
                    line,
                    message: format!("\\sleep :{v}: {message}"),
                })?
            }
        };
        Ok(Duration::from_micros(
            (n.max(0) as u64).saturating_mul(unit_us),
        ))
    }

    /// `\endpipeline`: every reply read, each pipelined command timed from when it was
    /// queued to its reply; a failure named by the line of the command it came at.
    fn end_pipeline(
        &mut self,
        line: usize,
        commands: &[super::script::Command],
        session: &mut dyn SqlSession,
        timed: &mut dyn FnMut(usize, Duration),
    ) -> Result<(), Failure> {
        let queued = &self.queued;
        let done = session.end_pipeline(&mut |k| {
            if let Some((i, at)) = queued.get(k) {
                timed(*i, at.elapsed());
            }
        });
        done.map_err(|(k, error)| {
            let failed = self.queued.get(k).map(|(i, _)| *i);
            self.at = failed.unwrap_or(self.at);
            Failure::Sql {
                line: failed.map_or(line, |i| commands[i].line),
                error,
            }
        })
    }

    /// `\shell` (`var` none) or `\setshell`: the command line run by the shell, the first
    /// line it printed stored as a whole number in `var`.
    fn shell(
        &mut self,
        var: Option<&str>,
        words: &[Word],
        line: usize,
        sleep: &mut dyn FnMut(Duration),
    ) -> Result<(), Failure> {
        let mut command = String::new();
        for (k, w) in words.iter().enumerate() {
            if k > 0 {
                command.push(' ');
            }
            match w {
                Word::Literal(text) => command.push_str(text),
                // A NULL (from `\gset`) is empty text, as pgbench stores it.
                Word::Var(name) => match value(&self.vars, name, line)? {
                    Value::Null => {}
                    v => command.push_str(&v.to_string()),
                },
            }
        }
        let word = if var.is_some() { "setshell" } else { "shell" };
        let fail = |why: String| Failure::Script {
            line,
            message: format!("\\{word} {command}: {why}"),
        };
        let ran = super::shell::run(&command, sleep).map_err(&fail)?;
        match (var, ran.failed) {
            // As pgbench: `\setshell` reads what was printed whatever the status (`grep -c`
            // prints 0 and fails); `\shell` fails with its command.
            (Some(var), failed) => match super::shell::integer(&ran.first_line) {
                Ok(n) => drop(self.vars.insert(var.to_string(), Value::Int(n))),
                Err(why) => return Err(fail(failed.unwrap_or(why))),
            },
            (None, Some(why)) => return Err(fail(why)),
            (None, None) => {}
        }
        Ok(())
    }

    fn truthy(&mut self, e: &super::expr::Expr, at: (&str, usize)) -> Result<bool, Failure> {
        let line = at.1;
        (self.eval(e, at)?.truthy()).map_err(|message| Failure::Script { line, message })
    }

    /// The statement that runs `sql` now: prepared once, or for the values of its spliced
    /// variables (prepared the first time they come).
    fn statement(
        &mut self,
        p: &mut Prepared,
        sql: &Kind,
        line: usize,
        session: &mut dyn SqlSession,
    ) -> Result<usize, Failure> {
        let known = match p {
            Prepared::Once(s) | Prepared::Piped(s) => return Ok(*s),
            Prepared::PerValue(known) => known,
            Prepared::Text => unreachable!("SQL sent as written has no statement"),
            Prepared::Later => {
                let Kind::Sql { parts, .. } = sql else {
                    unreachable!("only SQL is prepared");
                };
                let stmt = prepare(session, parts, line)?;
                *p = Prepared::Once(stmt);
                return Ok(stmt);
            }
        };
        let Kind::Sql {
            parts,
            vars,
            spliced,
            ..
        } = sql
        else {
            unreachable!("only SQL is prepared");
        };
        use std::fmt::Write;
        let key = &mut self.key;
        key.clear();
        for &v in spliced {
            let from = key.len();
            write!(key, "{}", value(&self.vars, &vars[v], line)?).expect("writing to a String");
            let text = &key[from..];
            if text.is_empty() || !text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(Failure::Script {
                    line,
                    message: format!(
                        "\"{}\" is {text:?}, which cannot be part of a name (letters, digits and _ only)",
                        vars[v]
                    ),
                });
            }
            key.push(' ');
        }
        if let Some((_, s)) = known.iter().find(|(k, _)| k == key) {
            return Ok(*s);
        }
        if known.len() >= MAX_SPLICED {
            return Err(Failure::Script {
                line,
                message: format!(
                    "more than {MAX_SPLICED} values spliced into this statement's text: a variable joined to a word (name:var) names a table, not a value; put a space or an operator before the colon to pass it as a parameter"
                ),
            });
        }
        // The text with each spliced value written in: the parts around the parameters left.
        let mut joined = vec![parts[0].clone()];
        let mut values = key.split(' ');
        for (v, part) in parts[1..].iter().enumerate() {
            if spliced.contains(&v) {
                let last = joined.last_mut().expect("a part");
                last.push_str(values.next().unwrap_or_default());
                last.push_str(part);
            } else {
                joined.push(part.clone());
            }
        }
        let s = prepare(session, &joined, line)?;
        known.push((key.clone(), s));
        Ok(s)
    }

    /// Prepares, for each value of `var` in `values`, every command of `ready` whose text only
    /// `var` is spliced into — before the run, as sysbench prepares a statement per table.
    pub fn prepare_spliced(
        &mut self,
        ready: &mut Ready<'_>,
        var: &str,
        values: std::ops::RangeInclusive<i64>,
        session: &mut dyn SqlSession,
    ) -> Result<(), Failure> {
        let before = self.vars.get(var).cloned();
        for (i, c) in ready.script.commands.iter().enumerate() {
            let Kind::Sql { vars, spliced, .. } = &c.kind else {
                continue;
            };
            if !spliced.iter().all(|&s| vars[s] == var) || spliced.is_empty() {
                continue;
            }
            for v in values.clone() {
                self.vars.insert(var.to_string(), Value::Int(v));
                self.statement(&mut ready.stmts[i], &c.kind, c.line, session)?;
            }
        }
        match before {
            Some(v) => self.vars.insert(var.to_string(), v),
            None => self.vars.remove(var),
        };
        Ok(())
    }

    /// One prepared SQL command, run with its (unspliced) variables' values.
    fn sql(
        &mut self,
        stmt: usize,
        sql: &Kind,
        reply: Reply<'_>,
        line: usize,
        session: &mut dyn SqlSession,
    ) -> Result<(), Failure> {
        let Kind::Sql { vars, spliced, .. } = sql else {
            unreachable!("only SQL is run");
        };
        use std::fmt::Write;
        if self.texts.len() < vars.len() {
            self.texts.resize(vars.len(), Slot::default());
        }
        let mut n = 0;
        for (i, v) in vars.iter().enumerate() {
            if spliced.contains(&i) {
                continue;
            }
            let value = value(&self.vars, v, line)?;
            let slot = &mut self.texts[n];
            n += 1;
            slot.text.clear();
            (slot.null, slot.int) = match value {
                Value::Null => (true, None),
                Value::Int(i) => (false, Some(*i)),
                v => {
                    write!(slot.text, "{v}").expect("writing to a String");
                    (false, None)
                }
            };
        }
        let texts = std::mem::take(&mut self.texts);
        // The parameters on the stack when they are few (most statements), else allocated.
        let (mut few, many): ([SqlParam<'_>; 16], Vec<SqlParam<'_>>);
        let params: &[SqlParam<'_>] = if n <= 16 {
            few = [SqlParam::Null; 16];
            for (p, t) in few.iter_mut().zip(&texts[..n]) {
                *p = param(t);
            }
            &few[..n]
        } else {
            many = texts[..n].iter().map(param).collect();
            &many
        };
        let done = self.execute(stmt, params, reply, line, session);
        self.texts = texts;
        done
    }

    fn execute(
        &mut self,
        stmt: usize,
        params: &[SqlParam<'_>],
        reply: Reply<'_>,
        line: usize,
        session: &mut dyn SqlSession,
    ) -> Result<(), Failure> {
        let sql_err = |error| Failure::Sql { line, error };
        let (to, statements) = match reply {
            Reply::Queue => return session.queue(stmt, params).map_err(sql_err),
            Reply::Count => {
                let counted = session.execute(stmt, params, None);
                return counted.map(drop).map_err(sql_err);
            }
            Reply::Assign(to, statements) => (to, statements),
        };
        // Per statement: its last row, and how many it gave. A reply may hold more results
        // than the command has statements (a MySQL `CALL`'s): the last one that came is last.
        let mut got: Vec<(Row, usize)> = vec![Default::default(); statements];
        let mut keep = |result: usize, cols: &[(&str, Option<&str>)]| {
            if result >= got.len() {
                got.resize(result + 1, Default::default());
            }
            let (last, n) = &mut got[result];
            *n += 1;
            last.clear();
            last.extend(
                cols.iter()
                    .map(|(n, v)| (n.to_string(), v.map(str::to_string))),
            );
        };
        session
            .execute(stmt, params, Some(&mut keep))
            .map_err(sql_err)?;
        // `\gset`: the last statement's one row, which it must give (pgbench's rule); `\aset`:
        // each statement's last row, a statement without rows skipped.
        if !to.every {
            let (row, n) = got.pop().unwrap_or_default();
            if n != 1 {
                let gave = if n == 0 {
                    "none".to_string()
                } else {
                    n.to_string()
                };
                return Err(Failure::Script {
                    line,
                    message: format!("\\gset needs exactly one row, the query gave {gave}"),
                });
            }
            got = vec![(row, n)];
        }
        let word = if to.every { "aset" } else { "gset" };
        for (row, _) in got {
            for (name, value) in row {
                let var = format!("{}{name}", to.prefix);
                if !super::script::is_variable(&var) {
                    return Err(Failure::Script {
                        line,
                        message: format!(
                            "\\{word}: the column {name:?} makes no variable's name ({var:?}): name it with AS"
                        ),
                    });
                }
                let v = value.map_or(Value::Null, Value::Text);
                self.vars.insert(var, v);
            }
        }
        Ok(())
    }
}

/// A row kept for `\gset` or `\aset`: each column's name and value.
type Row = Vec<(String, Option<String>)>;

/// The most statements prepared for one command's spliced values (each is a statement the
/// server keeps: MySQL's max_prepared_stmt_count is shared by all sessions).
const MAX_SPLICED: usize = 1024;

/// The script's end, in `session` at `line`: a transaction left open is the script's mistake,
/// as pgbench (15 and later) stops such a client (what the next transaction did would run
/// inside this one); it is rolled back.
fn ended(session: &mut dyn SqlSession, line: usize) -> Result<(), Failure> {
    if !session.in_transaction() {
        return Ok(());
    }
    let _ = session.batch("ROLLBACK");
    Err(Failure::Script {
        line,
        message: "the script ended with its transaction still open (a BEGIN without its END or \
                  COMMIT): the client stops, as pgbench's does"
            .into(),
    })
}

/// A variable's value, or the script's mistake.
fn value<'v>(vars: &'v Vars, var: &str, line: usize) -> Result<&'v Value, Failure> {
    vars.get(var).ok_or_else(|| Failure::Script {
        line,
        message: format!("undefined variable \"{var}\""),
    })
}

/// A parameter being written: NULL, a whole number, or its text.
#[derive(Debug, Clone, Default)]
struct Slot {
    null: bool,
    int: Option<i64>,
    text: String,
}

fn param(s: &Slot) -> SqlParam<'_> {
    match (s.null, s.int) {
        (true, _) => SqlParam::Null,
        (false, Some(i)) => SqlParam::Int(i),
        (false, None) => SqlParam::Text(&s.text),
    }
}

#[cfg(test)]
mod tests;
