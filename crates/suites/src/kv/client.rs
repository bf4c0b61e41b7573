//! The kv suite's clients: each gets or sets entries for the test's duration, its failures
//! split by whether their outcome is known, its writes' acknowledgements kept for the lost-writes
//! check; the entries loaded first, and that check.

use super::*;
use crate::history::Local;
use results::consistency::Call;

pub(super) fn value(size: usize, seq: u64, writer: u32, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&writer.to_le_bytes());
    out.resize(size, b'.');
}

/// A value's sequence number and writer, when it is one of dyno's of this size.
pub(super) fn read_value(v: &[u8], size: usize) -> Option<(u64, u32)> {
    if v.len() != size || size < MIN_VALUE {
        return None;
    }
    let seq = u64::from_le_bytes(v[..8].try_into().ok()?);
    let writer = u32::from_le_bytes(v[8..12].try_into().ok()?);
    Some((seq, writer))
}

pub(super) use crate::history::indefinite;

/// A value as a history names it: its sequence number and writer in one number.
pub(super) fn ident((seq, writer): (u64, u32)) -> u64 {
    (seq << 32) | u64::from(writer)
}

/// One interval of one client: the one it is in, reused for the next once handed over.
pub(super) struct Slot {
    /// Its place in the series (its start over [`INTERVAL_NS`]).
    pub(super) at: usize,
    pub(super) ok: u64,
    pub(super) errors: u64,
    pub(super) connects: u64,
    pub(super) latency: results::Histogram,
}

impl Slot {
    pub(super) fn new() -> Slot {
        Slot {
            at: 0,
            ok: 0,
            errors: 0,
            connects: 0,
            latency: results::new_histogram(),
        }
    }

    /// The slot for time `t_ns` on the run's clock (the series began at `start_ns`): this one,
    /// or, once the clock has moved past it, this one handed to `series` and reset.
    pub(super) fn at(
        &mut self,
        t_ns: u64,
        start_ns: u64,
        client: usize,
        series: &Mutex<Series>,
    ) -> &mut Slot {
        let at = (t_ns.saturating_sub(start_ns) / INTERVAL_NS) as usize;
        if at != self.at {
            if let Ok(mut s) = series.lock() {
                s.take(client, self, at);
            }
            self.ok = 0;
            self.errors = 0;
            self.connects = 0;
            self.latency.reset();
            self.at = at;
        }
        self
    }
}

/// The repetition's time series, built as the clients go. A client hands over each interval
/// once its clock has moved past it; an interval every client has moved past becomes a record.
/// So a few intervals' histograms are held at a time, however long the test runs.
pub(super) struct Series {
    /// Intervals some client handed over that not every client has passed yet.
    pub(super) open: Vec<Slot>,
    /// Where each client is now (`usize::MAX` once it finished).
    pub(super) passed: Vec<usize>,
    pub(super) done: Vec<IntervalRecord>,
}

impl Series {
    pub(super) fn new(clients: usize) -> Series {
        Series {
            open: Vec::new(),
            passed: vec![0; clients],
            done: Vec::new(),
        }
    }

    /// Client `client`'s interval `slot`, now that it is at interval `now` (`usize::MAX`: done).
    pub(super) fn take(&mut self, client: usize, slot: &Slot, now: usize) {
        match self.open.iter_mut().find(|o| o.at == slot.at) {
            Some(o) => {
                o.ok += slot.ok;
                o.errors += slot.errors;
                o.connects += slot.connects;
                let _ = o.latency.add(&slot.latency);
            }
            None => {
                let mut o = Slot::new();
                o.at = slot.at;
                o.ok = slot.ok;
                o.errors = slot.errors;
                o.connects = slot.connects;
                let _ = o.latency.add(&slot.latency);
                self.open.push(o);
            }
        }
        self.passed[client] = now;
        // Every interval below where the slowest client is can be written; one nobody handed
        // over (every client was waiting on one operation) had no operation end in it.
        let behind = self.passed.iter().copied().min().unwrap_or(0);
        let last = self.open.iter().map(|o| o.at + 1).max().unwrap_or(0);
        let until = if behind == usize::MAX { last } else { behind };
        while self.done.len() < until {
            let at = self.done.len();
            let record = match self.open.iter().position(|o| o.at == at) {
                Some(i) => record_of(&self.open.swap_remove(i)),
                None => record_of(&Slot { at, ..Slot::new() }),
            };
            self.done.push(record);
        }
    }

