//! `redis://HOST:PORT` — Redis or Valkey, over RESP (the protocol written by hand: a few
//! commands, no client library needed).
//!
//! dyno works only under a key prefix of its own (`dyno_<pid>_<n>:`), and deletes exactly those
//! keys at the end (`SCAN MATCH prefix*` then `UNLINK`). A write transaction is `MULTI` … `EXEC`,
//! so `add` and `update` commit each client's objects at once, as zodbshootout does. Durability is
//! read from the server (`CONFIG GET appendonly appendfsync save`) and named in the column header.
//! Redis keeps every key in memory, so `cold` is not reachable.

use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError, OptionSpec,
    Session, Store, TargetConfig, TxMode,
};
use engine::fiber::Stream;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "redis",
    query_options: true,
    summary: "Redis or Valkey over RESP; dyno's keys under a prefix of its own",
    forms: &[
        "redis://127.0.0.1:6379",
        "redis://127.0.0.1:6379?password=secret",
    ],
    families: &[Family::Kv, Family::Graph],
    options: &[OptionSpec {
        name: "password",
        default: "",
        help: "AUTH password, if the server requires one",
    }],
    clients: engine::driver::ClientModel::ManyPerThread,
};

/// `redis+sentinel://S1,S2,…/MASTER`: the primary found through Sentinel, and followed.
pub static SENTINEL_INFO: DriverInfo = DriverInfo {
    scheme: "redis+sentinel",
    query_options: true,
    summary: "Redis behind Sentinel: the primary asked of the sentinels, and asked again after a failover (each reconnect counted and timed)",
    forms: &["redis+sentinel://127.0.0.1:26379,127.0.0.1:26380,127.0.0.1:26381/mymaster"],
    families: &[Family::Kv, Family::Graph],
    options: &[OptionSpec {
        name: "password",
        default: "",
        help: "AUTH password of the Redis servers, if they require one",
    }],
    clients: engine::driver::ClientModel::ManyPerThread,
};

/// Sentinel: where to ask, and for which primary.
#[derive(Debug, Clone)]
struct Sentinel {
    sentinels: Vec<String>,
    master: String,
}

/// How long a client waits to connect, or for any reply.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A connection's read buffer: a reply line and a small value in one `recv`; a larger value
/// is read through it in pieces (or straight into the caller's buffer). Small, as there is one
/// per client and `-c` may be in the hundreds.
const READ_BUFFER: usize = 16 << 10;
/// A bulk reply larger than this is a protocol error (Redis's own limit is 512 MiB).
const MAX_BULK: usize = 512 << 20;

#[derive(Debug, Clone)]
struct Config {
    authority: String,
    /// Behind Sentinel: the primary is asked of the sentinels.
    sentinel: Option<Sentinel>,
    password: Option<String>,
    resolved: BTreeMap<String, String>,
    /// What the server says about its durability, asked once.
    durability: std::sync::OnceLock<String>,
}

/// Validates the URL and options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("redis", options, INFO.options)?;
    let authority =
        crate::net::authority(rest, false, "redis://HOST[:PORT]", "redis://127.0.0.1:6379")?;
    let password = o.secret("password");
    let resolved = o.resolved_hiding(&["password"]);
    Ok(Box::new(Config {
        authority: authority.to_string(),
        sentinel: None,
        password,
        resolved,
        durability: std::sync::OnceLock::new(),
    }))
}

/// `redis+sentinel://H:P,H:P/MASTER`: validates the URL and options; touches nothing.
pub fn configure_sentinel(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("redis+sentinel", options, SENTINEL_INFO.options)?;
    let form = |why: &str| {
        ConfigError::url(why.to_string()).hint(
            "write redis+sentinel://HOST:PORT[,HOST:PORT…]/MASTER, e.g. \
             redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster",
        )
    };
    let (hosts, master) = (rest.strip_prefix("//"))
        .and_then(|r| r.split_once('/'))
        .ok_or_else(|| form("no sentinels and master name"))?;
    let sentinels: Vec<String> = (hosts.split(','))
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect();
    if sentinels.is_empty() || master.is_empty() || master.contains('/') {
        return Err(form("it names no sentinel, or no master"));
    }
    if let Some(bad) = sentinels.iter().find(|h| !h.contains(':')) {
        return Err(form(&format!("sentinel {bad:?} has no port")));
    }
    Ok(Box::new(Config {
        authority: sentinels[0].clone(),
        sentinel: Some(Sentinel {
            sentinels,
            master: master.to_string(),
        }),
        password: o.secret("password"),
        resolved: o.resolved_hiding(&["password"]),
        durability: std::sync::OnceLock::new(),
    }))
}

