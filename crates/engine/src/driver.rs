//! The contract between the engine and the drivers (`crates/targets`).
//!
//! A driver turns a URL and options into a [`TargetConfig`] without touching anything (that is
//! what `dyno validate` runs). Opening a config claims a namespace and yields a [`Store`]; a store
//! hands out [`Session`]s, one per client, used from that client's thread only. Every operation
//! returns `Result<_, OpError>`: a failure is data, classified by [`ErrorClass`], never a panic.

use crate::clock::Clock;
pub use crate::error::{ErrorClass, OpError};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use results::Namespace;

/// Operation families a driver can support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// get / put / delete / commit a batch.
    Kv,
    /// Objects with references, read one at a time or in batches (`get_many`); references are
    /// followed by the client, as ZODB and Magma clients do.
    Graph,
    /// mkdir / stat / list.
    Namespace,
    /// Send a request, read a response.
    Request,
    /// SQL statements with parameters, in a schema or database of dyno's own ([`SqlSession`]).
    Sql,
    /// Transactions of appends to lists and reads of them (Elle's list-append): SQL databases
    /// run them as SQL the suite writes, other stores as one request of their own
    /// ([`ListSession`]).
    Lists,
}

impl Family {
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Kv => "kv",
            Family::Graph => "graph",
            Family::Namespace => "namespace",
            Family::Request => "request",
            Family::Sql => "sql",
            Family::Lists => "lists",
        }
    }
}

/// One option a driver accepts, for `dyno targets` and for "did you mean" hints.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    pub name: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

/// What `dyno targets` prints about a driver.
#[derive(Debug)]
pub struct DriverInfo {
    /// The URL scheme, without the colon.
    pub scheme: &'static str,
    /// Whether `?k=v` in the URL sets driver options (false for `http:`, whose query is part of
    /// the request; its options come from flags or the plan).
    pub query_options: bool,
    /// One line on what it is.
    pub summary: &'static str,
    /// Accepted URL forms.
    pub forms: &'static [&'static str],
    pub families: &'static [Family],
    pub options: &'static [OptionSpec],
    /// How its clients are carried (`dyno targets` says it).
    pub clients: ClientModel,
}

/// How a driver's clients are carried by dyno's generator threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientModel {
    /// Many sessions per generator thread: non-blocking sockets, each client a fiber that
    /// yields while it waits ([`Store::many_per_thread`]).
    ManyPerThread,
    /// A thread per client; the text says why (the client blocks its thread).
    ThreadEach(&'static str),
    /// Requests from the load engine's event loops (no sessions).
    EventLoop,
}

impl std::fmt::Display for ClientModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientModel::ManyPerThread => write!(
                f,
                "many per generator thread (each waits as a fiber; --threads, default one per core)"
            ),
            ClientModel::ThreadEach(why) => write!(f, "a thread each ({why})"),
            ClientModel::EventLoop => write!(f, "the load engine's event loops (--threads)"),
        }
    }
}

/// A driver's complaint about its configuration; the plan resolver adds the place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The option at fault, or `None` for the URL itself.
    pub option: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

impl ConfigError {
    pub fn url(message: impl Into<String>) -> ConfigError {
        ConfigError {
            option: None,
            message: message.into(),
            hint: None,
        }
    }

    pub fn option(name: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            option: Some(name.to_string()),
            message: message.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> ConfigError {
        self.hint = Some(hint.into());
        self
    }
}

/// Why a target could not be opened or closed (refusal to touch foreign data included).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct DriverError {
    pub message: String,
}

impl DriverError {
    pub fn new(message: impl Into<String>) -> DriverError {
        DriverError {
            message: message.into(),
        }
    }
}

/// Transaction kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxMode {
    Read,
    Write,
}

