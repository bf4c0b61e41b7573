//! One repetition of request/response load on one target, turned into the run record's figures.
//!
//! What a repetition reports: gobench's fields (requests, successful, network failed, non-2xx,
//! rate, read and write throughput, time), the seed's (connections per second sustained and in the
//! busiest second, requests outstanding, bytes moved, the share of responses within 100 ms … 10 s,
//! dropped requests), latency from the intended start (corrected) beside the service time from the
//! actual send (uncorrected), a time series, and the generator's verdict on itself.

use super::plan::{LoadModel, LoadParams, MaxLag};
use engine::driver::{Endpoint, ErrorClass};
use engine::load::{self, LoadResult, LoadSpec};
use results::stats::per_s;
use results::{Detail, GeneratorCheck, LoadRep, Rep, WithinShare};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

/// A load thread busier than this (CPU time over wall time) may have set the pace itself.
pub const MAX_BUSY: f64 = 0.95;
/// The latency bounds of the seed's "completed within" table.
pub const WITHIN_NS: [u64; 7] = [
    100_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    8_000_000_000,
    10_000_000_000,
];

/// What one repetition produced: the record's figures and the raw result.
pub struct LoadRun {
    pub rep: Rep,
    pub result: LoadResult,
    pub hlog: Option<PathBuf>,
}

fn spec(
    ep: &Endpoint,
    p: &LoadParams,
    (seed, clients, start_at): (
        u64,
        std::sync::Arc<std::sync::atomic::AtomicU64>,
        Option<SystemTime>,
    ),
) -> LoadSpec {
    let sharded = p.shard.is_some_and(|s| s.count > 1);
    LoadSpec {
        start_at,
        shard: p.shard.map_or((0, 1), |s| (s.index, s.count)),
        keep_sends: if sharded && matches!(p.model, LoadModel::Open { .. }) {
            results::MAX_SENDS_KEPT
        } else {
            0
        },
        addr: ep.addr,
        protocol: ep.protocol.clone(),
        threads: p.threads,
        model: p.model.clone(),
        connections: p.clients as usize,
        seed,
        timeout: Duration::from_nanos(p.timeout_ns),
        interval: Duration::from_nanos(p.interval_ns),
        coalesce: p.coalesce,
        io: p.io,
        clients,
    }
}

/// The repetition so far as a record's repetition, marked `partial`: counts, rates and latency
/// of the finished intervals; `cpu` is dyno's (user, system) CPU since it started.
pub fn partial_rep(live: &load::Live, p: &LoadParams, cpu: (u64, u64)) -> Rep {
    let t = &live.total;
    let mut recorder = engine::recorder::Recorder::new();
    recorder.latency = t.latency.clone();
    recorder.ops = t.responses;
    recorder.errors = t.errors;
    let intended_per_s = p.model.intended_per_s();
    let r = LoadResult {
        recorder,
        mix: None,
        by_request: Vec::new(),
        checks: Vec::new(),
        iterations: None,
        scenario_steps: Vec::new(),
        counters: load::Counters {
            requests: t.requests,
            responses: t.responses,
            ok: t.ok,
            bytes_out: t.bytes_out,
            bytes_in: t.bytes_in,
            connects: t.connects,
            ..Default::default()
        },
        intervals: live.intervals.to_vec(),
        handshake: results::new_histogram(),
        streamed: Default::default(),
        sends_ns: Vec::new(),
        zero_unix_ns: 0,
        check: load::SelfCheck {
            lag: results::new_histogram(),
            intended_per_s,
            achieved_per_s: per_s(t.requests as f64, live.elapsed_ns),
            cpu_user_ns: cpu.0,
            cpu_sys_ns: cpu.1,
            busiest_thread: 0.0,
            waits: Default::default(),
            io: load::IoUsed {
                backend: "",
                reason: String::new(),
            },
        },
        wall_ns: live.elapsed_ns,
        interrupted: true,
        started: std::time::Instant::now(),
    };
    let mut rep = rep_of(&r, p);
    if let Detail::Load(l) = &mut rep.detail {
        l.partial = true;
        l.service_ns = None;
    }
    rep
}

