//! `etcd://HOST:PORT[,HOST:PORT…]` — etcd v3, one member or a Raft cluster, through its gRPC
//! API (`api=grpc`, the default: `crate::grpc::Conn` on the client's fiber, etcd's messages by
//! prost in `grpc.rs`) or its v3 JSON gateway over HTTP/1.1 keep-alive (`api=gateway`;
//! `gateway.rs`). `api.rs` is the operations in either. The gateway costs etcd about 1.8× the
//! CPU per operation and adds its translation to every latency (the book's measurements, "etcd:
//! the JSON gateway or gRPC"); it stays for comparison and for servers that expose only it.
//!
//! dyno works only under a key prefix of its own (`dyno_<pid>_<n>/`) and deletes exactly that
//! range at the end. A write transaction of one put is a `Put`; a larger one is one etcd `Txn`
//! (or several of at most `max_txn_ops` puts when it is larger still: etcd refuses bigger ones,
//! `--max-txn-ops`, 128 by default), with one put per key, its last value (etcd refuses a `Txn`
//! that names a key twice);
//! a delete goes at once, so that a missing key is `not_found` where it is asked. A session
//! talks to one member: sessions are spread over the endpoints
//! (`sessions=spread`, as etcd's own client balances), or each goes to the leader of the moment
//! (`sessions=leader`, as a Redis client follows its primary: a fault run then compares the same
//! placement before and after a leader's death). When its member fails a session moves — to the
//! next member that answers, or to the new leader once one is elected — and every such move is
//! counted and timed (the case's `server.reconnect` figures). A read is linearizable unless
//! `reads=serializable`.

use crate::options::Opts;
use api::{Api, Member};
use engine::clock::Clock;
use engine::driver::{
    ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError, OptionSpec,
    Session, Store, TargetConfig, TxMode,
};
use engine::fiber::Stream;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

mod api;
mod gateway;
mod grpc;
mod lists;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "etcd",
    query_options: true,
    summary: "etcd v3, a member or a cluster, through its gRPC API (or its JSON gateway); a session moves to another member when its own fails (each move counted and timed)",
    forms: &[
        "etcd://127.0.0.1:2379",
        "etcd://127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379?reads=serializable",
    ],
    families: &[Family::Kv, Family::Graph, Family::Lists],
    options: &[
        OptionSpec {
            name: "api",
            default: "grpc",
            help: "grpc (etcd's own protocol, as its Go client speaks it) or gateway (its v3 JSON gateway over HTTP/1.1)",
        },
        OptionSpec {
            name: "reads",
            default: "linearizable",
            help: "linearizable (through the leader) or serializable (the member's own copy)",
        },
        OptionSpec {
            name: "sessions",
            default: "spread",
            help: "spread (over the endpoints; a failed member's sessions move to the next) or leader (each on the leader of the moment)",
        },
        OptionSpec {
            name: "timeout",
            default: "5s",
            help: "how long a request may wait for its answer before it fails as a timeout",
        },
        OptionSpec {
            name: "max_txn_ops",
            default: "128",
            help: "most puts in one Txn (the servers' --max-txn-ops); a larger commit is split",
        },
    ],
    clients: engine::driver::ClientModel::ManyPerThread,
};

/// A response head line or body larger than these is a protocol error.
const MAX_LINE: u64 = 16 << 10;
const MAX_BODY: usize = 64 << 20;
/// A Txn's request is kept under etcd's default request limit (1.5 MiB).
const MAX_TXN_BYTES: usize = 1 << 20;

#[derive(Debug, Clone)]
struct Config {
    api: Api,
    endpoints: Vec<String>,
    serializable: bool,
    /// Every session on the leader (`sessions=leader`), not spread over the endpoints.
    on_leader: bool,
    timeout: Duration,
    max_txn_ops: usize,
    resolved: BTreeMap<String, String>,
    durability: Arc<std::sync::OnceLock<String>>,
}

