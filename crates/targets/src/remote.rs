//! `dyno://HOST:PORT` — the object-store benchmark host (`dyno serve`), over dyno's binary
//! protocol (see `host::store`).
//!
//! Each run works in a namespace of its own (`dyno_<pid>_<n>` on the host), dropped at the end;
//! each client has its own connection and makes one round trip per operation. Durability is what
//! the host says (`INFO`): memory, or LMDB with `dyno serve --store PATH`. `cold` is not
//! reachable: dyno cannot drop a remote host's caches.

use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError, OptionSpec,
    ServerOp, Session, Store, TargetConfig, TxMode,
};
use engine::fiber::Stream;
use host::store::{kind, read_frame};
use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::net::SocketAddr;
use std::time::Duration;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "dyno",
    query_options: true,
    summary: "dyno's own object-store host (dyno serve), over its binary protocol",
    forms: &[
        "dyno://127.0.0.1:7000",
        "dyno://127.0.0.1:7000?token=secret",
    ],
    families: &[Family::Kv, Family::Graph, Family::Namespace],
    options: &[OptionSpec {
        name: "token",
        default: "",
        help: "the host's token, if it was started with --token",
    }],
    clients: engine::driver::ClientModel::ManyPerThread,
};

/// How long a client waits to connect, or for any response.
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
struct Config {
    authority: String,
    token: Option<String>,
    resolved: BTreeMap<String, String>,
    /// What the host says of its durability (`INFO`), asked once.
    durability: std::sync::OnceLock<String>,
}

/// Validates the URL and options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("dyno", options, INFO.options)?;
    let authority = crate::net::authority(rest, true, "dyno://HOST:PORT", "dyno://127.0.0.1:7000")?;
    let token = o.secret("token");
    let resolved = o.resolved_hiding(&["token"]);
    Ok(Box::new(Config {
        authority: authority.to_string(),
        token,
        resolved,
        durability: std::sync::OnceLock::new(),
    }))
}

fn io_err(context: &'static str) -> impl Fn(std::io::Error) -> OpError {
    move |e| {
        let class = if e.kind() == std::io::ErrorKind::Other {
            ErrorClass::Application
        } else if e.kind() == std::io::ErrorKind::InvalidData {
            ErrorClass::Protocol
        } else {
            ErrorClass::of_io(&e)
        };
        OpError::new(class, format!("{context}: {e}"))
    }
}

impl Config {
    fn connect(&self, addr: SocketAddr, namespace: &str) -> Result<Conn, OpError> {
        let s = Stream::open(&addr, TIMEOUT, TIMEOUT).map_err(io_err("connect"))?;
        let mut c = Conn {
            input: BufReader::with_capacity(64 << 10, s),
            frame: Vec::with_capacity(512),
            body: Vec::with_capacity(512),
            step: crate::net::Step::default(),
        };
        if let Some(t) = &self.token {
            c.call(kind::HELLO, &[t.as_bytes()], kind::OK)?;
        }
        c.call(kind::OPEN, &[namespace.as_bytes()], kind::OK)?;
        Ok(c)
    }
}

/// Opens a run's namespace on the host at `addr` (for `dyno://` and for `host:`).
pub fn store_at(
    addr: SocketAddr,
    authority: &str,
    token: Option<String>,
) -> Result<Box<dyn Store>, DriverError> {
    store_in(addr, authority, token, None)
}

/// [`store_at`] in the namespace a run's shards share, or (`None`) one of its own.
fn store_in(
    addr: SocketAddr,
    authority: &str,
    token: Option<String>,
    share: Option<&engine::driver::Share>,
) -> Result<Box<dyn Store>, DriverError> {
    let config = Config {
        authority: authority.to_string(),
        token,
        resolved: BTreeMap::new(),
        durability: std::sync::OnceLock::new(),
    };
    let (namespace, owner) = crate::claim::server_namespace(share);
    // Prove the host is there (and the token right) before the run counts on it.
    config
        .connect(addr, &namespace)
        .map_err(|e| DriverError::new(format!("dyno://{authority}: {}", e.message)))?;
    Ok(Box::new(RemoteStore {
        config,
        addr,
        namespace,
        owner,
    }))
}

/// The column header of a host that did not say its durability: why, in a few words.
fn durability_unknown(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused | TimedOut | HostUnreachable | NetworkUnreachable | AddrNotAvailable => {
            "unknown (host unreachable)".into()
        }
        PermissionDenied => "unknown (refused: wrong token)".into(),
        _ => format!("unknown ({e})"),
    }
}