/// A configured target: validated, not yet touched.
pub trait TargetConfig: Send + Sync {
    /// The durability class, as the table's column header shows it (e.g. `WAL sync=NORMAL`).
    fn durability(&self) -> String;
    /// Every option with its resolved value, defaults included.
    fn options(&self) -> BTreeMap<String, String>;
    /// The path data will live in, when known before opening (for the filesystem type); `None`
    /// for servers and temporary namespaces.
    fn data_path(&self) -> Option<PathBuf> {
        None
    }
    /// The column name when the plan gives none (else the scheme): a driver whose targets differ
    /// by more than their scheme (`exec:` adapters) names them after what they are.
    fn default_name(&self) -> Option<String> {
        None
    }
    /// True when the driver runs on a virtual clock (exact, simulated latencies).
    fn virtual_time(&self) -> bool {
        false
    }
    /// Checks, reading only, that opening would be allowed (e.g. the file is dyno's). Changes nothing.
    fn preflight(&self) -> Result<(), DriverError> {
        Ok(())
    }
    /// Where client and target sit: `inproc`, `loopback`, `lan` or `wan`.
    fn topology(&self) -> &'static str {
        "inproc"
    }
    /// The operation families this target speaks. A kv store speaks graph too: graph objects
    /// are values of its kv operations (see `graph`).
    fn families(&self) -> &'static [Family] {
        &[Family::Kv, Family::Graph]
    }
    /// Claims the namespace (creating it, or proving dyno created it) and opens the store
    /// (`kv` targets).
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        Err(DriverError::new("this target does not speak the kv family"))
    }
    /// Opens the namespace the shards of one run share (`--shard I/N`), named at their
    /// rendezvous: the owner (rank 0) makes it before the others open it, and deletes it at
    /// close once every shard is done; the others use it and leave it. A store whose data
    /// lives in this process cannot be shared: refused, saying so.
    fn open_shared(&self, _share: &Share) -> Result<Box<dyn Store>, DriverError> {
        Err(DriverError::new(
            "its data lives in this process, so shards on other processes cannot share it: shard a store suite on a server (redis://, postgres://, etcd://, dyno://)",
        ))
    }
    /// Sends a mix of named requests instead of the one the URL and options say
    /// (`[[targets.NAME.requests]]`): each request's keys as the plan wrote them; called once
    /// the plan is read, with none when it names none. An error says which request (its index;
    /// `usize::MAX` for the target's own options) and, as its option, which key.
    fn with_requests(
        &mut self,
        requests: &[BTreeMap<String, String>],
    ) -> Result<(), (usize, ConfigError)> {
        if requests.is_empty() {
            return Ok(());
        }
        Err((
            0,
            ConfigError::url(
                "this target takes no mix of requests; [[targets.NAME.requests]] is for http://, https://, h2c:// and grpc:// targets",
            ),
        ))
    }
    /// Where to send requests and how (`request` targets). Resolves the address.
    fn endpoint(&self) -> Result<Endpoint, DriverError> {
        Err(DriverError::new(
            "this target does not speak the request family",
        ))
    }
}

/// A namespace the shards of one run share; see [`TargetConfig::open_shared`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    /// The run's name from the rendezvous (16 hexadecimal digits).
    pub run: String,
    /// Rank 0: makes the namespace and deletes it.
    pub owner: bool,
}

impl Share {
    /// The namespace's name on the store: `dyno_shard_RUN`, a `dyno_` name as every namespace
    /// dyno makes.
    pub fn namespace(&self) -> String {
        format!("dyno_shard_{}", self.run)
    }
}

/// A request/response target, ready for the event loop.
#[derive(Clone)]
pub struct Endpoint {
    pub addr: std::net::SocketAddr,
    pub protocol: std::sync::Arc<dyn crate::load::Protocol>,
}

/// What reaching the cold state did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheDrop {
    /// Caches dropped; the text says which, and what verified it.
    Done(String),
    /// This target cannot be made cold; the text says why.
    NotReachable(String),
}

impl CacheDrop {
    /// The same outcome with the text of a drop that was done rewritten by `f`.
    pub fn map_done(self, f: impl FnOnce(String) -> String) -> CacheDrop {
        match self {
            CacheDrop::Done(what) => CacheDrop::Done(f(what)),
            not => not,
        }
    }
}

