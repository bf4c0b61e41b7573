//! `exec:PROGRAM[?OPTION=VALUE…]` — a store reached through an adapter: a program in any
//! language that dyno starts and speaks to over its standard input and output
//! (`docs/adapter-protocol.md`). One adapter process serves the store (its namespace, its
//! caches), and one more each client session, as zodbshootout runs a process per client.
//!
//! dyno times every operation on its side; nothing the adapter says about time is believed.
//! Everything an adapter does wrong is data: a reply that is not the protocol's, an adapter that
//! exits, or one that stays silent past `timeout`, fails the operation (and so the case) with a
//! reason naming the adapter and what it did; its standard error goes to a file, whose last
//! lines the reason quotes. dyno signals only the adapter processes it started, by their PID.
//!
//! The program runs as given when it is executable, through `python3` when it ends in `.py`.
//! Options besides dyno's own (`timeout`) pass to the adapter in its `init` message.

use engine::clock::Clock;
use engine::driver::{
    CacheDrop, ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError,
    OptionSpec, Session, Store, TargetConfig, TxMode,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub static INFO: DriverInfo = DriverInfo {
    scheme: "exec",
    query_options: true,
    summary: "a store reached through an adapter program (any language; docs/adapter-protocol.md)",
    forms: &[
        "exec:adapters/python/reference.py",
        "exec:adapters/zodb/adapter.py?storage=file",
    ],
    families: &[Family::Kv, Family::Graph],
    options: &[
        OptionSpec {
            name: "timeout",
            default: "30s",
            help: "how long dyno waits for any reply before the adapter counts as hung (other options go to the adapter)",
        },
        OptionSpec {
            name: "framing",
            default: "auto",
            help: "json (JSON lines), binary (length-prefixed frames), or auto (the adapter chooses)",
        },
    ],
    clients: engine::driver::ClientModel::ManyPerThread,
};

/// The protocol version dyno speaks.
pub const PROTOCOL: u64 = 1;

/// A reply line longer than this is refused (a babbling adapter): 64 MiB, room for a batched
/// read of large values in base64.
const MAX_LINE: usize = 64 << 20;

/// The framings dyno offers in the handshake (option `framing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Json,
    Binary,
    /// Both; the adapter chooses.
    Auto,
}

impl Framing {
    /// The option's value, as written.
    fn name(self) -> &'static str {
        match self {
            Framing::Json => "json",
            Framing::Binary => "binary",
            Framing::Auto => "auto",
        }
    }

    /// What `init` offers the adapter.
    fn offered(self) -> &'static [&'static str] {
        match self {
            Framing::Json => &["json"],
            Framing::Binary => &["binary"],
            Framing::Auto => &["json", "binary"],
        }
    }
}

/// The binary framing: `u32` length (little-endian, of what follows), `u8` kind, `u32`
/// msg_id, then the body. Requests and replies of the hot operations have kinds of their own;
/// anything else travels as a JSON message in a `JSON` frame.
pub mod bin {
    pub const JSON: u8 = 0x00;
    pub const BEGIN: u8 = 0x01;
    pub const PUT: u8 = 0x02;
    pub const GET: u8 = 0x03;
    pub const DELETE: u8 = 0x04;
    pub const COMMIT: u8 = 0x05;
    /// Reply: done, no body.
    pub const OK: u8 = 0x81;
    /// Reply: `u32` storage reads, then the value.
    pub const VALUE: u8 = 0x83;
    /// Reply: `u32` code, then the text (UTF-8).
    pub const ERROR: u8 = 0xFF;

    /// Appends a frame's header for a body of `len` bytes.
    pub fn head(out: &mut Vec<u8>, kind: u8, id: u64, len: usize) {
        out.extend_from_slice(&(5 + len as u32).to_le_bytes());
        out.push(kind);
        out.extend_from_slice(&(id as u32).to_le_bytes());
    }
}

/// How long a closing adapter may take to exit before dyno kills it.
const EXIT_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
struct Config {
    program: PathBuf,
    timeout: Duration,
    framing: Framing,
    /// Options for the adapter, as written.
    passed: BTreeMap<String, String>,
    resolved: BTreeMap<String, String>,
    /// The handshake of a probe process, once (the column header needs it before the run).
    hello: std::sync::Arc<std::sync::OnceLock<Result<Hello, String>>>,
}

