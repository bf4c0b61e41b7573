//! What one worker records: a latency histogram, counters and errors by class.
//!
//! One recorder per worker, merged after the run, so recording takes no lock. Recording an
//! operation touches only memory the recorder already owns, except when a latency beyond any
//! seen before widens the histogram (a few times per run: it starts small and grows in powers of
//! two, so a recorder per client costs the range its client saw, not an hour's worth each);
//! counters are plain integers, and an error's message is kept only for the first error of each
//! class.

use crate::error::{ErrorClass, OpError};
use results::Histogram;

/// The outcome of one operation: bytes moved, or the failure.
pub type Outcome = Result<u64, OpError>;

#[derive(Debug, Clone)]
pub struct Recorder {
    /// Latency from the intended start (what a user waits).
    pub latency: Histogram,
    /// Service time from the actual send; kept only in open loop, where it differs.
    pub service: Histogram,
    pub ops: u64,
    pub bytes: u64,
    pub errors: [u64; ErrorClass::COUNT],
    pub examples: [Option<String>; ErrorClass::COUNT],
    /// A deferred recorder's latencies not yet in `latency` ([`Recorder::deferred`]).
    deferred: Vec<u64>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            latency: results::histogram::new_growing_histogram(),
            service: results::histogram::new_growing_histogram(),
            ops: 0,
            bytes: 0,
            errors: [0; ErrorClass::COUNT],
            examples: Default::default(),
            deferred: Vec::new(),
        }
    }

    /// A recorder that holds up to `capacity` latencies as they are and puts them into its
    /// histogram together: when it holds that many, and when merged. For a client that records
    /// a known, modest number of operations per test (the shootout's `-n`), 8 bytes each
    /// instead of a histogram's 64–130 KiB (at `-c 50`, most of dyno's memory besides the
    /// objects); for one that records between round trips (the sql suite's statements), one
    /// pass over its histogram's counts per `capacity` latencies, where each alone was a cache
    /// miss (0.3 µs, 2026-11-30). Its figures are read only through [`Recorder::merge`] into
    /// another recorder: its own `latency` lacks what it holds.
    pub fn deferred(capacity: usize) -> Recorder {
        let mut r = Recorder::new();
        r.deferred = Vec::with_capacity(capacity);
        r
    }

    /// Records one operation's latency and outcome.
    #[inline]
    pub fn record(&mut self, latency_ns: u64, outcome: Outcome) {
        if self.deferred.capacity() == 0 {
            results::histogram::record(&mut self.latency, latency_ns);
        } else {
            if self.deferred.len() == self.deferred.capacity() {
                for ns in self.deferred.drain(..) {
                    results::histogram::record(&mut self.latency, ns);
                }
            }
            self.deferred.push(latency_ns);
        }
        self.ops += 1;
        match outcome {
            Ok(bytes) => self.bytes += bytes,
            Err(e) => self.error(e),
        }
    }

    /// Counts a failed operation that has no latency to record (no response ever came).
    #[cold]
    pub fn fail(&mut self, e: OpError) {
        self.ops += 1;
        self.error(e);
    }

    #[cold]
    fn error(&mut self, e: OpError) {
        let i = e.class as usize;
        self.errors[i] += 1;
        if self.examples[i].is_none() {
            self.examples[i] = Some(e.message.into_owned());
        }
    }

    /// Failed operations of every class.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Adds another worker's records into this one.
    /// What these operations amount to in the record: count, errors, latency and histogram.
    pub fn figures(&self) -> results::OpFigures {
        results::OpFigures::of(self.ops, self.error_count(), &self.latency)
    }

    pub fn merge(&mut self, other: &Recorder) {
        self.latency
            .add(&other.latency)
            .expect("histograms of one range always merge");
        for &ns in &other.deferred {
            results::histogram::record(&mut self.latency, ns);
        }
        self.service
            .add(&other.service)
            .expect("histograms of one range always merge");
        self.ops += other.ops;
        self.bytes += other.bytes;
        for i in 0..ErrorClass::COUNT {
            self.errors[i] += other.errors[i];
            if self.examples[i].is_none() {
                self.examples[i].clone_from(&other.examples[i]);
            }
        }
    }

    /// Clears everything, keeping the allocations.
    /// Empties it for the next test (its histograms keep the range they grew to).
    pub fn reset(&mut self) {
        self.latency.reset();
        self.service.reset();
        self.deferred.clear();
        self.ops = 0;
        self.bytes = 0;
        self.errors = [0; ErrorClass::COUNT];
        self.examples = Default::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deferred_recorder_merges_to_what_a_plain_one_holds() {
        let mut plain = Recorder::new();
        let mut deferred = Recorder::deferred(3);
        for (i, ns) in [5u64, 70_000, 1_200_000, 9, 40_000_000]
            .into_iter()
            .enumerate()
        {
            let outcome = if i == 3 {
                Err(OpError::new(ErrorClass::Timeout, "late"))
            } else {
                Ok(10)
            };
            plain.record(ns, outcome.clone());
            deferred.record(ns, outcome);
        }
        // Three held, then put into its histogram when a fourth came; two held since.
        assert_eq!(deferred.latency.len(), 3);
        let (mut a, mut b) = (Recorder::new(), Recorder::new());
        a.merge(&plain);
        b.merge(&deferred);
        assert_eq!(a.latency, b.latency);
        assert_eq!((a.ops, a.bytes, a.errors), (b.ops, b.bytes, b.errors));
        deferred.reset();
        let mut c = Recorder::new();
        c.merge(&deferred);
        assert_eq!(c.latency.len(), 0, "reset drops what was deferred");
    }

    #[test]
    fn errors_are_counted_by_class_with_the_first_message() {
        let mut r = Recorder::new();
        r.record(10, Ok(300));
        r.record(20, Err(OpError::new(ErrorClass::Timeout, "first")));
        r.record(30, Err(OpError::new(ErrorClass::Timeout, "second")));
        r.record(40, Err(OpError::new(ErrorClass::Io, "disk")));
        assert_eq!(r.ops, 4);
        assert_eq!(r.bytes, 300);
        assert_eq!(r.error_count(), 3);
        assert_eq!(r.errors[ErrorClass::Timeout as usize], 2);
        assert_eq!(
            r.examples[ErrorClass::Timeout as usize].as_deref(),
            Some("first")
        );
        assert_eq!(r.latency.len(), 4);
    }

    #[test]
    fn merge_adds_counts_and_keeps_histograms_exact() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        a.record(1_000, Ok(1));
        b.record(2_000, Err(OpError::new(ErrorClass::Reset, "x")));
        a.merge(&b);
        assert_eq!(a.ops, 2);
        assert_eq!(a.latency.len(), 2);
        assert_eq!(a.errors[ErrorClass::Reset as usize], 1);
        assert_eq!(a.examples[ErrorClass::Reset as usize].as_deref(), Some("x"));
        a.reset();
        assert_eq!((a.ops, a.latency.len(), a.error_count()), (0, 0, 0));
    }
}
