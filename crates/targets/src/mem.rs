//! `mem:` — an in-process hash map: the floor every other column is read against.
//!
//! No serialization, no I/O, no transactions: a put is visible at once, begin and commit do
//! nothing. The map is sharded (64 shards, each behind its own `RwLock`) so concurrent clients
//! rarely meet. It has no cache below it, so `cold` is not reachable.

use engine::clock::Clock;
use engine::driver::{
    ConfigError, DriverError, DriverInfo, ErrorClass, Family, Namespace, OpError, Session, Store,
    TargetConfig, TxMode,
};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Shards: enough that 2..64 clients seldom contend on one lock.
const SHARDS: usize = 64;

/// A sharded, thread-safe map from key to object; shared by `mem:` and `mock:`.
pub struct Shards {
    shards: [RwLock<FxHashMap<u64, Box<[u8]>>>; SHARDS],
}

impl Default for Shards {
    fn default() -> Self {
        Shards {
            shards: std::array::from_fn(|_| RwLock::default()),
        }
    }
}

fn poisoned() -> OpError {
    OpError::new(
        ErrorClass::Application,
        "a client panicked while holding the map",
    )
}

impl Shards {
    #[inline]
    fn shard(&self, key: u64) -> &RwLock<FxHashMap<u64, Box<[u8]>>> {
        // Keys differ in their low bits (object index): mix so each shard gets its share.
        let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58;
        &self.shards[h as usize % SHARDS]
    }

    pub fn put(&self, key: u64, value: &[u8]) -> Result<(), OpError> {
        let mut m = self.shard(key).write().map_err(|_| poisoned())?;
        match m.get_mut(&key) {
            Some(v) if v.len() == value.len() => v.copy_from_slice(value),
            _ => {
                m.insert(key, value.into());
            }
        }
        Ok(())
    }

    pub fn get(&self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        let m = self.shard(key).read().map_err(|_| poisoned())?;
        let v = m
            .get(&key)
            .ok_or_else(|| OpError::new(ErrorClass::NotFound, format!("key {key:#x}")))?;
        out.clear();
        out.extend_from_slice(v);
        Ok(())
    }

    pub fn delete(&self, key: u64) -> Result<(), OpError> {
        let mut m = self.shard(key).write().map_err(|_| poisoned())?;
        m.remove(&key)
            .map(|_| ())
            .ok_or_else(|| OpError::new(ErrorClass::NotFound, format!("key {key:#x}")))
    }

    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.read().map_or(0, |m| m.len()))
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub static INFO: DriverInfo = DriverInfo {
    scheme: "mem",
    query_options: true,
    summary: "in-process hash map; no I/O, no serialization: the floor to read other columns against",
    forms: &["mem:"],
    families: &[Family::Kv, Family::Graph],
    options: &[],
    clients: engine::driver::ClientModel::ThreadEach("in process: a lock per operation"),
};

/// Validates `rest` (what follows `mem:`) and the options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    crate::options::Opts::new("mem", options, INFO.options)?;
    if !rest.is_empty() {
        return Err(ConfigError::url("mem: takes no path").hint("write just mem:"));
    }
    Ok(Box::new(MemConfig))
}

struct MemConfig;

impl TargetConfig for MemConfig {
    fn durability(&self) -> String {
        "volatile".into()
    }
    fn options(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        Ok(Box::new(MemStore {
            map: Arc::new(Shards::default()),
        }))
    }
}

struct MemStore {
    map: Arc<Shards>,
}

impl Store for MemStore {
    fn namespace(&self) -> Namespace {
        Namespace {
            location: "process memory".into(),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("dyno".to_string(), env!("CARGO_PKG_VERSION").to_string())])
    }
    fn connect(&self, _: &Clock) -> Result<Box<dyn Session>, OpError> {
        Ok(Box::new(MemSession {
            map: self.map.clone(),
            reads: 0,
        }))
    }
    fn cold_unreachable(&self) -> Option<String> {
        Some("mem: the map in process memory is the storage itself; there is no cache below it to drop".into())
    }
    fn close(self: Box<Self>) -> Result<(), DriverError> {
        Ok(())
    }
}

struct MemSession {
    map: Arc<Shards>,
    reads: u64,
}

impl Session for MemSession {
    fn begin(&mut self, _: TxMode) -> Result<(), OpError> {
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        self.map.put(key, value)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        self.map.get(key, out)
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        self.map.delete(key)
    }
    fn commit(&mut self) -> Result<(), OpError> {
        Ok(())
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}
