//! Linearizability of registers: could every key's operations have taken effect one at a time,
//! each at some instant between its invocation and its answer, a read seeing the last write?
//!
//! Keys are checked apart (a register per key is P-compositional, as Porcupine uses), each by
//! Wing and Gong's search with Lowe's cache: the operations' invocations and answers in time
//! order, the search linearizing one invoked operation after another and backtracking when an
//! answer comes before its operation could be placed; a cache of (operations placed, the
//! register's value) prunes every state already explored. A failed operation (it definitely
//! did not happen) is left out; an unknown one may take effect at any instant after its
//! invocation, or never (placed after everything else); an unknown read returned nothing known
//! and constrains nothing. Each key has a time budget: a key that runs out of it is reported
//! unknown, never a hang. On a violation, the operations are shrunk to a small set that still
//! cannot be ordered: the proof.

use super::{Call, Op, Outcome};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

/// What checking a history found.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Keys checked, and operations taken into account.
    pub keys: usize,
    pub ops: usize,
    /// Per key that cannot be linearized: a small set of its operations that cannot be ordered,
    /// in invocation order.
    pub violations: Vec<(u64, Vec<Op>)>,
    /// Keys whose check ran out of its time budget, and why.
    pub unknown: Vec<(u64, String)>,
}

impl Report {
    /// Linearizable: no violation, and every key decided.
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty() && self.unknown.is_empty()
    }
}

/// Checks `history`, each key within `budget`.
pub fn check(history: &[Op], budget: Duration) -> Report {
    let mut by_key: BTreeMap<u64, Vec<Op>> = BTreeMap::new();
    for op in history.iter().filter(|op| counts(op)) {
        by_key.entry(op.key).or_default().push(*op);
    }
    let mut report = Report {
        keys: by_key.len(),
        ops: by_key.values().map(Vec::len).sum(),
        violations: Vec::new(),
        unknown: Vec::new(),
    };
    for (key, ops) in by_key {
        let deadline = super::deadline(budget);
        match linearizable(&ops, deadline) {
            Some(true) => {}
            Some(false) => report.violations.push((
                key,
                smallest(ops, deadline.checked_add(budget).unwrap_or(deadline)),
            )),
            None => report.unknown.push((
                key,
                format!(
                    "{} operations not decided within {} (raise the budget)",
                    ops.len(),
                    crate::units::latency(budget.as_nanos() as u64)
                ),
            )),
        }
    }
    report
}

/// Whether an operation constrains the history: not a failed one, nor a read that returned
/// nothing known.
fn counts(op: &Op) -> bool {
    match op.outcome {
        Outcome::Failed => false,
        Outcome::Unknown => !matches!(op.call, Call::Read { .. }),
        Outcome::Ok => true,
    }
}

/// The register's value after `op`, or `None` when `op` cannot take effect on `state`.
fn step(state: Option<u64>, op: &Op) -> Option<Option<u64>> {
    match (op.call, op.outcome) {
        (Call::Read { saw }, _) => (saw == state).then_some(state),
        (Call::Write { value }, _) => Some(Some(value)),
        (Call::Cas { from, to, swapped }, Outcome::Ok) => match swapped {
            true => (state == from).then_some(Some(to)),
            false => (state != from).then_some(state),
        },
        // Unknown: it swaps if it can; placed last, it is as if it never happened.
        (Call::Cas { from, to, .. }, _) => Some(if state == from { Some(to) } else { state }),
    }
}

const NIL: usize = usize::MAX;
const HEAD: usize = 0;

/// An invocation or an answer, in a list the search lifts operations out of.
#[derive(Clone, Copy)]
struct Node {
    op: usize,
    call: bool,
    /// An invocation's answer.
    answer: usize,
    prev: usize,
    next: usize,
}

/// The operations' events in time order, linked: invocations before answers at the same
/// instant (overlapping, the generous reading); an unknown outcome's answer at the end.
fn events(ops: &[Op]) -> Vec<Node> {
    let mut ev: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * ops.len());
    for (i, op) in ops.iter().enumerate() {
        let answer = match op.outcome {
            Outcome::Unknown => u64::MAX,
            _ => op.complete_ns.max(op.invoke_ns),
        };
        ev.push((op.invoke_ns, true, i));
        ev.push((answer, false, i));
    }
    ev.sort_by_key(|&(t, call, i)| (t, !call, i));
    let mut nodes = vec![Node {
        op: NIL,
        call: false,
        answer: NIL,
        prev: NIL,
        next: NIL,
    }];
    let mut answer_of = vec![NIL; ops.len()];
    for (k, &(_, call, i)) in ev.iter().enumerate() {
        let at = k + 1;
        nodes.push(Node {
            op: i,
            call,
            answer: NIL,
            prev: at - 1,
            next: if k + 1 < ev.len() { at + 1 } else { NIL },
        });
        if !call {
            answer_of[i] = at;
        }
    }
    nodes[HEAD].next = if ev.is_empty() { NIL } else { 1 };
    for n in nodes.iter_mut().skip(1).filter(|n| n.call) {
        n.answer = answer_of[n.op];
    }
    nodes
}