/// What an adapter said of itself in its `init_ok`.
#[derive(Debug, Clone)]
pub struct Hello {
    /// The framing chosen: `json` or `binary`.
    pub framing: String,
    pub name: String,
    pub ops: Vec<String>,
    pub durability: String,
    pub versions: BTreeMap<String, String>,
    /// Whether its replies say which reads reached its storage (else every read did).
    pub counts_storage_reads: bool,
    /// Its own client object cache, described (ZODB's pickle cache), if it keeps one.
    pub client_cache: Option<String>,
    /// How many sessions it serves at once, if it has a limit (FileStorage: one process).
    pub sessions: Option<u64>,
    /// A store's word that it can never drop the caches below its sessions, and why.
    pub no_drop_caches: Option<String>,
}

/// Validates the program and options; starts nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    parse(rest, options).map(|c| Box::new(c) as Box<dyn TargetConfig>)
}

/// The program and options checked; dyno's own options taken out, the adapter's kept.
fn parse(rest: &str, options: &BTreeMap<String, String>) -> Result<Config, ConfigError> {
    if rest.is_empty() {
        return Err(ConfigError::url("exec: names no adapter program")
            .hint("write e.g. exec:adapters/python/reference.py"));
    }
    let program = PathBuf::from(rest);
    if !program.is_file() {
        return Err(ConfigError::url(format!(
            "no adapter program at {}",
            program.display()
        ))
        .hint("give the path of an adapter (relative to where dyno runs), e.g. exec:adapters/python/reference.py"));
    }
    let mut passed = options.clone();
    let timeout = match passed.remove("timeout") {
        None => Duration::from_secs(30),
        Some(t) => engine::units::parse_duration(&t)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                ConfigError::option("timeout", format!("{t:?} is not a duration above zero"))
                    .hint("write e.g. timeout=5s")
            })?,
    };
    let framing = match passed.remove("framing").as_deref() {
        None | Some("auto") => Framing::Auto,
        Some("json") => Framing::Json,
        Some("binary") => Framing::Binary,
        Some(other) => {
            return Err(
                ConfigError::option("framing", format!("{other:?} is not a framing"))
                    .hint("write framing=json, framing=binary or framing=auto"),
            );
        }
    };
    let mut resolved = passed.clone();
    resolved.insert(
        "timeout".into(),
        humantime::format_duration(timeout).to_string(),
    );
    resolved.insert("framing".into(), framing.name().into());
    Ok(Config {
        program,
        timeout,
        framing,
        passed,
        resolved,
        hello: Default::default(),
    })
}

/// The handshake of `exec:REST` with `options` (a probe process, closed after): what the
/// adapter says of itself, or why it could not say it.
pub fn handshake(rest: &str, options: &BTreeMap<String, String>) -> Result<Hello, String> {
    parse(rest, options).map_err(|e| e.message)?.hello()
}

impl Config {
    /// Starts an adapter process in `role` and shakes hands.
    fn start(&self, role: &str, namespace: Option<&str>) -> Result<(Adapter, Hello), OpError> {
        let mut a = Adapter::spawn(&self.program, self.timeout)?;
        let hello = a.init(role, namespace, &self.passed, self.framing)?;
        let hook = SPAWNED.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(hook) = hook {
            hook(role, a.child.id());
        }
        Ok((a, hello))
    }

    fn hello(&self) -> Result<Hello, String> {
        self.hello
            .get_or_init(|| {
                let (mut a, hello) = self
                    .start("probe", None)
                    .map_err(|e| e.message.into_owned())?;
                a.close();
                Ok(hello)
            })
            .clone()
    }
}

