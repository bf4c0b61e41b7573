//! `mock:` — a target whose latencies and failures are set by options, for exact tests.
//!
//! It stores objects for real (in the same sharded map as `mem:`), so reads are verified like any
//! target's, but time is virtual by default: each operation advances the client's clock by exactly
//! the configured latency and nothing sleeps, so rates and percentiles come out exact and a test
//! with a 1 s latency takes microseconds. `clock=real` sleeps instead (for Ctrl-C tests).
//!
//! `mock:?latency=100us&slow_every=100&slow_latency=10ms&fail_every=50&fail_class=timeout&cold=na`
//!
//! `corrupt_every=N` hands back a damaged copy on every Nth read of a session, to prove that dyno
//! checks what it reads.

use crate::mem::Shards;
use crate::options::Opts;
use engine::clock::Clock;
use engine::driver::{
    CacheDrop, ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError,
    OptionSpec, Session, Store, TargetConfig, TxMode,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub static INFO: DriverInfo = DriverInfo {
    scheme: "mock",
    query_options: true,
    summary: "simulated target: exact latencies and failures from options, on a virtual clock",
    forms: &["mock:", "mock:?latency=100us&fail_every=100"],
    families: &[Family::Kv, Family::Graph],
    options: &[
        OptionSpec {
            name: "latency",
            default: "0",
            help: "time every operation takes",
        },
        OptionSpec {
            name: "get_latency",
            default: "",
            help: "time a get takes (default: latency)",
        },
        OptionSpec {
            name: "put_latency",
            default: "",
            help: "time a put takes (default: latency)",
        },
        OptionSpec {
            name: "commit_latency",
            default: "0",
            help: "time begin + commit take",
        },
        OptionSpec {
            name: "jitter",
            default: "0%",
            help: "each operation's time drawn uniformly within ±this of its latency, e.g. 20% (seeded: noise that repeats)",
        },
        OptionSpec {
            name: "seed",
            default: "1",
            help: "seed of the jitter (each session draws from its own stream of it)",
        },
        OptionSpec {
            name: "slow_every",
            default: "0",
            help: "every Nth operation of a session is slow (0: never)",
        },
        OptionSpec {
            name: "slow_latency",
            default: "0",
            help: "time a slow operation takes",
        },
        OptionSpec {
            name: "fail_every",
            default: "0",
            help: "every Nth operation of a session fails (0: never)",
        },
        OptionSpec {
            name: "fail_class",
            default: "io",
            help: "error class of those failures",
        },
        OptionSpec {
            name: "panic_every",
            default: "0",
            help: "every Nth operation of a session panics, as a buggy driver would (0: never)",
        },
        OptionSpec {
            name: "corrupt_every",
            default: "0",
            help: "every Nth get of a session returns a damaged copy (0: never)",
        },
        OptionSpec {
            name: "stale_every",
            default: "0",
            help: "every Nth get of a session returns the key's value before its last write, when it had one: a stale read (0: never)",
        },
        OptionSpec {
            name: "lose_every",
            default: "0",
            help: "every Nth put of a session is acknowledged and not stored: a lost write (0: never)",
        },
        OptionSpec {
            name: "cold",
            default: "ok",
            help: "ok, or na: the cold state is unreachable",
        },
        OptionSpec {
            name: "clock",
            default: "virtual",
            help: "virtual (exact, instant) or real (sleeps)",
        },
    ],
    clients: engine::driver::ClientModel::ManyPerThread,
};

#[derive(Debug, Clone)]
struct MockParams {
    get_ns: u64,
    put_ns: u64,
    commit_ns: u64,
    /// ±this fraction of an operation's latency, drawn per operation.
    jitter: f64,
    seed: u64,
    slow_every: u64,
    slow_ns: u64,
    fail_every: u64,
    fail_class: ErrorClass,
    corrupt_every: u64,
    stale_every: u64,
    lose_every: u64,
    panic_every: u64,
    cold_na: bool,
    real_clock: bool,
    resolved: BTreeMap<String, String>,
}

/// Validates `rest` (what follows `mock:`) and the options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    if !rest.is_empty() {
        return Err(ConfigError::url("mock: takes no path, only options")
            .hint("write e.g. mock:?latency=100us"));
    }
    let o = Opts::new("mock", options, INFO.options)?;
    let ns = |name: &str| -> Result<u64, ConfigError> { Ok(o.duration(name)?.as_nanos() as u64) };
    let latency = ns("latency")?;
    let or_latency = |name: &str| -> Result<u64, ConfigError> {
        if o.text(name).is_empty() {
            Ok(latency)
        } else {
            ns(name)
        }
    };
    Ok(Box::new(MockConfig(MockParams {
        get_ns: or_latency("get_latency")?,
        put_ns: or_latency("put_latency")?,
        commit_ns: ns("commit_latency")?,
        jitter: fraction(&o, "jitter")?,
        seed: o.count("seed")?,
        slow_every: o.count("slow_every")?,
        slow_ns: ns("slow_latency")?,
        fail_every: o.count("fail_every")?,
        fail_class: o.error_class("fail_class")?,
        corrupt_every: o.count("corrupt_every")?,
        stale_every: o.count("stale_every")?,
        lose_every: o.count("lose_every")?,
        panic_every: o.count("panic_every")?,
        cold_na: o.choice("cold", &["ok", "na"])? == "na",
        real_clock: o.choice("clock", &["virtual", "real"])? == "real",
        resolved: o.resolved(),
    })))
}

