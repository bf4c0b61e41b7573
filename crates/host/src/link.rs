//! The link emulator: a user-space TCP proxy that adds one-way delay, jitter and a bandwidth cap
//! to each direction, keeping byte order. Kernel netem needs privileges these machines do not
//! give; a proxy needs none and runs anywhere.
//!
//! Each accepted connection is joined to a new connection to the destination. Each direction is a
//! reader and a writer joined by a bounded queue of chunks. The reader stamps each chunk with the
//! moment it may leave, modelling a link: transmission starts when the link is free (after the
//! previous chunk) and takes `size / rate`; the chunk then propagates for `delay ± jitter`, and
//! never overtakes an earlier chunk. The writer sleeps until that moment (spinning the last
//! [`SPIN`] so it leaves on time) and writes. The queue's bound ([`MAX_QUEUED`] chunks) pushes back
//! on the sender through TCP, as a full link buffer would. With no delay, jitter or cap, a
//! direction is a plain copy loop.

use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes read at a time.
const CHUNK: usize = 16 << 10;
/// Chunks in flight per direction (at most 4 MiB): the link's buffer.
pub const MAX_QUEUED: usize = 256;
/// Connections proxied at once (two or four threads each).
pub const MAX_CONNECTIONS: usize = 1024;
/// A writer sleeps until this long before a chunk's moment, then spins: sleeps overshoot.
const SPIN: Duration = Duration::from_micros(150);

/// One direction's impairments (both directions get the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkSpec {
    /// One-way delay.
    pub delay: Duration,
    /// Each chunk's delay varies uniformly within ± this (never below zero, never reordering).
    pub jitter: Duration,
    /// Bandwidth cap in bits per second; `None` for none.
    pub rate_bits_per_s: Option<u64>,
    pub seed: u64,
}

impl LinkSpec {
    fn passthrough(&self) -> bool {
        self.delay.is_zero() && self.jitter.is_zero() && self.rate_bits_per_s.is_none()
    }

    /// The LAN preset: 0.25 ms one way, 1 Gbit/s.
    pub fn lan() -> LinkSpec {
        LinkSpec {
            delay: Duration::from_micros(250),
            jitter: Duration::ZERO,
            rate_bits_per_s: Some(1_000_000_000),
            seed: 1,
        }
    }

    /// The WAN preset: 20 ms ± 2 ms one way, 50 Mbit/s.
    pub fn wan() -> LinkSpec {
        LinkSpec {
            delay: Duration::from_millis(20),
            jitter: Duration::from_millis(2),
            rate_bits_per_s: Some(50_000_000),
            seed: 1,
        }
    }
}

/// What a gate lets through now.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum GateState {
    /// The link's own impairments.
    #[default]
    Open,
    /// Nothing crosses, either way: bytes wait (in the sockets' buffers, as TCP's would in a
    /// real partition) until the gate opens again, and a connection made meanwhile is not
    /// passed on to the server until then.
    Cut,
    /// Cut for the connections the linked processes (a cluster's members) make to each other;
    /// open to everyone else's (dyno's clients): a partition among the members only.
    CutPeers,
    /// These impairments instead of the link's own.
    Slow(LinkSpec),
}

/// A switch on the connections of one or more links, thrown while they run (the fault plans'
/// `partition` and `slow`). Each connection reads its gates' states as it moves bytes.
#[derive(Debug, Default)]
pub struct Gate {
    state: Mutex<GateState>,
    /// Bumped at every change: a connection compares it to notice one without locking.
    version: AtomicU64,
    /// Bumped too, when the gate is one of a group (a cluster's): a connection whose maker was
    /// not known yet asks again when any gate of the group changes.
    group: Option<Arc<AtomicU64>>,
}

impl Gate {
    /// A gate of a group whose changes all bump `group`.
    pub fn in_group(group: Arc<AtomicU64>) -> Gate {
        Gate {
            group: Some(group),
            ..Gate::default()
        }
    }

