//! `fs:DIR` — one file per object, in `DIR/dyno_objects/`.
//!
//! The directory must be new, empty, or dyno's own (it holds dyno's marker); anything else is
//! refused untouched. Without `fsync=true` nothing is forced to disk (`no-fsync`); with it, each
//! object file is fsynced as it is written and the directory at commit. `cold` evicts every object
//! file from the page cache and verifies it with `mincore`; directory entries and inodes stay
//! cached (only a system-wide `drop_caches` clears those), and the record says so.

use crate::namespace::{self, Place};
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
    families: &[Family::Kv, Family::Graph],
    options: &[OptionSpec {
        name: "fsync",
        default: "false",
        help: "fsync each object file when written, and the directory at commit",
    }],
};

/// The subdirectory that holds the objects.
const OBJECTS: &str = "dyno_objects";

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
    fn preflight(&self) -> Result<(), DriverError> {
        self.place.check_dir()
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        let (root, temporary) = self.place.claim_dir("fs")?;
        let objects = root.join(OBJECTS);
        if objects.exists() {
            std::fs::remove_dir_all(&objects).map_err(|e| {
                DriverError::new(format!("cannot clear {}: {e}", objects.display()))
            })?;
        }
        std::fs::create_dir(&objects)
            .map_err(|e| DriverError::new(format!("cannot create {}: {e}", objects.display())))?;
        Ok(Box::new(FsStore {
            root,
            objects,
            temporary,
            fsync: self.fsync,
        }))
    }
}

struct FsStore {
    root: PathBuf,
    objects: PathBuf,
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
            fsync: self.fsync,
            reads: 0,
        }))
    }
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        let files = engine::pagecache::files_under(&self.objects)
            .map_err(|e| OpError::io("listing object files", &e))?;
        let r = engine::pagecache::drop_files(&files)
            .map_err(|e| OpError::io("dropping the page cache", &e))?;
        let fs = engine::env::filesystem(&self.objects);
        Ok(match engine::pagecache::describe(&r, &fs, "object files") {
            Ok(what) => CacheDrop::Done(format!(
                "{what}; directory entries and inodes stay cached (only a system-wide drop_caches clears them)"
            )),
            Err(why) => CacheDrop::NotReachable(why),
        })
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if self.temporary {
            namespace::remove_dir(&self.root)
        } else {
            Ok(())
        }
    }
}

struct FsSession {
    dir: PathBuf,
    /// Reused for every object's path: only its 16 hex digits change.
    path: PathBuf,
    fsync: bool,
    reads: u64,
}

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
}

impl Session for FsSession {
    fn begin(&mut self, _: TxMode) -> Result<(), OpError> {
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        let fsync = self.fsync;
        let path = self.path_of(key);
        let mut f = std::fs::File::create(path).map_err(|e| OpError::io("create", &e))?;
        f.write_all(value).map_err(|e| OpError::io("write", &e))?;
        if fsync {
            f.sync_data().map_err(|e| OpError::io("fsync", &e))?;
        }
        Ok(())
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
}
