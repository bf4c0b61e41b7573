//! `dyno merge` of the ycsb suite: the shards' YCSB figures of one test as one.

use results::merge::{Merged, refuse};
use results::*;
use std::collections::BTreeMap;

/// The merged ycsb detail of one repetition (see `results::merge::MergeDetail`).
pub(super) fn detail(parts: &[&Rep]) -> Merged {
    let figures: Vec<&serde_json::Value> = (parts.iter())
        .map(|r| match &r.detail {
            Detail::Custom { figures, .. } => Ok(figures),
            _ => refuse("a ycsb case whose repetitions are not all ycsb's"),
        })
        .collect::<Result<_, _>>()?;
    let suite = match &parts[0].detail {
        Detail::Custom { suite, .. } => suite.clone(),
        _ => return refuse("a ycsb case whose repetitions are not all ycsb's"),
    };
    let figures = merge_ycsb(&figures);
    Ok((Detail::custom(suite, figures), None))
}

/// The ycsb suite's figures of the shards' parts of one test as one: key draws summed, each
/// key's draws summed over the shards' most drawn keys (a key beyond some shard's top list
/// counts only the shards that listed it: a lower bound), the scans' lengths pooled, each
/// shard's slice of the records kept in rank order. Distinct keys cannot be added (the shards
/// draw some of the same keys): the largest shard's count is kept as a lower bound.
fn merge_ycsb(parts: &[&serde_json::Value]) -> serde_json::Value {
    use serde_json::{Value, json};
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let mut top: BTreeMap<i64, u64> = BTreeMap::new();
    for p in parts {
        for kv in p["top_keys"].as_array().into_iter().flatten() {
            if let (Some(k), Some(c)) = (kv[0].as_i64(), kv[1].as_u64()) {
                *top.entry(k).or_default() += c;
            }
        }
    }
    let mut top: Vec<(i64, u64)> = top.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let kept = parts[0]["top_keys"].as_array().map_or(0, Vec::len);
    top.truncate(kept.max(1));
    let mut out = json!({
        "key_draws": parts.iter().map(|p| n(p, "key_draws")).sum::<u64>(),
        "distinct_keys_at_least": parts.iter().map(|p| n(p, "distinct_keys")).max(),
        "top_keys": top.iter().map(|(k, c)| json!([k, c])).collect::<Vec<_>>(),
    });
    let scans: Vec<&Value> = (parts.iter())
        .map(|p| &p["scan_length"])
        .filter(|s| n(s, "count") > 0)
        .collect();
    if !scans.is_empty() {
        let count: u64 = scans.iter().map(|s| n(s, "count")).sum();
        let total: f64 = (scans.iter())
            .map(|s| s["mean"].as_f64().unwrap_or(0.0) * n(s, "count") as f64)
            .sum();
        out["scan_length"] = json!({
            "count": count,
            "min": scans.iter().map(|s| n(s, "min")).min(),
            "max": scans.iter().map(|s| n(s, "max")).max(),
            "mean": total / count as f64,
        });
    }
    if parts.iter().any(|p| p.get("insertcount").is_some()) {
        out["slices"] = (parts.iter())
            .map(|p| json!([n(p, "insertstart"), n(p, "insertcount")]))
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ycsb_figures_add_where_they_can_and_bound_where_they_cannot() {
        let a = json!({
            "key_draws": 100, "distinct_keys": 40,
            "top_keys": [[7, 30], [3, 10]],
            "scan_length": {"count": 10, "min": 2, "max": 90, "mean": 50.0},
            "insertstart": 0, "insertcount": 501,
        });
        let b = json!({
            "key_draws": 60, "distinct_keys": 45,
            "top_keys": [[7, 20], [9, 15]],
            "scan_length": {"count": 30, "min": 1, "max": 80, "mean": 30.0},
            "insertstart": 501, "insertcount": 500,
        });
        let m = merge_ycsb(&[&a, &b]);
        assert_eq!(m["key_draws"], 160);
        // Distinct keys do not add (shards draw the same keys): the largest is a lower bound.
        assert_eq!(m["distinct_keys_at_least"], 45);
        assert!(m.get("distinct_keys").is_none());
        // Each key's draws summed over the lists, the most drawn first, as many as a shard kept.
        assert_eq!(m["top_keys"], json!([[7, 50], [9, 15]]));
        assert_eq!(m["scan_length"]["count"], 40);
        assert_eq!(m["scan_length"]["min"], 1);
        assert_eq!(m["scan_length"]["max"], 90);
        assert_eq!(m["scan_length"]["mean"], 35.0);
        assert_eq!(m["slices"], json!([[0, 501], [501, 500]]));
        // A workload's figures carry no slice, nor scans: none invented.
        let w =
            merge_ycsb(&[&json!({"key_draws": 1, "distinct_keys": 1, "top_keys": [[1, 1]]}); 2]);
        assert!(w.get("slices").is_none() && w.get("scan_length").is_none());
    }
}
