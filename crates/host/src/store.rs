//! The object-store benchmark host (`dyno serve`): objects in memory, or with `--store PATH` in
//! LMDB (fsync at commit), served over dyno's own compact binary protocol, so a client's time can
//! be split into the server's time and the rest (serialization and network).
//!
//! # Transactions
//!
//! Between `BEGIN` and `COMMIT` a connection's writes are held by the host (reads see them) and
//! applied at `COMMIT` at once: under one lock in memory, in one LMDB transaction on disk. A
//! `BEGIN` inside a transaction commits the one before; a connection that closes mid-transaction
//! loses its writes. Writes outside a transaction apply at once. A transaction holds at most
//! [`MAX_TX_BYTES`].
//!
//! # Protocol
//!
//! Every message, both ways, is a frame: a 4-byte big-endian length of what follows, one kind
//! byte, then the body. A client sends one request and reads one response (no pipelining).
//!
//! | request | body | response |
//! |---|---|---|
//! | `HELLO` 0x01 | token (UTF-8, may be empty) | `OK`, or `ERR` and the connection closes |
//! | `OPEN` 0x02 | namespace (must start with `dyno_`) | `OK` |
//! | `BEGIN` 0x03 | — | `OK` |
//! | `PUT` 0x04 | key (u64 BE), value | `OK` |
//! | `GET` 0x05 | key (u64 BE) | `VALUE` (the bytes) or `NOT_FOUND` |
//! | `DELETE` 0x06 | key (u64 BE) | `OK` or `NOT_FOUND` |
//! | `COMMIT` 0x07 | — | `OK` |
//! | `STATS` 0x08 | — | `TEXT`: one line per operation: name, count, and its server-side latency histogram since the host started (HdrHistogram V2, deflate, base64; ns) |
//! | `DROP` 0x09 | namespace | `OK` (its objects are deleted) |
//! | `INFO` 0x0B | — | `TEXT`: `durability: …` and `version: …` lines |
//! | `MKDIR` 0x0C | path | `OK`; `NOT_FOUND` when the parent is missing; `ERR` when it exists |
//! | `STAT` 0x0D | path | `OK` when the folder exists, else `NOT_FOUND` |
//! | `LIST` 0x0E | path | `TEXT`: the entries' names, one per line; or `NOT_FOUND` |
//! | `RMDIR` 0x0F | path | `OK`; `NOT_FOUND`; `ERR` when it is not empty |
//! | `MGET` 0x0A | keys (u64 BE each) | `VALUES`: per key, its length (u32 BE) and bytes; or `NOT_FOUND` and the first missing key; or `ERR` (the connection stays open) when the values would exceed [`MAX_FRAME`] |
//!
//! Folders (`MKDIR` … `RMDIR`, the `namespace` family) are paths as [`valid_path`] allows, in a
//! tree of their own per namespace, kept in host memory (also with `--store`), at most
//! [`MAX_FOLDERS`] per namespace.
//!
//! Responses: `OK` 0x80, `VALUE` 0x81, `NOT_FOUND` 0x82, `ERR` 0x83 (a UTF-8 message), `TEXT` 0x84,
//! `VALUES` 0x85.
//!
//! # Limits
//!
//! A frame longer than [`MAX_FRAME`], more than [`MAX_CONNECTIONS`] connections, an unknown kind,
//! a malformed body, or a missing or wrong token each get an `ERR` saying so, and that connection
//! (only) is closed. A connection holds at most one frame in memory.

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::evloop::{self, EventServer, Protocol, Step};

/// The largest frame accepted: a 64 MiB object plus its key and header.
pub const MAX_FRAME: u32 = (64 << 20) + 64;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 1024;
/// Namespaces a host keeps at once.
pub const MAX_NAMESPACES: usize = 4096;
/// The writes one connection's transaction may hold until it commits.
pub const MAX_TX_BYTES: usize = 256 << 20;
/// The largest `--store` database (a sparse file; only what is written takes space).
const STORE_MAP_SIZE: usize = 1 << 40;
/// The file that marks a directory as a dyno host store.
pub const STORE_MARKER: &str = ".dyno-host-store";

