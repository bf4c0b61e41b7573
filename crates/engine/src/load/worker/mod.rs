//! One load thread: its connections' state machine (connect, write, read, complete or fail),
//! the open loop's dispatch and backlog, timeouts, intervals, and the poll loop that drives them.

use super::channel::*;
use super::*;
use std::os::fd::AsRawFd;

mod end;
mod link;
mod poll;
mod recv;
mod uring;

use end::check_counters;

pub(super) use link::{LINK_BASE, Link};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// No socket.
    Closed,
    /// Connecting; the request goes out once connected.
    Connecting,
    /// Writing the request.
    Writing,
    /// Reading the response.
    Reading,
    /// Connected, no request in flight.
    Idle,
}

pub(super) struct Conn {
    pub(super) stream: Option<TcpStream>,
    /// TLS targets: the secure channel over `stream`.
    pub(super) tls: Option<Box<dyn Channel>>,
    /// When the TLS handshake began (TCP connected), until it is done and recorded.
    pub(super) handshake_from: Option<u64>,
    pub(super) state: State,
    pub(super) reader: Box<dyn ResponseReader>,
    pub(super) written: usize,
    /// When the request in flight was due (latency starts here).
    pub(super) intended: u64,
    /// When the connection started working on it (the timeout starts here).
    pub(super) started: u64,
    /// When its first byte was written (service time starts here).
    pub(super) sent: u64,
    /// Closed loop: requests this connection may still start (`u64::MAX` for a duration stop).
    pub(super) remaining: u64,
    /// Closed loop: when the next request is due, after a failure pause.
    pub(super) retry_at: Option<u64>,
    /// A multiplexing protocol's slot: the link it rides (`ci / streams`); no socket of its own.
    pub(super) link: Option<usize>,
    /// Messages of the streamed response so far.
    pub(super) messages: u64,
    /// Which of the target's requests is in flight (its [`Mix`]'s index; 0 without one).
    pub(super) which: usize,
    /// A templated request's bytes, rendered at its start (reused).
    pub(super) out: Vec<u8>,
    /// A scenario: the step it is at (0: an iteration's first), and when its iteration was
    /// due.
    pub(super) step: usize,
    pub(super) iteration_from: u64,
    /// What this client captured from its responses, by slot.
    pub(super) captured: Vec<Vec<u8>>,
    /// Its requests so far (wrapping): the ring's send completions name theirs.
    pub(super) seq: u8,
}

impl Conn {
    fn busy(&self) -> bool {
        matches!(
            self.state,
            State::Connecting | State::Writing | State::Reading
        )
    }
}

/// One thread's share of a run.
pub(super) struct Share {
    pub(super) index: usize,
    pub(super) connections: usize,
    pub(super) max_connections: usize,
    pub(super) schedule: Schedule,
    pub(super) stop: Option<Stop>,
    pub(super) closed_remaining: u64,
    /// The common instant (on the load's clock) every thread's schedule counts from: a
    /// shard's agreed start; `None`: each thread's own start past the barrier.
    pub(super) origin_ns: Option<u64>,
    /// The number of this thread's first client (connection, or a stream's slot) among all
    /// threads'.
    pub(super) client_base: u64,
}

