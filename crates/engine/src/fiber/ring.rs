//! The fibers' sockets on io_uring (`--io uring`; `auto` leaves them on epoll, which measured
//! cheaper for them: [`crate::ring::CLIENTS_ON_EPOLL`]): a scheduler's ring carries its
//! fibers' receives and sends, and its wait, so one system call per loop turn submits every
//! fiber's requests and takes every reply that has come, however many clients the thread
//! carries.
//!
//! - A **receive** goes into the reader's own buffer, and the fiber waits for its completion
//!   (always: a deadline that passes cancels it and still waits for its end, so the kernel never
//!   writes into memory the fiber has moved on from). Nothing is received that no one asked for,
//!   so a stream can leave its scheduler (a session kept for later) with nothing lost.
//! - A **send** is copied into the stream's [`Outbox`] and the write returns at once; the
//!   fiber's next call (usually the read of the reply) goes to the kernel in the same turn.
//!   A failed send is reported by the stream's next call. While one is in the kernel, writes
//!   queue behind it (up to [`QUEUED`], then they wait). Before its scheduler returns, every
//!   send has ended; a stream dropped while sending waits for it.
//! - Everything else a fiber waits on (a pipe, a waker, a socket a client library reads
//!   itself) stays on the scheduler's epoll instance, whose readiness the ring polls.

use super::*;
use crate::ring::Ring;
use io_uring::opcode;
use io_uring::types::Fd;
use std::cell::UnsafeCell;

/// Submission queue entries of a scheduler's ring.
const ENTRIES: u32 = 1024;

/// Bytes a stream may queue behind a send still in the kernel before a write waits for it.
pub(super) const QUEUED: usize = 256 << 10;

/// How long a scheduler that has no fiber left waits for its streams' last sends.
const DRAIN: Duration = Duration::from_secs(5);

/// A completion's kind, in its user data's low two bits (an [`Outbox`]'s address is aligned
/// to 8, a fiber's slot is shifted).
const EPOLL: u64 = 0;
const RECV: u64 = 1;
const SEND: u64 = 2;
const CANCEL: u64 = 3;

/// A scheduler's ring, and the sends it holds.
pub(super) struct FiberRing {
    ring: Ring,
    /// Sends in the kernel (their outboxes must outlive them), and receives.
    sends: usize,
    recvs: usize,
    /// Whether the poll of the epoll instance is armed.
    epoll_armed: bool,
    /// Each fiber's receive result, once it has come (indexed by the fiber's slot).
    results: Vec<Option<i32>>,
}

impl FiberRing {
    pub(super) fn new(fibers: usize) -> io::Result<FiberRing> {
        Ok(FiberRing {
            ring: Ring::new(ENTRIES)?,
            sends: 0,
            recvs: 0,
            epoll_armed: false,
            results: vec![None; fibers],
        })
    }

    /// Queues `sqe`.
    ///
    /// # Safety
    /// As [`Ring::push`].
    unsafe fn push(&mut self, sqe: &io_uring::squeue::Entry) -> io::Result<()> {
        // SAFETY: the caller's promise.
        match unsafe { self.ring.push(sqe) } {
            true => Ok(()),
            false => Err(io::Error::other("the io_uring submission queue stays full")),
        }
    }

    /// Sends what `o` holds from its offset on.
    fn send(&mut self, o: &Outbox) {
        // SAFETY: only the scheduler's thread touches the outbox, and not across this call.
        let bytes = unsafe { &*o.sent.get() };
        let rest = &bytes[o.at.get()..];
        let sqe = opcode::Send::new(Fd(o.fd), rest.as_ptr(), rest.len() as u32)
            // No SIGPIPE on a socket shut down under it; a short send is carried on by the
            // kernel.
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .user_data(o as *const Outbox as u64 | SEND);
        // SAFETY: the bytes are the outbox's, which lives until this send's completion: the
        // scheduler waits for every send before it returns, and a stream dropped while its
        // send is in the kernel waits for it (or, on no scheduler that can, leaks it).
        match unsafe { self.push(&sqe) } {
            Ok(()) => {
                o.sending.set(true);
                self.sends += 1;
            }
            Err(_) => {
                o.failed.set(Some(-libc::EBUSY));
                o.sending.set(false);
            }
        }
    }

