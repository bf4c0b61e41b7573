//! Connections of a multiplexing protocol (HTTP/2, [`Session`]): a link is one socket that
//! carries up to [`Worker::streams`] requests at once. Each request in flight is still a
//! [`Conn`] — a slot, with its own intended start, service start and timeout, so everything
//! the engine measures per request holds — but without a socket of its own: slot `ci` rides
//! link `ci / streams`. A request that waits for its link to connect, or for a stream under
//! the server's limit, waits from its intended start: that time is the server's.

use super::uring::{Sock, feed_channel};
use super::*;

/// Poll tokens at and above this are links (`LINK_BASE + li`); below, connections.
pub(in crate::load) const LINK_BASE: usize = 1 << 40;

pub(in crate::load) struct Link {
    pub(super) stream: Option<TcpStream>,
    pub(super) tls: Option<Box<dyn Channel>>,
    pub(super) session: Option<Box<dyn Session>>,
    /// Connected, and the session's first bytes queued.
    pub(super) up: bool,
    pub(super) handshake_from: Option<u64>,
    /// What is still to be written.
    pub(super) out: Vec<u8>,
    /// Slots waiting for a stream (the link connecting, or the server's limit), oldest first.
    pub(super) waiting: VecDeque<usize>,
    /// When bytes last arrived on it.
    pub(super) last_read: u64,
}

impl Link {
    pub(super) fn new() -> Link {
        Link {
            stream: None,
            tls: None,
            session: None,
            up: false,
            handshake_from: None,
            out: Vec::new(),
            waiting: VecDeque::new(),
            last_read: 0,
        }
    }

    /// Not connected yet, or nothing received since `t`.
    pub(super) fn silent_since(&self, t: u64) -> bool {
        !self.up || self.last_read < t
    }
}

