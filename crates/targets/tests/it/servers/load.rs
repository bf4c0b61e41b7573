//! The event-loop engine against dyno's reference servers: every framing, keep-alive and a
//! connection per request, closed and open loop, and servers that reset, send garbage, or are not
//! there at all. Loopback only; every run is bounded by a count or a short duration.

use engine::driver::ErrorClass;
use engine::load::{self, LoadModel, LoadResult, LoadSpec};
use engine::resolve::Drivers;
use engine::schedule::{ArrivalKind, RateProfile};
use engine::worker::Stop;
use host::reference::{Body, Fault, Kind, Server, Spec, TcpFraming};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use targets::Registry;

fn server(kind: Kind, body: Body, fault: Option<Fault>) -> Server {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    Server::start(
        l,
        Spec {
            kind,
            body,
            stall: None,
            fault,
            seed: 3,
            service: None,
        },
    )
    .unwrap()
}

/// A load model and the connections opened up front.
type Load = (LoadModel, usize);

fn spec(url: &str, opts: &[(&str, &str)], (model, connections): Load) -> LoadSpec {
    let parts = engine::plan::split_url(url).unwrap();
    let options: BTreeMap<String, String> = opts
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let rest = if Registry.query_options(parts.scheme) {
        parts.rest
    } else {
        &url[parts.scheme.len() + 1..]
    };
    let ep = Registry
        .configure(parts.scheme, rest, &options)
        .unwrap()
        .endpoint()
        .unwrap();
    LoadSpec {
        addr: ep.addr,
        protocol: ep.protocol,
        threads: 2,
        model,
        connections,
        seed: 1,
        timeout: Duration::from_secs(2),
        interval: Duration::from_millis(100),
        coalesce: engine::load::Coalesce::Auto,
        io: BACKEND.with(|b| b.get()),
        clients: Default::default(),
        shard: (0, 1),
        keep_sends: 0,
        start_at: None,
    }
}

fn closed(connections: usize, each: u64) -> Load {
    (
        LoadModel::Closed {
            stop: Stop::Count(each),
        },
        connections,
    )
}

/// An open loop at `per_s` for 500 ms.
fn open(per_s: f64, arrival: ArrivalKind, connections: usize, max_connections: u64) -> Load {
    (
        LoadModel::Open {
            profile: RateProfile::constant(per_s, 500_000_000),
            arrival,
            max_connections,
        },
        connections,
    )
}

/// Runs a load, and checks on every run that the intervals streamed while it ran add up to its
/// totals: every request, response, byte, connection, failure and latency lands in one interval.
fn run(s: &LoadSpec) -> LoadResult {
    let mut seen: Vec<load::Interval> = Vec::new();
    let live = std::sync::Mutex::new(load::Live::new(None));
    let r = load::run(s, &AtomicBool::new(false), &live, &mut |iv| {
        seen.push(iv.clone())
    })
    .unwrap();
    let sum = |f: fn(&load::Interval) -> u64| seen.iter().map(f).sum::<u64>();
    assert_eq!(sum(|i| i.requests), r.counters.requests);
    assert_eq!(sum(|i| i.responses), r.counters.responses);
    assert_eq!(sum(|i| i.ok), r.counters.ok);
    assert_eq!(sum(|i| i.bytes_in), r.counters.bytes_in);
    assert_eq!(sum(|i| i.bytes_out), r.counters.bytes_out);
    assert_eq!(sum(|i| i.connects), r.counters.connects);
    assert_eq!(sum(|i| i.error_count()), r.recorder.error_count());
    assert_eq!(sum(|i| i.latency.len()), r.recorder.latency.len());
    // In order, without overlap, and the record's series is the same intervals.
    assert!(
        seen.windows(2)
            .all(|w| w[0].end_ns <= w[1].start_ns + 1_000_000)
    );
    assert_eq!(seen.len(), r.intervals.len());
    r
}

thread_local! {
    /// The I/O backend this test's loads run on: every test runs on each (`on_each_backend!`).
    static BACKEND: std::cell::Cell<load::Io> = const { std::cell::Cell::new(load::Io::Epoll) };
}

