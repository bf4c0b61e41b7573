//! The time series of a load run: each thread sends every interval it finishes to a collector,
//! which merges the threads' intervals once all have finished one, hands each to the run's
//! observer and the `.hlog`, and keeps a bounded series ([`Live`]).

use super::*;

/// One interval of the time series: what happened between `start_ns` and `end_ns` (from the
/// run's start), over every thread.
#[derive(Debug, Clone)]
pub struct Interval {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Latencies of the responses completed in the interval.
    pub latency: Histogram,
    /// Their service times (from the actual send).
    pub service: Histogram,
    pub requests: u64,
    pub responses: u64,
    pub ok: u64,
    pub connects: u64,
    /// Gauges at the interval's end: connections open, requests in flight (the threads' shares
    /// add; a running total holds the last interval's).
    pub open: u64,
    pub in_flight: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Failures by class ([`ErrorClass`] as index).
    pub errors: [u64; ErrorClass::COUNT],
}

impl Interval {
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// The record's entry for this interval.
    pub fn record(&self) -> results::IntervalRecord {
        results::IntervalRecord {
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            responses: self.responses,
            ok: self.ok,
            errors: self.error_count(),
            connects: self.connects,
            open: self.open,
            in_flight: self.in_flight,
            p50_ns: self.latency.value_at_quantile(0.5),
            p99_ns: self.latency.value_at_quantile(0.99),
            max_ns: self.latency.max(),
            p999_ns: self.latency.value_at_quantile(0.999),
            service_p50_ns: self.service.value_at_quantile(0.5),
            service_p99_ns: self.service.value_at_quantile(0.99),
            service_p999_ns: self.service.value_at_quantile(0.999),
            service_max_ns: self.service.max(),
        }
    }

    /// An interval with nothing in it yet. Its histograms grow to what they are given (record
    /// into them with [`results::histogram::record`]): a collector may make one for each client
    /// every interval, and one of the full range writes 270 KiB at once (at `-c 1000`, half a
    /// gigabyte a second).
    pub fn empty() -> Interval {
        Interval {
            start_ns: 0,
            end_ns: 0,
            latency: results::histogram::new_growing_histogram(),
            service: results::histogram::new_growing_histogram(),
            requests: 0,
            responses: 0,
            ok: 0,
            connects: 0,
            open: 0,
            in_flight: 0,
            bytes_in: 0,
            bytes_out: 0,
            errors: [0; ErrorClass::COUNT],
        }
    }

    /// Adds `o`: a thread's share of the same interval, or a later interval (a running total).
    pub fn add(&mut self, o: &Interval) {
        self.latency
            .add(&o.latency)
            .expect("histograms of one range always merge");
        self.service
            .add(&o.service)
            .expect("histograms of one range always merge");
        self.start_ns = self.start_ns.min(o.start_ns);
        self.end_ns = self.end_ns.max(o.end_ns);
        self.requests += o.requests;
        self.responses += o.responses;
        self.ok += o.ok;
        self.connects += o.connects;
        self.open += o.open;
        self.in_flight += o.in_flight;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        for (a, b) in self.errors.iter_mut().zip(o.errors) {
            *a += b;
        }
    }
}

/// The record keeps at most this many intervals per repetition (the `.hlog` keeps them all): a
/// longer run merges neighbours ([`results::IntervalRecord::merged`]). 10,000 × 112 bytes.
pub const MAX_RECORD_INTERVALS: usize = 10_000;

/// What a running load has done so far, updated by the collector as each interval ends: read by
/// checkpoints, the progress display and live metrics, and the source of the result's series.
/// Bounded: a cumulative histogram and a capped series.
#[derive(Debug, Clone)]
pub struct Live {
    /// The end of the last finished interval, from the run's start.
    pub elapsed_ns: u64,
    /// How long the run is meant to last, when known.
    pub planned_ns: Option<u64>,
    /// The intervals so far, summed (its `latency` is every response's so far).
    pub total: Interval,
    /// The last finished interval's figures.
    pub last: Option<results::IntervalRecord>,
    /// Every interval so far, at most [`MAX_RECORD_INTERVALS`].
    pub intervals: results::series::Capped<results::IntervalRecord>,
    /// When the load began (the intervals count from here); none before it did.
    pub started: Option<std::time::Instant>,
    /// The last [`RECENT`] intervals as they ended, never thinned: what a follower of the
    /// run (the live view, a push) reads between two progress reports.
    pub recent: std::collections::VecDeque<results::IntervalRecord>,
    /// What a response is called where it is told, short and long: ("resp", "responses") for a
    /// load, ("tx", "transactions") for the sql suite's.
    pub unit: (&'static str, &'static str),
}