/// Validates the URL and options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("etcd", options, INFO.options)?;
    let form = |why: String| {
        ConfigError::url(why).hint(
            "write etcd://HOST:PORT[,HOST:PORT…], e.g. etcd://127.0.0.1:2379 or \
             etcd://127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379",
        )
    };
    let hosts = (rest.strip_prefix("//"))
        .map(|r| r.trim_end_matches('/'))
        .ok_or_else(|| form("no endpoints".into()))?;
    let endpoints: Vec<String> = (hosts.split(','))
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect();
    if endpoints.is_empty() {
        return Err(form("it names no endpoint".into()));
    }
    if let Some(bad) = (endpoints.iter()).find(|h| {
        h.contains('/')
            || !h
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
    }) {
        return Err(form(format!("endpoint {bad:?} is not HOST:PORT")));
    }
    let serializable = o.choice("reads", &["linearizable", "serializable"])? == "serializable";
    let on_leader = o.choice("sessions", &["spread", "leader"])? == "leader";
    let max_txn_ops = o.count("max_txn_ops")?;
    if !(1..=1_000_000).contains(&max_txn_ops) {
        return Err(ConfigError::option("max_txn_ops", "must be 1 to 1000000")
            .hint("give the servers' --max-txn-ops (128 unless set)"));
    }
    let api = match o.choice("api", &["grpc", "gateway"])?.as_str() {
        "grpc" => Api::Grpc,
        _ => Api::Gateway,
    };
    Ok(Box::new(Config {
        api,
        endpoints,
        serializable,
        on_leader,
        timeout: o.duration("timeout")?,
        max_txn_ops: max_txn_ops as usize,
        resolved: o.resolved(),
        durability: Arc::new(std::sync::OnceLock::new()),
    }))
}

impl Config {
    /// The member a session works on: the first that answers from `start` on, or with
    /// `sessions=leader` the one that says it leads.
    fn reach_for_session(&self, start: usize) -> Result<(Member, usize), OpError> {
        if self.on_leader {
            self.reach_leader()
        } else {
            self.reach(start)
        }
    }

    /// The member that says it is the leader (its status names itself as leader); a refusal
    /// while the cluster has none (an election) or none answers.
    fn reach_leader(&self) -> Result<(Member, usize), OpError> {
        let mut last = api::nobody("etcd: no member says it leads");
        for (at, endpoint) in self.endpoints.iter().enumerate() {
            let asked = Member::open(self.api, endpoint, self.timeout).and_then(|mut m| {
                let leads = m.status()?.leads;
                Ok((m, leads))
            });
            match asked {
                Ok((m, true)) => return Ok((m, at)),
                Ok((_, false)) => {}
                Err(e) => last = OpError::new(e.class, format!("etcd://{endpoint}: {}", e.message)),
            }
        }
        Err(last)
    }

    /// The first member that answers (its status), from `start` on.
    fn reach(&self, start: usize) -> Result<(Member, usize), OpError> {
        let mut last = api::nobody("etcd: no endpoint");
        for i in 0..self.endpoints.len() {
            let at = (start + i) % self.endpoints.len();
            let endpoint = &self.endpoints[at];
            match Member::open(self.api, endpoint, self.timeout).and_then(|mut m| {
                m.status()?;
                Ok(m)
            }) {
                Ok(m) => return Ok((m, at)),
                Err(e) => last = OpError::new(e.class, format!("etcd://{endpoint}: {}", e.message)),
            }
        }
        Err(last)
    }

    /// What the cluster says of its durability: every commit is fsynced to the WAL of a
    /// majority of its members.
    fn ask_durability(&self) -> String {
        let Ok((mut m, _)) = self.reach(0) else {
            return "unknown (not reached)".into();
        };
        match m.members() {
            Ok(n) if n > 1 => format!("raft: fsync on {} of {n} members", n / 2 + 1),
            Ok(_) => "WAL fsync, 1 member".into(),
            Err(_) => "unknown".into(),
        }
    }
}

