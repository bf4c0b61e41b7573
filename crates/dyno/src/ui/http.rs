//! The small HTTP/1.1 server behind what dyno serves while it runs: the live view (`--ui`) and
//! `/metrics` (`--metrics-addr`). One thread accepts; each connection gets a thread of its own
//! (at most [`MAX_CONNECTIONS`] at once, more are answered 503), which reads one request head
//! — bounded in size and time — hands it to the handler, and closes. Nothing here may stop or
//! slow the run: a client that stalls only ever holds its own thread, until its timeout.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A bound on a request's head, and on how long a client may take to send it or to take an
/// answer's bytes.
const MAX_REQUEST: usize = 8 << 10;
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 32;
/// How long the server, when dropped, waits for its connections to end.
const DRAIN: Duration = Duration::from_secs(3);

/// One request's head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path, without its query.
    pub path: String,
    /// The query, without its `?`.
    pub query: String,
    /// `Host`, when sent.
    pub host: Option<String>,
    /// Every header, names in lower case.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The value of query parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        (self.query.split('&')).find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a request head from `bytes` (what came before the blank line ending it): `None` for
/// anything that is not one.
pub fn parse(bytes: &[u8]) -> Option<Request> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target, version) = (first.next()?, first.next()?, first.next()?);
    if first.next().is_some() || !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return None;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut r = Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        ..Request::default()
    };
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
        if name == "host" {
            r.host = Some(value.clone());
        }
        r.headers.push((name, value));
    }
    Some(r)
}

/// Answers one request on its connection; the server closes it after.
pub type Handler =
    Arc<dyn Fn(&Request, &mut TcpStream, &AtomicBool) -> io::Result<()> + Send + Sync>;

/// The server; stops accepting, and waits a little for its connections, when dropped.
pub struct Server {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    live: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Listens on `addr`; `name` names its threads.
    pub fn start(addr: &str, name: &str, handler: Handler) -> io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicUsize::new(0));
        let (s, l, name) = (stop.clone(), live.clone(), name.to_string());
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || accept(&listener, (&s, &l), &name, &handler))?;
        Ok(Server {
            addr,
            stop,
            live,
            thread: Some(thread),
        })
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }
}

fn accept(
    listener: &TcpListener,
    (stop, live): (&Arc<AtomicBool>, &Arc<AtomicUsize>),
    name: &str,
    handler: &Handler,
) {
    while !stop.load(Ordering::Relaxed) {
        let conn = match listener.accept() {
            Ok((conn, _)) => conn,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        if live.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            let _ = refuse(conn);
            live.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let (stop, l, handler) = (stop.clone(), live.clone(), handler.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("{name}-conn"))
            .spawn(move || {
                let _ = serve(conn, &handler, &stop);
                l.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            // No thread for it: the connection was dropped, and closed, with the closure.
            live.fetch_sub(1, Ordering::AcqRel);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn refuse(mut conn: TcpStream) -> io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    respond(
        &mut conn,
        "503 Service Unavailable",
        "text/plain",
        b"too many connections\n",
    )
}

/// Reads one request head and has the handler answer it.
fn serve(mut conn: TcpStream, handler: &Handler, stop: &AtomicBool) -> io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    // The whole head within the timeout, however slowly its bytes come.
    let until = Instant::now() + CLIENT_TIMEOUT;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    let end = loop {
        if let Some(p) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        conn.set_read_timeout(Some(left))?;
        let n = conn.read(&mut buf)?;
        if n == 0 || head.len() + n > MAX_REQUEST {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    };
    match parse(&head[..end]) {
        Some(r) => handler(&r, &mut conn, stop),
        None => respond(
            &mut conn,
            "400 Bad Request",
            "text/plain",
            b"not an HTTP/1.1 request\n",
        ),
    }
}

/// Writes a whole answer: `status`, `kind` (its Content-Type) and `body`.
pub fn respond(conn: &mut TcpStream, status: &str, kind: &str, body: &[u8]) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body)?;
    conn.flush()
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let until = Instant::now() + DRAIN;
        while self.live.load(Ordering::Acquire) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_request_head_is_read_whole() {
        let r = parse(b"GET /events?token=ab12&x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: text/event-stream").unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/events"));
        assert_eq!(
            (r.param("token"), r.param("x"), r.param("y")),
            (Some("ab12"), Some("1"), None)
        );
        assert_eq!(r.host.as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(r.header("accept"), Some("text/event-stream"));
        for bad in [
            &b""[..],
            b"GET",
            b"GET / SPDY/3",
            b"GET nowhere HTTP/1.1",
            b"GET / HTTP/1.1\r\nno colon",
            b"\xff / HTTP/1.1",
        ] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    proptest! {
        #[test]
        fn any_bytes_are_a_request_or_none(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse(&bytes);
        }
    }
}
