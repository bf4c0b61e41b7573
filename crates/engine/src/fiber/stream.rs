//! The sockets drivers wait on: a fiber's wait yields to its scheduler, a thread's polls; with deadlines.

use super::*;
use std::os::fd::{FromRawFd, IntoRawFd};

/// A TCP connection a driver reads and writes as a blocking stream; on a fiber, waiting yields.
///
/// The socket is non-blocking. On a fiber, it is registered with the fiber's scheduler the
/// first time it waits there (once per scheduler; edge-triggered), and a read that finds no
/// data parks the fiber until the poller says the socket is readable: one `recv` per reply in
/// the common case, with no `EAGAIN` try first. Outside a fiber, a wait is a `poll(2)`.
#[derive(Debug)]
pub struct Stream {
    pub(super) sock: TcpStream,
    pub(super) read_timeout: Option<Duration>,
    pub(super) write_timeout: Option<Duration>,
    /// Its registration with the schedulers that wait on it.
    pub(super) waiter: Waiter,
    /// Whether the last read drained the socket (the next one waits for the poller first).
    pub(super) drained: Cell<bool>,
    /// Its bytes on their way out through a ring, once it has written on one.
    pub(super) outbox: Option<Box<super::ring::Outbox>>,
    /// How long after its last write a reply may take as a whole (see [`Stream::open`]).
    reply_within: Option<Duration>,
    /// When the reply to the last write must have come by: no read waits past it.
    reply_by: Option<Instant>,
}

impl Stream {
    /// Connects within `timeout`: on a fiber the handshake's wait yields, so the thread's other
    /// clients go on meanwhile (a server whose listen queue is full drops the handshake, and
    /// the wait is the whole timeout); on a thread it blocks.
    pub fn connect(addr: &SocketAddr, timeout: Duration) -> io::Result<Stream> {
        if !in_fiber() {
            return Stream::from_std(TcpStream::connect_timeout(addr, timeout)?);
        }
        let sock = mio::net::TcpStream::connect(*addr)?;
        // SAFETY: the descriptor is the one mio just made, handed over whole.
        let sock = unsafe { TcpStream::from_raw_fd(sock.into_raw_fd()) };
        let s = Stream::from_std(sock)?;
        // Registered first, then marked not writable: the poller says when the handshake ends
        // (at once, if it already has).
        s.waiter.registration()?;
        s.not_ready(false);
        let waited = s.wait(false, Some(timeout));
        // On a ring the socket's reads and writes go through the ring: its events need not
        // wake the poller.
        if super::ring::on_ring() {
            s.waiter.forget();
        }
        waited?;
        match s.sock.take_error()? {
            Some(e) => Err(e),
            None => Ok(s),
        }
    }

    /// A connection for a request-reply driver: made within `connect`, without Nagle's delay,
    /// each of its reads and writes bounded by `each`, and what is read after a write by `each`
    /// from that write as a whole: a server that stops reading or answering, or that answers a
    /// byte at a time for ever, must not hold a client for ever.
    pub fn open(addr: &SocketAddr, connect: Duration, each: Duration) -> io::Result<Stream> {
        let mut s = Stream::connect(addr, connect)?;
        s.set_nodelay(true)?;
        s.set_timeouts(each);
        Ok(s)
    }

    /// Each read and write bounded by `each` from now on, and each reply as a whole from its
    /// request's last write.
    pub fn set_timeouts(&mut self, each: Duration) {
        self.set_read_timeout(Some(each));
        self.set_write_timeout(Some(each));
        self.reply_within = Some(each);
    }

    /// Wraps a connected socket (made non-blocking).
    pub fn from_std(sock: TcpStream) -> io::Result<Stream> {
        sock.set_nonblocking(true)?;
        Ok(Stream {
            waiter: Waiter::new(sock.as_raw_fd()),
            sock,
            read_timeout: None,
            write_timeout: None,
            drained: Cell::new(false),
            outbox: None,
            reply_within: None,
            reply_by: None,
        })
    }

    /// Whether the reply's bound has passed: a read then takes what has come, and may not wait.
    pub(super) fn reply_overdue(&self) -> bool {
        self.reply_by.is_some_and(|by| by <= clock::coarse_now())
    }

    /// When a read may wait until: its timeout's end, and no later than the reply's bound (an
    /// error once that has passed).
    pub(super) fn read_deadline(&self) -> io::Result<Option<Instant>> {
        if self.reply_overdue() {
            return Err(self.timed_out_reading());
        }
        let each = self.read_timeout.map(deadline_in);
        Ok(match self.reply_by {
            Some(by) => Some(each.map_or(by, |e| e.min(by))),
            None => each,
        })
    }

