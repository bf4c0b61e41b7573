//! `lmdb:DIR` — LMDB through heed: the embedded ordered key-value engine among the defaults.
//!
//! The directory is claimed like `fs:` (new, empty, or holding dyno's marker). Each put goes into
//! LMDB at once, inside a write transaction the session owns from begin to commit ([`WriteTxn`]);
//! reads run in a read transaction the session owns. Write transactions are exclusive, so
//! concurrent writers queue. The default is `sync=true` (fsync at commit).

use crate::claim::{self, Place};
use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    CacheDrop, ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError,
    OptionSpec, Session, Store, TargetConfig, TxMode,
};
use heed::byteorder::BigEndian;
use heed::types::{Bytes, U64};
use heed::{Database, Env, EnvFlags, EnvOpenOptions, RoTxn, WithoutTls};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "lmdb",
    query_options: true,
    summary: "LMDB through heed (memory-mapped B+tree)",
    forms: &["lmdb:", "lmdb:/path/to/dir", "lmdb:/path/to/dir?sync=false"],
    families: &[Family::Kv, Family::Graph],
    options: &[OptionSpec {
        name: "sync",
        default: "true",
        help: "fsync at commit (false: MDB_NOSYNC)",
    }],
    clients: engine::driver::ClientModel::ThreadEach(
        "an embedded store: LMDB ties a transaction to its thread",
    ),
};

/// Address space reserved for the map; LMDB grows the file only as data is written.
const MAP_SIZE: usize = 64 << 30;

type Objects = Database<U64<BigEndian>, Bytes>;

#[derive(Debug, Clone)]
struct Config {
    place: Place,
    sync: bool,
    resolved: BTreeMap<String, String>,
}

/// Validates `rest` (what follows `lmdb:`) and the options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("lmdb", options, INFO.options)?;
    Ok(Box::new(Config {
        place: Place::parse(rest),
        sync: o.bool("sync")?,
        resolved: o.resolved(),
    }))
}

fn op_error(e: heed::Error) -> OpError {
    let class = match &e {
        heed::Error::Io(io) => ErrorClass::of_io(io),
        heed::Error::Mdb(heed::MdbError::MapFull) => ErrorClass::Full,
        heed::Error::Mdb(heed::MdbError::Corrupted) => ErrorClass::Corrupt,
        _ => ErrorClass::Application,
    };
    OpError::new(class, format!("lmdb: {e}"))
}

impl Config {
    fn open_env(&self, dir: &std::path::Path) -> Result<(Env<WithoutTls>, Objects), heed::Error> {
        let mut opts = EnvOpenOptions::new().read_txn_without_tls();
        opts.map_size(MAP_SIZE).max_dbs(2);
        if !self.sync {
            // SAFETY: NO_SYNC only skips fsync; it is the durability the user asked for.
            unsafe { opts.flags(EnvFlags::NO_SYNC) };
        }
        // SAFETY: the directory is dyno's own, and this process opens it once at a time.
        let env = unsafe { opts.open(dir)? };
        let mut wtxn = env.write_txn()?;
        let db: Objects = env.create_database(&mut wtxn, Some("dyno_objects"))?;
        wtxn.commit()?;
        Ok((env, db))
    }
}

impl TargetConfig for Config {
    fn durability(&self) -> String {
        if self.sync {
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
        self.place.check_dir()
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        let (dir, temporary) = self.place.claim_dir("lmdb")?;
        let (env, db) = self
            .open_env(&dir)
            .map_err(|e| DriverError::new(format!("{}: {e}", dir.display())))?;
        let mut w = env
            .write_txn()
            .map_err(|e| DriverError::new(format!("{}: {e}", dir.display())))?;
        db.clear(&mut w)
            .and_then(|_| w.commit())
            .map_err(|e| DriverError::new(format!("{}: {e}", dir.display())))?;
        Ok(Box::new(LmdbStore {
            config: self.clone(),
            dir,
            temporary,
            env: Mutex::new(Some((env, db))),
        }))
    }
}

struct LmdbStore {
    config: Config,
    dir: PathBuf,
    temporary: bool,
    env: Mutex<Option<(Env<WithoutTls>, Objects)>>,
}

fn closed() -> OpError {
    OpError::new(ErrorClass::Application, "lmdb: environment is closed")
}

impl Store for LmdbStore {
    fn scans(&self) -> Result<(), String> {
        Ok(())
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: format!("{} (database dyno_objects)", self.dir.display()),
            created_by_dyno: true,
            temporary: self.temporary,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        let v = heed::lmdb_version();
        BTreeMap::from([
            (
                "lmdb".to_string(),
                format!("{}.{}.{}", v.major, v.minor, v.patch),
            ),
            ("heed".to_string(), env!("DYNO_VERSION_HEED").to_string()),
        ])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        let guard = self.env.lock().map_err(|_| closed())?;
        let (env, db) = guard.as_ref().ok_or_else(closed)?;
        Ok(Box::new(LmdbSession {
            env: env.clone(),
            db: *db,
            read: None,
            write: None,
            reads: 0,
        }))
    }
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        let mut slot = self.env.lock().map_err(|_| closed())?;
        let (env, _) = slot.take().ok_or_else(closed)?;
        env.prepare_for_closing().wait();
        let r = engine::pagecache::drop_files(&[self.dir.join("data.mdb")]);
        let reopened = self.config.open_env(&self.dir).map_err(op_error)?;
        *slot = Some(reopened);
        let r = r.map_err(|e| OpError::io("dropping the page cache", &e))?;
        let fs = engine::env::filesystem(&self.dir);
        Ok(engine::pagecache::describe(&r, &fs, "data.mdb")
            .map_done(|what| format!("LMDB environment closed and reopened; {what}")))
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if let Some((env, _)) = self.env.lock().ok().and_then(|mut slot| slot.take()) {
            env.prepare_for_closing().wait();
        }
        if self.temporary {
            claim::remove_dir(&self.dir)
        } else {
            Ok(())
        }
    }
}