impl TargetConfig for Config {
    /// The adapter's name (its file's stem, or its folder's name for a generic stem such as
    /// `adapter`) and the values of its options that are single words: `zodb-mapping` for
    /// `exec:adapters/zodb/adapter.py?storage=mapping`. Nothing is started to find it.
    fn default_name(&self) -> Option<String> {
        let stem = self.program.file_stem()?.to_str()?;
        let base = if matches!(stem, "adapter" | "main" | "run" | "index") {
            self.program
                .canonicalize()
                .ok()?
                .parent()?
                .file_name()?
                .to_str()?
                .to_string()
        } else {
            stem.to_string()
        };
        let word = |v: &&String| {
            !v.is_empty()
                && v.len() <= 16
                && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let name = std::iter::once(&base)
            .chain(self.passed.values().filter(word))
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("-");
        Some(name.chars().take(64).collect())
    }
    fn durability(&self) -> String {
        match self.hello() {
            Ok(h) => h.durability,
            Err(_) => "unknown (the adapter did not start)".into(),
        }
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        let fail = |e: OpError| {
            DriverError::new(format!("exec:{}: {}", self.program.display(), e.message))
        };
        let (mut store, hello) = self.start("store", None).map_err(fail)?;
        let opened = store
            .call(json!({"type": "open"}), "open_ok")
            .map_err(fail)?;
        let namespace = opened
            .get("namespace")
            .and_then(Value::as_str)
            .ok_or_else(|| fail(store.protocol_error("open_ok names no \"namespace\" (a string)")))?
            .to_string();
        Ok(Box::new(ExecStore {
            config: self.clone(),
            store: std::sync::Mutex::new(store),
            namespace,
            hello,
            open_sessions: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0)),
        }))
    }
}

struct ExecStore {
    config: Config,
    /// The store's own adapter process (namespace, caches), used by one call at a time.
    store: std::sync::Mutex<Adapter>,
    namespace: String,
    hello: Hello,
    /// Sessions open now (checked against the adapter's `sessions`).
    open_sessions: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Store for ExecStore {
    /// Each session waits on its adapter's pipes through the fiber scheduler.
    fn many_per_thread(&self) -> bool {
        true
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: format!("{} ({})", self.namespace, self.hello.name),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        let mut v = self.hello.versions.clone();
        v.insert("adapter".into(), self.hello.name.clone());
        v
    }
    fn client_cache(&self) -> Option<String> {
        self.hello.client_cache.clone()
    }
    fn cold_unreachable(&self) -> Option<String> {
        self.hello.no_drop_caches.clone()
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        use std::sync::atomic::Ordering;
        let open = self.open_sessions.fetch_add(1, Ordering::SeqCst);
        let slot = SessionSlot(self.open_sessions.clone());
        if let Some(limit) = self.hello.sessions
            && open >= limit
        {
            return Err(OpError::new(
                ErrorClass::Refused,
                format!(
                    "the adapter {} serves {limit} session(s) at a time (its init_ok says \"sessions\": {limit}): run with -c {limit}",
                    self.hello.name
                ),
            ));
        }
        let (adapter, hello) = self.config.start("session", Some(&self.namespace))?;
        Ok(Box::new(ExecSession {
            _slot: slot,
            a: adapter,
            get_many: hello.ops.iter().any(|o| o == "get_many"),
            scan: hello.ops.iter().any(|o| o == "scan"),
            counts: hello.counts_storage_reads,
            reads: 0,
        }))
    }
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        let mut a = self.store.lock().unwrap_or_else(|p| p.into_inner());
        match a.call(json!({"type": "drop_caches"}), "drop_caches_ok") {
            Ok(r) => Ok(CacheDrop::Done(
                r.get("done")
                    .and_then(Value::as_str)
                    .unwrap_or("the adapter dropped its storage's caches")
                    .to_string(),
            )),
            Err(e) if e.message.starts_with(NOT_SUPPORTED) => Ok(CacheDrop::NotReachable(
                e.message.trim_start_matches(NOT_SUPPORTED).to_string(),
            )),
            Err(e) => Err(e),
        }
    }
    fn scans(&self) -> Result<(), String> {
        if self.hello.ops.iter().any(|o| o == "scan") {
            Ok(())
        } else {
            Err(format!("the adapter {} has no scan", self.hello.name))
        }
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        let mut a = self.store.into_inner().unwrap_or_else(|p| p.into_inner());
        let r = a.call(json!({"type": "close"}), "close_ok");
        a.finish();
        r.map(drop)
            .map_err(|e| DriverError::new(format!("closing the adapter's store: {}", e.message)))
    }
}

/// The prefix of the message of an adapter's `not-supported` error (code 10).
const NOT_SUPPORTED: &str = "not supported: ";