/// Each test twice: on epoll, and on io_uring where this kernel allows it (skipped, saying so,
/// where it does not).
macro_rules! on_each_backend {
    (fn $name:ident() $body:block) => {
        mod $name {
            use super::*;
            #[test]
            fn epoll() {
                BACKEND.with(|b| b.set(load::Io::Epoll));
                $body
            }
            #[test]
            fn uring() {
                if let Err(why) = load::backend::uring_allowed() {
                    eprintln!("skipped on io_uring: {why}");
                    return;
                }
                BACKEND.with(|b| b.set(load::Io::Uring));
                $body
            }
        }
    };
}

/// Load tests measure timing: one at a time (taken before their servers start, whose stalls are
/// timed from their start), so they do not take each other's CPU.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn errors(r: &LoadResult, class: ErrorClass) -> u64 {
    r.recorder.errors[class as usize]
}

on_each_backend! {
fn http_keep_alive_gobench_model() {
    let _serial = serial();
    let s = server(Kind::Http, Body::Json, None);
    let url = format!("http://{}/build/version", s.addr());
    let r = run(&spec(&url, &[], closed(4, 250)));
    assert_eq!(r.counters.requests, 1000);
    assert_eq!(r.counters.responses, 1000);
    assert_eq!(r.counters.ok, 1000);
    assert_eq!(r.recorder.error_count(), 0);
    assert_eq!(
        r.counters.connects, 4,
        "keep-alive: one connection per client"
    );
    assert_eq!(r.recorder.latency.len(), 1000);
    assert_eq!(r.recorder.service.len(), 1000);
    assert!(r.counters.bytes_in > 1000 * 100);
    assert!(!r.intervals.is_empty());
    let in_intervals: u64 = r.intervals.iter().map(|i| i.responses).sum();
    assert_eq!(in_intervals, 1000, "every response lands in one interval");
}
}

on_each_backend! {
fn http_connection_per_request_and_non_2xx() {
    let _serial = serial();
    let s = server(Kind::Http, Body::Json, None);
    let url = format!("http://{}/status/404", s.addr());
    let r = run(&spec(&url, &[("keepalive", "false")], closed(2, 50)));
    assert_eq!(r.counters.responses, 100);
    assert_eq!(r.counters.connects, 100, "a connection per request");
    assert_eq!(r.counters.ok, 0);
    assert_eq!(
        errors(&r, ErrorClass::Application),
        100,
        "non-2xx are counted"
    );
    assert_eq!(
        r.recorder.latency.len(),
        100,
        "non-2xx responses still have a latency"
    );
}
}

on_each_backend! {
fn http_duration_stop() {
    let _serial = serial();
    let s = server(
        Kind::Http,
        Body::Sizes {
            min: 100,
            max: 5000,
        },
        None,
    );
    let url = format!("http://{}/", s.addr());
    let mode = (
        LoadModel::Closed {
            stop: Stop::Duration { ns: 300_000_000 },
        },
        8,
    );
    let r = run(&spec(&url, &[], mode));
    assert!(r.counters.responses > 100, "{}", r.counters.responses);
    assert_eq!(r.recorder.error_count(), 0);
    assert!(
        r.wall_ns >= 300_000_000 && r.wall_ns < 2_000_000_000,
        "{}",
        r.wall_ns
    );
}
}

on_each_backend! {
fn tcp_framings() {
    let _serial = serial();
    for (framing, on_connect, opts) in [
        (
            TcpFraming::Length4,
            false,
            vec![("payload", "GET\\n"), ("framing", "length:4")],
        ),
        (
            TcpFraming::Line,
            false,
            vec![("payload", "GET\\n"), ("framing", "delimiter:\\n")],
        ),
        (TcpFraming::Close, true, vec![("framing", "close")]),
    ] {
        let s = server(
            Kind::Tcp {
                framing: framing.clone(),
                on_connect,
            },
            Body::Sizes { min: 5, max: 20000 },
            None,
        );
        let r = run(&spec(&format!("tcp://{}", s.addr()), &opts, closed(3, 40)));
        assert_eq!(r.counters.responses, 120, "{framing:?}");
        assert_eq!(
            r.recorder.error_count(),
            0,
            "{framing:?}: {:?}",
            r.recorder.examples
        );
        let expect_connects = if framing == TcpFraming::Close { 120 } else { 3 };
        assert_eq!(r.counters.connects, expect_connects, "{framing:?}");
        // Sizes drawn from 5..=20000: the mean is near 10,000.
        let mean = r.counters.bytes_in as f64 / 120.0;
        assert!((5_000.0..15_000.0).contains(&mean), "{framing:?}: {mean}");
    }
}
}