fn unlink(nodes: &mut [Node], x: usize) {
    let (p, n) = (nodes[x].prev, nodes[x].next);
    nodes[p].next = n;
    if n != NIL {
        nodes[n].prev = p;
    }
}

fn relink(nodes: &mut [Node], x: usize) {
    let (p, n) = (nodes[x].prev, nodes[x].next);
    nodes[p].next = x;
    if n != NIL {
        nodes[n].prev = x;
    }
}

/// Whether `ops` (one key's) can be linearized; `None` when `deadline` passed first.
fn linearizable(ops: &[Op], deadline: Instant) -> Option<bool> {
    let mut nodes = events(ops);
    let words = ops.len().div_ceil(64);
    let mut placed = vec![0u64; words];
    let mut state: Option<u64> = None;
    let mut stack: Vec<(usize, Option<u64>)> = Vec::new();
    let mut seen: HashSet<(Vec<u64>, Option<u64>)> = HashSet::new();
    let mut entry = nodes[HEAD].next;
    let mut turns = 0u64;
    while nodes[HEAD].next != NIL {
        turns += 1;
        if turns.is_multiple_of(4096) && Instant::now() > deadline {
            return None;
        }
        let n = if entry == NIL {
            None
        } else {
            Some(nodes[entry])
        };
        match n {
            Some(n) if n.call => {
                if let Some(next) = step(state, &ops[n.op]) {
                    let mut with = placed.clone();
                    with[n.op / 64] |= 1 << (n.op % 64);
                    if seen.insert((with.clone(), next)) {
                        stack.push((entry, state));
                        (placed, state) = (with, next);
                        unlink(&mut nodes, entry);
                        unlink(&mut nodes, n.answer);
                        entry = nodes[HEAD].next;
                        continue;
                    }
                }
                entry = n.next;
            }
            // An answer whose operation is not placed yet: nothing after it can come first.
            _ => {
                let Some((call, before)) = stack.pop() else {
                    return Some(false);
                };
                let op = nodes[call].op;
                placed[op / 64] &= !(1 << (op % 64));
                state = before;
                let answer = nodes[call].answer;
                relink(&mut nodes, answer);
                relink(&mut nodes, call);
                entry = nodes[call].next;
            }
        }
    }
    Some(true)
}

/// Whether every value a read in `ops` saw is written in `ops`: a proof keeps the writes its
/// reads name (a read of a value nobody wrote would be a violation of its own, and no proof).
fn explains(ops: &[Op]) -> bool {
    let written = |v: u64| {
        ops.iter().any(|o| match o.call {
            Call::Write { value } => value == v,
            Call::Cas { to, .. } => to == v,
            Call::Read { .. } => false,
        })
    };
    ops.iter().all(|o| match o.call {
        Call::Read { saw: Some(v) } => written(v),
        _ => true,
    })
}

/// A small subset of `ops` (not linearizable) that still is not: chunks, then single
/// operations, left out while the rest stays a violation and explains its reads; single ones
/// again until none can go (a write a read named may go once the read has), or `deadline`.
fn smallest(mut ops: Vec<Op>, deadline: Instant) -> Vec<Op> {
    let mut chunk = (ops.len() / 2).max(1);
    loop {
        let before = ops.len();
        let mut at = 0;
        while at < ops.len() && Instant::now() < deadline {
            let mut trial = ops.clone();
            trial.drain(at..(at + chunk).min(trial.len()));
            if explains(&trial) && linearizable(&trial, deadline) == Some(false) {
                ops = trial;
            } else {
                at += chunk;
            }
        }
        if chunk > 1 {
            chunk /= 2;
        } else if ops.len() == before || Instant::now() >= deadline {
            break;
        }
    }
    ops.sort_by_key(|op| (op.invoke_ns, op.client));
    ops
}

#[cfg(test)]
mod tests;