    /// The records, the last interval cut at `wall_ns`.
    pub(super) fn finish(mut self, wall_ns: u64) -> Vec<IntervalRecord> {
        if let Some(l) = self.done.last_mut() {
            l.end_ns = l.end_ns.min(wall_ns.max(l.start_ns + 1));
        }
        self.done
    }
}

/// An interval's record.
pub(super) fn record_of(s: &Slot) -> IntervalRecord {
    let q = |p: f64| {
        if s.latency.is_empty() {
            0
        } else {
            s.latency.value_at_quantile(p)
        }
    };
    let from = s.at as u64 * INTERVAL_NS;
    IntervalRecord {
        start_ns: from,
        end_ns: from + INTERVAL_NS,
        responses: s.ok,
        ok: s.ok,
        errors: s.errors,
        connects: s.connects,
        p50_ns: q(0.5),
        p99_ns: q(0.99),
        max_ns: q(1.0),
        p999_ns: q(0.999),
        ..IntervalRecord::default()
    }
}

/// What one client did in a repetition.
#[derive(Default)]
pub(super) struct ClientRun {
    pub(super) rec: Recorder,
    pub(super) ok: u64,
    pub(super) definite: u64,
    pub(super) indefinite: u64,
    pub(super) reconnects: u64,
    /// `set`: the own keys with an acknowledged write, and the last one's sequence number.
    pub(super) acked: Vec<(u64, u64)>,
    pub(super) corrupt: Option<String>,
    pub(super) elapsed_ns: u64,
    /// `--check`: its operations.
    pub(super) history: Option<Local>,
}

impl ClientRun {
    /// Counts an operation that took `took_ns` (`write`: a set, whose failure may be of unknown
    /// outcome) in the client's figures and its interval's: whether its session broke.
    fn count(
        &mut self,
        r: Result<u64, OpError>,
        write: bool,
        slot: &mut Slot,
        took_ns: u64,
    ) -> bool {
        let broke = match &r {
            Ok(_) => {
                self.ok += 1;
                slot.ok += 1;
                slot.latency.saturating_record(took_ns.max(1));
                false
            }
            Err(e) => {
                slot.errors += 1;
                if write && indefinite(e.class) {
                    self.indefinite += 1;
                } else {
                    self.definite += 1;
                }
                if e.class == ErrorClass::Corrupt && self.corrupt.is_none() {
                    self.corrupt = Some(e.message.to_string());
                }
                e.class.is_connection()
            }
        };
        self.rec.record(took_ns, r);
        broke
    }
}

/// One client's loop: `test` for `duration_ns` from `start_ns` on the run's clock.
pub(super) struct Client<'a> {
    pub(super) store: &'a dyn Store,
    pub(super) ctx: &'a RepCtx<'a>,
    pub(super) test: &'static str,
    /// Its number among all clients (of every shard), and how many there are: what its keys
    /// and its values' writer follow from.
    pub(super) id: u32,
    pub(super) clients: u32,
    /// Its place among this generator's clients (in the series).
    pub(super) local: usize,
    pub(super) objects: u64,
    pub(super) size: usize,
    /// `set`: the sequence number of each own key's last write sent, carried over repetitions.
    pub(super) sent: &'a mut Vec<u64>,
    pub(super) series: &'a Mutex<Series>,
    /// `--check`: whether its operations are kept.
    pub(super) keep: bool,
}

