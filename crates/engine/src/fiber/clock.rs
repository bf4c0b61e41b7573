//! The scheduler's coarse clock, for deadlines far enough that a few microseconds do not
//! matter: the 30 s bound on every read, the end of a timed run.
//!
//! Reading the monotonic clock costs 25-50 ns on a virtual machine (kvm-clock's pvclock
//! protocol, in the vDSO), and a round trip through a driver read it about fourteen times where
//! its latencies need four (a statement's and its transaction's start and end): a third of the
//! generator's user time (sql select-only on PostgreSQL, 8 clients, perf, 2026-11-29). The
//! scheduler reads the clock once each time it wakes and before it resumes a fiber after
//! another has run; a fiber takes its far deadlines from that reading, which is behind by at
//! most the time the running fiber has run since it was resumed: such a deadline may come that
//! much early (microseconds, against a second or more), never late. The scheduler times its
//! own waits, and a fiber its latencies, on the clock itself.

use std::cell::Cell;
use std::time::{Duration, Instant};

pub use crate::timer::FAR;

thread_local! {
    /// The scheduler's last reading of the clock; `None` outside a scheduler.
    static NOW: Cell<Option<Instant>> = const { Cell::new(None) };
    /// Whether no fiber has run since that reading.
    static FRESH: Cell<bool> = const { Cell::new(false) };
}

/// Now, as the scheduler last read it (on a fiber), or as the clock says (elsewhere).
pub fn coarse_now() -> Instant {
    NOW.with(Cell::get).unwrap_or_else(Instant::now)
}

/// The deadline `d` from now: from the coarse clock when `d` is at least [`FAR`].
pub fn deadline_in(d: Duration) -> Instant {
    if d >= FAR {
        coarse_now() + d
    } else {
        Instant::now() + d
    }
}

/// Reads the clock for the scheduler of this thread: what [`coarse_now`] returns until the next.
pub(super) fn look() -> Instant {
    let now = Instant::now();
    NOW.with(|n| n.set(Some(now)));
    FRESH.with(|f| f.set(true));
    now
}

/// Before the scheduler resumes a fiber: the clock read again, unless none has run since.
pub(super) fn before_resume() {
    if !FRESH.with(|f| f.replace(false)) {
        NOW.with(|n| n.set(Some(Instant::now())));
    }
}

/// The scheduler of this thread has ended: [`coarse_now`] reads the clock again.
pub(super) fn forget() {
    NOW.with(|n| n.set(None));
}

/// A bound on a loop that may go on without waiting (a long reply read from a buffer, a server
/// that never stops sending): [`Bound::passed`] looks at the coarse clock each time, which
/// moves whenever the loop waits, and at the clock itself once every [`Bound::EVERY`] times.
#[derive(Debug)]
pub struct Bound {
    deadline: Instant,
    calls: u32,
}

impl Bound {
    pub const EVERY: u32 = 256;

    /// A bound `d` from now.
    pub fn new(d: Duration) -> Bound {
        Bound {
            deadline: deadline_in(d),
            calls: 0,
        }
    }

    /// Whether the deadline has passed.
    pub fn passed(&mut self) -> bool {
        self.calls = self.calls.wrapping_add(1);
        let now = if self.calls.is_multiple_of(Self::EVERY) {
            Instant::now()
        } else {
            coarse_now()
        };
        now > self.deadline
    }
}
