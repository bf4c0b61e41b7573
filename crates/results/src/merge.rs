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
//! that do not match, and suites whose records it cannot add (each suite merges its own figures:
//! [`MergeDetail`]).

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

pub fn refuse<T>(msg: impl Into<String>) -> Result<T, MergeError> {
    Err(MergeError(msg.into()))
}

/// One repetition of a case as the shards ran it, for its suite to merge its own figures
/// (`Rep::detail`): each shard's repetition, the merged one so far (its common figures added),
/// every operation's latency added, and the shards' interval logs of it when all were found.
pub struct Parts<'a> {
    pub reps: &'a [&'a Rep],
    pub merged: &'a Rep,
    pub latency: &'a Histogram,
    pub hlogs: Option<&'a [Vec<ReadInterval>]>,
}

/// A suite's merged detail of one repetition and, when it made one, the merged interval log.
pub type Merged = Result<(Detail, Option<Intervals>), MergeError>;

/// A suite's part of merging (the suite's name, the parts). Each suite says how its figures add
/// (`engine::suite::Suite::merge_detail`); this module names none.
pub type MergeDetail<'a> = dyn Fn(&str, &Parts) -> Merged + 'a;

/// The merged record and its `.hlog`s; `detail` merges each suite's own figures.
pub fn merge(
    mut shards: Vec<ShardInput>,
    detail: &MergeDetail,
) -> Result<(RunRecord, Vec<MergedLog>), MergeError> {
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
    every_rank_once(&shards)?;
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
        *case = merge_case(&parts, &shards, (i, detail), &mut logs)?;
    }
    Ok((out, logs))
}

