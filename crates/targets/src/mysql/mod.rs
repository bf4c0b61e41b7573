//! `mysql://USER[:PASSWORD]@HOST[:PORT][/DATABASE]` — MySQL and MariaDB over their client
//! protocol, written here (`proto.rs`, `conn.rs`) and driven by dyno's fibers: a session's wait
//! for a reply yields to the generator thread's other clients, as `postgres://` does.
//!
//! dyno works only in a database of its own (`dyno_<pid>_<n>_<ns>`), created for the run with
//! one table `objects (k BIGINT UNSIGNED PRIMARY KEY, v LONGBLOB)` in InnoDB, and dropped at the
//! end; the URL's database is only where it logs in. `CREATE DATABASE` without `IF NOT EXISTS`:
//! a database of that name that dyno did not just create is refused, never used. Each client
//! has its own connection and prepared statements (the binary protocol); a write transaction is
//! `START TRANSACTION` … `COMMIT`, a read transaction `START TRANSACTION READ ONLY` … `COMMIT`;
//! the graph family's batched read is one `SELECT … WHERE k IN (?, …)`. Durability is read from
//! the server (`innodb_flush_log_at_trx_commit`, `sync_binlog`, whether the binary log is on)
//! and named in the column header. `cold` is not reachable: InnoDB's buffer pool empties only
//! when the server restarts.
//!
//! Written by hand rather than with `mysql_common`: what dyno says is a handful of packets
//! (`proto.rs` and `conn.rs`, about 720 lines), where the crate brings a general value system
//! (and its dependencies) dyno would not use; the parsers are property-tested.
//!
//! Bounds: connecting and every reply time out after 30 s (the socket's); a statement whose
//! reply did not come in time is killed on the server (`KILL QUERY`, see `conn.rs`).

mod conn;
pub mod proto;
mod sql;

use crate::options::Opts;
use conn::{Conn, Stmt};
use engine::clock::Clock;
use engine::driver::{
    ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError, Session, Store,
    TargetConfig, TxMode,
};
use proto::Param;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "mysql",
    query_options: true,
    summary: "MySQL or MariaDB; dyno's objects in a database of its own, dropped at the end",
    forms: &[
        "mysql://dyno:secret@127.0.0.1:3306",
        "mysql://dyno:secret@127.0.0.1/test",
    ],
    families: &[Family::Kv, Family::Graph, Family::Sql, Family::Lists],
    options: &[],
    clients: engine::driver::ClientModel::ManyPerThread,
};

/// A batched read asks for at most this many keys per statement (one prepared per size).
const BATCH: usize = 256;

#[derive(Debug, Clone)]
struct Config {
    url: crate::net::DbUrl,
    durability: std::sync::OnceLock<String>,
}

/// Validates the URL; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    Opts::new("mysql", options, INFO.options)?;
    let url = crate::net::DbUrl::parse(
        rest,
        3306,
        "mysql://USER[:PASSWORD]@HOST[:PORT][/DATABASE]",
        "mysql://dyno:secret@127.0.0.1:3306",
    )?;
    Ok(Box::new(Config {
        url,
        durability: std::sync::OnceLock::new(),
    }))
}

impl Config {
    fn addr(&self) -> Result<SocketAddr, OpError> {
        crate::net::resolve(&self.url.authority, Some(3306))
            .map_err(|e| OpError::new(ErrorClass::Refused, e.message))
    }

    /// A logged-in connection.
    fn connect(&self) -> Result<Conn, OpError> {
        self.connect_in(self.url.database.as_deref())
    }

    /// A connection logged in with `db` as its default database.
    fn connect_in(&self, db: Option<&str>) -> Result<Conn, OpError> {
        Conn::open(
            self.addr()?,
            &self.url.user,
            self.url.password.as_deref().unwrap_or_default(),
            db,
        )
    }

