//! The sql suite's figures as they come, pgbench's `-P 1`: each client adds its transactions to
//! an interval of its own, and a collector takes them all once a second and hands their sum to
//! the runner's [`Live`] — the progress lines, the live view, a push, an early stop on a broken
//! threshold. (The record keeps the whole repetition's figures, as before.)

use engine::driver::ErrorClass;
use engine::load::{Interval, Live};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Each interval's length.
const EVERY: Duration = Duration::from_secs(1);

/// How often the collector looks whether the clients have ended, at most.
const LOOK: Duration = Duration::from_millis(50);

pub(super) struct Feed {
    /// Each client's interval so far (a lock its client alone takes but once a second).
    clients: Vec<Mutex<Interval>>,
    /// When the clients started together: the intervals count from here.
    began: OnceLock<Instant>,
    /// Every client has ended: the collector tells what is left, and stops.
    ended: AtomicBool,
}

impl Feed {
    pub(super) fn new(clients: usize) -> Feed {
        Feed {
            clients: (0..clients)
                .map(|_| Mutex::new(Interval::empty()))
                .collect(),
            began: OnceLock::new(),
            ended: AtomicBool::new(false),
        }
    }

    /// The clients started at `at` (the first to say it is heard).
    pub(super) fn began(&self, at: Instant) {
        let _ = self.began.set(at);
    }

    /// Client `id`'s transaction: its latency (and in an open loop its service time), or the
    /// class of its failure.
    pub(super) fn record(&self, id: usize, outcome: Result<(u64, Option<u64>), ErrorClass>) {
        let Some(iv) = self.clients.get(id) else {
            return;
        };
        let mut iv = iv.lock().unwrap_or_else(PoisonError::into_inner);
        iv.requests += 1;
        iv.responses += 1;
        match outcome {
            Ok((took_ns, served_ns)) => {
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
        self.ended.store(true, Ordering::Release);
    }

    /// Until the clients end: once an interval, every client's part of it summed into `live`;
    /// at their end, the part interval left.
    pub(super) fn collect(&self, live: &Mutex<Live>) {
        let began = loop {
            if let Some(at) = self.began.get() {
                break *at;
            }
            if self.ended.load(Ordering::Acquire) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        if let Ok(mut l) = live.lock() {
            l.started = Some(began);
        }
        for k in 1u32.. {
            let edge = began + EVERY * k;
            let mut ended = self.ended.load(Ordering::Acquire);
            while !ended && Instant::now() < edge {
                std::thread::sleep(edge.saturating_duration_since(Instant::now()).min(LOOK));
                ended = self.ended.load(Ordering::Acquire);
            }
            let end = Instant::now().min(edge);
            let mut sum = Interval::empty();
            for c in &self.clients {
                let mut iv = c.lock().unwrap_or_else(PoisonError::into_inner);
                sum.add(&std::mem::replace(&mut *iv, Interval::empty()));
            }
            sum.start_ns = (EVERY * (k - 1)).as_nanos() as u64;
            sum.end_ns = end.saturating_duration_since(began).as_nanos() as u64;
            sum.open = self.clients.len() as u64;
            if (sum.end_ns > sum.start_ns || sum.responses > 0)
                && let Ok(mut l) = live.lock()
            {
                l.add(&sum);
            }
            if ended {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clients' transactions reach the live figures summed, by the interval they ended in,
    /// failures by class; what is left at the end, in a part interval.
    #[test]
    fn transactions_reach_the_live_figures_each_second() {
        let feed = Feed::new(2);
        let live = Mutex::new(Live::counting(None, ("tx", "transactions")));
        std::thread::scope(|s| {
            s.spawn(|| feed.collect(&live));
            feed.began(Instant::now());
            feed.record(0, Ok((1_000, None)));
            feed.record(1, Ok((3_000, Some(2_000))));
            feed.record(1, Err(ErrorClass::Timeout));
            std::thread::sleep(Duration::from_millis(1_100));
            feed.record(0, Ok((5_000, None)));
            feed.end();
        });
        let l = live.into_inner().unwrap();
        let ivs = l.intervals.to_vec();
        assert_eq!(ivs.len(), 2, "{ivs:?}");
        assert_eq!((ivs[0].start_ns, ivs[0].end_ns), (0, 1_000_000_000));
        assert_eq!((ivs[0].responses, ivs[0].ok, ivs[0].errors), (3, 2, 1));
        assert_eq!((ivs[1].start_ns, ivs[1].responses), (1_000_000_000, 1));
        assert!(ivs[1].end_ns > 1_000_000_000 && ivs[1].end_ns < 2_000_000_000);
        assert_eq!((l.total.responses, l.total.ok), (4, 3));
        // (To the histogram's precision.)
        assert!(
            (5_000..5_010).contains(&l.total.latency.max()),
            "{}",
            l.total.latency.max()
        );
        assert!(l.started.is_some());
    }
}
