//! `dyno merge` of the kv suite: the shards' parts of one test as one.

use results::merge::{Merged, add_series, refuse};
use results::*;

/// The merged kv detail of one repetition (see `results::merge::MergeDetail`).
pub(super) fn detail(parts: &[&Rep]) -> Merged {
    let kvs: Vec<&KvRep> = (parts.iter())
        .map(|r| match &r.detail {
            Detail::Kv(k) => Ok(&**k),
            _ => refuse("a kv case whose repetitions are not all kv's"),
        })
        .collect::<Result<_, _>>()?;
    Ok((Detail::Kv(Box::new(merge_kv(&kvs))), None))
}

/// The kv suite's figures of the shards' parts of one test as one: counts summed, the series
/// added interval by interval (its percentiles an upper bound: the kv suite writes no `.hlog`),
/// on shard 0's clock; each shard checked its own clients' writes, so the lost-writes checks
/// add up.
fn merge_kv(kvs: &[&KvRep]) -> KvRep {
    let sum = |f: fn(&KvRep) -> u64| kvs.iter().map(|k| f(k)).sum::<u64>();
    let series: Vec<&[IntervalRecord]> = kvs.iter().map(|k| k.intervals.as_slice()).collect();
    let checks: Vec<(usize, &LostWrites)> = (kvs.iter().enumerate())
        .filter_map(|(i, k)| k.lost_writes.as_ref().map(|l| (i, l)))
        .collect();
    KvRep {
        issued: sum(|k| k.issued),
        ok: sum(|k| k.ok),
        definite: sum(|k| k.definite),
        indefinite: sum(|k| k.indefinite),
        reconnects: sum(|k| k.reconnects),
        intervals: add_series(&series, None).0,
        started_ns: kvs[0].started_ns,
        lost_writes: (!checks.is_empty()).then(|| LostWrites {
            checked: checks.iter().map(|c| c.1.checked).sum(),
            missing: checks.iter().map(|c| c.1.missing).sum(),
            stale: checks.iter().map(|c| c.1.stale).sum(),
            unread: checks.iter().map(|c| c.1.unread).sum(),
            examples: (checks.iter())
                .flat_map(|(i, c)| c.examples.iter().map(move |e| format!("shard {i}: {e}")))
                .take(10)
                .collect(),
        }),
    }
}
