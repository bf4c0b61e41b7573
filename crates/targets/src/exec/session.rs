//! The store and its sessions: each operation a request to the adapter, its reply read back.

use super::*;

pub(super) struct ExecStore {
    pub(super) config: Config,
    /// The store's own adapter process (namespace, caches), used by one call at a time.
    pub(super) store: std::sync::Mutex<Adapter>,
    pub(super) namespace: String,
    pub(super) hello: Hello,
    /// Sessions open now (checked against the adapter's `sessions`).
    pub(super) open_sessions: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
    fn reads_heads(&self) -> bool {
        self.hello.ops.iter().any(|o| o == "get_heads")
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
            binary_get_many: true,
            get_heads: hello.ops.iter().any(|o| o == "get_heads"),
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
pub(super) const NOT_SUPPORTED: &str = "not supported: ";

/// One open session counted by its store; the count goes down when the session is dropped.
pub(super) struct SessionSlot(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Drop for SessionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

pub(super) struct ExecSession {
    // Dropped after `a` (fields drop in order): the adapter process is closed first.
    pub(super) a: Adapter,
    pub(super) get_many: bool,
    /// `get_many` in a binary frame (until the adapter says it has no such frame).
    pub(super) binary_get_many: bool,
    /// The adapter reads each value's length and first bytes only (`get_heads`).
    pub(super) get_heads: bool,
    pub(super) scan: bool,
    pub(super) counts: bool,
    pub(super) reads: u64,
    pub(super) _slot: SessionSlot,
}

impl ExecSession {
    /// Counts the storage reads a read's reply reports (or one per key, `keys`, when the
    /// adapter does not count them).
    pub(super) fn add_reads(&mut self, reads: u64, keys: usize) {
        self.reads += if self.counts { reads } else { keys as u64 };
    }

    /// Counts the storage reads a JSON read reply reports (or one per key).
    pub(super) fn count(&mut self, reply: &Value, keys: usize) {
        let reads = reply.get("storage_reads").and_then(Value::as_u64);
        self.add_reads(reads.unwrap_or(0), keys);
    }
}

pub(super) fn b64(v: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(v)
}

impl ExecSession {
    /// A binary request whose reply is `OK`.
    pub(super) fn bin_ok(&mut self, kind: u8, parts: &[&[u8]]) -> Result<(), OpError> {
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
            out.clear();
            out.extend_from_slice(&b[4..]);
            self.add_reads(u64::from(reads), 1);
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
        self.read_values(keys, out, ends)
    }
    fn get_heads(
        &mut self,
        keys: &[u64],
        head: usize,
        out: &mut engine::graph::Heads,
    ) -> Result<(), OpError> {
        if !self.get_heads {
            return engine::driver::get_heads_whole(self, keys, head, out);
        }
        self.read_heads(keys, head, out)
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

pub(super) fn decode_into(text: &str, out: &mut Vec<u8>) -> Result<(), base64::DecodeError> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode_vec(text, out)
}