/// The shards (sorted by rank) are one run's: of the same count, each rank once, none missing.
fn every_rank_once(shards: &[ShardInput]) -> Result<(), MergeError> {
    let count = shards[0].record.plan.shard.as_ref().map_or(0, |x| x.count);
    let ranks: Vec<u32> = (shards.iter())
        .filter_map(|s| s.record.plan.shard.as_ref().map(|x| x.index))
        .collect();
    for s in shards {
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
    Ok(())
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

pub fn add_encoded(into: &mut Histogram, text: &str, whose: &str) -> Result<(), MergeError> {
    let h = decode(text).map_err(|e| MergeError(format!("{whose}: {e}")))?;
    into.add(&h)
        .map_err(|e| MergeError(format!("{whose}: histograms of other ranges: {e:?}")))
}

fn merge_case(
    parts: &[&Case],
    shards: &[ShardInput],
    (index, detail): (usize, &MergeDetail),
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
        let (rep, log) = merge_rep((&parts[0].suite, &of_rep), hlogs.as_deref(), detail)?;
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
    let single = crate::hlog::single(
        record.plan.targets.len(),
        record.plan.reps,
        record.plan.warmup,
    );
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

/// An interval log: each interval's start and end (ns) and its histogram.
pub type Intervals = Vec<(u64, u64, Histogram)>;

fn merge_rep(
    (suite, reps): (&str, &[&Rep]),
    hlogs: Option<&[Vec<ReadInterval>]>,
    detail: &MergeDetail,
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
        let one = merge_op(reps, op)?;
        if let Some(text) = &one.histogram {
            add_encoded(&mut every, text, op)?;
        }
        out.by_op.insert(op.clone(), one);
    }
    out.latency_ns = latency_summary(&every);
    let (detail, log) = match &reps[0].detail {
        Detail::None => (Detail::None, None),
        _ => detail(
            suite,
            &Parts {
                reps,
                merged: &out,
                latency: &every,
                hlogs,
            },
        )?,
    };
    out.detail = detail;
    Ok((out, log))
}

/// The shards' time series added interval by interval (every shard started the repetition, or
/// the test, at one agreed instant, so interval k covers the same span on each), as far as the
/// longest goes (a shard whose clients ended a little sooner has no share of the last ones):
/// counts summed, so the series adds up to the whole; percentiles from the shards' `.hlog`s
/// added (exact, and the merged log's intervals returned) when every shard's is given, else the
/// largest of the shards' (an upper bound).
pub fn add_series(
    series: &[&[IntervalRecord]],
    hlogs: Option<&[Vec<ReadInterval>]>,
) -> (Vec<IntervalRecord>, Option<Intervals>) {
    let n = series.iter().map(|s| s.len()).max().unwrap_or(0);
    let exact = hlogs.filter(|h| {
        h.len() == series.len() && h.iter().zip(series).all(|(x, s)| x.len() >= s.len())
    });
    let mut log: Intervals = Vec::new();
    let intervals = (0..n)
        .map(|k| {
            let having = || series.iter().filter_map(move |s| s.get(k));
            let at = |f: fn(&IntervalRecord) -> u64| having().map(f).sum();
            let most = |f: fn(&IntervalRecord) -> u64| having().map(f).max().unwrap_or(0);
            let mut iv = *having().next().expect("some series is this long");
            iv.responses = at(|i| i.responses);
            iv.ok = at(|i| i.ok);
            iv.errors = at(|i| i.errors);
            iv.connects = at(|i| i.connects);
            iv.open = at(|i| i.open);
            iv.in_flight = at(|i| i.in_flight);
            iv.max_ns = most(|i| i.max_ns);
            // The service times have no exact log: their largest is an upper bound.
            iv.service_p50_ns = most(|i| i.service_p50_ns);
            iv.service_p99_ns = most(|i| i.service_p99_ns);
            iv.service_p999_ns = most(|i| i.service_p999_ns);
            iv.service_max_ns = most(|i| i.service_max_ns);
            match exact {
                Some(h) => {
                    let mut all = new_histogram();
                    let mut span = None;
                    for (x, _) in h.iter().zip(series).filter(|(_, s)| k < s.len()) {
                        let _ = all.add(&x[k].histogram);
                        span = span.or(Some((x[k].start_ns, x[k].end_ns)));
                    }
                    iv.p50_ns = all.value_at_quantile(0.5);
                    iv.p99_ns = all.value_at_quantile(0.99);
                    iv.p999_ns = all.value_at_quantile(0.999);
                    iv.max_ns = iv.max_ns.max(all.max());
                    let (from, to) = span.unwrap_or((iv.start_ns, iv.end_ns));
                    log.push((from, to, all));
                }
                None => {
                    iv.p50_ns = most(|i| i.p50_ns);
                    iv.p99_ns = most(|i| i.p99_ns);
                    iv.p999_ns = most(|i| i.p999_ns);
                }
            }
            iv
        })
        .collect();
    (intervals, exact.map(|_| log))
}

/// One kind of operation's figures over the shards: counts added, histograms merged exactly
/// (a mix's request's service time and failures by class too).
fn merge_op(reps: &[&Rep], op: &str) -> Result<OpFigures, MergeError> {
    let (mut h, mut service) = (new_histogram(), new_histogram());
    let mut out = OpFigures::of(0, 0, &h);
    let (mut any, mut any_service) = (false, false);
    for (k, f) in reps
        .iter()
        .enumerate()
        .filter_map(|(k, r)| Some((k, r.by_op.get(op)?)))
    {
        out.count += f.count;
        out.errors += f.errors;
        out.weight = out.weight.or(f.weight);
        for (class, n) in &f.error_classes {
            *out.error_classes.entry(class.clone()).or_default() += n;
        }
        if let Some(text) = &f.histogram {
            add_encoded(&mut h, text, &format!("shard {k}'s {op}"))?;
            any = true;
        }
        if let Some(text) = &f.service_histogram {
            add_encoded(
                &mut service,
                text,
                &format!("shard {k}'s {op} service time"),
            )?;
            any_service = true;
        }
    }
    out.latency_ns = latency_summary(&h);
    out.histogram = any.then(|| encode(&h));
    if any_service {
        out.service_ns = latency_summary(&service);
        out.service_histogram = Some(encode(&service));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_of_different_lengths_add_up_to_the_whole() {
        let iv = |k: u64, ok: u64| IntervalRecord {
            start_ns: k * 100,
            end_ns: (k + 1) * 100,
            responses: ok,
            ok,
            p99_ns: 10 * ok,
            ..IntervalRecord::default()
        };
        let a = [iv(0, 5), iv(1, 6), iv(2, 1)];
        let b = [iv(0, 7), iv(1, 8)];
        let (sum, log) = add_series(&[&a, &b], None);
        assert!(log.is_none());
        let ok: Vec<u64> = sum.iter().map(|i| i.ok).collect();
        assert_eq!(ok, [12, 14, 1], "the longest's last interval kept");
        assert_eq!(sum.iter().map(|i| i.ok).sum::<u64>(), 5 + 6 + 1 + 7 + 8);
        assert_eq!(sum[1].p99_ns, 80, "the largest of the shards' percentiles");
        assert_eq!(sum[2].start_ns, 200);
    }
}
