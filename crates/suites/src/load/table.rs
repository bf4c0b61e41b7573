//! The load suite's table: one column per target (old and new implementation side by side), one
//! row per figure — gobench's fields, the seed's (connections per second, outstanding requests,
//! bytes moved, completed within 100 ms … 10 s), latency from the intended start (corrected)
//! beside service time (uncorrected), and the generator's verdict on itself.

use report::grid::{Doc, status_word};
use report::units;
use results::{Case, LatencySummary, LoadRep, RunRecord};
use std::io;

/// The repetition a column (and a flat format) shows: the best rate of the measured ones.
pub(super) fn best(c: &Case) -> Option<&LoadRep> {
    c.reps
        .iter()
        .filter_map(|r| r.load())
        .max_by(|a, b| a.responses_per_s.total_cmp(&b.responses_per_s))
}

use units::count;

fn pct(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}

type Row = (&'static str, fn(&Case, &LoadRep) -> String);

fn lat(s: Option<&LatencySummary>, f: fn(&LatencySummary) -> u64) -> String {
    s.map_or("-".to_string(), |s| units::latency(f(s)))
}

const TLS_ROW: &str = "TLS handshake p50 / p99 (per connection)";
/// Shown only when a column's responses streamed messages.
const MESSAGE_ROWS: [&str; 3] = [
    "messages per call (streamed)",
    "first message p50 / p99",
    "every message p50 / p99",
];

fn messages(l: &LoadRep, f: fn(&results::Messages) -> String) -> String {
    l.messages.as_ref().map_or("-".into(), f)
}

fn p50_p99(s: &Option<LatencySummary>) -> String {
    s.as_ref().map_or("-".into(), |s| {
        format!("{} / {}", units::latency(s.p50), units::latency(s.p99))
    })
}

const ROWS: &[Row] = &[
    ("requests", |_, l| count(l.requests)),
    ("successful", |_, l| count(l.ok)),
    ("network failed", |_, l| count(l.network_failed)),
    ("bad requests (non-2xx)", |_, l| count(l.non_2xx)),
    ("unsent (queue full or run over)", |_, l| count(l.unsent)),
    ("rate (responses/s)", |_, l| units::rate(l.responses_per_s)),
    ("read throughput", |_, l| {
        units::bytes_per_s(l.read_bytes_per_s)
    }),
    ("write throughput", |_, l| {
        units::bytes_per_s(l.write_bytes_per_s)
    }),
    ("test time", |c, l| {
        let _ = l;
        c.reps
            .iter()
            .filter(|r| r.load().is_some())
            .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
            .map_or("-".into(), |r| units::latency(r.wall_ns))
    }),
    ("connections/s (mean / peak)", |_, l| {
        format!(
            "{} / {}",
            units::rate(l.connects_per_s),
            units::rate(l.connects_peak_per_s)
        )
    }),
    // Shown only when a column spoke TLS.
    (TLS_ROW, |_, l| match &l.tls_handshake_ns {
        Some(h) => format!(
            "{} / {} ({} handshakes)",
            units::latency(h.p50),
            units::latency(h.p99),
            count(h.count)
        ),
        None => "-".into(),
    }),
    ("outstanding (mean / max)", |_, l| {
        format!("{:.1} / {}", l.outstanding_mean, count(l.outstanding_max))
    }),
    ("bytes moved (in + out)", |_, l| {
        units::bytes(l.bytes_in + l.bytes_out)
    }),
    ("bit rate (in + out)", |_, l| {
        units::bits_per_s((l.read_bytes_per_s + l.write_bytes_per_s) * 8.0)
    }),
    ("dropped (no response)", |_, l| count(l.dropped)),
    ("latency p50", |c, _| {
        lat(c.summary.as_ref().map(|s| &s.latency_ns), |s| s.p50)
    }),
    ("latency p90", |c, _| {
        lat(c.summary.as_ref().map(|s| &s.latency_ns), |s| s.p90)
    }),
    ("latency p99", |c, _| {
        lat(c.summary.as_ref().map(|s| &s.latency_ns), |s| s.p99)
    }),
    ("latency p99.9", |c, _| {
        lat(c.summary.as_ref().map(|s| &s.latency_ns), |s| s.p999)
    }),
    ("latency p99.99", |c, _| {
        lat(c.summary.as_ref().map(|s| &s.latency_ns), |s| s.p9999)
    }),
    ("latency max", |c, _| {
        lat(c.summary.as_ref().map(|s| &s.latency_ns), |s| s.max)
    }),
    ("service time p50 (uncorrected)", |c, _| {
        lat(
            c.summary.as_ref().and_then(|s| s.service_ns.as_ref()),
            |s| s.p50,
        )
    }),
    ("service time p99 (uncorrected)", |c, _| {
        lat(
            c.summary.as_ref().and_then(|s| s.service_ns.as_ref()),
            |s| s.p99,
        )
    }),
    ("service time max (uncorrected)", |c, _| {
        lat(
            c.summary.as_ref().and_then(|s| s.service_ns.as_ref()),
            |s| s.max,
        )
    }),
    (MESSAGE_ROWS[0], |_, l| {
        messages(l, |m| {
            format!("{:.2}", m.messages as f64 / m.calls.max(1) as f64)
        })
    }),
    (MESSAGE_ROWS[1], |_, l| {
        messages(l, |m| p50_p99(&m.first_ns))
    }),
    (MESSAGE_ROWS[2], |_, l| messages(l, |m| p50_p99(&m.each_ns))),
    ("within 100 ms", |_, l| within(l, 0)),
    ("within 500 ms", |_, l| within(l, 1)),
    ("within 1 s", |_, l| within(l, 2)),
    ("within 2 s", |_, l| within(l, 3)),
    ("within 5 s", |_, l| within(l, 4)),
    ("within 8 s", |_, l| within(l, 5)),
    ("within 10 s", |_, l| within(l, 6)),
    ("generator: intended / achieved rate", |_, l| {
        match l.generator.intended_per_s {
            Some(i) => format!(
                "{} / {}",
                units::rate(i),
                units::rate(l.generator.achieved_per_s)
            ),
            None => format!("closed / {}", units::rate(l.generator.achieved_per_s)),
        }
    }),
    ("generator: schedule lag p99", |_, l| {
        l.generator
            .lag_ns
            .as_ref()
            .map_or("-".into(), |s| units::latency(s.p99))
    }),
    ("generator: CPU per request", |_, l| {
        let g = &l.generator;
        match l.requests {
            0 => units::latency(g.cpu_ns_per_request as u64),
            n => format!(
                "{} (user {})",
                units::latency(g.cpu_ns_per_request as u64),
                units::latency(g.cpu_user_ns / n)
            ),
        }
    }),
    ("generator: syscalls per request", |_, l| {
        let g = &l.generator;
        match (&g.io, g.syscalls_per_request) {
            (Some(io), Some(n)) => format!("{n:.2} ({io})"),
            (None, Some(n)) => format!("{n:.2}"),
            (Some(io), None) => io.clone(),
            (None, None) => "-".into(),
        }
    }),
    ("generator: busiest thread", |_, l| {
        pct(l.generator.busiest_thread)
    }),
    ("generator: wake-ups per response", |_, l| {
        let g = &l.generator;
        if l.responses == 0 || g.wakeups == 0 {
            return "-".into();
        }
        let per = g.wakeups as f64 / l.responses as f64;
        if g.coalesced == 0 {
            format!("{per:.2}")
        } else {
            format!(
                "{per:.2} ({} coalesced, window {})",
                pct(g.coalesced as f64 / g.wakeups as f64),
                units::latency(g.window_mean_ns as u64)
            )
        }
    }),
    ("generator: CPU per sleep", |_, l| {
        match l.generator.sleep_cost_ns {
            0 => "-".into(),
            ns => units::latency(ns),
        }
    }),
    ("generator: verdict", |_, l| {
        if l.generator.valid {
            "valid".into()
        } else {
            "INVALID (see notes)".into()
        }
    }),
];

fn within(l: &LoadRep, i: usize) -> String {
    l.within.get(i).map_or("-".into(), |w| pct(w.share))
}

/// How the load was offered, in words: `closed loop, 50 connections, 10s`.
fn model(load: Option<&results::LoadPlanRecord>) -> String {
    match load {
        Some(l) if l.model == "open" => {
            let stages: Vec<String> = l
                .stages
                .iter()
                .map(|s| {
                    let rate = if s.from_per_s == s.to_per_s {
                        format!("{} req/s", units::rate(s.from_per_s))
                    } else {
                        format!(
                            "{}..{} req/s",
                            units::rate(s.from_per_s),
                            units::rate(s.to_per_s)
                        )
                    };
                    format!("{rate} for {}", units::latency(s.duration_ns))
                })
                .collect();
            let profile = match (&l.burst, l.stages.first()) {
                // A soak: one steady rate with bursts (the stages would be a long list).
                (Some(b), Some(s)) => format!(
                    "{} req/s for {} with a burst of {} req/s for {} every {}",
                    units::rate(s.from_per_s),
                    units::latency(l.duration_ns.unwrap_or(0)),
                    units::rate(b.rate_per_s),
                    units::latency(b.for_ns),
                    units::latency(b.every_ns)
                ),
                _ => stages.join(" then "),
            };
            format!(
                "open loop ({}), {profile}, {} connections (up to {})",
                l.arrival.as_deref().unwrap_or("constant"),
                l.connections,
                l.max_connections
            )
        }
        Some(l) => match (l.requests_per_connection, l.duration_ns) {
            (Some(n), _) => format!("closed loop, {} connections × {n} requests", l.connections),
            (None, Some(d)) => format!(
                "closed loop, {} connections, {}",
                l.connections,
                units::latency(d)
            ),
            _ => format!("closed loop, {} connections", l.connections),
        },
        None => "load".into(),
    }
}

pub fn render(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    let p = &r.plan;
    let model = model(p.load.as_ref());
    let reps = if p.reps == 1 {
        "1 repetition".to_string()
    } else {
        format!("best of {} (latencies over all)", p.reps)
    };
    let title = format!("dyno load · {model} · {reps}");
    doc.title(&title)?;
    doc.blank()?;
    let cases: Vec<&Case> = p
        .targets
        .iter()
        .filter_map(|t| r.cases.iter().find(|c| c.target == t.name))
        .collect();
    let header = vec![
        std::iter::once(String::new())
            .chain(cases.iter().map(|c| c.target.clone()))
            .collect::<Vec<_>>(),
        std::iter::once(String::new())
            .chain(cases.iter().map(|c| c.durability.clone()))
            .collect(),
    ];
    let tls = cases.iter().any(|c| {
        c.reps
            .iter()
            .any(|r| r.load().is_some_and(|l| l.tls_handshake_ns.is_some()))
    });
    let streamed = cases.iter().any(|c| {
        c.reps
            .iter()
            .any(|r| r.load().is_some_and(|l| l.messages.is_some()))
    });
    let body: Vec<Vec<String>> = ROWS
        .iter()
        .filter(|(name, _)| tls || *name != TLS_ROW)
        .filter(|(name, _)| streamed || !MESSAGE_ROWS.contains(name))
        .map(|(name, f)| {
            std::iter::once(name.to_string())
                .chain(cases.iter().map(|c| match (status_word(c), best(c)) {
                    (Some(w), None) => w.to_string(),
                    (_, Some(l)) => f(c, l),
                    (None, None) => "-".to_string(),
                }))
                .collect()
        })
        .collect();
    doc.table(&header, &body)?;

    let mut notes: Vec<String> = Vec::new();
    for c in &cases {
        if let (Some(w), Some(why)) = (status_word(c), &c.reason) {
            notes.push(format!("{}: {w}: {why}", c.target));
        }
        for (class, n) in &c.errors {
            let example = c.error_examples.get(class).map_or("", String::as_str);
            notes.push(format!("{}: {n} × {class} (first: {example})", c.target));
        }
    }
    if let Some(h) = p.load.as_ref().and_then(|l| l.hlog.as_ref()) {
        notes.push(format!("interval log (HdrHistogram .hlog): {h}"));
    }
    for f in r
        .faults
        .iter()
        .filter_map(|f| f.note.as_ref().map(|n| (f, n)))
    {
        notes.push(format!(
            "{} {} at {}: {}",
            f.0.action,
            f.0.target,
            seconds(f.0.start_ns),
            f.1
        ));
    }
    for c in &cases {
        super::requests::mix(c, doc)?;
        super::requests::scenario(c, doc)?;
        super::requests::checks(c, doc)?;
    }
    if !r.faults.is_empty() {
        faults(r, &cases, doc)?;
    }
    if !p.merged.is_empty() {
        shards(r, &cases, doc)?;
    }
    doc.footer(&notes, r.interrupted)
}

/// A merged run's shards: where each ran and how it met the others, and per target its own
/// self-check; then how evenly their sends interleaved.
fn shards(r: &RunRecord, cases: &[&Case], doc: &mut Doc) -> io::Result<()> {
    doc.blank()?;
    doc.heading("shards: clock offset to shard 0 (round trip) · per target: achieved rate, schedule lag p99, verdict")?;
    let header = vec![
        ["shard", "host", "clock offset"]
            .into_iter()
            .map(String::from)
            .chain(cases.iter().map(|c| c.target.clone()))
            .collect::<Vec<_>>(),
    ];
    let signed = |ns: i64| {
        let sign = if ns < 0 { "-" } else { "" };
        format!("{sign}{}", units::latency(ns.unsigned_abs()))
    };
    let body: Vec<Vec<String>> = (r.plan.merged.iter())
        .map(|s| {
            let check = |c: &&Case| {
                let g = (best(c))
                    .and_then(|l| l.shards.iter().find(|x| x.index == s.index))
                    .map(|x| &x.generator);
                match g {
                    None => "-".to_string(),
                    Some(g) => format!(
                        "{}/s · {} · {}",
                        units::count(g.achieved_per_s.round() as u64),
                        g.lag_ns.map_or("-".into(), |l| units::latency(l.p99)),
                        if g.valid { "valid" } else { "INVALID" }
                    ),
                }
            };
            [
                s.index.to_string(),
                s.host.clone(),
                match &s.rendezvous {
                    Some(_) => format!(
                        "{} ({})",
                        signed(s.clock_offset_ns),
                        units::latency(s.rtt_ns)
                    ),
                    None => "not met".into(),
                },
            ]
            .into_iter()
            .chain(cases.iter().map(check))
            .collect()
        })
        .collect();
    doc.table(&header, &body)?;
    for c in cases {
        if let Some(a) = best(c).and_then(|l| l.interarrival.as_ref())
            && let Some(g) = &a.gap_ns
        {
            doc.blank()?;
            doc.line(&format!(
                "{}: the shards' sends interleaved over the first {}: gap between consecutive sends p50 {} · p90 {} · p99 {} (one every {} asked)",
                c.target,
                units::latency(a.window_ns),
                units::latency(g.p50),
                units::latency(g.p90),
                units::latency(g.p99),
                units::latency(a.intended_gap_ns.round() as u64)
            ))?;
        }
    }
    Ok(())
}

/// A time on the run's clock, in seconds.
fn seconds(ns: u64) -> String {
    format!("{:.1}s", ns as f64 / 1e9)
}

/// The faults: when each was done and for how long, and per target the time until its service
/// recovered and the longest time with no successful response (the book, "Faults and levels").
fn faults(r: &RunRecord, cases: &[&Case], doc: &mut Doc) -> io::Result<()> {
    doc.blank()?;
    doc.heading("faults: recovery time / longest time without a successful response")?;
    let header = vec![
        ["fault", "at", "back after"]
            .into_iter()
            .map(String::from)
            .chain(cases.iter().map(|c| c.target.clone()))
            .collect::<Vec<_>>(),
    ];
    let body: Vec<Vec<String>> = (r.faults.iter().enumerate())
        .map(|(i, f)| {
            let back = f
                .end_ns
                .map_or("-".into(), |e| units::latency(e - f.start_ns));
            let effect = |c: &&Case| match c.faults.iter().find(|e| e.event == i) {
                None => "-".to_string(),
                Some(e) => format!(
                    "{} / {}",
                    e.recovery_ns.map_or("not recovered".into(), units::latency),
                    units::latency(e.unavailable_ns)
                ),
            };
            [
                format!("{} {}", f.action, f.target),
                seconds(f.start_ns),
                back,
            ]
            .into_iter()
            .chain(cases.iter().map(effect))
            .collect()
        })
        .collect();
    doc.table(&header, &body)
}