    /// A read's wait that timed out: at the reply's bound, it says so.
    pub(super) fn timed_out_reading(&self) -> io::Error {
        match self.reply_within {
            Some(within) if self.reply_by.is_some_and(|by| by <= Instant::now()) => no_end(within),
            _ => timed_out(),
        }
    }

    /// A write: the reply to it is bounded from now.
    pub(super) fn wrote(&mut self) {
        self.reply_by = self.reply_within.map(deadline_in);
    }

    pub fn set_read_timeout(&mut self, d: Option<Duration>) {
        self.read_timeout = d;
    }

    pub fn set_write_timeout(&mut self, d: Option<Duration>) {
        self.write_timeout = d;
    }

    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.sock.set_nodelay(on)
    }

    pub fn get_ref(&self) -> &TcpStream {
        &self.sock
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.sock.peer_addr()
    }

    /// Shuts the socket down, once what was written through a ring has been sent.
    pub fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        self.settle();
        self.sock.shutdown(how)
    }

    /// A second handle on the same socket (its own readiness state), for a reader and a
    /// writer kept apart. Both must be used by the same fiber. The bound on a reply is each
    /// handle's own, from its own writes: a handle that only reads is bounded per read alone.
    pub fn try_clone(&self) -> io::Result<Stream> {
        let sock = self.sock.try_clone()?;
        Ok(Stream {
            waiter: Waiter::new(sock.as_raw_fd()),
            sock,
            read_timeout: self.read_timeout,
            write_timeout: self.write_timeout,
            drained: Cell::new(false),
            outbox: None,
            reply_within: self.reply_within,
            reply_by: None,
        })
    }

    /// Waits until the socket is readable (`read`) or writable, or `timeout` passes, after a
    /// call on it (through this handle or another on the same socket) found it not ready: for
    /// a client library that reads and writes the socket itself, without waiting, and asks
    /// dyno to wait when it cannot go on (a future that is pending).
    pub fn wait_ready(&self, read: bool, timeout: Option<Duration>) -> io::Result<()> {
        self.not_ready(read);
        self.drained.set(false);
        self.wait(read, timeout)
    }

    /// Waits until the socket is readable, within the read's deadline.
    fn wait_readable(&self) -> io::Result<()> {
        let deadline = self.read_deadline()?;
        let waited = self.waiter.wait_until(true, deadline);
        waited.map_err(|e| match e.kind() {
            io::ErrorKind::TimedOut => self.timed_out_reading(),
            _ => e,
        })
    }

    /// Waits until the socket is readable (`read`) or writable, or the timeout passes.
    pub(super) fn wait(&self, read: bool, timeout: Option<Duration>) -> io::Result<()> {
        self.waiter.wait(read, timeout)
    }

    /// Marks the socket as not ready in one direction (a call found it so).
    pub(super) fn not_ready(&self, read: bool) {
        self.waiter.not_ready(read)
    }
}

/// A file descriptor (a socket, a pipe) that a client waits on: on a fiber, registered with its
/// thread's scheduler the first time it waits there (once per scheduler; edge-triggered, both
/// directions), its readiness kept there; outside a fiber, a wait is a `poll(2)`. The fd must be
/// non-blocking, and stay open as long as the `Waiter` is used.
#[derive(Debug)]
pub struct Waiter {
    pub(super) fd: RawFd,
    /// The scheduler it is registered with and its slot there.
    pub(super) reg: Cell<Option<(u64, usize)>>,
}

impl Waiter {
    pub fn new(fd: RawFd) -> Waiter {
        Waiter {
            fd,
            reg: Cell::new(None),
        }
    }

    /// Waits until the fd is readable (`read`) or writable, or the timeout passes: on a fiber
    /// the thread runs the others meanwhile.
    pub fn wait(&self, read: bool, timeout: Option<Duration>) -> io::Result<()> {
        self.wait_until(read, timeout.map(deadline_in))
    }

    /// Waits until the fd is readable (`read`) or writable, or `deadline` passes.
    pub fn wait_until(&self, read: bool, deadline: Option<Instant>) -> io::Result<()> {
        if in_fiber() {
            let reg = self.registration()?;
            let ready = SCHED.with(|s| {
                let mut s = s.borrow_mut();
                let s = s.as_mut().expect("scheduler state");
                let r = &mut s.regs[reg];
                let ready = if read { r.readable } else { r.writable };
                if !ready {
                    let me = current_fiber_key();
                    r.waiter = Some((me, read));
                }
                ready
            });
            if ready {
                return Ok(());
            }
            match suspend(Why::Io { reg, deadline }) {
                Wake::Ready => Ok(()),
                Wake::TimedOut => Err(timed_out()),
            }
        } else {
            poll_fd(self.fd, read, deadline)
        }
    }

