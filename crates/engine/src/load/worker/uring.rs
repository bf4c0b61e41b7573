//! The io_uring backend of a load thread, for every socket it opens (connections, and the links
//! of HTTP/2 and gRPC): the sends a loop turn starts and the wait for what came back go to the
//! kernel together, in one system call per turn however many sockets are busy. Each socket keeps
//! one multishot receive armed; its bytes land in buffers the kernel picks from a ring of them
//! the thread provides (one allocation up front, none per request). A plain connection's request
//! is sent from its own bytes; a TLS connection's ciphertext and a link's frames from a buffer
//! the ring keeps per socket. A socket is still opened by its own `connect`, whose end a poll in
//! the ring reports.
//!
//! A completion names its socket, the socket's generation (bumped whenever it is dropped: what
//! was in flight on the old socket is ignored when it completes) and, for a request's send, the
//! request it carried; a receive's buffer goes back to the ring whatever became of its socket.

use super::*;
use crate::ring::Ring;
use io_uring::types::{BufRingEntry, Fd};
use io_uring::{IoUring, cqueue, opcode};
use std::os::fd::AsRawFd;

/// Submission queue entries (completions: twice as many).
const ENTRIES: u32 = 1024;
/// Receive buffers in the ring, and their size: 4 MiB a thread, taken once.
const BUFS: u16 = 256;
const BUF_LEN: usize = 16 << 10;
/// The ring's buffer group.
const GROUP: u16 = 0;

const RECV: u64 = 1;
const SEND: u64 = 2;
const CONNECT: u64 = 3;
/// A send of a socket's own bytes (`Table::out`: a TLS connection's ciphertext, a link's frames).
const OUT: u64 = 4;
/// Added to a kind for a link's socket.
const LINK: u64 = 8;

/// A completion's connection, generation, kind and (a send) request, in its user data.
fn tag(ci: usize, generation: u32, kind: u64, request: u64) -> u64 {
    (ci as u64) << 32 | u64::from(generation & 0xffff) << 16 | kind << 8 | (request & 0xff)
}

fn untag(ud: u64) -> (usize, u32, u64, u64) {
    (
        (ud >> 32) as usize,
        (ud >> 16 & 0xffff) as u32,
        ud >> 8 & 0xff,
        ud & 0xff,
    )
}

/// The provided buffers: their memory, and the ring of entries the kernel takes them from.
struct Buffers {
    memory: Vec<u8>,
    ring: *mut BufRingEntry,
    layout: std::alloc::Layout,
    tail: u16,
}

impl Buffers {
    fn new(ring: &IoUring) -> io::Result<Buffers> {
        let layout = std::alloc::Layout::from_size_align(
            usize::from(BUFS) * std::mem::size_of::<BufRingEntry>(),
            4096,
        )
        .map_err(io::Error::other)?;
        // SAFETY: a non-zero size; zeroed, as the kernel expects a new ring.
        let entries = unsafe { std::alloc::alloc_zeroed(layout) } as *mut BufRingEntry;
        if entries.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let mut b = Buffers {
            memory: vec![0; usize::from(BUFS) * BUF_LEN],
            ring: entries,
            layout,
            tail: 0,
        };
        // SAFETY: the ring is page-aligned memory of BUFS entries that lives as long as `b`,
        // which outlives the ring's use (dropped after the IoUring, see `Uring`).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(entries as u64, BUFS, GROUP, 0)?
        };
        for bid in 0..BUFS {
            b.put(bid);
        }
        b.publish();
        Ok(b)
    }

    /// Puts buffer `bid` at the ring's tail (the kernel sees it once published).
    fn put(&mut self, bid: u16) {
        let at = usize::from(self.tail & (BUFS - 1));
        // SAFETY: `at` < BUFS; the kernel reads entries only up to the published tail.
        let e = unsafe { &mut *self.ring.add(at) };
        e.set_addr(self.memory.as_ptr() as u64 + u64::from(bid) * BUF_LEN as u64);
        e.set_len(BUF_LEN as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field of the ring's first entry, written with release ordering as
        // the kernel reads it with acquire.
        unsafe {
            let tail = BufRingEntry::tail(self.ring) as *const std::sync::atomic::AtomicU16;
            (*tail).store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }

    fn bytes(&self, bid: u16, n: usize) -> &[u8] {
        let from = usize::from(bid) * BUF_LEN;
        &self.memory[from..from + n.min(BUF_LEN)]
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ring as *mut u8, self.layout) };
    }
}

