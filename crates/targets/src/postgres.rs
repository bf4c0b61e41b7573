//! `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` — PostgreSQL, through the `postgres` crate
//! (Cargo feature `postgres`, on by default).
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
//! Bounds: connecting times out after 30 s; every statement has a server-side
//! `statement_timeout` of 30 s, and TCP keepalives and `tcp_user_timeout` end a connection to a
//! server that stopped answering.

use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    CacheDrop, ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError,
    OptionSpec, Session, Store, TargetConfig, TxMode,
};
use postgres::{Client, NoTls, Statement};
use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "postgres",
    query_options: true,
    summary: "PostgreSQL; dyno's objects in a schema of its own, dropped at the end",
    forms: &[
        "postgres://dyno@127.0.0.1:5432/postgres",
        "postgres://user:secret@127.0.0.1/db?synchronous_commit=off",
    ],
    families: &[Family::Kv, Family::Graph],
    options: &[OptionSpec {
        name: "synchronous_commit",
        default: "",
        help: "set for dyno's sessions: on, off, local, remote_write or remote_apply (default: the server's)",
    }],
};

const TIMEOUT: Duration = Duration::from_secs(30);
const SYNC_LEVELS: &[&str] = &["", "on", "off", "local", "remote_write", "remote_apply"];

static SEQ: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone)]
struct Config {
    pg: postgres::Config,
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
    let mut pg = postgres::Config::from_str(&format!("postgresql:{rest}")).map_err(|e| {
        ConfigError::url(format!("not a PostgreSQL URL: {e}"))
            .hint("write e.g. postgres://dyno@127.0.0.1:5432/postgres")
    })?;
    let host = match pg.get_hosts() {
        [postgres::config::Host::Tcp(h)] => h.clone(),
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
    pg.connect_timeout(TIMEOUT)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(10))
        .tcp_user_timeout(TIMEOUT)
        .application_name("dyno")
        .options("-c statement_timeout=30000");
    Ok(Box::new(Config {
        pg,
        authority: format!("{host}:{port}"),
        synchronous_commit,
        resolved: o.resolved(),
        durability: std::sync::OnceLock::new(),
    }))
}

fn op_err(context: &str, e: postgres::Error) -> OpError {
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
    OpError::new(class, format!("postgres: {context}: {e}"))
}

impl Config {
    fn connect(&self) -> Result<Client, OpError> {
        let mut c = self.pg.connect(NoTls).map_err(|e| op_err("connect", e))?;
        if !self.synchronous_commit.is_empty() {
            c.batch_execute(&format!(
                "SET synchronous_commit = {}",
                self.synchronous_commit
            ))
            .map_err(|e| op_err("SET synchronous_commit", e))?;
        }
        Ok(c)
    }

    fn settings(&self) -> Result<(String, String, String), OpError> {
        let mut c = self.connect()?;
        let row = c
            .query_one(
                "SELECT current_setting('fsync'), current_setting('synchronous_commit'), \
                 current_setting('server_version')",
                &[],
            )
            .map_err(|e| op_err("reading settings", e))?;
        Ok((row.get(0), row.get(1), row.get(2)))
    }
}

impl TargetConfig for Config {
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
        let fail = |e: OpError| DriverError::new(format!("postgres://{}: {}", self.authority, e));
        let (_, _, version) = self.settings().map_err(fail)?;
        let schema = format!(
            "dyno_{}_{}_{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        );
        let mut c = self.connect().map_err(fail)?;
        // CREATE SCHEMA without IF NOT EXISTS: a schema of that name that dyno did not just
        // create is refused, never reused.
        c.batch_execute(&format!(
            "CREATE SCHEMA {schema}; \
             CREATE TABLE {schema}.objects (k bigint PRIMARY KEY, v bytea NOT NULL)"
        ))
        .map_err(|e| fail(op_err("creating dyno's schema", e)))?;
        Ok(Box::new(PgStore {
            config: self.clone(),
            schema,
            version,
        }))
    }
}

struct PgStore {
    config: Config,
    schema: String,
    version: String,
}

impl Store for PgStore {
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
        let mut prepare = |sql: String| c.prepare(&sql).map_err(|e| op_err("prepare", e));
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
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        Ok(CacheDrop::NotReachable(
            "postgres: the server's shared buffers empty only when it restarts, and dyno does not restart a server it did not start"
                .into(),
        ))
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        let fail = |e: OpError| DriverError::new(format!("dropping schema {}: {e}", self.schema));
        let mut c = self.config.connect().map_err(fail)?;
        c.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema))
            .map_err(|e| fail(op_err("DROP SCHEMA", e)))
    }
}

struct PgSession {
    c: Client,
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
        self.c.batch_execute(sql).map_err(|e| op_err("BEGIN", e))?;
        self.in_tx = true;
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        self.c
            .execute(&self.put, &[&k(key), &value])
            .map(drop)
            .map_err(|e| op_err("INSERT", e))
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        let row = self
            .c
            .query_opt(&self.get, &[&k(key)])
            .map_err(|e| op_err("SELECT", e))?;
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
        let rows = self
            .c
            .query(&self.scan, &[&k(start), &(count as i64)])
            .map_err(|e| op_err("SELECT … ORDER BY", e))?;
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
        let rows = self
            .c
            .query(&self.get_many, &[&self.keys])
            .map_err(|e| op_err("SELECT … ANY", e))?;
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
        match self
            .c
            .execute(&self.delete, &[&k(key)])
            .map_err(|e| op_err("DELETE", e))?
        {
            0 => Err(OpError::new(ErrorClass::NotFound, "postgres: no such key")),
            _ => Ok(()),
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        if !self.in_tx {
            return Ok(());
        }
        self.in_tx = false;
        self.c
            .batch_execute("COMMIT")
            .map_err(|e| op_err("COMMIT", e))
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}