impl TargetConfig for Config {
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn durability(&self) -> String {
        if let Some(d) = self.durability.get() {
            return d.clone();
        }
        // Kept once the cluster answered; asked again while it did not (not started yet).
        let d = self.ask_durability();
        if !d.starts_with("unknown (not reached)") {
            let _ = self.durability.set(d.clone());
        }
        d
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn topology(&self) -> &'static str {
        crate::net::topology_of(&self.endpoints[0])
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
        let (mut m, _) = self
            .reach(0)
            .map_err(|e| DriverError::new(e.message.to_string()))?;
        let version = m.status().map_or_else(|_| "unknown".into(), |h| h.version);
        let (name, owner) = crate::claim::server_namespace(share);
        Ok(Box::new(EtcdStore {
            config: self.clone(),
            prefix: format!("{name}/"),
            owner,
            version,
            next: AtomicUsize::new(0),
            reconnects: Arc::new(crate::net::Reconnects::default()),
        }))
    }
}

struct EtcdStore {
    config: Config,
    prefix: String,
    /// Whether closing deletes the keys (not on a shard other than rank 0).
    owner: bool,
    version: String,
    /// The member the next session starts on.
    next: AtomicUsize,
    reconnects: Arc<crate::net::Reconnects>,
}

/// The end of the range of every key that starts with `prefix`.
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    // The prefix ends in '/', so adding one to its last byte never carries.
    *end.last_mut().expect("a prefix is never empty") += 1;
    end
}

impl EtcdStore {
    /// A client's session, on the member the sessions' spread gives it.
    fn session(&self) -> Result<EtcdSession, OpError> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let (conn, at) = self.config.reach_for_session(start)?;
        Ok(EtcdSession {
            conn,
            at,
            broken: false,
            config: self.config.clone(),
            prefix: self.prefix.clone(),
            key: Vec::with_capacity(64),
            pending: Vec::new(),
            pending_at: HashMap::new(),
            in_tx: false,
            reads: 0,
            reconnects: self.reconnects.clone(),
        })
    }
}

impl Store for EtcdStore {
    fn many_per_thread(&self) -> bool {
        true
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: format!(
                "etcd://{} keys {}*",
                self.config.endpoints.join(","),
                self.prefix
            ),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("etcd".to_string(), self.version.clone())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        Ok(Box::new(self.session()?))
    }
    fn connect_lists(&self) -> Result<Box<dyn engine::driver::ListSession>, OpError> {
        Ok(Box::new(lists::EtcdLists {
            session: self.session()?,
        }))
    }
    fn server_stats(&self) -> Option<Result<Vec<engine::driver::ServerOp>, OpError>> {
        Some(Ok(vec![self.reconnects.server_op()]))
    }
    fn cold_unreachable(&self) -> Option<String> {
        Some("etcd: its key index lives in memory and its data in a memory-mapped bbolt file that dyno cannot evict from a server it reaches over the network".into())
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        if !self.owner {
            return Ok(());
        }
        let fail =
            |e: OpError| DriverError::new(format!("removing {}*: {}", self.prefix, e.message));
        let (mut m, _) = self.config.reach(0).map_err(fail)?;
        (m.delete(self.prefix.as_bytes(), &prefix_end(&self.prefix)))
            .map(drop)
            .map_err(fail)
    }
}

/// One client's session on one member; see the module's notes on moving to another.
struct EtcdSession {
    conn: Member,
    /// The member's place in the endpoints.
    at: usize,
    /// The last operation failed on the connection: the next one moves first.
    broken: bool,
    config: Config,
    prefix: String,
    key: Vec<u8>,
    /// A write transaction's puts, sent at commit: one per key, the last value put (etcd
    /// refuses a Txn that names a key twice).
    pending: Vec<(Vec<u8>, Vec<u8>)>,
    /// Where each key of `pending` is.
    pending_at: HashMap<Vec<u8>, usize>,
    in_tx: bool,
    reads: u64,
    reconnects: Arc<crate::net::Reconnects>,
}

impl EtcdSession {
    /// `key` under the session's prefix: the prefix and 16 hex digits.
    fn key(&mut self, key: u64) -> &[u8] {
        use std::io::Write as _;
        self.key.clear();
        let prefix = self.prefix.as_bytes();
        self.key.extend_from_slice(prefix);
        write!(self.key, "{key:016x}").expect("writing to a Vec");
        &self.key
    }

