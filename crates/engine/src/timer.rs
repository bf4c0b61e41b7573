//! A precise wake-up for the event loop.
//!
//! `epoll_wait` (and so mio) sleeps in whole milliseconds; an open loop at 5,000 requests/s per
//! thread needs to wake every 200 µs, on time. A `timerfd` armed for the next intended send wakes
//! the poll with nanosecond resolution, and the thread's timer slack is lowered to 1 µs so the
//! kernel does not batch the wake-up 50 µs late. Gaps shorter than one sleep's measured cost
//! ([`sleep_cost_ns`]) are spun instead.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub struct Timer {
    fd: OwnedFd,
    armed_for: u64,
}

impl Timer {
    pub fn new(registry: &Registry, token: Token) -> io::Result<Timer> {
        // SAFETY: plain syscalls; the descriptor is owned by the returned OwnedFd.
        let fd = unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64, 0, 0, 0);
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(Timer { fd, armed_for: 0 })
    }

    /// Arms the timer to fire `in_ns` from now, standing for the moment `at_ns` (the caller's
    /// clock); re-arming for the same moment is free.
    pub fn arm(&mut self, at_ns: u64, in_ns: u64) -> io::Result<()> {
        if self.armed_for == at_ns {
            return Ok(());
        }
        let ns = in_ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: a valid timerfd and a valid itimerspec.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed_for = at_ns;
        Ok(())
    }

    /// Notes that the timer fired, so arming it for the same moment again is not skipped (a
    /// wait shortened by the thread's lateness can fire before that moment).
    pub fn fired(&mut self) {
        self.armed_for = 0;
    }

    /// Acknowledges a firing (reads the expiry count) so the descriptor stops being readable.
    pub fn acknowledge(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into an 8-byte buffer from our descriptor.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        self.armed_for = 0;
    }
}

/// Sleeps `ns` on the monotonic clock (to within the thread's timer slack); a signal may end it
/// early, which only makes the caller look at its sockets sooner.
pub fn sleep_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid clock id and request; no remainder is asked for.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
}

/// What one short sleep costs this thread in CPU time, in ns: the median of a few 1 µs sleeps.
/// On bare metal that is a microsecond or two; on a virtual machine, where arming the timer
/// exits to the hypervisor, it can be 20 µs, and a thread that sleeps for every request spends
/// its core on sleeping. Takes well under a millisecond.
pub fn sleep_cost_ns() -> u64 {
    let mut costs = [0u64; 9];
    for c in &mut costs {
        let t0 = thread_cpu_ns();
        sleep_ns(1_000);
        *c = thread_cpu_ns().saturating_sub(t0);
    }
    costs.sort_unstable();
    costs[costs.len() / 2]
}

