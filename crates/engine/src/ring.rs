//! io_uring, shared by the load engine's threads and the fibers' schedulers: whether this
//! process may use it (`--io auto|uring|epoll`, and why), and [`Ring`], a ring made the way
//! both use it: one thread submits, the kernel's work on completions waits for that thread's
//! next call, a turn submits what is queued and waits for completions in one system call, and
//! nothing the kernel holds outlives the ring (dropping it cancels everything and waits).

use io_uring::types::{CancelBuilder, SubmitArgs, Timespec};
use io_uring::{IoUring, opcode, squeue};
use std::io;
use std::time::Duration;

/// What the plan asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Io {
    /// io_uring where it can run, epoll otherwise.
    #[default]
    Auto,
    /// io_uring, or the run fails saying why not.
    Uring,
    Epoll,
}

impl Io {
    pub fn parse(text: &str) -> Option<Io> {
        match text.trim() {
            "auto" => Some(Io::Auto),
            "uring" | "io_uring" | "io-uring" => Some(Io::Uring),
            "epoll" => Some(Io::Epoll),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Io::Auto => "auto",
            Io::Uring => "uring",
            Io::Epoll => "epoll",
        }
    }
}

/// The backend that ran, and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoUsed {
    /// `io_uring` or `epoll`.
    pub backend: &'static str,
    pub reason: String,
}

/// Set (to anything) in dyno's environment, io_uring is taken as refused by the kernel: the
/// fallback's test, and a way out should a kernel misbehave.
pub const REFUSE_URING: &str = "DYNO_IO_URING_REFUSED";

/// The oldest kernel whose io_uring has all the backend uses: multishot receive (6.0), buffer
/// rings (5.19), deferred completion work (6.1).
const OLDEST_KERNEL: (u32, u32) = (6, 1);

/// This kernel's release, major and minor (`None` where it does not say).
fn kernel() -> Option<(u32, u32, String)> {
    // SAFETY: uname fills the struct it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    // SAFETY: the release is a NUL-terminated string within the struct.
    let release = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut n = release
        .split(|c: char| !c.is_ascii_digit())
        .map(str::parse::<u32>);
    match (n.next(), n.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => Some((major, minor, release)),
        _ => None,
    }
}

/// Whether this process may use io_uring as the backend does: a kernel new enough, and a ring
/// made and dropped; why not, if not.
pub fn uring_allowed() -> Result<(), String> {
    if std::env::var_os(REFUSE_URING).is_some() {
        return Err(format!("refused ({REFUSE_URING} is set)"));
    }
    match kernel() {
        Some((major, minor, _)) if (major, minor) >= OLDEST_KERNEL => {}
        Some((.., release)) => {
            return Err(format!(
                "needs Linux {}.{} or later (this is {release})",
                OLDEST_KERNEL.0, OLDEST_KERNEL.1
            ));
        }
        None => return Err("cannot tell this kernel's release".into()),
    }
    match io_uring::IoUring::new(8) {
        Ok(_) => Ok(()),
        Err(e) => Err(match e.raw_os_error() {
            Some(libc::EPERM) => format!(
                "refused by the kernel ({e}: kernel.io_uring_disabled, or a seccomp filter)"
            ),
            Some(libc::ENOSYS) => format!("not in this kernel ({e})"),
            _ => format!("refused ({e})"),
        }),
    }
}

/// The backend for `io`: io_uring where asked for or allowed, epoll otherwise; an error when
/// io_uring was asked for and cannot run.
pub fn choose(io: Io) -> Result<IoUsed, String> {
    let epoll = |reason: String| IoUsed {
        backend: "epoll",
        reason,
    };
    if io == Io::Epoll {
        return Ok(epoll("asked for (--io epoll)".into()));
    }
    let why_not = uring_allowed().map_err(|e| format!("io_uring {e}"));
    match (why_not, io) {
        (Ok(()), Io::Uring) => Ok(IoUsed {
            backend: "io_uring",
            reason: "asked for (--io uring)".into(),
        }),
        (Ok(()), _) => Ok(IoUsed {
            backend: "io_uring",
            reason: "the kernel allows it (--io auto)".into(),
        }),
        (Err(why), Io::Uring) => Err(format!(
            "--io uring: {why}; leave --io out (auto falls back to epoll) or give --io epoll"
        )),
        (Err(why), _) => Ok(epoll(format!("{why} (--io auto)"))),
    }
}

/// Why `--io auto` leaves the fibers' sockets (the store and sql suites' clients) on epoll.
pub const CLIENTS_ON_EPOLL: &str = "--io auto: the clients' sockets go on epoll, which measured \
    cheaper for them than io_uring (sql oltp_point_select against PostgreSQL, 8 clients in a \
    closed loop: 1.10x the CPU per transaction on io_uring, 0.90x the rate, 2026-11-27); \
    --io uring puts them on the ring";

/// The backend for the fibers' sockets: epoll under `--io auto` ([`CLIENTS_ON_EPOLL`]), else
/// as [`choose`] says.
pub fn choose_for_clients(io: Io) -> Result<IoUsed, String> {
    match io {
        Io::Auto => Ok(IoUsed {
            backend: "epoll",
            reason: CLIENTS_ON_EPOLL.into(),
        }),
        _ => choose(io),
    }
}