pub mod kind {
    pub const HELLO: u8 = 0x01;
    pub const OPEN: u8 = 0x02;
    pub const BEGIN: u8 = 0x03;
    pub const PUT: u8 = 0x04;
    pub const GET: u8 = 0x05;
    pub const DELETE: u8 = 0x06;
    pub const COMMIT: u8 = 0x07;
    pub const STATS: u8 = 0x08;
    pub const DROP: u8 = 0x09;
    pub const MGET: u8 = 0x0A;
    pub const INFO: u8 = 0x0B;
    pub const MKDIR: u8 = 0x0C;
    pub const STAT: u8 = 0x0D;
    pub const LIST: u8 = 0x0E;
    pub const RMDIR: u8 = 0x0F;
    pub const OK: u8 = 0x80;
    pub const VALUE: u8 = 0x81;
    pub const NOT_FOUND: u8 = 0x82;
    pub const ERR: u8 = 0x83;
    pub const TEXT: u8 = 0x84;
    pub const VALUES: u8 = 0x85;
}

/// Operation names, indexed by request kind (1..=15), for statistics.
const OPS: [&str; 16] = [
    "", "hello", "open", "begin", "put", "get", "delete", "commit", "stats", "drop", "mget",
    "info", "mkdir", "stat", "list", "rmdir",
];

/// Folders one namespace holds at most.
pub const MAX_FOLDERS: usize = 1 << 20;
/// The longest folder path.
pub const MAX_PATH: usize = 2048;

/// Whether `path` is a folder path of the `namespace` family: names joined by `/`, each of ASCII
/// letters, digits, `_`, `-` or `.` (but not `.` or `..`), at most [`MAX_PATH`] bytes in all.
/// The empty path is the root.
pub fn valid_path(path: &str) -> bool {
    path.len() <= MAX_PATH
        && (path.is_empty()
            || path.split('/').all(|n| {
                !n.is_empty()
                    && n != "."
                    && n != ".."
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            }))
}

/// Why a folder operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeError {
    NotFound,
    Exists,
    NotEmpty,
    Invalid,
    Full,
}

impl TreeError {
    pub fn message(&self, path: &str) -> String {
        match self {
            TreeError::NotFound => format!("{path:?}: no such folder (or parent)"),
            TreeError::Exists => format!("{path:?} exists already"),
            TreeError::NotEmpty => format!("{path:?} is not empty"),
            TreeError::Invalid => format!(
                "{path:?} is not a folder path (names of letters, digits, _ - . joined by /; at most {MAX_PATH} bytes; not the root)"
            ),
            TreeError::Full => format!("the namespace holds {MAX_FOLDERS} folders, the limit"),
        }
    }
}

/// A namespace's folders: each folder's path, with its entries' names. The root ("") always is.
struct Tree {
    dirs: HashMap<String, std::collections::BTreeSet<String>>,
}

impl Default for Tree {
    fn default() -> Tree {
        Tree {
            dirs: HashMap::from([(String::new(), Default::default())]),
        }
    }
}

/// A path's parent and last name; `None` for the root or an invalid path.
fn split_path(path: &str) -> Option<(&str, &str)> {
    if path.is_empty() || !valid_path(path) {
        return None;
    }
    Some(path.rsplit_once('/').unwrap_or(("", path)))
}

impl Tree {
    fn mkdir(&mut self, path: &str) -> Result<(), TreeError> {
        let (parent, name) = split_path(path).ok_or(TreeError::Invalid)?;
        if self.dirs.contains_key(path) {
            return Err(TreeError::Exists);
        }
        if self.dirs.len() >= MAX_FOLDERS {
            return Err(TreeError::Full);
        }
        self.dirs
            .get_mut(parent)
            .ok_or(TreeError::NotFound)?
            .insert(name.to_string());
        self.dirs.insert(path.to_string(), Default::default());
        Ok(())
    }

    fn rmdir(&mut self, path: &str) -> Result<(), TreeError> {
        let (parent, name) = split_path(path).ok_or(TreeError::Invalid)?;
        match self.dirs.get(path) {
            None => return Err(TreeError::NotFound),
            Some(entries) if !entries.is_empty() => return Err(TreeError::NotEmpty),
            Some(_) => {}
        }
        self.dirs.remove(path);
        if let Some(p) = self.dirs.get_mut(parent) {
            p.remove(name);
        }
        Ok(())
    }
}

