//! An event-loop server: one loop per core the process may run on, each serving many
//! connections with nonblocking sockets (epoll through mio), and one thread accepting and handing
//! connections to the loops in turn.
//!
//! A thread per connection pays a context switch for every request once there are more
//! connections than cores; a loop reads every ready connection in one wake-up and answers each
//! with one write. What a connection says is up to a [`Protocol`]: the loop owns the sockets and
//! the buffers, the protocol turns bytes in into bytes out.
//!
//! # Bounds
//!
//! A connection's next request is read only once its last response has been handed to the kernel,
//! so it holds at most one request and one response in memory; buffers grown for a large frame
//! shrink back once it is done. One connection is served at most [`BUDGET`] reads in a row before
//! the others on its loop get their turn. At most `max_connections` are open at once; one over
//! the limit is told so by [`Protocol::refuse`] and closed.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};

/// A connection's buffers start (and shrink back to) this size.
const BUFFER: usize = 16 << 10;
/// Reads one connection is served in a row before the others on its loop get their turn.
pub const BUDGET: usize = 32;
const WAKER: Token = Token(usize::MAX);

/// What the loop asks of the bytes a connection has sent so far.
pub enum Step {
    /// A whole request was answered: drop this many bytes from the front of the input.
    Done(usize),
    /// As `Done`, then close the connection once the response is sent.
    Close(usize),
    /// No whole request yet: at least this many bytes (from the front) are needed.
    Need(usize),
}

/// A request/response protocol served by the loop.
pub trait Protocol: Send + Sync + 'static {
    /// Per-loop state (what every connection of one loop shares without locking).
    type Loop: 'static;
    /// Per-connection state.
    type Conn: 'static;
    /// A new loop's state, made on the loop's thread.
    fn start_loop(&self) -> Self::Loop;
    /// A new connection's state.
    fn open(&self, lp: &mut Self::Loop) -> Self::Conn;
    /// Answers the first whole request at the front of `input` by appending to `out` (which is
    /// empty). `Need` must ask for more than `input.len()` bytes.
    fn next(&self, conn: &mut Self::Conn, input: &[u8], out: &mut Vec<u8>) -> Step;
    /// The connection is closed.
    fn closed(&self, _lp: &mut Self::Loop, _conn: Self::Conn) {}
    /// Tells a connection over the limit why it is being closed.
    fn refuse(&self, stream: &mut std::net::TcpStream, limit: usize);
}

/// A running event-loop server; stopped (every connection closed) on [`EventServer::stop`] or drop.
pub struct EventServer {
    acceptor: crate::acceptor::Acceptor,
    loops: Vec<JoinHandle<()>>,
    wakers: Vec<Arc<Waker>>,
}

