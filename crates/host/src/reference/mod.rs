//! Reference servers for request/response load: known behaviour to measure dyno against.
//!
//! [`Server::start`] takes a bound listener and serves it on its own threads until
//! [`Server::stop`] (or drop): tests bind `127.0.0.1:0` and never need a fixed port. One thread per
//! connection, at most [`MAX_CONNECTIONS`]; a connection over the limit is closed at once.
//!
//! What a response holds ([`Body`]): a fixed small JSON document (the "what version are you"
//! endpoint whose cost is the server's baseline), or a payload whose size is drawn uniformly from a
//! range (the seed's random documents of a few bytes to 20,000). [`Stall`] makes every response
//! due inside a window wait for the window's end (P ms every Q s, from the server's start): the
//! pattern that exposes coordinated omission. [`Fault`] makes every Nth request get a connection
//! reset or garbage bytes instead of an answer. An HTTP request for `/status/NNN` is answered
//! with status NNN (as httpbin does), to test how clients count errors; one for `/retain/KIB`
//! makes the server keep KIB kibibytes it has written to (a deliberate leak, up to
//! [`MAX_RETAINED`] in all), to test resource monitoring and the leak verdict.

mod h2;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Connections served at once; one thread each, so this bounds the server's threads.
pub const MAX_CONNECTIONS: usize = 4096;
/// Request headers larger than this get a 431 and the connection is closed.
const MAX_REQUEST_HEAD: usize = 64 << 10;
/// Request bodies larger than this get a 413 and the connection is closed.
const MAX_REQUEST_BODY: u64 = 16 << 20;
/// Payloads larger than this are refused at start-up.
pub const MAX_PAYLOAD: usize = 64 << 20;
/// Memory `/retain/KIB` may hold in all: enough for a test to see RSS grow, small enough never to
/// press the machine. Past it, `/retain` answers 507.
pub const MAX_RETAINED: usize = 512 << 20;
/// One `/retain` request holds at most this much.
const MAX_RETAIN_PER_REQUEST: usize = 64 << 20;

/// What a response holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A fixed small JSON document naming the server and its version.
    Json,
    /// A payload of `min..=max` bytes, the size drawn uniformly for each response.
    Sizes { min: usize, max: usize },
}

/// Every response due inside `[k·every, k·every + pause)` (from the server's start) waits for
/// the window's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub pause: Duration,
    pub every: Duration,
}

/// Deliberate misbehaviour, every `every`-th request of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Close the connection with a reset instead of answering.
    Reset { every: u64 },
    /// Answer with bytes that are not the protocol, then close.
    Garbage { every: u64 },
}

/// How the TCP server frames its responses (the same forms as the `tcp://` driver).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpFraming {
    /// A 4-byte big-endian length, then the payload.
    Length4,
    /// The payload (which never holds a newline), then `\n`.
    Line,
    /// The payload, then the server closes the connection.
    Close,
    /// The payload alone, connection kept open (for clients that know the size: `fixed:N`).
    Raw,
}

/// The protocol a server speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Http,
    /// Raw TCP: each request is a line (`\n`-terminated), unless `on_connect`: then the response
    /// is sent as soon as the connection opens, with no request.
    Tcp {
        framing: TcpFraming,
        on_connect: bool,
    },
}

/// A reference server's behaviour.
#[derive(Debug, Clone)]
pub struct Spec {
    pub kind: Kind,
    pub body: Body,
    pub stall: Option<Stall>,
    pub fault: Option<Fault>,
    pub seed: u64,
    /// One worker for all connections, taking this long over each request: a server whose
    /// capacity is known by construction (1 / the service time).
    pub service: Option<Duration>,
}

/// Counters a running server keeps.
#[derive(Debug, Default)]
pub struct Stats {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    pub refused: AtomicU64,
}

struct Shared {
    spec: Spec,
    started: Instant,
    /// Filler bytes for payloads, as long as the largest payload.
    filler: Vec<u8>,
    json: Vec<u8>,
    live: AtomicUsize,
    stop: Arc<AtomicBool>,
    stats: Stats,
    /// What `/retain` requests hold, until the server stops.
    retained: std::sync::Mutex<Vec<Vec<u8>>>,
    retained_bytes: AtomicUsize,
    /// The one worker of `Spec::service`.
    worker: std::sync::Mutex<()>,
}

/// A running server.
pub struct Server {
    shared: Arc<Shared>,
    acceptor: crate::acceptor::Acceptor,
}

use results::rng::splitmix64 as splitmix;