impl TargetConfig for Config {
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn durability(&self) -> String {
        self.durability
            .get_or_init(|| {
                let Ok(addr) = crate::net::resolve(&self.authority, None) else {
                    return "unknown (host unreachable)".into();
                };
                match host::store::fetch_info(addr, self.token.as_deref()) {
                    Ok(info) => info
                        .get("durability")
                        .cloned()
                        .unwrap_or_else(|| "unknown (the host did not say)".into()),
                    Err(e) => durability_unknown(&e),
                }
            })
            .clone()
    }
    fn topology(&self) -> &'static str {
        crate::net::topology_of(&self.authority)
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        let addr = crate::net::resolve(&self.authority, None)?;
        store_at(addr, &self.authority, self.token.clone())
    }
    fn open_shared(&self, share: &engine::driver::Share) -> Result<Box<dyn Store>, DriverError> {
        let addr = crate::net::resolve(&self.authority, None)?;
        store_in(addr, &self.authority, self.token.clone(), Some(share))
    }
}

struct RemoteStore {
    config: Config,
    addr: SocketAddr,
    namespace: String,
    /// Whether closing drops the namespace (not on a shard other than rank 0).
    owner: bool,
}

impl Store for RemoteStore {
    fn many_per_thread(&self) -> bool {
        true
    }
    fn scans(&self) -> Result<(), String> {
        Ok(())
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: format!(
                "dyno://{} namespace {}",
                self.config.authority, self.namespace
            ),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("protocol".to_string(), "dyno host frames v1".to_string())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        Ok(Box::new(RemoteSession {
            conn: self.config.connect(self.addr, &self.namespace)?,
            reads: 0,
        }))
    }
    fn cold_unreachable(&self) -> Option<String> {
        Some(
            "dyno://: the host keeps objects in process memory; there is no cache below it to drop"
                .into(),
        )
    }
    fn server_stats(&self) -> Option<Result<Vec<ServerOp>, OpError>> {
        Some(
            host::store::fetch_stats(self.addr, self.config.token.as_deref())
                .map(|ops| {
                    ops.into_iter()
                        .map(|s| ServerOp {
                            op: s.op,
                            count: s.count,
                            latency: s.latency,
                        })
                        .collect()
                })
                .map_err(io_err("server statistics")),
        )
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if !self.owner {
            return Ok(());
        }
        let mut c = self
            .config
            .connect(self.addr, &self.namespace)
            .map_err(|e| DriverError::new(format!("dropping {}: {}", self.namespace, e.message)))?;
        c.call(kind::DROP, &[self.namespace.as_bytes()], kind::OK)
            .map_err(|e| DriverError::new(format!("dropping {}: {}", self.namespace, e.message)))
    }
}

struct Conn {
    /// The connection, read through a buffer; a request is written on it whole
    /// (`input.get_mut()`).
    input: BufReader<Stream>,
    /// The request being sent, built whole so it leaves in one write.
    frame: Vec<u8>,
    /// The last response's body.
    body: Vec<u8>,
    step: crate::net::Step,
}

impl Conn {
    fn send(&mut self, k: u8, parts: &[&[u8]]) -> Result<(), OpError> {
        self.frame.clear();
        host::store::write_frame(&mut self.frame, k, parts).expect("writing to a Vec");
        self.write_frame()
    }

    /// Writes the frame, unless the connection is out of step.
    fn write_frame(&mut self) -> Result<(), OpError> {
        self.step.send("dyno", "send")?;
        let sent = (self.input.get_mut())
            .write_all(&self.frame)
            .map_err(io_err("send"));
        self.step.watch(sent)
    }

    /// Sends a request whose body is keys (u64 BE each), built straight into the frame.
    fn send_keys(&mut self, k: u8, keys: &[u64]) -> Result<(), OpError> {
        self.frame.clear();
        self.frame
            .extend_from_slice(&(1 + 8 * keys.len() as u32).to_be_bytes());
        self.frame.push(k);
        self.frame
            .extend(keys.iter().flat_map(|key| key.to_be_bytes()));
        self.write_frame()
    }

