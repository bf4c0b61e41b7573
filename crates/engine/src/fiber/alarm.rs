//! An exact timer for the epoll scheduler: `epoll_wait` sleeps in whole milliseconds, so a
//! deadline closer than one is waited for on a timerfd (nanoseconds) registered with the
//! thread's poller, instead of being polled for until it is due.

use mio::{Interest, Registry, Token, unix::SourceFd};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub(super) struct Alarm {
    fd: OwnedFd,
}

impl Alarm {
    /// A timerfd on the monotonic clock, registered with `registry` under `token`.
    pub(super) fn new(registry: &Registry, token: Token) -> io::Result<Alarm> {
        // SAFETY: timerfd_create takes no pointer; its result is checked.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(Alarm { fd })
    }

    /// Makes the poller wake `after` from now; setting it again replaces what was set (and
    /// clears a ring not yet read, so the next one is an event of its own).
    pub(super) fn set(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1)); // zero would disarm it
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec; the old setting is not asked for.
        let r =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}