/// A reply.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Status,
    Error(String),
    Int(i64),
    /// A bulk string, read into the caller's buffer; `false` for nil.
    Bulk(bool),
    /// An array of `n` elements (their replies follow), or nil (`-1`).
    Array(i64),
}

struct Conn {
    /// The connection, read through a buffer; a command is written on it whole
    /// (`input.get_mut()`).
    input: BufReader<Stream>,
    frame: Vec<u8>,
    line: Vec<u8>,
}

fn io_err(context: &'static str) -> impl Fn(std::io::Error) -> OpError {
    move |e| OpError::io(context, &e)
}

fn protocol(msg: &'static str) -> OpError {
    OpError::new(ErrorClass::Protocol, msg)
}

/// Reads one RESP reply from `input`: a line of at most 64 KiB, and for a bulk string its bytes
/// into `bulk`. Memory grows with the bytes that arrive, never with the length a reply claims
/// (at most [`MAX_BULK`]), so a hostile length costs nothing until its bytes come.
fn read_reply(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    bulk: &mut Vec<u8>,
) -> Result<Reply, OpError> {
    line.clear();
    let n = input
        .take(64 << 10)
        .read_until(b'\n', line)
        .map_err(io_err("receive"))?;
    if n == 0 {
        return Err(OpError::new(
            ErrorClass::Reset,
            "the server closed the connection",
        ));
    }
    if n < 3 || !line.ends_with(b"\r\n") {
        return Err(protocol("a reply line not ended by CRLF"));
    }
    let body = &line[1..n - 2];
    let int = || -> Result<i64, OpError> {
        std::str::from_utf8(body)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| protocol("a reply length that is not a number"))
    };
    match line[0] {
        b'+' => Ok(Reply::Status),
        b'-' => Ok(Reply::Error(String::from_utf8_lossy(body).into_owned())),
        b':' => Ok(Reply::Int(int()?)),
        b'*' => Ok(Reply::Array(int()?)),
        b'$' => {
            let len = int()?;
            if len < 0 {
                return Ok(Reply::Bulk(false));
            }
            let len = len as usize;
            if len > MAX_BULK {
                return Err(protocol("a bulk reply larger than 512 MiB"));
            }
            bulk.clear();
            let want = len as u64 + 2;
            let got = input
                .take(want)
                .read_to_end(bulk)
                .map_err(io_err("receive"))?;
            if got as u64 != want {
                return Err(OpError::new(
                    ErrorClass::Reset,
                    "the server closed the connection inside a bulk reply",
                ));
            }
            if &bulk[len..] != b"\r\n" {
                return Err(protocol("a bulk reply not ended by CRLF"));
            }
            bulk.truncate(len);
            Ok(Reply::Bulk(true))
        }
        _ => Err(protocol("not a RESP reply")),
    }
}

impl Conn {
    fn open(addr: SocketAddr, password: Option<&str>) -> Result<Conn, OpError> {
        let mut s = Stream::connect(&addr, TIMEOUT).map_err(io_err("connect"))?;
        s.set_nodelay(true).map_err(io_err("connect"))?;
        s.set_read_timeout(Some(TIMEOUT));
        let mut c = Conn {
            input: BufReader::with_capacity(READ_BUFFER, s),
            frame: Vec::with_capacity(512),
            line: Vec::with_capacity(64),
        };
        if let Some(p) = password {
            c.command(&[b"AUTH", p.as_bytes()])?;
            c.expect_ok(&mut Vec::new())?;
        }
        Ok(c)
    }