    /// Moves to the next member that answers if the last operation broke the connection, or
    /// the member closed it (GOAWAY): a reconnection, counted and timed.
    fn ensure(&mut self) -> Result<(), OpError> {
        if !self.broken && self.conn.usable() {
            return Ok(());
        }
        let (config, from) = (&self.config, self.at + 1);
        let (conn, at) = self.reconnects.follow(|| config.reach_for_session(from))?;
        self.conn = conn;
        self.at = at;
        self.broken = false;
        Ok(())
    }

    /// A write transaction's puts in as few Txns as etcd's limits allow: at most
    /// `max_txn_ops` puts and about 1 MiB each.
    fn send_txns(&mut self, pending: &[(Vec<u8>, Vec<u8>)]) -> Result<(), OpError> {
        let mut from = 0;
        while from < pending.len() {
            let mut to = from;
            let mut bytes = 0;
            while to < pending.len()
                && to - from < self.config.max_txn_ops
                && (to == from || bytes + pending[to].0.len() + pending[to].1.len() < MAX_TXN_BYTES)
            {
                bytes += pending[to].0.len() + pending[to].1.len() + 40;
                to += 1;
            }
            self.on_member(|m, _| m.guarded(&[], &pending[from..to]).map(drop))?;
            from = to;
        }
        Ok(())
    }

    /// One operation on the member; a failure on the connection, or a member that says it
    /// cannot serve (no leader, stopping), marks the session to move.
    fn on_member<T>(
        &mut self,
        op: impl FnOnce(&mut Member, &[u8]) -> Result<T, OpError>,
    ) -> Result<T, OpError> {
        self.ensure()?;
        let r = op(&mut self.conn, &self.key);
        if let Err(e) = &r {
            self.broken |= e.class.is_connection();
        }
        r
    }
}

impl Session for EtcdSession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        self.pending.clear();
        self.pending_at.clear();
        self.in_tx = mode == TxMode::Write;
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        self.key(key);
        if self.in_tx {
            match self.pending_at.get(&self.key) {
                Some(&at) => value.clone_into(&mut self.pending[at].1),
                None => {
                    self.pending_at.insert(self.key.clone(), self.pending.len());
                    self.pending.push((self.key.clone(), value.to_vec()));
                }
            }
            return Ok(());
        }
        self.on_member(|m, k| m.put(k, value))
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.key(key);
        let serializable = self.config.serializable;
        let found = self.on_member(|m, k| m.range(k, serializable, out))?;
        self.reads += 1;
        if !found {
            return Err(OpError::new(ErrorClass::NotFound, "etcd: no such key"));
        }
        Ok(())
    }
    /// A delete is sent at once, also in a write transaction (so that a missing key is
    /// `not_found` where it is asked); a put of the same key earlier in the transaction is taken
    /// out of it, and the key counts as found.
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        self.key(key);
        let put_here = match self.pending_at.remove(&self.key) {
            Some(at) => {
                self.pending.swap_remove(at);
                if let Some((moved, _)) = self.pending.get(at) {
                    self.pending_at.insert(moved.clone(), at);
                }
                true
            }
            None => false,
        };
        match self.on_member(|m, k| m.delete(k, b""))? {
            0 if !put_here => Err(OpError::new(ErrorClass::NotFound, "etcd: no such key")),
            _ => Ok(()),
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        self.in_tx = false;
        let pending = std::mem::take(&mut self.pending);
        let result = match pending.as_slice() {
            // One put is a Put, as an etcd client sends it: as atomic as a Txn of one, and
            // cheaper for etcd (a Txn of one put cost it 1.10× the CPU of the Go client's Put and
            // answered 26-30 µs later at the p50, bench/etcd-clients.sh on 2026-11-27).
            [(key, value)] => self.on_member(|m, _| m.put(key, value)),
            _ => self.send_txns(&pending),
        };
        self.pending = pending;
        self.pending.clear();
        self.pending_at.clear();
        result
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}

#[cfg(test)]
mod tests;