/// An opened namespace on a store, shared by every client of a case.
pub trait Store: Send + Sync {
    /// Where the data lives, and whether dyno created it.
    fn namespace(&self) -> Namespace;
    /// Versions of the software under test.
    fn versions(&self) -> BTreeMap<String, String>;
    /// Opens a client session. `clock` is the worker's clock (a virtual-time driver advances it).
    fn connect(&self, clock: &Clock) -> Result<Box<dyn Session>, OpError>;
    /// Opens a SQL session in the store's own schema or database (family `sql`).
    fn connect_sql(&self) -> Result<Box<dyn SqlSession>, OpError> {
        Err(OpError::new(
            ErrorClass::Application,
            "this target does not run SQL statements",
        ))
    }
    /// Opens a session for list-append transactions (family `lists`) on a store that runs them
    /// itself; a SQL database runs them through [`Store::connect_sql`] instead.
    fn connect_lists(&self) -> Result<Box<dyn ListSession>, OpError> {
        Err(OpError::new(
            ErrorClass::Application,
            "this target does not run list transactions of its own",
        ))
    }
    /// Drops every cache below dyno's client cache. Called with no session open, and only when
    /// [`Store::cold_unreachable`] says nothing; by default, what that says.
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        Ok(CacheDrop::NotReachable(
            self.cold_unreachable().unwrap_or_else(|| {
                "this target has no way to drop the caches below its sessions".into()
            }),
        ))
    }
    /// Why the caches below the sessions can never be dropped on this store (a server that keeps
    /// everything in memory, or one dyno did not start): the shootout's cold test is then `n/a`
    /// before anything is closed, so hot still finds warm's sessions. `None`: they may be.
    fn cold_unreachable(&self) -> Option<String> {
        None
    }
    /// The server's own figures, cumulative since it started, for targets whose server measures
    /// itself (`dyno://`): the runner takes them before and after each test.
    fn server_stats(&self) -> Option<Result<Vec<ServerOp>, OpError>> {
        None
    }
    /// Whether its sessions [`Session::scan`]: `Err` with why not (no key order) by default.
    fn scans(&self) -> Result<(), String> {
        Err("this target keeps no key order (a hash map, files by name, a key-value server)".into())
    }
    /// Called before anything is written by a run that will scan: a store that keeps an index
    /// only for scans (Redis's sorted set) starts it here. Then as [`Store::scans`].
    fn prepare_scans(&self) -> Result<(), String> {
        self.scans()
    }
    /// Where the target keeps a client object cache of its own (ZODB's pickle cache, in an
    /// adapter's session process): what it is, in a few words. The shootout then reads every
    /// object through the session, empties that cache with [`Session::drop_client_cache`] where
    /// dyno would empty its own, and expects steamin's reads to be served by it; `None` (the
    /// default): dyno's client cache plays that part.
    fn client_cache(&self) -> Option<String> {
        None
    }
    /// Whether its sessions' [`Session::get_heads`] brings back the heads alone (an adapter
    /// that has `get_heads`), rather than whole values that dyno cuts.
    fn reads_heads(&self) -> bool {
        false
    }
    /// Whether many of its sessions can share a generator thread: true when a session waits
    /// only on sockets through [`crate::fiber::Stream`] (and sleeps through the clock), so a
    /// waiting client yields its thread to the others. False (the default) for a client that
    /// blocks its thread (an embedded store's locks, a blocking client library): each of its
    /// clients then gets a thread of its own, as before.
    fn many_per_thread(&self) -> bool {
        false
    }
    /// Releases the store; deletes the namespace if it was temporary.
    fn close(self: Box<Self>) -> Result<(), DriverError>;
}

/// One operation as the server measured it (cumulative since it started).
#[derive(Debug, Clone)]
pub struct ServerOp {
    pub op: String,
    pub count: u64,
    pub latency: results::Histogram,
}

/// A row as the `sql` suite reads it: each column's name and its value as text (`None`: NULL).
pub type SqlRow<'a> = [(&'a str, Option<&'a str>)];

