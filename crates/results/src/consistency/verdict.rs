//! A checker's findings as the record keeps them ([`ConsistencyRecord`]): the verdict, the
//! anomalies by kind, the first few proofs, each with a sentence saying what it shows where
//! dyno can tell (a stale read, a write lost).

use super::append::{self, Txn};
use super::{Call, Op, Outcome, linearizable};
use crate::record::{ConsistencyRecord, Proof, Verdict};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The most proofs a record lists.
pub const PROOFS: usize = 5;

/// What a history's linearizability check found. `tests` are the tests whose operations it
/// holds, `file` its file in the results directory, `cut` why it is incomplete (its cap).
pub fn linearizable(
    ops: &[Op],
    budget: Duration,
    tests: Vec<String>,
    file: Option<String>,
    cut: Option<String>,
) -> ConsistencyRecord {
    let t0 = Instant::now();
    let report = linearizable::check(ops, budget);
    let mut anomalies = BTreeMap::new();
    if !report.violations.is_empty() {
        anomalies.insert(
            "not linearizable".to_string(),
            report.violations.len() as u64,
        );
    }
    let proofs = (report.violations.iter().take(PROOFS))
        .map(|(key, proof)| Proof {
            kind: "not linearizable".into(),
            key: Some(*key),
            why: why(proof, ops),
            ops: proof.iter().map(Op::describe).collect(),
            spans: proof.iter().map(Op::span).collect(),
        })
        .collect();
    let mut unknown: Vec<String> = (report.unknown.iter())
        .map(|(key, why)| format!("key {key}: {why}"))
        .collect();
    unknown.extend(cut);
    let mut rec = record("linearizable", (report.ops, report.keys), (tests, file));
    (rec.anomalies, rec.proofs, rec.unknown) = (anomalies, proofs, unknown);
    rec.judged(t0)
}

/// A record of `model`'s check of `ops` operations over `keys` keys, kept in `file` and holding
/// `tests`: nothing found yet.
fn record(
    model: &str,
    (ops, keys): (usize, usize),
    (tests, file): (Vec<String>, Option<String>),
) -> ConsistencyRecord {
    ConsistencyRecord {
        model: model.into(),
        verdict: Verdict::Valid,
        tests,
        ops: ops as u64,
        keys: keys as u64,
        history: file,
        anomalies: BTreeMap::new(),
        proofs: Vec::new(),
        unknown: Vec::new(),
        check_ns: 0,
    }
}

impl ConsistencyRecord {
    /// The verdict of what was found (an anomaly, else anything undecided), and the time the
    /// check took since `t0`.
    fn judged(mut self, t0: Instant) -> ConsistencyRecord {
        self.verdict = match (self.anomalies.is_empty(), self.unknown.is_empty()) {
            (false, _) => Verdict::Invalid,
            (true, true) => Verdict::Valid,
            (true, false) => Verdict::Unknown,
        };
        self.check_ns = t0.elapsed().as_nanos() as u64;
        self
    }
}

/// What a list-append history's check found, judged by `model` (`serializable`,
/// `snapshot-isolation`, `read-committed`): the anomalies the model forbids, by kind, with
/// their proofs; those it allows are not held against it.
pub fn transactional(
    txns: &[Txn],
    (model, budget): (&str, Duration),
    tests: Vec<String>,
    file: Option<String>,
    cut: Option<String>,
) -> ConsistencyRecord {
    let t0 = Instant::now();
    let report = append::check(txns, budget);
    let forbidden: Vec<&append::Finding> = (report.findings.iter())
        .filter(|f| append::forbids(model, f.kind))
        .collect();
    let mut anomalies = BTreeMap::new();
    for f in &forbidden {
        *anomalies.entry(f.kind.to_string()).or_default() += 1;
    }
    let proofs = (forbidden.iter().take(PROOFS))
        .map(|f| Proof {
            kind: f.kind.into(),
            key: f.key,
            why: Some(f.why.clone()),
            ops: f.txns.iter().map(|&t| txns[t].describe()).collect(),
            spans: f.txns.iter().map(|&t| txns[t].span()).collect(),
        })
        .collect();
    // What was left undecided about a kind the model allows does not matter to it.
    let mut unknown: Vec<String> = (report.unknown.into_iter())
        .filter(|(kind, _)| append::forbids(model, kind))
        .map(|(_, why)| why)
        .collect();
    unknown.extend(cut);
    let mut rec = record(model, (report.txns, report.keys), (tests, file));
    (rec.anomalies, rec.proofs, rec.unknown) = (anomalies, proofs, unknown);
    rec.judged(t0)
}

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// What a proof shows, when it is one of two plain cases: a read saw a value that a later
/// acknowledged write had replaced before the read began — a stale read when another read saw
/// the newer value, a write lost when another read after the write saw the older one too — or
/// found nothing though a write was acknowledged before it began (a write lost). `history` is the whole history the proof
/// was taken from.
pub fn why(ops: &[Op], history: &[Op]) -> Option<String> {
    let done = |o: &&Op| o.outcome == Outcome::Ok;
    let writes = || {
        ops.iter().filter(done).filter_map(|o| match o.call {
            Call::Write { value } => Some((value, o)),
            Call::Cas {
                to, swapped: true, ..
            } => Some((to, o)),
            _ => None,
        })
    };
    for r in ops.iter().filter(done) {
        let Call::Read { saw } = r.call else { continue };
        let before = |w: &Op| w.complete_ns < r.invoke_ns;
        match saw {
            None => {
                if let Some((v, w)) = writes().find(|(_, w)| before(w)) {
                    return Some(format!(
                        "client {} found nothing on key {} at {}, though write {v} had been acknowledged at {}: a write lost",
                        r.client,
                        r.key,
                        ms(r.invoke_ns),
                        ms(w.complete_ns)
                    ));
                }
            }
            Some(v) => {
                let Some((_, seen)) = writes().find(|(x, _)| *x == v) else {
                    continue;
                };
                let newer =
                    writes().find(|(x, w)| *x != v && seen.complete_ns < w.invoke_ns && before(w));
                if let Some((x, w)) = newer {
                    let what = match moved_on(history, r, (v, x), w) {
                        Some(true) => "a stale read".to_string(),
                        Some(false) => {
                            format!("write {x} lost (another read saw {v} after it too)")
                        }
                        None => format!("a stale read or write {x} lost (no other read tells)"),
                    };
                    return Some(format!(
                        "client {} read {v} on key {} at {}, though write {x} had replaced it at {}: {what}",
                        r.client,
                        r.key,
                        ms(r.invoke_ns),
                        ms(w.complete_ns)
                    ));
                }
            }
        }
    }
    None
}

