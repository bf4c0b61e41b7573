//! The sql suite's figures as they come, pgbench's `-P`: each client adds its transactions to
//! an interval of its own, and a collector takes them all once an interval (a second unless
//! `--interval` says) and hands their sum to the runner's [`Live`] — the progress lines, the live
//! view, a push, an early stop on a broken threshold, and the record's time series.

use engine::driver::ErrorClass;
use engine::load::{Interval, Live};
use engine::suite::RepCtx;
use results::Detail;
use results::hlog::Streamed;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// How often the collector looks whether the clients have ended, at most.
const LOOK: Duration = Duration::from_millis(50);

pub(super) struct Feed {
    /// Each client's interval so far, under a lock its client takes at each transaction and
    /// the collector once an interval, for a swap.
    clients: Vec<Mutex<Interval>>,
    /// Each interval's length.
    every: Duration,
    /// When the clients started together: the intervals count from here.
    began: OnceLock<Instant>,
    /// Every client has ended: the collector tells what is left, and stops.
    ended: AtomicBool,
    /// When they had: the last interval ends here, not when the collector saw it.
    ended_at: OnceLock<Instant>,
}

impl Feed {
    pub(super) fn new(clients: usize, every: Duration) -> Feed {
        Feed {
            every,
            clients: (0..clients)
                .map(|_| Mutex::new(Interval::empty()))
                .collect(),
            began: OnceLock::new(),
            ended: AtomicBool::new(false),
            ended_at: OnceLock::new(),
        }
    }

    /// The clients started at `at` (the first to say it is heard).
    pub(super) fn began(&self, at: Instant) {
        let _ = self.began.set(at);
    }

    /// Client `id`'s transaction: its latency (and in an open loop its service time), or the
    /// class of its failure. The rate told is of the transactions that succeeded, as
    /// pgbench's `-P` and the table's; the failures are counted apart.
    pub(super) fn record(&self, id: usize, outcome: Result<(u64, Option<u64>), ErrorClass>) {
        let Some(iv) = self.clients.get(id) else {
            return;
        };
        let mut iv = iv.lock().unwrap_or_else(PoisonError::into_inner);
        iv.requests += 1;
        match outcome {
            Ok((took_ns, served_ns)) => {
                iv.responses += 1;
                iv.ok += 1;
                results::histogram::record(&mut iv.latency, took_ns);
                if let Some(ns) = served_ns {
                    results::histogram::record(&mut iv.service, ns);
                }
            }
            Err(class) => iv.errors[class as usize] += 1,
        }
    }

    /// Every client has ended.
    pub(super) fn end(&self) {
        let _ = self.ended_at.set(Instant::now());
        self.ended.store(true, Ordering::Release);
    }

    /// Until the clients end: once an interval, every client's part of it summed into `live`;
    /// at their end, the part interval left. An interval ends when its parts are taken (a
    /// moment after its edge, if the collector woke late; edges it slept through are skipped,
    /// not told as intervals of a few microseconds) and the next begins there, so no
    /// transaction lands in another's. The interval the planned duration ends in waits up to
    /// half an interval more for the clients' last transactions (those begun before the end),
    /// so they are not an interval of their own, a few in a few milliseconds; the last interval
    /// ends when the clients did. With `hlog` (a path and a comment), each interval's latencies
    /// are appended there as it ends: an error says the log is incomplete (the figures went on).
    pub(super) fn collect(
        &self,
        live: &Mutex<Live>,
        hlog: Option<(&Path, &str)>,
    ) -> std::io::Result<()> {
        let Some(began) = self.start() else {
            return Ok(());
        };
        let start = SystemTime::now() - began.elapsed();
        let mut log = hlog.map(|(path, comment)| Streamed::create(path, start, comment));
        let planned = match live.lock() {
            Ok(mut l) => {
                l.started = Some(began);
                l.planned_ns
            }
            Err(_) => None,
        };
        let last = planned.map(|ns| began + Duration::from_nanos(ns));
        let (mut k, mut start_ns) = (1u32, 0);
        loop {
            let mut edge = began + self.every * k;
            if last.is_some_and(|l| l <= edge) {
                edge += self.every / 2;
            }
            let ended = self.wait_until(edge);
            let mut sum = self.take();
            sum.start_ns = start_ns;
            let end = match self.ended_at.get() {
                Some(at) if ended => *at,
                _ => Instant::now(),
            };
            sum.end_ns = (end.saturating_duration_since(began).as_nanos() as u64).max(start_ns);
            start_ns = sum.end_ns;
            sum.open = self.clients.len() as u64;
            if sum.end_ns > sum.start_ns || sum.requests > 0 {
                if let Some(Ok(l)) = log.as_mut() {
                    l.append(sum.start_ns, sum.end_ns, &sum.latency);
                }
                if let Ok(mut l) = live.lock() {
                    l.add(&sum);
                }
            }
            if ended {
                break;
            }
            // The next edge still ahead.
            let passed = (began.elapsed().as_nanos() / self.every.as_nanos().max(1)) as u32;
            k = (k + 1).max(passed + 1);
        }
        log.map_or(Ok(()), |l| l?.finish())
    }