/// What sees each row a statement gives: the index of the statement it came from among those
/// the request ran (a compound command's several; otherwise 0), and the row.
pub type EachSqlRow<'a> = dyn FnMut(usize, &SqlRow<'_>) + 'a;

/// The SQL a target speaks, where it matters (DDL, bulk loading).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    MySql,
}

/// A parameter of a prepared SQL statement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SqlParam<'a> {
    Null,
    /// A whole number: PostgreSQL gets its text (as pgbench sends it), MySQL a BIGINT (as
    /// sysbench binds it).
    Int(i64),
    /// Text, which the server converts to the type it needs.
    Text(&'a str),
}

/// How a SQL session sends its statements (pgbench's `-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryMode {
    /// Each statement's text with the values written into it, as one query (PostgreSQL's
    /// simple query protocol, MySQL's text protocol).
    Simple,
    /// PostgreSQL's extended protocol with an unnamed statement: parsed again at each run.
    Extended,
    /// Prepared once per session, run with the values as parameters.
    #[default]
    Prepared,
}

impl QueryMode {
    pub const ALL: [QueryMode; 3] = [QueryMode::Simple, QueryMode::Extended, QueryMode::Prepared];

    /// The mode named `text` (as [`QueryMode::name`] writes it).
    pub fn parse(text: &str) -> Option<QueryMode> {
        QueryMode::ALL.into_iter().find(|m| m.name() == text.trim())
    }

    pub fn name(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }
}

/// The text of a statement run in [`QueryMode::Simple`]: `parts` with `params` written between
/// them, as pgbench's `-M simple` writes a variable's value into the text — a whole number in
/// decimal, text as it is (a script quotes what must be quoted), NULL as `NULL`.
pub fn splice<S: AsRef<str>>(out: &mut Vec<u8>, parts: &[S], params: &[SqlParam<'_>]) {
    use std::io::Write;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            match params.get(i - 1).copied().unwrap_or(SqlParam::Null) {
                SqlParam::Null => out.extend_from_slice(b"NULL"),
                SqlParam::Int(v) => write!(out, "{v}").expect("writing to a Vec"),
                SqlParam::Text(t) => out.extend_from_slice(t.as_bytes()),
            }
        }
        out.extend_from_slice(part.as_ref().as_bytes());
    }
}

