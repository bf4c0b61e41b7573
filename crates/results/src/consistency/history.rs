//! A history on disk: one operation per line of JSON, as dyno writes it into a results directory
//! (`history.TARGET.jsonl`) and `dyno check` reads it back.
//!
//! ```text
//! {"client":3,"key":12,"f":"write","value":7,"type":"ok","invoke_ns":1204000,"complete_ns":1380000}
//! {"client":4,"key":12,"f":"read","value":7,"type":"ok","invoke_ns":1390000,"complete_ns":1402000}
//! {"client":5,"key":12,"f":"cas","value":[7,9],"swapped":true,"type":"info","invoke_ns":1500000}
//! ```
//!
//! A list-append history's lines are transactions: `{"client":3,"txn":[["append",2,7],["r",1,
//! [3,4]]],"type":"ok","invoke_ns":…,"complete_ns":…}` ([`write_txns`], [`read_txns`]).
//!
//! `type` is Jepsen's word for the outcome: `ok`, `fail` (it definitely did not happen) or
//! `info` (unknown). A read's `value` is what it saw (`null`: the key was absent); a write's what
//! it wrote; a compare-and-set's `[from, to]`.

use super::append::{Mop, Txn};
use super::{Call, Op, Outcome};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

/// The most operations dyno keeps of one target's history: past it, the rest is not recorded
/// and the verdict is unknown (a check of part of a history proves nothing of the rest).
pub const MAX_OPS: usize = 2_000_000;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    client: u32,
    key: u64,
    f: String,
    value: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    swapped: Option<bool>,
    #[serde(rename = "type")]
    kind: String,
    invoke_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    complete_ns: Option<u64>,
}

fn line_of(op: &Op) -> Line {
    let (f, value, swapped) = match op.call {
        Call::Read { saw } => ("read", serde_json::json!(saw), None),
        Call::Write { value } => ("write", serde_json::json!(value), None),
        Call::Cas { from, to, swapped } => ("cas", serde_json::json!([from, to]), Some(swapped)),
    };
    let kind = kind_of(op.outcome);
    Line {
        client: op.client,
        key: op.key,
        f: f.into(),
        value,
        swapped,
        kind: kind.into(),
        invoke_ns: op.invoke_ns,
        complete_ns: (op.outcome != Outcome::Unknown).then_some(op.complete_ns),
    }
}

fn kind_of(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Ok => "ok",
        Outcome::Failed => "fail",
        Outcome::Unknown => "info",
    }
}

fn outcome_of(kind: &str) -> Result<Outcome, String> {
    match kind {
        "ok" => Ok(Outcome::Ok),
        "fail" => Ok(Outcome::Failed),
        "info" => Ok(Outcome::Unknown),
        other => Err(format!("\"type\" is {other:?}: write ok, fail or info")),
    }
}

/// When an operation completed: an unknown one never did (its invocation stands in).
fn completed(outcome: Outcome, invoke_ns: u64, complete_ns: Option<u64>) -> Result<u64, String> {
    match (outcome, complete_ns) {
        (Outcome::Unknown, _) => Ok(invoke_ns),
        (_, Some(c)) if c >= invoke_ns => Ok(c),
        (_, Some(c)) => Err(format!(
            "it completed at {c} ns, before its invocation at {invoke_ns} ns"
        )),
        (_, None) => Err("\"complete_ns\" is missing: an ok or fail operation has one".into()),
    }
}

fn op_of(l: Line) -> Result<Op, String> {
    let outcome = outcome_of(&l.kind)?;
    let number = |v: &serde_json::Value| -> Result<Option<u64>, String> {
        match v {
            serde_json::Value::Null => Ok(None),
            v => v.as_u64().map(Some).ok_or_else(|| {
                format!("{v} is not a value dyno checks: write a whole number from 0, or null")
            }),
        }
    };
    let call = match l.f.as_str() {
        "read" => Call::Read {
            saw: number(&l.value)?,
        },
        "write" => Call::Write {
            value: number(&l.value)?.ok_or("a write of null: write the value written")?,
        },
        "cas" => {
            let pair = (l.value.as_array())
                .filter(|a| a.len() == 2)
                .ok_or("a cas's value is [from, to]")?;
            Call::Cas {
                from: number(&pair[0])?,
                to: number(&pair[1])?.ok_or("a cas to null: write the value it sets")?,
                swapped: l.swapped.unwrap_or(outcome == Outcome::Ok),
            }
        }
        other => {
            return Err(format!(
                "\"f\" is {other:?}: a register's operations are read, write and cas"
            ));
        }
    };
    let complete_ns = completed(outcome, l.invoke_ns, l.complete_ns)?;
    Ok(Op {
        client: l.client,
        key: l.key,
        call,
        outcome,
        invoke_ns: l.invoke_ns,
        complete_ns,
    })
}

