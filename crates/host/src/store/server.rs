//! The host's server: one connection's state and open transaction, the answer to each request,
//! the per-loop statistics, and the event-loop server that runs it.

use super::*;

/// A transaction that grew past [`MAX_TX_BYTES`]: it is rolled back, and the client told why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the transaction holds over {MAX_TX_BYTES} bytes of writes (the limit per connection); it was rolled back: commit more often"
)]
pub(super) struct TooLarge;

/// One connection's open transaction: its writes in order, the latest per key, their bytes.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) writes: Vec<Write1>,
    pub(super) latest: HashMap<u64, usize>,
    pub(super) bytes: usize,
}

impl Pending {
    /// The transaction's own value of `key`: `Some(None)` when it deleted it.
    pub(super) fn lookup(&self, key: u64) -> Option<Option<&[u8]>> {
        self.latest.get(&key).map(|&i| self.writes[i].1.as_deref())
    }

    pub(super) fn push(&mut self, key: u64, value: Option<Vec<u8>>) -> Result<(), TooLarge> {
        self.bytes += value.as_ref().map_or(0, Vec::len) + 16;
        if self.bytes > MAX_TX_BYTES {
            return Err(TooLarge);
        }
        self.latest.insert(key, self.writes.len());
        self.writes.push((key, value));
        Ok(())
    }
}

/// Reads `keys` as a transaction sees them: its own writes first, then the store.
pub(super) fn read_through(
    objects: &Objects,
    pending: Option<&Pending>,
    keys: &[u64],
    mut each: impl FnMut(&[u8]),
) -> io::Result<Option<u64>> {
    let Some(p) = pending.filter(|p| !p.writes.is_empty()) else {
        return objects.get_each(keys, each);
    };
    for &k in keys {
        match p.lookup(k) {
            Some(Some(v)) => each(v),
            Some(None) => return Ok(Some(k)),
            None => {
                if let Some(missing) = objects.get_each(&[k], &mut each)? {
                    return Ok(Some(missing));
                }
            }
        }
    }
    Ok(None)
}

/// Server-side latency of one operation kind.
pub(super) struct OpStats {
    pub(super) count: u64,
    pub(super) latency: hdrhistogram::Histogram<u64>,
}

/// One event loop's figures: locked by its loop per request (uncontended), and by `STATS`.
pub(super) type Local = Arc<Mutex<Vec<OpStats>>>;

pub(super) struct Shared {
    pub(super) token: Option<String>,
    /// `--store PATH`; objects in memory when `None`.
    pub(super) disk: Option<Arc<DiskStore>>,
    pub(super) namespaces: RwLock<HashMap<String, Arc<Objects>>>,
    /// Each event loop's figures.
    pub(super) stats: Mutex<Vec<Local>>,
}

/// A running benchmark host: one event loop per core it may run on ([`crate::evloop`]).
pub struct StoreServer {
    pub(super) server: EventServer,
}

/// How a host serves: the defaults are no token, objects in memory, [`MAX_CONNECTIONS`].
#[derive(Clone)]
pub struct Options {
    /// Clients must present this token first (`HELLO`).
    pub token: Option<String>,
    /// `--store PATH`: objects in LMDB; in memory when `None`.
    pub disk: Option<Arc<DiskStore>>,
    /// Connections served at once (at most [`MAX_CONNECTIONS`]); more are refused with `ERR`.
    pub max_connections: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            token: None,
            disk: None,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

impl StoreServer {
    /// Serves `listener` as `options` say: a token clients must present, objects on disk or in
    /// memory, and a connection limit.
    pub fn start(listener: TcpListener, options: Options) -> io::Result<StoreServer> {
        let Options {
            token,
            disk,
            max_connections,
        } = options;
        let shared = Arc::new(Shared {
            token,
            disk,
            namespaces: RwLock::new(HashMap::new()),
            stats: Mutex::new(Vec::new()),
        });
        let server = EventServer::start(
            listener,
            shared,
            evloop::loops_wanted(),
            max_connections.min(MAX_CONNECTIONS),
        )?;
        Ok(StoreServer { server })
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Stops the host: no new connections, and the open ones are closed.
    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// Blocks until the server stops (for `dyno serve`).
    pub fn wait(mut self) {
        self.server.wait();
    }
}

/// One connection's state.
pub(super) struct Conn {
    pub(super) authed: bool,
    pub(super) objects: Option<Arc<Objects>>,
    pub(super) pending: Option<Pending>,
    /// Scratch for a value and for `MGET`'s keys, kept between requests.
    pub(super) value: Vec<u8>,
    pub(super) keys: Vec<u64>,
    /// The figures of the loop that serves this connection.
    stats: Local,
}

impl Protocol for Shared {
    type Loop = Local;
    type Conn = Conn;

