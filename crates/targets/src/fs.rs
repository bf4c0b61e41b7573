//! `fs:DIR` — one file per object, in `DIR/dyno_objects/`; the `namespace` family's folders are
//! directories under `DIR/dyno_tree/` (with `fsync=true`, the parent is fsynced after each
//! `mkdir` and `rmdir`).
//!
//! The directory must be new, empty, or dyno's own (it holds dyno's marker); anything else is
//! refused untouched. Without `fsync=true` nothing is forced to disk (`no-fsync`); with it, each
//! object file is fsynced as it is written and the directory at commit. `cold` evicts every object
//! file from the page cache and verifies it with `mincore`; directory entries and inodes stay
//! cached (only a system-wide `drop_caches` clears those), and the record says so.

use crate::claim::{self, Place};
use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    CacheDrop, ConfigError, DriverError, DriverInfo, Family, Namespace, OpError, OptionSpec,
    Session, Store, TargetConfig, TxMode,
};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

pub static INFO: DriverInfo = DriverInfo {
    scheme: "fs",
    query_options: true,
    summary: "one file per object in a directory dyno creates (or finds empty)",
    forms: &["fs:", "fs:/path/to/dir", "fs:/path/to/dir?fsync=true"],
    families: &[Family::Kv, Family::Graph, Family::Namespace],
    options: &[OptionSpec {
        name: "fsync",
        default: "false",
        help: "fsync each object file when written, and the directory at commit",
    }],
    clients: engine::driver::ClientModel::ThreadEach("file system calls block the thread"),
};

/// The subdirectory that holds the objects.
const OBJECTS: &str = "dyno_objects";
/// The subdirectory that holds the namespace family's folders.
const TREE: &str = "dyno_tree";

#[derive(Debug, Clone)]
struct Config {
    place: Place,
    fsync: bool,
    resolved: BTreeMap<String, String>,
}

/// Validates `rest` (what follows `fs:`) and the options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("fs", options, INFO.options)?;
    Ok(Box::new(Config {
        place: Place::parse(rest),
        fsync: o.bool("fsync")?,
        resolved: o.resolved(),
    }))
}

impl TargetConfig for Config {
    fn durability(&self) -> String {
        if self.fsync { "fsync" } else { "no-fsync" }.into()
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn data_path(&self) -> Option<PathBuf> {
        self.place.path()
    }
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn preflight(&self) -> Result<(), DriverError> {
        self.place.check_dir()
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        let (root, temporary) = self.place.claim_dir("fs")?;
        let objects = root.join(OBJECTS);
        let tree = root.join(TREE);
        for dir in [&objects, &tree] {
            if dir.exists() {
                std::fs::remove_dir_all(dir).map_err(|e| {
                    DriverError::new(format!("cannot clear {}: {e}", dir.display()))
                })?;
            }
            std::fs::create_dir(dir)
                .map_err(|e| DriverError::new(format!("cannot create {}: {e}", dir.display())))?;
        }
        Ok(Box::new(FsStore {
            root,
            objects,
            tree,
            temporary,
            fsync: self.fsync,
        }))
    }
}

struct FsStore {
    root: PathBuf,
    objects: PathBuf,
    tree: PathBuf,
    temporary: bool,
    fsync: bool,
}

impl Store for FsStore {
    fn namespace(&self) -> Namespace {
        Namespace {
            location: self.objects.display().to_string(),
            created_by_dyno: true,
            temporary: self.temporary,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(
            "filesystem".to_string(),
            engine::env::filesystem(&self.objects),
        )])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        Ok(Box::new(FsSession {
            dir: self.objects.clone(),
            path: self.objects.join("0000000000000000"),
            tree: self.tree.clone(),
            fsync: self.fsync,
            reads: 0,
            staging: self.objects.join(format!(
                ".staging-{}-{}",
                std::process::id(),
                SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            )),
        }))
    }
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        let files = engine::pagecache::files_under(&self.objects)
            .map_err(|e| OpError::io("listing object files", &e))?;
        let r = engine::pagecache::drop_files(&files)
            .map_err(|e| OpError::io("dropping the page cache", &e))?;
        let fs = engine::env::filesystem(&self.objects);
        Ok(engine::pagecache::describe(&r, &fs, "object files").map_done(|what| {
            format!(
                "{what}; directory entries and inodes stay cached (only a system-wide drop_caches clears them)"
            )
        }))
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if self.temporary {
            claim::remove_dir(&self.root)
        } else {
            Ok(())
        }
    }
}