/// Appends `ops` to `out`, a line each.
pub fn write(out: &mut impl Write, ops: &[Op]) -> std::io::Result<()> {
    for op in ops {
        serde_json::to_writer(&mut *out, &line_of(op))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Reads a history written by [`write`]; an error names the line and what is wrong with it.
pub fn read(input: impl BufRead) -> Result<Vec<Op>, String> {
    let mut ops = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let line = line.map_err(|e| format!("line {}: {e}", n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        if ops.len() >= MAX_OPS {
            return Err(format!(
                "more than {MAX_OPS} operations: dyno checks at most that many at once"
            ));
        }
        let parsed: Line =
            serde_json::from_str(&line).map_err(|e| format!("line {}: {e}", n + 1))?;
        ops.push(op_of(parsed).map_err(|e| format!("line {}: {e}", n + 1))?);
    }
    Ok(ops)
}

/// A transaction's line: `{"client":3,"txn":[["append",2,7],["r",1,[3,4]]],"type":"ok",
/// "invoke_ns":…,"complete_ns":…}` — Elle's micro-operations, a read's list `null` when it is
/// not known.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TxnLine {
    client: u32,
    txn: Vec<(String, u64, serde_json::Value)>,
    #[serde(rename = "type")]
    kind: String,
    invoke_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    complete_ns: Option<u64>,
}

fn txn_line(t: &Txn) -> TxnLine {
    let txn = (t.mops.iter())
        .map(|m| match m {
            Mop::Append { key, value } => ("append".to_string(), *key, serde_json::json!(value)),
            Mop::Read { key, list } => ("r".to_string(), *key, serde_json::json!(list)),
        })
        .collect();
    TxnLine {
        client: t.client,
        txn,
        kind: kind_of(t.outcome).into(),
        invoke_ns: t.invoke_ns,
        complete_ns: (t.outcome != Outcome::Unknown).then_some(t.complete_ns),
    }
}

fn txn_of(l: TxnLine) -> Result<Txn, String> {
    let outcome = outcome_of(&l.kind)?;
    let mops = (l.txn.into_iter())
        .map(|(f, key, v)| match f.as_str() {
            "append" => (v.as_u64())
                .map(|value| Mop::Append { key, value })
                .ok_or_else(|| format!("an append of {v}: write a whole number from 0")),
            "r" => Ok(Mop::Read {
                key,
                list: match v {
                    serde_json::Value::Null => None,
                    v => Some(serde_json::from_value(v).map_err(|e| {
                        format!("a read's list: {e}: write whole numbers from 0, or null")
                    })?),
                },
            }),
            other => Err(format!(
                "{other:?}: a micro-operation is [\"append\", KEY, VALUE] or [\"r\", KEY, LIST]"
            )),
        })
        .collect::<Result<_, _>>()?;
    Ok(Txn {
        client: l.client,
        mops,
        outcome,
        invoke_ns: l.invoke_ns,
        complete_ns: completed(outcome, l.invoke_ns, l.complete_ns)?,
    })
}

/// Appends `txns` to `out`, a line each.
pub fn write_txns(out: &mut impl Write, txns: &[Txn]) -> std::io::Result<()> {
    for t in txns {
        serde_json::to_writer(&mut *out, &txn_line(t))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Reads a history written by [`write_txns`]; an error names the line and what is wrong.
pub fn read_txns(input: impl BufRead) -> Result<Vec<Txn>, String> {
    let mut txns = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}", n + 1);
        let line = line.map_err(|e| at(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        if txns.len() >= MAX_OPS {
            return Err(format!(
                "more than {MAX_OPS} transactions: dyno checks at most that many at once"
            ));
        }
        let parsed: TxnLine = serde_json::from_str(&line).map_err(|e| at(e.to_string()))?;
        txns.push(txn_of(parsed).map_err(at)?);
    }
    Ok(txns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_op() -> impl Strategy<Value = Op> {
        let value = prop_oneof![Just(None), (0u64..5).prop_map(Some)];
        let call = prop_oneof![
            value.clone().prop_map(|saw| Call::Read { saw }),
            (0u64..5).prop_map(|value| Call::Write { value }),
            (value, 0u64..5, any::<bool>()).prop_map(|(from, to, swapped)| Call::Cas {
                from,
                to,
                swapped
            }),
        ];
        let outcome = prop_oneof![
            Just(Outcome::Ok),
            Just(Outcome::Failed),
            Just(Outcome::Unknown)
        ];
        (0u32..4, 0u64..3, call, outcome, 0u64..1000, 0u64..1000).prop_map(
            |(client, key, call, outcome, a, d)| Op {
                client,
                key,
                call,
                outcome,
                invoke_ns: a,
                complete_ns: if outcome == Outcome::Unknown {
                    a
                } else {
                    a + d
                },
            },
        )
    }

    proptest! {
        #[test]
        fn a_history_reads_back_as_written(ops in proptest::collection::vec(any_op(), 0..40)) {
            let mut out = Vec::new();
            write(&mut out, &ops).unwrap();
            let back = read(&out[..]).unwrap();
            // A cas that did not answer swapped or not: unknown, read back as written.
            prop_assert_eq!(back, ops);
        }

        #[test]
        fn transactions_read_back_as_written(raw in proptest::collection::vec((0u32..4, proptest::collection::vec((any::<bool>(), 0u64..4, 0u64..9, proptest::option::of(proptest::collection::vec(0u64..9, 0..4))), 0..4), 0u8..3, 0u64..1000, 0u64..1000), 0..20)) {
            let txns: Vec<Txn> = (raw.into_iter())
                .map(|(client, mops, o, a, d)| {
                    let outcome = [Outcome::Ok, Outcome::Failed, Outcome::Unknown][o as usize];
                    Txn {
                        client,
                        mops: (mops.into_iter())
                            .map(|(append, key, value, list)| match append {
                                true => Mop::Append { key, value },
                                false => Mop::Read { key, list },
                            })
                            .collect(),
                        outcome,
                        invoke_ns: a,
                        complete_ns: if outcome == Outcome::Unknown { a } else { a + d },
                    }
                })
                .collect();
            let mut out = Vec::new();
            write_txns(&mut out, &txns).unwrap();
            prop_assert_eq!(read_txns(&out[..]).unwrap(), txns);
        }

        #[test]
        fn any_line_is_read_or_refused_with_its_number(text in "[ -~\n]{0,200}") {
            if let Err(e) = read(text.as_bytes()) {
                prop_assert!(e.starts_with("line "), "{}", e);
            }
            if let Err(e) = read_txns(text.as_bytes()) {
                prop_assert!(e.starts_with("line "), "{}", e);
            }
        }
    }

    #[test]
    fn a_wrong_line_is_named_with_the_fix() {
        let e = read(&b"\n{\"client\":1,\"key\":2,\"f\":\"incr\",\"value\":1,\"type\":\"ok\",\"invoke_ns\":1,\"complete_ns\":2}\n"[..]).unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("read, write and cas"),
            "{e}"
        );
        let e = read(&b"{\"client\":1,\"key\":2,\"f\":\"read\",\"value\":-1,\"type\":\"ok\",\"invoke_ns\":1,\"complete_ns\":2}"[..]).unwrap_err();
        assert!(e.contains("whole number"), "{e}");
        let e = read(&b"{\"client\":1,\"key\":2,\"f\":\"read\",\"value\":1,\"type\":\"ok\",\"invoke_ns\":5,\"complete_ns\":2}"[..]).unwrap_err();
        assert!(e.contains("before its invocation"), "{e}");
    }
}