    /// When the clients started together; none if they ended without starting.
    fn start(&self) -> Option<Instant> {
        loop {
            if let Some(at) = self.began.get() {
                return Some(*at);
            }
            if self.ended.load(Ordering::Acquire) {
                // They may have started and ended since the look above.
                return self.began.get().copied();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sleeps until `edge` or the clients' end: whether they have ended.
    fn wait_until(&self, edge: Instant) -> bool {
        let mut ended = self.ended.load(Ordering::Acquire);
        while !ended && Instant::now() < edge {
            std::thread::sleep(edge.saturating_duration_since(Instant::now()).min(LOOK));
            ended = self.ended.load(Ordering::Acquire);
        }
        ended
    }

    /// Every client's interval so far, summed; each client starts a fresh one.
    fn take(&self) -> Interval {
        let mut sum = Interval::empty();
        for c in &self.clients {
            let next = Interval::empty();
            // The lock held for the swap alone, not the sum.
            let part = {
                let mut held = c.lock().unwrap_or_else(PoisonError::into_inner);
                std::mem::replace(&mut *held, next)
            };
            sum.add(&part);
        }
        sum
    }
}

/// `detail` with the repetition's time series: the live figures' intervals (`--interval`, as
/// pgbench's `-P`), from when the clients started together.
pub(super) fn with_series(mut detail: Detail, ctx: &RepCtx) -> Detail {
    let Some(live) = ctx.live.and_then(|l| l.lock().ok()) else {
        return detail;
    };
    if let (
        Detail::Custom {
            intervals,
            started_ns,
            ..
        },
        Some(at),
    ) = (&mut detail, live.started)
    {
        *intervals = live.intervals.to_vec();
        *started_ns = Some(ctx.clock.ns_at(at));
    }
    detail
}

/// Tells client `id`'s figures as they come the failures `out` counted since its error counts
/// were `before`: a connection refused, which ends the client outside a transaction.
pub(super) fn tell_failures(
    (feed, id): (Option<&Feed>, usize),
    before: [u64; ErrorClass::COUNT],
    out: &super::ClientRun,
) {
    let Some(f) = feed else { return };
    for (class, (now, was)) in ErrorClass::ALL
        .into_iter()
        .zip(out.transactions.errors.iter().zip(before))
    {
        for _ in was..*now {
            f.record(id, Err(class));
        }
    }
}

/// Tells the figures' collector, when dropped, that the clients have ended.
pub(super) struct Ending<'a>(pub(super) Option<&'a Feed>);

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.0 {
            f.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clients' transactions reach the live figures summed, by the interval they ended in,
    /// failures by class and out of the rate; what is left at the end, in a part interval.
    #[test]
    fn transactions_reach_the_live_figures_each_second() {
        let feed = Feed::new(2, Duration::from_secs(1));
        let live = Mutex::new(Live::counting(None, ("tx", "transactions")));
        std::thread::scope(|s| {
            s.spawn(|| feed.collect(&live, None));
            feed.began(Instant::now());
            feed.record(0, Ok((1_000, None)));
            feed.record(1, Ok((3_000, Some(2_000))));
            feed.record(1, Err(ErrorClass::Timeout));
            std::thread::sleep(Duration::from_millis(1_600));
            feed.record(0, Ok((5_000, None)));
            feed.end();
        });
        let l = live.into_inner().unwrap();
        let ivs = l.intervals.to_vec();
        assert_eq!(ivs.len(), 2, "{ivs:?}");
        // The first ends when it was taken, at its second or a moment after; the next begins
        // there.
        let first_end = ivs[0].end_ns;
        assert!(
            (1_000_000_000..1_600_000_000).contains(&first_end),
            "{ivs:?}"
        );
        let first = (ivs[0].start_ns, ivs[0].responses, ivs[0].ok, ivs[0].errors);
        assert_eq!(first, (0, 2, 2, 1));
        assert_eq!((ivs[1].start_ns, ivs[1].responses), (first_end, 1));
        assert!(
            ivs[1].end_ns > first_end && ivs[1].end_ns < 2_000_000_000,
            "{ivs:?}"
        );
        assert_eq!((l.total.responses, l.total.error_count()), (3, 1));
        // (To the histogram's precision.)
        let max = l.total.latency.max();
        assert!((5_000..5_010).contains(&max), "{max}");
        assert!(l.started.is_some());
    }

    /// Each interval's latencies go to the `.hlog` as the live figures get them; edges the
    /// collector slept through (here: the clients started a second before it looked) make one
    /// late interval, not one of a few microseconds each.
    #[test]
    fn intervals_reach_the_log_and_a_late_collector_skips_the_edges_it_missed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hlog");
        let feed = Feed::new(1, Duration::from_millis(100));
        let live = Mutex::new(Live::counting(None, ("tx", "transactions")));
        let logged = std::thread::scope(|s| {
            feed.began(Instant::now() - Duration::from_secs(1));
            feed.record(0, Ok((1_000, None)));
            let collector = s.spawn(|| feed.collect(&live, Some((&path, "test"))));
            std::thread::sleep(Duration::from_millis(150));
            feed.record(0, Ok((2_000, None)));
            feed.record(0, Err(ErrorClass::Timeout));
            std::thread::sleep(Duration::from_millis(150));
            feed.end();
            collector.join().unwrap()
        });
        logged.unwrap();
        let ivs = live.into_inner().unwrap().intervals.to_vec();
        assert!((2..=5).contains(&ivs.len()), "{ivs:?}");
        assert!(ivs[0].end_ns >= 1_000_000_000, "{ivs:?}");
        // (The last ends when the clients did, which may be just past an edge.)
        assert!(
            ivs[1..ivs.len() - 1]
                .iter()
                .all(|iv| iv.end_ns - iv.start_ns > 1_000_000),
            "{ivs:?}"
        );
        let responses: u64 = ivs.iter().map(|iv| iv.responses).sum();
        assert_eq!(responses, 2);
        let read = results::hlog::read(&path).unwrap();
        assert_eq!(read.len(), ivs.len());
        let logged: u64 = read.iter().map(|r| r.histogram.len()).sum();
        assert_eq!(logged, 2, "the failure is not a latency");
    }

    /// What ends just after the planned duration (the transactions begun before it) is part of
    /// the last interval, which ends when the clients did, not when the collector looked.
    #[test]
    fn the_last_transactions_end_the_last_interval() {
        let feed = Feed::new(1, Duration::from_secs(1));
        let live = Mutex::new(Live::counting(Some(1_000_000_000), ("tx", "transactions")));
        let mut ended = None;
        std::thread::scope(|s| {
            s.spawn(|| feed.collect(&live, None));
            let began = Instant::now();
            feed.began(began);
            feed.record(0, Ok((1_000, None)));
            std::thread::sleep(Duration::from_millis(1_050));
            feed.record(0, Ok((2_000, None)));
            feed.end();
            ended = Some(began.elapsed().as_nanos() as u64);
        });
        let ivs = live.into_inner().unwrap().intervals.to_vec();
        assert_eq!(ivs.len(), 1, "{ivs:?}");
        assert_eq!((ivs[0].start_ns, ivs[0].responses), (0, 2));
        let end = ivs[0].end_ns;
        assert!(end >= 1_050_000_000 && end <= ended.unwrap(), "{ivs:?}");
    }
}
