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

/// A database URL's parts after `scheme:`: `//USER[:PASSWORD]@HOST[:PORT][/DATABASE]`, with
/// `%XX` escapes decoded in the user, password and database (a password may hold `@` or `:`).
#[derive(Clone, PartialEq)]
pub struct DbUrl {
    pub user: String,
    pub password: Option<String>,
    /// `HOST:PORT` (the default port added where the URL gives none).
    pub authority: String,
    pub database: Option<String>,
}

impl DbUrl {
    /// Parses `rest`; `form` is the URL's form and `example` one to write, for the messages.
    pub fn parse(
        rest: &str,
        default_port: u16,
        form: &str,
        example: &str,
    ) -> Result<DbUrl, ConfigError> {
        let bad = || {
            ConfigError::url(format!("the URL's form is {form}"))
                .hint(format!("write e.g. {example}"))
        };
        let rest = rest.strip_prefix("//").ok_or_else(bad)?;
        let (who, place) = rest.rsplit_once('@').ok_or_else(|| {
            ConfigError::url("the URL names no user").hint(format!("write e.g. {example}"))
        })?;
        let (user, password) = match who.split_once(':') {
            Some((u, p)) => (u, Some(unescape(p)?)),
            None => (who, None),
        };
        let (host, database) = place.split_once('/').unwrap_or((place, ""));
        if user.is_empty() || host.is_empty() || database.contains('/') || host.contains(',') {
            return Err(bad());
        }
        let authority = match port_of(host).ok_or_else(bad)? {
            None => format!("{host}:{default_port}"),
            Some(p) if p.parse::<u16>().is_ok() => host.to_string(),
            Some(p) => {
                return Err(ConfigError::url(format!("{p:?} is not a port"))
                    .hint(format!("write e.g. {example}")));
            }
        };
        Ok(DbUrl {
            user: unescape(user)?,
            password,
            authority,
            database: (!database.is_empty())
                .then(|| unescape(database))
                .transpose()?,
        })
    }
}

impl std::fmt::Debug for DbUrl {
    /// Without the password (a record or a log may print a target's configuration).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbUrl")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "…"))
            .field("authority", &self.authority)
            .field("database", &self.database)
            .finish()
    }
}

/// What follows `host[:port]`'s host (an IPv6 address in brackets): `Some(None)` for nothing,
/// `Some(Some(port))` for `:port` (not checked to be a number), `None` for anything else.
fn port_of(authority: &str) -> Option<Option<&str>> {
    match authority.strip_prefix('[') {
        Some(h) => match h.split_once(']')? {
            (_, "") => Some(None),
            (_, rest) => Some(Some(rest.strip_prefix(':')?)),
        },
        None => Some(authority.split_once(':').map(|(_, p)| p)),
    }
}

/// Whether `host[:port]` gives a port (`[::1]` does not, `[::1]:5432` does).
fn has_port(authority: &str) -> bool {
    port_of(authority)
        .flatten()
        .is_some_and(|p| p.parse::<u16>().is_ok())
}

/// `%XX` escapes decoded.
fn unescape(s: &str) -> Result<String, ConfigError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            out.push(hex.ok_or_else(|| {
                ConfigError::url(format!("a bad %-escape in {s:?}")).hint("write %40 for @")
            })?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ConfigError::url("the URL's user or password is not UTF-8"))
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
    let with_port = match default_port {
        Some(port) if !has_port(authority) => format!("{authority}:{port}"),
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

/// Sends `bytes` on socket `fd` without waiting, best effort: a goodbye (PostgreSQL's
/// Terminate, MySQL's COM_QUIT), which a full send buffer (a server not listening) must not
/// hold up; the connection closes anyway.
pub fn send_now(fd: std::os::fd::RawFd, bytes: &[u8]) {
    // SAFETY: a socket the caller owns, and a buffer of that length.
    unsafe {
        libc::send(
            fd,
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
}

/// A connection's step with its server: once a reply failed on the connection (lost, late,
/// malformed, cut off), what it would read next answers an earlier request, so it sends
/// nothing more (the session that holds it fails every later request at once, as PostgreSQL's
/// and MySQL's do, rather than reading one reply for another).
#[derive(Debug, Default)]
pub struct Step {
    lost: bool,
}

impl Step {
    /// Before a request: refused once out of step.
    pub fn send(&self, driver: &str, context: &str) -> Result<(), engine::driver::OpError> {
        match self.lost {
            true => Err(out_of_step(driver, context)),
            false => Ok(()),
        }
    }

    /// A request's or a reply's outcome, as it is; the step lost if it failed on the
    /// connection (a request cut off in its write leaves the server reading the next as its rest).
    pub fn watch<T>(
        &mut self,
        r: Result<T, engine::driver::OpError>,
    ) -> Result<T, engine::driver::OpError> {
        if let Err(e) = &r {
            self.lost |= e.class.is_connection();
        }
        r
    }

    /// A reply read whole but not of the shape asked for (its parts, or what follows it, may
    /// still be unread): out of step too.
    pub fn lose(&mut self) {
        self.lost = true;
    }

    /// Whether requests may still be sent.
    pub fn kept(&self) -> bool {
        !self.lost
    }
}

/// A session whose last reply was lost, late or malformed is out of step with its server (what
/// it would read next answers an earlier request): `driver`'s refusal of every later request.
pub fn out_of_step(driver: &str, context: &str) -> engine::driver::OpError {
    engine::driver::OpError::new(
        engine::driver::ErrorClass::Reset,
        format!(
            "{driver}: {context}: the connection failed before (a reply lost, late or malformed); this session sends nothing more"
        ),
    )
}

/// A reply that went on past `timeout` (each read in time, the whole never ending).
pub fn no_end(
    driver: &str,
    context: &str,
    timeout: std::time::Duration,
) -> engine::driver::OpError {
    engine::driver::OpError::new(
        engine::driver::ErrorClass::Timeout,
        format!("{driver}: {context}: {}", engine::fiber::no_end(timeout)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_is_read_into_its_parts() {
        let p = |rest: &str| DbUrl::parse(rest, 5432, "x://U@H/D", "x://u@h/d");
        let u = p("//dyno:s%40cret@127.0.0.1/shop").unwrap();
        assert_eq!(u.user, "dyno");
        assert_eq!(u.password.as_deref(), Some("s@cret"));
        assert_eq!(u.authority, "127.0.0.1:5432");
        assert_eq!(u.database.as_deref(), Some("shop"));
        let u = p("//me@[::1]").unwrap();
        assert_eq!(
            (u.password, u.authority, u.database),
            (None, "[::1]:5432".into(), None)
        );
        assert_eq!(p("//me@[::1]:6000/").unwrap().authority, "[::1]:6000");
        assert_eq!(p("//me@host:6000").unwrap().authority, "host:6000");
        assert!(!format!("{:?}", p("//me:hush@h").unwrap()).contains("hush"));
        for (bad, says) in [
            ("//127.0.0.1/db", "names no user"),
            ("me@h/db", "the URL's form is"),
            ("//me@h/a/b", "the URL's form is"),
            ("//me@h1,h2/db", "the URL's form is"),
            ("//me:%zz@h", "bad %-escape"),
            ("//me@h:70000/db", "is not a port"),
            ("//me@h:/db", "is not a port"),
            ("//me@[::1/db", "the URL's form is"),
            ("//me@[::1]x/db", "the URL's form is"),
        ] {
            let e = p(bad).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {e:?}");
        }
    }
}