/// A completion: its user data, result and flags.
pub type Completion = (u64, i32, u32);

/// A thread's ring.
pub struct Ring {
    ring: IoUring,
    /// Completions taken from the queue by the last turn (reused).
    taken: Vec<Completion>,
    /// System calls made on the ring (each submit or wait is one).
    pub syscalls: u64,
}

impl Ring {
    /// A ring of `entries` submission entries (completions: twice as many).
    pub fn new(entries: u32) -> io::Result<Ring> {
        // One thread submits, and the kernel's work on completions waits for the thread's next
        // call rather than interrupting it (Linux 6.1); the kernel flags that work as pending,
        // so a turn that does not wait still takes it (without the flag, a paced open loop's
        // turns would never see a completion). Older kernels refuse the flags: a plain ring then.
        let ring = match IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .build(entries)
        {
            Ok(r) => r,
            Err(_) => IoUring::new(entries)?,
        };
        Ok(Ring {
            ring,
            taken: Vec::with_capacity(entries as usize * 2),
            syscalls: 0,
        })
    }

    pub fn inner(&self) -> &IoUring {
        &self.ring
    }

    /// Queues `sqe`; a full queue is submitted first. Whether it was queued (a kernel that
    /// takes nothing more: not).
    ///
    /// # Safety
    /// Whatever memory `sqe` names (a buffer to send from or receive into) must stay valid
    /// until its completion has been taken, or the ring dropped.
    pub unsafe fn push(&mut self, sqe: &squeue::Entry) -> bool {
        for _ in 0..3 {
            // SAFETY: the caller's promise.
            if unsafe { self.ring.submission().push(sqe) }.is_ok() {
                return true;
            }
            self.syscalls += 1;
            let _ = self.ring.submit();
        }
        false
    }

    /// Queues a cancel of the operation whose user data is `target` (its completion still
    /// comes, as cancelled or as done).
    pub fn cancel(&mut self, target: u64, user_data: u64) -> bool {
        let sqe = opcode::AsyncCancel::new(target)
            .build()
            .user_data(user_data);
        // SAFETY: a cancel names no memory.
        unsafe { self.push(&sqe) }
    }

    /// Queues a cancel of every operation in the kernel (each still completes, as cancelled or
    /// as done).
    pub fn cancel_all(&mut self, user_data: u64) -> bool {
        let sqe = opcode::AsyncCancel2::new(CancelBuilder::any())
            .build()
            .user_data(user_data);
        // SAFETY: a cancel names no memory.
        unsafe { self.push(&sqe) }
    }

    /// Hands the kernel what is queued, now (before a sleep, before a socket closes).
    pub fn flush(&mut self) {
        if !self.ring.submission().is_empty() {
            self.syscalls += 1;
            let _ = self.ring.submit();
        }
    }

    /// Submits what is queued and waits up to `timeout` (`None`: until a completion) for at
    /// least one completion, then takes every completion there is: [`Ring::taken`].
    pub fn turn(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.syscalls += 1;
        let submitted = match timeout {
            Some(t) if t.is_zero() => self.ring.submit(),
            Some(t) => {
                let ts = Timespec::new().sec(t.as_secs()).nsec(t.subsec_nanos());
                self.ring
                    .submitter()
                    .submit_with_args(1, &SubmitArgs::new().timespec(&ts))
            }
            None => self.ring.submit_and_wait(1),
        };
        match submitted {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => return Err(e),
        }
        self.taken.clear();
        for c in self.ring.completion() {
            self.taken.push((c.user_data(), c.result(), c.flags()));
        }
        Ok(())
    }

    /// Takes the completions there are, without a system call (after a wait elsewhere).
    pub fn reap(&mut self) {
        self.taken.clear();
        for c in self.ring.completion() {
            self.taken.push((c.user_data(), c.result(), c.flags()));
        }
    }

    /// The completions the last turn took; the caller hands the vector back with
    /// [`Ring::give_back`] so it is reused.
    pub fn take(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.taken)
    }

    pub fn give_back(&mut self, taken: Vec<Completion>) {
        self.taken = taken;
    }
}

impl Drop for Ring {
    /// Nothing the kernel still holds may touch memory once it is freed: every operation is
    /// cancelled, and the cancel's own end awaited (at most a second), before the ring goes.
    fn drop(&mut self) {
        const CANCEL: u64 = u64::MAX;
        let all = opcode::AsyncCancel2::new(CancelBuilder::any())
            .build()
            .user_data(CANCEL);
        // What is queued goes first, so the queue has room for the cancel.
        let _ = self.ring.submit();
        // SAFETY: the cancel entry refers to no memory of ours.
        if unsafe { self.ring.submission().push(&all) }.is_err() {
            return;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while std::time::Instant::now() < deadline {
            let ts = Timespec::new().nsec(50_000_000);
            let _ = (self.ring.submitter()).submit_with_args(1, &SubmitArgs::new().timespec(&ts));
            if self.ring.completion().any(|c| c.user_data() == CANCEL) {
                return;
            }
        }
    }
}
