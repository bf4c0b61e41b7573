//! The event-loop engine for request/response targets (`http://`, `tcp://`).
//!
//! One thread per core, each running one poll loop over many non-blocking connections. The
//! schedule, the stop condition and the recorder are the same pieces the blocking worker loop uses
//! ([`Schedule::next`], [`Stop::reached`], [`Recorder`]); what differs is that a thread has many
//! operations in flight at once.
//!
//! - **Closed loop** (wrk's model, or gobench's N clients × M requests): each connection sends its
//!   next request when its previous response ends; latency runs from that moment.
//! - **Open loop** (wrk2's model): requests are due at the arrival times of a rate profile. A due
//!   request takes an idle connection, or opens a new one (up to the connection limit), or waits in
//!   a queue for the next free connection. Latency always runs from the *intended* time, so time
//!   spent queued behind a stalled target is charged to it (coordinated omission is never hidden);
//!   the service time from the actual send is recorded beside it.
//!
//! Every thread also measures itself: how late it dispatched each due request (the schedule lag,
//! which only the generator can cause) and the CPU it used, so a run whose generator could not keep
//! up says so. Network failures (refused, reset, timeout, broken responses) are counted by class;
//! nothing a server sends can crash or hang the loop: responses are bounded by the reader, every
//! request by the timeout, and the whole run by its stop condition plus one timeout to drain.

pub mod coalesce;
pub mod protocol;
mod timer;

pub use coalesce::{Coalesce, Waits};
pub use protocol::{Channel, Feed, Protocol, ResponseReader};
pub use timer::{process_cpu_ns, thread_cpu_ns};

use crate::clock::Clock;
use crate::error::{ErrorClass, OpError};
use crate::recorder::Recorder;
use crate::schedule::{ArrivalKind, Arrivals, RateProfile};
use crate::worker::{Schedule, Stop};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use results::Histogram;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// Requests waiting for a connection, per thread. Past this many the target is so far behind that
/// further requests are counted as dropped instead of queued (8 bytes each: 8 MiB per thread).
pub const MAX_BACKLOG: usize = 1 << 20;
/// Bytes read from a socket at a time (one buffer per thread, shared by its connections).
const READ_CHUNK: usize = 64 << 10;
/// How often in-flight requests are checked against the timeout.
const SCAN_NS: u64 = 10_000_000;
/// After a refused or failed connection, a closed-loop client waits this long before trying
/// again, so a dead target costs errors, not a spinning CPU.
const RETRY_PAUSE_NS: u64 = 10_000_000;
/// Events taken from the kernel per poll.
const EVENTS: usize = 1024;
/// The token of a thread's timer.
const TIMER: Token = Token(usize::MAX);

/// How load is offered.
#[derive(Debug, Clone)]
pub enum LoadMode {
    /// `connections` connections, each sending its next request when the previous one ends,
    /// until `stop` (a duration for all, or a count of requests per connection).
    Closed { connections: usize, stop: Stop },
    /// Requests at the arrival times of `profile`; `connections` are opened up front, more as
    /// needed up to `max_connections`. `stop` may end it before the profile does.
    Open {
        profile: RateProfile,
        arrival: ArrivalKind,
        seed: u64,
        connections: usize,
        max_connections: usize,
        stop: Option<Stop>,
    },
}

/// Everything one load run needs.
#[derive(Clone)]
pub struct LoadSpec {
    pub addr: SocketAddr,
    pub protocol: Arc<dyn Protocol>,
    pub threads: usize,
    pub mode: LoadMode,
    /// A request with no complete response this long after it started is a `timeout`.
    pub timeout: Duration,
    /// Length of the intervals of the time series (and of the `.hlog`).
    pub interval: Duration,
    /// How often responses may wake a thread ([`coalesce`]).
    pub coalesce: Coalesce,
}

/// Counts of one run (summed over threads).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Requests started (sent, or attempted when the connection failed).
    pub requests: u64,
    /// Complete responses, whatever their status.
    pub responses: u64,
    /// Complete responses that report success (HTTP 2xx; any complete frame for tcp).
    pub ok: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Connections established.
    pub connects: u64,
    /// Requests that were due but never sent: the queue was full, or the run ended first.
    pub unsent: u64,
    /// Time-weighted mean of requests outstanding (in flight or queued), summed over threads.
    pub outstanding_mean: f64,
    /// The largest number outstanding at once on any thread, summed over threads: an upper bound.
    pub outstanding_max: u64,
}

impl Counters {
    /// Adds another thread's counts (the means and maxima add too: threads run side by side).
    pub fn add(&mut self, o: &Counters) {
        self.requests += o.requests;
        self.responses += o.responses;
        self.ok += o.ok;
        self.bytes_out += o.bytes_out;
        self.bytes_in += o.bytes_in;
        self.connects += o.connects;
        self.unsent += o.unsent;
        self.outstanding_mean += o.outstanding_mean;
        self.outstanding_max += o.outstanding_max;
    }
}