    /// The server's durability settings, as the column header says them.
    fn settings(&self) -> Result<String, OpError> {
        let mut c = self.connect()?;
        let r = c.query("SELECT @@innodb_flush_log_at_trx_commit, @@sync_binlog, @@log_bin")?;
        c.quit();
        let row = r.rows.first().cloned().unwrap_or_default();
        let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let binlog = match get(2).as_str() {
            "1" | "ON" => format!("binlog sync_binlog={}", get(1)),
            _ => "no binlog".into(),
        };
        Ok(format!(
            "innodb_flush_log_at_trx_commit={} {binlog}",
            get(0)
        ))
    }
}

impl TargetConfig for Config {
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn durability(&self) -> String {
        self.durability
            .get_or_init(|| match self.settings() {
                Ok(d) => d,
                Err(_) => "unknown (server unreachable)".into(),
            })
            .clone()
    }
    fn options(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn topology(&self) -> &'static str {
        crate::net::topology_of(&self.url.authority)
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        self.open_in(None)
    }
    fn open_shared(&self, share: &engine::driver::Share) -> Result<Box<dyn Store>, DriverError> {
        self.open_in(Some(share))
    }
}

impl Config {
    /// Opens the run's database: its own, made here, or the one its shards share (made by
    /// rank 0 before the others open it).
    fn open_in(
        &self,
        share: Option<&engine::driver::Share>,
    ) -> Result<Box<dyn Store>, DriverError> {
        let fail = |e: OpError| DriverError::new(format!("mysql://{}: {}", self.url.authority, e));
        let (db, owner) = crate::claim::server_namespace(share);
        let mut c = self.connect().map_err(fail)?;
        if owner {
            c.query(&format!("CREATE DATABASE {db}")).map_err(fail)?;
            c.query(&format!(
                "CREATE TABLE {db}.objects (k BIGINT UNSIGNED PRIMARY KEY, v LONGBLOB NOT NULL) \
                 ENGINE=InnoDB"
            ))
            .map_err(fail)?;
        } else {
            c.query(&format!("SELECT 1 FROM {db}.objects LIMIT 0"))
                .map_err(fail)?;
        }
        let version = c.version.clone();
        c.quit();
        Ok(Box::new(MyStore {
            config: self.clone(),
            db,
            owner,
            version,
        }))
    }
}

struct MyStore {
    config: Config,
    db: String,
    /// Whether closing drops the database (not on a shard other than rank 0).
    owner: bool,
    version: String,
}

