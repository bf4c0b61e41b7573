//! `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` — PostgreSQL, through `tokio-postgres`'s
//! protocol (Cargo feature `postgres`, on by default), driven by dyno itself: no tokio runtime.
//!
//! Each session owns its socket (an [`engine::fiber::Stream`] underneath) and its
//! `tokio_postgres::Connection`; a statement is a future polled on the client's own stack, and
//! when it cannot go on (no reply yet) the client waits for its socket — on a fiber, yielding to
//! the generator thread's other clients. So many sessions share a thread, as pgbench drives all
//! its connections from one, and a statement costs one send and one receive (the blocking
//! `postgres` crate ran a runtime per client and woke a thread per statement).
//!
//! dyno works only in a schema of its own (`dyno_<pid>_<n>_<ns>`), created for the run with one
//! table `objects (k bigint primary key, v bytea)`, and dropped (`DROP SCHEMA … CASCADE`) at the
//! end; nothing outside it is read or written. Each client has its own connection; a write
//! transaction is `BEGIN` … `COMMIT`, a read transaction `BEGIN READ ONLY` … `COMMIT`; the graph
//! family's batched read is one `SELECT … WHERE k = ANY($1)`. Durability is read from the server
//! (`fsync`, `synchronous_commit`) and named in the column header; `synchronous_commit` can be
//! set for dyno's sessions. `cold` is not reachable: the server's shared buffers empty only when
//! it restarts, and dyno does not restart a server it did not start.
//!
//! Bounds: connecting times out after 30 s; every statement of the kv and graph families has a
//! server-side `statement_timeout` of 30 s (the sql family's cancel a late statement instead:
//! see [`wire`]), and TCP keepalives and `tcp_user_timeout` end a connection to a server that
//! stopped answering.

mod sql;
mod wire;

use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError, OptionSpec,
    Session, Store, TargetConfig, TxMode,
};
use engine::fiber::Stream;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io::Read as _;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::{NoTls, Statement};

pub static INFO: DriverInfo = DriverInfo {
    scheme: "postgres",
    query_options: true,
    summary: "PostgreSQL; dyno's objects in a schema of its own, dropped at the end",
    forms: &[
        "postgres://dyno@127.0.0.1:5432/postgres",
        "postgres://user:secret@127.0.0.1/db?synchronous_commit=off",
    ],
    families: &[Family::Kv, Family::Graph, Family::Sql, Family::Lists],
    options: &[OptionSpec {
        name: "synchronous_commit",
        default: "",
        help: "set for dyno's sessions: on, off, local, remote_write or remote_apply (default: the server's)",
    }],
    clients: engine::driver::ClientModel::ManyPerThread,
};

const TIMEOUT: Duration = Duration::from_secs(30);
const SYNC_LEVELS: &[&str] = &["", "on", "off", "local", "remote_write", "remote_apply"];

#[derive(Debug, Clone)]
struct Config {
    pg: tokio_postgres::Config,
    /// `host:port`, for messages and the topology.
    authority: String,
    synchronous_commit: String,
    resolved: BTreeMap<String, String>,
    durability: std::sync::OnceLock<String>,
}

/// Validates the URL and options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("postgres", options, INFO.options)?;
    let synchronous_commit = o.choice("synchronous_commit", SYNC_LEVELS)?;
    let form = || {
        ConfigError::url("the URL's form is postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
            .hint("write e.g. postgres://dyno@127.0.0.1:5432/postgres")
    };
    if !rest.starts_with("//") {
        return Err(form());
    }
    let mut pg = tokio_postgres::Config::from_str(&format!("postgresql:{rest}")).map_err(|e| {
        ConfigError::url(format!("not a PostgreSQL URL: {e}"))
            .hint("write e.g. postgres://dyno@127.0.0.1:5432/postgres")
    })?;
    let host = match pg.get_hosts() {
        [tokio_postgres::config::Host::Tcp(h)] => h.clone(),
        [] => return Err(form()),
        _ => {
            return Err(
                ConfigError::url("one TCP host, please").hint("dyno measures one server at a time")
            );
        }
    };
    if pg.get_user().is_none() {
        return Err(ConfigError::url("the URL names no user")
            .hint("write e.g. postgres://dyno@127.0.0.1:5432/postgres"));
    }
    let port = pg.get_ports().first().copied().unwrap_or(5432);
    // The socket's own bounds (connect timeout, keepalives, TCP_USER_TIMEOUT) are set where
    // dyno opens it ([`Client::connect`]).
    pg.application_name("dyno")
        .options("-c statement_timeout=30000");
    Ok(Box::new(Config {
        pg,
        authority: format!("{host}:{port}"),
        synchronous_commit,
        resolved: o.resolved(),
        durability: std::sync::OnceLock::new(),
    }))
}