    /// Sends one command as a RESP array of bulk strings, in one write.
    fn command(&mut self, args: &[&[u8]]) -> Result<(), OpError> {
        self.frame.clear();
        write!(self.frame, "*{}\r\n", args.len()).expect("writing to a Vec");
        for a in args {
            write!(self.frame, "${}\r\n", a.len()).expect("writing to a Vec");
            self.frame.extend_from_slice(a);
            self.frame.extend_from_slice(b"\r\n");
        }
        (self.input.get_mut())
            .write_all(&self.frame)
            .map_err(io_err("send"))
    }

    /// Reads one reply; a bulk string's bytes go into `bulk`.
    fn reply(&mut self, bulk: &mut Vec<u8>) -> Result<Reply, OpError> {
        read_reply(&mut self.input, &mut self.line, bulk)
    }

    fn expect_ok(&mut self, scratch: &mut Vec<u8>) -> Result<(), OpError> {
        match self.reply(scratch)? {
            Reply::Status => Ok(()),
            Reply::Error(e) => Err(OpError::new(ErrorClass::Application, format!("redis: {e}"))),
            _ => Err(protocol("an unexpected reply (wanted a status)")),
        }
    }
}

impl Config {
    /// The server: the one named, or the primary the sentinels name now.
    fn addr(&self) -> Result<SocketAddr, DriverError> {
        let Some(s) = &self.sentinel else {
            return crate::net::resolve(&self.authority, Some(6379));
        };
        let mut why = Vec::new();
        for at in &s.sentinels {
            match ask_primary(at, &s.master) {
                Ok(addr) => return Ok(addr),
                Err(e) => why.push(format!("{at}: {e}")),
            }
        }
        Err(DriverError::new(format!(
            "no sentinel named the primary of {}: {}",
            s.master,
            why.join("; ")
        )))
    }
}

/// `SENTINEL get-master-addr-by-name MASTER` asked of the sentinel at `at`.
fn ask_primary(at: &str, master: &str) -> Result<SocketAddr, String> {
    let addr = crate::net::resolve(at, None).map_err(|e| e.to_string())?;
    let mut c = Conn::open(addr, None).map_err(|e| e.message.to_string())?;
    (c.command(&[b"SENTINEL", b"get-master-addr-by-name", master.as_bytes()]))
        .map_err(|e| e.message.to_string())?;
    let mut buf = Vec::new();
    match c.reply(&mut buf) {
        Ok(Reply::Array(2)) => {}
        Ok(Reply::Array(_)) => return Err(format!("it does not monitor {master:?}")),
        Ok(Reply::Error(e)) => return Err(e),
        _ => return Err("an unexpected reply".into()),
    }
    let mut part = || match c.reply(&mut buf) {
        Ok(Reply::Bulk(true)) => Ok(String::from_utf8_lossy(&buf).into_owned()),
        _ => Err("an unexpected reply".to_string()),
    };
    let (ip, port) = (part()?, part()?);
    format!("{ip}:{port}")
        .parse()
        .map_err(|_| format!("{ip}:{port} is not an address"))
}

/// Reads `CONFIG GET` pairs into a map (a server that refuses CONFIG gets an empty one).
fn config_get(c: &mut Conn, names: &[&str]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut args: Vec<&[u8]> = vec![b"CONFIG", b"GET"];
    args.extend(names.iter().map(|n| n.as_bytes()));
    if c.command(&args).is_err() {
        return out;
    }
    let mut buf = Vec::new();
    let Ok(Reply::Array(n)) = c.reply(&mut buf) else {
        return out;
    };
    let mut key = String::new();
    for i in 0..n.max(0) {
        if !matches!(c.reply(&mut buf), Ok(Reply::Bulk(true))) {
            return out;
        }
        let v = String::from_utf8_lossy(&buf).into_owned();
        if i % 2 == 0 {
            key = v;
        } else {
            out.insert(key.clone(), v);
        }
    }
    out
}

