//! Transactions of appends to lists and reads of them (Elle's list-append workload), checked for
//! isolation anomalies by Elle's method (Kingsbury and Alvaro, VLDB 2020): every value appended
//! to a key is unique, so a read of the key's list names the appends it saw and their order.
//!
//! Each key's version order is its longest read, every other read a prefix of it (else
//! `incompatible-order`). From the order and the reads come the dependencies between
//! transactions: **ww** (T₁ appended the value just before T₂'s), **wr** (T₂ read a list ending
//! in T₁'s append) and **rw** (T₁ read a list that T₂'s append, next in the order, would have
//! grown: T₂ came after). A cycle of them is an anomaly, named by its edges as Adya names it:
//! `G0` (ww only), `G1c` (ww and wr), `G-single` (exactly one rw), `G2-item` (two or more). Some
//! anomalies need no cycle: a read of a failed transaction's append (`G1a`), of an append its
//! transaction followed with another to the same key (`G1b`), a list holding a value twice
//! (`duplicate-elements`), a transaction not seeing its own appends (`internal`).
//!
//! A transaction of unknown outcome is in the graph once one of its appends was read (it
//! committed); what its reads returned is not known. The search for cycles is polynomial (strongly
//! connected components, then breadth-first paths), with a time budget for the one search that can
//! grow large: a component's budget spent says so, never hangs.

use super::Outcome;
use std::collections::HashMap;
use std::time::Duration;

mod cycles;

/// One micro-operation of a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Mop {
    /// Appends `value` (unique per key) to the list at `key`.
    Append { key: u64, value: u64 },
    /// Reads the list at `key`: what it held (`None`: not known, the transaction's answer lost).
    Read { key: u64, list: Option<Vec<u64>> },
}

/// A list as a proof shows it: whole when short, else its length and its last values (what
/// the dependencies are read from).
fn shown(list: &[u64]) -> String {
    const SHOWN: usize = 4;
    let tail: Vec<String> = (list.iter().rev().take(SHOWN).rev())
        .map(u64::to_string)
        .collect();
    match list.len() > SHOWN {
        true => format!("[… {} more, {}]", list.len() - SHOWN, tail.join(" ")),
        false => format!("[{}]", tail.join(" ")),
    }
}

/// One transaction of a history.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Txn {
    pub client: u32,
    pub mops: Vec<Mop>,
    /// Committed, aborted (it definitely did not happen), or unknown.
    pub outcome: Outcome,
    /// When it began and when its answer came, ns on the run's clock.
    pub invoke_ns: u64,
    pub complete_ns: u64,
}

impl Txn {
    /// On the run's clock, for a proof's timeline: its steps, `a 2:7 r 1:[3 4]`.
    pub fn span(&self) -> crate::Span {
        let steps: Vec<String> = (self.mops.iter())
            .map(|m| match m {
                Mop::Append { key, value } => format!("a {key}:{value}"),
                Mop::Read { key, list: None } => format!("r {key}:?"),
                Mop::Read { key, list: Some(l) } => format!("r {key}:{}", shown(l)),
            })
            .collect();
        crate::Span {
            client: self.client,
            start_ns: self.invoke_ns,
            end_ns: (self.outcome != Outcome::Unknown).then_some(self.complete_ns),
            label: steps.join(" "),
        }
    }

    /// As a line of a proof: `client 3 [append 7 to key 2, read key 1: [3 4]] at 1.204–1.380
    /// ms: ok`.
    pub fn describe(&self) -> String {
        let mops: Vec<String> = (self.mops.iter())
            .map(|m| match m {
                Mop::Append { key, value } => format!("append {value} to key {key}"),
                Mop::Read { key, list: None } => format!("read key {key}"),
                Mop::Read { key, list: Some(l) } => format!("read key {key}: {}", shown(l)),
            })
            .collect();
        let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
        let outcome = match self.outcome {
            Outcome::Ok => "committed",
            Outcome::Failed => "aborted",
            Outcome::Unknown => "unknown",
        };
        format!(
            "client {} [{}] at {}–{} ms: {outcome}",
            self.client,
            mops.join(", "),
            ms(self.invoke_ns),
            ms(self.complete_ns)
        )
    }
}

/// The anomalies the check names.
pub const KINDS: [&str; 9] = [
    "G0",
    "G1a",
    "G1b",
    "G1c",
    "G-single",
    "G2-item",
    "incompatible-order",
    "duplicate-elements",
    "internal",
];