    /// No longer registered with the current scheduler (a later wait registers it again).
    pub(super) fn forget(&self) {
        let Some((id, _)) = self.reg.get() else {
            return;
        };
        SCHED.with(|s| {
            if let Some(s) = s.borrow_mut().as_mut()
                && s.id == id
            {
                let _ = s.poll.registry().deregister(&mut SourceFd(&self.fd));
                self.reg.set(None);
            }
        });
    }

    /// This stream's slot in the current scheduler, registering it there first if need be.
    pub(super) fn registration(&self) -> io::Result<usize> {
        SCHED.with(|s| {
            let mut s = s.borrow_mut();
            let s = s.as_mut().expect("a fiber runs under a scheduler");
            if let Some((id, slot)) = self.reg.get()
                && id == s.id
            {
                return Ok(slot);
            }
            let slot = s.regs.len();
            s.poll.registry().register(
                &mut SourceFd(&self.fd),
                Token(slot),
                Interest::READABLE | Interest::WRITABLE,
            )?;
            // Until the poller says otherwise, assume it may be ready: the first call tries.
            s.regs.push(Reg {
                readable: true,
                writable: true,
                ..Reg::default()
            });
            self.reg.set(Some((s.id, slot)));
            Ok(slot)
        })
    }

    /// Marks the fd as not ready in one direction (a call found it so): the next wait in that
    /// direction waits for the poller, unless the poller saw that direction closed (then the
    /// next call finds the end or the error).
    pub fn not_ready(&self, read: bool) {
        if let Some((id, slot)) = self.reg.get() {
            SCHED.with(|s| {
                if let Some(s) = s.borrow_mut().as_mut()
                    && s.id == id
                {
                    let r = &mut s.regs[slot];
                    if read {
                        r.readable = r.read_closed
                    } else {
                        r.writable = r.write_closed
                    }
                }
            });
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if super::ring::on_ring() {
            return self.ring_read(buf);
        }
        if let Some(o) = &self.outbox {
            o.failure()?;
        }
        // Past the reply's bound the read takes what has come without waiting for the poller
        // (what came in time is read), and fails only when nothing has.
        if self.drained.get() && !self.reply_overdue() {
            self.wait_readable()?;
        }
        self.drained.set(false);
        loop {
            match (&self.sock).read(buf) {
                Ok(n) => {
                    // A short read drained the socket: the next waits for the poller (each new
                    // arrival is a new edge, so nothing is missed).
                    if n < buf.len() && n > 0 {
                        self.drained.set(true);
                        self.not_ready(true);
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.not_ready(true);
                    self.wait_readable()?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.wrote();
        if super::ring::on_ring() {
            return self.ring_write(buf);
        }
        if let Some(o) = &self.outbox {
            o.failure()?;
        }
        loop {
            match (&self.sock).write(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.not_ready(false);
                    self.wait(false, self.write_timeout)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// Waits for a file descriptor (not on a fiber: any thread, or a source a stream does not own).
/// On a fiber, use [`wait_fd`].
pub(super) fn poll_fd(fd: RawFd, read: bool, deadline: Option<Instant>) -> io::Result<()> {
    let events = if read { libc::POLLIN } else { libc::POLLOUT };
    loop {
        let ms = match deadline {
            None => -1,
            Some(t) => {
                let left = t.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(timed_out());
                }
                left.as_millis().clamp(1, i32::MAX as u128) as i32
            }
        };
        let mut p = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n > 0 {
            return Ok(());
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// A reply that went on past `within` from the request (each read in time, the whole never
/// ending).
pub fn no_end(within: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no end to the reply within {} s", within.as_secs_f64()),
    )
}

pub(super) fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "timed out waiting for the server")
}

/// The running fiber's key in its scheduler: its yielder's address is unique while it lives,
/// but the scheduler indexes slots, so the slot is found through the thread-local table.
pub(super) fn current_fiber_key() -> usize {
    RUNNING.with(|r| r.get())
}

thread_local! {
    /// The slot index of the fiber running on this thread.
    pub(super) static RUNNING: Cell<usize> = const { Cell::new(usize::MAX) };
}