/// Runs one repetition against `ep`, its running figures in `live` (see [`load::Live::new`]).
/// With `hlog`, each interval is appended to the log as it ends (a run killed at any moment
/// leaves a log of whole intervals).
pub fn run_rep(
    ep: &Endpoint,
    p: &LoadParams,
    (seed, clients, start_at): (
        u64,
        std::sync::Arc<std::sync::atomic::AtomicU64>,
        Option<SystemTime>,
    ),
    interrupt: &AtomicBool,
    hlog: Option<(&Path, &str)>,
    live: &std::sync::Mutex<load::Live>,
) -> std::io::Result<LoadRun> {
    let started = SystemTime::now();
    let mut log = match hlog {
        Some((path, comment)) => Some(results::hlog::Streamed::create(path, started, comment)?),
        None => None,
    };
    let mut observe = |iv: &load::Interval| {
        if let Some(l) = log.as_mut() {
            l.append(iv.start_ns, iv.end_ns, &iv.latency);
        }
    };
    let result = load::run(
        &spec(ep, p, (seed, clients, start_at)),
        interrupt,
        live,
        &mut observe,
    )?;
    if let Some(l) = log {
        l.finish()?;
    }
    let hlog = hlog.map(|(path, _)| path.to_path_buf());
    let rep = rep_of(&result, p);
    Ok(LoadRun { rep, result, hlog })
}

/// The record's figures of one load result.
pub fn rep_of(r: &LoadResult, p: &LoadParams) -> Rep {
    let c = &r.counters;
    let rec = &r.recorder;
    let non_2xx = rec.errors[ErrorClass::Application as usize];
    let network_failed = rec.error_count() - non_2xx;
    let lat = &rec.latency;
    let within = WITHIN_NS
        .iter()
        .map(|&le| WithinShare {
            le_ns: le,
            share: if lat.is_empty() {
                0.0
            } else {
                lat.count_between(0, le) as f64 / lat.len() as f64
            },
        })
        .collect();
    let connects_peak_per_s = r
        .intervals
        .iter()
        .filter(|iv| iv.end_ns > iv.start_ns)
        .map(|iv| per_s(iv.connects as f64, iv.end_ns - iv.start_ns))
        .fold(0.0, f64::max);
    let intervals = r.intervals.clone();
    let load = LoadRep {
        requests: c.requests,
        responses: c.responses,
        ok: c.ok,
        non_2xx,
        network_failed,
        unsent: c.unsent,
        dropped: network_failed + c.unsent,
        bytes_in: c.bytes_in,
        bytes_out: c.bytes_out,
        responses_per_s: per_s(c.responses as f64, r.wall_ns),
        read_bytes_per_s: per_s(c.bytes_in as f64, r.wall_ns),
        write_bytes_per_s: per_s(c.bytes_out as f64, r.wall_ns),
        connects: c.connects,
        connects_per_s: per_s(c.connects as f64, r.wall_ns),
        connects_peak_per_s,
        outstanding_mean: c.outstanding_mean,
        outstanding_max: c.outstanding_max,
        within,
        service_ns: results::stats::latency_summary(&rec.service),
        tls_handshake_ns: results::stats::latency_summary(&r.handshake),
        checks: checks(r),
        scenario: r.iterations.as_ref().map(|it| results::Iterations {
            steps: r.scenario_steps.clone(),
            completed: it.ops - it.error_count(),
            failed: it.error_count(),
            latency_ns: results::stats::latency_summary(&it.latency),
            histogram: (!it.latency.is_empty()).then(|| results::histogram::encode(&it.latency)),
        }),
        messages: (r.streamed.messages > 0).then(|| {
            let s = &r.streamed;
            results::Messages::of(s.calls, s.messages, &s.first, &s.each)
        }),
        generator: generator(r, p),
        intervals,
        started_ns: None,
        partial: false,
        service_histogram: (!rec.service.is_empty())
            .then(|| results::histogram::encode(&rec.service)),
        start_unix_ns: None,
        shards: Vec::new(),
        interarrival: None,
        sends_ns: Vec::new(),
    };
    Rep {
        ops: c.responses,
        clients: p.clients,
        wall_ns: r.wall_ns,
        client_ns: Vec::new(),
        ops_per_s: load.responses_per_s,
        errors: rec.error_count(),
        latency_ns: results::stats::latency_summary(lat),
        by_op: by_request(r),
        detail: Detail::Load(Box::new(load)),
    }
}