impl Config {
    /// Read from the server when possible: the column header says what the server does.
    fn ask_durability(&self) -> String {
        let Ok(addr) = self.addr() else {
            return "unknown".into();
        };
        let Ok(mut c) = Conn::open(addr, self.password.as_deref()) else {
            return "unknown".into();
        };
        let cfg = config_get(&mut c, &["appendonly", "appendfsync", "save"]);
        let aof = match (
            cfg.get("appendonly").map(String::as_str),
            cfg.get("appendfsync"),
        ) {
            (Some("yes"), Some(f)) => format!("AOF fsync={f}"),
            (Some(_), _) => "no AOF".to_string(),
            (None, _) => return "unknown (CONFIG refused)".into(),
        };
        let rdb = match cfg.get("save").map(String::as_str) {
            Some("") | None => "no RDB".to_string(),
            Some(s) => format!("RDB save {s}"),
        };
        format!("{aof}, {rdb}")
    }
}

impl TargetConfig for Config {
    fn durability(&self) -> String {
        self.durability
            .get_or_init(|| self.ask_durability())
            .clone()
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn topology(&self) -> &'static str {
        crate::net::topology_of(&self.authority)
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        self.open_in(None)
    }
    fn open_shared(&self, share: &engine::driver::Share) -> Result<Box<dyn Store>, DriverError> {
        self.open_in(Some(share))
    }
}

impl Config {
    /// Opens the run's key prefix: its own, or the one its shards share.
    fn open_in(
        &self,
        share: Option<&engine::driver::Share>,
    ) -> Result<Box<dyn Store>, DriverError> {
        let addr = self.addr()?;
        let mut c = Conn::open(addr, self.password.as_deref())
            .map_err(|e| DriverError::new(format!("redis://{}: {}", self.authority, e.message)))?;
        let mut version = String::from("unknown");
        if c.command(&[b"INFO", b"server"]).is_ok() {
            let mut buf = Vec::new();
            if matches!(c.reply(&mut buf), Ok(Reply::Bulk(true))) {
                let text = String::from_utf8_lossy(&buf);
                if let Some(v) = text.lines().find_map(|l| l.strip_prefix("redis_version:")) {
                    version = v.trim().to_string();
                }
            }
        }
        let (name, owner) = crate::claim::server_namespace(share);
        Ok(Box::new(RedisStore {
            config: self.clone(),
            addr,
            prefix: format!("{name}:"),
            owner,
            version,
            reconnects: Arc::new(crate::net::Reconnects::default()),
            indexed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }))
    }
}

struct RedisStore {
    config: Config,
    addr: SocketAddr,
    prefix: String,
    /// Whether closing deletes the keys (not on a shard other than rank 0).
    owner: bool,
    version: String,
    /// Behind Sentinel: the sessions' reconnections after a failover, and how long each took.
    reconnects: Arc<crate::net::Reconnects>,
    /// Set by a run that scans: every write also names its key in a sorted set (`PREFIX#index`,
    /// all scores 0), so `ZRANGEBYLEX` reads keys in order — YCSB's redis binding keeps such an
    /// index too. Off otherwise: no other run pays for it.
    indexed: Arc<std::sync::atomic::AtomicBool>,
}

