//! `dyno run … --ui [ADDR]`: a page that shows the run while it goes — per case the rate, the
//! latency's and the service time's percentiles over time, errors by class, dyno's own CPU
//! beside the intended and achieved rate, each fault as a band the moment it begins — and, when
//! the run ends, becomes the final report: the same HTML report the run writes to disk.
//!
//! The page (`page.html`: its styles and script inside it, nothing fetched from elsewhere)
//! reads the run's events from `/events` as server-sent events ([`feed`]). The server
//! ([`http`]) listens on 127.0.0.1 and a free port unless told otherwise, and answers only
//! requests addressed to that (a `Host` of another name is refused, so a web page elsewhere
//! cannot read it through a rebound name). On any other address it asks every request for the
//! token printed with its address. Nothing on the page changes the run, except, when the run
//! was started with `--ui-stop`, its stop button: what Ctrl-C does (the finished cases kept).

pub mod feed;
pub mod http;

use feed::Feed;
use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The page, with the report's own styles and the view's script in it: the live view and the
/// report are drawn alike.
fn page() -> &'static str {
    static PAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PAGE.get_or_init(|| {
        (include_str!("page.html"))
            .replace("/*STYLE*/", report::html::STYLE)
            .replace("/*VIEW*/", report::live::SCRIPT)
    })
}

/// How long a page may wait for an event before it is sent a comment to keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How long the run's end waits for open pages to take the final report.
const HAND_OVER: Duration = Duration::from_secs(3);

/// The live view's server and what it tells.
pub struct Ui {
    server: http::Server,
    feed: Arc<Feed>,
    /// The address to open, with its token when one is needed.
    pub url: String,
}

/// Who may ask: requests that name the server's own loopback address, or carry the token; and
/// what a stop sets, when the page may stop the run.
struct Gate {
    hosts: Vec<String>,
    token: Option<String>,
    stop: Option<&'static AtomicBool>,
}

impl Gate {
    fn admits(&self, r: &http::Request) -> bool {
        match &self.token {
            Some(t) => r.param("token") == Some(t.as_str()),
            None => r.host.as_ref().is_some_and(|h| self.hosts.contains(h)),
        }
    }
}

impl Ui {
    /// Serves the view on `addr` (127.0.0.1:0 when empty); `stop`, when given, is set by the
    /// page's stop button.
    pub fn start(addr: &str, stop: Option<&'static AtomicBool>) -> io::Result<Ui> {
        let addr = if addr.is_empty() { "127.0.0.1:0" } else { addr };
        let feed = Arc::new(Feed::default());
        let gate = Arc::new(std::sync::OnceLock::<Gate>::new());
        let (f, g) = (feed.clone(), gate.clone());
        let handler: http::Handler = Arc::new(move |r, conn, stop| match g.get() {
            Some(gate) => answer(r, conn, (gate, &f, stop)),
            None => http::respond(conn, "503 Service Unavailable", "text/plain", b"starting\n"),
        });
        let server = http::Server::start(addr, "dyno-ui", handler)?;
        let bound = server.addr;
        let token = (!bound.ip().is_loopback()).then(token);
        let port = bound.port();
        let hosts = match bound.ip().is_loopback() {
            // Its own address, and the loopback names a browser may write for it (without
            // the port when it is HTTP's own).
            true => [bound.to_string(), format!("localhost:{port}")]
                .into_iter()
                .flat_map(|h| match port {
                    80 => vec![h.trim_end_matches(":80").to_string(), h],
                    _ => vec![h],
                })
                .collect(),
            false => Vec::new(),
        };
        let url = match &token {
            Some(t) => format!("http://{bound}/?token={t}"),
            None => format!("http://{bound}/"),
        };
        let _ = gate.set(Gate { hosts, token, stop });
        feed.stoppable(stop.is_some());
        Ok(Ui { server, feed, url })
    }

    pub fn feed(&self) -> &Feed {
        &self.feed
    }

    /// A watch on the run for the runner: its clock and its faults.
    pub fn watch(&self) -> Arc<dyn engine::runner::Watch> {
        Arc::new(Watching(self.feed.clone()))
    }