on_each_backend! {
fn resets_and_garbage_are_counted_and_the_run_goes_on() {
    let _serial = serial();
    let s = server(Kind::Http, Body::Json, Some(Fault::Reset { every: 10 }));
    let r = run(&spec(&format!("http://{}/", s.addr()), &[], closed(2, 100)));
    assert_eq!(r.counters.requests, 200);
    assert_eq!(
        errors(&r, ErrorClass::Reset),
        20,
        "{:?}",
        r.recorder.examples
    );
    assert_eq!(r.counters.ok, 180);

    let s = server(Kind::Http, Body::Json, Some(Fault::Garbage { every: 4 }));
    let r = run(&spec(&format!("http://{}/", s.addr()), &[], closed(1, 40)));
    assert_eq!(
        errors(&r, ErrorClass::Protocol),
        10,
        "{:?}",
        r.recorder.examples
    );
    assert_eq!(r.counters.ok, 30);
}
}

on_each_backend! {
fn a_server_that_is_not_there_costs_errors_not_a_hang() {
    let _serial = serial();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let r = run(&spec(&format!("http://{addr}/"), &[], closed(2, 5)));
    assert_eq!(r.counters.requests, 10);
    assert_eq!(errors(&r, ErrorClass::Refused), 10);
    assert_eq!(r.counters.responses, 0);
}
}

on_each_backend! {
fn a_server_that_never_answers_times_out() {
    let _serial = serial();
    // A listener that accepts (the kernel does) but never reads or writes.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut s = spec(
        &format!("http://{}/", l.local_addr().unwrap()),
        &[],
        closed(2, 1),
    );
    s.timeout = Duration::from_millis(200);
    let r = run(&s);
    assert_eq!(errors(&r, ErrorClass::Timeout), 2);
    assert!(r.wall_ns < 1_000_000_000, "{}", r.wall_ns);
}
}

on_each_backend! {
fn open_loop_offers_the_stated_rate() {
    let _serial = serial();
    let s = server(Kind::Http, Body::Json, None);
    let mode = open(2_000.0, ArrivalKind::Constant, 4, 4);
    let r = run(&spec(&format!("http://{}/", s.addr()), &[], mode));
    assert!(
        (990..=1010).contains(&r.counters.requests),
        "{}",
        r.counters.requests
    );
    assert_eq!(r.counters.ok, r.counters.requests);
    assert_eq!(r.check.intended_per_s, Some(2_000.0));
    assert_eq!(
        r.check.lag.len(),
        r.counters.requests,
        "every arrival's dispatch lag is kept"
    );
    // Dispatch lag is dyno's own lateness: on an idle loopback it is microseconds.
    assert!(
        r.check.lag.value_at_quantile(0.5) < 1_000_000,
        "{}",
        r.check.lag.value_at_quantile(0.5)
    );
    let poisson = open(2_000.0, ArrivalKind::Poisson, 4, 16);
    let mut sp = spec(&format!("http://{}/", s.addr()), &[], poisson);
    sp.seed = 9;
    let r = run(&sp);
    assert!(
        (850..=1150).contains(&r.counters.requests),
        "{}",
        r.counters.requests
    );
}
}

on_each_backend! {
fn a_dense_open_loop_paces_its_sends_and_keeps_up() {
    // 20,000 requests a second (two threads, one every 100 µs each), paced: a thread sends in
    // batches every 200 µs and takes its responses in turns that do not wait; each response must still be
    // seen at once (on io_uring, a ring whose completions ran only in waits fell behind here
    // by seconds).
    let _serial = serial();
    let s = server(Kind::Http, Body::Json, None);
    let mode = open(20_000.0, ArrivalKind::Constant, 16, 64);
    let mut sp = spec(&format!("http://{}/", s.addr()), &[], mode);
    // Paced every 200 µs, whatever this machine's sleeps cost.
    sp.coalesce = engine::load::Coalesce::Fixed(200_000);
    let r = run(&sp);
    assert!(
        (9_900..=10_100).contains(&r.counters.requests),
        "{:?}",
        r.counters
    );
    assert_eq!(r.counters.unsent, 0, "{:?}", r.counters);
    assert_eq!(r.counters.ok, r.counters.requests, "{:?}", r.counters);
    // Responses the loop left waiting showed a p50 of 372 ms; a busy test machine (the
    // unoptimized build, other tests' database servers starting) shows tens of ms.
    let p50 = r.recorder.latency.value_at_quantile(0.5);
    assert!(p50 < 150_000_000, "p50 {p50} ns: responses waited for the loop");
}
}