/// A SQL client's connection, for the `sql` suite: it works in dyno's own schema or database
/// (unqualified table names resolve there), and reads values as text, as pgbench does. Used
/// from one thread; every call may fail, none may panic.
pub trait SqlSession: Send {
    /// Which SQL it speaks.
    fn dialect(&self) -> Dialect;
    /// Sends its statements as `mode` says from now on, or says why it cannot.
    fn set_query_mode(&mut self, mode: QueryMode) -> Result<(), String> {
        match mode {
            QueryMode::Prepared => Ok(()),
            _ => Err(format!(
                "-M {}: this target only prepares its statements",
                mode.name()
            )),
        }
    }
    /// Makes ready the statement made of `parts` with a value between each two — a placeholder
    /// (`$1`, `$2`… or `?`) of a statement prepared on the server, or, as the query mode says,
    /// the text each run sends; its handle.
    fn prepare(&mut self, parts: &[String]) -> Result<usize, OpError>;
    /// Runs prepared statement `stmt` with `params`. `row`, when given, sees each row's
    /// columns, by name, as text, with the index of the statement it came from (without it,
    /// rows are only counted). Returns the rows a write affected, or the rows a query gave
    /// (the last statement's, in a compound command).
    fn execute(
        &mut self,
        stmt: usize,
        params: &[SqlParam<'_>],
        row: Option<&mut EachSqlRow<'_>>,
    ) -> Result<u64, OpError>;
    /// Runs SQL as written, with no parameters and no rows read (DDL, `BEGIN`, `END`).
    fn batch(&mut self, sql: &str) -> Result<(), OpError>;
    /// How long a statement's reply may take from now on, as a whole and each read of it (the
    /// driver's own bound until then, 30 s): [`SETUP_TIMEOUT`] for the statements that make a
    /// suite's tables.
    fn set_timeout(&mut self, d: std::time::Duration);
    /// Whether the server said, at the end of the last statement, that a transaction is open
    /// on this session (one a `BEGIN` started, not yet ended).
    fn in_transaction(&self) -> bool;
    /// Whether a statement may still be sent: not once the connection failed (the server gone,
    /// or a reply lost, late or malformed, which leaves the session out of step with it).
    fn usable(&self) -> bool {
        true
    }
    /// Runs `sql`, a `COPY … FROM STDIN` in the text format, with the rows `fill` writes (each
    /// call appends some whole lines and says whether more follow); the rows copied. PostgreSQL's
    /// alone: elsewhere an error.
    fn copy_in(
        &mut self,
        _sql: &str,
        _fill: &mut dyn FnMut(&mut Vec<u8>) -> bool,
    ) -> Result<u64, OpError> {
        Err(OpError::new(
            ErrorClass::Application,
            "COPY … FROM STDIN is PostgreSQL's",
        ))
    }
    /// Whether it pipelines (pgbench's `\startpipeline`): sends statements without waiting
    /// for the replies before them; why not, if not.
    fn pipelines(&self) -> Result<(), &'static str> {
        Err(NO_PIPELINES)
    }
    /// Begins a pipeline.
    fn start_pipeline(&mut self) -> Result<(), OpError> {
        Err(no_pipelines())
    }
    /// Queues prepared statement `stmt` with `params` in the pipeline.
    fn queue(&mut self, _stmt: usize, _params: &[SqlParam<'_>]) -> Result<(), OpError> {
        Err(no_pipelines())
    }
    /// Ends a pipeline's segment and sends it (`\syncpipeline`).
    fn sync_segment(&mut self) -> Result<(), OpError> {
        Err(no_pipelines())
    }
    /// Ends the pipeline and reads every reply: `done(k)` as the `k`-th statement queued
    /// completes; the first failure, with the index of the statement it came at
    /// ([`NO_STATEMENT`] when it is none's: the sending, a segment's commit).
    fn end_pipeline(&mut self, _done: &mut dyn FnMut(usize)) -> Result<(), (usize, OpError)> {
        Err((NO_STATEMENT, no_pipelines()))
    }
}

/// The index [`SqlSession::end_pipeline`] gives a failure that is no statement's.
pub const NO_STATEMENT: usize = usize::MAX;

/// How long a statement that makes, vacuums, checks or drops a suite's tables may take
/// ([`SqlSession::set_timeout`]): minutes at a large scale, where the run's statements take
/// milliseconds (a primary key on pgbench's accounts at scale 500, 50 million rows, took 15 s on
/// a 2-core machine, 2026-11-30; pgbench waits without end). Ctrl-C twice quits sooner.
pub const SETUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Why a session without [`SqlSession::pipelines`] cannot run one.
pub const NO_PIPELINES: &str = "pipelines need PostgreSQL's extended protocol; on this target each statement is answered before the next is sent";

fn no_pipelines() -> OpError {
    OpError::new(ErrorClass::Application, NO_PIPELINES)
}

/// A client's connection for list-append transactions (family `lists`): a store's own (etcd: a
/// `Txn` guarded on what the transaction read), or SQL the append suite writes. Used from one
/// thread; every call may fail, none may panic.
pub trait ListSession: Send {
    /// Runs `mops` as one transaction, filling in what each read returned. An error says
    /// whether the transaction's writes had been sent when it came (a broken connection then
    /// leaves the outcome unknown) or not (nothing happened).
    fn transaction(
        &mut self,
        mops: &mut [results::consistency::append::Mop],
    ) -> Result<(), (OpError, bool)>;
    /// After a transaction that failed, outside its timing: what the session needs (a SQL
    /// session's rollback).
    fn recover(&mut self) {}
    /// Whether the next transaction may run on it; a session that moves to another server by
    /// itself always may.
    fn usable(&self) -> bool {
        true
    }
}

/// One client's connection. Used from one thread; every call may fail, none may panic.
pub trait Session: Send {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError>;
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError>;
    /// Reads `key` into `out` (cleared first).
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError>;
    fn delete(&mut self, key: u64) -> Result<(), OpError>;
    /// Reads every key of `keys` (the `graph` family's batched read): the values end to end in
    /// `out`, `ends[i]` the end of the i-th. A missing key fails the whole read. Drivers with a
    /// batched request (the host's `MGET`, Redis `MGET`, SQL `= ANY`) make it one round trip;
    /// the default reads one key at a time.
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        get_each(self, keys, out, ends)
    }
    /// [`Session::get_many`] for a reader that checks values without keeping them: each value's
    /// first `head` bytes and its whole length ([`crate::graph::Heads`]). An adapter whose
    /// process holds the values (ZODB's objects) sends back only those; the default reads each
    /// value whole and cuts it.
    fn get_heads(
        &mut self,
        keys: &[u64],
        head: usize,
        out: &mut crate::graph::Heads,
    ) -> Result<(), OpError> {
        get_heads_whole(self, keys, head, out)
    }
    /// Up to `count` objects from the first key at or above `start`, in key order (YCSB's
    /// scan): `out` cleared, then `(key, value)` pairs. Only where [`Store::scans`] says so.
    fn scan(
        &mut self,
        start: u64,
        count: usize,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), OpError> {
        let _ = (start, count, out);
        Err(OpError::new(
            ErrorClass::Application,
            "this target keeps no key order: no scan",
        ))
    }
    fn commit(&mut self) -> Result<(), OpError>;
    /// Reads this session made against the storage so far (the steamin check reads it).
    fn storage_reads(&self) -> u64;
    /// Empties the session's own client object cache, where its store has one
    /// ([`Store::client_cache`]); nothing to do otherwise.
    fn drop_client_cache(&mut self) -> Result<(), OpError> {
        Ok(())
    }