impl Client<'_> {
    /// Gets this client's `i`-th key, and checks the value is one dyno wrote.
    /// The key of this client's `i`-th get.
    fn key(&self, i: u64) -> u64 {
        (u64::from(self.id) + i * u64::from(self.clients)) % self.objects
    }

    fn get_one(&self, s: &mut dyn Session, i: u64, buf: &mut Vec<u8>) -> Result<u64, OpError> {
        let key = self.key(i);
        buf.clear();
        get(s, key, buf)?;
        read_value(buf, self.size)
            .map(|_| self.size as u64)
            .ok_or_else(|| {
                let n = buf.len();
                let why = format!("key {key}: read {n} bytes that dyno did not write");
                OpError::new(ErrorClass::Corrupt, why)
            })
    }

    /// Operation `i` for the history: the write of the client's own key (`own`: the key and
    /// its place among the client's), or the read of what `buf` holds.
    fn call_of(&self, own: Option<(u64, usize)>, i: u64, buf: &[u8]) -> (u64, Call) {
        match own {
            Some((key, j)) => {
                let value = ident((self.sent[j], self.id));
                (key, Call::Write { value })
            }
            None => {
                let saw = read_value(buf, self.size).map(ident);
                (self.key(i), Call::Read { saw })
            }
        }
    }

    pub(super) fn run(self, start_ns: u64, duration_ns: u64) -> ClientRun {
        let clock = self.ctx.clock;
        let mut out = ClientRun {
            history: self.keep.then(|| Local::new(clock, self.id)),
            ..ClientRun::default()
        };
        let mine: Vec<u64> = (u64::from(self.id)..self.objects)
            .step_by(self.clients as usize)
            .collect();
        if self.sent.len() != mine.len() {
            self.sent.resize(mine.len(), 0);
        }
        let mut acked = vec![0u64; mine.len()];
        let id = self.local;
        let mut slot = Slot::new();
        let mut session: Option<Box<dyn Session>> = None;
        let mut epoch = self.ctx.clients.load(Ordering::Relaxed);
        let mut buf = Vec::with_capacity(self.size);
        let mut val = Vec::with_capacity(self.size);
        let end = start_ns + duration_ns;
        let mut i: u64 = 0;
        // Bounded by the duration (each operation, by the driver's own timeouts).
        loop {
            let t0 = clock.now_ns();
            if t0 >= end || self.ctx.interrupt.load(Ordering::Relaxed) {
                break;
            }
            let now_epoch = self.ctx.clients.load(Ordering::Relaxed);
            if now_epoch != epoch {
                epoch = now_epoch;
                session = None;
            }
            if session.is_none() {
                match self.store.connect(clock) {
                    Ok(s) => {
                        if i > 0 {
                            out.reconnects += 1;
                        }
                        slot.at(clock.now_ns(), start_ns, id, self.series).connects += 1;
                        session = Some(s);
                    }
                    Err(e) => {
                        // Nothing was sent: a definite failure, after a short pause (a
                        // refused connection answers at once).
                        let t1 = clock.now_ns();
                        slot.at(t1, start_ns, id, self.series).errors += 1;
                        out.definite += 1;
                        out.rec.record(t1 - t0, Err(e));
                        i += 1;
                        engine::fiber::sleep(Duration::from_millis(10));
                        continue;
                    }
                }
            }
            let s = session.as_mut().expect("connected above");
            let h0 = out.history.as_ref().map_or(0, Local::now);
            let (r, own) = if self.test == "get" {
                (self.get_one(&mut **s, i, &mut buf), None)
            } else if mine.is_empty() {
                break;
            } else {
                let j = (i % mine.len() as u64) as usize;
                self.sent[j] += 1;
                value(self.size, self.sent[j], self.id, &mut val);
                (
                    set(&mut **s, mine[j], &val).map(|()| self.size as u64),
                    Some(j),
                )
            };
            if let Some(h) = &mut out.history {
                let (key, call) = self.call_of(own.map(|j| (mine[j], j)), i, &buf);
                h.push(key, call, r.as_ref().err().map(|e| e.class), h0);
            }
            let t1 = clock.now_ns();
            let slot = slot.at(t1, start_ns, id, self.series);
            if let (Ok(_), Some(j)) = (&r, own) {
                acked[j] = self.sent[j];
            }
            if out.count(r, own.is_some(), slot, t1 - t0) {
                session = None;
            }
            i += 1;
        }
        out.elapsed_ns = clock.now_ns().saturating_sub(start_ns);
        if let Ok(mut s) = self.series.lock() {
            s.take(id, &slot, usize::MAX);
        }
        out.acked = (mine.iter().zip(&acked))
            .filter(|(_, a)| **a > 0)
            .map(|(k, a)| (*k, *a))
            .collect();
        out
    }
}

use crate::{get_tx as get, put_tx as set};

