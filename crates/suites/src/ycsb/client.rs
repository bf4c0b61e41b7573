//! A YCSB client: its keys and records, the operations of a workload drawn by YCSB's generators, every read checked, its figures.

use super::*;

/// A record's key in the store: YCSB's hashed insert order.
pub fn key(keynum: i64) -> u64 {
    keys::fnvhash64(keynum) as u64
}

/// Record `keynum` at `version`: both numbers, then bytes that follow from them.
pub(super) fn record(keynum: i64, version: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&keynum.to_le_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    let seed = (keynum as u64).wrapping_mul(31).wrapping_add(version);
    out.extend((16..RECORD).map(|i| b'a' + ((seed.wrapping_add(i as u64)) % 26) as u8));
}

/// Whether `v` is record `keynum` at some version, whole and undamaged.
pub(super) fn check(keynum: i64, v: &[u8], scratch: &mut Vec<u8>) -> Result<(), OpError> {
    let bad = |why: String| OpError::new(ErrorClass::Corrupt, format!("record {keynum}: {why}"));
    if v.len() != RECORD {
        return Err(bad(format!(
            "read {} bytes, a record has {RECORD}",
            v.len()
        )));
    }
    let got = i64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
    if got != keynum {
        return Err(bad(format!("read record {got}'s bytes")));
    }
    let version = u64::from_le_bytes(v[8..16].try_into().expect("8 bytes"));
    record(keynum, version, scratch);
    if scratch != v {
        return Err(bad(format!("version {version}'s bytes are damaged")));
    }
    Ok(())
}

pub(super) fn read(
    s: &mut dyn Session,
    keynum: i64,
    buf: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<u64, OpError> {
    crate::get_tx(s, key(keynum), buf)?;
    check(keynum, buf, scratch).map(|()| buf.len() as u64)
}

/// Workload e's scan lengths: YCSB's uniform `1..=maxscanlength` (100 in workloade).
pub(super) const SCAN_LENGTH: Uniform = Uniform::new(1, 100);

/// A scan of `len` records from record `keynum`'s key, each record checked against its key.
pub(super) fn scan(
    s: &mut dyn Session,
    keynum: i64,
    len: usize,
    rows: &mut Vec<(u64, Vec<u8>)>,
    scratch: &mut Vec<u8>,
) -> Result<u64, OpError> {
    s.begin(TxMode::Read)?;
    s.scan(key(keynum), len, rows)?;
    s.commit()?;
    let mut bytes = 0;
    for (k, v) in rows.iter() {
        let n = v
            .get(..8)
            .map_or(-1, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")));
        if key(n) != *k {
            return Err(OpError::new(
                ErrorClass::Corrupt,
                format!("scan from record {keynum}: key {k:#x} holds record {n}'s bytes"),
            ));
        }
        check(n, v, scratch)?;
        bytes += v.len() as u64;
    }
    Ok(bytes)
}

pub(super) fn write(s: &mut dyn Session, keynum: i64, value: &[u8]) -> Result<u64, OpError> {
    crate::put_tx(s, key(keynum), value).map(|()| value.len() as u64)
}

/// A workload's key chooser, one per client.
pub(super) enum Chooser {
    Zipfian(ScrambledZipfian),
    Exact(std::sync::Arc<keys::ExactZipf>),
    Latest(SkewedLatest),
    Uniform(Uniform),
}

/// What the clients of one workload share: the acknowledged-insert counter, and its limit
/// published for the reads every operation makes (YCSB's volatile `limit`): no lock but an
/// insert's.
pub(super) struct Shared {
    pub(super) inserts: Mutex<Acknowledged>,
    pub(super) last: AtomicI64,
}

impl Shared {
    pub(super) fn new(records: i64) -> Shared {
        let a = Acknowledged::new(records);
        Shared {
            last: AtomicI64::new(a.last()),
            inserts: Mutex::new(a),
        }
    }

    pub(super) fn last(&self) -> i64 {
        self.last.load(Ordering::Acquire)
    }

    /// The next insert's key number.
    pub(super) fn issue(&self) -> Option<i64> {
        self.inserts.lock().ok().map(|mut a| a.issue())
    }

    pub(super) fn acknowledge(&self, keynum: i64) {
        if let Ok(mut a) = self.inserts.lock() {
            a.acknowledge(keynum);
            self.last.store(a.last(), Ordering::Release);
        }
    }
}

/// One client of one workload.
pub(super) struct Client<'a> {
    pub(super) workload: &'a Workload,
    pub(super) shared: &'a Shared,
    pub(super) records: i64,
    /// The shard this client runs in (0 of 1 alone): where its inserts are numbered.
    pub(super) shard: Shard,
    pub(super) operations: u64,
    pub(super) draws: SplitMix,
    /// Per kind, in [`Op`]'s order, then the reads and updates of read-modify-writes.
    pub(super) rec: Recs,
    /// Keys drawn, for the skew report.
    pub(super) drawn: BTreeMap<i64, u64>,
    /// Each scan's length, for the record's check of their distribution.
    pub(super) scan_lengths: Vec<u32>,
    /// `zipf = "exact:θ"`: the true Zipf the zipfian workloads draw from (shared).
    pub(super) exact: Option<std::sync::Arc<keys::ExactZipf>>,
    pub(super) corrupt: Option<String>,
    /// `--check`: its operations, each key a register of the records' versions.
    pub(super) history: Option<crate::history::Local>,
}

/// A scan's rows: each key with its record's bytes.
pub(super) type ScanRows = [(u64, Vec<u8>)];

/// The version a record's bytes hold.
pub(super) fn version_of(v: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(v.get(8..16)?.try_into().ok()?))
}

