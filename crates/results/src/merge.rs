//! `dyno merge`: one run record from the records of a run's shards (`--shard I/N`), exactly.
//!
//! Nothing is averaged: latency histograms are added bucket by bucket (each operation kind's,
//! each repetition's, the case's, the service times'), counts are summed, rates are the sums
//! over the longest shard's time, and the interval series are added interval by interval —
//! every shard started each repetition at one agreed instant, so interval k covers the same
//! span on each; their percentiles come from the shards' `.hlog`s added interval by interval
//! when those are found beside the records (exact), else they are the largest of the shards'
//! (an upper bound, as a thinned series has). Each shard's generator self-check is kept, and
//! the merged repetition is valid only if every shard's was. The shards' first sends,
//! interleaved, give the merged inter-arrival histogram of an open loop.
//!
//! Refused: records that are not shards, shards of different plans (every plan field but the
//! shard and the `.hlog` path must be equal), missing or repeated ranks, cases or repetitions
//! that do not match, and suites whose records it cannot add (it adds the load, ycsb and kv
//! suites').

use crate::histogram::{Histogram, decode, encode, new_histogram};
use crate::hlog::ReadInterval;
use crate::record::*;
use crate::stats::{latency_summary, per_s, spread};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One shard's record and the directory it was read from (where its `.hlog`s are).
pub struct ShardInput {
    pub record: RunRecord,
    pub dir: PathBuf,
}

/// A merged `.hlog`: its file name in the merged run's directory, and its intervals.
pub struct MergedLog {
    pub file: String,
    pub comment: String,
    pub intervals: Vec<(u64, u64, Histogram)>,
}

/// Why shards could not be merged: said once, naming the shard and the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MergeError(pub String);

fn refuse<T>(msg: impl Into<String>) -> Result<T, MergeError> {
    Err(MergeError(msg.into()))
}