    fn start_loop(&self) -> Local {
        let stats: Local = Arc::new(Mutex::new(new_stats()));
        if let Ok(mut all) = self.stats.lock() {
            all.push(stats.clone());
        }
        stats
    }

    fn open(&self, stats: &mut Local) -> Conn {
        Conn {
            authed: self.token.is_none(),
            objects: None,
            pending: None,
            value: Vec::new(),
            keys: Vec::new(),
            stats: stats.clone(),
        }
    }

    fn next(&self, c: &mut Conn, input: &[u8], out: &mut Vec<u8>) -> Step {
        let Some(head) = input.get(..4) else {
            return Step::Need(5);
        };
        let len = u32::from_be_bytes(head.try_into().expect("4 bytes"));
        let refuse = |out: &mut Vec<u8>, msg: &str| {
            frame(out, kind::ERR, &[msg.as_bytes()]);
            Step::Close(input.len())
        };
        if len == 0 {
            return refuse(out, "an empty frame (no kind byte)");
        }
        if len > MAX_FRAME {
            return refuse(
                out,
                &format!("a frame of {len} bytes exceeds the limit of {MAX_FRAME}"),
            );
        }
        let total = 4 + len as usize;
        if input.len() < total {
            return Step::Need(total);
        }
        let (k, body) = (input[4], &input[5..total]);
        let t = Instant::now();
        match self.answer(c, k, body, out) {
            Ok(true) => {
                // Counted when the answer is ready, before it is sent: a client that has its
                // reply and then asks for the figures finds its request in them. The server's
                // time is its own work; the send is the network's part.
                if let Ok(mut l) = c.stats.lock()
                    && let Some(slot) = l.get_mut(usize::from(k))
                {
                    slot.count += 1;
                    slot.latency
                        .saturating_record(t.elapsed().as_nanos().max(1) as u64);
                }
                Step::Done(total)
            }
            Ok(false) => Step::Close(total),
            Err(e) => {
                out.clear();
                refuse(out, &format!("the host failed: {e}"))
            }
        }
    }