/// Raw intervals kept for followers: more than end between two progress reports at the
/// shortest interval (10 ms, five reports a second).
pub const RECENT: usize = 64;

impl Live {
    pub fn new(planned_ns: Option<u64>) -> Live {
        Live::counting(planned_ns, ("resp", "responses"))
    }

    /// A live figure of responses called `unit` (short, long).
    pub fn counting(planned_ns: Option<u64>, unit: (&'static str, &'static str)) -> Live {
        Live {
            elapsed_ns: 0,
            planned_ns,
            total: Interval::empty(),
            last: None,
            intervals: results::series::Capped::new(
                MAX_RECORD_INTERVALS,
                results::IntervalRecord::merged,
            ),
            started: None,
            recent: std::collections::VecDeque::with_capacity(RECENT),
            unit,
        }
    }

    /// Back to nothing measured, for the next repetition.
    pub fn reset(&mut self) {
        *self = Live::counting(self.planned_ns, self.unit);
    }

    /// Adds a finished interval, the next after the last.
    pub fn add(&mut self, iv: &Interval) {
        self.total.add(iv);
        (self.total.open, self.total.in_flight) = (iv.open, iv.in_flight);
        self.elapsed_ns = iv.end_ns;
        let r = iv.record();
        self.last = Some(r);
        self.intervals.push(r);
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(r);
    }
}

/// What a thread tells the collector.
pub(super) enum Msg {
    /// A finished interval: the thread and the interval's index.
    Interval(usize, u64, Box<Interval>),
    /// The thread has finished (sent when its reporter is dropped, however it ended).
    Done(usize),
}

/// A thread's line to the collector; says `Done` when dropped.
pub(super) struct Reporter {
    pub(super) index: usize,
    pub(super) tx: std::sync::mpsc::Sender<Msg>,
}

impl Drop for Reporter {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Done(self.index));
    }
}

/// Merges the threads' intervals of the same index as soon as every thread has moved past it,
/// hands each merged interval to `observe` (the `.hlog`) and adds it to `live`. Holds only the
/// intervals not yet finished by every thread.
pub(super) fn collect(
    rx: std::sync::mpsc::Receiver<Msg>,
    threads: usize,
    live: &std::sync::Mutex<Live>,
    observe: &mut (dyn FnMut(&Interval) + Send),
) {
    let mut pending: std::collections::BTreeMap<u64, Interval> = Default::default();
    // The highest index each thread has reported (`u64::MAX` once it is done).
    let mut reached: Vec<Option<u64>> = vec![None; threads];
    let mut emit = |iv: Interval| {
        observe(&iv);
        if let Ok(mut l) = live.lock() {
            l.add(&iv);
        }
    };
    for msg in rx {
        match msg {
            Msg::Interval(t, k, iv) => {
                reached[t] = Some(k);
                match pending.get_mut(&k) {
                    Some(p) => p.add(&iv),
                    None => {
                        pending.insert(k, *iv);
                    }
                }
            }
            Msg::Done(t) => reached[t] = Some(u64::MAX),
        }
        let floor = reached.iter().map(|r| r.unwrap_or(0)).min().unwrap_or(0);
        let all_reported = reached.iter().all(Option::is_some);
        while let Some(entry) = pending.first_entry() {
            if all_reported && *entry.key() <= floor {
                emit(entry.remove());
            } else {
                break;
            }
        }
    }
    // Every sender is gone: whatever is left is final.
    for (_, iv) in std::mem::take(&mut pending) {
        emit(iv);
    }
}