impl Store for RedisStore {
    fn many_per_thread(&self) -> bool {
        true
    }
    fn scans(&self) -> Result<(), String> {
        if self.indexed.load(Ordering::Relaxed) {
            Ok(())
        } else {
            Err(
                "redis keeps no key order unless its index was started before the first write"
                    .into(),
            )
        }
    }
    fn prepare_scans(&self) -> Result<(), String> {
        self.indexed.store(true, Ordering::Relaxed);
        Ok(())
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: format!("redis://{} keys {}*", self.config.authority, self.prefix),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("redis".to_string(), self.version.clone())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        // Behind Sentinel each new session asks for the primary of the moment, and follows a
        // failover under way.
        let conn = match &self.config.sentinel {
            None => Conn::open(self.addr, self.config.password.as_deref())?,
            Some(_) => match reach(&self.config) {
                Ok(c) => c,
                Err(_) => follow(&self.config, &self.reconnects)?,
            },
        };
        let session = RedisSession {
            conn,
            key: self.prefix.as_bytes().to_vec(),
            prefix_len: self.prefix.len(),
            scratch: Vec::new(),
            in_multi: false,
            queued: 0,
            reads: 0,
            index: (self.indexed.load(Ordering::Relaxed))
                .then(|| format!("{}#index", self.prefix).into_bytes()),
        };
        Ok(match &self.config.sentinel {
            None => Box::new(session),
            Some(_) => Box::new(Following {
                inner: session,
                config: self.config.clone(),
                broken: false,
                reconnects: self.reconnects.clone(),
            }),
        })
    }
    fn server_stats(&self) -> Option<Result<Vec<engine::driver::ServerOp>, OpError>> {
        self.config.sentinel.as_ref()?;
        Some(Ok(vec![self.reconnects.server_op()]))
    }
    fn cold_unreachable(&self) -> Option<String> {
        Some(
            "redis: the server keeps every key in memory; there is no cache below it to drop"
                .into(),
        )
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if !self.owner {
            return Ok(());
        }
        let fail =
            |e: OpError| DriverError::new(format!("removing {}*: {}", self.prefix, e.message));
        // Behind Sentinel, the keys are on the primary of the moment.
        let mut c = match &self.config.sentinel {
            None => Conn::open(self.addr, self.config.password.as_deref()),
            Some(_) => reach(&self.config).or_else(|_| follow(&self.config, &self.reconnects)),
        }
        .map_err(fail)?;
        let pattern = format!("{}*", self.prefix);
        let mut cursor = b"0".to_vec();
        let mut buf = Vec::new();
        // Bounded: a SCAN pass over a keyspace ends, and dyno made a finite number of keys.
        for _ in 0..1_000_000 {
            c.command(&[
                b"SCAN",
                &cursor,
                b"MATCH",
                pattern.as_bytes(),
                b"COUNT",
                b"1000",
            ])
            .map_err(fail)?;
            let (Reply::Array(2), Reply::Bulk(true)) = (
                c.reply(&mut buf).map_err(fail)?,
                c.reply(&mut buf).map_err(fail)?,
            ) else {
                return Err(DriverError::new("SCAN gave an unexpected reply"));
            };
            cursor = buf.clone();
            let Reply::Array(n) = c.reply(&mut buf).map_err(fail)? else {
                return Err(DriverError::new("SCAN gave an unexpected reply"));
            };
            let mut keys: Vec<Vec<u8>> = Vec::new();
            for _ in 0..n.max(0) {
                if let Reply::Bulk(true) = c.reply(&mut buf).map_err(fail)? {
                    keys.push(buf.clone());
                }
            }
            if !keys.is_empty() {
                let mut args: Vec<&[u8]> = vec![b"UNLINK"];
                args.extend(keys.iter().map(|k| k.as_slice()));
                c.command(&args).map_err(fail)?;
                c.reply(&mut buf).map_err(fail)?;
            }
            if cursor == b"0" {
                return Ok(());
            }
        }
        Err(DriverError::new("SCAN did not finish"))
    }
}

struct RedisSession {
    conn: Conn,
    /// The key being sent: the prefix, then 16 hex digits.
    key: Vec<u8>,
    prefix_len: usize,
    scratch: Vec<u8>,
    in_multi: bool,
    /// Commands queued in the current MULTI.
    queued: u64,
    reads: u64,
    /// The store's sorted-set index, when a scanning run started it.
    index: Option<Vec<u8>>,
}

impl RedisSession {
    fn set_key(&mut self, key: u64) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.key.truncate(self.prefix_len);
        for i in 0..16 {
            self.key.push(HEX[((key >> (60 - 4 * i)) & 0xF) as usize]);
        }
    }

    fn expect_queued_or(&mut self, ok: fn(&Reply) -> bool) -> Result<(), OpError> {
        match self.conn.reply(&mut self.scratch)? {
            Reply::Status if self.in_multi => {
                self.queued += 1;
                Ok(())
            }
            r if !self.in_multi && ok(&r) => Ok(()),
            Reply::Error(e) => Err(OpError::new(ErrorClass::Application, format!("redis: {e}"))),
            _ => Err(protocol("an unexpected reply")),
        }
    }
}