    /// Reads a response into `into` and checks it is `want`.
    fn expect(
        &mut self,
        want: u8,
        into: Option<&mut Vec<u8>>,
        missing: &'static str,
    ) -> Result<(), OpError> {
        let r = response(
            &mut self.input,
            into.unwrap_or(&mut self.body),
            want,
            missing,
        );
        self.step.watch(r)
    }

    fn call(&mut self, k: u8, parts: &[&[u8]], want: u8) -> Result<(), OpError> {
        self.send(k, parts)?;
        self.expect(want, None, NO_KEY)
    }
}

const NO_KEY: &str = "the host has no such key";
const NO_FOLDER: &str = "the host has no such folder (or no parent of it)";

/// Reads the response to a request into `into` and checks it is `want`: `NOT_FOUND` becomes a
/// `not_found` error saying `missing`, `ERR` the host's own message, anything else a protocol
/// error.
fn response(
    input: &mut BufReader<Stream>,
    into: &mut Vec<u8>,
    want: u8,
    missing: &'static str,
) -> Result<(), OpError> {
    match read_frame(input, into).map_err(io_err("response"))? {
        Some(k) if k == want => Ok(()),
        Some(kind::NOT_FOUND) => Err(OpError::new(ErrorClass::NotFound, missing)),
        Some(kind::ERR) => Err(OpError::new(
            ErrorClass::Application,
            format!("the host said: {}", String::from_utf8_lossy(into)),
        )),
        Some(k) => Err(OpError::new(
            ErrorClass::Protocol,
            format!("unexpected response 0x{k:02x} (wanted 0x{want:02x})"),
        )),
        None => Err(OpError::new(
            ErrorClass::Reset,
            "the host closed the connection",
        )),
    }
}

struct RemoteSession {
    conn: Conn,
    reads: u64,
}

impl Session for RemoteSession {
    fn begin(&mut self, _: TxMode) -> Result<(), OpError> {
        self.conn.call(kind::BEGIN, &[], kind::OK)
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        self.conn
            .call(kind::PUT, &[&key.to_be_bytes(), value], kind::OK)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        self.conn.send(kind::GET, &[&key.to_be_bytes()])?;
        self.conn.expect(kind::VALUE, Some(out), NO_KEY)
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        self.conn
            .call(kind::DELETE, &[&key.to_be_bytes()], kind::OK)
    }
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        self.reads += keys.len() as u64;
        self.conn.send_keys(kind::MGET, keys)?;
        self.conn.expect(kind::VALUES, None, NO_KEY)?;
        host::store::split_values(&self.conn.body, keys.len(), out, ends)
            .map_err(|e| OpError::new(ErrorClass::Protocol, format!("MGET: {e}")))
    }
    fn scan(
        &mut self,
        start: u64,
        count: usize,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), OpError> {
        self.reads += 1;
        let count = u32::try_from(count).unwrap_or(u32::MAX);
        self.conn
            .send(kind::SCAN, &[&start.to_be_bytes(), &count.to_be_bytes()])?;
        self.conn.expect(kind::ENTRIES, None, NO_KEY)?;
        host::store::split_entries(&self.conn.body, out)
            .map_err(|e| OpError::new(ErrorClass::Protocol, format!("SCAN: {e}")))
    }
    fn commit(&mut self) -> Result<(), OpError> {
        self.conn.call(kind::COMMIT, &[], kind::OK)
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
    fn mkdir(&mut self, path: &str) -> Result<(), OpError> {
        self.folder(kind::MKDIR, path, kind::OK)
    }
    fn stat(&mut self, path: &str) -> Result<(), OpError> {
        self.folder(kind::STAT, path, kind::OK)
    }
    fn list(&mut self, path: &str, out: &mut Vec<String>) -> Result<(), OpError> {
        self.folder(kind::LIST, path, kind::TEXT)?;
        out.clear();
        let text = std::str::from_utf8(&self.conn.body)
            .map_err(|_| OpError::new(ErrorClass::Protocol, "LIST: names are not UTF-8"))?;
        out.extend(text.lines().map(str::to_string));
        Ok(())
    }
    fn rmdir(&mut self, path: &str) -> Result<(), OpError> {
        self.folder(kind::RMDIR, path, kind::OK)
    }
}

impl RemoteSession {
    /// A folder operation: the path is the body.
    fn folder(&mut self, k: u8, path: &str, want: u8) -> Result<(), OpError> {
        self.conn.send(k, &[path.as_bytes()])?;
        self.conn.expect(want, None, NO_FOLDER)
    }
}
