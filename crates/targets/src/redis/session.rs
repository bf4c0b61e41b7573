//! The store and its sessions: each operation one or a few commands on the session's connection; with Sentinel, the primary followed after a failover.

use super::*;

pub(super) struct RedisStore {
    pub(super) config: Config,
    pub(super) addr: SocketAddr,
    pub(super) prefix: String,
    /// Whether closing deletes the keys (not on a shard other than rank 0).
    pub(super) owner: bool,
    pub(super) version: String,
    /// Behind Sentinel: the sessions' reconnections after a failover, and how long each took.
    pub(super) reconnects: Arc<crate::net::Reconnects>,
    /// Set by a run that scans: every write also names its key in a sorted set (`PREFIX#index`,
    /// all scores 0), so `ZRANGEBYLEX` reads keys in order — YCSB's redis binding keeps such an
    /// index too. Off otherwise: no other run pays for it.
    pub(super) indexed: Arc<std::sync::atomic::AtomicBool>,
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
        let index = (self.indexed.load(Ordering::Relaxed))
            .then(|| format!("{}#index", self.prefix).into_bytes());
        let session = RedisSession::new(conn, &self.prefix, index);
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
        // Bounded: a SCAN pass over a keyspace ends, and dyno made a finite number of keys; and
        // in time, for a server that answers each request just in time, for ever.
        let mut bound = engine::fiber::Bound::new(CLOSE_WITHIN);
        for _ in 0..1_000_000 {
            if bound.passed() {
                return Err(DriverError::new(format!(
                    "removing {}*: not done within {} s",
                    self.prefix,
                    CLOSE_WITHIN.as_secs()
                )));
            }
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
            // COUNT is a hint, which a server may pass; not by this much.
            let n = match c.reply(&mut buf).map_err(fail)? {
                Reply::Array(n) if (0..=SCAN_MOST).contains(&n) => n,
                _ => return Err(DriverError::new("SCAN gave an unexpected reply")),
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

pub(super) struct RedisSession {
    pub(super) conn: Conn,
    /// The key being sent: the prefix, then 16 hex digits.
    pub(super) key: Vec<u8>,
    pub(super) prefix_len: usize,
    pub(super) scratch: Vec<u8>,
    /// A write transaction is open: MULTI and its commands are held in the connection's
    /// frame and sent together with EXEC (one round trip, as a pipelining client sends them),
    /// or in parts of [`HOLD_BYTES`] for a large one.
    pub(super) in_multi: bool,
    /// Commands queued in the current MULTI (EXEC answers as many).
    pub(super) queued: u64,
    /// Answers owed for what was held: MULTI's `+OK`, then a `+QUEUED` per command.
    pub(super) owed: u64,
    /// The first command of the current MULTI the server refused to queue (EXEC then aborts).
    pub(super) refused: Option<String>,
    /// The open write transaction's commands were lost (an error while sending them, or the
    /// connection moved to a new primary): its writes and its commit fail until the next
    /// `begin`, rather than the rest going out as plain writes and the commit succeeding.
    pub(super) cut: bool,
    /// The server has accepted a MULTI on this session. The first is sent and answered alone,
    /// so that a server (or a proxy, or a user's ACL) refusing MULTI fails `begin` before any
    /// write goes; the later ones go unanswered until EXEC.
    pub(super) multi_known: bool,
    /// Where the current MULTI's DELs are in its queue: their answers come with EXEC's, and a
    /// DEL that found no key makes the commit `not_found`.
    pub(super) deletes: Vec<u64>,
    pub(super) reads: u64,
    /// The store's sorted-set index, when a scanning run started it.
    pub(super) index: Option<Vec<u8>>,
}

impl RedisSession {
    /// A session on `conn` for keys under `prefix`, keeping the sorted-set `index` when given.
    pub(super) fn new(conn: Conn, prefix: &str, index: Option<Vec<u8>>) -> RedisSession {
        RedisSession {
            conn,
            key: prefix.as_bytes().to_vec(),
            prefix_len: prefix.len(),
            scratch: Vec::new(),
            in_multi: false,
            queued: 0,
            owed: 0,
            refused: None,
            cut: false,
            multi_known: false,
            deletes: Vec::new(),
            reads: 0,
            index,
        }
    }

    pub(super) fn set_key(&mut self, key: u64) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.key.truncate(self.prefix_len);
        for i in 0..16 {
            self.key.push(HEX[((key >> (60 - 4 * i)) & 0xF) as usize]);
        }
    }

    /// Reads the answer to a command sent outside MULTI.
    pub(super) fn expect(&mut self, ok: fn(&Reply) -> bool) -> Result<(), OpError> {
        match self.conn.reply(&mut self.scratch)? {
            r if ok(&r) => Ok(()),
            Reply::Error(e) => Err(OpError::new(ErrorClass::Application, format!("redis: {e}"))),
            _ => Err(self.conn.off_step(protocol("an unexpected reply"))),
        }
    }

    /// Counts `n` commands just pushed into the open MULTI; sends what is held once it passes
    /// [`HOLD_BYTES`]. Should that fail, the transaction is cut.
    fn hold(&mut self, n: u64) -> Result<(), OpError> {
        self.queued += n;
        self.owed += n;
        if self.conn.frame.len() >= HOLD_BYTES
            && let Err(e) = self.settle()
        {
            (self.in_multi, self.cut) = (false, true);
            return Err(e);
        }
        Ok(())
    }

    /// Sends what the MULTI holds and reads the answers owed for it, keeping the first
    /// refusal for the commit.
    fn settle(&mut self) -> Result<(), OpError> {
        let owed = std::mem::take(&mut self.owed);
        self.conn.send()?;
        for _ in 0..owed {
            match self.conn.reply(&mut self.scratch)? {
                Reply::Status => {}
                Reply::Error(e) => {
                    self.refused.get_or_insert(e);
                }
                _ => {
                    return Err(self
                        .conn
                        .off_step(protocol("an unexpected reply inside MULTI")));
                }
            }
        }
        Ok(())
    }

    /// A read inside MULTI would only be queued, its value coming with EXEC's answer.
    fn no_read_in_multi(&self) -> Result<(), OpError> {
        if self.in_multi {
            return Err(OpError::new(
                ErrorClass::Application,
                "redis: a read inside MULTI would only be queued",
            ));
        }
        Ok(())
    }
}

/// What an open MULTI holds before it is sent ahead of its EXEC: a transaction of many writes
/// keeps a bounded buffer per client, and the server's answers to it are read as it goes. The
/// frame keeps its capacity, and on io_uring the stream's outbox holds a copy: the Redis
/// shootout with 50 clients (`bench/db-clients.sh`) peaked at 55 MiB with 256 KiB held, 36 MiB
/// with 64 KiB, 33 MiB with 16 KiB (31 MiB on epoll).
pub(super) const HOLD_BYTES: usize = 16 << 10;

/// How long removing dyno's keys at the end may take, all told.
const CLOSE_WITHIN: std::time::Duration = std::time::Duration::from_secs(600);

/// The most keys one SCAN reply (asked for COUNT 1000) may hold.
const SCAN_MOST: i64 = 100_000;

/// A write of a transaction whose commands were lost with its connection: none of them was
/// applied (a MULTI without its EXEC is dropped with the connection).
pub(super) fn cut() -> OpError {
    OpError::new(
        ErrorClass::Reset,
        "redis: the transaction's commands were lost with its connection; none was applied",
    )
}

impl Session for RedisSession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        self.cut = false;
        if mode == TxMode::Write {
            if self.in_multi {
                return Err(OpError::new(
                    ErrorClass::Application,
                    "redis: a write transaction is already open",
                ));
            }
            if self.multi_known {
                self.conn.push(&[b"MULTI"]);
                self.owed = 1;
            } else {
                self.conn.command(&[b"MULTI"])?;
                self.conn.expect_ok(&mut self.scratch)?;
                (self.multi_known, self.owed) = (true, 0);
            }
            (self.in_multi, self.queued, self.refused) = (true, 0, None);
            self.deletes.clear();
        }
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        if self.cut {
            return Err(cut());
        }
        self.set_key(key);
        if self.in_multi {
            self.conn.push(&[b"SET", &self.key, value]);
            if let Some(index) = &self.index {
                self.conn.push(&[b"ZADD", index, b"0", &self.key]);
            }
            return self.hold(1 + u64::from(self.index.is_some()));
        }
        self.conn.command(&[b"SET", &self.key, value])?;
        self.expect(|r| matches!(r, Reply::Status))?;
        if let Some(index) = &self.index {
            self.conn.command(&[b"ZADD", index, b"0", &self.key])?;
            self.expect(|r| matches!(r, Reply::Int(_)))?;
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
        self.no_read_in_multi()?;
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
            Reply::Array(n) if (0..=count as i64).contains(&n) => n as usize,
            Reply::Array(n) => {
                return Err(self.conn.off_step(OpError::new(
                    ErrorClass::Protocol,
                    format!("redis: {n} entries in the reply to ZRANGEBYLEX … LIMIT 0 {count}"),
                )));
            }
            Reply::Error(e) => {
                return Err(OpError::new(ErrorClass::Application, format!("redis: {e}")));
            }
            _ => {
                return Err(self
                    .conn
                    .off_step(protocol("an unexpected reply to ZRANGEBYLEX")));
            }
        };
        let mut keys = Vec::with_capacity(n);
        for _ in 0..n {
            match self.conn.reply(&mut self.scratch)? {
                Reply::Bulk(true) => {
                    let hex = self.scratch.get(self.prefix_len..).unwrap_or_default();
                    let key = std::str::from_utf8(hex)
                        .ok()
                        .and_then(|h| u64::from_str_radix(h, 16).ok());
                    let Some(key) = key else {
                        let e = protocol("an index entry that is not one of dyno's keys");
                        return Err(self.conn.off_step(e));
                    };
                    keys.push(key);
                }
                _ => {
                    let e = protocol("an unexpected element in the reply to ZRANGEBYLEX");
                    return Err(self.conn.off_step(e));
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
        self.no_read_in_multi()?;
        self.reads += 1;
        self.set_key(key);
        self.conn.command(&[b"GET", &self.key])?;
        match self.conn.reply(out)? {
            Reply::Bulk(true) => Ok(()),
            Reply::Bulk(false) => Err(OpError::new(ErrorClass::NotFound, "redis: no such key")),
            Reply::Error(e) => Err(OpError::new(ErrorClass::Application, format!("redis: {e}"))),
            _ => Err(self.conn.off_step(protocol("an unexpected reply to GET"))),
        }
    }
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        self.no_read_in_multi()?;
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
            _ => return Err(self.conn.off_step(protocol("an unexpected reply to MGET"))),
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
                _ => {
                    return Err(self
                        .conn
                        .off_step(protocol("an unexpected element in the reply to MGET")));
                }
            }
        }
        if missing {
            return Err(OpError::new(ErrorClass::NotFound, "redis: no such key"));
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        if self.cut {
            return Err(cut());
        }
        self.set_key(key);
        // Out of the index first: a scan never names a key that is gone.
        if self.in_multi {
            if let Some(index) = &self.index {
                self.conn.push(&[b"ZREM", index, &self.key]);
            }
            self.conn.push(&[b"DEL", &self.key]);
            let n = 1 + u64::from(self.index.is_some());
            self.deletes.push(self.queued + n - 1);
            return self.hold(n);
        }
        if let Some(index) = &self.index {
            self.conn.command(&[b"ZREM", index, &self.key])?;
            self.expect(|r| matches!(r, Reply::Int(_)))?;
        }
        self.conn.command(&[b"DEL", &self.key])?;
        match self.conn.reply(&mut self.scratch)? {
            Reply::Int(1) => Ok(()),
            Reply::Int(0) => Err(OpError::new(ErrorClass::NotFound, "redis: no such key")),
            Reply::Error(e) => Err(OpError::new(ErrorClass::Application, format!("redis: {e}"))),
            _ => Err(self.conn.off_step(protocol("an unexpected reply to DEL"))),
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        if std::mem::take(&mut self.cut) {
            return Err(cut());
        }
        if !self.in_multi {
            return Ok(());
        }
        self.in_multi = false;
        self.conn.push(&[b"EXEC"]);
        self.settle()?;
        let refused = self.refused.take();
        match self.conn.reply(&mut self.scratch)? {
            Reply::Array(n) if n as u64 == self.queued => {
                let (mut failed, mut missing) = (None, false);
                // Every answer is read, so the connection stays in step.
                for at in 0..n as u64 {
                    match self.conn.reply(&mut self.scratch)? {
                        Reply::Error(e) => {
                            failed.get_or_insert(e);
                        }
                        Reply::Int(0) => missing |= self.deletes.contains(&at),
                        _ => {}
                    }
                }
                match failed {
                    Some(e) => Err(OpError::new(
                        ErrorClass::Application,
                        format!("redis: EXEC: {e}"),
                    )),
                    None if missing => Err(OpError::new(
                        ErrorClass::NotFound,
                        "redis: a delete in the transaction found no such key (its answer \
                         comes with EXEC's)",
                    )),
                    None => Ok(()),
                }
            }
            Reply::Array(_) => Err(self
                .conn
                .off_step(protocol("EXEC answered a different number of replies"))),
            Reply::Error(e) => Err(OpError::new(
                ErrorClass::Application,
                match refused {
                    Some(r) => format!("redis: EXEC: {e} (a command was refused: {r})"),
                    None => format!("redis: EXEC: {e}"),
                },
            )),
            _ => Err(self.conn.off_step(protocol("an unexpected reply to EXEC"))),
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
pub(super) struct Following {
    pub(super) inner: RedisSession,
    pub(super) config: Config,
    pub(super) broken: bool,
    pub(super) reconnects: Arc<crate::net::Reconnects>,
}

/// One attempt: the primary the sentinels name now, connected.
pub(super) fn reach(config: &Config) -> Result<Conn, OpError> {
    (config.addr())
        .map_err(|e| OpError::new(ErrorClass::Refused, e.to_string()))
        .and_then(|a| Conn::open(a, config.password.as_deref()))
}

/// Asks the sentinels again and again until the primary they name accepts: a reconnection,
/// counted and timed in `reconnects` ([`crate::net::Reconnects::follow`]).
pub(super) fn follow(
    config: &Config,
    reconnects: &crate::net::Reconnects,
) -> Result<Conn, OpError> {
    reconnects.follow(|| reach(config))
}

impl Following {
    /// Connects to the primary of the moment if the last operation broke the connection.
    pub(super) fn ensure(&mut self) -> Result<(), OpError> {
        if self.broken {
            self.inner.conn = follow(&self.config, &self.reconnects)?;
            // A write transaction open on the old connection is lost with it.
            self.inner.cut |= self.inner.in_multi;
            (self.inner.in_multi, self.inner.owed) = (false, 0);
            self.broken = false;
        }
        Ok(())
    }

    /// A write of a cut transaction fails here, apart from `watch`: the connection it
    /// names as lost has already been replaced.
    fn not_cut(&self) -> Result<(), OpError> {
        if self.inner.cut { Err(cut()) } else { Ok(()) }
    }

    /// Marks the session broken when `r` failed on the connection or hit a replica.
    pub(super) fn watch<T>(&mut self, r: Result<T, OpError>) -> Result<T, OpError> {
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
        self.not_cut()?;
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
        self.not_cut()?;
        let r = self.inner.delete(key);
        self.watch(r)
    }
    fn commit(&mut self) -> Result<(), OpError> {
        self.ensure()?;
        if std::mem::take(&mut self.inner.cut) {
            return Err(cut());
        }
        let r = self.inner.commit();
        self.watch(r)
    }
    fn storage_reads(&self) -> u64 {
        self.inner.reads
    }
}
