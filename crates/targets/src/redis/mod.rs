//! `redis://HOST:PORT` — Redis or Valkey, over RESP (the protocol written by hand: a few
//! commands, no client library needed).
//!
//! dyno works only under a key prefix of its own (`dyno_<pid>_<n>:`), and deletes exactly those
//! keys at the end (`SCAN MATCH prefix*` then `UNLINK`). A write transaction is `MULTI` … `EXEC`,
//! so `add` and `update` commit each client's objects at once, as zodbshootout does; its commands
//! are sent together with `EXEC`, one round trip as from a pipelining client (redis-py's
//! `pipeline()`), not one per command. Durability is read from the server (`CONFIG GET appendonly
//! appendfsync save`) and named in the column header.
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

mod resp;
use resp::*;
mod session;
use session::*;

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
    // A name and a value for each name asked, at most: a longer answer is not CONFIG's (the
    // connection is dropped after, so what is left unread does not matter).
    if n > 2 * names.len() as i64 {
        return out;
    }
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

#[cfg(test)]
mod tests;
