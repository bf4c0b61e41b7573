//! `exec:PROGRAM[?OPTION=VALUE…]` — a store reached through an adapter: a program in any
//! language that dyno starts and speaks to over its standard input and output
//! (`docs/src/reference/adapter-protocol.md`). One adapter process serves the store (its namespace, its
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

mod adapter;
pub use adapter::*;
mod batch;
mod session;
use session::*;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "exec",
    query_options: true,
    summary: "a store reached through an adapter program (any language; docs/src/reference/adapter-protocol.md)",
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
    /// `u32` count, then that many `u64` keys.
    pub const GET_MANY: u8 = 0x06;
    /// `u32` head (bytes), `u32` count, then that many `u64` keys.
    pub const GET_HEADS: u8 = 0x07;
    /// Reply: done, no body.
    pub const OK: u8 = 0x81;
    /// Reply: `u32` storage reads, then the value.
    pub const VALUE: u8 = 0x83;
    /// Reply (get_many): `u32` storage reads, `u32` count, then each value as `u32` length and
    /// bytes, in the keys' order.
    pub const VALUES: u8 = 0x86;
    /// Reply (get_heads): `u32` storage reads, `u32` count, then the count's lengths (each
    /// value's whole length, a `u32` each), then the heads end to end (each value's first `head`
    /// bytes, all of a shorter one).
    pub const HEADS: u8 = 0x87;
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