    /// The poll of the epoll instance `epfd`: its completions say something there is ready.
    fn arm_epoll(&mut self, epfd: RawFd) {
        if self.epoll_armed {
            return;
        }
        let sqe = opcode::PollAdd::new(Fd(epfd), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(EPOLL);
        // SAFETY: a poll names no memory.
        self.epoll_armed = unsafe { self.push(&sqe) }.is_ok();
    }
}

/// A stream's bytes on their way out through the ring: written by its fiber, sent by the
/// kernel. Boxed, so its address (a send's user data) holds when the stream moves.
pub(super) struct Outbox {
    fd: RawFd,
    /// The bytes in the kernel while `sending`, sent up to `at`; a write adds to `next`
    /// meanwhile, sent when they are.
    sent: UnsafeCell<Vec<u8>>,
    at: Cell<usize>,
    next: UnsafeCell<Vec<u8>>,
    sending: Cell<bool>,
    /// A send's failure (a negative errno), reported by the stream's next call.
    failed: Cell<Option<i32>>,
    /// The fiber waiting for the sends to end (`usize::MAX`: none).
    waiter: Cell<usize>,
    /// The scheduler whose ring holds the send.
    sched: Cell<u64>,
    /// Given up by its stream (dropped while a send would not end): nothing more is sent.
    abandoned: Cell<bool>,
}

// SAFETY: an outbox is touched only by the thread whose scheduler holds its send (or, with no
// send in the kernel, by whichever thread owns its stream).
unsafe impl Send for Outbox {}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("sending", &self.sending.get())
            .finish()
    }
}

impl Outbox {
    pub(super) fn new(fd: RawFd) -> Box<Outbox> {
        Box::new(Outbox {
            fd,
            sent: UnsafeCell::new(Vec::new()),
            at: Cell::new(0),
            next: UnsafeCell::new(Vec::new()),
            sending: Cell::new(false),
            failed: Cell::new(None),
            waiter: Cell::new(usize::MAX),
            sched: Cell::new(0),
            abandoned: Cell::new(false),
        })
    }

    /// A send's failure, once.
    pub(super) fn failure(&self) -> io::Result<()> {
        match self.failed.take() {
            Some(e) => Err(io::Error::from_raw_os_error(-e)),
            None => Ok(()),
        }
    }

    /// A send ended with `res`: the rest sent, what queued behind it sent, or the failure kept.
    fn sent(&self, res: i32, ring: &mut FiberRing) {
        ring.sends -= 1;
        // SAFETY: the fiber that owns the stream is not running (the scheduler is).
        let (sent, next) = unsafe { (&mut *self.sent.get(), &mut *self.next.get()) };
        self.at.set(self.at.get() + res.max(0) as usize);
        let left = self.at.get() < sent.len();
        let failed = match res {
            e if e < 0 => Some(e),
            0 if left => Some(-libc::EPIPE),
            _ => None,
        };
        if failed.is_some() || self.abandoned.get() {
            self.failed.set(failed);
            self.sending.set(false);
            next.clear();
        } else if left {
            ring.send(self);
        } else {
            sent.clear();
            self.at.set(0);
            self.sending.set(false);
            if !next.is_empty() {
                std::mem::swap(sent, next);
                ring.send(self);
            }
        }
    }
}

/// Runs `f` on this thread's scheduler's ring, if the running fiber's scheduler has one.
fn with_ring<R>(f: impl FnOnce(&mut FiberRing, u64) -> R) -> Option<R> {
    if !in_fiber() {
        return None;
    }
    SCHED.with(|s| {
        let mut s = s.borrow_mut();
        let s = s.as_mut()?;
        let id = s.id;
        s.ring.as_mut().map(|r| f(r, id))
    })
}

/// Whether this thread's fibers' sockets go through a ring.
pub(super) fn on_ring() -> bool {
    with_ring(|_, _| ()).is_some()
}