/// One open session counted by its store; the count goes down when the session is dropped.
struct SessionSlot(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Drop for SessionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

struct ExecSession {
    // Dropped after `a` (fields drop in order): the adapter process is closed first.
    a: Adapter,
    get_many: bool,
    scan: bool,
    counts: bool,
    reads: u64,
    _slot: SessionSlot,
}

impl ExecSession {
    /// Counts the storage reads a read reply reports (or `keys` when the adapter does not say).
    fn count(&mut self, reply: &Value, keys: u64) {
        self.reads += if self.counts {
            reply
                .get("storage_reads")
                .and_then(Value::as_u64)
                .unwrap_or(0)
        } else {
            keys
        };
    }
}

fn b64(v: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(v)
}

impl ExecSession {
    /// A binary request whose reply is `OK`.
    fn bin_ok(&mut self, kind: u8, parts: &[&[u8]]) -> Result<(), OpError> {
        match self.a.call_bin(kind, parts)? {
            bin::OK => Ok(()),
            k => Err(self
                .a
                .protocol_error(format!("a reply of kind {k:#x} where OK (0x81) was due"))),
        }
    }
}

impl Session for ExecSession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        if self.a.binary {
            return self.bin_ok(bin::BEGIN, &[&[u8::from(mode == TxMode::Write)]]);
        }
        let mode = if mode == TxMode::Write {
            "write"
        } else {
            "read"
        };
        self.a
            .call(json!({"type": "begin", "mode": mode}), "begin_ok")
            .map(drop)
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        if self.a.binary {
            return self.bin_ok(bin::PUT, &[&key.to_le_bytes(), value]);
        }
        let m = json!({"type": "put", "key": key.to_string(), "value": b64(value)});
        self.a.call(m, "put_ok").map(drop)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        if self.a.binary {
            let k = self.a.call_bin(bin::GET, &[&key.to_le_bytes()])?;
            let b = &self.a.body;
            if k != bin::VALUE || b.len() < 4 {
                return Err(self
                    .a
                    .protocol_error(format!("a reply of kind {k:#x} where VALUE (0x83) was due")));
            }
            let reads = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
            self.reads += if self.counts { u64::from(reads) } else { 1 };
            out.clear();
            out.extend_from_slice(&b[4..]);
            return Ok(());
        }
        let r = self
            .a
            .call(json!({"type": "get", "key": key.to_string()}), "get_ok")?;
        self.count(&r, 1);
        out.clear();
        self.a.value(&r, "value", out)
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        if self.a.binary {
            return self.bin_ok(bin::DELETE, &[&key.to_le_bytes()]);
        }
        self.a
            .call(
                json!({"type": "delete", "key": key.to_string()}),
                "delete_ok",
            )
            .map(drop)
    }
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        if !self.get_many {
            return engine::driver::get_each(self, keys, out, ends);
        }
        let keys_text: Vec<String> = keys.iter().map(u64::to_string).collect();
        let r = self.a.call(
            json!({"type": "get_many", "keys": keys_text}),
            "get_many_ok",
        )?;
        self.count(&r, keys.len() as u64);
        let values = r
            .get("values")
            .and_then(Value::as_array)
            .filter(|v| v.len() == keys.len())
            .ok_or_else(|| {
                self.a
                    .protocol_error("get_many_ok has no \"values\" array of one value per key")
            })?;
        out.clear();
        ends.clear();
        for v in values {
            let text = v.as_str().ok_or_else(|| {
                self.a
                    .protocol_error("a value of get_many_ok is not a base64 string")
            })?;
            decode_into(text, out).map_err(|_| {
                self.a
                    .protocol_error("a value of get_many_ok is not base64")
            })?;
            ends.push(out.len());
        }
        Ok(())
    }
    fn scan(
        &mut self,
        start: u64,
        count: usize,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), OpError> {
        if !self.scan {
            return Err(OpError::new(
                ErrorClass::Application,
                "this adapter has no scan",
            ));
        }
        let m = json!({"type": "scan", "start": start.to_string(), "count": count});
        let r = self.a.call(m, "scan_ok")?;
        self.count(&r, 1);
        out.clear();
        let items = r
            .get("items")
            .and_then(Value::as_array)
            .ok_or_else(|| self.a.protocol_error("scan_ok has no \"items\" array"))?;
        for it in items {
            let (Some(k), Some(v)) = (
                it.get(0)
                    .and_then(Value::as_str)
                    .and_then(|k| k.parse::<u64>().ok()),
                it.get(1).and_then(Value::as_str),
            ) else {
                return Err(self
                    .a
                    .protocol_error("an item of scan_ok is not [\"KEY\", \"BASE64\"]"));
            };
            let mut value = Vec::new();
            decode_into(v, &mut value)
                .map_err(|_| self.a.protocol_error("a value of scan_ok is not base64"))?;
            out.push((k, value));
        }
        Ok(())
    }
    fn commit(&mut self) -> Result<(), OpError> {
        if self.a.binary {
            return self.bin_ok(bin::COMMIT, &[]);
        }
        self.a
            .call(json!({"type": "commit"}), "commit_ok")
            .map(drop)
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
    fn drop_client_cache(&mut self) -> Result<(), OpError> {
        self.a
            .call(json!({"type": "drop_client_cache"}), "drop_client_cache_ok")
            .map(drop)
    }
}