/// The merged record and its `.hlog`s.
pub fn merge(mut shards: Vec<ShardInput>) -> Result<(RunRecord, Vec<MergedLog>), MergeError> {
    if shards.len() < 2 {
        return refuse("give the results directories of two shards or more");
    }
    for s in &shards {
        if s.record.plan.shard.is_none() {
            return refuse(format!(
                "{}: not a shard's record (run with --shard I/N)",
                s.dir.display()
            ));
        }
    }
    shards.sort_by_key(|s| s.record.plan.shard.as_ref().map_or(0, |x| x.index));
    let count = shards[0].record.plan.shard.as_ref().map_or(0, |x| x.count);
    let ranks: Vec<u32> = (shards.iter())
        .filter_map(|s| s.record.plan.shard.as_ref().map(|x| x.index))
        .collect();
    for s in &shards {
        let c = s.record.plan.shard.as_ref().map_or(0, |x| x.count);
        if c != count {
            return refuse(format!(
                "{} is a shard of {c}, {} of {count}: merge the shards of one run",
                s.dir.display(),
                shards[0].dir.display()
            ));
        }
    }
    if let Some(w) = ranks.windows(2).find(|w| w[0] == w[1]) {
        return refuse(format!(
            "shard {} is given twice: give each shard's directory once",
            w[0]
        ));
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !ranks.contains(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return refuse(format!(
            "shard{} {} of {count} missing: give every shard's results directory",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", ")
        ));
    }
    let first = comparable(&shards[0].record.plan);
    for s in &shards[1..] {
        let other = comparable(&s.record.plan);
        if other != first {
            let field = differing_field(&first, &other).unwrap_or_default();
            return refuse(format!(
                "shard {} ran another plan than shard 0 ({field} differs): merge the shards of one run",
                s.record.plan.shard.as_ref().map_or(0, |x| x.index),
            ));
        }
    }
    let records: Vec<&RunRecord> = shards.iter().map(|s| &s.record).collect();
    let mut out = records[0].clone();
    out.plan.shard = None;
    out.plan.merged = (records.iter())
        .filter_map(|r| r.plan.shard.clone())
        .collect();
    // The merged logs go beside the merged record, under the shards' file names.
    if let Some(l) = &mut out.plan.load {
        l.hlog = (l.hlog.as_ref())
            .and_then(|h| Path::new(h).file_name())
            .map(|f| f.to_string_lossy().into_owned());
    }
    out.started = (records.iter().map(|r| r.started.clone()).min()).unwrap_or_default();
    out.finished = if records.iter().all(|r| r.finished.is_some()) {
        records.iter().filter_map(|r| r.finished.clone()).max()
    } else {
        None
    };
    out.interrupted = records.iter().any(|r| r.interrupted);
    out.resources = records.iter().flat_map(|r| r.resources.clone()).collect();
    out.thresholds = Vec::new();
    out.aborted = None;
    let mut logs = Vec::new();
    for (i, case) in out.cases.iter_mut().enumerate() {
        let parts: Vec<&Case> = (records.iter())
            .map(|r| {
                r.cases.get(i).ok_or_else(|| {
                    MergeError(format!(
                        "shard {} has {} cases, shard 0 has more: merge records of finished runs",
                        r.plan.shard.as_ref().map_or(0, |x| x.index),
                        r.cases.len()
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        for (k, c) in parts.iter().enumerate() {
            if c.id() != parts[0].id() {
                return refuse(format!(
                    "shard {k}'s case {} is {}/{} on {}, shard 0's {}/{} on {}: merge the shards of one run",
                    i + 1,
                    c.suite,
                    c.test,
                    c.target,
                    parts[0].suite,
                    parts[0].test,
                    parts[0].target
                ));
            }
        }
        *case = merge_case(&parts, &shards, i, &mut logs)?;
    }
    Ok((out, logs))
}

/// A plan as shards share it: every field but the shard, where its `.hlog` went and the
/// generator threads (a machine's own).
fn comparable(plan: &PlanRecord) -> serde_json::Value {
    let mut p = plan.clone();
    p.shard = None;
    p.threads = None;
    if let Some(l) = &mut p.load {
        l.hlog = None;
        l.threads = 0;
    }
    serde_json::to_value(&p).unwrap_or_default()
}

/// What shards compare at their rendezvous to know they run one plan: a hash (FNV-1a, 64
/// bits, hexadecimal) of the plan as they share it.
pub fn plan_identity(plan: &PlanRecord) -> String {
    let text = comparable(plan).to_string();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The first field (a dotted path) where two JSON values differ.
fn differing_field(a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (u, v) = (x.get(k)?, y.get(k).unwrap_or(&Value::Null));
                (u != v).then(|| match differing_field(u, v) {
                    Some(sub) if !sub.is_empty() => format!("{k}.{sub}"),
                    _ => k.clone(),
                })
            })
        }
        _ => (a != b).then(String::new),
    }
}

/// How bad a status is, for the merged case: the worst shard's.
fn severity(s: Status) -> u8 {
    match s {
        Status::Ok => 0,
        Status::Na => 1,
        Status::Invalid => 2,
        Status::Interrupted => 3,
        Status::Failed => 4,
    }
}

fn add_encoded(into: &mut Histogram, text: &str, whose: &str) -> Result<(), MergeError> {
    let h = decode(text).map_err(|e| MergeError(format!("{whose}: {e}")))?;
    into.add(&h)
        .map_err(|e| MergeError(format!("{whose}: histograms of other ranges: {e:?}")))
}

fn merge_case(
    parts: &[&Case],
    shards: &[ShardInput],
    index: usize,
    logs: &mut Vec<MergedLog>,
) -> Result<Case, MergeError> {
    let mut case = parts[0].clone();
    let worst = (parts.iter().enumerate())
        .max_by_key(|(_, c)| severity(c.status))
        .map(|(k, c)| (k, *c))
        .expect("two shards or more");
    case.status = worst.1.status;
    case.reason = (worst.1.reason.as_ref()).map(|r| format!("shard {}: {r}", worst.0));
    if case.status == Status::Na {
        return Ok(case);
    }
    let reps = parts.iter().map(|c| c.reps.len()).min().unwrap_or(0);
    if parts.iter().any(|c| c.reps.len() != reps) && case.status == Status::Ok {
        case.status = Status::Interrupted;
        case.reason = Some(format!(
            "the shards finished different numbers of repetitions: {reps} merged"
        ));
    }
    case.warmup = None;
    case.reps = Vec::with_capacity(reps);
    for r in 0..reps {
        let of_rep: Vec<&Rep> = parts.iter().map(|c| &c.reps[r]).collect();
        let hlogs = read_hlogs(shards, parts[0], r as u32);
        let (rep, log) = merge_rep(&of_rep, hlogs.as_deref())?;
        if let Some(intervals) = log
            && let Some(file) = hlog_file(&shards[0].record, parts[0], r as u32)
        {
            logs.push(MergedLog {
                file,
                comment: format!(
                    "dyno merge of {} shards: case {} ({} on {}), repetition {r}",
                    shards.len(),
                    index + 1,
                    parts[0].test,
                    parts[0].target
                ),
                intervals,
            });
        }
        case.reps.push(rep);
    }
    // The case's histogram and summary, from the merged repetitions.
    let mut all = new_histogram();
    for (k, c) in parts.iter().enumerate() {
        if let Some(h) = &c.histogram {
            add_encoded(&mut all, h, &format!("shard {k}'s case {}", index + 1))?;
        }
    }
    let mut service = new_histogram();
    for rep in &case.reps {
        if let Some(h) = rep.load().and_then(|l| l.service_histogram.as_ref()) {
            add_encoded(&mut service, h, "a merged repetition")?;
        }
    }
    case.histogram = (!all.is_empty()).then(|| encode(&all));
    let rates: Vec<f64> = (case.reps.iter())
        .filter(|r| r.wall_ns > 0)
        .map(|r| r.ops_per_s)
        .collect();
    case.summary = match (spread(&rates), latency_summary(&all)) {
        (Some(ops_per_s), Some(latency_ns)) => Some(Summary {
            ops_per_s,
            latency_ns,
            service_ns: latency_summary(&service),
        }),
        _ => None,
    };
    case.errors = BTreeMap::new();
    case.error_examples = BTreeMap::new();
    for c in parts {
        for (k, n) in &c.errors {
            *case.errors.entry(k.clone()).or_default() += n;
        }
        for (k, v) in &c.error_examples {
            case.error_examples
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
    }
    case.server = None;
    case.faults = Vec::new();
    case.profiles = parts.iter().flat_map(|c| c.profiles.clone()).collect();
    Ok(case)
}

/// The `.hlog` file name of `case`'s repetition `rep` in a run of `record`'s plan, if it wrote
/// one.
fn hlog_file(record: &RunRecord, case: &Case, rep: u32) -> Option<String> {
    let asked = record.plan.load.as_ref()?.hlog.as_ref()?;
    let single =
        record.plan.targets.len() == 1 && record.plan.reps + u32::from(record.plan.warmup) == 1;
    let rep = rep + u32::from(record.plan.warmup);
    let path = crate::hlog::path_for(
        Path::new(asked),
        &case.target,
        case.sweep.as_ref(),
        rep,
        single,
    );
    Some(path.file_name()?.to_string_lossy().into_owned())
}

/// Every shard's `.hlog` of this repetition, read from its directory; `None` unless all are.
fn read_hlogs(shards: &[ShardInput], case: &Case, rep: u32) -> Option<Vec<Vec<ReadInterval>>> {
    (shards.iter())
        .map(|s| {
            let file = hlog_file(&s.record, case, rep)?;
            crate::hlog::read(&s.dir.join(file)).ok()
        })
        .collect()
}

type Intervals = Vec<(u64, u64, Histogram)>;

fn merge_rep(
    reps: &[&Rep],
    hlogs: Option<&[Vec<ReadInterval>]>,
) -> Result<(Rep, Option<Intervals>), MergeError> {
    let mut out = reps[0].clone();
    out.ops = reps.iter().map(|r| r.ops).sum();
    out.clients = reps.iter().map(|r| r.clients).sum();
    out.wall_ns = reps.iter().map(|r| r.wall_ns).max().unwrap_or(0);
    out.client_ns = reps.iter().flat_map(|r| r.client_ns.clone()).collect();
    out.errors = reps.iter().map(|r| r.errors).sum();
    // What each shard's rate counted (its suite's measure), summed over the longest time.
    let counted: f64 = (reps.iter())
        .map(|r| r.ops_per_s * r.wall_ns as f64 / 1e9)
        .sum();
    out.ops_per_s = per_s(counted.round(), out.wall_ns);
    let mut every = new_histogram();
    out.by_op = BTreeMap::new();
    let ops: std::collections::BTreeSet<&String> =
        reps.iter().flat_map(|r| r.by_op.keys()).collect();
    for op in ops {
        let mut h = new_histogram();
        let (mut count, mut errors, mut any) = (0, 0, false);
        for (k, r) in reps.iter().enumerate() {
            if let Some(f) = r.by_op.get(op) {
                count += f.count;
                errors += f.errors;
                if let Some(text) = &f.histogram {
                    add_encoded(&mut h, text, &format!("shard {k}'s {op}"))?;
                    any = true;
                }
            }
        }
        every
            .add(&h)
            .map_err(|e| MergeError(format!("{op}: {e:?}")))?;
        out.by_op.insert(
            op.clone(),
            OpFigures {
                count,
                errors,
                latency_ns: latency_summary(&h),
                histogram: any.then(|| encode(&h)),
            },
        );
    }
    out.latency_ns = latency_summary(&every);
    let mut log = None;
    out.detail = match &reps[0].detail {
        Detail::None => Detail::None,
        Detail::Load(_) => {
            let loads: Vec<&LoadRep> = (reps.iter())
                .map(|r| {
                    r.load().ok_or_else(|| {
                        MergeError("a load case whose repetitions are not all load".into())
                    })
                })
                .collect::<Result<_, _>>()?;
            let (l, intervals) = merge_load(&loads, &every, out.wall_ns, hlogs)?;
            log = intervals;
            Detail::Load(Box::new(l))
        }
        Detail::Kv(_) => {
            let kvs: Vec<&KvRep> = (reps.iter())
                .map(|r| match &r.detail {
                    Detail::Kv(k) => Ok(&**k),
                    _ => refuse("a kv case whose repetitions are not all kv's"),
                })
                .collect::<Result<_, _>>()?;
            Detail::Kv(Box::new(merge_kv(&kvs)))
        }
        Detail::Custom { suite, .. } if suite == "ycsb" => {
            let figures: Vec<&serde_json::Value> = (reps.iter())
                .map(|r| match &r.detail {
                    Detail::Custom { figures, .. } => Ok(figures),
                    _ => refuse("a ycsb case whose repetitions are not all ycsb's"),
                })
                .collect::<Result<_, _>>()?;
            Detail::Custom {
                suite: suite.clone(),
                figures: merge_ycsb(&figures),
            }
        }
        other => {
            return refuse(format!(
                "merge adds up the load, ycsb and kv suites' records (what --shard splits); this case's figures are {}",
                match other {
                    Detail::Store(_) => "a store suite's",
                    _ => "another suite's",
                }
            ));
        }
    };
    Ok((out, log))
}

fn merge_load(
    loads: &[&LoadRep],
    latency: &Histogram,
    wall_ns: u64,
    hlogs: Option<&[Vec<ReadInterval>]>,
) -> Result<(LoadRep, Option<Intervals>), MergeError> {
    let sum = |f: fn(&LoadRep) -> u64| loads.iter().map(|l| f(l)).sum::<u64>();
    let mut out = loads[0].clone();
    out.requests = sum(|l| l.requests);
    out.responses = sum(|l| l.responses);
    out.ok = sum(|l| l.ok);
    out.non_2xx = sum(|l| l.non_2xx);
    out.network_failed = sum(|l| l.network_failed);
    out.unsent = sum(|l| l.unsent);
    out.dropped = sum(|l| l.dropped);
    out.bytes_in = sum(|l| l.bytes_in);
    out.bytes_out = sum(|l| l.bytes_out);
    out.connects = sum(|l| l.connects);
    out.responses_per_s = per_s(out.responses as f64, wall_ns);
    out.read_bytes_per_s = per_s(out.bytes_in as f64, wall_ns);
    out.write_bytes_per_s = per_s(out.bytes_out as f64, wall_ns);
    out.connects_per_s = per_s(out.connects as f64, wall_ns);
    out.outstanding_mean = loads.iter().map(|l| l.outstanding_mean).sum();
    out.outstanding_max = sum(|l| l.outstanding_max);
    out.within = (loads[0].within.iter())
        .map(|w| WithinShare {
            le_ns: w.le_ns,
            share: if latency.is_empty() {
                0.0
            } else {
                latency.count_between(0, w.le_ns) as f64 / latency.len() as f64
            },
        })
        .collect();
    let mut service = new_histogram();
    for (k, l) in loads.iter().enumerate() {
        if let Some(h) = &l.service_histogram {
            add_encoded(&mut service, h, &format!("shard {k}'s service times"))?;
        }
    }
    out.service_ns = latency_summary(&service);
    out.service_histogram = (!service.is_empty()).then(|| encode(&service));
    // The handshakes are kept as summaries only: not added.
    out.tls_handshake_ns = None;
    out.generator = merge_checks(loads);
    out.shards = (loads.iter().enumerate())
        .map(|(k, l)| ShardCheck {
            index: k as u32,
            generator: l.generator.clone(),
        })
        .collect();
    let starts: Vec<Option<u64>> = loads.iter().map(|l| l.start_unix_ns).collect();
    if starts.iter().any(|s| *s != starts[0]) {
        return refuse(format!(
            "the shards started a repetition at different instants ({starts:?}): merge shards that met at one rendezvous"
        ));
    }
    out.start_unix_ns = starts[0];
    let series: Vec<&[IntervalRecord]> = loads.iter().map(|l| l.intervals.as_slice()).collect();
    let (intervals, log) = add_series(&series, hlogs);
    out.intervals = intervals;
    out.connects_peak_per_s = (out.intervals.iter())
        .filter(|iv| iv.end_ns > iv.start_ns)
        .map(|iv| per_s(iv.connects as f64, iv.end_ns - iv.start_ns))
        .fold(0.0, f64::max);
    out.interarrival = interleave(loads);
    out.sends_ns = Vec::new();
    out.partial = loads.iter().any(|l| l.partial);
    Ok((out, log))
}

/// The shards' time series added interval by interval (every shard started the repetition, or
/// the test, at one agreed instant, so interval k covers the same span on each), as far as the
/// shortest goes: counts summed; percentiles from the shards' `.hlog`s added (exact, and the
/// merged log's intervals returned) when every shard's is given, else the largest of the
/// shards' (an upper bound).
fn add_series(
    series: &[&[IntervalRecord]],
    hlogs: Option<&[Vec<ReadInterval>]>,
) -> (Vec<IntervalRecord>, Option<Intervals>) {
    let n = series.iter().map(|s| s.len()).min().unwrap_or(0);
    let exact = hlogs.filter(|h| h.iter().all(|x| x.len() >= n));
    let mut log: Intervals = Vec::new();
    let intervals = (0..n)
        .map(|k| {
            let at = |f: fn(&IntervalRecord) -> u64| series.iter().map(|s| f(&s[k])).sum();
            let most = |f: fn(&IntervalRecord) -> u64| series.iter().map(|s| f(&s[k])).max();
            let mut iv = series[0][k];
            iv.responses = at(|i| i.responses);
            iv.ok = at(|i| i.ok);
            iv.errors = at(|i| i.errors);
            iv.connects = at(|i| i.connects);
            iv.max_ns = most(|i| i.max_ns).unwrap_or(0);
            match exact {
                Some(h) => {
                    let mut all = new_histogram();
                    for x in h {
                        let _ = all.add(&x[k].histogram);
                    }
                    iv.p50_ns = all.value_at_quantile(0.5);
                    iv.p99_ns = all.value_at_quantile(0.99);
                    iv.max_ns = iv.max_ns.max(all.max());
                    log.push((h[0][k].start_ns, h[0][k].end_ns, all));
                }
                None => {
                    iv.p50_ns = most(|i| i.p50_ns).unwrap_or(0);
                    iv.p99_ns = most(|i| i.p99_ns).unwrap_or(0);
                }
            }
            iv
        })
        .collect();
    (intervals, exact.map(|_| log))
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

/// The shards' self-checks as one: sums of rates and CPU, the busiest thread and widest pace
/// of any, valid only if every shard was (the reason names the shards that were not).
fn merge_checks(loads: &[&LoadRep]) -> GeneratorCheck {
    let g: Vec<&GeneratorCheck> = loads.iter().map(|l| &l.generator).collect();
    let requests: u64 = loads.iter().map(|l| l.requests).sum();
    let cpu: u64 = g.iter().map(|c| c.cpu_user_ns + c.cpu_sys_ns).sum();
    let coalesced: u64 = g.iter().map(|c| c.coalesced).sum();
    let invalid: Vec<String> = (g.iter().enumerate())
        .filter(|(_, c)| !c.valid)
        .map(|(k, c)| format!("shard {k}: {}", c.reason.as_deref().unwrap_or("invalid")))
        .collect();
    GeneratorCheck {
        intended_per_s: (g.iter().map(|c| c.intended_per_s)).sum::<Option<f64>>(),
        achieved_per_s: g.iter().map(|c| c.achieved_per_s).sum(),
        // Each shard's lag is in `shards`: lateness on different machines is not one figure.
        lag_ns: None,
        cpu_user_ns: g.iter().map(|c| c.cpu_user_ns).sum(),
        cpu_sys_ns: g.iter().map(|c| c.cpu_sys_ns).sum(),
        cpu_ns_per_request: if requests > 0 {
            cpu as f64 / requests as f64
        } else {
            0.0
        },
        busiest_thread: g.iter().map(|c| c.busiest_thread).fold(0.0, f64::max),
        wakeups: g.iter().map(|c| c.wakeups).sum(),
        coalesced,
        window_mean_ns: if coalesced > 0 {
            g.iter()
                .map(|c| c.window_mean_ns * c.coalesced as f64)
                .sum::<f64>()
                / coalesced as f64
        } else {
            0.0
        },
        sleep_cost_ns: g.iter().map(|c| c.sleep_cost_ns).max().unwrap_or(0),
        pace_ns: g.iter().map(|c| c.pace_ns).max().unwrap_or(0),
        valid: invalid.is_empty(),
        reason: (!invalid.is_empty()).then(|| invalid.join("; ")),
    }
}

/// The shards' first sends interleaved: the gaps between consecutive sends of all of them,
/// up to the first moment some shard's kept sends end.
fn interleave(loads: &[&LoadRep]) -> Option<Arrivals> {
    if loads.iter().any(|l| l.sends_ns.is_empty()) {
        return None;
    }
    let window_ns = (loads.iter().filter_map(|l| l.sends_ns.last().copied())).min()?;
    let mut all: Vec<u64> = (loads.iter())
        .flat_map(|l| l.sends_ns.iter().copied().filter(|&t| t <= window_ns))
        .collect();
    all.sort_unstable();
    let mut gaps = new_histogram();
    for w in all.windows(2) {
        gaps.saturating_record((w[1] - w[0]).max(1));
    }
    let intended: f64 = (loads.iter())
        .filter_map(|l| l.generator.intended_per_s)
        .sum();
    Some(Arrivals {
        window_ns,
        sends: all.len() as u64,
        intended_gap_ns: if intended > 0.0 { 1e9 / intended } else { 0.0 },
        gap_ns: latency_summary(&gaps),
        histogram: (!gaps.is_empty()).then(|| encode(&gaps)),
    })
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
