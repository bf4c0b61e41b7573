//! A precise wake-up for the event loop.
//!
//! `epoll_wait` (and so mio) sleeps in whole milliseconds; an open loop at 5,000 requests/s per
//! thread needs to wake every 200 µs, on time. A `timerfd` armed for the next intended send wakes
//! the poll with nanosecond resolution, and the thread's timer slack is lowered to 1 µs so the
//! kernel does not batch the wake-up 50 µs late. Only gaps under [`SPIN_BELOW_NS`] are spun.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Gaps shorter than this are spun (poll with zero timeout): arming a timer costs more.
pub const SPIN_BELOW_NS: u64 = 20_000;

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