impl Stream {
    /// Reads through the ring: a receive into `buf`, waited for to its end.
    pub(super) fn ring_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(o) = &self.outbox {
            o.failure()?;
        }
        let me = current_fiber_key();
        let ud = (me as u64) << 2 | RECV;
        loop {
            // Past the reply's bound: what has come, without a receive that would wait.
            if self.reply_overdue() {
                return match (&self.sock).read(buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        Err(self.timed_out_reading())
                    }
                    r => r,
                };
            }
            // Before the receive is queued: an error here leaves nothing in the kernel.
            let deadline = self.read_deadline()?;
            let len = buf.len().min(u32::MAX as usize) as u32;
            let sqe = opcode::Recv::new(Fd(self.sock.as_raw_fd()), buf.as_mut_ptr(), len)
                .build()
                .user_data(ud);
            // SAFETY: `buf` outlives the receive: this fiber waits below for its completion,
            // whatever happens, before it returns.
            with_ring(|r, _| unsafe { r.push(&sqe) }.map(|()| r.recvs += 1)).unwrap_or(Ok(()))?;
            let mut wake = suspend(Why::Ring { deadline });
            let mut cancelled = false;
            let res = loop {
                if let Some(res) = with_ring(|r, _| r.results[me].take()).flatten() {
                    break res;
                }
                if wake == Wake::TimedOut && !cancelled {
                    with_ring(|r, _| r.ring.cancel(ud, CANCEL));
                    cancelled = true;
                }
                wake = suspend(Why::Ring { deadline: None });
            };
            match res {
                n if n >= 0 => return Ok(n as usize),
                e if e == -libc::ECANCELED && cancelled => return Err(self.timed_out_reading()),
                e if e == -libc::EINTR || e == -libc::EAGAIN => {}
                e => return Err(io::Error::from_raw_os_error(-e)),
            }
        }
    }

    /// Writes through the ring: `buf` copied into the outbox and sent, or queued behind the
    /// send in the kernel.
    pub(super) fn ring_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let fd = self.sock.as_raw_fd();
        let o: &Outbox = self.outbox.get_or_insert_with(|| Outbox::new(fd));
        o.failure()?;
        if o.sending.get() && with_ring(|_, id| id) != Some(o.sched.get()) {
            return Err(io::Error::other(
                "a stream written on another thread's ring while its send there was not done",
            ));
        }
        if o.sending.get() {
            // SAFETY: the scheduler touches `next` only while this fiber is not running.
            if unsafe { &*o.next.get() }.len() >= QUEUED {
                wait_sent(o, self.write_timeout)?;
                o.failure()?;
            }
        }
        if o.sending.get() {
            // SAFETY: as above.
            unsafe { &mut *o.next.get() }.extend_from_slice(buf);
            return Ok(buf.len());
        }
        // SAFETY: no send of these bytes is in the kernel.
        let sent = unsafe { &mut *o.sent.get() };
        sent.clear();
        sent.extend_from_slice(buf);
        o.at.set(0);
        with_ring(|r, id| {
            o.sched.set(id);
            r.send(o)
        });
        Ok(buf.len())
    }

    /// Waits (on the fiber whose ring holds it, at most its write timeout or a second) for a
    /// send still in the kernel: before the socket is shut down under it.
    pub(super) fn settle(&self) {
        if let Some(o) = &self.outbox
            && o.sending.get()
            && with_ring(|_, id| id) == Some(o.sched.get())
        {
            let _ = wait_sent(o, self.write_timeout.or(Some(Duration::from_secs(1))));
        }
    }
}

/// Waits until `o`'s sends have ended (or failed), or the timeout passes.
fn wait_sent(o: &Outbox, timeout: Option<Duration>) -> io::Result<()> {
    let deadline = timeout.map(super::deadline_in);
    while o.sending.get() && o.failed.get().is_none() {
        o.waiter.set(current_fiber_key());
        let wake = suspend(Why::Ring { deadline });
        o.waiter.set(usize::MAX);
        if wake == Wake::TimedOut && o.sending.get() {
            return Err(timed_out());
        }
    }
    Ok(())
}

impl Drop for Stream {
    /// A send still in the kernel reads the outbox: a fiber of the scheduler that holds it
    /// waits for its end (the last bytes of a session, sent before the socket closes); anywhere
    /// else (which dyno's sessions never do) the outbox is left to the kernel.
    fn drop(&mut self) {
        let Some(o) = self.outbox.take() else { return };
        if !o.sending.get() {
            return;
        }
        let here = with_ring(|_, id| id) == Some(o.sched.get());
        if !(here && wait_sent(&o, Some(Duration::from_secs(1))).is_ok()) {
            if here {
                // Its end cancelled, and still awaited: the socket closes once it comes.
                with_ring(|r, _| r.ring.cancel(&*o as *const Outbox as u64 | SEND, CANCEL));
                let _ = wait_sent(&o, Some(Duration::from_secs(1)));
            }
            if o.sending.get() {
                o.abandoned.set(true);
                std::mem::forget(o);
            }
        }
    }
}

impl<T: Send> Scheduler<T> {
    /// The loop on the ring: every fiber run, then one turn (what they queued submitted, the
    /// wait for at least one completion or the next deadline), until every fiber has returned
    /// and every send has ended.
    pub(super) fn run_ring(&mut self, events: &mut Events) {
        let epfd = SCHED.with(|s| s.borrow().as_ref().map(|s| s.poll.as_raw_fd()));
        while self.live > 0 {
            self.resume_ready();
            if self.live == 0 {
                break;
            }
            let timeout = self.lateness.wait(self.timeout());
            if !self.ring_turn(timeout, epfd, events) {
                break;
            }
            self.lateness.woke();
        }
        let sending = || with_sched_ring(|r| r.sends > 0).unwrap_or(false);
        let until = Instant::now() + DRAIN;
        while sending() && Instant::now() < until {
            self.ring_turn(Some(Duration::from_millis(50)), None, events);
        }
        // A peer that reads nothing: what is left is cancelled, and its ends awaited, so each
        // stream's next call says its send failed (rather than a send no ring will end).
        if sending() {
            with_sched_ring(|r| r.ring.cancel_all(CANCEL));
            let until = Instant::now() + Duration::from_secs(1);
            while sending() && Instant::now() < until {
                self.ring_turn(Some(Duration::from_millis(50)), None, events);
            }
        }
    }