/// A fraction written as a percentage below 100 (`20%`) or a number below 1 (`0.2`).
fn fraction(o: &Opts, name: &str) -> Result<f64, ConfigError> {
    let text = o.text(name).trim();
    let v = match text.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => text.parse::<f64>(),
    };
    v.ok().filter(|v| (0.0..1.0).contains(v)).ok_or_else(|| {
        ConfigError::option(
            name,
            format!("{text:?} is not a fraction below 1; write e.g. 20% or 0.2"),
        )
    })
}

struct MockConfig(MockParams);

impl TargetConfig for MockConfig {
    fn durability(&self) -> String {
        "simulated".into()
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.0.resolved.clone()
    }
    fn virtual_time(&self) -> bool {
        !self.0.real_clock
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        Ok(Box::new(MockStore {
            params: Arc::new(self.0.clone()),
            map: Arc::new(Shards::default()),
            before: (self.0.stale_every > 0).then(|| Arc::new(Shards::default())),
            sessions: AtomicU64::new(0),
        }))
    }
}

struct MockStore {
    params: Arc<MockParams>,
    map: Arc<Shards>,
    /// `stale_every`: each key's value before its last write.
    before: Option<Arc<Shards>>,
    /// Sessions opened: each draws its jitter from stream `seed + n`.
    sessions: AtomicU64,
}

impl Store for MockStore {
    /// A mock session never blocks its thread (a virtual clock only counts; a real one sleeps
    /// through the fiber-aware clock), so the engine's exact tests run its clients as fibers.
    fn many_per_thread(&self) -> bool {
        true
    }
    fn namespace(&self) -> Namespace {
        Namespace {
            location: "process memory (mock)".into(),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("dyno".to_string(), env!("CARGO_PKG_VERSION").to_string())])
    }
    fn connect(&self, clock: &Clock) -> Result<Box<dyn Session>, OpError> {
        Ok(Box::new(MockSession {
            params: self.params.clone(),
            map: self.map.clone(),
            before: self.before.clone(),
            clock: clock.clone(),
            ops: 0,
            reads: 0,
            puts: 0,
            // SplitMix64 streams, one per session, from the seed.
            draws: (self.params.seed)
                .wrapping_add(self.sessions.fetch_add(1, Ordering::Relaxed))
                .wrapping_mul(0x9E37_79B9_7F4A_7C15),
        }))
    }
    fn drop_caches(&self) -> Result<CacheDrop, OpError> {
        Ok(match self.cold_unreachable() {
            Some(why) => CacheDrop::NotReachable(why),
            None => CacheDrop::Done("mock: simulated storage cache dropped".into()),
        })
    }
    fn cold_unreachable(&self) -> Option<String> {
        self.params
            .cold_na
            .then(|| "mock: configured with cold=na".into())
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        Ok(())
    }
}

struct MockSession {
    params: Arc<MockParams>,
    map: Arc<Shards>,
    before: Option<Arc<Shards>>,
    clock: Clock,
    ops: u64,
    reads: u64,
    puts: u64,
    /// The jitter's generator state (SplitMix64).
    draws: u64,
}

impl MockSession {
    /// Spends an operation's time; says whether it must fail.
    fn spend(&mut self, normal_ns: u64) -> Result<(), OpError> {
        self.ops += 1;
        let p = &self.params;
        let slow = p.slow_every > 0 && self.ops.is_multiple_of(p.slow_every);
        let ns = if slow { p.slow_ns } else { normal_ns };
        let ns = if p.jitter > 0.0 {
            let u = results::rng::unit(&mut self.draws);
            (ns as f64 * (1.0 + p.jitter * (2.0 * u - 1.0))).round() as u64
        } else {
            ns
        };
        self.clock.advance(ns);
        if p.panic_every > 0 && self.ops.is_multiple_of(p.panic_every) {
            panic!(
                "mock: operation {} panics (panic_every={})",
                self.ops, p.panic_every
            );
        }
        if p.fail_every > 0 && self.ops.is_multiple_of(p.fail_every) {
            return Err(OpError::new(
                p.fail_class,
                format!(
                    "mock: operation {} fails (fail_every={})",
                    self.ops, p.fail_every
                ),
            ));
        }
        Ok(())
    }
}

impl Session for MockSession {
    fn begin(&mut self, _: TxMode) -> Result<(), OpError> {
        self.clock.advance(self.params.commit_ns / 2);
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        self.spend(self.params.put_ns)?;
        self.puts += 1;
        if self.params.lose_every > 0 && self.puts.is_multiple_of(self.params.lose_every) {
            return Ok(());
        }
        if let Some(before) = &self.before {
            let mut old = Vec::new();
            if self.map.get(key, &mut old).is_ok() {
                before.put(key, &old)?;
            }
        }
        self.map.put(key, value)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        self.spend(self.params.get_ns)?;
        let every = self.params.stale_every;
        let stale = every > 0 && self.reads.is_multiple_of(every);
        match &self.before {
            Some(before) if stale && before.get(key, out).is_ok() => {}
            _ => self.map.get(key, out)?,
        }
        let every = self.params.corrupt_every;
        if every > 0 && self.reads.is_multiple_of(every) {
            // Damage the copy, never the stored object: flip the first byte of its version.
            if let Some(b) = out.get_mut(8) {
                *b ^= 0xFF;
            }
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        self.spend(self.params.put_ns)?;
        self.map.delete(key)
    }
    fn commit(&mut self) -> Result<(), OpError> {
        self.clock
            .advance(self.params.commit_ns - self.params.commit_ns / 2);
        Ok(())
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}