    /// The run is over: the pages open get `report` (the final report's page) and a moment to
    /// take it.
    pub fn finish(&self, report: Option<&str>) {
        self.feed.done(report);
        let until = Instant::now() + HAND_OVER;
        while self.server.connections() > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

struct Watching(Arc<Feed>);

impl engine::runner::Watch for Watching {
    fn clock(&self, clock: &engine::clock::Clock) {
        self.0.clock(clock);
    }
    fn fault(&self, event: &results::faults::FaultEvent) {
        self.0.fault(event);
    }
}

/// What tells this process's events from another's: its start, in ms since the Unix epoch.
fn epoch() -> &'static str {
    static EPOCH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EPOCH.get_or_init(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.map_or(0, |d| d.as_millis()).to_string()
    })
}

/// 128 random bits, as hex.
fn token() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| {
        use std::io::Read as _;
        f.read_exact(&mut bytes)
    });
    if read.is_err() {
        // No /dev/urandom: the clock's nanoseconds and the PID, mixed.
        let mut x = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()) << 32;
        for chunk in bytes.chunks_mut(8) {
            chunk.copy_from_slice(&results::rng::splitmix64(&mut x).to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn answer(
    r: &http::Request,
    conn: &mut TcpStream,
    (gate, feed, stop): (&Gate, &Feed, &AtomicBool),
) -> io::Result<()> {
    if !gate.admits(r) {
        return http::respond(
            conn,
            "403 Forbidden",
            "text/plain",
            b"dyno's live view answers only the address it printed, with its token\n",
        );
    }
    if (r.method.as_str(), r.path.as_str()) == ("POST", "/stop") {
        return stop_run(r, conn, gate);
    }
    if r.method != "GET" {
        return http::respond(conn, "405 Method Not Allowed", "text/plain", b"GET only\n");
    }
    match r.path.as_str() {
        "/" => http::respond(
            conn,
            "200 OK",
            "text/html; charset=utf-8",
            page().as_bytes(),
        ),
        "/events" => {
            // An event's id is this run's and its number: a page left open from another run
            // starts from the beginning.
            let from = (r.header("last-event-id"))
                .and_then(|v| v.strip_prefix(epoch())?.strip_prefix('.')?.parse().ok());
            events(conn, feed, stop, from.unwrap_or(0))
        }
        _ => http::respond(
            conn,
            "404 Not Found",
            "text/plain",
            b"dyno serves / and /events\n",
        ),
    }
}

/// The page's stop button: sets the run's interrupt, as Ctrl-C does, when the run allows it.
/// It must carry `X-Dyno-Stop`, which no page of another site can add to a request here.
fn stop_run(r: &http::Request, conn: &mut TcpStream, gate: &Gate) -> io::Result<()> {
    let Some(flag) = gate.stop else {
        let why = b"this run cannot be stopped from its page: start it with --ui-stop\n";
        return http::respond(conn, "403 Forbidden", "text/plain", why);
    };
    if r.header("x-dyno-stop") != Some("1") {
        return http::respond(
            conn,
            "403 Forbidden",
            "text/plain",
            b"a stop carries X-Dyno-Stop: 1\n",
        );
    }
    if !flag.swap(true, Ordering::SeqCst) {
        eprintln!("dyno: stopped from the live view; finished cases are kept");
    }
    http::respond(
        conn,
        "202 Accepted",
        "text/plain",
        b"stopping after the current operation\n",
    )
}

/// Streams the feed's events after number `seq` as server-sent events until the run's end has
/// been sent, the page goes, or the server stops.
fn events(conn: &mut TcpStream, feed: &Feed, stop: &AtomicBool, mut seq: u64) -> io::Result<()> {
    conn.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
          X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\nretry: 1000\n\n",
    )?;
    let mut quiet_since = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let (events, done) = feed.since(seq, Duration::from_secs(1));
        let mut out = String::new();
        for (n, data) in &events {
            out.push_str(&format!("id: {}.{n}\ndata: {data}\n\n", epoch()));
            seq = *n;
        }
        if out.is_empty() && quiet_since.elapsed() >= KEEP_ALIVE {
            out.push_str(": still running\n\n");
        }
        if !out.is_empty() {
            conn.write_all(out.as_bytes())?;
            conn.flush()?;
            quiet_since = Instant::now();
        }
        if done && events.is_empty() {
            break;
        }
    }
    Ok(())
}
