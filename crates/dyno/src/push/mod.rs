//! `--push URL` (repeatable): the run's figures sent, interval by interval as the run goes,
//! where teams already look — Prometheus remote write (`prom+remote://HOST:PORT/PATH`) and
//! InfluxDB 1.x's line protocol (`influx://HOST:PORT/DATABASE`). Each interval of a running load
//! is a point labelled with the run, target, test, repetition and shard; its figures are the
//! series `/metrics` names the same way ([`SERIES`]).
//!
//! Never in the run's way: the runner's thread only hands each report's points to a queue of
//! at most [`QUEUE`] batches per destination; a thread per destination sends whatever has
//! queued up in one request (at most [`post::TIMEOUT`] to connect, send and be answered). What
//! could not be queued (the queue full) or not be delivered (refused, no answer) is counted, and
//! the counts go in the record (`push[]`); the run goes on either way.

mod influx;
mod post;
mod prom;

use crate::follow::Follow;
use results::IntervalRecord;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// Batches waiting per destination, at most.
pub const QUEUE: usize = 1024;
/// Points one request carries, about (batches are not split): what a server takes in one body.
const MAX_REQUEST_POINTS: usize = 5000;

/// What an interval gives each pushed series: its name (the scheme of `/metrics`), what it is,
/// and its value.
pub type Figure = (&'static str, &'static str, fn(&IntervalRecord) -> f64);

pub const SERIES: [Figure; 13] = [
    (
        "dyno_interval_responses_per_second",
        "Responses per second in the interval.",
        |iv| iv.responses_per_s(),
    ),
    (
        "dyno_interval_latency_p50_seconds",
        "p50 latency in the interval, from each request's intended start.",
        |iv| iv.p50_ns as f64 / 1e9,
    ),
    (
        "dyno_interval_latency_p99_seconds",
        "p99 latency in the interval, from each request's intended start.",
        |iv| iv.p99_ns as f64 / 1e9,
    ),
    (
        "dyno_interval_latency_p999_seconds",
        "p99.9 latency in the interval, from each request's intended start.",
        |iv| iv.p999_ns as f64 / 1e9,
    ),
    (
        "dyno_interval_latency_max_seconds",
        "The longest latency in the interval.",
        |iv| iv.max_ns as f64 / 1e9,
    ),
    (
        "dyno_interval_service_p50_seconds",
        "p50 service time in the interval, from the actual send.",
        |iv| iv.service_p50_ns as f64 / 1e9,
    ),
    (
        "dyno_interval_service_p99_seconds",
        "p99 service time in the interval, from the actual send.",
        |iv| iv.service_p99_ns as f64 / 1e9,
    ),
    (
        "dyno_interval_service_p999_seconds",
        "p99.9 service time in the interval, from the actual send.",
        |iv| iv.service_p999_ns as f64 / 1e9,
    ),
    (
        "dyno_interval_service_max_seconds",
        "The longest service time in the interval.",
        |iv| iv.service_max_ns as f64 / 1e9,
    ),
    (
        "dyno_interval_errors",
        "Failed requests in the interval.",
        |iv| iv.errors as f64,
    ),
    (
        "dyno_interval_connects",
        "Connections opened in the interval.",
        |iv| iv.connects as f64,
    ),
    (
        "dyno_interval_connections_open",
        "Connections open at the interval's end.",
        |iv| iv.open as f64,
    ),
    (
        "dyno_interval_requests_in_flight",
        "Requests in flight at the interval's end.",
        |iv| iv.in_flight as f64,
    ),
];

/// One interval of one repetition, labelled.
#[derive(Debug, Clone)]
pub struct Point {
    pub labels: Arc<Vec<(&'static str, String)>>,
    /// The interval's start, in milliseconds since the Unix epoch (its end may share a
    /// millisecond with the next one's, a repetition's short last interval with the one
    /// before it; no two start together).
    pub unix_ms: i64,
    pub iv: IntervalRecord,
}

/// Where points go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// Prometheus remote write: `HOST:PORT` and the path.
    Prom { addr: String, path: String },
    /// InfluxDB 1.x: `HOST:PORT` and the database.
    Influx { addr: String, db: String },
}