pub(super) struct Worker<'a> {
    /// The io_uring backend's ring, when it runs (`None`: epoll).
    /// First, so it is dropped first: what the kernel still holds of the connections' sockets
    /// and buffers ends before they do.
    pub(super) uring: Option<Box<uring::Uring>>,
    pub(super) spec: &'a LoadSpec,
    pub(super) clock: Clock,
    pub(super) poll: Poll,
    pub(super) timer: timer::Timer,
    pub(super) conns: Vec<Conn>,
    pub(super) idle: Vec<usize>,
    pub(super) backlog: VecDeque<u64>,
    pub(super) rec: Recorder,
    /// A mix's requests, each recorded apart too (empty without a mix).
    pub(super) by_request: Vec<Recorder>,
    /// Per request, per check on its responses: how many passed and failed it (empty when no
    /// request has checks).
    pub(super) checks: Vec<Vec<[u64; 2]>>,
    /// A scenario's steps, and its iterations timed end to end (failed ones counted).
    pub(super) scenario: Option<crate::load::Scenario>,
    pub(super) iterations: Recorder,
    /// The stream a mix's picks and templates' fields are drawn from.
    pub(super) draw: u64,
    /// Requests are rendered at their start (templates); a buffer to render with, and the
    /// number of this thread's first client among all threads'.
    pub(super) templated: bool,
    pub(super) scratch: Vec<u8>,
    pub(super) client_base: u64,
    pub(super) lag: Histogram,
    pub(super) handshake: Histogram,
    pub(super) streamed: Streamed,
    pub(super) counters: Counters,
    pub(super) buf: Vec<u8>,
    pub(super) open: bool,
    pub(super) max_connections: usize,
    // Intervals.
    pub(super) interval_ns: u64,
    pub(super) interval_index: u64,
    pub(super) interval_hist: Histogram,
    pub(super) interval_service: Histogram,
    /// The counters and errors at the end of the last interval (an interval holds the growth).
    pub(super) interval_base: (Counters, [u64; ErrorClass::COUNT]),
    pub(super) reporter: Reporter,
    // Outstanding requests, time-weighted.
    pub(super) outstanding: u64,
    pub(super) outstanding_since: u64,
    pub(super) outstanding_area: f64,
    pub(super) start: u64,
    pub(super) issuing: bool,
    pub(super) closed_stop: Option<Stop>,
    /// Connections with a `retry_at` set (the loops over them are skipped when zero).
    pub(super) pausing: usize,
    pub(super) window: coalesce::Window,
    /// The first sends' times, up to this thread's share of [`LoadSpec::keep_sends`].
    pub(super) sends: Vec<u64>,
    pub(super) keep_sends: usize,
    /// A multiplexing protocol's connections, and how many slots each carries (1 otherwise).
    pub(super) links: Vec<Link>,
    pub(super) multiplexed: bool,
    pub(super) streams: usize,
    /// The requests a link's bytes ended (reused).
    pub(super) ended: Vec<(usize, Ended)>,
    /// The connections open and requests in flight as the run ended (before what was still in
    /// flight failed): the last interval's gauges.
    pub(super) ended_with: Option<(u64, u64)>,
}

pub(super) struct WorkerResult {
    pub(super) rec: Recorder,
    pub(super) by_request: Vec<Recorder>,
    pub(super) checks: Vec<Vec<[u64; 2]>>,
    pub(super) iterations: Option<Recorder>,
    pub(super) lag: Histogram,
    pub(super) handshake: Histogram,
    pub(super) streamed: Streamed,
    pub(super) counters: Counters,
    pub(super) waits: Waits,
    pub(super) cpu_ns: u64,
    pub(super) wall_ns: u64,
    pub(super) interrupted: bool,
    pub(super) sends: Vec<u64>,
}

pub(super) fn io_err(context: &'static str, e: &io::Error) -> OpError {
    OpError::new(ErrorClass::of_io(e), format!("{context}: {e}"))
}