/// One interval of the time series: what happened between `start_ns` and `end_ns` (from the
/// run's start), over every thread.
#[derive(Debug, Clone)]
pub struct Interval {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Latencies of the responses completed in the interval.
    pub latency: Histogram,
    pub requests: u64,
    pub responses: u64,
    pub ok: u64,
    pub connects: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Failures by class ([`ErrorClass`] as index).
    pub errors: [u64; ErrorClass::COUNT],
}

impl Interval {
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// The record's entry for this interval.
    pub fn record(&self) -> results::IntervalRecord {
        results::IntervalRecord {
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            responses: self.responses,
            errors: self.error_count(),
            connects: self.connects,
            p50_ns: self.latency.value_at_quantile(0.5),
            p99_ns: self.latency.value_at_quantile(0.99),
            max_ns: self.latency.max(),
        }
    }

    /// An interval with nothing in it yet.
    pub fn empty() -> Interval {
        Interval {
            start_ns: 0,
            end_ns: 0,
            latency: results::new_histogram(),
            requests: 0,
            responses: 0,
            ok: 0,
            connects: 0,
            bytes_in: 0,
            bytes_out: 0,
            errors: [0; ErrorClass::COUNT],
        }
    }

    /// Adds `o`: a thread's share of the same interval, or a later interval (a running total).
    pub fn add(&mut self, o: &Interval) {
        self.latency
            .add(&o.latency)
            .expect("histograms of one range always merge");
        self.start_ns = self.start_ns.min(o.start_ns);
        self.end_ns = self.end_ns.max(o.end_ns);
        self.requests += o.requests;
        self.responses += o.responses;
        self.ok += o.ok;
        self.connects += o.connects;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        for (a, b) in self.errors.iter_mut().zip(o.errors) {
            *a += b;
        }
    }
}

/// The record keeps at most this many intervals per repetition (the `.hlog` keeps them all): a
/// longer run merges neighbours ([`results::IntervalRecord::merged`]). 10,000 × 64 bytes.
pub const MAX_RECORD_INTERVALS: usize = 10_000;

/// What a running load has done so far, updated by the collector as each interval ends: read by
/// checkpoints, the progress display and live metrics, and the source of the result's series.
/// Bounded: a cumulative histogram and a capped series.
#[derive(Debug, Clone)]
pub struct Live {
    /// The end of the last finished interval, from the run's start.
    pub elapsed_ns: u64,
    /// How long the run is meant to last, when known.
    pub planned_ns: Option<u64>,
    /// The intervals so far, summed (its `latency` is every response's so far).
    pub total: Interval,
    /// The last finished interval's figures.
    pub last: Option<results::IntervalRecord>,
    /// Every interval so far, at most [`MAX_RECORD_INTERVALS`].
    pub intervals: results::series::Capped<results::IntervalRecord>,
}

impl Live {
    pub fn new(planned_ns: Option<u64>) -> Live {
        Live {
            elapsed_ns: 0,
            planned_ns,
            total: Interval::empty(),
            last: None,
            intervals: results::series::Capped::new(
                MAX_RECORD_INTERVALS,
                results::IntervalRecord::merged,
            ),
        }
    }

    fn add(&mut self, iv: &Interval) {
        self.total.add(iv);
        self.elapsed_ns = iv.end_ns;
        let r = iv.record();
        self.last = Some(r);
        self.intervals.push(r);
    }
}

/// What a thread tells the collector.
enum Msg {
    /// A finished interval: the thread and the interval's index.
    Interval(usize, u64, Box<Interval>),
    /// The thread has finished (sent when its reporter is dropped, however it ended).
    Done(usize),
}

/// A thread's line to the collector; says `Done` when dropped.
struct Reporter {
    index: usize,
    tx: std::sync::mpsc::Sender<Msg>,
}

impl Drop for Reporter {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Done(self.index));
    }
}

/// Merges the threads' intervals of the same index as soon as every thread has moved past it,
/// hands each merged interval to `observe` (the `.hlog`) and adds it to `live`. Holds only the
/// intervals not yet finished by every thread.
fn collect(
    rx: std::sync::mpsc::Receiver<Msg>,
    threads: usize,
    live: &std::sync::Mutex<Live>,
    observe: &mut (dyn FnMut(&Interval) + Send),
) {
    let mut pending: std::collections::BTreeMap<u64, Interval> = Default::default();
    // The highest index each thread has reported (`u64::MAX` once it is done).
    let mut reached: Vec<Option<u64>> = vec![None; threads];
    let mut emit = |iv: Interval| {
        observe(&iv);
        if let Ok(mut l) = live.lock() {
            l.add(&iv);
        }
    };
    for msg in rx {
        match msg {
            Msg::Interval(t, k, iv) => {
                reached[t] = Some(k);
                match pending.get_mut(&k) {
                    Some(p) => p.add(&iv),
                    None => {
                        pending.insert(k, *iv);
                    }
                }
            }
            Msg::Done(t) => reached[t] = Some(u64::MAX),
        }
        let floor = reached.iter().map(|r| r.unwrap_or(0)).min().unwrap_or(0);
        let all_reported = reached.iter().all(Option::is_some);
        while let Some(entry) = pending.first_entry() {
            if all_reported && *entry.key() <= floor {
                emit(entry.remove());
            } else {
                break;
            }
        }
    }
    // Every sender is gone: whatever is left is final.
    for (_, iv) in std::mem::take(&mut pending) {
        emit(iv);
    }
}