/// A socket the ring works on: a connection's (indexed as the worker's `conns`) or a
/// multiplexing link's (as its `links`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sock {
    Conn(usize),
    Link(usize),
}

/// What the ring knows of each socket of one kind: its generation (bumped whenever the socket
/// is dropped), whether its receive is armed, whether a send of it is in the kernel (its bytes
/// may still be read), and the bytes such a send reads when they are the ring's own (a TLS
/// connection's ciphertext, a link's frames) with how much of them is sent.
#[derive(Default)]
struct Table {
    generation: Vec<u32>,
    armed: Vec<bool>,
    sending: Vec<bool>,
    out: Vec<(Vec<u8>, usize)>,
}

impl Table {
    fn grow(&mut self, i: usize) {
        if self.generation.len() <= i {
            self.generation.resize(i + 1, 0);
            self.armed.resize(i + 1, false);
            self.sending.resize(i + 1, false);
            self.out.resize_with(i + 1, Default::default);
        }
    }
}

/// A thread's ring and what it knows of each socket's operations in it.
pub(in crate::load) struct Uring {
    // Dropped first: every operation cancelled and ended before the buffers go.
    ring: Ring,
    buffers: Buffers,
    conns: Table,
    links: Table,
}

impl Uring {
    pub(super) fn new() -> io::Result<Uring> {
        let ring = Ring::new(ENTRIES)?;
        let buffers = Buffers::new(ring.inner())?;
        Ok(Uring {
            ring,
            buffers,
            conns: Table::default(),
            links: Table::default(),
        })
    }

    /// `sock`'s table (grown to hold it), its index there, and its kinds' offset in a tag.
    fn table(&mut self, sock: Sock) -> (&mut Table, usize, u64) {
        let (t, i, link) = match sock {
            Sock::Conn(i) => (&mut self.conns, i, 0),
            Sock::Link(i) => (&mut self.links, i, LINK),
        };
        t.grow(i);
        (t, i, link)
    }

    /// `sock`'s table, read only, and its index there.
    fn table_of(&self, sock: Sock) -> (&Table, usize) {
        match sock {
            Sock::Conn(i) => (&self.conns, i),
            Sock::Link(i) => (&self.links, i),
        }
    }

    /// Whether a send of `sock`'s is in the kernel.
    pub(super) fn sending(&self, sock: Sock) -> bool {
        let (t, i) = self.table_of(sock);
        t.sending.get(i) == Some(&true)
    }

    /// Queues `sqe` (the ring's system calls counted in `syscalls`). Whether it was queued.
    fn push(&mut self, sqe: io_uring::squeue::Entry, syscalls: &mut u64) -> bool {
        let before = self.ring.syscalls;
        // SAFETY: every entry's memory (a request's bytes, a socket's `out`, the provided
        // buffers) outlives its completion: the ring goes first (see `Worker`'s fields), what a
        // send in the kernel reads is not written again until it ends (`sending`), and a
        // dropped socket's queue is submitted before the socket closes (`flush`).
        let queued = unsafe { self.ring.push(&sqe) };
        *syscalls += self.ring.syscalls - before;
        queued
    }

    /// Hands the kernel what is queued, now (before a sleep, before a socket closes).
    pub(super) fn flush(&mut self, syscalls: &mut u64) {
        let before = self.ring.syscalls;
        self.ring.flush();
        *syscalls += self.ring.syscalls - before;
    }

    /// Arms `sock`'s multishot receive on `fd`, unless armed.
    pub(super) fn arm(&mut self, sock: Sock, fd: i32, syscalls: &mut u64) {
        let (t, i, link) = self.table(sock);
        if t.armed[i] {
            return;
        }
        let sqe = opcode::RecvMulti::new(Fd(fd), GROUP).build().user_data(tag(
            i,
            t.generation[i],
            RECV | link,
            0,
        ));
        let armed = self.push(sqe, syscalls);
        self.table(sock).0.armed[i] = armed;
    }

