//! `redb:PATH` — redb, an embedded ordered key-value engine in pure Rust (copy-on-write B-trees).
//!
//! Objects live in the table `dyno_objects` (u64 → bytes); `dyno_meta` holds dyno's marker. An
//! existing file is checked before anything is written: it must start with redb's magic number and
//! carry the marker, read through redb's read-only handle; otherwise it is refused untouched.
//! Write transactions are exclusive (concurrent writers queue); the default durability is
//! `immediate` (fsync at every commit). `cold` closes the database (its cache goes with it), evicts
//! the file from the page cache, verifies with `mincore`, and reopens it.

use crate::claim::{self, Place};
use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    CacheDrop, ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError,
    OptionSpec, Session, Store, TargetConfig, TxMode,
};
use redb::{Durability, ReadableDatabase, ReadableTable, TableDefinition};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub static INFO: DriverInfo = DriverInfo {
    scheme: "redb",
    query_options: true,
    summary: "redb, an embedded ordered key-value engine (pure Rust, copy-on-write B-trees)",
    forms: &[
        "redb:",
        "redb:/path/to/dyno.redb",
        "redb:/path/dyno.redb?durability=none",
    ],
    families: &[Family::Kv, Family::Graph],
    options: &[
        OptionSpec {
            name: "durability",
            default: "immediate",
            help: "immediate (fsync at commit) or none",
        },
        OptionSpec {
            name: "cache_size",
            default: "1GiB",
            help: "redb's page cache, in bytes",
        },
    ],
    clients: engine::driver::ClientModel::ThreadEach(
        "an embedded store: its locks and disk waits block the thread",
    ),
};

const OBJECTS: TableDefinition<u64, &[u8]> = TableDefinition::new("dyno_objects");
const META: TableDefinition<&str, &str> = TableDefinition::new("dyno_meta");
/// The first bytes of every redb file.
const MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

#[derive(Debug, Clone)]
struct Config {
    place: Place,
    durable: bool,
    cache_size: usize,
    resolved: BTreeMap<String, String>,
}

/// Validates `rest` (what follows `redb:`) and the options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("redb", options, INFO.options)?;
    Ok(Box::new(Config {
        place: Place::parse(rest),
        durable: o.choice("durability", &["immediate", "none"])? == "immediate",
        cache_size: o.size("cache_size")? as usize,
        resolved: o.resolved(),
    }))
}

fn err(context: impl std::fmt::Display) -> impl Fn(redb::Error) -> DriverError {
    move |e| DriverError::new(format!("{context}: {e}"))
}

/// Reads (only) whether an existing file is a redb database dyno created.
fn check_path(path: &Path) -> Result<bool, DriverError> {
    let refuse = |what: &str| {
        DriverError::new(format!(
            "refusing to use {}: {what}; dyno never writes to a database it did not create. Point \
             it at a new file, or leave the path out for a temporary one",
            path.display()
        ))
    };
    let mut head = [0u8; MAGIC.len()];
    match std::fs::File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return match path.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(parent) if !parent.is_dir() => Err(DriverError::new(format!(
                    "{}: directory {} does not exist; create it first",
                    path.display(),
                    parent.display()
                ))),
                _ => Ok(false),
            };
        }
        Err(e) => return Err(DriverError::new(format!("{}: {e}", path.display()))),
        Ok(mut f) => {
            if f.read_exact(&mut head).is_err() || head != MAGIC {
                return Err(refuse("it exists and is not a redb database"));
            }
        }
    }
    let db = redb::ReadOnlyDatabase::open(path)
        .map_err(|e| refuse(&format!("it cannot be opened read-only ({e})")))?;
    let ours = (|| -> Result<bool, redb::Error> {
        let tx = db.begin_read()?;
        let t = tx.open_table(META)?;
        Ok(t.get("created_by")?
            .is_some_and(|v| v.value().starts_with("dyno")))
    })()
    .unwrap_or(false);
    if ours {
        Ok(true)
    } else {
        Err(refuse(
            "the database exists and dyno did not create it (no dyno_meta marker)",
        ))
    }
}

impl Config {
    fn open_db(&self, path: &Path) -> Result<redb::Database, redb::Error> {
        Ok(redb::Builder::new()
            .set_cache_size(self.cache_size)
            .create(path)?)
    }
}

impl TargetConfig for Config {
    fn durability(&self) -> String {
        if self.durable {
            "fsync at commit"
        } else {
            "no-fsync"
        }
        .into()
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
        let (path, temp_dir) = match &self.place {
            Place::Temporary => {
                let dir = claim::temp_dir("redb")?;
                (dir.join("dyno.redb"), Some(dir))
            }
            Place::At(p) => {
                check_path(p)?;
                (p.clone(), None)
            }
        };
        let ctx = path.display().to_string();
        let db = self.open_db(&path).map_err(err(&ctx))?;
        (|| -> Result<(), redb::Error> {
            let tx = db.begin_write()?;
            {
                let mut meta = tx.open_table(META)?;
                if meta.get("created_by")?.is_none() {
                    let by = format!("dyno {}", env!("CARGO_PKG_VERSION"));
                    meta.insert("created_by", by.as_str())?;
                }
            }
            tx.delete_table(OBJECTS)?;
            tx.open_table(OBJECTS)?;
            tx.commit()?;
            Ok(())
        })()
        .map_err(err(&ctx))?;
        Ok(Box::new(RedbStore {
            config: self.clone(),
            path,
            temp_dir,
            db: Mutex::new(Some(Arc::new(db))),
        }))
    }
}

