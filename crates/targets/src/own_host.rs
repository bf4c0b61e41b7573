//! `host:` — dyno's own benchmark host, started by dyno for the run, reached in one topology:
//!
//! - `inproc`: the host's store called in this process: no serialization, no network;
//! - `loopback`: `dyno://` over 127.0.0.1 (serialization, the loopback stack);
//! - `lan` / `wan`: `dyno://` through the link emulator's presets (0.25 ms one way at 1 Gbit/s;
//!   20 ms ± 2 ms at 50 Mbit/s).
//!
//! `--topology inproc,loopback,lan,wan` runs one column per topology, and the report shows what
//! each step costs — MagmaBenchmarker's local / remote-loopback / LAN / internet, in one command.

use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    CacheDrop, ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError,
    OptionSpec, Session, Store, TargetConfig, TxMode,
};
use host::link::{Link, LinkSpec};
use host::store::{Objects, StoreServer};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::sync::Arc;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "host",
    query_options: true,
    summary: "dyno's own benchmark host, started for the run, reached inproc, over loopback, or through the link emulator (lan, wan)",
    forms: &["host:", "host:?topology=wan"],
    families: &[Family::Kv, Family::Graph, Family::Namespace],
    options: &[
        OptionSpec {
            name: "topology",
            default: "inproc",
            help: "inproc, loopback, lan or wan",
        },
        OptionSpec {
            name: "lan_delay",
            default: "250us",
            help: "lan: one-way delay",
        },
        OptionSpec {
            name: "lan_jitter",
            default: "0",
            help: "lan: each chunk's delay varies within ± this",
        },
        OptionSpec {
            name: "lan_rate",
            default: "1gbit",
            help: "lan: bandwidth cap per direction (0: none)",
        },
        OptionSpec {
            name: "wan_delay",
            default: "20ms",
            help: "wan: one-way delay",
        },
        OptionSpec {
            name: "wan_jitter",
            default: "2ms",
            help: "wan: each chunk's delay varies within ± this",
        },
        OptionSpec {
            name: "wan_rate",
            default: "50mbit",
            help: "wan: bandwidth cap per direction (0: none)",
        },
    ],
    clients: engine::driver::ClientModel::ThreadEach(
        "inproc: the host's store in this process, whose locks block the thread; over loopback, lan or wan, many per thread",
    ),
};

pub const TOPOLOGIES: &[&str] = &["inproc", "loopback", "lan", "wan"];

struct Config {
    topology: &'static str,
    /// The link of `lan` or `wan`.
    link: Option<LinkSpec>,
    resolved: BTreeMap<String, String>,
}

/// Validates the URL and options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("host", options, INFO.options)?;
    if !rest.is_empty() {
        return Err(
            ConfigError::url("host: takes no address: dyno starts the host itself")
                .hint("write host: (or dyno://HOST:PORT for a host you started)"),
        );
    }
    let t = o.choice("topology", TOPOLOGIES)?;
    let topology = TOPOLOGIES
        .iter()
        .find(|x| **x == t)
        .expect("a checked choice");
    let link = |prefix: &str| -> Result<LinkSpec, ConfigError> {
        let rate = |name: &str| {
            engine::units::parse_bitrate(o.text(name))
                .map_err(|e| ConfigError::option(name, e.to_string()))
        };
        let rate = rate(&format!("{prefix}_rate"))?;
        Ok(LinkSpec {
            delay: o.duration(&format!("{prefix}_delay"))?,
            jitter: o.duration(&format!("{prefix}_jitter"))?,
            rate_bits_per_s: (rate > 0).then_some(rate),
            seed: 1,
        })
    };
    // Both links are checked, whichever runs: a typo fails before anything starts.
    let (lan, wan) = (link("lan")?, link("wan")?);
    let link = match *topology {
        "lan" => Some(lan),
        "wan" => Some(wan),
        _ => None,
    };
    Ok(Box::new(Config {
        topology,
        link,
        resolved: o.resolved(),
    }))
}

fn io(context: &str) -> impl Fn(std::io::Error) -> DriverError + '_ {
    move |e| DriverError::new(format!("{context}: {e}"))
}

impl TargetConfig for Config {
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn durability(&self) -> String {
        match &self.link {
            Some(l) => format!(
                "volatile, {} ({} ± {} one way, {})",
                self.topology,
                humantime::format_duration(l.delay),
                humantime::format_duration(l.jitter),
                l.rate_bits_per_s.map_or_else(
                    || "no cap".to_string(),
                    |r| format!("{} Mbit/s", r / 1_000_000)
                )
            ),
            None => format!("volatile, {}", self.topology),
        }
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn topology(&self) -> &'static str {
        self.topology
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        if self.topology == "inproc" {
            return Ok(Box::new(InprocStore {
                objects: Arc::new(Objects::default()),
            }));
        }
        let bind = || TcpListener::bind("127.0.0.1:0").map_err(io("binding a loopback port"));
        let server =
            StoreServer::start(bind()?, Default::default()).map_err(io("starting the host"))?;
        let link = self
            .link
            .map(|spec| Link::start(bind()?, server.addr(), spec).map_err(io("starting the link")))
            .transpose()?;
        let addr = link.as_ref().map_or(server.addr(), |l| l.addr());
        let inner = crate::remote::store_at(addr, &addr.to_string(), None)?;
        Ok(Box::new(HostedStore {
            inner,
            topology: self.topology,
            _link: link,
            _server: server,
        }))
    }
}