on_each_backend! {
fn open_loop_opens_connections_up_to_the_limit_when_all_are_busy() {
    let _serial = serial();
    // The server stalls for 300 ms at its start: every request due meanwhile needs a connection
    // of its own, up to the limit of 12; the rest queue, and the queueing counts as latency.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let stall = host::reference::Stall {
        pause: Duration::from_millis(300),
        every: Duration::from_secs(60),
    };
    let s = Server::start(
        l,
        Spec {
            kind: Kind::Http,
            body: Body::Json,
            stall: Some(stall),
            fault: None,
            seed: 1,
            service: None,
        },
    )
    .unwrap();
    let mode = open(200.0, ArrivalKind::Constant, 2, 12);
    let r = run(&spec(&format!("http://{}/", s.addr()), &[], mode));
    assert_eq!(r.counters.connects, 12, "grew from 2 to the limit of 12");
    assert_eq!(r.counters.ok, r.counters.requests);
    assert!(
        r.counters.outstanding_max > 12,
        "requests queued beyond the connections"
    );
    assert!(
        r.recorder.latency.max() > 200_000_000,
        "queueing behind the stall is charged"
    );
}
}

on_each_backend! {
fn h2c_servers_that_are_absent_silent_or_broken_cost_errors_not_a_hang() {
    // HTTP/2's connections carry several requests each, and still nothing a server does (not
    // there, silent, answering garbage) hangs the run or loses count of a request.
    let _serial = serial();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let streams = [("streams", "3")];
    let r = run(&spec(&format!("h2c://{addr}/"), &streams, closed(2, 4)));
    assert_eq!(r.counters.requests, 2 * 3 * 4);
    assert_eq!(
        errors(&r, ErrorClass::Refused),
        24,
        "{:?}",
        r.recorder.examples
    );

    // Accepts (the kernel does), never answers: every request times out, and the run ends.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut s = spec(
        &format!("h2c://{}/", l.local_addr().unwrap()),
        &streams,
        closed(2, 1),
    );
    s.timeout = Duration::from_millis(200);
    let r = run(&s);
    assert_eq!(
        errors(&r, ErrorClass::Timeout),
        6,
        "{:?}",
        r.recorder.examples
    );
    assert!(r.wall_ns < 1_000_000_000, "{}", r.wall_ns);

    // Garbage instead of frames (the reference server's fault, on each request): a failure per
    // request, counted.
    let s = server(Kind::Http, Body::Json, Some(Fault::Garbage { every: 1 }));
    let r = run(&spec(
        &format!("h2c://{}/", s.addr()),
        &streams,
        closed(1, 2),
    ));
    assert_eq!(r.counters.requests, 6);
    assert_eq!(r.counters.ok, 0);
    let failed: u64 = r.recorder.errors.iter().sum();
    assert_eq!(failed, 6, "{:?}", r.recorder.examples);
    // Each connection's close is heard at once (none waits for its timeout).
    assert_eq!(
        errors(&r, ErrorClass::Timeout),
        0,
        "{:?}",
        r.recorder.examples
    );
    assert!(r.wall_ns < 1_000_000_000, "{}", r.wall_ns);
}
}

#[test]
fn auto_runs_every_protocol_on_io_uring_where_the_kernel_allows_it() {
    let _serial = serial();
    let s = server(Kind::Http, Body::Json, None);
    for url in [
        format!("http://{}/", s.addr()),
        format!("h2c://{}/", s.addr()),
    ] {
        let opts: &[(&str, &str)] = match url.starts_with("h2c") {
            true => &[("streams", "4")],
            false => &[],
        };
        let sp = LoadSpec {
            io: load::Io::Auto,
            ..spec(&url, opts, closed(2, 50))
        };
        let used = load::backend::choose(&sp).unwrap();
        match load::backend::uring_allowed() {
            Ok(()) => assert_eq!(used.backend, "io_uring", "{url}: {used:?}"),
            Err(_) => assert_eq!(used.backend, "epoll", "{url}: {used:?}"),
        }
        let r = run(&sp);
        assert_eq!(
            r.counters.ok, r.counters.requests,
            "{url}: {:?}",
            r.counters
        );
        assert_eq!(r.check.io.backend, used.backend, "{url}");
    }
}