impl Drop for ExecSession {
    fn drop(&mut self) {
        self.a.close();
    }
}

fn decode_into(text: &str, out: &mut Vec<u8>) -> Result<(), base64::DecodeError> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode_vec(text, out)
}

/// One adapter process and its JSON-lines conversation.
pub struct Adapter {
    child: Child,
    input: ChildStdin,
    output: ChildStdout,
    /// Bytes read that are not yet a whole line.
    buf: Vec<u8>,
    next_id: u64,
    timeout: Duration,
    program: String,
    stderr: PathBuf,
    /// Set once the conversation is broken (an exit, a hang, garbage): every later call fails
    /// at once with the same reason.
    broken: Option<OpError>,
    /// Binary framing, once both sides agreed on it in the handshake.
    pub binary: bool,
    /// A request being built.
    out: Vec<u8>,
    /// The last binary frame's body.
    body: Vec<u8>,
    /// The adapter's output and input pipes, as a fiber waits on them.
    out_wait: engine::fiber::Waiter,
    in_wait: engine::fiber::Waiter,
}

impl Adapter {
    /// Starts `program` with its standard error in a file of its own.
    pub fn spawn(program: &Path, timeout: Duration) -> Result<Adapter, OpError> {
        let dir = stderr_dir();
        let stderr = dir.join(format!(
            "adapter-{}-{}.stderr",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let err_file = std::fs::File::create(&stderr)
            .map_err(|e| OpError::io("creating the adapter's stderr file", &e))?;
        let mut cmd = if program.extension().is_some_and(|e| e == "py") {
            let mut c = Command::new("python3");
            c.arg(program);
            c
        } else {
            Command::new(program)
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err_file))
            .spawn()
            .map_err(|e| {
                OpError::new(
                    ErrorClass::Io,
                    format!("starting the adapter {}: {e}", program.display()),
                )
            })?;
        let input = child.stdin.take().expect("piped");
        let output = child.stdout.take().expect("piped");
        // Both pipes non-blocking: every wait on them is bounded, and yields on a fiber.
        for fd in [output.as_raw_fd(), input.as_raw_fd()] {
            // SAFETY: setting O_NONBLOCK on a pipe dyno owns.
            unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
        }
        let (out_wait, in_wait) = (
            engine::fiber::Waiter::new(output.as_raw_fd()),
            engine::fiber::Waiter::new(input.as_raw_fd()),
        );
        Ok(Adapter {
            child,
            input,
            output,
            buf: Vec::with_capacity(4096),
            next_id: 0,
            timeout,
            program: program.display().to_string(),
            stderr,
            broken: None,
            binary: false,
            out: Vec::with_capacity(512),
            body: Vec::with_capacity(512),
            out_wait,
            in_wait,
        })
    }

    /// The handshake: `init` with the role and options, checked `init_ok`.
    pub fn init(
        &mut self,
        role: &str,
        namespace: Option<&str>,
        options: &BTreeMap<String, String>,
        framing: Framing,
    ) -> Result<Hello, OpError> {
        let offered = framing.offered();
        let r = self.call(
            json!({"type": "init", "protocol": PROTOCOL, "role": role, "namespace": namespace,
                   "options": options, "framings": offered}),
            "init_ok",
        )?;
        let chosen = r.get("framing").and_then(Value::as_str).unwrap_or("json");
        if !offered.contains(&chosen) {
            return Err(self.protocol_error(format!(
                "its init_ok chose the {chosen:?} framing, which dyno did not offer ({offered:?})"
            )));
        }
        if r.get("protocol").and_then(Value::as_u64) != Some(PROTOCOL) {
            return Err(self.fail(
                ErrorClass::Protocol,
                format!(
                    "its init_ok speaks protocol {}, dyno speaks {PROTOCOL}",
                    r.get("protocol")
                        .map_or("(none)".to_string(), |p| p.to_string())
                ),
            ));
        }
        let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(name), Some(durability)) = (text("name"), text("durability")) else {
            return Err(self.protocol_error(
                "init_ok must name the adapter (\"name\") and its durability (\"durability\")",
            ));
        };
        let ops: Vec<String> = r
            .get("ops")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|o| o.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        for need in ["get", "put", "delete", "begin", "commit"] {
            if !ops.iter().any(|o| o == need) {
                return Err(self.protocol_error(format!(
                    "init_ok's \"ops\" lacks {need:?}: every adapter has get, put, delete, begin and commit"
                )));
            }
        }
        let versions = r
            .get("versions")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| v.to_string(), str::to_string),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        // Every message after init_ok is in the framing chosen.
        self.binary = chosen == "binary";
        Ok(Hello {
            framing: chosen.to_string(),
            name,
            ops,
            durability,
            versions,
            counts_storage_reads: r
                .get("storage_reads")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            client_cache: text("client_cache").filter(|c| !c.trim().is_empty()),
            no_drop_caches: text("no_drop_caches").filter(|c| !c.trim().is_empty()),
            sessions: match r.get("sessions") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_u64() {
                    Some(n) if n > 0 => Some(n),
                    _ => {
                        return Err(self.protocol_error(format!(
                            "init_ok's \"sessions\" is {v}: a count of at least 1, or absent when there is no limit"
                        )));
                    }
                },
            },
        })
    }

    /// Sends one message (a line, or a JSON frame) with a fresh `msg_id`.
    fn send(&mut self, mut msg: Value) -> Result<u64, OpError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        self.next_id += 1;
        msg["msg_id"] = json!(self.next_id);
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        if self.binary {
            // The header's length is known once the message is written after it.
            bin::head(&mut out, bin::JSON, self.next_id, 0);
            serde_json::to_writer(&mut out, &msg).expect("a JSON value serializes");
            let len = (out.len() - 4) as u32;
            out[..4].copy_from_slice(&len.to_le_bytes());
        } else {
            serde_json::to_writer(&mut out, &msg).expect("a JSON value serializes");
            out.push(b'\n');
        }
        let written = self.write_bounded(&out);
        self.out = out;
        written.map(|()| self.next_id)
    }

    /// Sends `msg` and returns the reply of type `want` to it; an `error` reply is the
    /// operation's failure (its class from its code).
    pub fn call(&mut self, msg: Value, want: &str) -> Result<Value, OpError> {
        let id = self.send(msg)?;
        let r = self.receive()?;
        if r.get("in_reply_to").and_then(Value::as_u64) != Some(id) {
            return Err(self.protocol_error(format!("a reply not to message {id} (in_reply_to)")));
        }
        match r.get("type").and_then(Value::as_str) {
            Some(t) if t == want => Ok(r),
            Some("error") => Err(error_reply(&r)),
            Some(t) => Err(self.protocol_error(format!("a {t:?} reply where {want:?} was due"))),
            None => Err(self.protocol_error("a reply without a \"type\"")),
        }
    }

    /// The next message, parsed, within the timeout: a line, or (binary framing) a JSON frame.
    fn receive(&mut self) -> Result<Value, OpError> {
        if self.binary {
            let kind = self.frame()?;
            if kind != bin::JSON {
                return Err(self.protocol_error(format!(
                    "a binary frame of kind {kind:#x} where a JSON one was due"
                )));
            }
            let parsed = json_object(&self.body);
            return parsed.map_err(|what| self.fail(ErrorClass::Protocol, what));
        }
        let end = self.fill(|b| b.iter().position(|&c| c == b'\n').map(|e| e + 1))?;
        let parsed = json_object(&self.buf[..end]);
        self.buf.drain(..end);
        parsed.map_err(|what| self.fail(ErrorClass::Protocol, what))
    }

    /// The next binary frame's kind; its body is in `self.body`.
    fn frame(&mut self) -> Result<u8, OpError> {
        let end = self.fill(|b| {
            let len = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
            (b.len() >= 4 + len).then_some(4 + len)
        })?;
        if end < 9 {
            self.buf.drain(..end);
            return Err(
                self.protocol_error("a binary frame shorter than its header (kind, msg_id)")
            );
        }
        let kind = self.buf[4];
        let id = u32::from_le_bytes(self.buf[5..9].try_into().expect("4 bytes"));
        self.body.clear();
        self.body.extend_from_slice(&self.buf[9..end]);
        self.buf.drain(..end);
        if u64::from(id) != self.next_id {
            return Err(
                self.protocol_error(format!("a reply to message {id}, not {}", self.next_id))
            );
        }
        Ok(kind)
    }

    /// Reads until `complete` finds a whole message at the start of the buffer (its end),
    /// within the timeout.
    fn fill(&mut self, complete: impl Fn(&[u8]) -> Option<usize>) -> Result<usize, OpError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(end) = complete(&self.buf) {
                return Ok(end);
            }
            if self.buf.len() > MAX_LINE {
                return Err(self.fail(
                    ErrorClass::Protocol,
                    format!(
                        "wrote more than {} MiB without ending a line",
                        MAX_LINE >> 20
                    ),
                ));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let t = humantime::format_duration(self.timeout);
                return Err(self.fail(
                    ErrorClass::Timeout,
                    format!("did not answer within {t} (hung)"),
                ));
            }
            // On a fiber, the thread runs the other clients until the adapter has written.
            match self.out_wait.wait(true, Some(left)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
                Err(e) => return Err(self.gone(&format!("could not be waited on ({e})"))),
            }
            let mut chunk = [0u8; 65536];
            match self.output.read(&mut chunk) {
                Ok(0) => return Err(self.gone("exited")),
                Ok(n) => {
                    // A short read drained the pipe: the next waits for the poller.
                    if n < chunk.len() {
                        self.out_wait.not_ready(true);
                    }
                    self.buf.extend_from_slice(&chunk[..n])
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.out_wait.not_ready(true)
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.gone(&format!("could not be read from ({e})"))),
            }
        }
    }

    /// Writes all of `data` to the adapter's input within the timeout: an adapter that stops
    /// reading (its pipe full) is hung, not a reason for dyno to block.
    fn write_bounded(&mut self, mut data: &[u8]) -> Result<(), OpError> {
        let deadline = Instant::now() + self.timeout;
        while !data.is_empty() {
            match self.input.write(data) {
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.in_wait.not_ready(false);
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() || self.in_wait.wait(false, Some(left)).is_err() {
                        let t = humantime::format_duration(self.timeout);
                        return Err(self.fail(
                            ErrorClass::Timeout,
                            format!("did not read its input within {t} (hung)"),
                        ));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.gone(&format!("could not be written to ({e})"))),
            }
        }
        Ok(())
    }

    /// Sends one binary request (`kind`, its body the concatenation of `parts`) and returns the
    /// reply's kind, its body in `self.body`; an error frame is the operation's failure.
    fn call_bin(&mut self, kind: u8, parts: &[&[u8]]) -> Result<u8, OpError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        self.next_id += 1;
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        bin::head(
            &mut out,
            kind,
            self.next_id,
            parts.iter().map(|p| p.len()).sum(),
        );
        for p in parts {
            out.extend_from_slice(p);
        }
        let written = self.write_bounded(&out);
        self.out = out;
        written?;
        match self.frame()? {
            bin::ERROR if self.body.len() < 4 => {
                Err(self.protocol_error("an error frame without its code"))
            }
            bin::ERROR => {
                let code = u32::from_le_bytes(self.body[..4].try_into().expect("4 bytes"));
                let text = String::from_utf8_lossy(&self.body[4..]).into_owned();
                Err(error_reply(&json!({"code": code, "text": text})))
            }
            bin::JSON => match json_object(&self.body) {
                Ok(v) if v.get("type").and_then(Value::as_str) == Some("error") => {
                    Err(error_reply(&v))
                }
                _ => Err(self.protocol_error("a JSON reply to a binary request")),
            },
            k => Ok(k),
        }
    }

    /// Decodes the base64 value `field` of a reply into `out`.
    fn value(&mut self, r: &Value, field: &str, out: &mut Vec<u8>) -> Result<(), OpError> {
        let text = r
            .get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| self.protocol_error(format!("the reply has no {field:?} (base64)")))?;
        decode_into(text, out)
            .map_err(|_| self.protocol_error(format!("the reply's {field:?} is not base64")))
    }

    fn protocol_error(&mut self, what: impl Into<String>) -> OpError {
        self.fail(ErrorClass::Protocol, what.into())
    }

    /// Breaks the conversation for good with `what` the adapter did, and kills the process.
    fn fail(&mut self, class: ErrorClass, what: String) -> OpError {
        let e = OpError::new(
            class,
            format!("adapter {}: {what}{}", self.program, self.stderr_tail()),
        );
        self.broken = Some(e.clone());
        self.kill();
        e
    }

    /// The adapter went away: how it ended, and what it said last.
    fn gone(&mut self, what: &str) -> OpError {
        let status = (0..20)
            .find_map(|_| match self.child.try_wait() {
                Ok(Some(s)) => Some(s.to_string()),
                _ => {
                    engine::fiber::sleep(Duration::from_millis(5));
                    None
                }
            })
            .unwrap_or_else(|| "still running".into());
        self.fail(ErrorClass::Reset, format!("{what} ({status})"))
    }

    /// `; its stderr ends: "…"` from the adapter's standard error, when it wrote any.
    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let last: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        match last.last() {
            Some(l) => format!(
                "; its stderr ({}) ends: {:?}",
                self.stderr.display(),
                l.trim()
            ),
            None => String::new(),
        }
    }

    fn kill(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // The process dyno started (its own child, not yet reaped: the PID is still its).
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Ends the process: a `close` message, then a grace period to exit, then a kill.
    pub fn close(&mut self) {
        if self.broken.is_none() {
            let _ = self.send(json!({"type": "close"}));
        }
        self.finish();
    }

    /// Waits up to the grace period for the process to exit (it was told to), then kills it.
    fn finish(&mut self) {
        let t0 = Instant::now();
        while t0.elapsed() < EXIT_GRACE {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) => engine::fiber::sleep(Duration::from_millis(5)),
                Err(_) => break,
            }
        }
        self.kill();
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        self.kill();
    }
}

