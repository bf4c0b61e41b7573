//! Where a namespace's objects live: a hash map in memory, or the LMDB database behind
//! `--store PATH` (fsync at commit).

use super::*;

/// The LMDB database behind `--store PATH`: every namespace's objects in one table, keyed by the
/// namespace's number (4 bytes) and the object's key (8 bytes, big-endian); the namespaces'
/// numbers under the reserved prefix `FF FF FF FF`.
pub struct DiskStore {
    pub(super) env: heed::Env<heed::WithoutTls>,
    pub(super) db: heed::Database<heed::types::Bytes, heed::types::Bytes>,
    pub(super) path: std::path::PathBuf,
    /// Serializes namespace creation (the read-then-write of the counter).
    pub(super) namespaces: Mutex<()>,
}

pub(super) fn disk(e: heed::Error) -> io::Error {
    match e {
        heed::Error::Io(e) => e,
        e => io::Error::other(format!("lmdb: {e}")),
    }
}

pub(super) const META: [u8; 4] = [0xFF; 4];

impl DiskStore {
    /// Opens (or creates) a host store in `path`: an empty or missing directory, or one a host
    /// created before (it holds [`STORE_MARKER`]). Anything else is refused untouched.
    pub fn open(path: &std::path::Path) -> io::Result<DiskStore> {
        let marker = path.join(STORE_MARKER);
        if path.exists() {
            let empty = std::fs::read_dir(path)?.next().is_none();
            if !empty && !marker.is_file() {
                return Err(io::Error::other(format!(
                    "{} is not empty and is not a dyno host store (no {STORE_MARKER}); dyno writes only in a store it created",
                    path.display()
                )));
            }
        } else {
            std::fs::create_dir_all(path)?;
        }
        std::fs::write(&marker, b"a dyno serve --store database (LMDB)\n")?;
        let mut opts = heed::EnvOpenOptions::new().read_txn_without_tls();
        opts.map_size(STORE_MAP_SIZE).max_dbs(1);
        // SAFETY: the directory is a dyno host store, opened once by this host.
        let env = unsafe { opts.open(path) }.map_err(disk)?;
        let mut w = env.write_txn().map_err(disk)?;
        let db = env
            .create_database(&mut w, Some("dyno_host"))
            .map_err(disk)?;
        w.commit().map_err(disk)?;
        Ok(DiskStore {
            env,
            db,
            path: path.to_path_buf(),
            namespaces: Mutex::new(()),
        })
    }

    /// The namespace's number, given it the first time.
    pub(super) fn namespace(&self, name: &str) -> io::Result<[u8; 4]> {
        let _one = self.namespaces.lock().map_err(|_| poisoned())?;
        let key = [&META[..], name.as_bytes()].concat();
        let mut w = self.env.write_txn().map_err(disk)?;
        if let Some(id) = self.db.get(&w, &key).map_err(disk)? {
            return id
                .try_into()
                .map_err(|_| io::Error::other("a bad namespace entry"));
        }
        let next = match self.db.get(&w, &META).map_err(disk)? {
            Some(n) => u32::from_be_bytes(
                n.try_into()
                    .map_err(|_| io::Error::other("a bad counter"))?,
            ),
            None => 0,
        };
        if next == u32::from_be_bytes(META) {
            return Err(io::Error::other(
                "the store has numbered every namespace it can",
            ));
        }
        let id = next.to_be_bytes();
        self.db
            .put(&mut w, &META, &(next + 1).to_be_bytes())
            .map_err(disk)?;
        self.db.put(&mut w, &key, &id).map_err(disk)?;
        w.commit().map_err(disk)?;
        Ok(id)
    }