    /// Queues a send of `bytes` for request `request` of connection `ci`.
    pub(super) fn send(
        &mut self,
        (ci, fd, request): (usize, i32, u64),
        bytes: &[u8],
        syscalls: &mut u64,
    ) {
        let (t, ..) = self.table(Sock::Conn(ci));
        // No SIGPIPE on a socket shut down under it: an error, as std's send does.
        let sqe = opcode::Send::new(Fd(fd), bytes.as_ptr(), bytes.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(tag(ci, t.generation[ci], SEND, request));
        let queued = self.push(sqe, syscalls);
        self.conns.sending[ci] = queued;
    }

    /// `sock`'s own bytes to send (cleared), unless a send of them is in the kernel.
    pub(super) fn out(&mut self, sock: Sock) -> Option<&mut Vec<u8>> {
        let (t, i, _) = self.table(sock);
        if t.sending[i] {
            return None;
        }
        let (out, at) = &mut t.out[i];
        out.clear();
        *at = 0;
        Some(out)
    }

    /// Queues a send of what is left of `sock`'s own bytes.
    pub(super) fn send_out(&mut self, sock: Sock, fd: i32, syscalls: &mut u64) {
        let (t, i, link) = self.table(sock);
        let (bytes, at) = &t.out[i];
        let rest = &bytes[*at..];
        let sqe = opcode::Send::new(Fd(fd), rest.as_ptr(), rest.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(tag(i, t.generation[i], OUT | link, 0));
        let queued = self.push(sqe, syscalls);
        self.table(sock).0.sending[i] = queued;
    }

    /// A send of `sock`'s own bytes ended having sent `n` more: whether some are left.
    fn out_sent(&mut self, sock: Sock, n: usize) -> bool {
        let (t, i, _) = self.table(sock);
        let (out, at) = &mut t.out[i];
        *at += n;
        *at < out.len()
    }

    /// Queues a poll for the end of `sock`'s connect on `fd`.
    pub(super) fn connecting(&mut self, sock: Sock, fd: i32, syscalls: &mut u64) {
        let (t, i, link) = self.table(sock);
        let sqe = opcode::PollAdd::new(Fd(fd), libc::POLLOUT as u32)
            .build()
            .user_data(tag(i, t.generation[i], CONNECT | link, 0));
        self.push(sqe, syscalls);
    }

    /// `sock`'s socket is dropped: what it had in flight is ignored when it ends.
    pub(super) fn forget(&mut self, sock: Sock) {
        let (t, i, _) = self.table(sock);
        t.generation[i] = t.generation[i].wrapping_add(1);
        t.armed[i] = false;
        // Shut down, the socket's pending send reads no more of its bytes.
        t.sending[i] = false;
    }

    /// Whether a completion of `sock`'s in `generation` is of its socket now.
    fn current(&self, sock: Sock, generation: u32) -> bool {
        let (t, i) = self.table_of(sock);
        t.generation
            .get(i)
            .is_some_and(|g| g & 0xffff == generation)
    }
}

impl Worker<'_> {
    /// One turn of the loop on the ring: what was queued submitted, the wait, and every
    /// completion handled; whether there were any.
    pub(super) fn uring_turn(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        let Some(mut u) = self.uring.take() else {
            return Ok(false);
        };
        let before = u.ring.syscalls;
        let turned = u.ring.turn(timeout);
        self.counters.syscalls += u.ring.syscalls - before;
        let taken = u.ring.take();
        self.uring = Some(u);
        turned?;
        let now = self.clock.now_ns();
        for &(ud, res, flags) in &taken {
            self.completed(ud, res, flags, now);
        }
        let any = !taken.is_empty();
        if let Some(u) = self.uring.as_mut() {
            u.ring.give_back(taken);
            u.buffers.publish();
        }
        Ok(any)
    }

    fn completed(&mut self, ud: u64, res: i32, flags: u32, now: u64) {
        let (i, generation, kind, request) = untag(ud);
        let sock = match kind & LINK {
            0 => Sock::Conn(i),
            _ => Sock::Link(i),
        };
        let Some(u) = self.uring.as_mut() else { return };
        let current = u.current(sock, generation);
        match kind & !LINK {
            RECV => {
                let more = cqueue::more(flags);
                if current && !more {
                    u.table(sock).0.armed[i] = false;
                }
                let got = cqueue::buffer_select(flags).map(|b| (b, res.max(0) as usize));
                if let (true, Some((b, n))) = (current, got) {
                    let n = n.min(self.buf.len());
                    self.buf[..n].copy_from_slice(u.buffers.bytes(b, n));
                }
                if let Some((b, _)) = got {
                    u.buffers.put(b);
                }
                if current {
                    self.received(sock, res, more, now);
                }
            }
            SEND if current => {
                u.conns.sending[i] = false;
                self.sent(i, res, request, now);
            }
            SEND => self.counters.bytes_out += res.max(0) as u64,
            OUT if current => {
                u.table(sock).0.sending[i] = false;
                self.out_sent(sock, res, now);
            }
            CONNECT if current => self.connect_ended(sock, res, now),
            _ => {}
        }
    }

    /// A receive's completion on a live socket: `res` bytes in `self.buf`, its end, or its
    /// failure; the receive armed again if it ended.
    fn received(&mut self, sock: Sock, res: i32, more: bool, now: u64) {
        let before = self.uring.as_mut().map(|u| {
            let (t, i, _) = u.table(sock);
            t.generation[i]
        });
        match (sock, res) {
            (Sock::Conn(ci), n) if n > 0 => self.take_on_ring(ci, n as usize, false, now),
            (Sock::Link(li), n) if n > 0 => self.link_take(li, n as usize, now),
            (Sock::Conn(ci), 0) => return self.take_on_ring(ci, 0, true, now),
            (Sock::Link(li), 0) => return self.link_closed(li, now),
            (_, e) if -e == libc::ENOBUFS => {}
            (Sock::Conn(ci), e) => {
                return self.read_failed(ci, &io::Error::from_raw_os_error(-e), now);
            }
            (Sock::Link(li), e) => {
                let e = io::Error::from_raw_os_error(-e);
                return self.link_fail(li, io_err("receive", &e), now);
            }
        }
        // The socket was dropped meanwhile: its new one arms its own.
        let after = self.uring.as_mut().map(|u| {
            let (t, i, _) = u.table(sock);
            t.generation[i]
        });
        if !more && after == before {
            self.arm(sock);
        }
    }

    /// Arms `sock`'s receive on its socket, if it has one.
    pub(super) fn arm(&mut self, sock: Sock) {
        let s = match sock {
            Sock::Conn(ci) => self.conns[ci].stream.as_ref(),
            Sock::Link(li) => self.links[li].stream.as_ref(),
        };
        let fd = s.map(|s| s.as_raw_fd());
        if let (Some(fd), Some(u)) = (fd, self.uring.as_mut()) {
            u.arm(sock, fd, &mut self.counters.syscalls);
        }
    }

    /// The poll of `sock`'s connect ended (`res`): a connection's request sent once it is up,
    /// a link's session started; one woken before its connect ended asks again.
    fn connect_ended(&mut self, sock: Sock, res: i32, now: u64) {
        if res < 0 {
            let e = io_err("connect", &io::Error::from_raw_os_error(-res));
            return match sock {
                Sock::Conn(ci) => self.fail(ci, e, now),
                Sock::Link(li) => self.link_fail(li, e, now),
            };
        }
        let still = match sock {
            Sock::Conn(ci) if self.connected(ci, now) => return self.uring_ready(ci, now),
            Sock::Conn(ci) => (self.conns[ci].state == State::Connecting)
                .then(|| self.conns[ci].stream.as_ref())
                .flatten(),
            Sock::Link(li) => match self.link_connected(li, now) {
                true => return self.link_ready(li, now),
                false => self.links[li]
                    .stream
                    .as_ref()
                    .filter(|_| !self.links[li].up),
            },
        };
        if let (Some(fd), Some(u)) = (still.map(|s| s.as_raw_fd()), self.uring.as_mut()) {
            u.connecting(sock, fd, &mut self.counters.syscalls);
        }
    }

    /// A send's completion: the rest sent, or the request now waits for its response.
    fn sent(&mut self, ci: usize, res: i32, request: u64, now: u64) {
        self.counters.bytes_out += res.max(0) as u64;
        let c = &mut self.conns[ci];
        // A response may end before its send's completion is seen: that request is over (and a
        // broken socket shows in what comes next on it).
        if c.state != State::Writing || u64::from(c.seq) != request {
            return;
        }
        if res < 0 {
            let e = io::Error::from_raw_os_error(-res);
            self.fail(ci, io_err("send", &e), now);
            return;
        }
        c.written += res as usize;
        self.write(ci, now);
    }

    /// A send of `sock`'s own bytes ended: the rest of them sent, or what was made since.
    fn out_sent(&mut self, sock: Sock, res: i32, now: u64) {
        if res <= 0 {
            let e = match res {
                0 => io::ErrorKind::WriteZero.into(),
                e => io::Error::from_raw_os_error(-e),
            };
            let e = io_err("send", &e);
            return match sock {
                Sock::Conn(ci) => self.fail(ci, e, now),
                Sock::Link(li) => self.link_fail(li, e, now),
            };
        }
        let s = match sock {
            Sock::Conn(ci) => self.conns[ci].stream.as_ref(),
            Sock::Link(li) => self.links[li].stream.as_ref(),
        };
        let (Some(u), Some(fd)) = (self.uring.as_mut(), s.map(|s| s.as_raw_fd())) else {
            return;
        };
        if u.out_sent(sock, res as usize) {
            u.send_out(sock, fd, &mut self.counters.syscalls);
            return;
        }
        match sock {
            Sock::Conn(ci) => self.tls_flush(ci, now),
            Sock::Link(li) => self.link_flush(li, now),
        }
    }

    /// A plain connection is up (connected now, or before the run): its receive armed, and the
    /// request it was opened for sent.
    pub(super) fn uring_ready(&mut self, ci: usize, now: u64) {
        if self.conns[ci].stream.is_none() {
            return;
        }
        self.arm(Sock::Conn(ci));
        if self.conns[ci].state == State::Writing {
            self.write(ci, now);
        }
    }
}

/// TLS on the ring: the ciphertext a connection's channel makes is sent from the ring's own
/// buffer for it (one send in the kernel at a time; what the channel makes meanwhile waits in
/// the channel), and what arrives is handed to the channel, whose plaintext goes to the response
/// as a plain connection's bytes do.
impl Worker<'_> {
    /// Sends TLS connection `ci`'s pending ciphertext (its handshake, its requests, alerts),
    /// unless a send of it is still in the kernel (its completion sends the rest).
    pub(super) fn tls_flush(&mut self, ci: usize, now: u64) {
        let Some(u) = self.uring.as_mut() else { return };
        let c = &mut self.conns[ci];
        let (Some(tls), Some(s)) = (c.tls.as_mut(), c.stream.as_ref()) else {
            return;
        };
        if !tls.wants_write() {
            return;
        }
        let Some(out) = u.out(Sock::Conn(ci)) else {
            return;
        };
        let mut made = Ok(0);
        while tls.wants_write() && made.is_ok() {
            made = tls.write_tls(out);
        }
        match made {
            Ok(_) => u.send_out(Sock::Conn(ci), s.as_raw_fd(), &mut self.counters.syscalls),
            Err(e) => self.fail(ci, io_err("send", &e), now),
        }
    }