/// A remote store whose host (and link) live as long as it does.
struct HostedStore {
    inner: Box<dyn Store>,
    topology: &'static str,
    // Dropped after `inner`: the namespace is dropped while the host still runs.
    _link: Option<Link>,
    _server: StoreServer,
}

impl Store for HostedStore {
    fn many_per_thread(&self) -> bool {
        self.inner.many_per_thread()
    }
    fn scans(&self) -> Result<(), String> {
        self.inner.scans()
    }
    fn namespace(&self) -> Namespace {
        let mut n = self.inner.namespace();
        n.location = format!("{} ({}, started by dyno)", n.location, self.topology);
        n
    }
    fn versions(&self) -> BTreeMap<String, String> {
        self.inner.versions()
    }
    fn connect(&self, clock: &Clock) -> Result<Box<dyn Session>, OpError> {
        self.inner.connect(clock)
    }
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        self.inner.drop_caches()
    }
    fn cold_unreachable(&self) -> Option<String> {
        self.inner.cold_unreachable()
    }
    fn server_stats(&self) -> Option<Result<Vec<engine::driver::ServerOp>, OpError>> {
        self.inner.server_stats()
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        let HostedStore { inner, .. } = *self;
        inner.close()
    }
}

/// The host's store, called in this process.
struct InprocStore {
    objects: Arc<Objects>,
}

fn op(e: std::io::Error) -> OpError {
    OpError::new(ErrorClass::Application, format!("host store: {e}"))
}

impl Store for InprocStore {
    fn scans(&self) -> Result<(), String> {
        Ok(())
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: "the host's store, in this process".into(),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("dyno".to_string(), env!("CARGO_PKG_VERSION").to_string())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        Ok(Box::new(InprocSession {
            objects: self.objects.clone(),
            reads: 0,
        }))
    }
    fn cold_unreachable(&self) -> Option<String> {
        Some(
            "host: the host keeps objects in process memory; there is no cache below it to drop"
                .into(),
        )
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        Ok(())
    }
}

struct InprocSession {
    objects: Arc<Objects>,
    reads: u64,
}

impl Session for InprocSession {
    fn begin(&mut self, _: TxMode) -> Result<(), OpError> {
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        self.objects.put(key, value).map_err(op)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        match self.objects.get(key, out).map_err(op)? {
            true => Ok(()),
            false => Err(no_key()),
        }
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        match self.objects.delete(key).map_err(op)? {
            true => Ok(()),
            false => Err(no_key()),
        }
    }
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        self.reads += keys.len() as u64;
        out.clear();
        ends.clear();
        let missing = self
            .objects
            .get_each(keys, |v| {
                out.extend_from_slice(v);
                ends.push(out.len());
            })
            .map_err(op)?;
        match missing {
            None => Ok(()),
            Some(_) => Err(no_key()),
        }
    }
    fn scan(
        &mut self,
        start: u64,
        count: usize,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), OpError> {
        self.reads += 1;
        out.clear();
        self.objects
            .scan(start, count, |k, v| out.push((k, v.to_vec())))
            .map_err(op)
    }
    fn commit(&mut self) -> Result<(), OpError> {
        Ok(())
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
    fn mkdir(&mut self, path: &str) -> Result<(), OpError> {
        self.objects.mkdir(path).map_err(|e| tree_err(e, path))
    }
    fn stat(&mut self, path: &str) -> Result<(), OpError> {
        self.objects.stat(path).map_err(|e| tree_err(e, path))
    }
    fn list(&mut self, path: &str, out: &mut Vec<String>) -> Result<(), OpError> {
        out.clear();
        self.objects
            .list(path, |n| out.push(n.to_string()))
            .map_err(|e| tree_err(e, path))
    }
    fn rmdir(&mut self, path: &str) -> Result<(), OpError> {
        self.objects.rmdir(path).map_err(|e| tree_err(e, path))
    }
}

fn no_key() -> OpError {
    OpError::new(ErrorClass::NotFound, "the host has no such key")
}

/// A folder operation's failure, classed as the `dyno://` driver classes the host's answers.
fn tree_err(e: host::store::TreeError, path: &str) -> OpError {
    let class = match e {
        host::store::TreeError::NotFound => ErrorClass::NotFound,
        _ => ErrorClass::Application,
    };
    OpError::new(class, e.message(path))
}