impl Dest {
    /// Reads a `--push` URL.
    pub fn parse(url: &str) -> Result<Dest, String> {
        let hint = "write prom+remote://HOST:PORT/api/v1/write or influx://HOST:PORT/DATABASE";
        let (scheme, rest) = (url.split_once("://")).ok_or_else(|| format!("{url:?}: {hint}"))?;
        let (addr, path) = rest.split_once('/').unwrap_or((rest, ""));
        if addr.contains('@') {
            let why = "dyno sends no credentials: push to an address that needs none";
            return Err(format!("{}: {why}", results::redact_url(url)));
        }
        let port = addr.rsplit_once(':').map(|(_, p)| p);
        if port.is_none_or(|p| p.parse::<u16>().is_err()) {
            return Err(format!("{url:?} names no HOST:PORT; {hint}"));
        }
        let db_char = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c);
        match scheme {
            "prom+remote" => Ok(Dest::Prom {
                addr: addr.into(),
                path: format!(
                    "/{}",
                    if path.is_empty() {
                        "api/v1/write"
                    } else {
                        path
                    }
                ),
            }),
            "influx" if !path.is_empty() && path.chars().all(db_char) => Ok(Dest::Influx {
                addr: addr.into(),
                db: path.into(),
            }),
            "influx" => Err(format!(
                "{url:?} names no database (letters, digits, _ - .): write influx://HOST:PORT/DATABASE"
            )),
            _ => Err(format!("{url:?}: unknown scheme {scheme:?}; {hint}")),
        }
    }

    /// Sends `points` in one request.
    fn send(&self, points: &[Point]) -> Result<(), String> {
        match self {
            Dest::Prom { addr, path } => {
                post::post(addr, path, &prom::HEADERS, &prom::body(points))
            }
            Dest::Influx { addr, db } => post::post(
                addr,
                &format!("/write?db={db}&precision=ms"),
                &[("Content-Type", "text/plain; charset=utf-8")],
                &influx::body(points),
            ),
        }
    }
}

/// What one destination took and did not.
#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    undelivered: AtomicU64,
    error: Mutex<Option<String>>,
}

struct Outlet {
    url: String,
    tx: Option<SyncSender<Vec<Point>>>,
    counts: Arc<Counts>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The run's pushes.
pub struct Push {
    outlets: Mutex<Vec<Outlet>>,
    stop: Arc<AtomicBool>,
    /// How the run's progress goes, and its clock's zero on the Unix clock (from its record).
    follow: Mutex<(Follow, Option<u64>)>,
    /// The run's own labels: its start (as its record says), its shard.
    base: Mutex<Vec<(&'static str, String)>>,
    /// Whether a warm-up repetition comes first (progress counts it as repetition 0).
    warmup: bool,
}

impl Push {
    /// Starts a sending thread for each of `urls`; `base` labels every point.
    pub fn start(
        urls: &[String],
        base: Vec<(&'static str, String)>,
        warmup: bool,
    ) -> Result<Push, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut outlets = Vec::new();
        for url in urls {
            let dest = Dest::parse(url)?;
            let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
            let counts = Arc::new(Counts::default());
            let (c, s) = (counts.clone(), stop.clone());
            let thread = std::thread::Builder::new()
                .name("dyno-push".into())
                .spawn(move || deliver(&dest, &rx, &c, &s))
                .map_err(|e| format!("no thread to push with: {e}"))?;
            outlets.push(Outlet {
                url: results::redact_url(url),
                tx: Some(tx),
                counts,
                thread: Some(thread),
            });
        }
        Ok(Push {
            outlets: Mutex::new(outlets),
            stop,
            follow: Mutex::new((Follow::default(), None)),
            base: Mutex::new(base),
            warmup,
        })
    }

    /// The run's record as it begins: its start names the run in every point (`run`), its
    /// clock's zero puts them on the calendar.
    pub fn named(&self, r: &results::RunRecord) {
        if let Ok(mut b) = self.base.lock()
            && !b.iter().any(|(k, _)| *k == "run")
        {
            b.insert(0, ("run", r.started.clone()));
        }
        if let Ok(mut f) = self.follow.lock() {
            f.1 = r.clock_zero_unix_ns.or(f.1);
        }
    }

    /// The run's clock: the repetitions' starts are read on it.
    pub fn clock(&self, clock: &engine::clock::Clock) {
        if let Ok(mut f) = self.follow.lock() {
            f.0.clock(clock);
        }
    }