/// Reads one frame: (kind, body). `Ok(None)` at a clean end of stream.
pub fn read_frame(r: &mut impl Read, body: &mut Vec<u8>) -> io::Result<Option<u8>> {
    let mut head = [0u8; 5];
    match r.read_exact(&mut head[..4]) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(head[..4].try_into().expect("4 bytes"));
    if len == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "an empty frame (no kind byte)",
        ));
    }
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes exceeds the limit of {MAX_FRAME}"),
        ));
    }
    r.read_exact(&mut head[4..5])?;
    body.clear();
    r.by_ref().take(u64::from(len - 1)).read_to_end(body)?;
    if body.len() as u32 != len - 1 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the frame ended early",
        ));
    }
    Ok(Some(head[4]))
}

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, kind: u8, parts: &[&[u8]]) -> io::Result<()> {
    let len: usize = 1 + parts.iter().map(|p| p.len()).sum::<usize>();
    w.write_all(&(len as u32).to_be_bytes())?;
    w.write_all(&[kind])?;
    for p in parts {
        w.write_all(p)?;
    }
    Ok(())
}

/// The LMDB database behind `--store PATH`: every namespace's objects in one table, keyed by the
/// namespace's number (4 bytes) and the object's key (8 bytes, big-endian); the namespaces'
/// numbers under the reserved prefix `FF FF FF FF`.
pub struct DiskStore {
    env: heed::Env<heed::WithoutTls>,
    db: heed::Database<heed::types::Bytes, heed::types::Bytes>,
    path: std::path::PathBuf,
    /// Serializes namespace creation (the read-then-write of the counter).
    namespaces: Mutex<()>,
}

fn disk(e: heed::Error) -> io::Error {
    match e {
        heed::Error::Io(e) => e,
        e => io::Error::other(format!("lmdb: {e}")),
    }
}

