//! Jepsen's histories, in EDN: `{:type :invoke, :f :write, :value 3, :process 0, :time 1204}`,
//! one map per operation event (a line each, or all in one vector), so that `dyno check` reads
//! histories made elsewhere.
//!
//! An invocation is paired with its process's next `:ok`, `:fail` or `:info`; one never completed
//! is unknown. `:f` is `:read`, `:write` or `:cas` (`:value [from to]`), each of one register —
//! or of many, as jepsen.independent writes them: `:value [key value]`. Operations of the
//! `:nemesis` process are faults, not a register's. `:time` (ns) orders them; without it, the
//! events' order does. A list-append history's operations are `:txn`s of `[:append KEY VALUE]`
//! and `[:r KEY LIST]` ([`read_txns`]).

use super::append::{Mop, Txn};
use super::{Call, Op, Outcome};
use std::collections::BTreeMap;

/// An EDN value, as far as a history needs one.
#[derive(Debug, Clone, PartialEq)]
pub enum Edn {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Keyword(String),
    Symbol(String),
    /// A vector, list or set.
    Seq(Vec<Edn>),
    Map(Vec<(Edn, Edn)>),
}

/// The deepest nesting read: deeper input is refused, not a stack overflow.
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn line(&self) -> usize {
        1 + self.s[..self.at.min(self.s.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("line {}: {what}", self.line()))
    }

    fn skip(&mut self) {
        while let Some(&b) = self.s.get(self.at) {
            if b == b';' {
                while self.s.get(self.at).is_some_and(|&b| b != b'\n') {
                    self.at += 1;
                }
            } else if b.is_ascii_whitespace() || b == b',' {
                self.at += 1;
            } else {
                break;
            }
        }
    }

    fn token(&mut self) -> &str {
        let from = self.at;
        while let Some(&b) = self.s.get(self.at) {
            if b.is_ascii_whitespace() || b",;()[]{}\"".contains(&b) {
                break;
            }
            self.at += 1;
        }
        std::str::from_utf8(&self.s[from..self.at]).unwrap_or("")
    }

    fn seq(&mut self, close: u8, depth: usize) -> Result<Vec<Edn>, String> {
        let mut items = Vec::new();
        loop {
            self.skip();
            match self.s.get(self.at) {
                None => return self.fail(&format!("`{}` is missing", close as char)),
                Some(&b) if b == close => {
                    self.at += 1;
                    return Ok(items);
                }
                Some(_) => {
                    if let Some(v) = self.value(depth + 1)? {
                        items.push(v)
                    }
                }
            }
        }
    }

    fn string(&mut self) -> Result<Edn, String> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match self.s.get(self.at) {
                None => return self.fail("a string is not closed"),
                Some(b'"') => break,
                Some(b'\\') => {
                    let c = self.s.get(self.at + 1).copied().unwrap_or(b'\\');
                    out.push(match c {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        other => other,
                    });
                    self.at += 2;
                }
                Some(&b) => {
                    out.push(b);
                    self.at += 1;
                }
            }
        }
        self.at += 1;
        Ok(Edn::Str(String::from_utf8_lossy(&out).into_owned()))
    }

    /// The next value; `None` for a discarded one (`#_`).
    fn value(&mut self, depth: usize) -> Result<Option<Edn>, String> {
        if depth > MAX_DEPTH {
            return self.fail(&format!("nested deeper than {MAX_DEPTH}"));
        }
        self.skip();
        let Some(&b) = self.s.get(self.at) else {
            return self.fail("a value is missing");
        };
        let v = match b {
            b'[' | b'(' => {
                self.at += 1;
                Edn::Seq(self.seq(if b == b'[' { b']' } else { b')' }, depth)?)
            }
            b'{' => {
                self.at += 1;
                let items = self.seq(b'}', depth)?;
                if items.len() % 2 == 1 {
                    return self.fail("a map has a key without a value");
                }
                let mut it = items.into_iter();
                Edn::Map(std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect())
            }
            b'"' => self.string()?,
            b'#' => {
                self.at += 1;
                match self.s.get(self.at) {
                    Some(b'{') => {
                        self.at += 1;
                        Edn::Seq(self.seq(b'}', depth)?)
                    }
                    Some(b'_') => {
                        self.at += 1;
                        self.value(depth + 1)?;
                        return Ok(None);
                    }
                    // A tagged value (`#jepsen.history.Op{…}`): the value, its tag dropped.
                    _ => {
                        self.token();
                        return self.value(depth + 1);
                    }
                }
            }
            b')' | b']' | b'}' => return self.fail(&format!("`{}` closes nothing", b as char)),
            _ => self.atom()?,
        };
        Ok(Some(v))
    }

    fn atom(&mut self) -> Result<Edn, String> {
        let t = self.token().to_string();
        if t.is_empty() {
            self.at += 1;
            return self.fail("an unexpected character");
        }
        Ok(match t.as_str() {
            "nil" => Edn::Nil,
            "true" => Edn::Bool(true),
            "false" => Edn::Bool(false),
            _ if t.starts_with(':') => Edn::Keyword(t[1..].to_string()),
            _ if t.starts_with(|c: char| c.is_ascii_digit())
                || (t.len() > 1 && t.starts_with(['-', '+'])) =>
            {
                let n = t.trim_end_matches(['N', 'M']);
                match n.parse::<i64>() {
                    Ok(i) => Edn::Int(i),
                    Err(_) => match n.parse::<f64>() {
                        Ok(f) => Edn::Float(f),
                        Err(_) => return self.fail(&format!("{t:?} is not a number")),
                    },
                }
            }
            _ => Edn::Symbol(t),
        })
    }
}