    /// A progress report: the intervals that ended since the last, queued for every
    /// destination (counted as undelivered where its queue is full).
    pub fn progress(&self, p: &engine::runner::Progress) {
        let Ok(mut guard) = self.follow.lock() else {
            return;
        };
        let (follow, zero) = &mut *guard;
        let Some(zero) = *zero else { return };
        let Some(step) = follow.step(p) else { return };
        if step.intervals.is_empty() {
            return;
        }
        let r = step.rep;
        let mut labels = self.base.lock().map(|b| b.clone()).unwrap_or_default();
        labels.extend([
            ("target", r.target.clone()),
            ("test", r.test.clone()),
            (
                "rep",
                match r.measured(self.warmup).0 {
                    0 => "warm-up".into(),
                    n => n.to_string(),
                },
            ),
        ]);
        let labels = Arc::new(labels);
        let points: Vec<Point> = (step.intervals.iter())
            .map(|iv| Point {
                labels: labels.clone(),
                unix_ms: unix_ms(zero, r.started_ns + iv.start_ns),
                iv: *iv,
            })
            .collect();
        drop(guard);
        self.queue(points);
    }

    /// Queues `points` for every destination.
    pub fn queue(&self, points: Vec<Point>) {
        let Ok(outlets) = self.outlets.lock() else {
            return;
        };
        for o in outlets.iter() {
            let n = points.len() as u64;
            let Some(tx) = &o.tx else { continue };
            if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
                tx.try_send(points.clone())
            {
                o.counts.undelivered.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// Queues `points` for every destination, waiting for room (a saved run's points: nothing
    /// runs meanwhile).
    pub fn queue_waiting(&self, points: Vec<Point>) {
        let Ok(outlets) = self.outlets.lock() else {
            return;
        };
        for o in outlets.iter() {
            let n = points.len() as u64;
            let sent = o.tx.as_ref().map(|tx| tx.send(points.clone()));
            if !matches!(sent, Some(Ok(()))) {
                o.counts.undelivered.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// Sends what is queued (for at most a request's time more), then stops: what each
    /// destination took and did not, for the record.
    pub fn finish(&self, wait: std::time::Duration) -> Vec<results::PushRecord> {
        let Ok(mut outlets) = self.outlets.lock() else {
            return Vec::new();
        };
        for o in outlets.iter_mut() {
            o.tx = None;
        }
        let until = std::time::Instant::now() + wait;
        while outlets
            .iter()
            .any(|o| o.thread.as_ref().is_some_and(|t| !t.is_finished()))
            && std::time::Instant::now() < until
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Whatever is still queued is given up on, and counted.
        self.stop.store(true, Ordering::Relaxed);
        (outlets.iter_mut())
            .map(|o| {
                if let Some(t) = o.thread.take() {
                    let _ = t.join();
                }
                results::PushRecord {
                    url: o.url.clone(),
                    sent: o.counts.sent.load(Ordering::Relaxed),
                    undelivered: o.counts.undelivered.load(Ordering::Relaxed),
                    error: o.counts.error.lock().ok().and_then(|e| e.clone()),
                }
            })
            .collect()
    }
}

/// A time on the run's clock (`run_ns`), its zero at `zero` ns on the Unix clock, in ms since
/// the epoch.
fn unix_ms(zero: u64, run_ns: u64) -> i64 {
    ((u128::from(zero) + u128::from(run_ns)) / 1_000_000) as i64
}

impl engine::runner::Watch for Push {
    fn clock(&self, clock: &engine::clock::Clock) {
        Push::clock(self, clock);
    }
    fn fault(&self, _: &results::faults::FaultEvent) {}
}

/// A saved run's intervals as points, each at its time on the Unix clock: the run clock's zero
/// as its record says (or, in a record from before it was kept, the run's start, to the
/// second), so the points of a run sent again fall where its live ones did.
pub fn points_of(r: &results::RunRecord) -> Result<Vec<Point>, String> {
    let zero = match r.clock_zero_unix_ns {
        Some(z) => z,
        None => {
            let started = humantime::parse_rfc3339_weak(&r.started)
                .map_err(|e| format!("the record's start {:?}: {e}", r.started))?;
            (started.duration_since(std::time::UNIX_EPOCH)).map_or(0, |d| d.as_nanos() as u64)
        }
    };
    let mut points = Vec::new();
    for c in &r.cases {
        for (i, rep) in c.reps.iter().enumerate() {
            let Some((intervals, started_ns)) = rep.detail.series() else {
                continue;
            };
            let mut labels = vec![("run", r.started.clone()), ("suite", r.plan.suite.clone())];
            if let Some(s) = &r.plan.shard {
                labels.push(("shard", format!("{}/{}", s.index, s.count)));
            }
            labels.extend([
                ("target", c.target.clone()),
                ("test", c.test.clone()),
                ("rep", (i + 1).to_string()),
            ]);
            let labels = Arc::new(labels);
            points.extend(intervals.iter().map(|iv| Point {
                labels: labels.clone(),
                unix_ms: unix_ms(zero, started_ns + iv.start_ns),
                iv: *iv,
            }));
        }
    }
    Ok(points)
}

/// A destination's thread: takes every batch queued, sends them in one request, and counts.
fn deliver(dest: &Dest, rx: &Receiver<Vec<Point>>, counts: &Counts, stop: &AtomicBool) {
    while let Ok(first) = rx.recv() {
        let mut points = first;
        while points.len() < MAX_REQUEST_POINTS
            && let Ok(more) = rx.try_recv()
        {
            points.extend(more);
        }
        let n = points.len() as u64;
        if stop.load(Ordering::Relaxed) {
            counts.undelivered.fetch_add(n, Ordering::Relaxed);
            continue;
        }
        match dest.send(&points) {
            Ok(()) => counts.sent.fetch_add(n, Ordering::Relaxed),
            Err(e) => {
                if let Ok(mut last) = counts.error.lock() {
                    *last = Some(e);
                }
                counts.undelivered.fetch_add(n, Ordering::Relaxed)
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_urls_name_their_destination_or_say_how_to() {
        assert_eq!(
            Dest::parse("prom+remote://127.0.0.1:9090/api/v1/write"),
            Ok(Dest::Prom {
                addr: "127.0.0.1:9090".into(),
                path: "/api/v1/write".into()
            })
        );
        assert_eq!(
            Dest::parse("prom+remote://127.0.0.1:9090"),
            Ok(Dest::Prom {
                addr: "127.0.0.1:9090".into(),
                path: "/api/v1/write".into()
            })
        );
        assert_eq!(
            Dest::parse("influx://127.0.0.1:8086/dyno"),
            Ok(Dest::Influx {
                addr: "127.0.0.1:8086".into(),
                db: "dyno".into()
            })
        );
        for bad in [
            "influx://127.0.0.1:8086",
            "influx://h:1/a/b",
            "influx://h:1/a b",
            "http://h:1/",
            "prom+remote://nohost/x",
            "prom+remote://h:x/",
            "nonsense",
        ] {
            let e = Dest::parse(bad).unwrap_err();
            assert!(
                e.contains("://HOST:PORT") || e.contains("DATABASE"),
                "{bad}: {e}"
            );
        }
        let secret = Dest::parse("influx://admin:s3cret@db:8086/dyno").unwrap_err();
        assert!(
            secret.contains("no credentials") && !secret.contains("s3cret"),
            "{secret}"
        );
    }

    #[test]
    fn a_destination_that_never_answers_loses_points_counted_and_never_blocks_the_caller() {
        // A listener that takes connections and never answers: every request times out.
        let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("influx://{}/db", hole.local_addr().unwrap());
        let push = Push::start(&[url], vec![("run", "t".into())], false).unwrap();
        let point = Point {
            labels: Arc::new(Vec::new()),
            unix_ms: 0,
            iv: IntervalRecord::default(),
        };
        let t0 = std::time::Instant::now();
        for _ in 0..QUEUE + 100 {
            push.queue(vec![point.clone()]);
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(1),
            "queueing never waits"
        );
        let r = push.finish(std::time::Duration::from_millis(100));
        assert_eq!(
            push.finish(std::time::Duration::ZERO).len(),
            1,
            "finishing twice is harmless"
        );
        assert_eq!((r[0].sent, r[0].undelivered), (0, QUEUE as u64 + 100));
        assert!(
            r[0].error
                .as_deref()
                .is_some_and(|e| e.contains("127.0.0.1")),
            "{:?}",
            r[0].error
        );
        drop(hole);
    }
}