    fn refuse(&self, stream: &mut TcpStream, limit: usize) {
        let msg = format!("too many connections (the limit is {limit})");
        let _ = write_frame(stream, kind::ERR, &[msg.as_bytes()]);
    }
}

/// Replies `ERR` with `msg`; the connection closes after it.
fn refuse_with(out: &mut Vec<u8>, msg: &str) -> io::Result<bool> {
    frame(out, kind::ERR, &[msg.as_bytes()]);
    Ok(false)
}

/// Writes the length of the frame begun at `at` (its header was written with an empty body).
fn seal(out: &mut [u8], at: usize) {
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

impl Shared {
    /// Answers one request into `out`; `Ok(false)` when the connection must close after it.
    pub(super) fn answer(
        &self,
        c: &mut Conn,
        k: u8,
        body: &[u8],
        out: &mut Vec<u8>,
    ) -> io::Result<bool> {
        if !c.authed && k != kind::HELLO {
            return refuse_with(
                out,
                "authentication required: send HELLO with the host's token first",
            );
        }
        if Request::needs_namespace(k) && c.objects.is_none() {
            return refuse_with(out, "no namespace: send OPEN first");
        }
        let request = match Request::parse(k, body) {
            Ok(Some(r)) => r,
            Ok(None) => return refuse_with(out, &format!("unknown frame kind 0x{k:02x}")),
            Err(why) => return refuse_with(out, why),
        };
        match request {
            Request::Hello(token) => return self.hello(c, token, out),
            Request::Open(name) => return self.open_namespace(c, name, out),
            Request::Drop(name) => self.drop_namespace(c, name, out)?,
            Request::Begin | Request::Commit => {
                if let (Some(p), Some(map)) = (c.pending.take(), &c.objects) {
                    map.apply(p.writes.iter().map(|(k, v)| (*k, v.as_deref())))?;
                }
                if request == Request::Begin {
                    c.pending = Some(Pending::default());
                }
                frame(out, kind::OK, &[]);
            }
            Request::Info => {
                let durability = (self.disk.as_ref())
                    .map_or_else(|| "volatile (host memory)".to_string(), |d| d.describe());
                let text = format!(
                    "durability: {durability}\nversion: dyno {}\n",
                    env!("CARGO_PKG_VERSION")
                );
                frame(out, kind::TEXT, &[text.as_bytes()]);
            }
            Request::Put(key, value) => put(c, key, value, out)?,
            Request::Get(key) => get(c, key, out)?,
            Request::Delete(key) => delete(c, key, out)?,
            Request::MGet(keys) => mget(c, keys, out)?,
            Request::Scan(start, count) => scan(c, start, count, out)?,
            Request::Folder(op, path) => folder(c, op, path, out),
            Request::Stats => {
                let text = stats_text(self);
                frame(out, kind::TEXT, &[text.as_bytes()]);
            }
        }
        Ok(true)
    }

    fn hello(&self, c: &mut Conn, token: &[u8], out: &mut Vec<u8>) -> io::Result<bool> {
        if self.token.as_deref().is_some_and(|t| t.as_bytes() != token) {
            return refuse_with(out, "wrong token");
        }
        c.authed = true;
        frame(out, kind::OK, &[]);
        Ok(true)
    }

    fn open_namespace(&self, c: &mut Conn, name: &str, out: &mut Vec<u8>) -> io::Result<bool> {
        let mut all = self.namespaces.write().map_err(|_| poisoned())?;
        if !all.contains_key(name) && all.len() >= MAX_NAMESPACES {
            return refuse_with(out, "too many namespaces on this host");
        }
        let o = match all.get(name) {
            Some(o) => o.clone(),
            None => {
                let o = Arc::new(match &self.disk {
                    Some(d) => Objects::on_disk(d.clone(), name)?,
                    None => Objects::default(),
                });
                all.insert(name.to_string(), o.clone());
                o
            }
        };
        c.objects = Some(o);
        c.pending = None;
        frame(out, kind::OK, &[]);
        Ok(true)
    }

    fn drop_namespace(&self, c: &mut Conn, name: &str, out: &mut Vec<u8>) -> io::Result<()> {
        let mut all = self.namespaces.write().map_err(|_| poisoned())?;
        all.remove(name);
        if let Some(d) = &self.disk {
            d.drop_namespace(name)?;
        }
        c.pending = None;
        frame(out, kind::OK, &[]);
        Ok(())
    }
}

/// The namespace a request that needs one works on (`answer` checked it is open).
fn objects(c: &Conn) -> Arc<Objects> {
    c.objects
        .clone()
        .expect("answer checks the namespace first")
}

/// A write outside a transaction goes to the store; inside one, into the transaction (which is
/// rolled back when it grows too large).
fn put(c: &mut Conn, key: u64, value: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    let map = objects(c);
    match c.pending.as_mut() {
        None => {
            map.put(key, value)?;
            frame(out, kind::OK, &[]);
        }
        Some(p) => match p.push(key, Some(value.to_vec())) {
            Ok(()) => frame(out, kind::OK, &[]),
            Err(e) => {
                c.pending = None;
                frame(out, kind::ERR, &[e.to_string().as_bytes()]);
            }
        },
    }
    Ok(())
}

/// A read as the transaction sees it, straight into the response (no scratch copy).
fn get(c: &mut Conn, key: u64, out: &mut Vec<u8>) -> io::Result<()> {
    let map = objects(c);
    let at = out.len();
    frame(out, kind::VALUE, &[]);
    let missing = read_through(&map, c.pending.as_ref(), &[key], |v| {
        out.extend_from_slice(v)
    })?;
    if missing.is_some() {
        out.truncate(at);
        frame(out, kind::NOT_FOUND, &[]);
    } else {
        seal(out, at);
    }
    Ok(())
}

fn delete(c: &mut Conn, key: u64, out: &mut Vec<u8>) -> io::Result<()> {
    let map = objects(c);
    let Some(p) = c.pending.as_mut() else {
        let r = if map.delete(key)? {
            kind::OK
        } else {
            kind::NOT_FOUND
        };
        frame(out, r, &[]);
        return Ok(());
    };
    c.value.clear();
    let value = &mut c.value;
    let found = read_through(&map, Some(p), &[key], |v| value.extend_from_slice(v))?.is_none();
    if !found {
        frame(out, kind::NOT_FOUND, &[]);
    } else if let Err(e) = p.push(key, None) {
        c.pending = None;
        frame(out, kind::ERR, &[e.to_string().as_bytes()]);
    } else {
        frame(out, kind::OK, &[]);
    }
    Ok(())
}

/// Many reads in one reply; one pass: values are copied while the reply fits a frame, then only
/// counted.
fn mget(c: &mut Conn, keys: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    let map = objects(c);
    c.keys.clear();
    c.keys.extend(
        keys.chunks_exact(8)
            .map(|k| u64::from_be_bytes(k.try_into().expect("8 bytes"))),
    );
    let at = out.len();
    frame(out, kind::VALUES, &[]);
    let mut total = 0u64;
    let missing = read_through(&map, c.pending.as_ref(), &c.keys, |v| {
        total += 4 + v.len() as u64;
        if total < u64::from(MAX_FRAME) {
            out.extend_from_slice(&(v.len() as u32).to_be_bytes());
            out.extend_from_slice(v);
        }
    })?;
    seal(out, at);
    match missing {
        Some(k) => {
            out.truncate(at);
            frame(out, kind::NOT_FOUND, &[&k.to_be_bytes()]);
        }
        None if total >= u64::from(MAX_FRAME) => {
            out.truncate(at);
            let msg = format!(
                "the {} values asked for come to {total} bytes, over the frame limit of {MAX_FRAME}; ask for fewer keys at a time",
                c.keys.len()
            );
            frame(out, kind::ERR, &[msg.as_bytes()]);
        }
        None => {}
    }
    Ok(())
}

/// A scan, in one reply while it fits a frame. A transaction's own writes are not in the store
/// yet: a scan after them in the same transaction is refused rather than answered without them.
fn scan(c: &mut Conn, start: u64, count: u32, out: &mut Vec<u8>) -> io::Result<()> {
    if c.pending.as_ref().is_some_and(|p| !p.writes.is_empty()) {
        let msg = "a scan after writes in the same transaction: commit them first";
        frame(out, kind::ERR, &[msg.as_bytes()]);
        return Ok(());
    }
    let map = objects(c);
    let at = out.len();
    frame(out, kind::ENTRIES, &[]);
    let mut total = 0u64;
    map.scan(start, count as usize, |k, v| {
        total += 12 + v.len() as u64;
        if total < u64::from(MAX_FRAME) {
            out.extend_from_slice(&k.to_be_bytes());
            out.extend_from_slice(&(v.len() as u32).to_be_bytes());
            out.extend_from_slice(v);
        }
    })?;
    seal(out, at);
    if total >= u64::from(MAX_FRAME) {
        out.truncate(at);
        let msg = format!(
            "the {count} objects asked for come to {total} bytes or more, over the frame limit of {MAX_FRAME}; ask for fewer"
        );
        frame(out, kind::ERR, &[msg.as_bytes()]);
    }
    Ok(())
}

fn folder(c: &Conn, op: FolderOp, path: &str, out: &mut Vec<u8>) {
    let map = objects(c);
    let done = match op {
        FolderOp::Mkdir => map.mkdir(path),
        FolderOp::Stat => map.stat(path),
        FolderOp::Rmdir => map.rmdir(path),
        FolderOp::List => {
            let at = out.len();
            frame(out, kind::TEXT, &[]);
            let listed = map.list(path, |name| {
                out.extend_from_slice(name.as_bytes());
                out.push(b'\n');
            });
            if listed.is_ok() {
                seal(out, at);
            } else {
                out.truncate(at);
            }
            listed
        }
    };
    match done {
        Ok(()) if op == FolderOp::List => {}
        Ok(()) => frame(out, kind::OK, &[]),
        Err(TreeError::NotFound) => frame(out, kind::NOT_FOUND, &[]),
        Err(e) => frame(out, kind::ERR, &[e.message(path).as_bytes()]),
    }
}

pub(super) fn new_stats() -> Vec<OpStats> {
    (0..OPS.len())
        .map(|_| OpStats {
            count: 0,
            latency: results::new_histogram(),
        })
        .collect()
}

pub(super) fn add_stats(into: &mut [OpStats], from: &[OpStats]) {
    for (a, b) in into.iter_mut().zip(from) {
        a.count += b.count;
        let _ = a.latency.add(&b.latency);
    }
}

/// Everything so far: every event loop's figures, exactly.
pub(super) fn stats_text(shared: &Shared) -> String {
    let mut all = new_stats();
    if let Ok(loops) = shared.stats.lock() {
        for l in loops.iter() {
            if let Ok(l) = l.lock() {
                add_stats(&mut all, &l);
            }
        }
    }
    let mut text = String::new();
    for (i, s) in all.iter().enumerate().skip(1) {
        if s.count == 0 {
            continue;
        }
        text.push_str(&format!(
            "{} {} {}\n",
            OPS[i],
            s.count,
            results::histogram::encode(&s.latency)
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Serves `input` to one connection as the event loop would (answer, drop what was used,
    /// again), and checks what the loop relies on: every call returns, a request uses no more
    /// than it was given, `Need` asks for more than there is and never past the frame limit,
    /// and one answer stays within a frame.
    fn serve(token: Option<&str>, input: &[u8]) {
        let shared = Shared {
            token: token.map(str::to_string),
            disk: None,
            namespaces: RwLock::new(HashMap::new()),
            stats: Mutex::new(Vec::new()),
        };
        let mut lp = shared.start_loop();
        let mut c = shared.open(&mut lp);
        let (mut at, mut out) = (0, Vec::new());
        for _ in 0..=input.len() {
            out.clear();
            let rest = &input[at..];
            match shared.next(&mut c, rest, &mut out) {
                Step::Need(n) => {
                    assert!(n > rest.len(), "Need({n}) with {} bytes there", rest.len());
                    assert!(n <= 4 + MAX_FRAME as usize);
                    break;
                }
                Step::Done(used) => {
                    assert!(
                        used > 0 && used <= rest.len(),
                        "used {used} of {}",
                        rest.len()
                    );
                    at += used;
                }
                Step::Close(used) => {
                    assert!(used <= rest.len());
                    break;
                }
            }
            assert!(out.len() <= 4 + MAX_FRAME as usize);
        }
    }

    /// Well-formed frames of any kind with any body, behind a HELLO and an OPEN so that the
    /// commands reach the store; `edits` then change some bytes (lengths included).
    fn frames() -> impl Strategy<Value = Vec<u8>> {
        (
            prop::collection::vec(
                (0u8..=0x12, prop::collection::vec(any::<u8>(), 0..40)),
                0..12,
            ),
            prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        )
            .prop_map(|(frames, edits)| {
                let mut b = Vec::new();
                write_frame(&mut b, kind::HELLO, &[b"s3cret"]).unwrap();
                write_frame(&mut b, kind::OPEN, &[b"dyno_fuzz"]).unwrap();
                for (k, body) in frames {
                    write_frame(&mut b, k, &[&body]).unwrap();
                }
                for (at, v) in edits {
                    let at = at % b.len();
                    b[at] = v;
                }
                b
            })
    }

    #[test]
    fn a_transaction_past_its_bound_is_refused_with_the_reason() {
        let mut p = Pending::default();
        assert_eq!(p.push(1, Some(vec![0; 1 << 20])), Ok(()));
        let big = vec![0; MAX_TX_BYTES];
        let e = p.push(2, Some(big)).unwrap_err();
        assert_eq!(e, TooLarge);
        assert!(
            e.to_string()
                .contains("it was rolled back: commit more often")
        );
    }

    #[test]
    fn values_bodies_are_cut_or_refused() {
        let mut body = Vec::new();
        for v in [&b"ab"[..], b"", b"xyz"] {
            body.extend_from_slice(&(v.len() as u32).to_be_bytes());
            body.extend_from_slice(v);
        }
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        split_values(&body, 3, &mut out, &mut ends).unwrap();
        assert_eq!(
            (out.as_slice(), ends.as_slice()),
            (&b"abxyz"[..], &[2, 2, 5][..])
        );
        assert_eq!(
            split_values(&body, 2, &mut out, &mut ends),
            Err(ValuesError::Count { got: 3, keys: 2 })
        );
        assert_eq!(
            split_values(&body[..body.len() - 1], 3, &mut out, &mut ends),
            Err(ValuesError::ValueCut { len: 3 })
        );
        assert_eq!(
            split_values(&body[..2], 1, &mut out, &mut ends),
            Err(ValuesError::LengthCut)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn any_bytes_get_an_answer_or_a_close(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            serve(None, &bytes);
            serve(Some("s3cret"), &bytes);
        }

        #[test]
        fn mutated_frames_get_an_answer_or_a_close(bytes in frames()) {
            serve(None, &bytes);
            serve(Some("s3cret"), &bytes);
        }
    }
}