    /// Deletes a namespace's objects and its number.
    pub(super) fn drop_namespace(&self, name: &str) -> io::Result<()> {
        let _one = self.namespaces.lock().map_err(|_| poisoned())?;
        let key = [&META[..], name.as_bytes()].concat();
        let mut w = self.env.write_txn().map_err(disk)?;
        if let Some(id) = self.db.get(&w, &key).map_err(disk)? {
            let id: [u8; 4] = id
                .try_into()
                .map_err(|_| io::Error::other("a bad namespace entry"))?;
            let (from, to) = ([&id[..], &[0; 8]].concat(), [&id[..], &[0xFF; 8]].concat());
            let range = (
                std::ops::Bound::Included(&from[..]),
                std::ops::Bound::Included(&to[..]),
            );
            self.db.delete_range(&mut w, &range).map_err(disk)?;
            self.db.delete(&mut w, &key).map_err(disk)?;
        }
        w.commit().map_err(disk)
    }

    /// What the host tells clients of its durability.
    pub fn describe(&self) -> String {
        format!("LMDB at {}, fsync at commit", self.path.display())
    }
}

pub(super) enum Inner {
    /// Keys are the benchmark's own integers: a fast hash, no defence against chosen keys needed.
    Memory(RwLock<FxHashMap<u64, Box<[u8]>>>),
    Disk {
        store: Arc<DiskStore>,
        prefix: [u8; 4],
    },
}

/// One namespace's objects: what the host serves, and what `inproc` calls directly.
pub struct Objects {
    pub(super) inner: Inner,
    pub(super) tree: Mutex<Tree>,
}

impl Default for Objects {
    fn default() -> Objects {
        Objects {
            inner: Inner::Memory(RwLock::new(FxHashMap::default())),
            tree: Mutex::default(),
        }
    }
}

pub(super) fn poisoned() -> io::Error {
    io::Error::other("a connection panicked while holding the store")
}

/// A write of a transaction: a value, or a delete.
pub(super) type Write1 = (u64, Option<Vec<u8>>);

impl Objects {
    /// A namespace of the LMDB store.
    pub fn on_disk(store: Arc<DiskStore>, name: &str) -> io::Result<Objects> {
        let prefix = store.namespace(name)?;
        Ok(Objects {
            inner: Inner::Disk { store, prefix },
            tree: Mutex::default(),
        })
    }

    pub(super) fn tree(&self) -> std::sync::MutexGuard<'_, Tree> {
        // A panic cannot leave a tree half-changed: each change is one insert or remove.
        self.tree.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates folder `path`: its parent must exist and it must not.
    pub fn mkdir(&self, path: &str) -> Result<(), TreeError> {
        self.tree().mkdir(path)
    }

    /// Whether folder `path` exists.
    pub fn stat(&self, path: &str) -> Result<(), TreeError> {
        if !valid_path(path) {
            return Err(TreeError::Invalid);
        }
        match self.tree().dirs.contains_key(path) {
            true => Ok(()),
            false => Err(TreeError::NotFound),
        }
    }

    /// Calls `each` with the name of every entry of folder `path`, in order.
    pub fn list(&self, path: &str, mut each: impl FnMut(&str)) -> Result<(), TreeError> {
        let tree = self.tree();
        let entries = tree.dirs.get(path).ok_or(TreeError::NotFound)?;
        entries.iter().for_each(|n| each(n));
        Ok(())
    }

    /// Removes the empty folder `path`.
    pub fn rmdir(&self, path: &str) -> Result<(), TreeError> {
        self.tree().rmdir(path)
    }

    pub(super) fn disk_key(prefix: &[u8; 4], key: u64) -> [u8; 12] {
        let mut k = [0u8; 12];
        k[..4].copy_from_slice(prefix);
        k[4..].copy_from_slice(&key.to_be_bytes());
        k
    }

    pub fn put(&self, key: u64, value: &[u8]) -> io::Result<()> {
        self.apply([(key, Some(value))]).map(drop)
    }

    /// Deletes `key`; `false` when there was none.
    pub fn delete(&self, key: u64) -> io::Result<bool> {
        self.apply([(key, None)]).map(|deleted| deleted == 1)
    }