const META: [u8; 4] = [0xFF; 4];

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
    fn namespace(&self, name: &str) -> io::Result<[u8; 4]> {
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
    fn drop_namespace(&self, name: &str) -> io::Result<()> {
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

enum Inner {
    /// Keys are the benchmark's own integers: a fast hash, no defence against chosen keys needed.
    Memory(RwLock<FxHashMap<u64, Box<[u8]>>>),
    Disk {
        store: Arc<DiskStore>,
        prefix: [u8; 4],
    },
}

/// One namespace's objects: what the host serves, and what `inproc` calls directly.
pub struct Objects {
    inner: Inner,
    tree: Mutex<Tree>,
}

impl Default for Objects {
    fn default() -> Objects {
        Objects {
            inner: Inner::Memory(RwLock::new(FxHashMap::default())),
            tree: Mutex::default(),
        }
    }
}

fn poisoned() -> io::Error {
    io::Error::other("a connection panicked while holding the store")
}

/// A write of a transaction: a value, or a delete.
type Write1 = (u64, Option<Vec<u8>>);

impl Objects {
    /// A namespace of the LMDB store.
    pub fn on_disk(store: Arc<DiskStore>, name: &str) -> io::Result<Objects> {
        let prefix = store.namespace(name)?;
        Ok(Objects {
            inner: Inner::Disk { store, prefix },
            tree: Mutex::default(),
        })
    }

    fn tree(&self) -> std::sync::MutexGuard<'_, Tree> {
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

    fn disk_key(prefix: &[u8; 4], key: u64) -> [u8; 12] {
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
    fn apply<'v>(
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

/// One connection's open transaction: its writes in order, the latest per key, their bytes.
#[derive(Default)]
struct Pending {
    writes: Vec<Write1>,
    latest: HashMap<u64, usize>,
    bytes: usize,
}

impl Pending {
    /// The transaction's own value of `key`: `Some(None)` when it deleted it.
    fn lookup(&self, key: u64) -> Option<Option<&[u8]>> {
        self.latest.get(&key).map(|&i| self.writes[i].1.as_deref())
    }

    fn push(&mut self, key: u64, value: Option<Vec<u8>>) -> Result<(), String> {
        self.bytes += value.as_ref().map_or(0, Vec::len) + 16;
        if self.bytes > MAX_TX_BYTES {
            return Err(format!(
                "the transaction holds over {MAX_TX_BYTES} bytes of writes (the limit per connection); it was rolled back: commit more often"
            ));
        }
        self.latest.insert(key, self.writes.len());
        self.writes.push((key, value));
        Ok(())
    }
}

/// Reads `keys` as a transaction sees them: its own writes first, then the store.
fn read_through(
    objects: &Objects,
    pending: Option<&Pending>,
    keys: &[u64],
    mut each: impl FnMut(&[u8]),
) -> io::Result<Option<u64>> {
    let Some(p) = pending.filter(|p| !p.writes.is_empty()) else {
        return objects.get_each(keys, each);
    };
    for &k in keys {
        match p.lookup(k) {
            Some(Some(v)) => each(v),
            Some(None) => return Ok(Some(k)),
            None => {
                if let Some(missing) = objects.get_each(&[k], &mut each)? {
                    return Ok(Some(missing));
                }
            }
        }
    }
    Ok(None)
}

/// Server-side latency of one operation kind.
struct OpStats {
    count: u64,
    latency: hdrhistogram::Histogram<u64>,
}

/// One event loop's figures: locked by its loop per request (uncontended), and by `STATS`.
type Local = Arc<Mutex<Vec<OpStats>>>;

struct Shared {
    token: Option<String>,
    /// `--store PATH`; objects in memory when `None`.
    disk: Option<Arc<DiskStore>>,
    namespaces: RwLock<HashMap<String, Arc<Objects>>>,
    /// Each event loop's figures.
    stats: Mutex<Vec<Local>>,
}

/// A running benchmark host: one event loop per core it may run on ([`crate::evloop`]).
pub struct StoreServer {
    server: EventServer,
}

impl StoreServer {
    /// Serves `listener`; clients must present `token` when one is given.
    pub fn start(listener: TcpListener, token: Option<String>) -> io::Result<StoreServer> {
        StoreServer::start_with(listener, token, None, MAX_CONNECTIONS)
    }

    /// As [`StoreServer::start`], with a lower connection limit (for tests of the limit).
    pub fn start_with_limit(
        listener: TcpListener,
        token: Option<String>,
        max_connections: usize,
    ) -> io::Result<StoreServer> {
        StoreServer::start_with(listener, token, None, max_connections)
    }

    /// Serves `listener` from `disk` (`--store PATH`), or from memory when `None`.
    pub fn start_with(
        listener: TcpListener,
        token: Option<String>,
        disk: Option<Arc<DiskStore>>,
        max_connections: usize,
    ) -> io::Result<StoreServer> {
        let shared = Arc::new(Shared {
            token,
            disk,
            namespaces: RwLock::new(HashMap::new()),
            stats: Mutex::new(Vec::new()),
        });
        let server = EventServer::start(
            listener,
            shared,
            evloop::loops_wanted(),
            max_connections.min(MAX_CONNECTIONS),
        )?;
        Ok(StoreServer { server })
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Stops the host: no new connections, and the open ones are closed.
    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// Blocks until the server stops (for `dyno serve`).
    pub fn wait(mut self) {
        self.server.wait();
    }
}

fn key_of(body: &[u8]) -> Option<u64> {
    body.get(..8)
        .map(|k| u64::from_be_bytes(k.try_into().expect("8 bytes")))
}

/// One connection's state.
struct Conn {
    authed: bool,
    objects: Option<Arc<Objects>>,
    pending: Option<Pending>,
    /// Scratch for a value and for `MGET`'s keys, kept between requests.
    value: Vec<u8>,
    keys: Vec<u64>,
    /// The request being answered: its kind and when it was read.
    answering: Option<(u8, Instant)>,
}

impl Protocol for Shared {
    type Loop = Local;
    type Conn = Conn;

    fn start_loop(&self) -> Local {
        let stats: Local = Arc::new(Mutex::new(new_stats()));
        if let Ok(mut all) = self.stats.lock() {
            all.push(stats.clone());
        }
        stats
    }

    fn open(&self, _: &mut Local) -> Conn {
        Conn {
            authed: self.token.is_none(),
            objects: None,
            pending: None,
            value: Vec::new(),
            keys: Vec::new(),
            answering: None,
        }
    }

    fn next(&self, c: &mut Conn, input: &[u8], out: &mut Vec<u8>) -> Step {
        let Some(head) = input.get(..4) else {
            return Step::Need(5);
        };
        let len = u32::from_be_bytes(head.try_into().expect("4 bytes"));
        let refuse = |out: &mut Vec<u8>, msg: &str| {
            frame(out, kind::ERR, &[msg.as_bytes()]);
            Step::Close(input.len())
        };
        if len == 0 {
            return refuse(out, "an empty frame (no kind byte)");
        }
        if len > MAX_FRAME {
            return refuse(
                out,
                &format!("a frame of {len} bytes exceeds the limit of {MAX_FRAME}"),
            );
        }
        let total = 4 + len as usize;
        if input.len() < total {
            return Step::Need(total);
        }
        let (k, body) = (input[4], &input[5..total]);
        let t = Instant::now();
        match self.answer(c, k, body, out) {
            Ok(true) => {
                c.answering = Some((k, t));
                Step::Done(total)
            }
            Ok(false) => Step::Close(total),
            Err(e) => {
                out.clear();
                refuse(out, &format!("the host failed: {e}"))
            }
        }
    }

    fn sent(&self, stats: &mut Local, c: &mut Conn) {
        if let (Some((k, t)), Ok(mut l)) = (c.answering.take(), stats.lock())
            && let Some(slot) = l.get_mut(usize::from(k))
        {
            slot.count += 1;
            slot.latency
                .saturating_record(t.elapsed().as_nanos().max(1) as u64);
        }
    }

    fn refuse(&self, stream: &mut TcpStream, limit: usize) {
        let msg = format!("too many connections (the limit is {limit})");
        let _ = write_frame(stream, kind::ERR, &[msg.as_bytes()]);
    }
}

/// Appends a frame to a buffer.
fn frame(out: &mut Vec<u8>, kind: u8, parts: &[&[u8]]) {
    write_frame(out, kind, parts).expect("writing to a Vec does not fail");
}

impl Shared {
    /// Answers one request into `out`; `Ok(false)` when the connection must close after it.
    fn answer(&self, c: &mut Conn, k: u8, body: &[u8], out: &mut Vec<u8>) -> io::Result<bool> {
        let bad = |out: &mut Vec<u8>, msg: &str| {
            frame(out, kind::ERR, &[msg.as_bytes()]);
            Ok(false)
        };
        if !c.authed && k != kind::HELLO {
            return bad(
                out,
                "authentication required: send HELLO with the host's token first",
            );
        }
        match k {
            kind::HELLO => {
                let ok = self.token.as_deref().is_none_or(|t| t.as_bytes() == body);
                if !ok {
                    return bad(out, "wrong token");
                }
                c.authed = true;
                frame(out, kind::OK, &[]);
            }
            kind::OPEN | kind::DROP => {
                let Ok(name) = std::str::from_utf8(body) else {
                    return bad(out, "a namespace is UTF-8");
                };
                if !name.starts_with("dyno_") || name.len() > 200 {
                    return bad(
                        out,
                        "a namespace starts with dyno_ (and is at most 200 bytes)",
                    );
                }
                let mut all = self.namespaces.write().map_err(|_| poisoned())?;
                if k == kind::DROP {
                    all.remove(name);
                    if let Some(d) = &self.disk {
                        d.drop_namespace(name)?;
                    }
                } else {
                    if !all.contains_key(name) && all.len() >= MAX_NAMESPACES {
                        return bad(out, "too many namespaces on this host");
                    }
                    let o = match all.get(name) {
                        Some(o) => o.clone(),
                        None => {
                            let o = Arc::new(match &self.disk {
                                Some(d) => Objects::on_disk(d.clone(), name)?,
                                None => Objects::default(),
                            });
                            all.insert(name.to_string(), o.clone());
                            o
                        }
                    };
                    c.objects = Some(o);
                }
                c.pending = None;
                frame(out, kind::OK, &[]);
            }
            kind::BEGIN | kind::COMMIT => {
                if let (Some(p), Some(map)) = (c.pending.take(), &c.objects) {
                    map.apply(p.writes.iter().map(|(k, v)| (*k, v.as_deref())))?;
                }
                if k == kind::BEGIN {
                    c.pending = Some(Pending::default());
                }
                frame(out, kind::OK, &[]);
            }
            kind::INFO => {
                let durability = self
                    .disk
                    .as_ref()
                    .map_or_else(|| "volatile (host memory)".to_string(), |d| d.describe());
                let text = format!(
                    "durability: {durability}\nversion: dyno {}\n",
                    env!("CARGO_PKG_VERSION")
                );
                frame(out, kind::TEXT, &[text.as_bytes()]);
            }
            kind::PUT | kind::GET | kind::DELETE => {
                let Some(map) = &c.objects else {
                    return bad(out, "no namespace: send OPEN first");
                };
                let Some(key) = key_of(body) else {
                    return bad(out, "a key is 8 bytes");
                };
                let found = |value: &mut Vec<u8>, p: Option<&Pending>| {
                    value.clear();
                    read_through(map, p, &[key], |v| value.extend_from_slice(v))
                        .map(|m| m.is_none())
                };
                match (k, c.pending.as_mut()) {
                    (kind::PUT, None) => {
                        map.put(key, &body[8..])?;
                        frame(out, kind::OK, &[]);
                    }
                    (kind::PUT, Some(p)) => match p.push(key, Some(body[8..].to_vec())) {
                        Ok(()) => frame(out, kind::OK, &[]),
                        Err(msg) => {
                            c.pending = None;
                            frame(out, kind::ERR, &[msg.as_bytes()]);
                        }
                    },
                    (kind::GET, p) => {
                        // Straight into the response: no copy through a scratch buffer.
                        let at = out.len();
                        frame(out, kind::VALUE, &[]);
                        let missing = read_through(map, p.map(|p| &*p), &[key], |v| {
                            out.extend_from_slice(v)
                        })?;
                        if missing.is_some() {
                            out.truncate(at);
                            frame(out, kind::NOT_FOUND, &[]);
                        } else {
                            let len = (out.len() - at - 4) as u32;
                            out[at..at + 4].copy_from_slice(&len.to_be_bytes());
                        }
                    }
                    (_, None) => {
                        let r = if map.delete(key)? {
                            kind::OK
                        } else {
                            kind::NOT_FOUND
                        };
                        frame(out, r, &[]);
                    }
                    (_, Some(p)) => {
                        if !found(&mut c.value, Some(p))? {
                            frame(out, kind::NOT_FOUND, &[]);
                        } else if let Err(msg) = p.push(key, None) {
                            c.pending = None;
                            frame(out, kind::ERR, &[msg.as_bytes()]);
                        } else {
                            frame(out, kind::OK, &[]);
                        }
                    }
                }
            }
            kind::MGET => {
                let Some(map) = &c.objects else {
                    return bad(out, "no namespace: send OPEN first");
                };
                if !body.len().is_multiple_of(8) {
                    return bad(out, "MGET carries whole 8-byte keys");
                }
                c.keys.clear();
                c.keys.extend(
                    body.chunks_exact(8)
                        .map(|k| u64::from_be_bytes(k.try_into().expect("8 bytes"))),
                );
                // One pass: values are copied while the reply fits a frame, then only counted.
                let at = out.len();
                frame(out, kind::VALUES, &[]);
                let mut total = 0u64;
                let missing = read_through(map, c.pending.as_ref(), &c.keys, |v| {
                    total += 4 + v.len() as u64;
                    if total < u64::from(MAX_FRAME) {
                        out.extend_from_slice(&(v.len() as u32).to_be_bytes());
                        out.extend_from_slice(v);
                    }
                })?;
                let len = (out.len() - at - 4) as u32;
                out[at..at + 4].copy_from_slice(&len.to_be_bytes());
                match missing {
                    Some(k) => {
                        out.truncate(at);
                        frame(out, kind::NOT_FOUND, &[&k.to_be_bytes()]);
                    }
                    None if total >= u64::from(MAX_FRAME) => {
                        out.truncate(at);
                        let msg = format!(
                            "the {} values asked for come to {total} bytes, over the frame limit of {MAX_FRAME}; ask for fewer keys at a time",
                            c.keys.len()
                        );
                        frame(out, kind::ERR, &[msg.as_bytes()]);
                    }
                    None => {}
                }
            }
            kind::MKDIR | kind::STAT | kind::LIST | kind::RMDIR => {
                let Some(map) = &c.objects else {
                    return bad(out, "no namespace: send OPEN first");
                };
                let Ok(path) = std::str::from_utf8(body) else {
                    return bad(out, "a folder path is UTF-8");
                };
                let done = match k {
                    kind::MKDIR => map.mkdir(path),
                    kind::STAT => map.stat(path),
                    kind::RMDIR => map.rmdir(path),
                    _ => {
                        let at = out.len();
                        frame(out, kind::TEXT, &[]);
                        let listed = map.list(path, |name| {
                            out.extend_from_slice(name.as_bytes());
                            out.push(b'\n');
                        });
                        if listed.is_ok() {
                            let len = (out.len() - at - 4) as u32;
                            out[at..at + 4].copy_from_slice(&len.to_be_bytes());
                        } else {
                            out.truncate(at);
                        }
                        listed
                    }
                };
                match done {
                    Ok(()) if k == kind::LIST => {}
                    Ok(()) => frame(out, kind::OK, &[]),
                    Err(TreeError::NotFound) => frame(out, kind::NOT_FOUND, &[]),
                    Err(e) => frame(out, kind::ERR, &[e.message(path).as_bytes()]),
                }
            }
            kind::STATS => {
                let text = stats_text(self);
                frame(out, kind::TEXT, &[text.as_bytes()]);
            }
            other => return bad(out, &format!("unknown frame kind 0x{other:02x}")),
        }
        Ok(true)
    }
}

fn new_stats() -> Vec<OpStats> {
    (0..OPS.len())
        .map(|_| OpStats {
            count: 0,
            latency: results::new_histogram(),
        })
        .collect()
}

fn add_stats(into: &mut [OpStats], from: &[OpStats]) {
    for (a, b) in into.iter_mut().zip(from) {
        a.count += b.count;
        let _ = a.latency.add(&b.latency);
    }
}

/// Everything so far: every event loop's figures, exactly.
fn stats_text(shared: &Shared) -> String {
    let mut all = new_stats();
    if let Ok(loops) = shared.stats.lock() {
        for l in loops.iter() {
            if let Ok(l) = l.lock() {
                add_stats(&mut all, &l);
            }
        }
    }
    let mut text = String::new();
    for (i, s) in all.iter().enumerate().skip(1) {
        if s.count == 0 {
            continue;
        }
        text.push_str(&format!(
            "{} {} {}\n",
            OPS[i],
            s.count,
            results::histogram::encode(&s.latency)
        ));
    }
    text
}

/// Cuts a `VALUES` body (per key: u32 BE length, bytes) into values end to end in `out` and
/// their ends in `ends`; checks there are exactly `n` and nothing is left over.
pub fn split_values(
    body: &[u8],
    n: usize,
    out: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Result<(), String> {
    out.clear();
    ends.clear();
    let mut at = 0;
    while at < body.len() {
        let Some(len) = body.get(at..at + 4) else {
            return Err("a value's length is cut short".into());
        };
        let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
        let Some(v) = body.get(at + 4..at + 4 + len) else {
            return Err(format!("a value of {len} bytes is cut short"));
        };
        out.extend_from_slice(v);
        ends.push(out.len());
        at += 4 + len;
    }
    if ends.len() != n {
        return Err(format!("{} values for {n} keys", ends.len()));
    }
    Ok(())
}

/// One operation's server-side figures since the host started.
#[derive(Debug, Clone)]
pub struct OpStat {
    pub op: String,
    pub count: u64,
    pub latency: results::Histogram,
}

/// Parses a `STATS` reply.
pub fn parse_stats(text: &str) -> io::Result<Vec<OpStat>> {
    text.lines()
        .map(|l| {
            let bad = || {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a bad STATS line: {l:?}"),
                )
            };
            let mut f = l.split_whitespace();
            let (Some(op), Some(count), Some(hist)) = (f.next(), f.next(), f.next()) else {
                return Err(bad());
            };
            Ok(OpStat {
                op: op.to_string(),
                count: count.parse().map_err(|_| bad())?,
                latency: results::histogram::decode(hist).map_err(|_| bad())?,
            })
        })
        .collect()
}

/// Asks a host for its statistics (what `dyno stats` prints, and what runs record).
pub fn fetch_stats(addr: SocketAddr, token: Option<&str>) -> io::Result<Vec<OpStat>> {
    parse_stats(&fetch_stats_text(addr, token)?)
}

fn fetch_stats_text(addr: SocketAddr, token: Option<&str>) -> io::Result<String> {
    ask_text(addr, token, kind::STATS)
}

/// Asks a host what it is (`INFO`): `durability` and `version`.
pub fn fetch_info(
    addr: SocketAddr,
    token: Option<&str>,
) -> io::Result<std::collections::BTreeMap<String, String>> {
    Ok(ask_text(addr, token, kind::INFO)?
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// One request answered with `TEXT`, on a connection of its own.
fn ask_text(addr: SocketAddr, token: Option<&str>, k: u8) -> io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut body = Vec::new();
    if let Some(t) = token {
        write_frame(&mut s, kind::HELLO, &[t.as_bytes()])?;
        expect(&mut s, &mut body, kind::OK)?;
    }
    write_frame(&mut s, k, &[])?;
    expect(&mut s, &mut body, kind::TEXT)?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Reads a response and checks its kind; an `ERR` becomes an error with the host's message.
pub fn expect(s: &mut impl Read, body: &mut Vec<u8>, want: u8) -> io::Result<()> {
    match read_frame(s, body)? {
        Some(k) if k == want => Ok(()),
        Some(kind::ERR) => Err(io::Error::other(format!(
            "the host said: {}",
            String::from_utf8_lossy(body)
        ))),
        Some(k) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected response 0x{k:02x} (wanted 0x{want:02x})"),
        )),
        None => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the host closed the connection",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Serves `input` to one connection as the event loop would (answer, drop what was used,
    /// again), and checks what the loop relies on: every call returns, a request uses no more
    /// than it was given, `Need` asks for more than there is and never past the frame limit,
    /// and one answer stays within a frame.
    fn serve(token: Option<&str>, input: &[u8]) {
        let shared = Shared {
            token: token.map(str::to_string),
            disk: None,
            namespaces: RwLock::new(HashMap::new()),
            stats: Mutex::new(Vec::new()),
        };
        let mut lp = shared.start_loop();
        let mut c = shared.open(&mut lp);
        let (mut at, mut out) = (0, Vec::new());
        for _ in 0..=input.len() {
            out.clear();
            let rest = &input[at..];
            match shared.next(&mut c, rest, &mut out) {
                Step::Need(n) => {
                    assert!(n > rest.len(), "Need({n}) with {} bytes there", rest.len());
                    assert!(n <= 4 + MAX_FRAME as usize);
                    break;
                }
                Step::Done(used) => {
                    assert!(
                        used > 0 && used <= rest.len(),
                        "used {used} of {}",
                        rest.len()
                    );
                    shared.sent(&mut lp, &mut c);
                    at += used;
                }
                Step::Close(used) => {
                    assert!(used <= rest.len());
                    break;
                }
            }
            assert!(out.len() <= 4 + MAX_FRAME as usize);
        }
    }

    /// Well-formed frames of any kind with any body, behind a HELLO and an OPEN so that the
    /// commands reach the store; `edits` then change some bytes (lengths included).
    fn frames() -> impl Strategy<Value = Vec<u8>> {
        (
            prop::collection::vec(
                (0u8..=0x12, prop::collection::vec(any::<u8>(), 0..40)),
                0..12,
            ),
            prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        )
            .prop_map(|(frames, edits)| {
                let mut b = Vec::new();
                write_frame(&mut b, kind::HELLO, &[b"s3cret"]).unwrap();
                write_frame(&mut b, kind::OPEN, &[b"dyno_fuzz"]).unwrap();
                for (k, body) in frames {
                    write_frame(&mut b, k, &[&body]).unwrap();
                }
                for (at, v) in edits {
                    let at = at % b.len();
                    b[at] = v;
                }
                b
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn any_bytes_get_an_answer_or_a_close(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            serve(None, &bytes);
            serve(Some("s3cret"), &bytes);
        }

        #[test]
        fn mutated_frames_get_an_answer_or_a_close(bytes in frames()) {
            serve(None, &bytes);
            serve(Some("s3cret"), &bytes);
        }
    }
}
