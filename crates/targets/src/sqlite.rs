//! `sqlite:PATH` — SQLite through rusqlite (the library is bundled, so its version is known).
//!
//! Objects live in the table `dyno_objects (id INTEGER PRIMARY KEY, data BLOB)`; the table
//! `dyno_meta` holds dyno's marker. A database file that exists and lacks the marker is refused:
//! it is opened with `immutable=1` (read-only, no locks, no journal) to look, so nothing is
//! written to it — not even a `-wal` or `-shm` file. Each client has its own connection; writes
//! take the lock at `BEGIN IMMEDIATE`, so concurrent writers queue instead of deadlocking.
//! Defaults: WAL journal, `synchronous=NORMAL` (durable at checkpoints, not at every commit).

use crate::claim::{self, Place};
use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    CacheDrop, ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError,
    OptionSpec, Session, Store, TargetConfig, TxMode,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, ffi};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "sqlite",
    query_options: true,
    summary: "SQLite (bundled) through rusqlite; one connection per client",
    forms: &[
        "sqlite:",
        "sqlite:/path/to/dyno.db",
        "sqlite:/path/dyno.db?synchronous=full",
    ],
    families: &[Family::Kv, Family::Graph],
    options: &[
        OptionSpec {
            name: "journal_mode",
            default: "wal",
            help: "wal, delete, truncate, persist, memory or off",
        },
        OptionSpec {
            name: "synchronous",
            default: "normal",
            help: "off, normal, full or extra",
        },
        OptionSpec {
            name: "cache_size",
            default: "-2000",
            help: "pages per connection (negative: KiB), SQLite's PRAGMA cache_size",
        },
        OptionSpec {
            name: "busy_timeout",
            default: "30s",
            help: "how long a client waits for another's write lock",
        },
    ],
    clients: engine::driver::ClientModel::ThreadEach(
        "an embedded store: SQLite's locks and disk waits block the thread",
    ),
};

const JOURNAL_MODES: &[&str] = &["wal", "delete", "truncate", "persist", "memory", "off"];
const SYNC_MODES: &[&str] = &["off", "normal", "full", "extra"];

#[derive(Debug, Clone)]
struct Config {
    place: Place,
    journal_mode: String,
    synchronous: String,
    cache_size: i64,
    busy_timeout: Duration,
    resolved: BTreeMap<String, String>,
}

/// Validates `rest` (what follows `sqlite:`) and the options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("sqlite", options, INFO.options)?;
    let cache_size = o.text("cache_size").parse::<i64>().map_err(|_| {
        ConfigError::option("cache_size", "must be a whole number (pages, or -KiB)")
    })?;
    Ok(Box::new(Config {
        place: Place::parse(rest),
        journal_mode: o.choice("journal_mode", JOURNAL_MODES)?,
        synchronous: o.choice("synchronous", SYNC_MODES)?,
        cache_size,
        busy_timeout: o.duration("busy_timeout")?,
        resolved: o.resolved(),
    }))
}

/// Adds the place to a SQLite error.
fn sql(context: &str) -> impl Fn(rusqlite::Error) -> DriverError + '_ {
    move |e| DriverError::new(format!("{context}: {e}"))
}

