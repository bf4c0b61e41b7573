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