/// How the generator itself did.
#[derive(Debug, Clone)]
pub struct SelfCheck {
    /// Open loop: how late each due request was dispatched by dyno itself (not by queueing).
    pub lag: Histogram,
    /// Open loop: the requests the profile asked for, per second (`None` in closed loop).
    pub intended_per_s: Option<f64>,
    /// Requests started per second.
    pub achieved_per_s: f64,
    /// CPU time of dyno's process during the run: user and system, ns.
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    /// The busiest load thread's CPU time over its wall time.
    pub busiest_thread: f64,
    /// How the load threads waited ([`coalesce`]).
    pub waits: Waits,
}

/// What a load run produced.
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// Latency (from the intended start) and service time (from the actual send) of every
    /// response, and failures by class.
    pub recorder: Recorder,
    pub counters: Counters,
    /// The time series, bounded ([`MAX_RECORD_INTERVALS`]); each interval was also handed to the
    /// run's observer as it ended.
    pub intervals: Vec<results::IntervalRecord>,
    pub check: SelfCheck,
    /// TLS targets: each connection's handshake, from TCP connected to the handshake done.
    pub handshake: Histogram,
    pub wall_ns: u64,
    pub interrupted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
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

struct Conn {
    stream: Option<TcpStream>,
    /// TLS targets: the secure channel over `stream`.
    tls: Option<Box<dyn Channel>>,
    /// When the TLS handshake began (TCP connected), until it is done and recorded.
    handshake_from: Option<u64>,
    state: State,
    reader: Box<dyn ResponseReader>,
    written: usize,
    /// When the request in flight was due (latency starts here).
    intended: u64,
    /// When the connection started working on it (the timeout starts here).
    started: u64,
    /// When its first byte was written (service time starts here).
    sent: u64,
    /// Closed loop: requests this connection may still start (`u64::MAX` for a duration stop).
    remaining: u64,
    /// Closed loop: when the next request is due, after a failure pause.
    retry_at: Option<u64>,
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
struct Share {
    index: usize,
    connections: usize,
    max_connections: usize,
    schedule: Schedule,
    stop: Option<Stop>,
    closed_remaining: u64,
}

struct Worker<'a> {
    spec: &'a LoadSpec,
    clock: Clock,
    poll: Poll,
    timer: timer::Timer,
    conns: Vec<Conn>,
    idle: Vec<usize>,
    backlog: VecDeque<u64>,
    rec: Recorder,
    lag: Histogram,
    handshake: Histogram,
    counters: Counters,
    buf: Vec<u8>,
    open: bool,
    max_connections: usize,
    // Intervals.
    interval_ns: u64,
    interval_index: u64,
    interval_hist: Histogram,
    /// The counters and errors at the end of the last interval (an interval holds the growth).
    interval_base: (Counters, [u64; ErrorClass::COUNT]),
    reporter: Reporter,
    // Outstanding requests, time-weighted.
    outstanding: u64,
    outstanding_since: u64,
    outstanding_area: f64,
    start: u64,
    issuing: bool,
    closed_stop: Option<Stop>,
    /// Connections with a `retry_at` set (the loops over them are skipped when zero).
    pausing: usize,
    window: coalesce::Window,
}

struct WorkerResult {
    rec: Recorder,
    lag: Histogram,
    handshake: Histogram,
    counters: Counters,
    waits: Waits,
    cpu_ns: u64,
    wall_ns: u64,
    interrupted: bool,
}

fn io_err(context: &'static str, e: &io::Error) -> OpError {
    OpError::new(ErrorClass::of_io(e), format!("{context}: {e}"))
}