/// How the generator did in `r`: its rate, lag, CPU, wake-ups, and its verdict on itself.
fn generator(r: &LoadResult, p: &LoadParams) -> GeneratorCheck {
    let c = &r.counters;
    let open = matches!(p.model, LoadModel::Open { .. });
    let lag = results::stats::latency_summary(&r.check.lag);
    let (valid, reason) = verdict(r, open.then_some(p.max_lag));
    let cpu = r.check.cpu_user_ns + r.check.cpu_sys_ns;
    GeneratorCheck {
        intended_per_s: r.check.intended_per_s,
        achieved_per_s: r.check.achieved_per_s,
        lag_ns: if open { lag } else { None },
        cpu_user_ns: r.check.cpu_user_ns,
        cpu_sys_ns: r.check.cpu_sys_ns,
        cpu_ns_per_request: if c.requests > 0 {
            cpu as f64 / c.requests as f64
        } else {
            0.0
        },
        busiest_thread: r.check.busiest_thread,
        wakeups: r.check.waits.wakeups,
        coalesced: r.check.waits.coalesced,
        window_mean_ns: r.check.waits.window_mean_ns(),
        sleep_cost_ns: r.check.waits.sleep_cost_ns,
        pace_ns: r.check.waits.pace_ns,
        io: (!r.check.io.backend.is_empty()).then(|| r.check.io.backend.to_string()),
        io_reason: (!r.check.io.backend.is_empty()).then(|| r.check.io.reason.clone()),
        syscalls_per_request: (c.requests > 0 && c.syscalls > 0)
            .then(|| c.syscalls as f64 / c.requests as f64),
        valid,
        reason,
    }
}

/// The figures by request: a mix's each under its name (latency, service time, failures by
/// class, weight); a single request as `request`.
fn by_request(r: &LoadResult) -> std::collections::BTreeMap<String, results::OpFigures> {
    let Some(mix) = &r.mix else {
        return [("request".to_string(), r.recorder.figures())].into();
    };
    let each = (mix.names().iter().zip(mix.weights())).zip(&r.by_request);
    each.map(|((name, weight), rec)| {
        let mut f = rec.figures();
        f.weight = Some(*weight);
        f.service_ns = results::stats::latency_summary(&rec.service);
        f.service_histogram =
            (!rec.service.is_empty()).then(|| results::histogram::encode(&rec.service));
        f.error_classes = (ErrorClass::ALL.iter())
            .filter(|c| rec.errors[**c as usize] > 0)
            .map(|c| (c.as_str().to_string(), rec.errors[*c as usize]))
            .collect();
        (name.clone(), f)
    })
    .collect()
}

/// The checks on responses, by request (its mix's name, or `request`) and check.
fn checks(r: &LoadResult) -> Vec<results::CheckCount> {
    let name = |w: usize| match &r.mix {
        Some(m) => m.names()[w].clone(),
        None => "request".to_string(),
    };
    (r.checks.iter().enumerate())
        .flat_map(|(w, checks)| {
            checks
                .iter()
                .map(move |(check, [passed, failed])| results::CheckCount {
                    request: name(w),
                    check: check.clone(),
                    passed: *passed,
                    failed: *failed,
                })
        })
        .collect()
}