static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

static LOG_DIR: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// Told of each adapter process once it has shaken hands: its role and PID.
type SpawnHook = std::sync::Arc<dyn Fn(&str, u32) + Send + Sync>;
static SPAWNED: std::sync::Mutex<Option<SpawnHook>> = std::sync::Mutex::new(None);

/// Tells `hook` of every adapter process started from now on, once it has answered its
/// handshake (`--profile` attaches a profiler to it), on the thread that started it.
pub fn on_spawn(hook: SpawnHook) {
    *SPAWNED.lock().unwrap_or_else(|p| p.into_inner()) = Some(hook);
}

/// Keeps adapters' standard error in `dir` from now on (`dyno run` gives its results directory).
pub fn set_log_dir(dir: &Path) {
    *LOG_DIR.lock().unwrap_or_else(|p| p.into_inner()) = Some(dir.to_path_buf());
}

/// Where adapters' standard error goes: the run's results directory ([`set_log_dir`]), else the
/// temporary directory.
fn stderr_dir() -> PathBuf {
    let dir = LOG_DIR.lock().unwrap_or_else(|p| p.into_inner()).clone();
    dir.unwrap_or_else(std::env::temp_dir)
}

/// `line` as a JSON object, or what the adapter wrote instead (quoted, at most 80 bytes).
fn json_object(line: &[u8]) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(line) {
        Ok(v) if v.is_object() => Ok(v),
        _ => {
            let shown = String::from_utf8_lossy(&line[..line.len().min(80)]);
            Err(format!(
                "wrote a line that is not a JSON object: {:?}",
                shown.trim_end()
            ))
        }
    }
}

/// An adapter's `error` reply as an operation's failure: the class from its code (Maelstrom's
/// codes: 0 timeout, 10 not supported, 11 temporarily unavailable, 12 malformed request,
/// 13 crash, 14 abort, 20 key does not exist, 30 transaction conflict).
fn error_reply(r: &Value) -> OpError {
    let code = r.get("code").and_then(Value::as_u64).unwrap_or(13);
    let text = r.get("text").and_then(Value::as_str).unwrap_or("(no text)");
    let (class, what) = match code {
        0 => (ErrorClass::Timeout, "timeout"),
        10 => return OpError::new(ErrorClass::Application, format!("{NOT_SUPPORTED}{text}")),
        11 => (ErrorClass::Refused, "temporarily unavailable"),
        12 => (ErrorClass::Protocol, "malformed request"),
        13 => (ErrorClass::Reset, "crash"),
        14 => (ErrorClass::Application, "abort"),
        20 => (ErrorClass::NotFound, "key does not exist"),
        30 => (ErrorClass::Application, "transaction conflict"),
        _ => (ErrorClass::Application, "error"),
    };
    OpError::new(class, format!("adapter: {what} ({code}): {text}"))
}