/// Writes a channel's pending ciphertext: `Ok(true)` when all of it went out, `Ok(false)` when
/// the socket is full (the rest goes when it is writable again).
fn flush_tls(tls: &mut dyn Channel, socket: &mut dyn Write) -> io::Result<bool> {
    while tls.wants_write() {
        match tls.write_tls(socket) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Takes plaintext from a channel into `buf`, reading and processing ciphertext from the socket
/// as needed: the inner result is what a plain socket's `read` would give (`Ok(0)` at the end,
/// `WouldBlock` when nothing more has arrived); the outer `Err` is a TLS failure.
fn recv_tls(
    tls: &mut dyn Channel,
    socket: &mut TcpStream,
    buf: &mut [u8],
) -> Result<io::Result<usize>, OpError> {
    let mut closed = false;
    // Each pass reads from the socket; it ends when the socket has nothing more.
    loop {
        match tls.recv(buf) {
            Ok(n) => return Ok(Ok(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && closed => return Ok(Ok(0)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // TCP closed without TLS's close_notify: an end all the same.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Ok(0)),
            Err(e) => return Ok(Err(e)),
        }
        match tls.read_tls(socket) {
            Ok(0) => closed = true,
            Ok(_) => {}
            Err(e) => return Ok(Err(e)),
        }
        tls.process()?;
        // Handshake messages and alerts; a full socket keeps them for the next writable event.
        if let Err(e) = flush_tls(tls, socket) {
            return Ok(Err(e));
        }
    }
}

/// Completes a channel's handshake on a blocking socket, within `timeout`.
fn handshake_blocking(
    tls: &mut dyn Channel,
    s: &mut std::net::TcpStream,
    timeout: Duration,
) -> io::Result<()> {
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    // A handshake is a few round trips; this bounds a server that keeps sending without ending it.
    for _ in 0..64 {
        while tls.wants_write() {
            tls.write_tls(s)?;
        }
        if !tls.is_handshaking() {
            s.set_read_timeout(None)?;
            s.set_write_timeout(None)?;
            return Ok(());
        }
        if tls.read_tls(s)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        tls.process()
            .map_err(|e| io::Error::other(e.message.to_string()))?;
    }
    Err(io::Error::other("the TLS handshake did not end"))
}

impl<'a> Worker<'a> {
    fn new(
        spec: &'a LoadSpec,
        clock: Clock,
        share: &Share,
        reporter: Reporter,
    ) -> io::Result<Worker<'a>> {
        let poll = Poll::new()?;
        let timer = timer::Timer::new(poll.registry(), TIMER)?;
        Ok(Worker {
            spec,
            clock,
            poll,
            timer,
            conns: Vec::with_capacity(share.max_connections),
            idle: Vec::with_capacity(share.max_connections),
            backlog: VecDeque::new(),
            rec: Recorder::new(),
            lag: results::new_histogram(),
            handshake: results::new_histogram(),
            counters: Counters::default(),
            buf: vec![0; READ_CHUNK],
            open: share.schedule.is_open(),
            max_connections: share.max_connections,
            interval_ns: spec.interval.as_nanos().max(1_000_000) as u64,
            interval_index: 0,
            interval_hist: results::new_histogram(),
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
        })
    }

    fn add_conn(&mut self, remaining: u64) -> usize {
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
        });
        self.conns.len() - 1
    }

    fn set_outstanding(&mut self, now: u64, n: u64) {
        self.outstanding_area +=
            self.outstanding as f64 * now.saturating_sub(self.outstanding_since) as f64;
        self.outstanding_since = now;
        self.outstanding = n;
        self.counters.outstanding_max = self.counters.outstanding_max.max(n);
    }

    fn in_flight(&self) -> u64 {
        self.conns.iter().filter(|c| c.busy()).count() as u64
    }

    /// Starts request `intended` on connection `ci`, connecting first if needed.
    fn start(&mut self, ci: usize, intended: u64, now: u64) {
        self.counters.requests += 1;
        let c = &mut self.conns[ci];
        if c.remaining != u64::MAX {
            c.remaining -= 1;
        }
        c.intended = intended;
        c.started = now;
        c.written = 0;
        c.reader.reset();
        if c.stream.is_none() {
            match TcpStream::connect(self.spec.addr) {
                Ok(mut s) => {
                    if let Err(e) = self.poll.registry().register(
                        &mut s,
                        Token(ci),
                        Interest::READABLE | Interest::WRITABLE,
                    ) {
                        self.fail(ci, io_err("register", &e), now);
                        return;
                    }
                    let c = &mut self.conns[ci];
                    c.stream = Some(s);
                    c.state = State::Connecting;
                }
                Err(e) => {
                    self.fail(ci, io_err("connect", &e), now);
                    return;
                }
            }
        } else {
            c.state = State::Writing;
            self.write(ci, now);
        }
        let n = self.outstanding + 1;
        self.set_outstanding(now, n);
    }

    /// Writes what is left of the request; moves to reading once it is all out.
    fn write(&mut self, ci: usize, now: u64) {
        let req = self.spec.protocol.request();
        let c = &mut self.conns[ci];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        if c.written == 0 {
            c.sent = now;
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
            match flush_tls(tls.as_mut(), stream) {
                Ok(true) => c.state = State::Reading,
                Ok(false) => {}
                Err(e) => self.fail(ci, io_err("send", &e), now),
            }
            return;
        }
        while c.written < req.len() {
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

    /// Reads what has arrived; completes the response when the reader says so.
    fn read(&mut self, ci: usize, now: u64) {
        loop {
            let c = &mut self.conns[ci];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            let got = match c.tls.as_mut() {
                None => stream.read(&mut self.buf),
                Some(tls) => match recv_tls(tls.as_mut(), stream, &mut self.buf) {
                    Ok(got) => got,
                    Err(e) => {
                        self.fail(ci, e, now);
                        return;
                    }
                },
            };
            if let (Some(from), Some(tls)) = (c.handshake_from, c.tls.as_ref())
                && !tls.is_handshaking()
            {
                self.handshake
                    .saturating_record(now.saturating_sub(from).max(1));
                c.handshake_from = None;
            }
            let (n, eof) = match got {
                Ok(0) => (0, true),
                Ok(n) => (n, false),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    if c.state == State::Reading || c.state == State::Writing {
                        self.fail(ci, io_err("receive", &e), now);
                    } else {
                        self.drop_stream(ci);
                    }
                    return;
                }
            };
            self.counters.bytes_in += n as u64;
            if c.state != State::Reading {
                // Bytes or a close while no request is in flight.
                if n > 0 && c.state == State::Idle {
                    // A server talking out of turn: the connection can no longer be trusted.
                    self.drop_stream(ci);
                    self.rec.fail(OpError::new(
                        ErrorClass::Protocol,
                        "bytes received with no request in flight",
                    ));
                } else if eof {
                    self.drop_stream(ci);
                }
                return;
            }
            match c.reader.feed(&self.buf[..n], eof) {
                Ok(Feed::More) if eof => {
                    self.fail(
                        ci,
                        OpError::new(
                            ErrorClass::Reset,
                            "connection closed before the response ended",
                        ),
                        now,
                    );
                    return;
                }
                Ok(Feed::More) => {}
                Ok(Feed::Done {
                    used,
                    outcome,
                    keep_alive,
                }) => {
                    if used < n {
                        self.fail(
                            ci,
                            OpError::new(ErrorClass::Protocol, "more bytes than the response"),
                            now,
                        );
                        return;
                    }
                    self.complete(ci, outcome, keep_alive && !eof, now);
                    return;
                }
                Err(e) => {
                    self.fail(ci, e, now);
                    return;
                }
            }
        }
    }

    fn drop_stream(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.tls = None;
        c.handshake_from = None;
        c.state = State::Closed;
    }

    /// A response ended.
    fn complete(&mut self, ci: usize, outcome: Result<(), OpError>, keep_alive: bool, now: u64) {
        let c = &mut self.conns[ci];
        let latency = now.saturating_sub(c.intended);
        let service = now.saturating_sub(c.sent);
        self.counters.responses += 1;
        if outcome.is_ok() {
            self.counters.ok += 1;
        }
        self.rec.service.saturating_record(service.max(1));
        self.window.observe(service);
        self.rec.record(latency, outcome.map(|_| 0));
        self.interval_hist.saturating_record(latency.max(1));
        let reuse = keep_alive && !self.spec.protocol.connection_per_request();
        if reuse {
            self.conns[ci].state = State::Idle;
        } else {
            self.drop_stream(ci);
        }
        let n = self.outstanding.saturating_sub(1);
        self.set_outstanding(now, n);
        self.next_for(ci, now);
    }

    /// A request failed: count it (no latency: there was no response), close the connection.
    ///
    /// A failure inside `start` itself (the connect call failed at once) never starts another
    /// request from here, so failures cannot recurse: a closed-loop connection pauses, an
    /// open-loop one goes back to the idle list for the next due request.
    fn fail(&mut self, ci: usize, e: OpError, now: u64) {
        let was_busy = self.conns[ci].busy();
        let refused = e.class == ErrorClass::Refused;
        self.rec.fail(e);
        self.drop_stream(ci);
        if was_busy {
            let n = self.outstanding.saturating_sub(1);
            self.set_outstanding(now, n);
        }
        if self.open {
            if was_busy {
                self.next_for(ci, now);
            } else {
                self.idle.push(ci);
            }
        } else if refused || !was_busy {
            if self.conns[ci].retry_at.is_none() {
                self.pausing += 1;
            }
            self.conns[ci].retry_at = Some(now + RETRY_PAUSE_NS);
        } else {
            self.next_for(ci, now);
        }
    }

    /// What a connection does after a request ended.
    fn next_for(&mut self, ci: usize, now: u64) {
        if self.open {
            if let Some(intended) = self.backlog.pop_front() {
                // It was counted as outstanding when queued; `start` counts it again.
                let n = self.outstanding.saturating_sub(1);
                self.set_outstanding(now, n);
                self.start(ci, intended, now);
            } else {
                self.idle.push(ci);
            }
            return;
        }
        if self.may_start(ci, now) {
            self.start(ci, now, now);
        }
    }

    /// Closed loop: whether connection `ci` may start another request now.
    fn may_start(&self, ci: usize, now: u64) -> bool {
        self.issuing && self.conns[ci].remaining > 0 && !self.closed_over(now)
    }

    /// Closed loop with a duration: true once it has passed.
    fn closed_over(&self, now: u64) -> bool {
        matches!(self.closed_stop, Some(Stop::Duration { ns }) if now - self.start >= ns)
    }

    /// An open-loop request is due at `intended`.
    fn dispatch(&mut self, intended: u64, now: u64) {
        self.lag
            .saturating_record(now.saturating_sub(intended).max(1));
        self.window.due(intended);
        if let Some(ci) = self.idle.pop() {
            self.start(ci, intended, now);
        } else if self.conns.len() < self.max_connections {
            let ci = self.add_conn(u64::MAX);
            self.start(ci, intended, now);
        } else if self.backlog.len() < MAX_BACKLOG {
            self.backlog.push_back(intended);
            let n = self.outstanding + 1;
            self.set_outstanding(now, n);
        } else {
            self.counters.unsent += 1;
        }
    }

    /// Ends the current interval: its growth of the counters and its histogram go to the
    /// collector (one message a thread per interval; nothing is kept here).
    fn flush_interval(&mut self, now: u64) {
        let start = self.start + self.interval_index * self.interval_ns;
        let mut h = results::new_histogram();
        std::mem::swap(&mut h, &mut self.interval_hist);
        let (c0, e0) = &self.interval_base;
        let c = &self.counters;
        let mut errors = self.rec.errors;
        for (e, base) in errors.iter_mut().zip(e0) {
            *e -= base;
        }
        let iv = Interval {
            start_ns: start - self.start,
            end_ns: (start + self.interval_ns).min(now) - self.start,
            latency: h,
            requests: c.requests - c0.requests,
            responses: c.responses - c0.responses,
            ok: c.ok - c0.ok,
            connects: c.connects - c0.connects,
            bytes_in: c.bytes_in - c0.bytes_in,
            bytes_out: c.bytes_out - c0.bytes_out,
            errors,
        };
        self.interval_base = (self.counters.clone(), self.rec.errors);
        let _ = self.reporter.tx.send(Msg::Interval(
            self.reporter.index,
            self.interval_index,
            Box::new(iv),
        ));
        self.interval_index = (now - self.start) / self.interval_ns;
    }

    fn scan_timeouts(&mut self, now: u64) {
        let timeout = self.spec.timeout.as_nanos() as u64;
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            if c.busy() && now.saturating_sub(c.started) > timeout {
                let e = OpError::new(
                    ErrorClass::Timeout,
                    "no complete response within the timeout",
                );
                self.fail(ci, e, now);
            }
        }
    }

    fn handle(&mut self, ci: usize, now: u64) {
        let state = self.conns[ci].state;
        if state == State::Connecting {
            let c = &mut self.conns[ci];
            let Some(s) = c.stream.as_ref() else { return };
            match s.take_error() {
                Ok(Some(e)) | Err(e) => {
                    self.fail(ci, io_err("connect", &e), now);
                    return;
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
                        }
                        Err(e) => {
                            self.fail(ci, e, now);
                            return;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                Err(e) => {
                    self.fail(ci, io_err("connect", &e), now);
                    return;
                }
            }
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

    /// Open loop: connects the connections opened up front, before the measured start, so the
    /// first requests do not pay for connecting. A connection that fails here is connected (and
    /// its failure counted) when it is first used.
    fn preconnect(&mut self, n: usize) {
        for _ in 0..n {
            let ci = self.add_conn(u64::MAX);
            let t0 = self.clock.now_ns();
            let mut tls = None;
            let connected =
                std::net::TcpStream::connect_timeout(&self.spec.addr, self.spec.timeout).and_then(
                    |mut s| {
                        s.set_nodelay(true)?;
                        // A TLS connection opened up front has its handshake done up front too.
                        tls = self.spec.protocol.channel().map_err(io::Error::other)?;
                        if let Some(ch) = tls.as_mut() {
                            handshake_blocking(ch.as_mut(), &mut s, self.spec.timeout)?;
                        }
                        s.set_nonblocking(true)?;
                        let mut s = TcpStream::from_std(s);
                        self.poll.registry().register(
                            &mut s,
                            Token(ci),
                            Interest::READABLE | Interest::WRITABLE,
                        )?;
                        Ok(s)
                    },
                );
            if let Ok(s) = connected {
                if tls.is_some() {
                    let ns = self.clock.now_ns().saturating_sub(t0);
                    self.handshake.saturating_record(ns.max(1));
                }
                let c = &mut self.conns[ci];
                c.stream = Some(s);
                c.tls = tls;
                c.state = State::Idle;
                self.counters.connects += 1;
            }
            self.idle.push(ci);
        }
    }

    fn run(
        mut self,
        mut share: Share,
        barrier: &Barrier,
        interrupt: &AtomicBool,
    ) -> io::Result<WorkerResult> {
        let mut events = Events::with_capacity(EVENTS);
        if self.open {
            self.preconnect(share.connections);
        }
        barrier.wait();
        let cpu0 = thread_cpu_ns();
        let start = self.clock.now_ns();
        self.start = start;
        self.outstanding_since = start;
        self.closed_stop = if self.open { None } else { share.stop };
        let mut next_scan = start + SCAN_NS;
        let mut next_arrival = if self.open {
            share.schedule.next(start, start)
        } else {
            None
        };
        let mut arrivals_started: u64 = 0;
        if !self.open {
            for _ in 0..share.connections {
                let ci = self.add_conn(share.closed_remaining);
                if share.closed_remaining > 0 {
                    self.start(ci, start, start);
                }
            }
        }
        let drain_ns = self.spec.timeout.as_nanos() as u64;
        let mut issuing_ended_at: Option<u64> = None;
        let mut interrupted = false;
        // When the thread last woke to something (a response, a due request, a timer).
        let mut last_wake = 0u64;
        // When the thread last sent requests that had fallen due.
        let mut last_dispatch = 0u64;
        loop {
            let now = self.clock.now_ns();
            if interrupt.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            // Open loop: dispatch every request that is due.
            while let Some(t) = next_arrival {
                if t > now {
                    break;
                }
                let stop_now = share
                    .stop
                    .is_some_and(|s| s.reached(arrivals_started, t - start));
                if stop_now {
                    next_arrival = None;
                    break;
                }
                self.dispatch(t, now);
                last_dispatch = now;
                arrivals_started += 1;
                next_arrival = share.schedule.next(start, now);
            }
            // Closed loop: connections pausing after a failure.
            if self.pausing > 0 {
                for ci in 0..self.conns.len() {
                    if self.conns[ci].retry_at.is_some_and(|at| at <= now) {
                        self.conns[ci].retry_at = None;
                        self.pausing -= 1;
                        if self.may_start(ci, now) {
                            self.start(ci, now, now);
                        }
                    }
                }
            }
            if now >= self.start + (self.interval_index + 1) * self.interval_ns {
                self.flush_interval(now);
            }
            if now >= next_scan {
                self.scan_timeouts(now);
                next_scan = now + SCAN_NS;
            }
            // Is issuing over?
            if self.issuing {
                let over = if self.open {
                    next_arrival.is_none()
                } else {
                    self.closed_over(now) || self.conns.iter().all(|c| c.remaining == 0)
                };
                if over {
                    self.issuing = false;
                    issuing_ended_at = Some(now);
                }
            }
            if !self.issuing {
                if self.in_flight() + self.backlog.len() as u64 == 0 {
                    break;
                }
                if issuing_ended_at.is_some_and(|t| now > t + drain_ns) {
                    break;
                }
            }
            // Sleep until the next thing to do: an arrival, a retry, an interval, a scan.
            let mut wake = next_scan.min(self.start + (self.interval_index + 1) * self.interval_ns);
            if let Some(t) = next_arrival {
                wake = wake.min(t);
            }
            if self.pausing > 0 {
                for c in &self.conns {
                    if let Some(t) = c.retry_at {
                        wake = wake.min(t);
                    }
                }
            }
            let now = self.clock.now_ns();
            let window = self.window.ns(self.outstanding, !self.backlog.is_empty());
            let pace = self.window.pace_ns();
            let timeout = if wake <= now {
                Some(Duration::ZERO)
            } else if pace > 0 && wake < now + pace {
                // Requests fall due densely: wake once per pace, on the thread's own clock, and
                // send whatever fell due meanwhile (late by at most the pace, in its latency).
                timer::sleep_ns(wake.max(last_dispatch + pace) - now);
                self.window.slept(pace, true);
                Some(Duration::ZERO)
            } else if wake <= now + self.window.sleep_cost_ns() {
                Some(Duration::ZERO)
            } else if now < last_wake + window {
                // Within a window: sleep on the thread's own clock, not on its sockets, until the
                // window ends (or something is due sooner), then take whatever came in.
                timer::sleep_ns((last_wake + window).min(wake) - now);
                self.window.slept(window, false);
                Some(Duration::ZERO)
            } else {
                self.timer.arm(wake, wake - now)?;
                self.window.blocked();
                None
            };
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            let now = self.clock.now_ns();
            if !events.is_empty() {
                last_wake = now;
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    self.timer.acknowledge();
                    continue;
                }
                self.handle(ev.token().0, now);
            }
        }
        let end = self.clock.now_ns();
        // Whatever is still in flight or queued never got its response.
        let never = self.backlog.len() as u64;
        self.counters.unsent += never;
        if !interrupted {
            for ci in 0..self.conns.len() {
                if self.conns[ci].busy() {
                    let e = OpError::new(ErrorClass::Timeout, "no response before the run ended");
                    self.fail(ci, e, end);
                }
            }
        }
        self.set_outstanding(end, 0);
        self.flush_interval(end);
        let wall = end - start;
        self.counters.outstanding_mean = if wall > 0 {
            self.outstanding_area / wall as f64
        } else {
            0.0
        };
        Ok(WorkerResult {
            rec: self.rec,
            lag: self.lag,
            handshake: self.handshake,
            counters: self.counters,
            waits: self.window.waits(),
            cpu_ns: thread_cpu_ns() - cpu0,
            wall_ns: wall,
            interrupted,
        })
    }
}

/// Splits `n` into `parts` shares that differ by at most one.
fn split(n: usize, parts: usize, i: usize) -> usize {
    n / parts + usize::from(i < n % parts)
}

/// Runs a load and merges what every thread measured. Each interval, merged over the threads,
/// goes to `observe` and into `live` as soon as every thread has finished it; the result's
/// series is `live`'s.
pub fn run(
    spec: &LoadSpec,
    interrupt: &AtomicBool,
    live: &std::sync::Mutex<Live>,
    observe: &mut (dyn FnMut(&Interval) + Send),
) -> io::Result<LoadResult> {
    let threads = spec.threads.max(1);
    let clock = Clock::monotonic();
    let shares: Vec<Share> = (0..threads)
        .map(|i| match &spec.mode {
            LoadMode::Closed { connections, stop } => Share {
                index: i,
                connections: split(*connections, threads, i),
                max_connections: split(*connections, threads, i),
                schedule: Schedule::Closed,
                stop: Some(*stop),
                closed_remaining: match stop {
                    Stop::Count(n) | Stop::DurationOrCount { count: n, .. } => *n,
                    Stop::Duration { .. } => u64::MAX,
                },
            },
            LoadMode::Open {
                profile,
                arrival,
                seed,
                connections,
                max_connections,
                stop,
            } => Share {
                index: i,
                connections: split(*connections, threads, i),
                max_connections: split(*max_connections, threads, i).max(1),
                schedule: Schedule::Open(Arrivals::new(
                    profile.scaled(1.0 / threads as f64),
                    *arrival,
                    seed.wrapping_add(i as u64 * 0x9E37_79B9),
                )),
                stop: stop.map(|s| match s {
                    Stop::Count(n) => Stop::Count(split(n as usize, threads, i) as u64),
                    d => d,
                }),
                closed_remaining: u64::MAX,
            },
        })
        .collect();
    let barrier = Barrier::new(threads + 1);
    let (u0, s0) = process_cpu_ns();
    let (tx, rx) = std::sync::mpsc::channel();
    let results: Vec<io::Result<WorkerResult>> = std::thread::scope(|s| {
        let collector = std::thread::Builder::new()
            .name("dyno-load-intervals".into())
            .spawn_scoped(s, move || collect(rx, threads, live, observe))
            .expect("spawning the interval collector");
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| {
                let (clock, barrier) = (clock.clone(), &barrier);
                let reporter = Reporter {
                    index: share.index,
                    tx: tx.clone(),
                };
                std::thread::Builder::new()
                    .name(format!("dyno-load-{}", share.index))
                    .spawn_scoped(s, move || {
                        match Worker::new(spec, clock, &share, reporter) {
                            Ok(w) => w.run(share, barrier, interrupt),
                            Err(e) => {
                                barrier.wait();
                                Err(e)
                            }
                        }
                    })
                    .expect("spawning a load thread")
            })
            .collect();
        drop(tx);
        barrier.wait();
        let results = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a load thread panicked")))
            })
            .collect();
        let _ = collector.join();
        results
    });
    let (u1, s1) = process_cpu_ns();
    let mut parts = Vec::with_capacity(results.len());
    for r in results {
        parts.push(r?);
    }

    let mut recorder = Recorder::new();
    let mut lag = results::new_histogram();
    let mut handshake = results::new_histogram();
    let mut counters = Counters::default();
    let mut wall_ns = 0;
    let mut busiest: f64 = 0.0;
    let mut interrupted = false;
    let mut waits = Waits::default();
    for p in &parts {
        waits.add(&p.waits);
        recorder.merge(&p.rec);
        lag.add(&p.lag)
            .expect("histograms of one range always merge");
        handshake
            .add(&p.handshake)
            .expect("histograms of one range always merge");
        counters.add(&p.counters);
        wall_ns = wall_ns.max(p.wall_ns);
        if p.wall_ns > 0 {
            busiest = busiest.max(p.cpu_ns as f64 / p.wall_ns as f64);
        }
        interrupted |= p.interrupted;
    }
    let intended_per_s = match &spec.mode {
        LoadMode::Open { profile, .. } => profile.mean_per_s(),
        LoadMode::Closed { .. } => None,
    };
    let achieved_per_s = results::stats::per_s(counters.requests as f64, wall_ns);
    let intervals = live
        .lock()
        .map(|l| l.intervals.to_vec())
        .unwrap_or_default();
    Ok(LoadResult {
        recorder,
        counters,
        intervals,
        check: SelfCheck {
            lag,
            intended_per_s,
            achieved_per_s,
            cpu_user_ns: u1 - u0,
            cpu_sys_ns: s1 - s0,
            busiest_thread: busiest,
            waits,
        },
        handshake,
        wall_ns,
        interrupted,
    })
}
