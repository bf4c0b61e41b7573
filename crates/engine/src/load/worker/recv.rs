//! What arrives on a plain connection, on either backend: read from the socket (epoll) or
//! handed over by the ring (io_uring), fed to its response, or its failure.

use super::*;

impl Worker<'_> {
    /// Reads what has arrived; completes the response when the reader says so.
    pub(super) fn read(&mut self, ci: usize, now: u64) {
        loop {
            let c = &mut self.conns[ci];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            self.counters.syscalls += 1;
            let got = match recv(stream, c.tls.as_mut(), &mut self.buf) {
                Ok(got) => got,
                Err(e) => {
                    self.fail(ci, e, now);
                    return;
                }
            };
            if let (Some(from), Some(tls)) = (c.handshake_from, c.tls.as_ref())
                && !tls.is_handshaking()
            {
                self.handshake
                    .saturating_record(now.saturating_sub(from).max(1));
                c.handshake_from = None;
            }
            let (n, eof) = match got {
                Ok(0) => (0, true),
                Ok(n) => (n, false),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.read_failed(ci, &e, now);
                    return;
                }
            };
            if !self.take(ci, n, eof, now) {
                return;
            }
        }
    }

    /// A receive failed: the request in flight with it, or only the connection.
    pub(super) fn read_failed(&mut self, ci: usize, e: &io::Error, now: u64) {
        match self.conns[ci].busy() {
            true => self.fail(ci, io_err("receive", e), now),
            false => self.drop_stream(ci),
        }
    }

    /// `n` bytes received on connection `ci` (in `self.buf`), or its end: fed to its response;
    /// whether more is awaited.
    pub(super) fn take(&mut self, ci: usize, n: usize, eof: bool, now: u64) -> bool {
        self.counters.bytes_in += n as u64;
        let c = &mut self.conns[ci];
        // On the ring, a response may come before its send's completion is seen.
        let answering = c.state == State::Reading
            || (c.state == State::Writing && self.uring.is_some() && c.stream.is_some());
        if !answering {
            // Bytes or a close while no request is in flight.
            if n > 0 && c.state == State::Idle {
                // A server talking out of turn: the connection can no longer be trusted.
                self.drop_stream(ci);
                self.rec.fail(OpError::new(
                    ErrorClass::Protocol,
                    "bytes received with no request in flight",
                ));
            } else if eof && c.busy() {
                // (On the ring, a socket still connecting.)
                let e = OpError::new(ErrorClass::Reset, "connection closed while connecting");
                self.fail(ci, e, now);
            } else if eof {
                self.drop_stream(ci);
            }
            return false;
        }
        match c.reader.feed(&self.buf[..n], eof) {
            Ok(Feed::More) if eof => {
                let e = OpError::new(
                    ErrorClass::Reset,
                    "connection closed before the response ended",
                );
                self.fail(ci, e, now);
                false
            }
            Ok(Feed::More) => true,
            Ok(Feed::Done {
                used,
                outcome,
                keep_alive,
            }) => {
                if used < n {
                    let e = OpError::new(ErrorClass::Protocol, "more bytes than the response");
                    self.fail(ci, e, now);
                    return false;
                }
                self.complete(ci, outcome, keep_alive && !eof, now);
                false
            }
            Err(e) => {
                self.fail(ci, e, now);
                false
            }
        }
    }
}