    pub fn set(&self, state: GateState) {
        if let Ok(mut s) = self.state.lock() {
            *s = state;
        }
        self.version.fetch_add(1, Ordering::SeqCst);
        if let Some(g) = &self.group {
            g.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub fn get(&self) -> GateState {
        self.state.lock().map(|s| *s).unwrap_or_default()
    }
}

/// Names the gate of whoever made a connection (its peer address, the link's address), if one
/// of the processes behind the links made it: a cut member's own connections to the others
/// are cut too.
pub type Origin = Arc<dyn Fn(SocketAddr, SocketAddr) -> Option<Arc<Gate>> + Send + Sync>;

/// How often a connection behind a gate looks at it while no bytes flow.
const GATE_LOOK: Duration = Duration::from_millis(10);

/// What one connection goes by: the link's spec, its gates (the link's own and, when known,
/// the one of whoever connected), and the link's stop flag.
struct Way {
    base: LinkSpec,
    gates: Vec<Arc<Gate>>,
    stop: Arc<AtomicBool>,
    /// Whoever made the connection, not known yet: asked again when a gate of the link's group
    /// changes (a process that connected while it was starting was not named yet).
    unknown: Option<(Origin, SocketAddr, SocketAddr)>,
}

impl Way {
    fn gated(&self) -> bool {
        !self.gates.is_empty()
    }

    /// Asks who made the connection; the maker's gate joins the connection's when named.
    fn ask_maker(&mut self) {
        if let Some((origin, peer, here)) = &self.unknown
            && let Some(g) = origin(*peer, *here)
        {
            self.gates.push(g);
            self.unknown = None;
        }
    }

    /// The impairments now; `None` while cut.
    fn now(&self) -> Option<LinkSpec> {
        let mut spec = self.base;
        // Made by one of the linked processes: its gate joined the link's own.
        let between_members = self.gates.len() > 1;
        for g in &self.gates {
            match g.get() {
                GateState::Cut => return None,
                GateState::CutPeers if between_members => return None,
                GateState::CutPeers => {}
                GateState::Slow(s) => {
                    spec = LinkSpec {
                        seed: spec.seed,
                        ..s
                    }
                }
                GateState::Open => {}
            }
        }
        Some(spec)
    }

    /// Changes when any gate does (any of the group's, while the maker is not known).
    fn version(&self) -> u64 {
        let group = (self.unknown.as_ref())
            .and_then(|_| self.gates.first())
            .and_then(|g| g.group.as_ref())
            .map_or(0, |g| g.load(Ordering::SeqCst));
        (self.gates.iter()).fold(group, |v, g| {
            v.wrapping_add(g.version.load(Ordering::SeqCst))
        })
    }

    /// Waits while cut; false when the link stopped first.
    fn wait_open(&self) -> bool {
        while self.now().is_none() {
            if self.stop.load(Ordering::SeqCst) {
                return false;
            }
            std::thread::sleep(GATE_LOOK);
        }
        true
    }
}

/// A running link.
pub struct Link {
    acceptor: crate::acceptor::Acceptor,
}

impl Link {
    /// Proxies connections accepted on `listener` to `to`, impaired by `spec`.
    pub fn start(listener: TcpListener, to: SocketAddr, spec: LinkSpec) -> io::Result<Link> {
        Link::start_gated(listener, to, spec, None, None)
    }

    /// As [`Link::start`], its connections also behind `gate` and, for those `origin` names,
    /// behind their maker's gate.
    pub fn start_gated(
        listener: TcpListener,
        to: SocketAddr,
        spec: LinkSpec,
        gate: Option<Arc<Gate>>,
        origin: Option<Origin>,
    ) -> io::Result<Link> {
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicUsize::new(0));
        let s = stop.clone();
        let here = listener.local_addr()?;
        let acceptor = crate::acceptor::Acceptor::spawn(
            "dyno-link-accept",
            listener,
            stop,
            move |listener| {
                let mut seed = spec.seed;
                for client in listener.incoming() {
                    if s.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    if live.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                        continue; // over the limit: closed at once
                    }
                    seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
                    let peer = client.peer_addr().ok();
                    let way = Way {
                        base: LinkSpec { seed, ..spec },
                        gates: gate.iter().cloned().collect(),
                        stop: s.clone(),
                        unknown: (origin.clone().zip(peer)).map(|(o, p)| (o, p, here)),
                    };
                    let conn_live = live.clone();
                    live.fetch_add(1, Ordering::SeqCst);
                    let spawned = std::thread::Builder::new()
                        .name("dyno-link-conn".into())
                        .spawn(move || {
                            let _ = join(client, to, way);
                            conn_live.fetch_sub(1, Ordering::SeqCst);
                        });
                    if spawned.is_err() {
                        live.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            },
        )?;
        Ok(Link { acceptor })
    }

    pub fn addr(&self) -> SocketAddr {
        self.acceptor.addr()
    }

    /// Stops accepting (connections in progress run until either side closes; one waiting
    /// behind a cut gate ends).
    pub fn stop(&mut self) {
        self.acceptor.stop();
    }

    /// Blocks until the link stops (for `dyno link`).
    pub fn wait(mut self) {
        self.acceptor.join();
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Why a way of moving bytes returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moved {
    /// Both sides closed, or an error ended the connection.
    Done,
    /// A gate changed: go on the new way.
    Changed,
}

/// Joins one client to a new connection to `to`, both directions impaired as `way` says, each
/// time it changes.
fn join(client: TcpStream, to: SocketAddr, mut way: Way) -> io::Result<()> {
    // Asked here, not in the accepting thread: it reads /proc.
    way.ask_maker();
    // A connection made while cut is held: the SYN would not have crossed.
    if !way.wait_open() {
        return Ok(());
    }
    let server = TcpStream::connect(to)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    // Which directions are still open: client → server, server → client.
    let mut open = [true, true];
    loop {
        let seen = way.version();
        let moved = match way.now() {
            None => {
                if !way.wait_open() {
                    return Ok(());
                }
                Moved::Changed
            }
            Some(spec) if spec.passthrough() => copy_both(&client, &server, &way, seen, &mut open),
            Some(spec) => impaired(&client, &server, spec, &way, seen, &mut open)?,
        };
        if moved == Moved::Done || open == [false, false] {
            return Ok(());
        }
        way.ask_maker();
    }
}

/// Both directions through the impairments of `spec`, a thread each, until both close or a
/// gate changes.
fn impaired(
    client: &TcpStream,
    server: &TcpStream,
    spec: LinkSpec,
    way: &Way,
    seen: u64,
    open: &mut [bool; 2],
) -> io::Result<Moved> {
    let back = LinkSpec {
        seed: spec.seed ^ 0xD1B5_4A32_D192_ED03,
        ..spec
    };
    let look = way.gated().then_some(GATE_LOOK);
    for s in [client, server] {
        s.set_read_timeout(look)?;
    }
    let (c2, s2) = (client.try_clone()?, server.try_clone()?);
    let up = open[0];
    let changed = std::thread::scope(|scope| {
        let there = up.then(|| {
            let (c, s) = (client.try_clone(), server.try_clone());
            scope.spawn(move || match (c, s) {
                (Ok(c), Ok(s)) => direction(c, s, spec, way, seen),
                _ => Moved::Done,
            })
        });
        let home = if open[1] {
            direction(s2, c2, back, way, seen)
        } else {
            Moved::Changed
        };
        let there = there.map_or(Moved::Changed, |t| t.join().unwrap_or(Moved::Done));
        [there, home]
    });
    for (i, m) in changed.into_iter().enumerate() {
        if open[i] && m == Moved::Done {
            open[i] = false;
        }
    }
    for s in [client, server] {
        s.set_read_timeout(None)?;
    }
    Ok(if open.iter().any(|o| *o) {
        Moved::Changed
    } else {
        Moved::Done
    })
}

/// After traffic, a plain-copy link keeps polling this long before it sleeps: a thread woken by
/// the kernel for each message would add its wake-up time (10-15 µs here) to every crossing.
const ACTIVE_SPIN: Duration = Duration::from_micros(200);

/// `recv` without blocking: `Ok(None)` when nothing is there.
fn recv_now(s: &TcpStream, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: a valid socket and a buffer of `buf.len()` bytes.
    let n = unsafe {
        libc::recv(
            s.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(None)
    } else {
        Err(e)
    }
}

/// A link with no impairment: one thread copies both directions, polling while traffic flows and
/// sleeping in `poll(2)` when it stops; a side that closes has its close passed on. Behind a
/// gate, it returns when the gate changes (looked at every [`GATE_LOOK`] at least).
fn copy_both(a: &TcpStream, b: &TcpStream, way: &Way, seen: u64, open: &mut [bool; 2]) -> Moved {
    let mut buf = vec![0u8; CHUNK];
    let mut last = Instant::now();
    let sleep_ms = if way.gated() {
        GATE_LOOK.as_millis() as i32
    } else {
        1000
    };
    while open[0] || open[1] {
        if way.gated() && way.version() != seen {
            return Moved::Changed;
        }
        let mut moved = false;
        for (i, (from, mut to)) in [(a, b), (b, a)].into_iter().enumerate() {
            if !open[i] {
                continue;
            }
            match recv_now(from, &mut buf) {
                Ok(Some(0)) | Err(_) => {
                    open[i] = false;
                    let _ = to.shutdown(Shutdown::Write);
                }
                Ok(Some(n)) => {
                    moved = true;
                    if to.write_all(&buf[..n]).is_err() {
                        return Moved::Done;
                    }
                }
                Ok(None) => {}
            }
        }
        if moved {
            last = Instant::now();
        } else if last.elapsed() < ACTIVE_SPIN {
            // Yield rather than spin: a thread woken on this core (the client's, the server's)
            // runs at once instead of waiting for this one to be preempted.
            std::thread::yield_now();
        } else {
            let mut fds = [
                libc::pollfd {
                    fd: a.as_raw_fd(),
                    events: if open[0] { libc::POLLIN } else { 0 },
                    revents: 0,
                },
                libc::pollfd {
                    fd: b.as_raw_fd(),
                    events: if open[1] { libc::POLLIN } else { 0 },
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfd entries.
            unsafe { libc::poll(fds.as_mut_ptr(), 2, sleep_ms) };
            last = Instant::now();
        }
    }
    Moved::Done
}

/// Carries bytes from `from` to `to` until `from` closes (then closes `to`'s write side) or a
/// gate changes.
fn direction(mut from: TcpStream, to: TcpStream, spec: LinkSpec, way: &Way, seen: u64) -> Moved {
    let (tx, rx) = sync_channel::<(Instant, Vec<u8>)>(MAX_QUEUED);
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || release(rx, to, way));
        let moved = stamp(&mut from, tx, spec, way, seen);
        match writer.join() {
            Ok(Some(to)) if moved == Moved::Done => {
                let _ = to.shutdown(Shutdown::Write);
                Moved::Done
            }
            Ok(Some(_)) => moved,
            _ => Moved::Done,
        }
    })
}
/// Reads into `buf` and returns the byte count with the moment the bytes reached the socket: the
/// kernel's receive timestamp (`SO_TIMESTAMPNS`), so the delay runs from the bytes' arrival and
/// not from this thread's wake-up. Without a timestamp, the moment the read returned.
fn read_stamped(s: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Instant)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: a valid socket and a msghdr describing valid buffers.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
    let now = Instant::now();
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let wall_now = std::time::SystemTime::now();
    // SAFETY: walking the control messages the kernel wrote into `control`.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cmsg.is_null() {
        // SAFETY: `cmsg` points into `control`, as CMSG_FIRSTHDR/NXTHDR guarantee.
        let c = unsafe { &*cmsg };
        if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
            // SAFETY: SCM_TIMESTAMPNS carries a timespec.
            let ts: libc::timespec =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            let at = std::time::UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
            let ago = wall_now.duration_since(at).unwrap_or(Duration::ZERO);
            // A timestamp far in the past is the clock, not the network: ignore it.
            if ago < Duration::from_secs(1) {
                return Ok((n as usize, now - ago));
            }
        }
        // SAFETY: as above.
        cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
    }
    Ok((n as usize, now))
}

/// Reads chunks and stamps each with the moment it may leave the link, until `from` closes
/// ([`Moved::Done`]) or a gate changes. Behind a gate, reads time out every [`GATE_LOOK`] to
/// look at it.
fn stamp(
    from: &mut TcpStream,
    tx: SyncSender<(Instant, Vec<u8>)>,
    spec: LinkSpec,
    way: &Way,
    seen: u64,
) -> Moved {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and option value.
    unsafe {
        libc::setsockopt(
            from.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    let mut rng = spec.seed | 1;
    let mut link_free = Instant::now();
    let mut last_release = Instant::now();
    let mut buf = vec![0u8; CHUNK];
    loop {
        if way.gated() && way.version() != seen {
            return Moved::Changed; // dropping `tx` tells the writer to finish
        }
        let (n, arrived) = match read_stamped(from, &mut buf) {
            Ok((0, _)) => return Moved::Done,
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => return Moved::Done,
        };
        let chunk = buf[..n].to_vec();
        let sent = match spec.rate_bits_per_s {
            Some(rate) => {
                let start = link_free.max(arrived);
                let on_wire = Duration::from_nanos(
                    (n as u64 * 8).saturating_mul(1_000_000_000) / rate.max(1),
                );
                link_free = start + on_wire;
                link_free
            }
            None => arrived,
        };
        let jitter_ns = spec.jitter.as_nanos() as i64;
        let offset = if jitter_ns > 0 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % (2 * jitter_ns as u64 + 1)) as i64 - jitter_ns
        } else {
            0
        };
        let delay_ns = (spec.delay.as_nanos() as i64 + offset).max(0) as u64;
        let release = (sent + Duration::from_nanos(delay_ns)).max(last_release);
        last_release = release;
        if tx.send((release, chunk)).is_err() {
            return Moved::Done;
        }
    }
}

/// Writes each chunk at its moment, in order (and not while a gate is cut); gives the socket
/// back when the reader is done, `None` when the other side is gone or the link stopped.
fn release(rx: Receiver<(Instant, Vec<u8>)>, mut to: TcpStream, way: &Way) -> Option<TcpStream> {
    for (at, chunk) in rx {
        loop {
            let now = Instant::now();
            if now >= at {
                break;
            }
            let left = at - now;
            if left > SPIN {
                std::thread::sleep(left - SPIN);
            } else {
                std::hint::spin_loop();
            }
        }
        if way.gated() && !way.wait_open() {
            return None;
        }
        if to.write_all(&chunk).is_err() {
            return None;
        }
    }
    Some(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_as_documented() {
        assert_eq!(LinkSpec::lan().delay, Duration::from_micros(250));
        assert_eq!(LinkSpec::wan().rate_bits_per_s, Some(50_000_000));
        assert!(!LinkSpec::wan().passthrough());
        let zero = LinkSpec {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            rate_bits_per_s: None,
            seed: 1,
        };
        assert!(zero.passthrough());
    }
}

#[cfg(test)]
mod gate_tests {
    use super::*;

    #[test]
    fn a_partition_among_members_cuts_their_connections_and_passes_clients() {
        let (member, other) = (Arc::new(Gate::default()), Arc::new(Gate::default()));
        let way = |gates: Vec<Arc<Gate>>| Way {
            base: LinkSpec::lan(),
            gates,
            stop: Arc::default(),
            unknown: None,
        };
        let client = way(vec![member.clone()]);
        let peer = way(vec![member.clone(), other.clone()]);
        member.set(GateState::CutPeers);
        assert!(client.now().is_some(), "a client still reaches the member");
        assert!(peer.now().is_none(), "the other members do not");
        // The member's own connections to the others pass their links, behind its gate.
        let outgoing = way(vec![other.clone(), member.clone()]);
        assert!(outgoing.now().is_none());
        member.set(GateState::Cut);
        assert!(client.now().is_none(), "a whole partition cuts clients too");
        member.set(GateState::Open);
        assert!(peer.now().is_some());
    }
}
