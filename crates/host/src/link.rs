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
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
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
#[derive(Debug, Clone, Copy, PartialEq)]
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

/// A running link.
pub struct Link {
    acceptor: crate::acceptor::Acceptor,
}

impl Link {
    /// Proxies connections accepted on `listener` to `to`, impaired by `spec`.
    pub fn start(listener: TcpListener, to: SocketAddr, spec: LinkSpec) -> io::Result<Link> {
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicUsize::new(0));
        let s = stop.clone();
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
                    let spec = LinkSpec { seed, ..spec };
                    let conn_live = live.clone();
                    live.fetch_add(1, Ordering::SeqCst);
                    let spawned = std::thread::Builder::new()
                        .name("dyno-link-conn".into())
                        .spawn(move || {
                            let _ = join(client, to, spec);
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

    /// Stops accepting (connections in progress run until either side closes).
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

/// Joins one client to a new connection to `to`, both directions impaired.
fn join(client: TcpStream, to: SocketAddr, spec: LinkSpec) -> io::Result<()> {
    let server = TcpStream::connect(to)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    if spec.passthrough() {
        copy_both(&client, &server);
        return Ok(());
    }
    let (c2, s2) = (client.try_clone()?, server.try_clone()?);
    let back = LinkSpec {
        seed: spec.seed ^ 0xD1B5_4A32_D192_ED03,
        ..spec
    };
    let there = std::thread::Builder::new()
        .name("dyno-link-up".into())
        .spawn(move || direction(client, server, spec))?;
    direction(s2, c2, back);
    let _ = there.join();
    Ok(())
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
/// sleeping in `poll(2)` when it stops; a side that closes has its close passed on.
fn copy_both(a: &TcpStream, b: &TcpStream) {
    let mut buf = vec![0u8; CHUNK];
    let mut open = [true, true];
    let mut last = Instant::now();
    while open[0] || open[1] {
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
                        return;
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
            unsafe { libc::poll(fds.as_mut_ptr(), 2, 1000) };
            last = Instant::now();
        }
    }
}

/// Carries bytes from `from` to `to` until `from` closes, then closes `to`'s write side.
fn direction(mut from: TcpStream, to: TcpStream, spec: LinkSpec) {
    let (tx, rx) = sync_channel::<(Instant, Vec<u8>)>(MAX_QUEUED);
    let writer = std::thread::Builder::new()
        .name("dyno-link-write".into())
        .spawn(move || release(rx, to));
    let Ok(writer) = writer else { return };
    stamp(&mut from, tx, spec);
    let _ = writer.join();
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

/// Reads chunks and stamps each with the moment it may leave the link.
fn stamp(from: &mut TcpStream, tx: SyncSender<(Instant, Vec<u8>)>, spec: LinkSpec) {
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
        let (n, arrived) = match read_stamped(from, &mut buf) {
            Ok((0, _)) | Err(_) => return, // dropping `tx` tells the writer to finish
            Ok(r) => r,
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
            return;
        }
    }
}

/// Writes each chunk at its moment, in order; closes the write side when the reader is done.
fn release(rx: Receiver<(Instant, Vec<u8>)>, mut to: TcpStream) {
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
        if to.write_all(&chunk).is_err() {
            return;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
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
