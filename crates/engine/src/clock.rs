//! The clock every measurement reads.
//!
//! `Monotonic` is the real one: nanoseconds since an origin `Instant`, shared by every worker of a
//! case so their times are comparable. `Virtual` is a counter that moves when a driver says time
//! passed (the `mock:` target does), plus [`VIRTUAL_READ_NS`] each time it is read: with it the
//! engine, the reports and the CLI produce exact, repeatable numbers in tests, with no sleeping,
//! and work the driver does not charge for (a client-cache hit) still takes a known, non-zero
//! time. Each worker gets its own virtual clock, as each real client has its own timeline.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A source of nanosecond timestamps for one worker.
#[derive(Debug, Clone)]
pub enum Clock {
    /// Real time since `origin`.
    Monotonic(Instant),
    /// Simulated time, advanced by the driver.
    Virtual(Arc<AtomicU64>),
}

/// What reading a virtual clock costs, in virtual nanoseconds.
pub const VIRTUAL_READ_NS: u64 = 1;

/// Below this remaining wait the pacer spins instead of sleeping: sleeps overshoot by ~50-100 µs.
const SPIN_BELOW: Duration = Duration::from_micros(200);

impl Clock {
    /// A real clock whose zero is now.
    pub fn monotonic() -> Clock {
        Clock::Monotonic(Instant::now())
    }

    /// A simulated clock at zero.
    pub fn new_virtual() -> Clock {
        Clock::Virtual(Arc::new(AtomicU64::new(0)))
    }

    /// Nanoseconds since the clock's zero.
    #[inline]
    /// `t` on this clock (a virtual clock reads its own time).
    pub fn ns_at(&self, t: Instant) -> u64 {
        match self {
            Clock::Monotonic(origin) => t.saturating_duration_since(*origin).as_nanos() as u64,
            _ => self.now_ns(),
        }
    }

    pub fn now_ns(&self) -> u64 {
        match self {
            Clock::Monotonic(origin) => origin.elapsed().as_nanos() as u64,
            Clock::Virtual(t) => t.fetch_add(VIRTUAL_READ_NS, Ordering::Relaxed) + VIRTUAL_READ_NS,
        }
    }

    /// Lets `ns` nanoseconds pass: moves a virtual clock forward, sleeps on a real one.
    pub fn advance(&self, ns: u64) {
        match self {
            // On a fiber, the thread's other clients run meanwhile.
            Clock::Monotonic(_) => crate::fiber::sleep(Duration::from_nanos(ns)),
            Clock::Virtual(t) => {
                t.fetch_add(ns, Ordering::Relaxed);
            }
        }
    }

    /// Waits until the clock reads at least `t_ns`. Returns at once if that moment has passed.
    /// Sleeps for the bulk of a long wait, then spins, so it wakes within a microsecond or two.
    pub fn wait_until(&self, t_ns: u64) {
        match self {
            Clock::Virtual(t) => {
                t.fetch_max(t_ns, Ordering::Relaxed);
            }
            Clock::Monotonic(_) => loop {
                let now = self.now_ns();
                if now >= t_ns {
                    return;
                }
                let left = Duration::from_nanos(t_ns - now);
                if left > SPIN_BELOW {
                    crate::fiber::sleep(left - SPIN_BELOW / 2);
                } else if crate::fiber::in_fiber() {
                    // The thread's other clients run while this one waits.
                    crate::fiber::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_moves_only_when_told() {
        let c = Clock::new_virtual();
        assert_eq!(c.now_ns(), 1, "a reading costs 1 ns");
        c.advance(1_500);
        assert_eq!(c.now_ns(), 1_502);
        c.wait_until(1_000);
        assert_eq!(c.now_ns(), 1_503, "waiting for the past does not move time");
        c.wait_until(9_000);
        assert_eq!(c.now_ns(), 9_001);
    }

    #[test]
    fn monotonic_wait_until_does_not_return_early() {
        let c = Clock::monotonic();
        let target = c.now_ns() + 2_000_000;
        c.wait_until(target);
        assert!(c.now_ns() >= target);
    }
}