impl Session for RedisSession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        if mode == TxMode::Write {
            self.conn.command(&[b"MULTI"])?;
            self.conn.expect_ok(&mut self.scratch)?;
            self.in_multi = true;
            self.queued = 0;
        }
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        self.set_key(key);
        self.conn.command(&[b"SET", &self.key, value])?;
        self.expect_queued_or(|r| matches!(r, Reply::Status))?;
        if let Some(index) = &self.index {
            self.conn.command(&[b"ZADD", index, b"0", &self.key])?;
            self.expect_queued_or(|r| matches!(r, Reply::Int(_)))?;
        }
        Ok(())
    }
    fn scan(
        &mut self,
        start: u64,
        count: usize,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), OpError> {
        out.clear();
        // The names are the prefix and 16 hex digits: their byte order is the keys' order.
        self.set_key(start);
        // `[name`: from this name on, inclusive (built in the reply buffer, free until sent).
        self.scratch.clear();
        self.scratch.push(b'[');
        self.scratch.extend_from_slice(&self.key);
        let Some(index) = &self.index else {
            return Err(OpError::new(
                ErrorClass::Application,
                "redis: no index to scan (the run did not start one before writing)",
            ));
        };
        self.reads += 1;
        let from = &self.scratch;
        let limit = count.to_string();
        self.conn.command(&[
            b"ZRANGEBYLEX",
            index,
            from,
            b"+",
            b"LIMIT",
            b"0",
            limit.as_bytes(),
        ])?;
        let n = match self.conn.reply(&mut self.scratch)? {
            Reply::Array(n) => n as usize,
            Reply::Error(e) => {
                return Err(OpError::new(ErrorClass::Application, format!("redis: {e}")));
            }
            _ => return Err(protocol("an unexpected reply to ZRANGEBYLEX")),
        };
        let mut keys = Vec::with_capacity(n);
        for _ in 0..n {
            match self.conn.reply(&mut self.scratch)? {
                Reply::Bulk(true) => {
                    let hex = self.scratch.get(self.prefix_len..).unwrap_or_default();
                    let key = std::str::from_utf8(hex)
                        .ok()
                        .and_then(|h| u64::from_str_radix(h, 16).ok())
                        .ok_or_else(|| protocol("an index entry that is not one of dyno's keys"))?;
                    keys.push(key);
                }
                _ => {
                    return Err(protocol(
                        "an unexpected element in the reply to ZRANGEBYLEX",
                    ));
                }
            }
        }
        if keys.is_empty() {
            return Ok(());
        }
        let (mut values, mut ends) = (Vec::new(), Vec::new());
        // Indexed and present: a key deleted since is missing here, and fails the scan.
        self.get_many(&keys, &mut values, &mut ends)?;
        self.reads -= keys.len() as u64;
        let mut at = 0;
        for (k, end) in keys.into_iter().zip(ends) {
            out.push((k, values[at..end].to_vec()));
            at = end;
        }
        Ok(())
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        self.set_key(key);
        self.conn.command(&[b"GET", &self.key])?;
        match self.conn.reply(out)? {
            Reply::Bulk(true) => Ok(()),
            Reply::Bulk(false) => Err(OpError::new(ErrorClass::NotFound, "redis: no such key")),
            Reply::Error(e) => Err(OpError::new(ErrorClass::Application, format!("redis: {e}"))),
            _ => Err(protocol("an unexpected reply to GET")),
        }
    }
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        if self.in_multi {
            return Err(OpError::new(
                ErrorClass::Application,
                "redis: a batched read inside MULTI would only be queued",
            ));
        }
        self.reads += keys.len() as u64;
        let mut names = Vec::with_capacity(keys.len() * self.key.len());
        for &k in keys {
            self.set_key(k);
            names.extend_from_slice(&self.key);
        }
        let args: Vec<&[u8]> = std::iter::once(&b"MGET"[..])
            .chain(names.chunks(self.key.len()))
            .collect();
        self.conn.command(&args)?;
        match self.conn.reply(&mut self.scratch)? {
            Reply::Array(n) if n as usize == keys.len() => {}
            Reply::Error(e) => {
                return Err(OpError::new(ErrorClass::Application, format!("redis: {e}")));
            }
            _ => return Err(protocol("an unexpected reply to MGET")),
        }
        out.clear();
        ends.clear();
        let mut missing = false;
        // Every element is read, missing or not, so the connection stays in step.
        for _ in 0..keys.len() {
            match self.conn.reply(&mut self.scratch)? {
                Reply::Bulk(true) => {
                    out.extend_from_slice(&self.scratch);
                    ends.push(out.len());
                }
                Reply::Bulk(false) => missing = true,
                _ => return Err(protocol("an unexpected element in the reply to MGET")),
            }
        }
        if missing {
            return Err(OpError::new(ErrorClass::NotFound, "redis: no such key"));
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        self.set_key(key);
        if let Some(index) = &self.index {
            // Out of the index first: a scan never names a key that is gone.
            self.conn.command(&[b"ZREM", index, &self.key])?;
            self.expect_queued_or(|r| matches!(r, Reply::Int(_)))?;
        }
        self.conn.command(&[b"DEL", &self.key])?;
        match self.conn.reply(&mut self.scratch)? {
            Reply::Int(1) => Ok(()),
            Reply::Int(0) => Err(OpError::new(ErrorClass::NotFound, "redis: no such key")),
            Reply::Status if self.in_multi => {
                self.queued += 1;
                Ok(())
            }
            Reply::Error(e) => Err(OpError::new(ErrorClass::Application, format!("redis: {e}"))),
            _ => Err(protocol("an unexpected reply to DEL")),
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        if !self.in_multi {
            return Ok(());
        }
        self.in_multi = false;
        self.conn.command(&[b"EXEC"])?;
        match self.conn.reply(&mut self.scratch)? {
            Reply::Array(n) if n as u64 == self.queued => {
                let mut failed = None;
                for _ in 0..n {
                    if let Reply::Error(e) = self.conn.reply(&mut self.scratch)? {
                        failed.get_or_insert(e);
                    }
                }
                match failed {
                    Some(e) => Err(OpError::new(
                        ErrorClass::Application,
                        format!("redis: EXEC: {e}"),
                    )),
                    None => Ok(()),
                }
            }
            Reply::Array(_) => Err(protocol("EXEC answered a different number of replies")),
            Reply::Error(e) => Err(OpError::new(
                ErrorClass::Application,
                format!("redis: EXEC: {e}"),
            )),
            _ => Err(protocol("an unexpected reply to EXEC")),
        }
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}

/// A session behind Sentinel: an operation that fails on the connection (or a write refused
/// by a replica, `READONLY`) marks it broken; the next operation first asks the sentinels for
/// the primary and connects there, for at most [`crate::net::FOLLOW_FOR`]. The failed operation's error is
/// its outcome: a write in flight when the primary went may or may not have been applied.
struct Following {
    inner: RedisSession,
    config: Config,
    broken: bool,
    reconnects: Arc<crate::net::Reconnects>,
}

/// One attempt: the primary the sentinels name now, connected.
fn reach(config: &Config) -> Result<Conn, OpError> {
    (config.addr())
        .map_err(|e| OpError::new(ErrorClass::Refused, e.to_string()))
        .and_then(|a| Conn::open(a, config.password.as_deref()))
}

/// Asks the sentinels again and again until the primary they name accepts: a reconnection,
/// counted and timed in `reconnects` ([`crate::net::Reconnects::follow`]).
fn follow(config: &Config, reconnects: &crate::net::Reconnects) -> Result<Conn, OpError> {
    reconnects.follow(|| reach(config))
}

impl Following {
    /// Connects to the primary of the moment if the last operation broke the connection.
    fn ensure(&mut self) -> Result<(), OpError> {
        if self.broken {
            self.inner.conn = follow(&self.config, &self.reconnects)?;
            self.inner.in_multi = false;
            self.broken = false;
        }
        Ok(())
    }

    /// Marks the session broken when `r` failed on the connection or hit a replica.
    fn watch<T>(&mut self, r: Result<T, OpError>) -> Result<T, OpError> {
        if let Err(e) = &r {
            self.broken |= e.class.is_connection() || e.message.contains("READONLY");
        }
        r
    }
}

impl Session for Following {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        self.ensure()?;
        let r = self.inner.begin(mode);
        self.watch(r)
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        self.ensure()?;
        let r = self.inner.put(key, value);
        self.watch(r)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.ensure()?;
        let r = self.inner.get(key, out);
        self.watch(r)
    }
    fn scan(
        &mut self,
        start: u64,
        count: usize,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), OpError> {
        self.ensure()?;
        let r = self.inner.scan(start, count, out);
        self.watch(r)
    }
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        self.ensure()?;
        let r = self.inner.get_many(keys, out, ends);
        self.watch(r)
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        self.ensure()?;
        let r = self.inner.delete(key);
        self.watch(r)
    }
    fn commit(&mut self) -> Result<(), OpError> {
        self.ensure()?;
        let r = self.inner.commit();
        self.watch(r)
    }
    fn storage_reads(&self) -> u64 {
        self.inner.reads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reads replies from `bytes` until an error or the end: never a panic, and `bulk` never
    /// larger than what arrived.
    fn read_all(bytes: &[u8]) -> Vec<Result<Reply, OpError>> {
        let mut input = std::io::Cursor::new(bytes);
        let (mut line, mut bulk) = (Vec::new(), Vec::new());
        let mut out = Vec::new();
        // Each reply consumes at least 3 bytes, so this many reads always reach the end.
        for _ in 0..=bytes.len() / 3 + 1 {
            let r = read_reply(&mut input, &mut line, &mut bulk);
            assert!(
                bulk.len() <= bytes.len(),
                "bulk {} of {}",
                bulk.len(),
                bytes.len()
            );
            let stop = r.is_err();
            out.push(r);
            if stop {
                break;
            }
        }
        out
    }

    #[test]
    fn replies_as_redis_sends_them() {
        let r = read_all(b"+OK\r\n$5\r\nhello\r\n$-1\r\n:42\r\n*2\r\n-ERR no\r\n");
        assert!(matches!(r[0], Ok(Reply::Status)));
        assert!(matches!(r[1], Ok(Reply::Bulk(true))));
        assert!(matches!(r[2], Ok(Reply::Bulk(false))));
        assert!(matches!(r[3], Ok(Reply::Int(42))));
        assert!(matches!(r[4], Ok(Reply::Array(2))));
        assert!(matches!(&r[5], Ok(Reply::Error(e)) if e == "ERR no"));
        // A claimed 500 MiB bulk with 3 bytes behind it: an error, and no 500 MiB buffer.
        let r = read_all(b"$524288000\r\nabc");
        assert_eq!(r[0].as_ref().unwrap_err().class, ErrorClass::Reset);
    }

    const VALID: &[u8] =
        b"+OK\r\n$5\r\nhello\r\n$-1\r\n:42\r\n*2\r\n$3\r\nabc\r\n$0\r\n\r\n-ERR x\r\n";

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_bytes_are_replies_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            read_all(&bytes);
        }

        #[test]
        fn mutated_replies_are_replies_or_an_error(
            edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
            cut in any::<usize>(),
        ) {
            let mut bytes = VALID.to_vec();
            for (at, b) in edits {
                let at = at % bytes.len();
                bytes[at] = b;
            }
            bytes.truncate(cut % (bytes.len() + 1));
            read_all(&bytes);
        }
    }

    #[test]
    fn sentinel_urls_name_their_sentinels_and_master() {
        let none = BTreeMap::new();
        let c = configure_sentinel("//127.0.0.1:26379,127.0.0.1:26380/m", &none).unwrap();
        assert_eq!(c.topology(), "loopback");
        for bad in [
            "//127.0.0.1:26379",
            "//127.0.0.1/m",
            "///m",
            "//127.0.0.1:1/",
        ] {
            let e = configure_sentinel(bad, &none).map(|_| ()).unwrap_err();
            assert!(
                e.hint.unwrap().contains("redis+sentinel://HOST:PORT"),
                "{bad}"
            );
        }
    }
}