/// Adds operation `op` on record `keynum` (invoked at `h0`) to `history`: what a read saw (in
/// `buf`) or a scan (in `rows`), what a write wrote (in `val`); a read-modify-write is a read
/// and a write, each anywhere within the whole.
pub(super) fn note(
    history: &mut crate::history::Local,
    (op, keynum, h0): (Op, i64, u64),
    outcome: &Result<u64, OpError>,
    (buf, val, rows): (&[u8], &[u8], &ScanRows),
) {
    use results::consistency::Call;
    let failed = outcome.as_ref().err().map(|e| e.class);
    let key = keynum as u64;
    let read = Call::Read {
        saw: version_of(buf),
    };
    let write = Call::Write {
        value: version_of(val).unwrap_or(0),
    };
    match op {
        Op::Read => history.push(key, read, failed, h0),
        Op::Update | Op::Insert => history.push(key, write, failed, h0),
        Op::ReadModifyWrite => {
            // A failed read leaves the update unsent.
            let read_failed = failed.filter(|_| version_of(buf).is_none());
            history.push(key, read, read_failed, h0);
            if read_failed.is_none() {
                history.push(key, write, failed, h0);
            }
        }
        Op::Scan if failed.is_none() => {
            for (_, v) in rows {
                let n = v
                    .get(..8)
                    .map_or(0, |b| i64::from_le_bytes(b.try_into().expect("8")));
                let saw = version_of(v);
                history.push(n as u64, Call::Read { saw }, None, h0);
            }
        }
        Op::Scan => {}
    }
}

pub(super) fn slot(op: Op) -> usize {
    op as usize
}

/// The kinds in the order of their recorders.
pub(super) const OPS: [Op; 5] = [
    Op::Read,
    Op::Update,
    Op::Insert,
    Op::Scan,
    Op::ReadModifyWrite,
];
/// A client's recorders: one per kind, then a read-modify-write's read and its update.
pub(super) type Recs = [Recorder; 7];
pub(super) const RMW_READ: usize = 5;
pub(super) const RMW_UPDATE: usize = 6;