/// A write transaction that owns the environment handle it borrows.
///
/// heed's `RwTxn<'e>` borrows an `Env`; a session must keep the transaction across calls, so it
/// keeps a boxed clone of the `Env` beside it. Field order is drop order: the transaction (aborted
/// if still open) goes before the environment handle.
struct WriteTxn {
    txn: heed::RwTxn<'static>,
    _env: Box<Env<WithoutTls>>,
}

impl WriteTxn {
    fn begin(env: &Env<WithoutTls>) -> heed::Result<WriteTxn> {
        let env = Box::new(env.clone());
        let txn = env.write_txn()?;
        // SAFETY: `txn` borrows the `Env` in the box, whose heap address never changes while the
        // box lives; `WriteTxn` drops (or `commit` consumes) `txn` before the box, so the borrow
        // never outlives what it borrows. LMDB requires a write transaction to end on the thread
        // that began it: the engine calls begin, the operations and commit on one client thread.
        let txn = unsafe { std::mem::transmute::<heed::RwTxn<'_>, heed::RwTxn<'static>>(txn) };
        Ok(WriteTxn { txn, _env: env })
    }

    fn commit(self) -> heed::Result<()> {
        let WriteTxn { txn, _env } = self;
        txn.commit()
    }
}

struct LmdbSession {
    env: Env<WithoutTls>,
    db: Objects,
    read: Option<RoTxn<'static, WithoutTls>>,
    write: Option<WriteTxn>,
    reads: u64,
}

fn no_txn(what: &str) -> OpError {
    OpError::new(
        ErrorClass::Application,
        format!("lmdb: {what} outside a transaction"),
    )
}

impl Session for LmdbSession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        self.read = None;
        self.write = None;
        match mode {
            TxMode::Read => self.read = Some(self.env.clone().static_read_txn().map_err(op_error)?),
            TxMode::Write => self.write = Some(WriteTxn::begin(&self.env).map_err(op_error)?),
        }
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        let w = self.write.as_mut().ok_or_else(|| no_txn("put"))?;
        self.db.put(&mut w.txn, &key, value).map_err(op_error)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        let v = match (&self.read, &self.write) {
            (Some(r), _) => self.db.get(r, &key),
            (None, Some(w)) => self.db.get(&w.txn, &key),
            (None, None) => return Err(no_txn("get")),
        }
        .map_err(op_error)?
        .ok_or_else(|| OpError::new(ErrorClass::NotFound, format!("key {key:#x}")))?;
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
        let range = match (&self.read, &self.write) {
            (Some(r), _) => self.db.range(r, &(start..)),
            (None, Some(w)) => self.db.range(&w.txn, &(start..)),
            (None, None) => return Err(no_txn("scan")),
        }
        .map_err(op_error)?;
        for item in range.take(count) {
            let (k, v) = item.map_err(op_error)?;
            out.push((k, v.to_vec()));
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        let w = self.write.as_mut().ok_or_else(|| no_txn("delete"))?;
        if self.db.delete(&mut w.txn, &key).map_err(op_error)? {
            Ok(())
        } else {
            Err(OpError::new(ErrorClass::NotFound, format!("key {key:#x}")))
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        self.read = None;
        match self.write.take() {
            Some(w) => w.commit().map_err(op_error),
            None => Ok(()),
        }
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}