struct RedbStore {
    config: Config,
    path: PathBuf,
    temp_dir: Option<PathBuf>,
    /// `None` only while `drop_caches` reopens it.
    db: Mutex<Option<Arc<redb::Database>>>,
}

fn op_error(e: impl Into<redb::Error>) -> OpError {
    let e: redb::Error = e.into();
    let class = match &e {
        redb::Error::Io(io) => ErrorClass::of_io(io),
        redb::Error::Corrupted(_) => ErrorClass::Corrupt,
        redb::Error::DatabaseAlreadyOpen => ErrorClass::Refused,
        _ => ErrorClass::Application,
    };
    OpError::new(class, format!("redb: {e}"))
}

impl Store for RedbStore {
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
        BTreeMap::from([("redb".to_string(), env!("DYNO_VERSION_REDB").to_string())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        let db = self
            .db
            .lock()
            .map_err(|_| OpError::new(ErrorClass::Application, "redb: store lock poisoned"))?
            .clone()
            .ok_or_else(|| OpError::new(ErrorClass::Application, "redb: database is closed"))?;
        Ok(Box::new(RedbSession {
            db,
            durable: self.config.durable,
            tx: Tx::None,
            reads: 0,
        }))
    }
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        let mut slot = self
            .db
            .lock()
            .map_err(|_| OpError::new(ErrorClass::Application, "redb: store lock poisoned"))?;
        let db = slot
            .take()
            .ok_or_else(|| OpError::new(ErrorClass::Application, "redb: database is closed"))?;
        match Arc::try_unwrap(db) {
            Ok(db) => drop(db),
            Err(db) => {
                *slot = Some(db);
                return Err(OpError::new(
                    ErrorClass::Application,
                    "redb: a session is still open; cannot drop the cache",
                ));
            }
        }
        let r = engine::pagecache::drop_files(std::slice::from_ref(&self.path));
        let reopened = self.config.open_db(&self.path).map_err(op_error)?;
        *slot = Some(Arc::new(reopened));
        let r = r.map_err(|e| OpError::io("dropping the page cache", &e))?;
        let fs = engine::env::filesystem(&self.path);
        Ok(engine::pagecache::describe(&r, &fs, "the redb file")
            .map_done(|what| format!("redb closed and reopened (its cache emptied); {what}")))
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if let Ok(mut slot) = self.db.lock() {
            slot.take();
        }
        match &self.temp_dir {
            Some(dir) => claim::remove_dir(dir),
            None => Ok(()),
        }
    }
}

enum Tx {
    None,
    Read(redb::ReadOnlyTable<u64, &'static [u8]>),
    Write(Box<redb::WriteTransaction>),
}

struct RedbSession {
    db: Arc<redb::Database>,
    durable: bool,
    tx: Tx,
    reads: u64,
}

impl Session for RedbSession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        self.tx = match mode {
            TxMode::Read => {
                let tx = self.db.begin_read().map_err(op_error)?;
                Tx::Read(tx.open_table(OBJECTS).map_err(op_error)?)
            }
            TxMode::Write => {
                let mut tx = self.db.begin_write().map_err(op_error)?;
                if !self.durable {
                    tx.set_durability(Durability::None)
                        .map_err(|e| OpError::new(ErrorClass::Application, format!("redb: {e}")))?;
                }
                Tx::Write(Box::new(tx))
            }
        };
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        let Tx::Write(tx) = &self.tx else {
            return Err(OpError::new(
                ErrorClass::Application,
                "redb: put outside a write transaction",
            ));
        };
        let mut t = tx.open_table(OBJECTS).map_err(op_error)?;
        t.insert(key, value).map_err(op_error)?;
        Ok(())
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        let v = match &self.tx {
            Tx::Read(t) => t.get(key).map_err(op_error)?,
            _ => {
                return Err(OpError::new(
                    ErrorClass::Application,
                    "redb: get outside a read transaction",
                ));
            }
        };
        let v = v.ok_or_else(|| OpError::new(ErrorClass::NotFound, format!("key {key:#x}")))?;
        out.clear();
        out.extend_from_slice(v.value());
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
        let Tx::Read(t) = &self.tx else {
            return Err(OpError::new(
                ErrorClass::Application,
                "redb: scan outside a read transaction",
            ));
        };
        for item in t.range(start..).map_err(op_error)?.take(count) {
            let (k, v) = item.map_err(op_error)?;
            out.push((k.value(), v.value().to_vec()));
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        let Tx::Write(tx) = &self.tx else {
            return Err(OpError::new(
                ErrorClass::Application,
                "redb: delete outside a write transaction",
            ));
        };
        let mut t = tx.open_table(OBJECTS).map_err(op_error)?;
        match t.remove(key).map_err(op_error)? {
            Some(_) => Ok(()),
            None => Err(OpError::new(ErrorClass::NotFound, format!("key {key:#x}"))),
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        match std::mem::replace(&mut self.tx, Tx::None) {
            Tx::Write(tx) => tx.commit().map_err(op_error),
            Tx::Read(_) | Tx::None => Ok(()),
        }
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}