fn op_err(context: &str, e: tokio_postgres::Error) -> OpError {
    let class = if e.is_closed() {
        ErrorClass::Reset
    } else if let Some(db) = e.as_db_error() {
        match db.code().code() {
            // query_canceled: the statement timeout.
            "57014" => ErrorClass::Timeout,
            // disk_full, out_of_memory, too_many_connections …
            c if c.starts_with("53") => ErrorClass::Full,
            _ => ErrorClass::Application,
        }
    } else if let Some(io) =
        std::error::Error::source(&e).and_then(|s| s.downcast_ref::<std::io::Error>())
    {
        ErrorClass::of_io(io)
    } else {
        ErrorClass::Protocol
    };
    // The server's own words ("db error" alone says nothing).
    let said = match e.as_db_error() {
        Some(db) => format!("ERROR {}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    };
    OpError::new(class, format!("postgres: {context}: {said}"))
}

/// A socket as tokio-postgres reads and writes it: never waiting. A call that finds it not
/// ready says so (`Pending`) and leaves the waiting to [`Client::run`]. After a short read the
/// socket is drained: the next read waits for the poller first (no `EAGAIN` try per reply).
struct Io {
    sock: std::net::TcpStream,
    drained: Arc<AtomicBool>,
}

impl tokio::io::AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        if me.drained.load(Ordering::Relaxed) {
            return Poll::Pending;
        }
        let room = buf.initialize_unfilled();
        let want = room.len();
        match (&me.sock).read(room) {
            Ok(n) => {
                if n < want && n > 0 {
                    me.drained.store(true, Ordering::Relaxed);
                }
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                me.drained.store(true, Ordering::Relaxed);
                Poll::Pending
            }
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl tokio::io::AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match std::io::Write::write(&mut &self.sock, buf) {
            Ok(n) => Poll::Ready(Ok(n)),
            // A full send buffer: the next wait is for the socket's room (see `Client::run`).
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Poll::Pending,
            Err(e) => Poll::Ready(Err(e)),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(self.sock.shutdown(std::net::Shutdown::Write))
    }
}

/// One session's connection: tokio-postgres's client half, and what drives it.
struct Conn {
    client: tokio_postgres::Client,
    drive: Driver,
}

/// The connection half and a handle on the socket to wait with: [`Driver::run`] takes a
/// request's future (made from the client half, which it does not borrow) to its end.
struct Driver {
    conn: Pin<Box<tokio_postgres::Connection<Io, NoTlsStream>>>,
    waiter: Stream,
    drained: Arc<AtomicBool>,
    /// Set when the client half queued a request for the connection half, or the connection
    /// half a reply for the client half: poll both again before waiting for the socket.
    moved: Arc<Moved>,
}

/// A waker that only notes it was woken.
struct Moved(AtomicBool);

impl std::task::Wake for Moved {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Conn {
    /// Opens a connection to `config`'s server and logs in.
    fn open(config: &Config) -> Result<Conn, OpError> {
        let io = |e: std::io::Error| OpError::io("postgres: connect", &e);
        let addr = crate::net::resolve(&config.authority, Some(5432))
            .map_err(|e| OpError::new(ErrorClass::Refused, e.message))?;
        let waiter = Stream::connect(&addr, TIMEOUT).map_err(io)?;
        waiter.set_nodelay(true).map_err(io)?;
        keepalive(waiter.as_raw_fd());
        let sock = waiter.get_ref().try_clone().map_err(io)?;
        let drained = Arc::new(AtomicBool::new(false));
        let connecting = config.pg.connect_raw(
            Io {
                sock,
                drained: drained.clone(),
            },
            NoTls,
        );
        let mut connecting = std::pin::pin!(connecting);
        // Logging in: only the connecting future runs (there is no connection half yet).
        let deadline = Instant::now() + TIMEOUT;
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let (client, conn) = loop {
            if let Poll::Ready(r) = connecting.as_mut().poll(&mut cx) {
                break r.map_err(|e| op_err("connect", e))?;
            }
            wait(&waiter, &drained, deadline)?;
        };
        Ok(Conn {
            client,
            drive: Driver {
                conn: Box::pin(conn),
                waiter,
                drained,
                moved: Arc::new(Moved(AtomicBool::new(false))),
            },
        })
    }
}

impl Driver {
    /// Runs one request to its end, driving the connection meanwhile; waits for the socket
    /// when neither can go on, at most [`TIMEOUT`]. `context` names the request in an error.
    fn run<T>(
        &mut self,
        context: &str,
        fut: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, OpError> {
        let mut fut = std::pin::pin!(fut);
        let waker = std::task::Waker::from(self.moved.clone());
        let mut cx = Context::from_waker(&waker);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                return r.map_err(|e| op_err(context, e));
            }
            // The connection half writes the request and reads the reply for the client half.
            match self.conn.as_mut().poll(&mut cx) {
                Poll::Ready(Err(e)) => return Err(op_err(context, e)),
                // Closed: the client half's future ends with it, else it never will.
                Poll::Ready(Ok(())) => {
                    if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                        return r.map_err(|e| op_err(context, e));
                    }
                    return Err(OpError::new(
                        ErrorClass::Reset,
                        format!("postgres: {context}: the server closed the connection"),
                    ));
                }
                Poll::Pending => {}
            }
            // A half handed the other something (a request to send, a reply to take): again.
            if self.moved.0.swap(false, Ordering::Relaxed) {
                continue;
            }
            // No reply within the bound: the session fails this request (the caller drops a
            // session whose request timed out: a late reply would answer the next one).
            wait(&self.waiter, &self.drained, deadline).map_err(|e| {
                OpError::new(e.class, format!("postgres: {context}: {}", e.message))
            })?;
        }
    }
}

/// Waits until the socket is readable (the drained flag cleared for the next read), or the
/// deadline passes. A pending write waits too: a reply cannot come before the request has
/// left, and the socket is readable or writable again by then.
fn wait(waiter: &Stream, drained: &AtomicBool, deadline: Instant) -> Result<(), OpError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(OpError::new(
            ErrorClass::Timeout,
            "postgres: no reply within 30 s",
        ));
    }
    let r = waiter.wait_ready(true, Some(left));
    drained.store(false, Ordering::Relaxed);
    r.map_err(|e| OpError::io("postgres: receive", &e))
}