/// Whether the generator kept up, and if not, how that was seen.
fn verdict(r: &LoadResult, max_lag: Option<MaxLag>) -> (bool, Option<String>) {
    if let Some(max_lag) = max_lag {
        // Every arrival the schedule makes is dispatched, so a generator that cannot keep the
        // rate shows as lateness, which is inside every corrected latency: weigh it against
        // the p99 it distorts. A paced thread sends up to its pace late by design; only
        // lateness beyond it counts.
        if r.check.lag.is_empty() {
            return (true, None);
        }
        let late = r
            .check
            .lag
            .value_at_quantile(0.99)
            .saturating_sub(r.check.waits.pace_ns);
        let p99 = r.recorder.latency.value_at_quantile(0.99);
        let limit = max_lag.limit_ns(p99);
        if late > limit {
            let against = match max_lag {
                MaxLag::Percent(_) => format!(
                    "{:.0}% of the corrected p99 of {} (limit {})",
                    late as f64 / p99.max(1) as f64 * 100.0,
                    results::units::latency(p99),
                    max_lag.label()
                ),
                MaxLag::Ns(ns) => format!("over the limit of {}", results::units::latency(ns)),
            };
            return (
                false,
                Some(format!(
                    "dyno dispatched 1% of requests {} or more late, beyond its pace: {against}; that much of the figure is dyno's own lateness, not the target's (--max-lag sets the limit)",
                    results::units::latency(late),
                )),
            );
        }
        return (true, None);
    }
    if r.check.busiest_thread >= MAX_BUSY {
        return (
            false,
            Some(format!(
                "a load thread was busy {:.0}% of the run: the generator, not the target, may have set the pace (add --threads or cores, or pin the target elsewhere)",
                r.check.busiest_thread * 100.0
            )),
        );
    }
    (true, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result whose dispatch lag p99 is `lag_p99_ns` and whose corrected latency p99 is
    /// `latency_p99_ns`.
    fn result(lag_p99_ns: u64, latency_p99_ns: u64, busiest: f64) -> LoadResult {
        let mut lag = results::new_histogram();
        // 98 dispatches on time and 2 late: the 99th percentile is the late value.
        lag.record_n(10_000, 98).unwrap();
        lag.record_n(lag_p99_ns.max(1), 2).unwrap();
        let mut recorder = engine::recorder::Recorder::new();
        recorder.latency.record_n(100_000, 98).unwrap();
        recorder.latency.record_n(latency_p99_ns.max(1), 2).unwrap();
        LoadResult {
            started: std::time::Instant::now(),
            recorder,
            mix: None,
            by_request: Vec::new(),
            checks: Vec::new(),
            iterations: None,
            scenario_steps: Vec::new(),
            counters: Default::default(),
            intervals: Vec::new(),
            handshake: results::new_histogram(),
            streamed: Default::default(),
            sends_ns: Vec::new(),
            zero_unix_ns: 0,
            check: engine::load::SelfCheck {
                lag,
                intended_per_s: Some(1000.0),
                achieved_per_s: 1000.0,
                cpu_user_ns: 0,
                cpu_sys_ns: 0,
                busiest_thread: busiest,
                waits: Default::default(),
                io: engine::load::IoUsed {
                    backend: "epoll",
                    reason: "a test's".into(),
                },
            },
            wall_ns: 1,
            interrupted: false,
        }
    }

    #[test]
    fn the_generator_is_judged_by_its_lag_against_the_p99_in_open_loop_and_its_cpu_in_closed() {
        let half = Some(MaxLag::DEFAULT);
        // Open loop: 1 % of dispatches 5 ms late against a corrected p99 of 6 ms: most of the
        // tail is dyno's own lateness, whatever its CPU.
        let (valid, why) = verdict(&result(5_000_000, 6_000_000, 0.5), half);
        assert!(!valid);
        assert_eq!(
            why.unwrap(),
            "dyno dispatched 1% of requests 5.00ms or more late, beyond its pace: 83% of the \
             corrected p99 of 6.00ms (limit 50%); that much of the figure is dyno's own \
             lateness, not the target's (--max-lag sets the limit)"
        );
        // The same lateness against a target whose p99 is 50 ms distorts it by a tenth: valid.
        // A busy thread alone does not make an open loop invalid: requests waiting for a
        // connection are the target's, charged to its latency.
        assert_eq!(
            verdict(&result(5_000_000, 50_000_000, 0.99), half),
            (true, None)
        );
        // A fixed limit is a fixed limit.
        let two_ms = Some(MaxLag::Ns(2_000_000));
        assert!(!verdict(&result(2_500_000, 50_000_000, 0.5), two_ms).0);
        assert_eq!(
            verdict(&result(1_500_000, 1_600_000, 0.5), two_ms),
            (true, None)
        );
        // A paced thread sends up to its pace late by design: only lateness beyond it counts.
        let mut paced = result(1_500_000, 2_000_000, 0.5);
        paced.check.waits.pace_ns = 1_000_000;
        assert_eq!(verdict(&paced, half), (true, None));
        paced.check.waits.pace_ns = 200_000;
        assert!(!verdict(&paced, half).0);
        // Closed loop: a load thread busy 95 % or more may have set the pace.
        let (valid, why) = verdict(&result(0, 0, 0.97), None);
        assert!(!valid);
        assert!(
            why.unwrap()
                .starts_with("a load thread was busy 97% of the run")
        );
        assert_eq!(verdict(&result(0, 0, 0.60), None), (true, None));
    }

    #[test]
    fn max_lag_is_a_share_or_a_time() {
        assert_eq!(MaxLag::parse("50%"), Ok(MaxLag::Percent(50.0)));
        assert_eq!(MaxLag::parse("2ms"), Ok(MaxLag::Ns(2_000_000)));
        assert_eq!(MaxLag::parse(" 10 % "), Ok(MaxLag::Percent(10.0)));
        // Written as given, never as a float that drifted (7% is not 7.000000000000001%).
        assert_eq!(MaxLag::parse("7%").unwrap().label(), "7%");
        assert_eq!(MaxLag::parse("12.5%").unwrap().label(), "12.5%");
        assert!(
            MaxLag::parse("0%")
                .unwrap_err()
                .0
                .contains("between 1% and 100%")
        );
        assert!(MaxLag::parse("150%").is_err());
        assert!(MaxLag::parse("0").is_err());
        assert!(MaxLag::parse("fast").is_err());
        assert_eq!(MaxLag::Percent(25.0).label(), "25%");
        assert_eq!(MaxLag::Ns(1_500_000).label(), "1500us");
        assert_eq!(MaxLag::Percent(50.0).limit_ns(3_000_000), 1_500_000);
    }
}