/// Whether write `x` (made by `w`) reached the key's state though read `r` saw `v` from
/// before it, by the key's other reads since `w` was acknowledged: one saw `x`, or a value `r`
/// also missed — written after `w` and before `r` — (`Some(true)`, `r` was stale); else one saw
/// `v` too (`Some(false)`: at two times after `x`, the state was still `v`: `x` was lost); else
/// the history cannot tell (`None`: no other read, or only of values written after `r`, which
/// would have replaced `x` either way).
fn moved_on(history: &[Op], r: &Op, (v, x): (u64, u64), w: &Op) -> Option<bool> {
    let missed = |y: u64| {
        y == x
            || history.iter().any(|o| {
                o.key == r.key
                    && o.outcome == Outcome::Ok
                    && o.invoke_ns > w.complete_ns
                    && o.complete_ns < r.invoke_ns
                    && matches!(o.call, Call::Write { value: z } | Call::Cas { to: z, swapped: true, .. } if z == y)
            })
    };
    let later = || {
        history.iter().filter_map(|o| match o.call {
            Call::Read { saw: Some(y) }
                if o.key == r.key
                    && o.outcome == Outcome::Ok
                    && o.invoke_ns > w.complete_ns
                    && o != r =>
            {
                Some(y)
            }
            _ => None,
        })
    };
    if later().any(missed) {
        Some(true)
    } else if later().any(|y| y == v) {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(client: u32, call: Call, (a, b): (u64, u64)) -> Op {
        Op {
            client,
            key: 4,
            call,
            outcome: Outcome::Ok,
            invoke_ns: a,
            complete_ns: b,
        }
    }

    #[test]
    fn a_stale_read_and_a_lost_write_are_named_and_a_valid_history_is_valid() {
        let w = |v, at| op(1, Call::Write { value: v }, at);
        let r = |saw, at| op(2, Call::Read { saw }, at);
        let stale = [
            w(1, (0, 1_000_000)),
            w(2, (2_000_000, 3_000_000)),
            r(Some(1), (4_000_000, 5_000_000)),
            r(Some(2), (6_000_000, 7_000_000)),
        ];
        let rec = linearizable(&stale, Duration::from_secs(5), vec!["a".into()], None, None);
        assert_eq!(rec.verdict, Verdict::Invalid);
        assert_eq!(rec.anomalies["not linearizable"], 1);
        let why = rec.proofs[0].why.as_deref().unwrap();
        assert_eq!(
            why,
            "client 2 read 1 on key 4 at 4.000 ms, though write 2 had replaced it at 3.000 ms: a stale read"
        );
        assert_eq!(rec.proofs[0].ops.len(), 3);
        // No read afterwards: the history cannot tell which.
        let rec = linearizable(&stale[..3], Duration::from_secs(5), vec![], None, None);
        let why = rec.proofs[0].why.as_deref().unwrap();
        assert!(
            why.ends_with("a stale read or write 2 lost (no other read tells)"),
            "{why}"
        );
        // Another read saw the old value again: the write is gone.
        let mut gone = stale.to_vec();
        gone[3] = r(Some(1), (6_000_000, 7_000_000));
        let why = super::why(&gone[..3], &gone).unwrap();
        assert!(
            why.ends_with("write 2 lost (another read saw 1 after it too)"),
            "{why}"
        );
        // Later reads saw only a value written after the read: either way, it would show.
        let mut on = stale.to_vec();
        on[3] = w(3, (6_000_000, 7_000_000));
        on.push(r(Some(3), (8_000_000, 9_000_000)));
        let why = super::why(&on[..3], &on).unwrap();
        assert!(
            why.ends_with("a stale read or write 2 lost (no other read tells)"),
            "{why}"
        );
        let lost = [w(7, (0, 10)), r(None, (20, 30))];
        let rec = linearizable(&lost, Duration::from_secs(5), vec![], None, None);
        assert!(
            rec.proofs[0]
                .why
                .as_deref()
                .unwrap()
                .ends_with("a write lost")
        );
        let fine = [w(7, (0, 10)), r(Some(7), (20, 30))];
        let rec = linearizable(&fine, Duration::from_secs(5), vec![], None, None);
        assert_eq!((rec.verdict, rec.ops, rec.keys), (Verdict::Valid, 2, 1));
        let cut = linearizable(
            &fine,
            Duration::from_secs(5),
            vec![],
            None,
            Some("cut".into()),
        );
        assert_eq!(
            cut.verdict,
            Verdict::Unknown,
            "part of a history proves nothing"
        );
    }
}