/// Whether `model` forbids anomalies of `kind`: serializability all of them, snapshot isolation
/// all but G2-item (write skew), read committed all but the cycles through an anti-dependency.
pub fn forbids(model: &str, kind: &str) -> bool {
    match model {
        "snapshot-isolation" => kind != "G2-item",
        "read-committed" => !matches!(kind, "G-single" | "G2-item"),
        _ => true,
    }
}

/// One anomaly and its proof: the transactions (places in the history; a cycle's in its
/// order) and a sentence saying what they show.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub kind: &'static str,
    pub key: Option<u64>,
    pub why: String,
    pub txns: Vec<usize>,
}

/// What checking a history found.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Transactions taken into account (committed, or of unknown outcome), and keys.
    pub txns: usize,
    pub keys: usize,
    /// Every anomaly found: one per key for those of a key, one per kind per cycle's component.
    pub findings: Vec<Finding>,
    /// What the check could not decide, and why, each with the kind of anomaly it concerns
    /// (a model that allows that kind does not need it decided).
    pub unknown: Vec<(&'static str, String)>,
}

/// Who appended each value: the transaction, and whether it was the transaction's last append
/// to that key.
struct Writers {
    of: HashMap<(u64, u64), (usize, bool)>,
    failed: HashMap<(u64, u64), usize>,
}

impl Writers {
    fn new(history: &[Txn]) -> Writers {
        let mut w = Writers {
            of: HashMap::new(),
            failed: HashMap::new(),
        };
        for (t, txn) in history.iter().enumerate() {
            let appends = (txn.mops.iter().enumerate()).filter_map(|(i, m)| match m {
                Mop::Append { key, value } => Some((i, *key, *value)),
                Mop::Read { .. } => None,
            });
            for (i, key, value) in appends {
                let last = !(txn.mops[i + 1..].iter())
                    .any(|m| matches!(m, Mop::Append { key: k, .. } if *k == key));
                match txn.outcome {
                    Outcome::Failed => w.failed.insert((key, value), t),
                    _ => w.of.insert((key, value), (t, last)).map(|(t, _)| t),
                };
            }
        }
        w
    }

    fn of(&self, key: u64, value: u64) -> Option<usize> {
        self.of.get(&(key, value)).map(|w| w.0)
    }
}

/// The committed reads: (transaction, place in it, key, list).
fn reads(history: &[Txn]) -> impl Iterator<Item = (usize, usize, u64, &[u64])> {
    (history.iter().enumerate())
        .filter(|(_, t)| t.outcome == Outcome::Ok)
        .flat_map(|(t, txn)| {
            (txn.mops.iter().enumerate()).filter_map(move |(i, m)| match m {
                Mop::Read { key, list: Some(l) } => Some((t, i, *key, l.as_slice())),
                _ => None,
            })
        })
}

/// Each key's version order (its longest read), and the reads that disagree with it or hold a
/// value twice.
fn orders(history: &[Txn], findings: &mut Vec<Finding>) -> HashMap<u64, Vec<u64>> {
    let mut longest: HashMap<u64, (usize, &[u64])> = HashMap::new();
    for (t, _, key, list) in reads(history) {
        let l = longest.entry(key).or_insert((t, list));
        if list.len() > l.1.len() {
            *l = (t, list);
        }
    }
    let mut flagged: HashMap<(&str, u64), ()> = HashMap::new();
    for (t, _, key, list) in reads(history) {
        let (lt, l) = longest[&key];
        let mut seen = std::collections::HashSet::new();
        if let Some(v) = list.iter().find(|v| !seen.insert(**v))
            && flagged.insert(("duplicate-elements", key), ()).is_none()
        {
            findings.push(Finding {
                kind: "duplicate-elements",
                key: Some(key),
                why: format!("a read of key {key} holds {v} more than once"),
                txns: vec![t],
            });
        }
        if !l.starts_with(list) && flagged.insert(("incompatible-order", key), ()).is_none() {
            findings.push(Finding {
                kind: "incompatible-order",
                key: Some(key),
                why: format!(
                    "two reads of key {key} disagree on the order of its appends: neither list begins the other"
                ),
                txns: vec![t, lt],
            });
        }
    }
    (longest.into_iter())
        .map(|(k, (_, l))| (k, l.to_vec()))
        .collect()
}