impl Store for MyStore {
    fn many_per_thread(&self) -> bool {
        true
    }
    fn scans(&self) -> Result<(), String> {
        Ok(())
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: format!("mysql://{} database {}", self.config.url.authority, self.db),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        let server = if self.version.contains("MariaDB") {
            "mariadb"
        } else {
            "mysql"
        };
        // MariaDB says `5.5.5-10.11.19-MariaDB…` for old clients' sake.
        let v = self.version.strip_prefix("5.5.5-").unwrap_or(&self.version);
        BTreeMap::from([(server.to_string(), v.to_string())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        let mut c = self.config.connect()?;
        let d = &self.db;
        let put = c.prepare(&format!(
            "INSERT INTO {d}.objects (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)"
        ))?;
        let get = c.prepare(&format!("SELECT v FROM {d}.objects WHERE k = ?"))?;
        let delete = c.prepare(&format!("DELETE FROM {d}.objects WHERE k = ?"))?;
        let scan = c.prepare(&format!(
            "SELECT k, v FROM {d}.objects WHERE k >= ? ORDER BY k LIMIT ?"
        ))?;
        Ok(Box::new(MySession {
            c,
            db: self.db.clone(),
            put,
            get,
            delete,
            scan,
            batches: HashMap::new(),
            in_tx: false,
            reads: 0,
            rows: Default::default(),
        }))
    }
    fn connect_sql(&self) -> Result<Box<dyn engine::driver::SqlSession>, OpError> {
        Ok(Box::new(sql::MySql::open(&self.config, &self.db)?))
    }
    fn cold_unreachable(&self) -> Option<String> {
        Some("mysql: InnoDB's buffer pool empties only when the server restarts, and dyno does not restart a server it did not start".into())
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if !self.owner {
            return Ok(());
        }
        let fail = |e: OpError| DriverError::new(format!("dropping database {}: {e}", self.db));
        let mut c = self.config.connect().map_err(fail)?;
        c.set_timeout(engine::driver::SETUP_TIMEOUT);
        c.query(&format!("DROP DATABASE {}", self.db))
            .map_err(fail)?;
        c.quit();
        Ok(())
    }
}

struct MySession {
    c: Conn,
    db: String,
    put: Stmt,
    get: Stmt,
    delete: Stmt,
    scan: Stmt,
    /// `SELECT … WHERE k IN (?, …)` by its number of keys.
    batches: HashMap<usize, Stmt>,
    in_tx: bool,
    reads: u64,
    /// A batched read's rows.
    rows: crate::gather::Gathered,
}

fn not_found() -> OpError {
    OpError::new(ErrorClass::NotFound, "mysql: no such key")
}

impl MySession {
    /// Reads `keys` (at most [`BATCH`]) into `out` in their order, each value's end in `ends`.
    fn get_batch(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        if !self.batches.contains_key(&keys.len()) {
            let marks = vec!["?"; keys.len()].join(", ");
            let sql = format!("SELECT k, v FROM {}.objects WHERE k IN ({marks})", self.db);
            let stmt = self.c.prepare(&sql)?;
            self.batches.insert(keys.len(), stmt);
        }
        let stmt = &self.batches[&keys.len()];
        let params: Vec<Param<'_>> = keys.iter().map(|&k| Param::U64(k)).collect();
        let rows = &mut self.rows;
        rows.clear();
        self.c.execute(stmt, &params, "SELECT … IN", |row| {
            rows.add(row.u64(0).ok_or_else(not_found)?, row.get(1).unwrap_or(&[]));
            Ok(())
        })?;
        self.rows.place(keys, out, ends, not_found)
    }
}

impl Session for MySession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        self.c.query(match mode {
            TxMode::Read => "START TRANSACTION READ ONLY",
            TxMode::Write => "START TRANSACTION",
        })?;
        self.in_tx = true;
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        let params = [Param::U64(key), Param::Bytes(value)];
        self.c
            .execute(&self.put, &params, "INSERT", |_| Ok(()))
            .map(drop)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        out.clear();
        let mut found = false;
        self.c
            .execute(&self.get, &[Param::U64(key)], "SELECT", |row| {
                found = true;
                out.extend_from_slice(row.get(0).unwrap_or(&[]));
                Ok(())
            })?;
        if found { Ok(()) } else { Err(not_found()) }
    }
    fn scan(
        &mut self,
        start: u64,
        count: usize,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), OpError> {
        self.reads += 1;
        out.clear();
        let params = [Param::U64(start), Param::U64(count as u64)];
        self.c
            .execute(&self.scan, &params, "SELECT … ORDER BY", |row| {
                let k = row.u64(0).ok_or_else(not_found)?;
                out.push((k, row.get(1).unwrap_or(&[]).to_vec()));
                Ok(())
            })?;
        Ok(())
    }
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        self.reads += keys.len() as u64;
        out.clear();
        ends.clear();
        for chunk in keys.chunks(BATCH) {
            self.get_batch(chunk, out, ends)?;
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        match self
            .c
            .execute(&self.delete, &[Param::U64(key)], "DELETE", |_| Ok(()))?
        {
            0 => Err(not_found()),
            _ => Ok(()),
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        if !self.in_tx {
            return Ok(());
        }
        self.in_tx = false;
        self.c.query("COMMIT").map(drop)
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}

impl Drop for MySession {
    fn drop(&mut self) {
        self.c.quit();
    }
}
