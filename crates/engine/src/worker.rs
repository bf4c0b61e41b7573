//! The worker loop: one loop for every schedule and every stop condition.
//!
//! The schedule decides when each operation is meant to start: in a closed loop, the moment the
//! previous one ended; in an open loop, `start + i × interval`. Latency is always counted from that
//! intended start, so a target that stalls cannot hide the stall (coordinated omission); in open
//! loop the service time from the actual send is recorded beside it. In a closed loop the two are
//! the same instant, so the loop reads the clock once per operation.
//!
//! The loop itself allocates nothing, takes no lock and makes no system call besides the clock read
//! (vDSO) and whatever the operation does.

use crate::clock::Clock;
use crate::recorder::{Outcome, Recorder};
use crate::schedule::Arrivals;
use std::sync::atomic::{AtomicBool, Ordering};

/// When operations are meant to start.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// Each operation starts when the previous one ends.
    Closed,
    /// Operations start at the arrival times, whether or not the previous one has ended.
    Open(Arrivals),
}

impl Schedule {
    /// The intended start of the next operation: in a closed loop the end of the previous one
    /// (`prev_done`), in an open loop the next arrival after `start`; `None` when an open
    /// schedule has run out.
    #[inline]
    pub fn next(&mut self, start: u64, prev_done: u64) -> Option<u64> {
        match self {
            Schedule::Closed => Some(prev_done),
            Schedule::Open(a) => a.next_ns().map(|t| start + t),
        }
    }

    pub fn is_open(&self) -> bool {
        matches!(self, Schedule::Open(_))
    }
}

/// When the loop ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this many operations.
    Count(u64),
    /// At the first operation intended to start this long after the loop's start.
    Duration { ns: u64 },
    /// At whichever comes first: a duration, or a count (a bound on a fast target).
    DurationOrCount { ns: u64, count: u64 },
}

impl Stop {
    /// True when operation `i`, intended `since_start_ns` after the start, must not run.
    #[inline]
    pub fn reached(self, i: u64, since_start_ns: u64) -> bool {
        match self {
            Stop::Count(n) => i >= n,
            Stop::Duration { ns } => since_start_ns >= ns,
            Stop::DurationOrCount { ns, count } => since_start_ns >= ns || i >= count,
        }
    }
}

/// How a loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopEnd {
    /// Clock reading when the loop started.
    pub start_ns: u64,
    /// Clock reading when the last operation ended.
    pub end_ns: u64,
    /// Operations run.
    pub ops: u64,
    /// True when the interrupt flag stopped the loop early.
    pub interrupted: bool,
}

impl LoopEnd {
    pub fn elapsed_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

/// Runs `op(i)` for i = 0, 1, … under `schedule` until `stop` or `interrupt`, recording each.
#[inline]
pub fn run<F>(
    clock: &Clock,
    schedule: &mut Schedule,
    stop: Stop,
    interrupt: &AtomicBool,
    rec: &mut Recorder,
    mut op: F,
) -> LoopEnd
where
    F: FnMut(u64) -> Outcome,
{
    let start = clock.now_ns();
    let mut prev_done = start;
    let mut i: u64 = 0;
    let mut interrupted = false;
    let open = schedule.is_open();
    while let Some(intended) = schedule.next(start, prev_done) {
        if stop.reached(i, intended - start) {
            break;
        }
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let sent = if open {
            clock.wait_until(intended);
            clock.now_ns()
        } else {
            intended
        };
        let outcome = op(i);
        let done = clock.now_ns();
        if open {
            results::histogram::record(&mut rec.service, done - sent);
        }
        rec.record(done - intended, outcome);
        prev_done = done;
        i += 1;
    }
    LoopEnd {
        start_ns: start,
        end_ns: prev_done,
        ops: i,
        interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{ArrivalKind, RateProfile};

    #[test]
    fn closed_loop_count_records_each_operation_once() {
        let clock = Clock::new_virtual();
        let mut rec = Recorder::new();
        let stop = AtomicBool::new(false);
        let end = run(
            &clock,
            &mut Schedule::Closed,
            Stop::Count(100),
            &stop,
            &mut rec,
            |_| {
                clock.advance(1_000);
                Ok(8)
            },
        );
        assert_eq!(end.ops, 100);
        // One clock read per operation (1 virtual ns each) on top of the 1 µs the op takes.
        assert_eq!(end.elapsed_ns(), 100 * 1_001);
        assert_eq!(rec.latency.len(), 100);
        assert_eq!(rec.latency.max(), rec.latency.min());
        assert!(rec.latency.max().abs_diff(1_001) <= 1);
        assert_eq!(rec.bytes, 800);
        assert!(rec.service.is_empty(), "closed loop keeps one histogram");
    }

    #[test]
    fn closed_loop_duration_stops_at_the_first_op_past_it() {
        let clock = Clock::new_virtual();
        let mut rec = Recorder::new();
        let stop = AtomicBool::new(false);
        let end = run(
            &clock,
            &mut Schedule::Closed,
            Stop::Duration { ns: 10_000 },
            &stop,
            &mut rec,
            |_| {
                clock.advance(3_000);
                Ok(0)
            },
        );
        assert_eq!(end.ops, 4, "starts at 0, 3, 6, 9 µs; 12 µs is past the end");
    }

    #[test]
    fn open_loop_charges_a_stall_to_every_operation_queued_behind_it() {
        // 1 op every 1 ms; each takes 100 µs, except op 10 which stalls for 50 ms. In a closed
        // loop only one sample would be slow; in open loop the ~50 ops meant to start during the
        // stall each wait for it, and latency counts from their intended start.
        let clock = Clock::new_virtual();
        let mut rec = Recorder::new();
        let stop = AtomicBool::new(false);
        let end = run(
            &clock,
            &mut Schedule::Open(Arrivals::new(
                RateProfile::constant(1_000.0, 10_000_000_000),
                ArrivalKind::Constant,
                1,
            )),
            Stop::Count(1_000),
            &stop,
            &mut rec,
            |i| {
                clock.advance(if i == 10 { 50_000_000 } else { 100_000 });
                Ok(0)
            },
        );
        assert_eq!(end.ops, 1_000);
        // Op 10 ends at 60.1 ms; the backlog then drains at 100 µs per op, so op k ends at
        // 60.1 + 0.1 (k - 10) ms against an intended start of k ms: over 1 ms late for k = 10..=64.
        let slow = rec.latency.count_between(1_000_001, u64::MAX);
        assert_eq!(slow, 55, "operations that waited behind the stall");
        assert_eq!(rec.service.count_between(1_000_000, u64::MAX), 1);
        assert!(rec.latency.max() >= 50_000_000);
        // Service times: 999 × 100 µs and one 50 ms.
        assert!(rec.service.value_at_quantile(0.99).abs_diff(100_000) < 100);
    }

    #[test]
    fn interrupt_stops_the_loop() {
        let clock = Clock::new_virtual();
        let mut rec = Recorder::new();
        let stop = AtomicBool::new(false);
        let end = run(
            &clock,
            &mut Schedule::Closed,
            Stop::Count(1_000),
            &stop,
            &mut rec,
            |i| {
                if i == 5 {
                    stop.store(true, Ordering::Relaxed);
                }
                Ok(0)
            },
        );
        assert!(end.interrupted);
        assert_eq!(end.ops, 6);
    }
}