/// The anomalies a read shows alone: an aborted transaction's append (G1a), an intermediate
/// one (G1b), its own transaction's appends missing (internal). One per kind and key.
fn read_anomalies(history: &[Txn], w: &Writers, findings: &mut Vec<Finding>) {
    let mut flagged: HashMap<(&str, u64), ()> = HashMap::new();
    let mut found = |kind: &'static str, key: u64, why: String, txns: Vec<usize>| {
        if flagged.insert((kind, key), ()).is_none() {
            findings.push(Finding {
                kind,
                key: Some(key),
                why,
                txns,
            });
        }
    };
    for (t, i, key, list) in reads(history) {
        if let Some((v, &a)) = (list.iter()).find_map(|v| w.failed.get(&(key, *v)).map(|a| (v, a)))
        {
            let why =
                format!("a read of key {key} saw {v}, appended by a transaction that aborted");
            found("G1a", key, why, vec![a, t]);
        }
        if let Some(&last) = list.last()
            && let Some(&(a, false)) = w.of.get(&(key, last))
            && a != t
        {
            let why = format!(
                "a read of key {key} ended in {last}, which its transaction followed with another append to the key"
            );
            found("G1b", key, why, vec![a, t]);
        }
        // Its own appends to the key so far, in order, must end the list.
        let own: Vec<u64> = (history[t].mops[..i].iter())
            .filter_map(|m| match m {
                Mop::Append { key: k, value } if *k == key => Some(*value),
                _ => None,
            })
            .collect();
        if !own.is_empty() && !list.ends_with(&own) {
            let why = format!(
                "a transaction read key {key} without its own appends to it ({own:?}) at the end"
            );
            found("internal", key, why, vec![t]);
        }
    }
}

/// The kinds of dependency, as bits.
pub(crate) const WW: u8 = 1;
pub(crate) const WR: u8 = 2;
pub(crate) const RW: u8 = 4;

/// The dependencies between transactions, each edge with its kinds and, per kind, the key that
/// made it.
pub(crate) struct Graph {
    pub out: Vec<Vec<(u32, u8)>>,
    pub why: HashMap<(u32, u32, u8), u64>,
}

impl Graph {
    fn build(history: &[Txn], w: &Writers, orders: &HashMap<u64, Vec<u64>>) -> Graph {
        let mut edges: HashMap<(u32, u32), u8> = HashMap::new();
        let mut why = HashMap::new();
        let mut add = |a: usize, b: usize, kind: u8, key: u64| {
            if a != b {
                *edges.entry((a as u32, b as u32)).or_default() |= kind;
                why.entry((a as u32, b as u32, kind)).or_insert(key);
            }
        };
        for (&key, order) in orders {
            for pair in order.windows(2) {
                if let (Some(a), Some(b)) = (w.of(key, pair[0]), w.of(key, pair[1])) {
                    add(a, b, WW, key);
                }
            }
        }
        for (t, _, key, list) in reads(history) {
            if let Some(a) = list.last().and_then(|v| w.of(key, *v)) {
                add(a, t, WR, key);
            }
            let order = &orders[&key];
            if order.starts_with(list)
                && let Some(b) = order.get(list.len()).and_then(|v| w.of(key, *v))
            {
                add(t, b, RW, key);
            }
        }
        let mut out = vec![Vec::new(); history.len()];
        for ((a, b), kinds) in edges {
            out[a as usize].push((b, kinds));
        }
        for o in &mut out {
            o.sort_unstable();
        }
        Graph { out, why }
    }
}

/// Checks `history`; the one search that can grow large stops at `budget`.
pub fn check(history: &[Txn], budget: Duration) -> Report {
    let deadline = super::deadline(budget);
    let writers = Writers::new(history);
    let mut findings = Vec::new();
    let orders = orders(history, &mut findings);
    read_anomalies(history, &writers, &mut findings);
    let graph = Graph::build(history, &writers, &orders);
    let mut unknown = Vec::new();
    for (kind, cycle) in cycles::find(&graph, deadline, &mut unknown) {
        findings.push(Finding {
            kind,
            key: None,
            why: cycles::describe(&graph, history, &cycle),
            txns: cycle.iter().map(|&t| t as usize).collect(),
        });
    }
    let mut keys: Vec<u64> = (history.iter().flat_map(|t| &t.mops))
        .map(|m| match m {
            Mop::Append { key, .. } | Mop::Read { key, .. } => *key,
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    Report {
        txns: (history.iter())
            .filter(|t| t.outcome != Outcome::Failed)
            .count(),
        keys: keys.len(),
        findings,
        unknown,
    }
}

#[cfg(test)]
mod tests;