/// TCP keepalives (10 s idle) and TCP_USER_TIMEOUT (30 s): a connection to a server that
/// stopped answering ends instead of hanging. Best effort (an error leaves the defaults).
fn keepalive(fd: std::os::fd::RawFd) {
    let set = |level: libc::c_int, name: libc::c_int, v: libc::c_int| {
        // SAFETY: a valid socket and a c_int option value.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 10);
    set(
        libc::IPPROTO_TCP,
        libc::TCP_USER_TIMEOUT,
        TIMEOUT.as_millis() as libc::c_int,
    );
}

impl Config {
    fn connect(&self) -> Result<Conn, OpError> {
        let mut c = Conn::open(self)?;
        if !self.synchronous_commit.is_empty() {
            let sql = format!("SET synchronous_commit = {}", self.synchronous_commit);
            (c.drive).run("SET synchronous_commit", c.client.batch_execute(&sql))?;
        }
        Ok(c)
    }

    fn settings(&self) -> Result<(String, String, String), OpError> {
        let mut c = self.connect()?;
        let row = c.drive.run(
            "reading settings",
            c.client.query_one(
                "SELECT current_setting('fsync'), current_setting('synchronous_commit'), \
                 current_setting('server_version')",
                &[],
            ),
        )?;
        Ok((row.get(0), row.get(1), row.get(2)))
    }
}

impl TargetConfig for Config {
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn durability(&self) -> String {
        self.durability
            .get_or_init(|| match self.settings() {
                Ok((fsync, sync, _)) => format!("fsync={fsync} synchronous_commit={sync}"),
                Err(_) => "unknown (server unreachable)".into(),
            })
            .clone()
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn topology(&self) -> &'static str {
        crate::net::topology_of(&self.authority)
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        self.open_in(None)
    }
    fn open_shared(&self, share: &engine::driver::Share) -> Result<Box<dyn Store>, DriverError> {
        self.open_in(Some(share))
    }
}

impl Config {
    /// Opens the run's schema: its own, made here, or the one its shards share (made by rank
    /// 0 before the others open it).
    fn open_in(
        &self,
        share: Option<&engine::driver::Share>,
    ) -> Result<Box<dyn Store>, DriverError> {
        let fail = |e: OpError| DriverError::new(format!("postgres://{}: {}", self.authority, e));
        let (_, _, version) = self.settings().map_err(fail)?;
        let (schema, owner) = crate::claim::server_namespace(share);
        let mut c = self.connect().map_err(fail)?;
        // CREATE SCHEMA without IF NOT EXISTS: a schema of that name that dyno did not just
        // create is refused, never reused. A shard that does not own it finds its table.
        let sql = if owner {
            format!(
                "CREATE SCHEMA {schema}; \
                 CREATE TABLE {schema}.objects (k bigint PRIMARY KEY, v bytea NOT NULL)"
            )
        } else {
            format!("SELECT 1 FROM {schema}.objects LIMIT 0")
        };
        (c.drive)
            .run("creating dyno's schema", c.client.batch_execute(&sql))
            .map_err(fail)?;
        Ok(Box::new(PgStore {
            config: self.clone(),
            schema,
            owner,
            version,
        }))
    }
}

struct PgStore {
    config: Config,
    schema: String,
    /// Whether closing drops the schema (not on a shard other than rank 0).
    owner: bool,
    version: String,
}

impl Store for PgStore {
    fn many_per_thread(&self) -> bool {
        true
    }
    fn scans(&self) -> Result<(), String> {
        Ok(())
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: format!(
                "postgres://{} schema {}",
                self.config.authority, self.schema
            ),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("postgresql".to_string(), self.version.clone())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        let mut c = self.config.connect()?;
        let s = &self.schema;
        let mut prepare = |sql: String| c.drive.run("prepare", c.client.prepare(&sql));
        let put = prepare(format!(
            "INSERT INTO {s}.objects (k, v) VALUES ($1, $2) \
             ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
        ))?;
        let get = prepare(format!("SELECT v FROM {s}.objects WHERE k = $1"))?;
        let get_many = prepare(format!("SELECT k, v FROM {s}.objects WHERE k = ANY($1)"))?;
        let delete = prepare(format!("DELETE FROM {s}.objects WHERE k = $1"))?;
        let scan = prepare(format!(
            "SELECT k, v FROM {s}.objects WHERE k >= $1 ORDER BY k LIMIT $2"
        ))?;
        Ok(Box::new(PgSession {
            c,
            put,
            get,
            get_many,
            delete,
            scan,
            in_tx: false,
            reads: 0,
            keys: Vec::new(),
            at: HashMap::new(),
        }))
    }
    fn connect_sql(&self) -> Result<Box<dyn engine::driver::SqlSession>, OpError> {
        Ok(Box::new(sql::PgSql::open(&self.config, &self.schema)?))
    }
    fn cold_unreachable(&self) -> Option<String> {
        Some("postgres: the server's shared buffers empty only when it restarts, and dyno does not restart a server it did not start".into())
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if !self.owner {
            return Ok(());
        }
        let fail = |e: OpError| DriverError::new(format!("dropping schema {}: {e}", self.schema));
        let mut c = self.config.connect().map_err(fail)?;
        let sql = format!("DROP SCHEMA {} CASCADE", self.schema);
        (c.drive)
            .run("DROP SCHEMA", c.client.batch_execute(&sql))
            .map_err(fail)
    }
}

struct PgSession {
    c: Conn,
    put: Statement,
    get: Statement,
    get_many: Statement,
    delete: Statement,
    /// Keys are bigint: their order agrees with u64's below 2^63, where every YCSB key is.
    scan: Statement,
    in_tx: bool,
    reads: u64,
    /// A batched read's keys as PostgreSQL sees them, and where each goes.
    keys: Vec<i64>,
    at: HashMap<i64, usize>,
}

/// Keys are u64; PostgreSQL's bigint is signed: the same 64 bits.
fn k(key: u64) -> i64 {
    key as i64
}

impl Session for PgSession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        let sql = match mode {
            TxMode::Read => "BEGIN READ ONLY",
            TxMode::Write => "BEGIN",
        };
        self.c
            .drive
            .run("BEGIN", self.c.client.batch_execute(sql))?;
        self.in_tx = true;
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        let c = &mut self.c;
        (c.drive)
            .run("INSERT", c.client.execute(&self.put, &[&k(key), &value]))
            .map(drop)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        let c = &mut self.c;
        let row = (c.drive).run("SELECT", c.client.query_opt(&self.get, &[&k(key)]))?;
        let Some(row) = row else {
            return Err(OpError::new(ErrorClass::NotFound, "postgres: no such key"));
        };
        let v: &[u8] = row.try_get(0).map_err(|e| op_err("SELECT", e))?;
        out.clear();
        out.extend_from_slice(v);
        Ok(())
    }
    fn scan(
        &mut self,
        start: u64,
        count: usize,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), OpError> {
        self.reads += 1;
        out.clear();
        let c = &mut self.c;
        let rows = (c.drive).run(
            "SELECT … ORDER BY",
            c.client.query(&self.scan, &[&k(start), &(count as i64)]),
        )?;
        for row in rows {
            let key: i64 = row.try_get(0).map_err(|e| op_err("SELECT … ORDER BY", e))?;
            let v: Vec<u8> = row.try_get(1).map_err(|e| op_err("SELECT … ORDER BY", e))?;
            out.push((key as u64, v));
        }
        Ok(())
    }
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        self.reads += keys.len() as u64;
        self.keys.clear();
        self.keys.extend(keys.iter().map(|&x| k(x)));
        let c = &mut self.c;
        let rows = (c.drive).run(
            "SELECT … ANY",
            c.client.query(&self.get_many, &[&self.keys]),
        )?;
        // Rows come in any order: place each at its key's position.
        self.at.clear();
        for (i, row) in rows.iter().enumerate() {
            let key: i64 = row.try_get(0).map_err(|e| op_err("SELECT … ANY", e))?;
            self.at.insert(key, i);
        }
        out.clear();
        ends.clear();
        for key in &self.keys {
            let Some(&i) = self.at.get(key) else {
                return Err(OpError::new(ErrorClass::NotFound, "postgres: no such key"));
            };
            let v: &[u8] = rows[i].try_get(1).map_err(|e| op_err("SELECT … ANY", e))?;
            out.extend_from_slice(v);
            ends.push(out.len());
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        let c = &mut self.c;
        match (c.drive).run("DELETE", c.client.execute(&self.delete, &[&k(key)]))? {
            0 => Err(OpError::new(ErrorClass::NotFound, "postgres: no such key")),
            _ => Ok(()),
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        if !self.in_tx {
            return Ok(());
        }
        self.in_tx = false;
        let c = &mut self.c;
        (c.drive).run("COMMIT", c.client.batch_execute("COMMIT"))
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}
