//! What one worker records: a latency histogram, counters and errors by class.
//!
//! One recorder per worker, merged after the run, so recording takes no lock. Recording an
//! operation touches only memory the recorder already owns, except when a latency beyond any
//! seen before widens the histogram (a few times per run: it starts small and grows in powers of
//! two, so a recorder per client costs the range its client saw, not an hour's worth each);
//! counters are plain integers, and an error's message is kept only for the first error of each
//! class.

use crate::driver::{ErrorClass, OpError};
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
        }
    }

    /// Records one operation's latency and outcome.
    #[inline]
    pub fn record(&mut self, latency_ns: u64, outcome: Outcome) {
        results::histogram::record(&mut self.latency, latency_ns);
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