/// Every top-level value of `text`.
pub fn parse(text: &str) -> Result<Vec<Edn>, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    let mut all = Vec::new();
    loop {
        p.skip();
        if p.at >= p.s.len() {
            return Ok(all);
        }
        if let Some(v) = p.value(0)? {
            all.push(v);
        }
    }
}

fn get<'a>(m: &'a [(Edn, Edn)], key: &str) -> Option<&'a Edn> {
    (m.iter())
        .find(|(k, _)| matches!(k, Edn::Keyword(n) if n == key))
        .map(|(_, v)| v)
}

/// A register's value: a whole number from 0, or nil.
fn number(v: &Edn) -> Result<Option<u64>, String> {
    match v {
        Edn::Nil => Ok(None),
        Edn::Int(i) if *i >= 0 => Ok(Some(*i as u64)),
        other => Err(format!(
            "{other:?} is not a register's value dyno checks (a whole number from 0, or nil)"
        )),
    }
}

/// An event's `(key, value)`: jepsen.independent's `[key value]`, or one register (key 0).
fn keyed(f: &str, v: &Edn) -> Result<(u64, Edn), String> {
    if let Edn::Seq(pair) = v
        && pair.len() == 2
    {
        let nested = matches!(pair[1], Edn::Seq(_));
        if f != "cas" || nested {
            let key = number(&pair[0])?.ok_or("a nil key")?;
            return Ok((key, pair[1].clone()));
        }
    }
    Ok((0, v.clone()))
}

struct Event {
    kind: String,
    f: String,
    value: Edn,
    process: Option<i64>,
    time: u64,
}

fn event(v: &Edn, index: usize) -> Result<Event, String> {
    let Edn::Map(m) = v else {
        return Err("an operation is a map such as {:type :invoke, :f :read, :process 0}".into());
    };
    let word = |key: &str| match get(m, key) {
        Some(Edn::Keyword(k)) | Some(Edn::Symbol(k)) | Some(Edn::Str(k)) => Ok(k.clone()),
        _ => Err(format!("its :{key} is missing or not a keyword")),
    };
    let time = match get(m, "time") {
        Some(Edn::Int(t)) if *t >= 0 => *t as u64,
        Some(Edn::Float(t)) if *t >= 0.0 => *t as u64,
        _ => index as u64,
    };
    Ok(Event {
        kind: word("type")?,
        f: word("f")?,
        value: get(m, "value").cloned().unwrap_or(Edn::Nil),
        process: match get(m, "process") {
            Some(Edn::Int(p)) => Some(*p),
            _ => None,
        },
        time,
    })
}

fn call(f: &str, value: &Edn, outcome: Outcome) -> Result<Call, String> {
    Ok(match f {
        "read" => Call::Read {
            saw: number(value)?,
        },
        "write" => Call::Write {
            value: number(value)?.ok_or("a write of nil")?,
        },
        "cas" => match value {
            Edn::Seq(p) if p.len() == 2 => Call::Cas {
                from: number(&p[0])?,
                to: number(&p[1])?.ok_or("a cas to nil")?,
                swapped: outcome == Outcome::Ok,
            },
            _ => return Err("a cas's :value is [from to]".into()),
        },
        other => {
            return Err(format!(
                ":f :{other}: a register's operations are :read, :write and :cas"
            ));
        }
    })
}

