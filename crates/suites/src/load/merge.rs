//! `dyno merge` of the load suite: the shards' load figures of one repetition as one — counts
//! summed, the service times' histograms added, the time series added interval by interval
//! (exact from the shards' `.hlog`s when found), every shard's generator self-check kept, and
//! their first sends interleaved into the merged inter-arrival histogram.

use results::histogram::{Histogram, encode, new_histogram};
use results::hlog::ReadInterval;
use results::merge::{Intervals, MergeError, Merged, Parts, add_encoded, add_series, refuse};
use results::rate::per_s;
use results::stats::latency_summary;
use results::*;

/// The merged load detail of one repetition (see `results::merge::MergeDetail`).
pub(super) fn detail(parts: &Parts) -> Merged {
    let loads: Vec<&LoadRep> = (parts.reps.iter())
        .map(|r| {
            (r.load())
                .ok_or_else(|| MergeError("a load case whose repetitions are not all load".into()))
        })
        .collect::<Result<_, _>>()?;
    let (l, intervals) = merge_load(&loads, parts.latency, parts.merged.wall_ns, parts.hlogs)?;
    Ok((Detail::Load(Box::new(l)), intervals))
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
    out.messages = merge_messages(loads)?;
    out.checks = Vec::new();
    for l in loads {
        results::CheckCount::add(&mut out.checks, &l.checks);
    }
    out.scenario = merge_iterations(loads)?;
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
        // One backend when every shard ran the same (each shard's own is in `shards`).
        io: g
            .iter()
            .map(|c| c.io.clone())
            .reduce(|a, b| a.filter(|a| Some(a) == b.as_ref()))
            .flatten(),
        io_reason: None,
        syscalls_per_request: (requests > 0)
            .then(|| {
                (loads.iter())
                    .map(|l| {
                        l.generator
                            .syscalls_per_request
                            .map(|s| s * l.requests as f64)
                    })
                    .sum::<Option<f64>>()
                    .map(|n| n / requests as f64)
            })
            .flatten(),
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

/// The shards' scenario iterations, added: counts, and histograms bucket by bucket.
fn merge_iterations(loads: &[&LoadRep]) -> Result<Option<results::Iterations>, MergeError> {
    let Some(first) = loads.iter().find_map(|l| l.scenario.as_ref()) else {
        return Ok(None);
    };
    let mut h = results::new_histogram();
    let (mut completed, mut failed) = (0, 0);
    for (k, it) in loads
        .iter()
        .enumerate()
        .filter_map(|(k, l)| Some((k, l.scenario.as_ref()?)))
    {
        completed += it.completed;
        failed += it.failed;
        if let Some(text) = &it.histogram {
            results::merge::add_encoded(&mut h, text, &format!("shard {k}'s iterations"))?;
        }
    }
    Ok(Some(results::Iterations {
        steps: first.steps.clone(),
        completed,
        failed,
        latency_ns: results::stats::latency_summary(&h),
        histogram: (!h.is_empty()).then(|| results::histogram::encode(&h)),
    }))
}

/// The shards' streamed messages, added: histograms bucket by bucket.
fn merge_messages(loads: &[&LoadRep]) -> Result<Option<Messages>, MergeError> {
    let (mut first, mut each) = (new_histogram(), new_histogram());
    let (mut calls, mut messages) = (0, 0);
    for (k, m) in loads.iter().enumerate() {
        let Some(m) = &m.messages else { continue };
        calls += m.calls;
        messages += m.messages;
        add_encoded(
            &mut first,
            &m.first_histogram,
            &format!("shard {k}'s first messages"),
        )?;
        add_encoded(
            &mut each,
            &m.each_histogram,
            &format!("shard {k}'s messages"),
        )?;
    }
    Ok((messages > 0).then(|| Messages::of(calls, messages, &first, &each)))
}