impl Worker<'_> {
    /// The slots link `li` carries.
    fn slots_of(&self, li: usize) -> std::ops::Range<usize> {
        li * self.streams..((li + 1) * self.streams).min(self.conns.len())
    }

    /// Starts slot `ci`'s request on its link: at once if a stream is free, else when one is.
    pub(super) fn link_start(&mut self, ci: usize, li: usize, now: u64) {
        if self.links[li].stream.is_none()
            && let Err(e) = self.link_connect(li)
        {
            // Busy, so that the failure counts it out of the outstanding requests.
            self.conns[ci].state = State::Connecting;
            self.fail(ci, e, now);
            return;
        }
        let l = &mut self.links[li];
        self.conns[ci].state = if l.up {
            State::Writing
        } else {
            State::Connecting
        };
        l.waiting.push_back(ci);
        if l.up {
            self.link_open_waiting(li, now);
            self.link_flush(li, now);
        }
    }

    fn link_connect(&mut self, li: usize) -> Result<(), OpError> {
        let mut s = TcpStream::connect(self.spec.addr).map_err(|e| io_err("connect", &e))?;
        match self.uring.as_mut() {
            Some(u) => u.connecting(Sock::Link(li), s.as_raw_fd(), &mut self.counters.syscalls),
            None => (self.poll.registry())
                .register(
                    &mut s,
                    Token(LINK_BASE + li),
                    Interest::READABLE | Interest::WRITABLE,
                )
                .map_err(|e| io_err("register", &e))?,
        }
        let l = &mut self.links[li];
        l.stream = Some(s);
        l.session = self.spec.protocol.session();
        l.up = false;
        l.out.clear();
        Ok(())
    }

    /// The link is connected: its channel set up, its session's first bytes queued.
    fn link_up(&mut self, li: usize, now: u64) -> Result<(), OpError> {
        let tls = self.spec.protocol.channel()?;
        self.counters.connects += 1;
        let l = &mut self.links[li];
        l.handshake_from = tls.as_ref().map(|_| now);
        l.tls = tls;
        if let Some(s) = l.session.as_mut() {
            s.start(&mut l.out);
        }
        l.up = true;
        Ok(())
    }

    /// Opens the waiting slots' requests while the session has streams for them.
    fn link_open_waiting(&mut self, li: usize, now: u64) {
        let l = &mut self.links[li];
        let Some(session) = l.session.as_mut().filter(|_| l.up) else {
            return;
        };
        while session.can_open() {
            let Some(ci) = l.waiting.pop_front() else {
                break;
            };
            session.open(ci, self.conns[ci].which, &mut l.out);
            let c = &mut self.conns[ci];
            c.state = State::Reading;
            c.sent = now;
            if self.sends.len() < self.keep_sends {
                self.sends.push(now);
            }
        }
    }

    /// Writes what the link has queued, as far as the socket takes it (on the ring: hands it
    /// to the kernel, unless a send of the link's is still there, whose end sends the rest).
    pub(super) fn link_flush(&mut self, li: usize, now: u64) {
        let l = &mut self.links[li];
        let Some(stream) = l.stream.as_mut().filter(|_| l.up) else {
            return;
        };
        if let Some(u) = self.uring.as_mut() {
            let fd = stream.as_raw_fd();
            let Some(out) = u.out(Sock::Link(li)) else {
                return;
            };
            let made = match l.tls.as_mut() {
                Some(tls) => {
                    let mut made = tls.send(&l.out).map(|()| 0);
                    self.counters.bytes_out += l.out.len() as u64;
                    l.out.clear();
                    while made.is_ok() && tls.wants_write() {
                        made = tls.write_tls(&mut *out);
                    }
                    made
                }
                None => {
                    std::mem::swap(out, &mut l.out);
                    self.counters.bytes_out += out.len() as u64;
                    Ok(0)
                }
            };
            let empty = out.is_empty();
            match made {
                Err(e) => self.link_fail(li, io_err("send", &e), now),
                Ok(_) if empty => {}
                Ok(_) => u.send_out(Sock::Link(li), fd, &mut self.counters.syscalls),
            }
            return;
        }
        if let Some(tls) = l.tls.as_mut() {
            let sent = tls
                .send(&l.out)
                .and_then(|()| flush_tls(tls.as_mut(), stream));
            self.counters.bytes_out += l.out.len() as u64;
            l.out.clear();
            if let Err(e) = sent {
                self.link_fail(li, io_err("send", &e), now);
            }
            return;
        }
        let mut written = 0;
        while written < l.out.len() {
            match stream.write(&l.out[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.link_fail(li, io_err("send", &e), now);
                    return;
                }
            }
        }
        self.counters.bytes_out += written as u64;
        l.out.drain(..written);
    }

    /// Whether link `li` is up: connected now (its session started, the waiting requests
    /// opened) or before; a failed connect fails it, and one still connecting is not.
    pub(super) fn link_connected(&mut self, li: usize, now: u64) -> bool {
        let Some(s) = self.links.get(li).and_then(|l| l.stream.as_ref()) else {
            return false;
        };
        if self.links[li].up {
            return true;
        }
        match s.take_error() {
            Ok(Some(e)) | Err(e) => {
                self.link_fail(li, io_err("connect", &e), now);
                return false;
            }
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => {
                let _ = s.set_nodelay(true);
                if let Err(e) = self.link_up(li, now) {
                    self.link_fail(li, e, now);
                    return false;
                }
                self.link_open_waiting(li, now);
                true
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => false,
            Err(e) => {
                self.link_fail(li, io_err("connect", &e), now);
                false
            }
        }
    }

    /// On the ring, link `li` is up (connected now, or before the run): its receive armed, its
    /// session's first bytes and the waiting requests sent.
    pub(super) fn link_ready(&mut self, li: usize, now: u64) {
        self.arm(Sock::Link(li));
        self.link_flush(li, now);
    }

    /// The link's socket is ready: connect, write, read, and end the requests that ended.
    pub(super) fn handle_link(&mut self, li: usize, now: u64) {
        if !self.link_connected(li, now) {
            return;
        }
        self.link_flush(li, now);
        if !self.links[li].up {
            return;
        }
        self.link_read(li, now);
        // Broken, or broken and connecting anew: nothing more to do on it now.
        if !self.links[li].up {
            return;
        }
        self.link_open_waiting(li, now);
        self.link_flush(li, now);
        self.link_renew(li, now);
    }

    /// Reads what arrived and feeds it to the session.
    fn link_read(&mut self, li: usize, mut now: u64) {
        let mut first = true;
        loop {
            // Each read's responses end at their own time (a link may bring many in a row).
            if !first {
                now = self.clock.now_ns();
            }
            first = false;
            let l = &mut self.links[li];
            let Some(stream) = l.stream.as_mut() else {
                return;
            };
            let got = match recv(stream, l.tls.as_mut(), &mut self.buf) {
                Ok(got) => got,
                Err(e) => return self.link_fail(li, e, now),
            };
            if !self.link_handshaken(li, now) {
                return;
            }
            match got {
                Ok(0) => return self.link_closed(li, now),
                Ok(n) if self.link_feed(li, n, now) => {}
                Ok(_) => return,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.link_fail(li, io_err("receive", &e), now),
            }
            // Read on until "would block", even after a short read: a close that came with the
            // last bytes raises no new readiness, and would be heard only at a timeout.
        }
    }

    /// On the ring, `n` bytes arrived on link `li` (in `self.buf`): through its channel if it
    /// has one, to its session; then what can go out goes.
    pub(super) fn link_take(&mut self, li: usize, n: usize, now: u64) {
        let l = &mut self.links[li];
        if let Some(tls) = l.tls.as_mut() {
            if let Err(e) = feed_channel(tls.as_mut(), &self.buf[..n]) {
                return self.link_fail(li, e, now);
            }
            if !self.link_handshaken(li, now) {
                return;
            }
            // Its answers to the handshake.
            self.link_flush(li, now);
            loop {
                let Some(tls) = self.links[li].tls.as_mut() else {
                    return;
                };
                match tls.recv(&mut self.buf) {
                    Ok(0) => return self.link_closed(li, now),
                    Ok(m) if self.link_feed(li, m, now) => {}
                    Ok(_) => return,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    // TCP closed without TLS's close_notify: an end all the same.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        return self.link_closed(li, now);
                    }
                    Err(e) => return self.link_fail(li, io_err("receive", &e), now),
                }
            }
        } else if !self.link_feed(li, n, now) {
            return;
        }
        if !self.links[li].up {
            return;
        }
        self.link_open_waiting(li, now);
        self.link_flush(li, now);
        self.link_renew(li, now);
    }

    /// Once link `li`'s handshake is done: timed, and the application protocol it agreed on
    /// checked; false if that failed it.
    fn link_handshaken(&mut self, li: usize, now: u64) -> bool {
        let l = &mut self.links[li];
        if let (Some(from), Some(tls)) = (l.handshake_from, l.tls.as_ref())
            && !tls.is_handshaking()
        {
            self.handshake
                .saturating_record(now.saturating_sub(from).max(1));
            l.handshake_from = None;
            let want = self.spec.protocol.alpn();
            if want.is_some() && tls.alpn() != want {
                let e = OpError::new(
                    ErrorClass::Protocol,
                    "tls: the server did not agree to HTTP/2 (ALPN h2); \
                     it may speak HTTP/1.1 only (version=1.1)",
                );
                self.link_fail(li, e, now);
                return false;
            }
        }
        true
    }

    /// The server closed link `li`.
    pub(super) fn link_closed(&mut self, li: usize, now: u64) {
        let e = OpError::new(ErrorClass::Reset, "the server closed the connection");
        // After GOAWAY the requests still waiting for a stream were never sent: they go on a
        // new connection.
        if (self.links[li].session.as_ref()).is_some_and(|s| s.closing()) {
            return self.link_renew_after(li, e, now);
        }
        self.link_fail(li, e, now);
    }

    /// `n` bytes of link `li`'s (in `self.buf`) fed to its session, and the requests that
    /// ended with them ended; false if the session failed the link.
    fn link_feed(&mut self, li: usize, n: usize, now: u64) -> bool {
        let l = &mut self.links[li];
        self.counters.bytes_in += n as u64;
        l.last_read = now;
        let mut ended = std::mem::take(&mut self.ended);
        let fed = match l.session.as_mut() {
            Some(s) => s.feed(&self.buf[..n], &mut l.out, &mut |ci, r| ended.push((ci, r))),
            None => Ok(()),
        };
        for (ci, how) in ended.drain(..) {
            if self.conns[ci].state != State::Reading {
                continue;
            }
            match how {
                Ended::Response(outcome) => self.complete(ci, outcome, true, now),
                Ended::Failed(e) => self.fail(ci, e, now),
                Ended::Unprocessed => {
                    self.conns[ci].state = State::Writing;
                    self.links[li].waiting.push_back(ci);
                }
                Ended::Message => {
                    let c = &mut self.conns[ci];
                    c.messages += 1;
                    let latency = now.saturating_sub(c.intended);
                    self.streamed.message(latency, c.messages == 1);
                }
            }
        }
        self.ended = ended;
        if let Err(e) = fed {
            self.link_fail(li, e, now);
            return false;
        }
        true
    }

    /// A link the server is closing (GOAWAY) is let go once its last request ended; the
    /// requests waiting for it go on a new one.
    fn link_renew(&mut self, li: usize, now: u64) {
        let closing = self.links[li].session.as_ref().is_some_and(|s| s.closing());
        let busy = self
            .slots_of(li)
            .any(|ci| self.conns[ci].state == State::Reading);
        if !closing || busy {
            return;
        }
        self.link_drop(li);
        let waiting: Vec<usize> = self.links[li].waiting.drain(..).collect();
        for ci in waiting {
            self.link_start(ci, li, now);
        }
    }

    /// The server closed a link it had said GOAWAY on: what was open on it fails with `e`,
    /// what waited for a stream starts on a new connection.
    fn link_renew_after(&mut self, li: usize, e: OpError, now: u64) {
        let waiting: Vec<usize> = self.links[li].waiting.drain(..).collect();
        self.link_fail_but(li, e, now, &waiting);
        for ci in waiting {
            if self.conns[ci].busy() {
                self.link_start(ci, li, now);
            }
        }
    }

    fn link_drop(&mut self, li: usize) {
        let l = &mut self.links[li];
        if let Some(mut s) = l.stream.take() {
            match self.uring.as_mut() {
                // As a connection's (`drop_stream`): queued sends go first, then the shutdown
                // ends what the ring has in flight on it.
                Some(u) => {
                    u.flush(&mut self.counters.syscalls);
                    let _ = s.shutdown(std::net::Shutdown::Both);
                    u.forget(Sock::Link(li));
                }
                None => {
                    let _ = self.poll.registry().deregister(&mut s);
                }
            }
        }
        l.tls = None;
        l.session = None;
        l.up = false;
        l.handshake_from = None;
        l.out.clear();
    }

    /// The link broke: it is closed, and each request on it or waiting for it fails with `e`.
    pub(super) fn link_fail(&mut self, li: usize, e: OpError, now: u64) {
        self.link_fail_but(li, e, now, &[]);
    }

    /// What the session queued last (its GOAWAY after a connection error), sent if the socket
    /// takes it at once; nothing waits for it.
    /// On the ring, they go behind what it holds of the link's, if it holds nothing.
    fn link_last_words(&mut self, li: usize) {
        let l = &mut self.links[li];
        let Some(s) = l.stream.as_mut().filter(|_| l.tls.is_none() && l.up) else {
            return;
        };
        match self.uring.as_mut() {
            None => {
                let _ = s.write(&l.out);
            }
            Some(u) => {
                let fd = s.as_raw_fd();
                if let Some(out) = u.out(Sock::Link(li)) {
                    std::mem::swap(out, &mut l.out);
                    if !out.is_empty() {
                        u.send_out(Sock::Link(li), fd, &mut self.counters.syscalls);
                    }
                }
            }
        }
    }

    /// As [`Worker::link_fail`], but for the slots `spared`, left as they are.
    fn link_fail_but(&mut self, li: usize, e: OpError, now: u64, spared: &[usize]) {
        self.link_last_words(li);
        self.link_drop(li);
        self.links[li].waiting.clear();
        // Listed first: a slot failed here may start again at once, on a new connection.
        let busy: Vec<usize> = (self.slots_of(li))
            .filter(|&ci| self.conns[ci].busy() && !spared.contains(&ci))
            .collect();
        for ci in busy {
            self.fail(ci, e.clone(), now);
        }
    }

    /// Slot `ci` leaves its link: a stream it had open is reset, a wait for one given up.
    pub(super) fn link_detach(&mut self, ci: usize, li: usize) {
        let state = self.conns[ci].state;
        let l = &mut self.links[li];
        match state {
            State::Reading => {
                if let Some(s) = l.session.as_mut() {
                    s.cancel(ci, &mut l.out);
                }
            }
            State::Connecting | State::Writing => l.waiting.retain(|&w| w != ci),
            State::Closed | State::Idle => {}
        }
        self.conns[ci].state = State::Closed;
    }

    /// Every link with something queued (a reset after a timeout) writes it.
    pub(super) fn flush_links(&mut self, now: u64) {
        for li in 0..self.links.len() {
            if self.links[li].up {
                // Streams freed by timeouts take the waiting requests.
                self.link_open_waiting(li, now);
                if !self.links[li].out.is_empty() {
                    self.link_flush(li, now);
                }
            }
        }
    }

    /// Open loop: link `li` connected up front, with all its slots idle.
    pub(super) fn preconnect_link(&mut self) {
        let li = self.links.len();
        self.links.push(Link::new());
        let first = self.conns.len();
        for _ in 0..self.streams {
            let ci = self.add_conn(u64::MAX);
            self.idle.push(ci);
        }
        let Some((s, tls)) = self.connect_up_front(Token(LINK_BASE + li)) else {
            return;
        };
        let l = &mut self.links[li];
        l.stream = Some(s);
        l.tls = tls;
        l.session = self.spec.protocol.session();
        if let Some(s) = l.session.as_mut() {
            s.start(&mut l.out);
        }
        l.up = true;
        debug_assert_eq!(first / self.streams, li);
        let now = self.clock.now_ns();
        match self.uring.is_some() {
            true => self.link_ready(li, now),
            false => self.link_flush(li, now),
        }
    }
}