/// The loops to run: one per core this process may run on (its CPU affinity).
pub fn loops_wanted() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl EventServer {
    /// Serves `listener` with `loops` event loops (at least one).
    pub fn start<P: Protocol>(
        listener: TcpListener,
        protocol: Arc<P>,
        loops: usize,
        max_connections: usize,
    ) -> io::Result<EventServer> {
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        let mut wakers = Vec::new();
        let mut senders: Vec<Sender<std::net::TcpStream>> = Vec::new();
        for i in 0..loops.max(1) {
            let poll = Poll::new()?;
            let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
            let (tx, rx) = channel();
            let (protocol, live, stop) = (protocol.clone(), live.clone(), stop.clone());
            let l = move || Loop {
                state: protocol.start_loop(),
                poll,
                protocol,
                incoming: rx,
                conns: Vec::new(),
                free: Vec::new(),
                live,
                stop,
            };
            handles.push(
                std::thread::Builder::new()
                    .name(format!("dyno-loop-{i}"))
                    .spawn(move || l().run())?,
            );
            wakers.push(waker);
            senders.push(tx);
        }
        let (s, w, p) = (stop.clone(), wakers.clone(), protocol);
        let acceptor =
            crate::acceptor::Acceptor::spawn("dyno-accept", listener, stop, move |listener| {
                accept(listener, &s, &w, &senders, &live, &*p, max_connections)
            })?;
        Ok(EventServer {
            acceptor,
            loops: handles,
            wakers,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.acceptor.addr()
    }

    /// Stops accepting, closes every connection, and waits for the threads to end.
    pub fn stop(&mut self) {
        self.acceptor.stop();
        self.join_loops();
    }

    /// Blocks until the server is stopped from elsewhere (for `dyno serve`, until Ctrl-C).
    pub fn wait(&mut self) {
        self.acceptor.join();
        self.join_loops();
    }

    /// Wakes the loops (which see the stop flag) and waits for them.
    fn join_loops(&mut self) {
        for w in &self.wakers {
            let _ = w.wake();
        }
        for h in self.loops.drain(..) {
            let _ = h.join();
        }
    }
}

impl Drop for EventServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept<P: Protocol>(
    listener: TcpListener,
    stop: &AtomicBool,
    wakers: &[Arc<Waker>],
    senders: &[Sender<std::net::TcpStream>],
    live: &AtomicUsize,
    protocol: &P,
    max_connections: usize,
) {
    let mut next = 0;
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(mut stream) = stream else {
            // Out of descriptors, or the peer gave up: not the listener's fault; don't spin.
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let _ = stream.set_nodelay(true);
        if live.load(Ordering::SeqCst) >= max_connections {
            protocol.refuse(&mut stream, max_connections);
            continue;
        }
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        live.fetch_add(1, Ordering::SeqCst);
        let i = next % senders.len();
        next += 1;
        if senders[i].send(stream).is_err() {
            live.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        let _ = wakers[i].wake();
    }
    // Stopped: every loop wakes, sees the flag and ends.
    for w in wakers {
        let _ = w.wake();
    }
}

struct Conn<C> {
    stream: TcpStream,
    state: C,
    /// Bytes read: `input[start..end]` not yet consumed.
    input: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
    sent: usize,
    closing: bool,
}

/// What serving a connection for a while came to.
enum Drive {
    /// Waiting for the socket (readable or writable).
    Wait,
    /// Used its budget with more to do: serve again after the others.
    Again,
    Close,
}

struct Loop<P: Protocol> {
    state: P::Loop,
    poll: Poll,
    protocol: Arc<P>,
    incoming: Receiver<std::net::TcpStream>,
    conns: Vec<Option<Conn<P::Conn>>>,
    free: Vec<usize>,
    live: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl<P: Protocol> Loop<P> {
    fn run(&mut self) {
        let mut events = Events::with_capacity(1024);
        let mut again: Vec<usize> = Vec::new();
        let mut later: Vec<usize> = Vec::new();
        loop {
            let timeout = (!again.is_empty()).then_some(Duration::ZERO);
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                break;
            }
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            for ev in events.iter() {
                if ev.token() == WAKER {
                    self.admit(&mut later);
                } else {
                    later.push(ev.token().0);
                }
            }
            later.append(&mut again);
            later.sort_unstable();
            later.dedup();
            for i in later.drain(..) {
                match self.drive(i) {
                    Some(Drive::Wait) | None => {}
                    Some(Drive::Again) => again.push(i),
                    Some(Drive::Close) => self.close(i),
                }
            }
        }
        for i in 0..self.conns.len() {
            self.close(i);
        }
    }

    /// Registers the connections the acceptor handed over; each is served at once.
    fn admit(&mut self, serve: &mut Vec<usize>) {
        while let Ok(s) = self.incoming.try_recv() {
            let i = self.free.pop().unwrap_or_else(|| {
                self.conns.push(None);
                self.conns.len() - 1
            });
            let mut stream = TcpStream::from_std(s);
            let registered = self.poll.registry().register(
                &mut stream,
                Token(i),
                Interest::READABLE | Interest::WRITABLE,
            );
            if registered.is_err() {
                self.free.push(i);
                self.live.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            self.conns[i] = Some(Conn {
                stream,
                state: self.protocol.open(&mut self.state),
                input: vec![0; BUFFER],
                start: 0,
                end: 0,
                out: Vec::with_capacity(BUFFER),
                sent: 0,
                closing: false,
            });
            serve.push(i);
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(mut c) = self.conns.get_mut(i).and_then(Option::take) {
            let _ = self.poll.registry().deregister(&mut c.stream);
            self.protocol.closed(&mut self.state, c.state);
            self.free.push(i);
            self.live.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Writes what is owed, answers what has arrived, reads more: until the socket would block,
    /// the connection ends, or its budget is spent.
    fn drive(&mut self, i: usize) -> Option<Drive> {
        let p = &*self.protocol;
        let c = self.conns.get_mut(i)?.as_mut()?;
        let mut reads = 0;
        // A short read drains a stream socket: whatever arrives after it raises a new
        // (edge-triggered) event, so the read that would only say "would block" is skipped:
        // one system call fewer per request.
        let mut drained = false;
        Some(loop {
            while c.sent < c.out.len() {
                match c.stream.write(&c.out[c.sent..]) {
                    Ok(0) => return Some(Drive::Close),
                    Ok(n) => c.sent += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(Drive::Wait),
                    Err(_) => return Some(Drive::Close),
                }
            }
            if c.sent > 0 {
                c.out.clear();
                c.sent = 0;
                if c.out.capacity() > 4 * BUFFER {
                    c.out = Vec::with_capacity(BUFFER);
                }
            }
            if c.closing {
                break Drive::Close;
            }
            let need = match p.next(&mut c.state, &c.input[c.start..c.end], &mut c.out) {
                Step::Done(n) => {
                    c.start += n;
                    continue;
                }
                Step::Close(n) => {
                    c.start += n;
                    c.closing = true;
                    continue;
                }
                Step::Need(n) => n,
            };
            if c.start == c.end {
                c.start = 0;
                c.end = 0;
                if c.input.len() > 4 * BUFFER && need <= BUFFER {
                    c.input = vec![0; BUFFER];
                }
            }
            if c.start + need.max(1) > c.input.len() || c.end == c.input.len() {
                c.input.copy_within(c.start..c.end, 0);
                c.end -= c.start;
                c.start = 0;
                if need > c.input.len() {
                    // At least doubled, so a protocol that asks for one more byte at a time
                    // (a line) costs amortized constant copying.
                    c.input.resize(need.max(2 * c.input.len()), 0);
                }
            }
            if drained {
                break Drive::Wait;
            }
            if reads == BUDGET {
                break Drive::Again;
            }
            reads += 1;
            let room = c.input.len() - c.end;
            match c.stream.read(&mut c.input[c.end..]) {
                Ok(0) => break Drive::Close,
                Ok(n) => {
                    c.end += n;
                    drained = n < room;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Drive::Wait,
                Err(_) => break Drive::Close,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Echoes each line back; `quit` closes.
    struct Lines {
        closed: Mutex<usize>,
    }

    impl Protocol for Lines {
        type Loop = ();
        type Conn = ();
        fn start_loop(&self) {}
        fn open(&self, _: &mut ()) {}
        fn next(&self, _: &mut (), input: &[u8], out: &mut Vec<u8>) -> Step {
            match input.iter().position(|&b| b == b'\n') {
                Some(i) if &input[..i] == b"quit" => Step::Close(i + 1),
                Some(i) => {
                    out.extend_from_slice(&input[..=i]);
                    Step::Done(i + 1)
                }
                None => Step::Need(input.len() + 1),
            }
        }
        fn closed(&self, _: &mut (), _: ()) {
            *self.closed.lock().unwrap() += 1;
        }
        fn refuse(&self, s: &mut std::net::TcpStream, limit: usize) {
            let _ = writeln!(s, "full at {limit}");
        }
    }

    fn line(s: &mut std::net::TcpStream) -> String {
        let mut r = io::BufReader::new(s);
        let mut l = String::new();
        io::BufRead::read_line(&mut r, &mut l).unwrap();
        l
    }

    #[test]
    fn serves_many_connections_on_two_loops_and_refuses_over_the_limit() {
        let p = Arc::new(Lines {
            closed: Mutex::new(0),
        });
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut s = EventServer::start(l, p.clone(), 2, 3).unwrap();
        let mut conns: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(s.addr()).unwrap())
            .collect();
        for c in &mut conns {
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        }
        // A request split over two writes, and a large one that grows the buffer.
        for (n, c) in conns.iter_mut().enumerate() {
            c.write_all(b"hel").unwrap();
            std::thread::sleep(Duration::from_millis(5));
            c.write_all(format!("lo {n}\n").as_bytes()).unwrap();
            assert_eq!(line(c), format!("hello {n}\n"));
        }
        let big = "x".repeat(3 * BUFFER) + "\n";
        conns[0].write_all(big.as_bytes()).unwrap();
        let mut back = vec![0; big.len()];
        conns[0].read_exact(&mut back).unwrap();
        assert_eq!(back, big.as_bytes());
        let mut fourth = std::net::TcpStream::connect(s.addr()).unwrap();
        fourth
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(line(&mut fourth), "full at 3\n");
        conns[1].write_all(b"quit\n").unwrap();
        assert_eq!(conns[1].read(&mut [0; 8]).unwrap(), 0, "closed after quit");
        std::thread::sleep(Duration::from_millis(100));
        let mut fifth = std::net::TcpStream::connect(s.addr()).unwrap();
        fifth
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        fifth.write_all(b"again\n").unwrap();
        assert_eq!(line(&mut fifth), "again\n");
        s.stop();
        assert_eq!(
            *p.closed.lock().unwrap(),
            4,
            "every connection closed by the stop"
        );
        assert_eq!(conns[0].read(&mut [0; 8]).unwrap_or(0), 0);
    }

    #[test]
    fn a_client_that_never_reads_does_not_hold_up_the_others() {
        let p = Arc::new(Lines {
            closed: Mutex::new(0),
        });
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = EventServer::start(l, p, 1, 8).unwrap();
        // Pipelines far more than the socket buffers hold, and never reads the echoes.
        let mut hog = std::net::TcpStream::connect(s.addr()).unwrap();
        hog.set_write_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let chunk = "y".repeat(1000) + "\n";
        for _ in 0..10_000 {
            if hog.write_all(chunk.as_bytes()).is_err() {
                break;
            }
        }
        let mut other = std::net::TcpStream::connect(s.addr()).unwrap();
        other
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        other.write_all(b"ping\n").unwrap();
        assert_eq!(line(&mut other), "ping\n");
    }
}