    /// `n` bytes received on connection `ci` (in `self.buf`), or its end: a plain connection's
    /// fed to its response; a TLS connection's to its channel, and the plaintext that makes
    /// to its response.
    fn take_on_ring(&mut self, ci: usize, n: usize, eof: bool, now: u64) {
        let c = &mut self.conns[ci];
        let Some(tls) = c.tls.as_mut() else {
            self.take(ci, n, eof, now);
            return;
        };
        if let Err(e) = feed_channel(tls.as_mut(), &self.buf[..n]) {
            return self.fail(ci, e, now);
        }
        if let Some(from) = c.handshake_from
            && !tls.is_handshaking()
        {
            self.handshake
                .saturating_record(now.saturating_sub(from).max(1));
            c.handshake_from = None;
        }
        // Its answers to the handshake, and a request it held until the handshake was done.
        self.tls_flush(ci, now);
        self.take_plaintext(ci, eof, now);
    }

    /// Takes TLS connection `ci`'s plaintext, as long as it holds its channel and has some.
    fn take_plaintext(&mut self, ci: usize, eof: bool, now: u64) {
        loop {
            let Some(tls) = self.conns[ci].tls.as_mut() else {
                return;
            };
            match tls.recv(&mut self.buf) {
                Ok(0) => {
                    self.take(ci, 0, true, now);
                    return;
                }
                Ok(m) => {
                    self.take(ci, m, false, now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if eof {
                        self.take(ci, 0, true, now);
                    }
                    return;
                }
                // TCP closed without TLS's close_notify: an end all the same.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.take(ci, 0, true, now);
                    return;
                }
                Err(e) => return self.read_failed(ci, &e, now),
            }
        }
    }
}

/// Hands a channel the ciphertext that arrived, and has it processed.
pub(super) fn feed_channel(tls: &mut dyn Channel, mut cipher: &[u8]) -> Result<(), OpError> {
    while !cipher.is_empty() {
        tls.read_tls(&mut cipher)
            .map_err(|e| io_err("receive", &e))?;
        tls.process()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_reads_back() {
        for (ci, g, k, r) in [
            (0, 0, RECV, 0),
            (70_000, 0xffff, SEND, 0xff),
            (3, 7, CONNECT, 9),
        ] {
            assert_eq!(untag(tag(ci, g, k, r)), (ci, g, k, r));
        }
    }
}