impl Client<'_> {
    pub(super) fn chooser(&mut self, total_ops: u64) -> Chooser {
        let d = &mut self.draws;
        match self.workload.distribution {
            Distribution::Zipfian if self.exact.is_some() => {
                Chooser::Exact(self.exact.clone().expect("checked"))
            }
            Distribution::Zipfian => {
                // YCSB predicts the inserts so the hot keys do not move as they come.
                let expected =
                    (total_ops as f64 * self.workload.proportion(Op::Insert) * 2.0) as i32;
                Chooser::Zipfian(ScrambledZipfian::new(
                    0,
                    self.records + i64::from(expected),
                    d,
                ))
            }
            Distribution::Latest => Chooser::Latest(SkewedLatest::new(self.shared.last(), d)),
            Distribution::Uniform => Chooser::Uniform(Uniform::new(0, self.records - 1)),
        }
    }

    /// The key number of this shard's `n`-th record: the loaded records are every shard's;
    /// the run's inserts are numbered apart, shard I of N taking `records + I + k·N`.
    pub(super) fn keynum(&self, n: i64) -> i64 {
        if n < self.records {
            n
        } else {
            self.records
                + i64::from(self.shard.index)
                + (n - self.records) * i64::from(self.shard.count)
        }
    }

    /// YCSB's `nextKeynum`: a key at most the last acknowledged insert.
    pub(super) fn next_keynum(&mut self, chooser: &mut Chooser) -> Result<i64, OpError> {
        for _ in 0..MAX_REDRAWS {
            let last = self.shared.last();
            let d = &mut self.draws;
            // YCSB reads the chooser's value with intValue().
            let k = match chooser {
                Chooser::Zipfian(z) => i64::from(z.next(d) as i32),
                Chooser::Exact(z) => z.at(d.next_f64()) as i64,
                Chooser::Latest(l) => i64::from(l.next(last, d) as i32),
                Chooser::Uniform(u) => i64::from(u.next(d) as i32),
            };
            if k <= last {
                return Ok(self.keynum(k));
            }
        }
        Err(OpError::new(
            ErrorClass::Application,
            format!("no key at most the last insert in {MAX_REDRAWS} draws"),
        ))
    }

    pub(super) fn run(
        mut self,
        s: &mut dyn Session,
        total_ops: u64,
        interrupt: &AtomicBool,
        clock: &engine::clock::Clock,
        per_s: Option<f64>,
    ) -> Self {
        let mut chooser = self.chooser(total_ops);
        let (mut buf, mut scratch, mut val) = (Vec::new(), Vec::new(), Vec::new());
        let mut rows = Vec::new();
        let start = clock.now_ns();
        for i in 0..self.operations {
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
            // Open loop (YCSB's -target): operation i is due at its place in the schedule, and
            // its latency counts from then, however late it starts.
            let due = per_s.map(|r| start + (i as f64 * 1e9 / r) as u64);
            if let Some(t) = due {
                clock.wait_until(t);
            }
            let op = self.workload.choose(&mut self.draws);
            let t0 = clock.now_ns();
            let h0 = self.history.as_ref().map_or(0, |h| h.now());
            let mut at = None;
            buf.clear();
            let outcome = match op {
                Op::Insert => {
                    let n = self.shared.issue().unwrap_or(self.records);
                    let k = self.keynum(n);
                    at = Some(k);
                    record(k, 0, &mut val);
                    let r = write(s, k, &val);
                    if r.is_ok() {
                        self.shared.acknowledge(n);
                    }
                    r
                }
                Op::Scan => match self.next_keynum(&mut chooser) {
                    Err(e) => Err(e),
                    Ok(k) => {
                        at = Some(k);
                        *self.drawn.entry(k).or_default() += 1;
                        let len = SCAN_LENGTH.next(&mut self.draws);
                        self.scan_lengths.push(len as u32);
                        scan(s, k, len as usize, &mut rows, &mut scratch)
                    }
                },
                _ => match self.next_keynum(&mut chooser) {
                    Err(e) => Err(e),
                    Ok(k) => {
                        at = Some(k);
                        *self.drawn.entry(k).or_default() += 1;
                        match op {
                            Op::Read => read(s, k, &mut buf, &mut scratch),
                            Op::Update => {
                                record(k, self.draws.next_u64() | 1, &mut val);
                                write(s, k, &val)
                            }
                            _ => {
                                // Read-modify-write: the read and the update each measured,
                                // and the whole.
                                let r0 = clock.now_ns();
                                let r = read(s, k, &mut buf, &mut scratch);
                                let r1 = clock.now_ns();
                                let failed = r.is_err();
                                self.rec[RMW_READ].record(r1 - r0, r.clone());
                                if failed {
                                    r
                                } else {
                                    record(k, self.draws.next_u64() | 1, &mut val);
                                    let w = write(s, k, &val);
                                    self.rec[RMW_UPDATE].record(clock.now_ns() - r1, w.clone());
                                    w.map(|b| b + buf.len() as u64)
                                }
                            }
                        }
                    }
                },
            };
            if let Err(e) = &outcome
                && e.class == ErrorClass::Corrupt
                && self.corrupt.is_none()
            {
                self.corrupt = Some(e.message.to_string());
            }
            if let (Some(h), Some(k)) = (&mut self.history, at) {
                note(h, (op, k, h0), &outcome, (&buf, &val, &rows));
            }
            let end = clock.now_ns();
            let r = &mut self.rec[slot(op)];
            r.record(end - due.unwrap_or(t0).min(t0), outcome);
            if due.is_some() {
                results::histogram::record(&mut r.service, end - t0);
            }
        }
        self
    }
}