impl<'a> Worker<'a> {
    pub(super) fn new(
        spec: &'a LoadSpec,
        clock: Clock,
        share: &Share,
        (reporter, on_ring): (Reporter, bool),
    ) -> io::Result<Worker<'a>> {
        let poll = Poll::new()?;
        let timer = timer::Timer::new(poll.registry(), TIMER)?;
        let uring = match on_ring {
            true => Some(Box::new(uring::Uring::new()?)),
            false => None,
        };
        Ok(Worker {
            spec,
            clock,
            poll,
            timer,
            conns: Vec::with_capacity(share.max_connections),
            idle: Vec::with_capacity(share.max_connections),
            backlog: VecDeque::new(),
            rec: Recorder::new(),
            by_request: (spec.protocol.mix()).map_or(Vec::new(), |m| {
                (0..m.len()).map(|_| Recorder::new()).collect()
            }),
            checks: check_counters(spec.protocol.as_ref()),
            scenario: spec.protocol.scenario().cloned(),
            iterations: Recorder::new(),
            // Each thread of each shard draws its own stream, apart from the arrivals'.
            draw: (spec.seed ^ 0x6D69_7865_7321_0000)
                .wrapping_add(u64::from(spec.shard.0) * spec.threads as u64 + share.index as u64),
            templated: spec.protocol.templated(),
            scratch: Vec::new(),
            client_base: share.client_base,
            lag: results::new_histogram(),
            handshake: results::new_histogram(),
            streamed: Streamed::default(),
            counters: Counters::default(),
            buf: vec![0; READ_CHUNK],
            open: share.schedule.is_open(),
            max_connections: share.max_connections,
            interval_ns: spec.interval.as_nanos().max(1_000_000) as u64,
            interval_index: 0,
            interval_hist: results::new_histogram(),
            interval_service: results::new_histogram(),
            interval_base: (Counters::default(), [0; ErrorClass::COUNT]),
            reporter,
            outstanding: 0,
            outstanding_since: 0,
            outstanding_area: 0.0,
            start: 0,
            issuing: true,
            closed_stop: None,
            pausing: 0,
            window: coalesce::Window::new(spec.coalesce, timer::sleep_cost_ns()),
            // Taken whole up front: a send never allocates.
            sends: Vec::with_capacity(spec.keep_sends.div_ceil(spec.threads.max(1))),
            keep_sends: spec.keep_sends.div_ceil(spec.threads.max(1)),
            links: Vec::new(),
            multiplexed: spec.protocol.session().is_some(),
            streams: if spec.protocol.session().is_some() {
                spec.protocol.streams().max(1)
            } else {
                1
            },
            ended: Vec::new(),
            uring,
            ended_with: None,
        })
    }

    pub(super) fn add_conn(&mut self, remaining: u64) -> usize {
        self.conns.push(Conn {
            stream: None,
            tls: None,
            handshake_from: None,
            state: State::Closed,
            reader: self.spec.protocol.reader(),
            written: 0,
            intended: 0,
            started: 0,
            sent: 0,
            remaining,
            retry_at: None,
            link: None,
            messages: 0,
            which: 0,
            out: Vec::new(),
            step: 0,
            iteration_from: 0,
            captured: vec![Vec::new(); self.spec.protocol.captures()],
            seq: 0,
        });
        let ci = self.conns.len() - 1;
        if self.multiplexed {
            let li = ci / self.streams;
            while self.links.len() <= li {
                self.links.push(Link::new());
            }
            self.conns[ci].link = Some(li);
        }
        ci
    }

    pub(super) fn set_outstanding(&mut self, now: u64, n: u64) {
        self.outstanding_area +=
            self.outstanding as f64 * now.saturating_sub(self.outstanding_since) as f64;
        self.outstanding_since = now;
        self.outstanding = n;
        self.counters.outstanding_max = self.counters.outstanding_max.max(n);
    }

    pub(super) fn in_flight(&self) -> u64 {
        self.conns.iter().filter(|c| c.busy()).count() as u64
    }

    /// Starts request `intended` on connection `ci`, connecting first if needed.
    pub(super) fn start(&mut self, ci: usize, intended: u64, now: u64) {
        self.counters.requests += 1;
        let c = &mut self.conns[ci];
        if c.remaining != u64::MAX {
            c.remaining -= 1;
        }
        c.intended = intended;
        c.started = now;
        c.written = 0;
        c.messages = 0;
        c.seq = c.seq.wrapping_add(1);
        c.which = match (&self.scenario, self.spec.protocol.mix()) {
            (Some(s), _) => {
                if c.step == 0 {
                    c.iteration_from = intended;
                }
                s.steps[c.step]
            }
            (None, Some(m)) => m.pick(results::rng::splitmix64(&mut self.draw)),
            (None, None) => 0,
        };
        c.reader.reset(c.which);
        // A send of its last request still in the kernel may read its bytes: that socket goes.
        if self.templated
            && self.conns[ci].tls.is_none()
            && self
                .uring
                .as_ref()
                .is_some_and(|u| u.sending(uring::Sock::Conn(ci)))
        {
            self.drop_stream(ci);
        }
        let c = &mut self.conns[ci];
        if self.templated {
            c.out.clear();
            // Clients, and what they share, are numbered over every shard: interleaved.
            let (shard, shards) = (
                u64::from(self.spec.shard.0),
                u64::from(self.spec.shard.1.max(1)),
            );
            let mut r = Render {
                client: (self.client_base + ci as u64) * shards + shard,
                shard: (shard, shards),
                rng: &mut self.draw,
                scratch: &mut self.scratch,
                captures: &c.captured,
            };
            self.spec.protocol.render(c.which, &mut r, &mut c.out);
        }
        let (link, connected) = (c.link, c.stream.is_some());
        // Counted first: a failure inside counts it out again.
        let n = self.outstanding + 1;
        self.set_outstanding(now, n);
        if let Some(li) = link {
            self.link_start(ci, li, now);
            return;
        }
        if connected {
            self.conns[ci].state = State::Writing;
            self.write(ci, now);
            return;
        }
        self.counters.syscalls += 2;
        let opened = TcpStream::connect(self.spec.addr)
            .map_err(|e| io_err("connect", &e))
            .and_then(|mut s| {
                if let Some(u) = self.uring.as_mut() {
                    u.connecting(
                        uring::Sock::Conn(ci),
                        s.as_raw_fd(),
                        &mut self.counters.syscalls,
                    );
                    return Ok(s);
                }
                let both = Interest::READABLE | Interest::WRITABLE;
                match self.poll.registry().register(&mut s, Token(ci), both) {
                    Ok(()) => Ok(s),
                    Err(e) => Err(io_err("register", &e)),
                }
            });
        match opened {
            Ok(s) => {
                let c = &mut self.conns[ci];
                c.stream = Some(s);
                c.state = State::Connecting;
            }
            Err(e) => self.fail_at_start(ci, e, now),
        }
    }

    /// Writes what is left of the request; moves to reading once it is all out.
    pub(super) fn write(&mut self, ci: usize, now: u64) {
        let c = &mut self.conns[ci];
        let req: &[u8] = match self.templated {
            true => &c.out,
            false => self.spec.protocol.request(c.which),
        };
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        if c.written == 0 {
            c.sent = now;
            if self.sends.len() < self.keep_sends {
                self.sends.push(now);
            }
        }
        if let Some(tls) = c.tls.as_mut() {
            // The channel holds the request until its handshake is done, then encrypts it.
            if c.written < req.len() {
                if let Err(e) = tls.send(&req[c.written..]) {
                    self.fail(ci, io_err("send", &e), now);
                    return;
                }
                self.counters.bytes_out += (req.len() - c.written) as u64;
                c.written = req.len();
            }
            if self.uring.is_some() {
                c.state = State::Reading;
                self.tls_flush(ci, now);
                return;
            }
            match flush_tls(tls.as_mut(), stream) {
                Ok(true) => c.state = State::Reading,
                Ok(false) => {}
                Err(e) => self.fail(ci, io_err("send", &e), now),
            }
            return;
        }
        if let Some(u) = self.uring.as_mut() {
            // Sent by the ring; its completion comes back here for the rest, if any.
            match c.written < req.len() {
                true => {
                    let fd = stream.as_raw_fd();
                    u.send(
                        (ci, fd, c.seq.into()),
                        &req[c.written..],
                        &mut self.counters.syscalls,
                    );
                }
                false => c.state = State::Reading,
            }
            return;
        }
        while c.written < req.len() {
            self.counters.syscalls += 1;
            match stream.write(&req[c.written..]) {
                Ok(0) => {
                    let e = OpError::new(ErrorClass::Reset, "connection closed while sending");
                    self.fail(ci, e, now);
                    return;
                }
                Ok(n) => {
                    c.written += n;
                    self.counters.bytes_out += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.fail(ci, io_err("send", &e), now);
                    return;
                }
            }
        }
        c.state = State::Reading;
    }

    pub(super) fn drop_stream(&mut self, ci: usize) {
        if let Some(li) = self.conns[ci].link {
            self.link_detach(ci, li);
            return;
        }
        let c = &mut self.conns[ci];
        if let Some(mut s) = c.stream.take() {
            match self.uring.as_mut() {
                Some(u) => {
                    // What is queued for it goes to the kernel while its descriptor is still
                    // its own; the shutdown ends what the ring has in flight on it, and their
                    // completions are ignored.
                    u.flush(&mut self.counters.syscalls);
                    let _ = s.shutdown(std::net::Shutdown::Both);
                    u.forget(uring::Sock::Conn(ci));
                }
                None => {
                    let _ = self.poll.registry().deregister(&mut s);
                }
            }
            self.counters.syscalls += 1;
        }
        c.tls = None;
        c.handshake_from = None;
        c.state = State::Closed;
    }

    pub(super) fn handle(&mut self, ci: usize, now: u64) {
        if ci >= LINK_BASE {
            return self.handle_link(ci - LINK_BASE, now);
        }
        if self.conns[ci].state == State::Connecting && !self.connected(ci, now) {
            return;
        }
        if self.conns[ci].state == State::Writing {
            self.write(ci, now);
        }
        // A channel's handshake or alerts may have been left unsent by a full socket.
        let c = &mut self.conns[ci];
        if let (Some(tls), Some(stream)) = (c.tls.as_mut(), c.stream.as_mut())
            && c.state != State::Writing
            && let Err(e) = flush_tls(tls.as_mut(), stream)
        {
            self.fail(ci, io_err("send", &e), now);
            return;
        }
        if matches!(self.conns[ci].state, State::Reading | State::Idle) {
            self.read(ci, now);
        }
    }

    /// A connection's connect ended: whether it is up (its request now to be written); a failure
    /// fails it, and one still connecting stays so.
    pub(super) fn connected(&mut self, ci: usize, now: u64) -> bool {
        let c = &mut self.conns[ci];
        let Some(s) = c.stream.as_ref() else {
            return false;
        };
        match s.take_error() {
            Ok(Some(e)) | Err(e) => {
                self.fail(ci, io_err("connect", &e), now);
                return false;
            }
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => {
                let _ = s.set_nodelay(true);
                self.counters.connects += 1;
                c.state = State::Writing;
                match self.spec.protocol.channel() {
                    Ok(tls) => {
                        let c = &mut self.conns[ci];
                        c.handshake_from = tls.as_ref().map(|_| now);
                        c.tls = tls;
                        true
                    }
                    Err(e) => {
                        self.fail(ci, e, now);
                        false
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => false,
            Err(e) => {
                self.fail(ci, io_err("connect", &e), now);
                false
            }
        }
    }

    /// Open loop: connects the connections opened up front, before the measured start, so the
    /// first requests do not pay for connecting. A connection that fails here is connected (and
    /// its failure counted) when it is first used.
    pub(super) fn preconnect(&mut self, n: usize) {
        if self.multiplexed {
            for _ in 0..n {
                self.preconnect_link();
            }
            return;
        }
        for _ in 0..n {
            let ci = self.add_conn(u64::MAX);
            if let Some((s, tls)) = self.connect_up_front(Token(ci)) {
                let c = &mut self.conns[ci];
                c.stream = Some(s);
                c.tls = tls;
                c.state = State::Idle;
                self.uring_ready(ci, 0);
            }
            self.idle.push(ci);
        }
    }

    /// Opens a connection before the measured start, its TLS handshake done (and timed) too,
    /// registered under `token`; `None` if it fails (it is then opened, and its failure
    /// counted, when first used).
    pub(super) fn connect_up_front(
        &mut self,
        token: Token,
    ) -> Option<(TcpStream, Option<Box<dyn Channel>>)> {
        let t0 = self.clock.now_ns();
        let mut tls = None;
        let connected = std::net::TcpStream::connect_timeout(&self.spec.addr, self.spec.timeout)
            .and_then(|mut s| {
                s.set_nodelay(true)?;
                tls = self.spec.protocol.channel().map_err(io::Error::other)?;
                if let Some(ch) = tls.as_mut() {
                    handshake_blocking(ch.as_mut(), &mut s, self.spec.timeout)?;
                }
                s.set_nonblocking(true)?;
                let mut s = TcpStream::from_std(s);
                if self.uring.is_none() {
                    let both = Interest::READABLE | Interest::WRITABLE;
                    self.poll.registry().register(&mut s, token, both)?;
                }
                Ok(s)
            });
        let s = connected.ok()?;
        if tls.is_some() {
            let ns = self.clock.now_ns().saturating_sub(t0);
            self.handshake.saturating_record(ns.max(1));
        }
        self.counters.connects += 1;
        Some((s, tls))
    }
}