struct FsSession {
    dir: PathBuf,
    /// Reused for every object's path: only its 16 hex digits change.
    path: PathBuf,
    tree: PathBuf,
    fsync: bool,
    reads: u64,
    /// Where this session writes an object before renaming it into place (its own name: two
    /// sessions writing one key never share it).
    staging: PathBuf,
}

/// Sessions opened by this process, to name each one's staging file.
static SESSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl FsSession {
    fn path_of(&mut self, key: u64) -> &Path {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut name = [0u8; 16];
        for (i, b) in name.iter_mut().enumerate() {
            *b = HEX[((key >> (60 - 4 * i)) & 0xF) as usize];
        }
        let name = std::str::from_utf8(&name).expect("hex digits are ASCII");
        self.path.set_file_name(name);
        &self.path
    }

    /// A namespace path under the tree; an error for one the family does not allow.
    fn folder(&self, path: &str) -> Result<PathBuf, OpError> {
        if !host::store::valid_path(path) {
            return Err(OpError::new(
                engine::driver::ErrorClass::Application,
                format!("{path:?} is not a namespace path"),
            ));
        }
        Ok(if path.is_empty() {
            self.tree.clone()
        } else {
            self.tree.join(path)
        })
    }

    /// With `fsync=true`: makes a change to `dir`'s entries durable.
    fn sync_parent(&self, dir: &Path) -> Result<(), OpError> {
        match dir.parent() {
            Some(parent) if self.fsync => std::fs::File::open(parent)
                .and_then(|d| d.sync_all())
                .map_err(|e| OpError::io("fsync directory", &e)),
            _ => Ok(()),
        }
    }
}

impl Session for FsSession {
    fn begin(&mut self, _: TxMode) -> Result<(), OpError> {
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        // Written aside, then renamed over the object: a reader sees the old object or the new
        // one whole, never a file being written.
        let fsync = self.fsync;
        let mut f = std::fs::File::create(&self.staging).map_err(|e| OpError::io("create", &e))?;
        f.write_all(value).map_err(|e| OpError::io("write", &e))?;
        if fsync {
            f.sync_data().map_err(|e| OpError::io("fsync", &e))?;
        }
        drop(f);
        self.path_of(key); // into self.path
        std::fs::rename(&self.staging, &self.path).map_err(|e| OpError::io("rename", &e))
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        let path = self.path_of(key);
        let mut f = std::fs::File::open(path).map_err(|e| OpError::io("open", &e))?;
        out.clear();
        f.read_to_end(out).map_err(|e| OpError::io("read", &e))?;
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        let path = self.path_of(key);
        std::fs::remove_file(path).map_err(|e| OpError::io("remove", &e))
    }
    fn commit(&mut self) -> Result<(), OpError> {
        if self.fsync {
            std::fs::File::open(&self.dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| OpError::io("fsync directory", &e))?;
        }
        Ok(())
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
    fn mkdir(&mut self, path: &str) -> Result<(), OpError> {
        let dir = self.folder(path)?;
        std::fs::create_dir(&dir).map_err(|e| OpError::io("mkdir", &e))?;
        self.sync_parent(&dir)
    }
    fn stat(&mut self, path: &str) -> Result<(), OpError> {
        let meta = std::fs::metadata(self.folder(path)?).map_err(|e| OpError::io("stat", &e))?;
        if meta.is_dir() {
            Ok(())
        } else {
            Err(OpError::new(
                engine::driver::ErrorClass::Corrupt,
                format!("{path:?} is not a folder"),
            ))
        }
    }
    fn list(&mut self, path: &str, out: &mut Vec<String>) -> Result<(), OpError> {
        out.clear();
        let entries = std::fs::read_dir(self.folder(path)?).map_err(|e| OpError::io("list", &e))?;
        for e in entries {
            let e = e.map_err(|e| OpError::io("list", &e))?;
            out.push(e.file_name().to_string_lossy().into_owned());
        }
        Ok(())
    }
    fn rmdir(&mut self, path: &str) -> Result<(), OpError> {
        let dir = self.folder(path)?;
        std::fs::remove_dir(&dir).map_err(|e| OpError::io("rmdir", &e))?;
        self.sync_parent(&dir)
    }
}