    /// Applies writes (a value, or `None` to delete) at once: under one lock in memory, in one
    /// LMDB transaction on disk. Returns how many deletes found their key.
    pub(super) fn apply<'v>(
        &self,
        writes: impl IntoIterator<Item = (u64, Option<&'v [u8]>)>,
    ) -> io::Result<usize> {
        let mut deleted = 0;
        match &self.inner {
            Inner::Memory(map) => {
                let mut m = map.write().map_err(|_| poisoned())?;
                for (key, value) in writes {
                    match value {
                        Some(value) => match m.get_mut(&key) {
                            Some(v) if v.len() == value.len() => v.copy_from_slice(value),
                            _ => {
                                m.insert(key, value.into());
                            }
                        },
                        None => deleted += usize::from(m.remove(&key).is_some()),
                    }
                }
            }
            Inner::Disk { store, prefix } => {
                let mut w = store.env.write_txn().map_err(disk)?;
                for (key, value) in writes {
                    let k = Self::disk_key(prefix, key);
                    match value {
                        Some(v) => store.db.put(&mut w, &k, v).map_err(disk)?,
                        None => deleted += usize::from(store.db.delete(&mut w, &k).map_err(disk)?),
                    }
                }
                w.commit().map_err(disk)?;
            }
        }
        Ok(deleted)
    }

    /// Copies the object into `out`; `false` when there is none.
    pub fn get(&self, key: u64, out: &mut Vec<u8>) -> io::Result<bool> {
        Ok(self
            .get_each(&[key], |v| {
                out.clear();
                out.extend_from_slice(v);
            })?
            .is_none())
    }

    /// At most `count` objects from the first key at or above `start`, in key order:
    /// `each(key, value)`. In memory the objects are a hash map: a scan walks every key (and
    /// sorts only the ones it returns); on disk it is an LMDB cursor range.
    pub fn scan(
        &self,
        start: u64,
        count: usize,
        mut each: impl FnMut(u64, &[u8]),
    ) -> io::Result<()> {
        match &self.inner {
            Inner::Memory(map) => {
                let m = map.read().map_err(|_| poisoned())?;
                let mut keys: Vec<u64> = m.keys().copied().filter(|&k| k >= start).collect();
                if keys.len() > count {
                    keys.select_nth_unstable(count);
                    keys.truncate(count);
                }
                keys.sort_unstable();
                for k in keys {
                    if let Some(v) = m.get(&k) {
                        each(k, v);
                    }
                }
            }
            Inner::Disk { store, prefix } => {
                let r = store.env.read_txn().map_err(disk)?;
                let (from, to) = (
                    Self::disk_key(prefix, start),
                    Self::disk_key(prefix, u64::MAX),
                );
                let range = (
                    std::ops::Bound::Included(&from[..]),
                    std::ops::Bound::Included(&to[..]),
                );
                for item in store.db.range(&r, &range).map_err(disk)?.take(count) {
                    let (k, v) = item.map_err(disk)?;
                    let key = u64::from_be_bytes(k[4..12].try_into().map_err(|_| {
                        io::Error::new(io::ErrorKind::InvalidData, "a stored key of the wrong size")
                    })?);
                    each(key, v);
                }
            }
        }
        Ok(())
    }

    /// Reads every key under one lock (or one read transaction): `each(value)` per key in
    /// order. Returns the first missing key, if any (and stops there).
    pub fn get_each(&self, keys: &[u64], mut each: impl FnMut(&[u8])) -> io::Result<Option<u64>> {
        match &self.inner {
            Inner::Memory(map) => {
                let m = map.read().map_err(|_| poisoned())?;
                for k in keys {
                    match m.get(k) {
                        Some(v) => each(v),
                        None => return Ok(Some(*k)),
                    }
                }
            }
            Inner::Disk { store, prefix } => {
                let r = store.env.read_txn().map_err(disk)?;
                for k in keys {
                    match store
                        .db
                        .get(&r, &Self::disk_key(prefix, *k))
                        .map_err(disk)?
                    {
                        Some(v) => each(v),
                        None => return Ok(Some(*k)),
                    }
                }
            }
        }
        Ok(None)
    }
}
