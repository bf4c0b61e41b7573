//! Driving a secure channel ([`Channel`], TLS) over a socket: flushing its ciphertext, taking its
//! plaintext, and a blocking handshake for connections opened before the measured start.

use super::*;

/// Writes a channel's pending ciphertext: `Ok(true)` when all of it went out, `Ok(false)` when
/// the socket is full (the rest goes when it is writable again).
pub(super) fn flush_tls(tls: &mut dyn Channel, socket: &mut dyn Write) -> io::Result<bool> {
    while tls.wants_write() {
        match tls.write_tls(socket) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Takes plaintext from a channel into `buf`, reading and processing ciphertext from the socket
/// as needed: the inner result is what a plain socket's `read` would give (`Ok(0)` at the end,
/// `WouldBlock` when nothing more has arrived); the outer `Err` is a TLS failure.
/// Reads what arrived on a socket, through its secure channel if it has one (see
/// [`recv_tls`]).
pub(super) fn recv(
    socket: &mut TcpStream,
    tls: Option<&mut Box<dyn Channel>>,
    buf: &mut [u8],
) -> Result<io::Result<usize>, OpError> {
    match tls {
        None => Ok(socket.read(buf)),
        Some(tls) => recv_tls(tls.as_mut(), socket, buf),
    }
}

pub(super) fn recv_tls(
    tls: &mut dyn Channel,
    socket: &mut TcpStream,
    buf: &mut [u8],
) -> Result<io::Result<usize>, OpError> {
    let mut closed = false;
    // Each pass reads from the socket; it ends when the socket has nothing more.
    loop {
        match tls.recv(buf) {
            Ok(n) => return Ok(Ok(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && closed => return Ok(Ok(0)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // TCP closed without TLS's close_notify: an end all the same.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Ok(0)),
            Err(e) => return Ok(Err(e)),
        }
        match tls.read_tls(socket) {
            Ok(0) => closed = true,
            Ok(_) => {}
            Err(e) => return Ok(Err(e)),
        }
        tls.process()?;
        // Handshake messages and alerts; a full socket keeps them for the next writable event.
        if let Err(e) = flush_tls(tls, socket) {
            return Ok(Err(e));
        }
    }
}

/// Completes a channel's handshake on a blocking socket: each read and write within `timeout`,
/// and at most 64 rounds of them.
pub fn handshake_blocking(
    tls: &mut dyn Channel,
    s: &mut std::net::TcpStream,
    timeout: Duration,
) -> io::Result<()> {
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    // A handshake is a few round trips; this bounds a server that keeps sending without ending it.
    for _ in 0..64 {
        while tls.wants_write() {
            tls.write_tls(s)?;
        }
        if !tls.is_handshaking() {
            s.set_read_timeout(None)?;
            s.set_write_timeout(None)?;
            return Ok(());
        }
        if tls.read_tls(s)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        tls.process()
            .map_err(|e| io::Error::other(e.message.to_string()))?;
    }
    Err(io::Error::other("the TLS handshake did not end"))
}