    /// One turn: false when the ring fails (the scheduler cannot go on). With nothing on the
    /// ring (a client library that reads its socket itself waits through epoll), the turn
    /// waits on epoll alone: one system call, as without a ring; but a deadline closer than
    /// [`super::EXACT_BELOW`] is waited for on the ring, whose timer is exact, so nothing spins
    /// and the thread wakes once.
    fn ring_turn(
        &mut self,
        timeout: Option<Duration>,
        epfd: Option<RawFd>,
        events: &mut Events,
    ) -> bool {
        let idle = with_sched_ring(|r| r.sends + r.recvs == 0).unwrap_or(false);
        if idle && epfd.is_some() && !super::close(timeout) {
            let polled = SCHED.with(|s| {
                let mut s = s.borrow_mut();
                let s = s.as_mut().expect("scheduler state");
                s.poll.poll(events, super::epoll_timeout(timeout))
            });
            if let Err(e) = polled
                && e.kind() != io::ErrorKind::Interrupted
            {
                panic!("epoll_wait failed: {e}");
            }
            self.wake(events);
            // What the ring had meanwhile (its poll of epoll said what was just taken).
            let taken = with_sched_ring(|r| {
                r.ring.reap();
                r.ring.take()
            });
            if let Some(taken) = taken {
                self.completed(taken, events, false);
            }
            return true;
        }
        let taken = with_sched_ring(|r| {
            if let Some(fd) = epfd {
                r.arm_epoll(fd);
            }
            r.ring.turn(timeout).map(|()| r.ring.take())
        });
        let taken = match taken {
            Some(Ok(t)) => t,
            Some(Err(e)) => panic!("io_uring_enter failed: {e}"),
            None => return false,
        };
        self.completed(taken, events, true);
        true
    }

    /// Handles a turn's completions; `epoll_too`: what epoll has is taken if the ring's poll
    /// of it fired.
    fn completed(
        &mut self,
        taken: Vec<crate::ring::Completion>,
        events: &mut Events,
        epoll_too: bool,
    ) {
        let mut epoll = false;
        for &(ud, res, flags) in &taken {
            match ud & 3 {
                EPOLL => {
                    epoll = true;
                    if !io_uring::cqueue::more(flags) {
                        with_sched_ring(|r| r.epoll_armed = false);
                    }
                }
                RECV => {
                    let f = (ud >> 2) as usize;
                    with_sched_ring(|r| {
                        r.recvs -= 1;
                        r.results[f] = Some(res)
                    });
                    self.ring_ready(f);
                }
                SEND => {
                    // SAFETY: the outbox lives until its send's completion (see `send`).
                    let o = unsafe { &*((ud & !3) as *const Outbox) };
                    with_sched_ring(|r| o.sent(res, r));
                    if !o.sending.get() && o.waiter.get() != usize::MAX {
                        self.ring_ready(o.waiter.get());
                    }
                }
                _ => {}
            }
        }
        with_sched_ring(|r| r.ring.give_back(taken));
        if epoll && epoll_too {
            self.epoll_events(events);
        } else {
            SCHED.with(|s| {
                let mut s = s.borrow_mut();
                let s = s.as_mut().expect("scheduler state");
                self.timers_due(&mut s.regs);
            });
        }
    }

    /// Takes what the epoll instance has (without waiting), as many times as it fills `events`.
    fn epoll_events(&mut self, events: &mut Events) {
        loop {
            let polled = SCHED.with(|s| {
                let mut s = s.borrow_mut();
                let s = s.as_mut().expect("scheduler state");
                s.poll.poll(events, Some(Duration::ZERO))
            });
            if let Err(e) = polled
                && e.kind() != io::ErrorKind::Interrupted
            {
                panic!("epoll_wait failed: {e}");
            }
            self.wake(events);
            if events.iter().count() < events.capacity() {
                return;
            }
        }
    }

    /// Fiber `f`, waiting on the ring, is runnable.
    fn ring_ready(&mut self, f: usize) {
        if let Some(slot) = self.slots.get_mut(f).and_then(Option::as_mut)
            && slot.waiting_ring
        {
            slot.waiting_ring = false;
            self.ready.push_back(f);
        }
    }
}

/// Runs `f` on this thread's scheduler's ring (the scheduler's own use, between fibers).
fn with_sched_ring<R>(f: impl FnOnce(&mut FiberRing) -> R) -> Option<R> {
    SCHED.with(|s| s.borrow_mut().as_mut()?.ring.as_mut().map(f))
}
