//! A nap before a generator thread on epoll waits (`--nap`, [`super::Generators::nap`]), taken
//! while it pays: while the first event of an idle turn comes within the nap, what arrives
//! during it wakes no one; once events come later than that, a nap is one sleep more before the
//! wait, and the thread waits at once until they come sooner again.

use mio::Events;
use std::io;
use std::time::{Duration, Instant};

/// The share of recent idle turns (in 256ths) whose first event came within the nap, at or
/// above which the thread naps.
const NAP_FROM: u32 = 128;

/// Each idle turn's weight in that share: an eighth.
const LEARN_SHIFT: u32 = 3;

pub(super) struct Napper {
    nap: Duration,
    /// Of recent idle turns, the share (×256) whose first event came within the nap.
    paid: u32,
}

impl Napper {
    /// A napper for a thread whose timer slack is already a microsecond (the scheduler's exact
    /// timer, [`crate::timer::Timer::new`], sets it), so a nap of 20 µs lasts 20 µs and not up
    /// to 70.
    pub(super) fn new(nap: Duration) -> Napper {
        Napper { nap, paid: 256 }
    }

    /// Whether the next idle turn naps (given sockets to wait on and no sooner deadline).
    pub(super) fn napping(&self) -> bool {
        !self.nap.is_zero() && self.paid >= NAP_FROM
    }

    /// Takes the events that are ready, waiting up to `timeout` (epoll's: whole milliseconds)
    /// for one through `poll`, for a scheduler whose next deadline is `wait` away and whose
    /// fibers wait `on_sockets` or not. Napping, with nothing ready, the thread first sleeps
    /// the nap on its own timer, epoll without a waiter, unless a deadline comes sooner: what
    /// arrives meanwhile wakes no one, and is taken when the nap ends. A close deadline's exact
    /// timer was armed before the nap; a far one's wait on epoll's milliseconds is then shorter
    /// by the nap (so it may end up to a millisecond early, never late).
    pub(super) fn wait(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
        wait: Option<Duration>,
        on_sockets: bool,
        mut poll: impl FnMut(&mut Events, Option<Duration>) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.nap.is_zero() || !on_sockets || wait.is_some_and(|w| w <= self.nap) {
            return poll(events, timeout);
        }
        if !self.napping() {
            // How soon this wait ends says whether a nap would pay again.
            let t = Instant::now();
            poll(events, timeout)?;
            self.learn(t.elapsed() <= self.nap);
            return Ok(());
        }
        poll(events, Some(Duration::ZERO))?;
        if !events.is_empty() {
            return Ok(());
        }
        crate::timer::sleep_ns(self.nap.as_nanos() as u64);
        poll(events, Some(Duration::ZERO))?;
        let caught = !events.is_empty();
        self.learn(caught);
        if caught {
            return Ok(());
        }
        let timeout = match wait {
            Some(w) if !super::close(wait) => super::epoll_timeout(Some(w - self.nap)),
            _ => timeout,
        };
        poll(events, timeout)
    }

    fn learn(&mut self, within: bool) {
        self.paid -= self.paid >> LEARN_SHIFT;
        if within {
            self.paid += 256 >> LEARN_SHIFT;
        }
    }
}