/// Opens `path` without any possibility of writing, and says whether it carries dyno's marker.
fn is_dyno_database(path: &Path) -> Result<bool, DriverError> {
    let mut uri = String::from("file:");
    for c in path.display().to_string().chars() {
        match c {
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            '%' => uri.push_str("%25"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    let conn = Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql(&path.display().to_string()))?;
    let marker: Result<Option<String>, _> = conn
        .query_row(
            "SELECT value FROM dyno_meta WHERE key = 'created_by'",
            [],
            |r| r.get(0),
        )
        .optional();
    match marker {
        Ok(Some(v)) => Ok(v.starts_with("dyno")),
        Ok(None) => Ok(false),
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ffi::ErrorCode::NotADatabase => {
            Err(DriverError::new(format!(
                "refusing to use {}: it exists and is not a SQLite database; point dyno at a new \
                 file, or leave the path out for a temporary one",
                path.display()
            )))
        }
        Err(_) => Ok(false),
    }
}

fn check_path(path: &Path) -> Result<bool, DriverError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            if let Some(parent) = parent.filter(|p| !p.is_dir()) {
                return Err(DriverError::new(format!(
                    "{}: directory {} does not exist; create it first",
                    path.display(),
                    parent.display()
                )));
            }
            Ok(false)
        }
        Err(e) => Err(DriverError::new(format!("{}: {e}", path.display()))),
        Ok(m) if !m.is_file() => Err(DriverError::new(format!(
            "refusing to use {}: it is not a regular file",
            path.display()
        ))),
        Ok(_) => {
            if is_dyno_database(path)? {
                Ok(true)
            } else {
                Err(DriverError::new(format!(
                    "refusing to use {}: the database exists and dyno did not create it (no \
                     dyno_meta marker); dyno never writes to a database it did not create. Point \
                     it at a new file, or leave the path out for a temporary one",
                    path.display()
                )))
            }
        }
    }
}

impl Config {
    /// Per-connection settings; `journal_mode` is persistent but set each time to be sure.
    fn setup(&self, conn: &Connection) -> Result<(), rusqlite::Error> {
        conn.busy_timeout(self.busy_timeout)?;
        let mode: String = conn.query_row(
            &format!("PRAGMA journal_mode = {}", self.journal_mode),
            [],
            |r| r.get(0),
        )?;
        if !mode.eq_ignore_ascii_case(&self.journal_mode) {
            return Err(rusqlite::Error::InvalidParameterName(format!(
                "journal_mode {} was refused (SQLite kept {mode})",
                self.journal_mode
            )));
        }
        conn.execute_batch(&format!(
            "PRAGMA synchronous = {}; PRAGMA cache_size = {};",
            self.synchronous, self.cache_size
        ))
    }
}

impl TargetConfig for Config {
    fn durability(&self) -> String {
        format!(
            "{} sync={}",
            self.journal_mode.to_uppercase(),
            self.synchronous.to_uppercase()
        )
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn data_path(&self) -> Option<PathBuf> {
        self.place.path()
    }
    fn preflight(&self) -> Result<(), DriverError> {
        match &self.place {
            Place::Temporary => Ok(()),
            Place::At(p) => check_path(p).map(|_| ()),
        }
    }

    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        let (path, temp_dir, existed) = match &self.place {
            Place::Temporary => {
                let dir = claim::temp_dir("sqlite")?;
                (dir.join("dyno.db"), Some(dir), false)
            }
            Place::At(p) => (p.clone(), None, check_path(p)?),
        };
        let ctx = path.display().to_string();
        let conn = Connection::open(&path).map_err(sql(&ctx))?;
        self.setup(&conn).map_err(sql(&ctx))?;
        let created = format!("dyno {}", env!("CARGO_PKG_VERSION"));
        conn.execute_batch(
            "BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS dyno_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             DROP TABLE IF EXISTS dyno_objects;
             CREATE TABLE dyno_objects (id INTEGER PRIMARY KEY, data BLOB NOT NULL);",
        )
        .map_err(sql(&ctx))?;
        if !existed {
            conn.execute(
                "INSERT OR REPLACE INTO dyno_meta (key, value) VALUES ('created_by', ?1)",
                [&created],
            )
            .map_err(sql(&ctx))?;
        }
        conn.execute_batch("COMMIT").map_err(sql(&ctx))?;
        drop(conn);
        Ok(Box::new(SqliteStore {
            config: self.clone(),
            path,
            temp_dir,
        }))
    }
}

struct SqliteStore {
    config: Config,
    path: PathBuf,
    temp_dir: Option<PathBuf>,
}

impl SqliteStore {
    fn files(&self) -> Vec<PathBuf> {
        let p = self.path.display().to_string();
        vec![
            self.path.clone(),
            PathBuf::from(format!("{p}-wal")),
            PathBuf::from(format!("{p}-shm")),
            PathBuf::from(format!("{p}-journal")),
        ]
    }
}

