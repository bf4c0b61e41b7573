//! What the request drivers (`http`, `tcp`) share: resolving the address, and a request body
//! given inline or read from a file when the endpoint is built (not when the plan is checked).

use engine::driver::{ConfigError, DriverError};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// The `HOST:PORT` of a URL's `//HOST:PORT` (the port optional when `port_required` is false).
/// `form` is the URL form for the message, e.g. `tcp://HOST:PORT`.
pub fn authority<'a>(
    rest: &'a str,
    port_required: bool,
    form: &str,
    example: &str,
) -> Result<&'a str, ConfigError> {
    rest.strip_prefix("//")
        .map(|a| a.trim_end_matches('/'))
        .filter(|a| !a.is_empty() && !a.contains('/'))
        .filter(|a| {
            !port_required
                || a.rsplit_once(':')
                    .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
        })
        .ok_or_else(|| {
            ConfigError::url(format!("the URL's form is {form}"))
                .hint(format!("write e.g. {example}"))
        })
}

/// `loopback` for an address on this machine, else `lan` (what a record calls the topology).
pub fn topology_of(authority: &str) -> &'static str {
    let loopback = ["127.", "localhost", "[::1]"]
        .iter()
        .any(|p| authority.starts_with(p));
    if loopback { "loopback" } else { "lan" }
}

/// Resolves `host:port` (or `host` with `default_port`) to its first address.
pub fn resolve(authority: &str, default_port: Option<u16>) -> Result<SocketAddr, DriverError> {
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
    let with_port = match default_port {
        Some(port) if !has_port => format!("{authority}:{port}"),
        _ => authority.to_string(),
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| DriverError::new(format!("cannot resolve {authority}: {e}")))?
        .next()
        .ok_or_else(|| DriverError::new(format!("{authority} resolves to no address")))
}

/// A request's bytes: given inline, read from a file (`option` names it in errors), or none.
pub fn bytes(
    inline: &Option<Vec<u8>>,
    file: &Option<PathBuf>,
    option: &str,
) -> Result<Vec<u8>, DriverError> {
    match (inline, file) {
        (Some(b), _) => Ok(b.clone()),
        (None, Some(f)) => {
            std::fs::read(f).map_err(|e| DriverError::new(format!("{option} {}: {e}", f.display())))
        }
        (None, None) => Ok(Vec::new()),
    }
}

/// A replicated target's reconnections: how many sessions moved to another server after theirs
/// failed, and how long each move took. A store reports them as its `reconnect` figures.
#[derive(Debug)]
pub struct Reconnects(std::sync::Mutex<(u64, results::Histogram)>);

impl Default for Reconnects {
    fn default() -> Reconnects {
        Reconnects(std::sync::Mutex::new((0, results::new_histogram())))
    }
}

/// How long a replicated target's session whose server failed keeps looking for another.
pub const FOLLOW_FOR: std::time::Duration = std::time::Duration::from_secs(30);

impl Reconnects {
    /// Tries `attempt` every 100 ms, for at most [`FOLLOW_FOR`], until it succeeds: a
    /// reconnection, counted and timed. Its last failure when none does.
    pub fn follow<T>(
        &self,
        mut attempt: impl FnMut() -> Result<T, engine::driver::OpError>,
    ) -> Result<T, engine::driver::OpError> {
        let t0 = std::time::Instant::now();
        loop {
            match attempt() {
                Ok(v) => {
                    self.record(t0.elapsed());
                    return Ok(v);
                }
                Err(e) if t0.elapsed() >= FOLLOW_FOR => return Err(e),
                Err(_) => engine::fiber::sleep(std::time::Duration::from_millis(100)),
            }
        }
    }

    /// One reconnection that took `took`.
    pub fn record(&self, took: std::time::Duration) {
        if let Ok(mut r) = self.0.lock() {
            r.0 += 1;
            r.1.saturating_record((took.as_nanos() as u64).max(1));
        }
    }

    /// The figures so far, as the server's `reconnect` operation.
    pub fn server_op(&self) -> engine::driver::ServerOp {
        let (count, latency) = match self.0.lock() {
            Ok(r) => (r.0, r.1.clone()),
            Err(_) => (0, results::new_histogram()),
        };
        engine::driver::ServerOp {
            op: "reconnect".into(),
            count,
            latency,
        }
    }
}
