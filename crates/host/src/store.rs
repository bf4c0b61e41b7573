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
//! | `MGET` 0x0A | keys (u64 BE each) | `VALUES`: per key, its length (u32 BE) and bytes; or `NOT_FOUND` and the first missing key; or `ERR` (the connection stays open) when the values would exceed [`MAX_FRAME`] |
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
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The largest frame accepted: a 64 MiB object plus its key and header.
pub const MAX_FRAME: u32 = (64 << 20) + 64;
/// Connections served at once (a thread each).
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
    pub const OK: u8 = 0x80;
    pub const VALUE: u8 = 0x81;
    pub const NOT_FOUND: u8 = 0x82;
    pub const ERR: u8 = 0x83;
    pub const TEXT: u8 = 0x84;
    pub const VALUES: u8 = 0x85;
}

/// Operation names, indexed by request kind (1..=11), for statistics.
const OPS: [&str; 12] = [
    "", "hello", "open", "begin", "put", "get", "delete", "commit", "stats", "drop", "mget", "info",
];

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
    Memory(RwLock<HashMap<u64, Box<[u8]>>>),
    Disk {
        store: Arc<DiskStore>,
        prefix: [u8; 4],
    },
}

/// One namespace's objects: what the host serves, and what `inproc` calls directly.
pub struct Objects {
    inner: Inner,
}