    // The `namespace` family. A path is relative to the store's namespace: names joined by `/`,
    // each of ASCII letters, digits, `_`, `-` or `.`, at most 2048 bytes (`host::store::valid_path`).
    // The empty path is the root, which always exists.

    /// Creates the folder `path`; its parent must exist and it must not.
    fn mkdir(&mut self, path: &str) -> Result<(), OpError> {
        let _ = path;
        Err(no_namespace())
    }
    /// Checks that `path` is a folder (a `not_found` error when there is none).
    fn stat(&mut self, path: &str) -> Result<(), OpError> {
        let _ = path;
        Err(no_namespace())
    }
    /// The names of the entries of folder `path`, into `out` (cleared first).
    fn list(&mut self, path: &str, out: &mut Vec<String>) -> Result<(), OpError> {
        let _ = (path, out);
        Err(no_namespace())
    }
    /// Removes the empty folder `path`.
    fn rmdir(&mut self, path: &str) -> Result<(), OpError> {
        let _ = path;
        Err(no_namespace())
    }
}

/// [`Session::get_many`] as one `get` per key: the default, and the fallback of a driver whose
/// server may or may not have a batched read.
pub fn get_each<S: Session + ?Sized>(
    s: &mut S,
    keys: &[u64],
    out: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Result<(), OpError> {
    out.clear();
    ends.clear();
    let mut one = Vec::new();
    for &k in keys {
        s.get(k, &mut one)?;
        out.extend_from_slice(&one);
        ends.push(out.len());
    }
    Ok(())
}

/// [`Session::get_heads`] as a `get_many` of the whole values, cut: the default, and the
/// fallback of a driver whose target may or may not read heads alone.
pub fn get_heads_whole<S: Session + ?Sized>(
    s: &mut S,
    keys: &[u64],
    head: usize,
    out: &mut crate::graph::Heads,
) -> Result<(), OpError> {
    out.lens.clear();
    s.get_many(keys, &mut out.bytes, &mut out.ends)?;
    out.cut(head);
    Ok(())
}

fn no_namespace() -> OpError {
    OpError::new(
        ErrorClass::Protocol,
        "this target does not speak the namespace family",
    )
}