/// Each operation of a history: its invocation, its completion (`None`: never answered) and
/// its place among the events; the `:nemesis` process's left out.
fn paired(text: &str) -> Result<Vec<(Event, Option<Event>, usize)>, String> {
    let mut values = parse(text)?;
    if let [Edn::Seq(all)] = values.as_mut_slice() {
        values = std::mem::take(all);
    }
    let mut open: BTreeMap<i64, (Event, usize)> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let at = |e: String| format!("operation {}: {e}", i + 1);
        let e = event(v, i).map_err(at)?;
        let Some(p) = e.process else { continue };
        match e.kind.as_str() {
            "invoke" => {
                open.insert(p, (e, i));
            }
            "ok" | "fail" | "info" => {
                let Some((inv, _)) = open.remove(&p) else {
                    return Err(at(format!("process {p} completes what it never invoked")));
                };
                out.push((inv, Some(e), i));
            }
            other => {
                return Err(at(format!(
                    ":type :{other}: write :invoke, :ok, :fail or :info"
                )));
            }
        }
    }
    out.extend(open.into_values().map(|(inv, i)| (inv, None, i)));
    Ok(out)
}

fn outcome(done: Option<&Event>) -> Outcome {
    match done.map(|e| e.kind.as_str()) {
        Some("ok") => Outcome::Ok,
        Some("fail") => Outcome::Failed,
        _ => Outcome::Unknown,
    }
}

/// A register history from Jepsen's EDN.
pub fn read(text: &str) -> Result<Vec<Op>, String> {
    let mut ops = Vec::new();
    for (inv, done, i) in paired(text)? {
        let at = |e: String| format!("operation {}: {e}", i + 1);
        let outcome = outcome(done.as_ref());
        // A read's value is what it saw; a write's or cas's, what it was asked.
        let value = match (&done, inv.f.as_str()) {
            (Some(e), "read") => &e.value,
            _ => &inv.value,
        };
        let (key, value) = keyed(&inv.f, value).map_err(at)?;
        let call = match (&done, inv.f.as_str()) {
            // Invoked and never answered: unknown, and what it read not known.
            (None, "read") => Call::Read { saw: None },
            _ => call(&inv.f, &value, outcome).map_err(at)?,
        };
        ops.push(Op {
            client: inv.process.unwrap_or(0) as u32,
            key,
            call,
            outcome,
            invoke_ns: inv.time,
            complete_ns: done.map_or(inv.time, |e| e.time.max(inv.time)),
        });
    }
    Ok(ops)
}

/// A list-append history from Jepsen's EDN: `:f :txn`, `:value [[:append 3 7] [:r 3 [1 7]]]`;
/// what an unanswered or unknown transaction read is not known.
pub fn read_txns(text: &str) -> Result<Vec<Txn>, String> {
    let mut txns = Vec::new();
    for (inv, done, i) in paired(text)? {
        let at = |e: String| format!("operation {}: {e}", i + 1);
        if inv.f != "txn" {
            return Err(at(format!(
                ":f :{}: a list-append history's operations are :txn",
                inv.f
            )));
        }
        let outcome = outcome(done.as_ref());
        let value = match (&done, outcome) {
            (Some(e), Outcome::Ok) => &e.value,
            _ => &inv.value,
        };
        txns.push(Txn {
            client: inv.process.unwrap_or(0) as u32,
            mops: mops(value, outcome == Outcome::Ok).map_err(at)?,
            outcome,
            invoke_ns: inv.time,
            complete_ns: done.map_or(inv.time, |e| e.time.max(inv.time)),
        });
    }
    Ok(txns)
}

/// A transaction's micro-operations; `known`: its reads' lists are what they returned.
fn mops(value: &Edn, known: bool) -> Result<Vec<Mop>, String> {
    let Edn::Seq(items) = value else {
        return Err(
            "a :txn's :value is a vector of micro-operations such as [:append 3 7] and [:r 3 [1 7]]"
                .into(),
        );
    };
    let whole = |v: &Edn, what: &str| number(v)?.ok_or_else(|| format!("{what} of nil"));
    (items.iter())
        .map(|m| match m {
            Edn::Seq(p) if p.len() == 3 => match &p[0] {
                Edn::Keyword(f) if f == "append" => Ok(Mop::Append {
                    key: whole(&p[1], "a key")?,
                    value: whole(&p[2], "an append")?,
                }),
                Edn::Keyword(f) if f == "r" => Ok(Mop::Read {
                    key: whole(&p[1], "a key")?,
                    list: match (&p[2], known) {
                        (_, false) => None,
                        (Edn::Nil, true) => Some(Vec::new()),
                        (Edn::Seq(l), true) => Some(
                            l.iter()
                                .map(|v| whole(v, "a list's value"))
                                .collect::<Result<_, _>>()?,
                        ),
                        (other, true) => {
                            return Err(format!("a read's list {other:?} is not a vector"));
                        }
                    },
                }),
                other => Err(format!(
                    "{other:?}: a micro-operation is [:append KEY VALUE] or [:r KEY LIST]"
                )),
            },
            other => Err(format!(
                "{other:?}: a micro-operation is [:append KEY VALUE] or [:r KEY LIST]"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests;