impl Default for Objects {
    fn default() -> Objects {
        Objects {
            inner: Inner::Memory(RwLock::new(HashMap::new())),
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
        })
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

/// One connection's figures: locked by its own thread per request (uncontended), and by `STATS`.
type Local = Arc<Mutex<Vec<OpStats>>>;

struct Shared {
    token: Option<String>,
    /// `--store PATH`; objects in memory when `None`.
    disk: Option<Arc<DiskStore>>,
    max_connections: usize,
    namespaces: RwLock<HashMap<String, Arc<Objects>>>,
    /// Figures of the connections that have closed.
    stats: Mutex<Vec<OpStats>>,
    /// The open connections' own figures. Lock order: this list, then `stats`.
    live_stats: Mutex<Vec<Local>>,
    live: AtomicUsize,
    stop: AtomicBool,
}

/// A running benchmark host.
pub struct StoreServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
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
        let addr = listener.local_addr()?;
        let stats = new_stats();
        let shared = Arc::new(Shared {
            token,
            disk,
            max_connections: max_connections.min(MAX_CONNECTIONS),
            namespaces: RwLock::new(HashMap::new()),
            stats: Mutex::new(stats),
            live_stats: Mutex::new(Vec::new()),
            live: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let acceptor = std::thread::Builder::new()
            .name("dyno-host-accept".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if s.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(mut stream) = stream else { continue };
                    let _ = stream.set_nodelay(true);
                    if s.live.load(Ordering::SeqCst) >= s.max_connections {
                        let msg =
                            format!("too many connections (the limit is {})", s.max_connections);
                        let _ = write_frame(&mut stream, kind::ERR, &[msg.as_bytes()]);
                        continue;
                    }
                    s.live.fetch_add(1, Ordering::SeqCst);
                    let conn = s.clone();
                    let spawned = std::thread::Builder::new()
                        .name("dyno-host-conn".into())
                        .spawn(move || {
                            let _ = serve(stream, &conn);
                            conn.live.fetch_sub(1, Ordering::SeqCst);
                        });
                    if spawned.is_err() {
                        s.live.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            })?;
        Ok(StoreServer {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stop(&mut self) {
        if self.shared.stop.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }

    /// Blocks until the server stops (for `dyno serve`).
    pub fn wait(mut self) {
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }
}

impl Drop for StoreServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn key_of(body: &[u8]) -> Option<u64> {
    body.get(..8)
        .map(|k| u64::from_be_bytes(k.try_into().expect("8 bytes")))
}

/// Serves one connection until it closes or breaks a rule.
fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut input = BufReader::with_capacity(64 << 10, stream.try_clone()?);
    let mut out = BufWriter::with_capacity(64 << 10, stream);
    let mut body = Vec::new();
    let mut authed = shared.token.is_none();
    let mut objects: Option<Arc<Objects>> = None;
    let mut pending: Option<Pending> = None;
    let mut value = Vec::new();
    let mut keys: Vec<u64> = Vec::new();
    let local: Local = Arc::new(Mutex::new(new_stats()));
    if let Ok(mut live) = shared.live_stats.lock() {
        live.push(local.clone());
    }
    let result = (|| -> io::Result<()> {
        loop {
            let k = match read_frame(&mut input, &mut body) {
                Ok(Some(k)) => k,
                Ok(None) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    write_frame(&mut out, kind::ERR, &[e.to_string().as_bytes()])?;
                    out.flush()?;
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            let t = Instant::now();
            if !authed && k != kind::HELLO {
                write_frame(
                    &mut out,
                    kind::ERR,
                    &[b"authentication required: send HELLO with the host's token first"],
                )?;
                out.flush()?;
                return Ok(());
            }
            let bad = |out: &mut BufWriter<TcpStream>, msg: &str| -> io::Result<()> {
                write_frame(out, kind::ERR, &[msg.as_bytes()])?;
                out.flush()
            };
            match k {
                kind::HELLO => {
                    let ok = shared
                        .token
                        .as_deref()
                        .is_none_or(|t| t.as_bytes() == body.as_slice());
                    if !ok {
                        return bad(&mut out, "wrong token");
                    }
                    authed = true;
                    write_frame(&mut out, kind::OK, &[])?;
                }
                kind::OPEN | kind::DROP => {
                    let Ok(name) = std::str::from_utf8(&body) else {
                        return bad(&mut out, "a namespace is UTF-8");
                    };
                    if !name.starts_with("dyno_") || name.len() > 200 {
                        return bad(
                            &mut out,
                            "a namespace starts with dyno_ (and is at most 200 bytes)",
                        );
                    }
                    let mut all = shared
                        .namespaces
                        .write()
                        .map_err(|_| io::Error::other("poisoned"))?;
                    if k == kind::DROP {
                        all.remove(name);
                        if let Some(d) = &shared.disk {
                            d.drop_namespace(name)?;
                        }
                    } else {
                        if !all.contains_key(name) && all.len() >= MAX_NAMESPACES {
                            return bad(&mut out, "too many namespaces on this host");
                        }
                        let o = match all.get(name) {
                            Some(o) => o.clone(),
                            None => {
                                let o = Arc::new(match &shared.disk {
                                    Some(d) => Objects::on_disk(d.clone(), name)?,
                                    None => Objects::default(),
                                });
                                all.insert(name.to_string(), o.clone());
                                o
                            }
                        };
                        objects = Some(o);
                    }
                    pending = None;
                    write_frame(&mut out, kind::OK, &[])?;
                }
                kind::BEGIN | kind::COMMIT => {
                    if let (Some(p), Some(map)) = (pending.take(), &objects) {
                        map.apply(p.writes.iter().map(|(k, v)| (*k, v.as_deref())))?;
                    }
                    if k == kind::BEGIN {
                        pending = Some(Pending::default());
                    }
                    write_frame(&mut out, kind::OK, &[])?;
                }
                kind::INFO => {
                    let durability = shared
                        .disk
                        .as_ref()
                        .map_or_else(|| "volatile (host memory)".to_string(), |d| d.describe());
                    let text = format!(
                        "durability: {durability}\nversion: dyno {}\n",
                        env!("CARGO_PKG_VERSION")
                    );
                    write_frame(&mut out, kind::TEXT, &[text.as_bytes()])?;
                }
                kind::PUT | kind::GET | kind::DELETE => {
                    let Some(map) = &objects else {
                        return bad(&mut out, "no namespace: send OPEN first");
                    };
                    let Some(key) = key_of(&body) else {
                        return bad(&mut out, "a key is 8 bytes");
                    };
                    let found = |value: &mut Vec<u8>, p: Option<&Pending>| {
                        value.clear();
                        read_through(map, p, &[key], |v| value.extend_from_slice(v))
                            .map(|m| m.is_none())
                    };
                    match (k, pending.as_mut()) {
                        (kind::PUT, None) => {
                            map.put(key, &body[8..])?;
                            write_frame(&mut out, kind::OK, &[])?;
                        }
                        (kind::PUT, Some(p)) => match p.push(key, Some(body[8..].to_vec())) {
                            Ok(()) => write_frame(&mut out, kind::OK, &[])?,
                            Err(msg) => {
                                pending = None;
                                write_frame(&mut out, kind::ERR, &[msg.as_bytes()])?;
                            }
                        },
                        (kind::GET, p) => {
                            if found(&mut value, p.map(|p| &*p))? {
                                write_frame(&mut out, kind::VALUE, &[&value])?;
                            } else {
                                write_frame(&mut out, kind::NOT_FOUND, &[])?;
                            }
                        }
                        (_, None) => {
                            let r = if map.delete(key)? {
                                kind::OK
                            } else {
                                kind::NOT_FOUND
                            };
                            write_frame(&mut out, r, &[])?;
                        }
                        (_, Some(p)) => {
                            if !found(&mut value, Some(p))? {
                                write_frame(&mut out, kind::NOT_FOUND, &[])?;
                            } else if let Err(msg) = p.push(key, None) {
                                pending = None;
                                write_frame(&mut out, kind::ERR, &[msg.as_bytes()])?;
                            } else {
                                write_frame(&mut out, kind::OK, &[])?;
                            }
                        }
                    }
                }
                kind::MGET => {
                    let Some(map) = &objects else {
                        return bad(&mut out, "no namespace: send OPEN first");
                    };
                    if body.len() % 8 != 0 {
                        return bad(&mut out, "MGET carries whole 8-byte keys");
                    }
                    keys.clear();
                    keys.extend(
                        body.chunks_exact(8)
                            .map(|k| u64::from_be_bytes(k.try_into().expect("8 bytes"))),
                    );
                    // One pass: values are copied while the reply fits a frame, then only counted.
                    value.clear();
                    let mut total = 0u64;
                    let missing = read_through(map, pending.as_ref(), &keys, |v| {
                        total += 4 + v.len() as u64;
                        if total < u64::from(MAX_FRAME) {
                            value.extend_from_slice(&(v.len() as u32).to_be_bytes());
                            value.extend_from_slice(v);
                        }
                    })?;
                    match missing {
                        Some(k) => write_frame(&mut out, kind::NOT_FOUND, &[&k.to_be_bytes()])?,
                        None if total >= u64::from(MAX_FRAME) => {
                            let msg = format!(
                                "the {} values asked for come to {total} bytes, over the frame limit of {MAX_FRAME}; ask for fewer keys at a time",
                                keys.len()
                            );
                            write_frame(&mut out, kind::ERR, &[msg.as_bytes()])?;
                        }
                        None => write_frame(&mut out, kind::VALUES, &[&value])?,
                    }
                }
                kind::STATS => {
                    let text = stats_text(shared);
                    write_frame(&mut out, kind::TEXT, &[text.as_bytes()])?;
                }
                other => return bad(&mut out, &format!("unknown frame kind 0x{other:02x}")),
            }
            out.flush()?;
            if let Ok(mut l) = local.lock() {
                let slot = &mut l[k as usize];
                slot.count += 1;
                slot.latency
                    .saturating_record(t.elapsed().as_nanos().max(1) as u64);
            }
        }
    })();
    // Fold this connection's figures into the closed ones', and leave the live list.
    if let Ok(mut live) = shared.live_stats.lock() {
        if let (Ok(mut all), Ok(l)) = (shared.stats.lock(), local.lock()) {
            add_stats(&mut all, &l);
        }
        live.retain(|x| !Arc::ptr_eq(x, &local));
    }
    result
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

/// Everything so far: closed connections' figures plus every open connection's, exactly.
fn stats_text(shared: &Shared) -> String {
    let mut all = new_stats();
    if let Ok(live) = shared.live_stats.lock() {
        if let Ok(closed) = shared.stats.lock() {
            add_stats(&mut all, &closed);
        }
        for l in live.iter() {
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