/// The most keys of the skew report.
pub(super) const TOP_KEYS: usize = 10;

/// A test's figures from its clients' recorders.
pub(super) fn outcome(
    test: &'static str,
    clients: u32,
    wall_ns: u64,
    client_ns: Vec<u64>,
    recs: Vec<Recs>,
    (drawn, corrupt, interrupted): (BTreeMap<i64, u64>, Option<String>, bool),
    scan_lengths: &[u32],
) -> TestOutcome {
    let mut kinds: Recs = Default::default();
    for r in &recs {
        for (all, one) in kinds.iter_mut().zip(r) {
            all.merge(one);
        }
    }
    // Overall: every operation once, a read-modify-write as one.
    let mut all = Recorder::new();
    for r in &kinds[..5] {
        all.merge(r);
    }
    // As YCSB's: READ and UPDATE include those of the read-modify-writes.
    let [read, update, .., rmw_read, rmw_update] = &mut kinds;
    read.merge(rmw_read);
    update.merge(rmw_update);
    let mut by_op: BTreeMap<String, results::OpFigures> = (OPS.iter().zip(&kinds))
        .filter(|(_, r)| r.ops > 0)
        .map(|(op, r)| (op.name().to_string(), r.figures()))
        .collect();
    // Open loop: each kind's latency counts from the intended start; its service time (from
    // the actual start) beside it, as YCSB's measurement.interval=both shows both.
    for (op, r) in OPS.iter().zip(&kinds[..5]) {
        if !r.service.is_empty() {
            by_op.insert(
                format!("{} (service time)", op.name()),
                results::OpFigures::of(r.service.len(), r.error_count(), &r.service),
            );
        }
    }
    let mut top: Vec<(i64, u64)> = drawn.iter().map(|(k, n)| (*k, *n)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let draws: u64 = top.iter().map(|t| t.1).sum();
    let mut figures = serde_json::json!({
        "key_draws": draws,
        "distinct_keys": top.len(),
        "top_keys": top.iter().take(TOP_KEYS).map(|(k, n)| serde_json::json!([k, n])).collect::<Vec<_>>(),
    });
    if !scan_lengths.is_empty() {
        let n = scan_lengths.len() as f64;
        figures["scan_length"] = serde_json::json!({
            "count": scan_lengths.len(),
            "min": scan_lengths.iter().min(),
            "max": scan_lengths.iter().max(),
            "mean": scan_lengths.iter().map(|&l| f64::from(l)).sum::<f64>() / n,
        });
    }
    let ops = all.ops;
    let errors = all.error_count();
    let rep = Rep {
        ops,
        clients,
        wall_ns,
        client_ns,
        ops_per_s: results::rate::per_s((ops - errors) as f64, wall_ns),
        errors,
        latency_ns: results::stats::latency_summary(&all.latency),
        by_op,
        detail: Detail::custom("ycsb", figures),
    };
    let status = match (&corrupt, ops - errors) {
        (Some(c), _) => (Status::Failed, Some(format!("a read came back wrong: {c}"))),
        (None, 0) if ops > 0 => (
            Status::Failed,
            Some(format!("no operation succeeded ({errors} failed)")),
        ),
        _ if interrupted => (
            Status::Interrupted,
            Some("interrupted during the test".into()),
        ),
        _ => (Status::Ok, None),
    };
    TestOutcome::ran(test, status, rep, all)
}

/// A client's clock: the run's, or on a virtual-time target (the mock) one of its own, which the
/// target advances by exactly its operations' latencies.
pub(super) fn client_clock(ctx: &RepCtx, virtual_time: bool) -> Clock {
    if virtual_time {
        Clock::new_virtual()
    } else {
        ctx.clock.clone()
    }
}

/// The test's wall time: the run clock's, or on virtual time the longest client's.
pub(super) fn wall_of(ctx: &RepCtx, start: u64, virtual_time: bool, client_ns: &[u64]) -> u64 {
    let ns = if virtual_time {
        client_ns.iter().copied().max().unwrap_or(0)
    } else {
        ctx.clock.now_ns() - start
    };
    ns.max(1)
}