impl Server {
    /// Serves `listener` on background threads.
    pub fn start(listener: TcpListener, spec: Spec) -> io::Result<Server> {
        let max = match spec.body {
            Body::Json => 0,
            Body::Sizes { min, max } => {
                if min > max || max > MAX_PAYLOAD {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("payload sizes {min}..{max}: need min <= max <= {MAX_PAYLOAD}"),
                    ));
                }
                max
            }
        };
        if let Some(s) = spec.stall
            && (s.every.is_zero() || s.pause >= s.every)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a stall's pause must be shorter than its period",
            ));
        }
        // Letters only: a payload never holds the line framing's newline.
        let mut state = spec.seed;
        let filler = (0..max)
            .map(|_| b'a' + (splitmix(&mut state) % 26) as u8)
            .collect();
        let json = format!(
            "{{\"server\":\"dyno reference\",\"version\":\"{}\"}}",
            env!("CARGO_PKG_VERSION")
        )
        .into_bytes();
        let shared = Arc::new(Shared {
            spec,
            started: Instant::now(),
            filler,
            json,
            live: AtomicUsize::new(0),
            retained: std::sync::Mutex::new(Vec::new()),
            retained_bytes: AtomicUsize::new(0),
            worker: std::sync::Mutex::new(()),
            stop: Arc::new(AtomicBool::new(false)),
            stats: Stats::default(),
        });
        let s = shared.clone();
        let acceptor = crate::acceptor::Acceptor::spawn(
            "dyno-serve-accept",
            listener,
            shared.stop.clone(),
            move |listener| accept_loop(listener, s),
        )?;
        Ok(Server { shared, acceptor })
    }

    pub fn addr(&self) -> SocketAddr {
        self.acceptor.addr()
    }

    pub fn stats(&self) -> &Stats {
        &self.shared.stats
    }

    /// Stops accepting; connections in progress end with their current request.
    pub fn stop(&mut self) {
        self.acceptor.stop();
    }

    /// Blocks until the server stops (for `dyno serve`).
    pub fn wait(mut self) {
        self.acceptor.join();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut conn_seed = shared.spec.seed;
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if shared.live.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            shared.stats.refused.fetch_add(1, Ordering::Relaxed);
            continue; // dropped: closed at once
        }
        shared.live.fetch_add(1, Ordering::SeqCst);
        shared.stats.connections.fetch_add(1, Ordering::Relaxed);
        let s = shared.clone();
        let seed = splitmix(&mut conn_seed);
        let spawned = std::thread::Builder::new()
            .name("dyno-serve-conn".into())
            .spawn(move || {
                let _ = stream.set_nodelay(true);
                let _ = serve_connection(stream, &s, seed);
                s.live.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            shared.live.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// What to do with the next request.
enum Action {
    Answer,
    Reset,
    Garbage,
}

impl Shared {
    /// Holds `bytes` more (written to, so they count in RSS): 200, or 507 past [`MAX_RETAINED`].
    fn retain(&self, bytes: usize) -> u16 {
        let before = self.retained_bytes.fetch_add(bytes, Ordering::Relaxed);
        if before + bytes > MAX_RETAINED {
            self.retained_bytes.fetch_sub(bytes, Ordering::Relaxed);
            return 507;
        }
        let block = vec![0xA5u8; bytes];
        if let Ok(mut held) = self.retained.lock() {
            held.push(block);
        }
        200
    }

    fn next_action(&self) -> Action {
        let n = self.stats.requests.fetch_add(1, Ordering::Relaxed) + 1;
        match self.spec.fault {
            Some(Fault::Reset { every }) if every > 0 && n.is_multiple_of(every) => Action::Reset,
            Some(Fault::Garbage { every }) if every > 0 && n.is_multiple_of(every) => {
                Action::Garbage
            }
            _ => Action::Answer,
        }
    }

    /// The status a request for `path` gets: `/status/NNN` answers with that status (as httpbin
    /// does), for testing error counting; `/retain/KIB` holds memory; anything else 200.
    fn status_of(&self, path: &str) -> u16 {
        if let Some(kib) = path.strip_prefix("/retain/") {
            return match kib.parse::<usize>() {
                Ok(kib) if kib << 10 <= MAX_RETAIN_PER_REQUEST => self.retain(kib << 10),
                _ => 400,
            };
        }
        (path.strip_prefix("/status/"))
            .and_then(|c| c.parse::<u16>().ok())
            .filter(|c| (200..600).contains(c))
            .unwrap_or(200)
    }

    /// Before an answer: this request's fault, if it gets one, done on `out` (a reset, or
    /// `garbage` written): `false`, the connection is to end. Else the stall waited out: `true`.
    fn fault_or_stall(&self, out: &mut TcpStream, garbage: &[u8]) -> io::Result<bool> {
        match self.next_action() {
            Action::Reset => {
                reset(out.try_clone()?);
                Ok(false)
            }
            Action::Garbage => {
                out.write_all(garbage)?;
                Ok(false)
            }
            Action::Answer => {
                self.stall();
                self.work();
                Ok(true)
            }
        }
    }

    /// `Spec::service`: the one worker takes the request for its service time (the others
    /// wait their turn).
    fn work(&self) {
        let Some(d) = self.spec.service else { return };
        let _turn = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        let until = Instant::now() + d;
        // Sleep most of it, spin the rest: the time is the server's capacity, so it is kept.
        if d > Duration::from_micros(200) {
            std::thread::sleep(d - Duration::from_micros(100));
        }
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    /// Waits out a stall window, if the server is in one.
    fn stall(&self) {
        let Some(s) = self.spec.stall else { return };
        let every = s.every.as_nanos();
        let into = self.started.elapsed().as_nanos() % every;
        if into < s.pause.as_nanos() {
            std::thread::sleep(Duration::from_nanos((s.pause.as_nanos() - into) as u64));
        }
    }

    fn payload(&self, rng: &mut u64) -> &[u8] {
        match self.spec.body {
            Body::Json => &self.json,
            Body::Sizes { min, max } => {
                let n = min + (splitmix(rng) % (max - min + 1) as u64) as usize;
                &self.filler[..n]
            }
        }
    }
}

/// Closes with a TCP reset (SO_LINGER 0), as a crashing server would.
fn reset(stream: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a valid `linger` of the right size.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(stream);
}

fn serve_connection(stream: TcpStream, shared: &Shared, seed: u64) -> io::Result<()> {
    let mut rng = seed;
    match &shared.spec.kind {
        Kind::Http => serve_http(stream, shared, &mut rng),
        Kind::Tcp {
            framing,
            on_connect,
        } => serve_tcp(stream, shared, framing, *on_connect, &mut rng),
    }
}

fn serve_tcp(
    stream: TcpStream,
    shared: &Shared,
    framing: &TcpFraming,
    on_connect: bool,
    rng: &mut u64,
) -> io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    let mut line = Vec::new();
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        if !on_connect {
            line.clear();
            let n = reader
                .by_ref()
                .take(MAX_REQUEST_HEAD as u64)
                .read_until(b'\n', &mut line)?;
            if n == 0 || line.last() != Some(&b'\n') {
                return Ok(()); // closed, or a request line too long
            }
        }
        if !shared.fault_or_stall(&mut out, b"\xff\xfe\x00garbage")? {
            return Ok(());
        }
        let payload = shared.payload(rng);
        match framing {
            TcpFraming::Length4 => {
                out.write_all(&(payload.len() as u32).to_be_bytes())?;
                out.write_all(payload)?;
            }
            TcpFraming::Line => {
                out.write_all(payload)?;
                out.write_all(b"\n")?;
            }
            TcpFraming::Close => {
                out.write_all(payload)?;
                return Ok(());
            }
            TcpFraming::Raw => out.write_all(payload)?,
        }
        if on_connect {
            return Ok(());
        }
    }
}

/// Reads one request head into `head`, line by line, bounded: `false` when the client closed, or
/// sent a head too large (answered 431).
fn read_head(
    input: &mut BufReader<TcpStream>,
    out: &mut TcpStream,
    head: &mut Vec<u8>,
) -> io::Result<bool> {
    head.clear();
    loop {
        let before = head.len();
        let n = input
            .by_ref()
            .take((MAX_REQUEST_HEAD - head.len()) as u64 + 1)
            .read_until(b'\n', head)?;
        if n == 0 {
            return Ok(false); // the client closed
        }
        if head.len() > MAX_REQUEST_HEAD {
            out.write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
            return Ok(false);
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            if before == 0 {
                head.clear(); // tolerate blank lines between requests
                continue;
            }
            return Ok(true);
        }
    }
}

fn serve_http(stream: TcpStream, shared: &Shared, rng: &mut u64) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut input = BufReader::with_capacity(16 << 10, stream);
    // HTTP/2's preface begins like a request line: an h2c connection (prior knowledge).
    if input.fill_buf()?.starts_with(b"PRI * HTTP/2.0") {
        return h2::serve(input, out, shared, rng);
    }
    let mut head: Vec<u8> = Vec::with_capacity(1024);
    let mut response: Vec<u8> = Vec::with_capacity(1024);
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        if !read_head(&mut input, &mut out, &mut head)? {
            return Ok(());
        }
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        if !matches!(req.parse(&head), Ok(httparse::Status::Complete(_))) {
            out.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
            return Ok(());
        }
        let mut keep_alive = req.version == Some(1);
        let mut length: u64 = 0;
        for h in req.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                length = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(u64::MAX);
            } else if h.name.eq_ignore_ascii_case("connection") {
                if h.value.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                out.write_all(b"HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
                return Ok(());
            }
        }
        let is_head = req.method == Some("HEAD");
        let status = shared.status_of(req.path.unwrap_or("/"));
        if length > MAX_REQUEST_BODY {
            out.write_all(
                b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
            return Ok(());
        }
        io::copy(&mut input.by_ref().take(length), &mut io::sink())?;
        if !shared.fault_or_stall(&mut out, b"\x00\x01\x02 this is not HTTP\r\n\r\n")? {
            return Ok(());
        }
        let payload = shared.payload(rng);
        let content_type = match shared.spec.body {
            Body::Json => "application/json",
            Body::Sizes { .. } => "application/octet-stream",
        };
        response.clear();
        write!(
            response,
            "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{}\r\n",
            if status == 200 { "OK" } else { "Status" },
            payload.len(),
            if keep_alive {
                ""
            } else {
                "Connection: close\r\n"
            }
        )?;
        if !is_head {
            response.extend_from_slice(payload);
        }
        out.write_all(&response)?;
        if !keep_alive {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(spec: Spec) -> Server {
        Server::start(TcpListener::bind("127.0.0.1:0").unwrap(), spec).unwrap()
    }

    fn spec(kind: Kind, body: Body) -> Spec {
        Spec {
            kind,
            body,
            stall: None,
            fault: None,
            seed: 1,
            service: None,
        }
    }

    #[test]
    fn http_answers_json_with_keep_alive() {
        let s = start(spec(Kind::Http, Body::Json));
        let mut c = TcpStream::connect(s.addr()).unwrap();
        for _ in 0..2 {
            c.write_all(b"GET /build/version HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut buf = [0u8; 512];
            let n = c.read(&mut buf).unwrap();
            let text = std::str::from_utf8(&buf[..n]).unwrap();
            assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
            assert!(text.ends_with("\"version\":\"0.1.0\"}"), "{text}");
        }
        assert_eq!(s.stats().requests.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn retain_holds_memory_up_to_its_bound() {
        let s = start(spec(Kind::Http, Body::Json));
        let mut c = TcpStream::connect(s.addr()).unwrap();
        let mut status = |path: &str| {
            write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut buf = [0u8; 512];
            let n = c.read(&mut buf).unwrap();
            String::from_utf8_lossy(&buf[..n])[9..12].to_string()
        };
        assert_eq!(status("/retain/1024"), "200");
        assert_eq!(status("/retain/lots"), "400");
        assert_eq!(
            status(&format!("/retain/{}", (MAX_RETAIN_PER_REQUEST >> 10) + 1)),
            "400"
        );
        assert_eq!(s.shared.retained_bytes.load(Ordering::Relaxed), 1 << 20);
        let held = s.shared.retained.lock().unwrap();
        assert!(held[0].len() == 1 << 20 && held[0].iter().all(|&b| b == 0xA5));
        drop(held);
        s.shared
            .retained_bytes
            .store(MAX_RETAINED - 1024, Ordering::Relaxed);
        assert_eq!(status("/retain/1"), "200");
        assert_eq!(status("/retain/1"), "507");
    }

    #[test]
    fn payload_sizes_stay_in_range() {
        let s = start(spec(
            Kind::Tcp {
                framing: TcpFraming::Length4,
                on_connect: false,
            },
            Body::Sizes { min: 5, max: 20 },
        ));
        let mut c = TcpStream::connect(s.addr()).unwrap();
        for _ in 0..50 {
            c.write_all(b"x\n").unwrap();
            let mut len = [0u8; 4];
            c.read_exact(&mut len).unwrap();
            let n = u32::from_be_bytes(len) as usize;
            assert!((5..=20).contains(&n), "{n}");
            let mut body = vec![0; n];
            c.read_exact(&mut body).unwrap();
            assert!(body.iter().all(|b| b.is_ascii_lowercase()));
        }
    }

    #[test]
    fn bad_specs_are_refused() {
        let l = || TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(Server::start(l(), spec(Kind::Http, Body::Sizes { min: 9, max: 3 })).is_err());
        let mut s = spec(Kind::Http, Body::Json);
        s.stall = Some(Stall {
            pause: Duration::from_secs(2),
            every: Duration::from_secs(1),
        });
        assert!(Server::start(l(), s).is_err());
    }

    #[test]
    fn stop_returns_promptly() {
        let mut s = start(spec(Kind::Http, Body::Json));
        let t = Instant::now();
        s.stop();
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