fn op_error(e: rusqlite::Error) -> OpError {
    let class = match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            ffi::ErrorCode::DatabaseBusy | ffi::ErrorCode::DatabaseLocked => ErrorClass::Timeout,
            ffi::ErrorCode::DiskFull => ErrorClass::Full,
            ffi::ErrorCode::SystemIoFailure | ffi::ErrorCode::CannotOpen => ErrorClass::Io,
            ffi::ErrorCode::DatabaseCorrupt | ffi::ErrorCode::NotADatabase => ErrorClass::Corrupt,
            _ => ErrorClass::Application,
        },
        rusqlite::Error::QueryReturnedNoRows => ErrorClass::NotFound,
        _ => ErrorClass::Application,
    };
    OpError::new(class, format!("sqlite: {e}"))
}

impl Store for SqliteStore {
    fn scans(&self) -> Result<(), String> {
        Ok(())
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: format!("{} (tables dyno_meta, dyno_objects)", self.path.display()),
            created_by_dyno: true,
            temporary: self.temp_dir.is_some(),
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("sqlite".to_string(), rusqlite::version().to_string())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(op_error)?;
        self.config.setup(&conn).map_err(op_error)?;
        Ok(Box::new(SqliteSession { conn, reads: 0 }))
    }
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        // Every connection is closed (SQLite's page cache lives in the connection); what is left
        // is the kernel's cache of the files.
        let r = engine::pagecache::drop_files(&self.files())
            .map_err(|e| OpError::io("dropping the page cache", &e))?;
        let fs = engine::env::filesystem(&self.path);
        Ok(engine::pagecache::describe(&r, &fs, "SQLite files")
            .map_done(|what| format!("SQLite page cache gone with its connections; {what}")))
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        match &self.temp_dir {
            Some(dir) => claim::remove_dir(dir),
            None => Ok(()),
        }
    }
}

struct SqliteSession {
    conn: Connection,
    reads: u64,
}

const PUT: &str = "INSERT OR REPLACE INTO dyno_objects (id, data) VALUES (?1, ?2)";
const GET: &str = "SELECT data FROM dyno_objects WHERE id = ?1";
/// Keys are u64 stored as i64: the order agrees below 2^63, where every YCSB key is.
const SCAN: &str = "SELECT id, data FROM dyno_objects WHERE id >= ?1 ORDER BY id LIMIT ?2";
const DELETE: &str = "DELETE FROM dyno_objects WHERE id = ?1";

impl Session for SqliteSession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        self.conn
            .execute_batch(match mode {
                TxMode::Read => "BEGIN DEFERRED",
                TxMode::Write => "BEGIN IMMEDIATE",
            })
            .map_err(op_error)
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        let mut st = self.conn.prepare_cached(PUT).map_err(op_error)?;
        st.execute(rusqlite::params![key as i64, value])
            .map(|_| ())
            .map_err(op_error)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        let mut st = self.conn.prepare_cached(GET).map_err(op_error)?;
        let mut rows = st.query([key as i64]).map_err(op_error)?;
        let row = rows
            .next()
            .map_err(op_error)?
            .ok_or_else(|| OpError::new(ErrorClass::NotFound, format!("key {key:#x}")))?;
        let blob = row.get_ref(0).map_err(op_error)?.as_blob().map_err(|e| {
            OpError::new(
                ErrorClass::Protocol,
                format!("sqlite: data is not a blob: {e}"),
            )
        })?;
        out.clear();
        out.extend_from_slice(blob);
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
        let mut st = self.conn.prepare_cached(SCAN).map_err(op_error)?;
        let mut rows = st
            .query(rusqlite::params![start as i64, count as i64])
            .map_err(op_error)?;
        while let Some(row) = rows.next().map_err(op_error)? {
            let id: i64 = row.get(0).map_err(op_error)?;
            let data: Vec<u8> = row.get(1).map_err(op_error)?;
            out.push((id as u64, data));
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        let mut st = self.conn.prepare_cached(DELETE).map_err(op_error)?;
        match st.execute([key as i64]).map_err(op_error)? {
            0 => Err(OpError::new(ErrorClass::NotFound, format!("key {key:#x}"))),
            _ => Ok(()),
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        self.conn.execute_batch("COMMIT").map_err(op_error)
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}