/// Writes the entries `keys` (all of them, or a shard's slice) with the loader's value
/// (sequence 0), in transactions of 100.
pub(super) fn load(
    store: &dyn Store,
    keys: std::ops::Range<u64>,
    size: usize,
) -> Result<(), String> {
    let clock = Clock::monotonic();
    let mut s = store.connect(&clock).map_err(|e| format!("connect: {e}"))?;
    let mut val = Vec::new();
    value(size, 0, LOADER, &mut val);
    let mut key = keys.start;
    while key < keys.end {
        let mut write = || -> Result<(), OpError> {
            s.begin(TxMode::Write)?;
            for k in key..(key + 100).min(keys.end) {
                s.put(k, &val)?;
            }
            s.commit()
        };
        write().map_err(|e| format!("writing the entries: {e}"))?;
        key += 100;
    }
    Ok(())
}

/// Reads `key` for the lost-writes check, into `buf`, and adds the read to `history`.
fn read_back(
    s: &mut dyn Session,
    (key, size): (u64, usize),
    buf: &mut Vec<u8>,
    history: Option<&mut Local>,
) -> Result<(), OpError> {
    let h0 = history.as_ref().map_or(0, |h| h.now());
    let got = get(s, key, buf);
    if let Some(h) = history {
        let (saw, failed) = match &got {
            Ok(()) => match read_value(buf, size) {
                Some(v) => (Some(ident(v)), None),
                None => (None, Some(ErrorClass::Corrupt)),
            },
            Err(e) => (None, Some(e.class)),
        };
        h.push(key, Call::Read { saw }, failed, h0);
    }
    got
}

/// Reads back each key's last acknowledged write through new sessions, for at most
/// [`CHECK_FOR`].
pub(super) fn check(
    store: &dyn Store,
    acked: &[u64],
    size: usize,
    mut history: Option<&mut Local>,
) -> LostWrites {
    let acked: Vec<(u64, u64)> = (acked.iter().enumerate())
        .filter(|(_, seq)| **seq > 0)
        .map(|(k, seq)| (k as u64, *seq))
        .collect();
    let clock = Clock::monotonic();
    let t0 = std::time::Instant::now();
    let mut lost = LostWrites {
        checked: acked.len() as u64,
        missing: 0,
        stale: 0,
        unread: 0,
        examples: Vec::new(),
    };
    let mut session: Option<Box<dyn Session>> = None;
    let mut buf = Vec::new();
    let mut at = 0;
    let mut last_error = None;
    while at < acked.len() {
        if t0.elapsed() >= CHECK_FOR {
            lost.unread = (acked.len() - at) as u64;
            if let Some(e) = last_error {
                lost.examples.push(format!(
                    "{} keys unread; the last failure: {e}",
                    lost.unread
                ));
            }
            break;
        }
        let s = match &mut session {
            Some(s) => s,
            None => match store.connect(&clock) {
                Ok(s) => session.insert(s),
                Err(e) => {
                    last_error = Some(e);
                    engine::fiber::sleep(Duration::from_millis(100));
                    continue;
                }
            },
        };
        let (key, seq) = acked[at];
        let got = read_back(&mut **s, (key, size), &mut buf, history.as_deref_mut());
        let found = match got {
            Ok(()) => read_value(&buf, size).map(|(n, _)| n),
            Err(e) if e.class == ErrorClass::NotFound => None,
            Err(e) => {
                // Not answered: a new session, and this key again.
                last_error = Some(e);
                session = None;
                engine::fiber::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if history.is_some() && found.is_none_or(|n| n < seq) {
            // Once more for the history: the older value again is a write lost, not a read
            // that lagged behind it.
            let _ = read_back(&mut **s, (key, size), &mut buf, history.as_deref_mut());
        }
        match found {
            Some(n) if n >= seq => {}
            Some(n) => {
                lost.stale += 1;
                if lost.examples.len() < EXAMPLES {
                    lost.examples
                        .push(format!("key {key}: acknowledged write {seq}, found {n}"));
                }
            }
            None => {
                lost.missing += 1;
                if lost.examples.len() < EXAMPLES {
                    lost.examples.push(format!(
                        "key {key}: acknowledged write {seq}, found nothing"
                    ));
                }
            }
        }
        at += 1;
    }
    lost
}