/// CPU time this thread has used, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time (user, system) this process has used, in nanoseconds.
pub fn process_cpu_ns() -> (u64, u64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// How late a thread's timed waits end, learnt as it runs, so it can wait that much less and
/// wake about on time. A virtual machine's timer wakes a sleeping thread tens of microseconds
/// late (42 µs at the median here, 2026-11-28), and in an open loop that lateness is a late
/// start: in the schedule lag and in every latency from the intended start. The wait for a
/// deadline is shortened by a low quantile (a fifth) of the lateness seen, so most waits still
/// end after the deadline, a little; one that ends before it polls the few microseconds left
/// (the caller's loop, not a sleep). A wait an event ended early teaches nothing.
#[derive(Debug, Default)]
pub struct Lateness {
    ahead_ns: u64,
    /// When the wait under way would end, were it on time.
    expect: Option<std::time::Instant>,
}

/// The quantile's step, and the most a wait is shortened by (a machine whose waits end later
/// than that should sleep less, not poll more).
const LATENESS_STEP_NS: u64 = 5_000;
const LATENESS_MOST_NS: u64 = 200_000;

/// A deadline at least this far needs no precision: the fibers' coarse clock serves for it
/// ([`crate::fiber::deadline_in`]), and [`Lateness`] neither shortens nor learns from a wait
/// this long.
pub const FAR: std::time::Duration = std::time::Duration::from_secs(1);

impl Lateness {
    /// How long to wait for a deadline `timeout` away: less what the waits learnt they overrun;
    /// zero (look, do not sleep) when no more than that is left.
    pub fn wait(&mut self, timeout: Option<std::time::Duration>) -> Option<std::time::Duration> {
        self.expect = None;
        let left = timeout?;
        if left >= FAR {
            // A far deadline (the bound on a read) is not what ends the wait: nothing to learn
            // from, nor worth reading the clock for.
            return Some(left);
        }
        let ahead = std::time::Duration::from_nanos(self.ahead_ns);
        if left <= ahead {
            return Some(std::time::Duration::ZERO);
        }
        let wait = left - ahead;
        self.expect = Some(std::time::Instant::now() + wait);
        Some(wait)
    }

    /// After the wait: learns from how late it ended, if it ran to its end.
    pub fn woke(&mut self) {
        if let Some(expect) = self.expect.take() {
            let now = std::time::Instant::now();
            if now >= expect {
                self.learn((now - expect).as_nanos() as u64);
            }
        }
    }

    /// One wait's lateness: the estimate moves up by a fifth of a step when it was later, down
    /// by four fifths when not, so it settles where a fifth of waits are no later than it.
    fn learn(&mut self, late_ns: u64) {
        self.ahead_ns = if late_ns > self.ahead_ns {
            (self.ahead_ns + LATENESS_STEP_NS / 5).min(LATENESS_MOST_NS)
        } else {
            self.ahead_ns.saturating_sub(LATENESS_STEP_NS * 4 / 5)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_wait_is_shortened_by_a_low_quantile_of_the_lateness_seen() {
        let mut l = Lateness::default();
        // Lateness of 30..50 µs, evenly: a fifth of them are at most 34 µs.
        for i in 0..5_000u64 {
            l.learn(30_000 + (i * 7_919) % 20_000);
        }
        assert!(
            (30_000..=38_000).contains(&l.ahead_ns),
            "{} ns ahead",
            l.ahead_ns
        );
        let ahead = Duration::from_nanos(l.ahead_ns);
        let wait = l.wait(Some(Duration::from_micros(500))).unwrap();
        assert_eq!(wait, Duration::from_micros(500) - ahead);
        // No more than that left: look, do not sleep; and no deadline, no timeout.
        assert_eq!(l.wait(Some(ahead)), Some(Duration::ZERO));
        assert_eq!(l.wait(None), None);
        // A machine that wakes very late is not chased past the cap.
        for _ in 0..10_000 {
            l.learn(10_000_000);
        }
        assert_eq!(l.ahead_ns, LATENESS_MOST_NS);
        // One that wakes on time brings it back to nothing.
        for _ in 0..1_000 {
            l.learn(0);
        }
        assert_eq!(l.ahead_ns, 0);
    }

    /// A wait shortened by the lateness can fire before the moment it stands for; once it has
    /// fired, arming for that moment again must arm it, or the next wait has no timer at all.
    #[test]
    fn a_timer_that_fired_is_armed_again_for_the_same_moment() {
        let mut poll = mio::Poll::new().unwrap();
        let mut events = mio::Events::with_capacity(4);
        let mut timer = Timer::new(poll.registry(), Token(7)).unwrap();
        for round in 0..2 {
            timer.arm(42, 1_000_000).unwrap();
            let start = std::time::Instant::now();
            let mut fired = false;
            while !fired && start.elapsed() < Duration::from_secs(5) {
                poll.poll(&mut events, Some(Duration::from_millis(100)))
                    .unwrap();
                fired = events.iter().any(|e| e.token() == Token(7));
            }
            assert!(fired, "round {round}: the timer never fired");
            timer.fired();
        }
    }

    #[test]
    fn a_wait_an_event_ended_early_teaches_nothing() {
        let mut l = Lateness::default();
        l.wait(Some(Duration::from_millis(500)));
        assert!(l.expect.is_some());
        l.woke();
        assert_eq!(l.ahead_ns, 0);
        assert!(l.expect.is_none());
        // A zero wait (a look) teaches nothing either.
        l.wait(Some(Duration::ZERO));
        std::thread::sleep(Duration::from_millis(1));
        l.woke();
        assert_eq!(l.ahead_ns, 0);
        // One that ran to its end and beyond does.
        l.wait(Some(Duration::from_micros(1)));
        std::thread::sleep(Duration::from_millis(1));
        l.woke();
        assert_eq!(l.ahead_ns, LATENESS_STEP_NS / 5);
        // A far wait is neither shortened nor watched: an event, not its deadline, ends it.
        let far = Duration::from_secs(30);
        assert_eq!(l.wait(Some(far)), Some(far));
        assert!(l.expect.is_none());
        assert_eq!(
            l.wait(Some(Duration::from_millis(10))),
            Some(Duration::from_millis(10) - Duration::from_nanos(l.ahead_ns))
        );
    }
}
