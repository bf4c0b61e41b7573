//! HTTP/2 (RFC 9113) for the load engine: one connection's client side as an
//! [`engine::load::Session`]. The request's header block is encoded once per target
//! ([`hpack::encode`]); a request is its HEADERS frame (and DATA frames for a body) with the
//! next stream number. Replies are read frame by frame from what arrives, a frame cut by a read
//! kept until the rest comes: responses end by stream, judged by `:status` as HTTP/1.1's are;
//! SETTINGS, PING and WINDOW_UPDATE are answered; RST_STREAM ends its request with the error's
//! name, GOAWAY the requests the server did not take. Written by hand rather than on the `h2`
//! crate: the engine drives sockets itself and allocates nothing per request, which `h2`'s
//! futures, `http::Request` and shared buffers per stream do (ARCHITECTURE.md).

pub use host::h2::{frame, hpack};

use engine::driver::{ErrorClass, OpError};
use engine::load::{Ended, Session};
use frame::Head;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The largest header block dyno assembles from HEADERS and CONTINUATION frames.
pub const MAX_HEADER_BLOCK: usize = 256 * 1024;
/// The HPACK table size dyno allows the server (the protocol's default).
const TABLE_SIZE: usize = 4096;

/// One request of a target (of its mix, each with its own header block and body), and the
/// windows dyno offers (the first request's count for the connection): made once per target.
#[derive(Debug, Clone)]
pub struct Request {
    pub block: Vec<u8>,
    pub body: Vec<u8>,
    pub max_response: u64,
    /// The receive window of each stream, and of the connection (SETTINGS_INITIAL_WINDOW_SIZE
    /// and a WINDOW_UPDATE on stream 0).
    pub stream_window: u32,
    pub connection_window: u32,
    /// gRPC: a response is judged by its `grpc-status` ([`crate::grpc::outcome`]), not only
    /// by its `:status`.
    pub grpc: bool,
    /// gRPC server streaming: each message of a response is told as it comes.
    pub streaming: bool,
}

struct Stream {
    slot: usize,
    /// Which of the target's requests it carries.
    which: usize,
    status: u16,
    /// Bytes received on it since its last WINDOW_UPDATE.
    unacked: u32,
    /// Its body: sent so far, and the window the server gives it.
    sent: usize,
    send_window: i64,
    received: u64,
    /// gRPC: the `grpc-status` its headers or trailers carried (`u32::MAX`: not a number).
    grpc: Option<u32>,
    /// gRPC server streaming: where its response is in its messages.
    framing: crate::grpc::Framing,
}

/// One HTTP/2 connection's client state.
pub struct H2 {
    /// The target's requests (one, or its mix's).
    reqs: Arc<[Request]>,
    /// Whether any of them has a body.
    bodies: bool,
    hpack: hpack::Decoder,
    /// The bytes of a frame cut by a read.
    partial: Vec<u8>,
    /// A header block being assembled: its stream, whether its HEADERS ended the stream.
    block: Vec<u8>,
    block_of: Option<(u32, bool)>,
    streams: FxHashMap<u32, Stream>,
    next_id: u32,
    peer_max_streams: usize,
    peer_window: i64,
    peer_max_frame: usize,
    send_window: i64,
    /// Bytes received on the connection since its last WINDOW_UPDATE.
    unacked: u32,
    goaway: bool,
    /// Streams whose bodies may go on (reused).
    resume: Vec<u32>,
    /// gRPC: the `grpc-message` of the header block last decoded (reused).
    grpc_message: Vec<u8>,
    /// Frames in a row that answered no request (pings, settings, priorities, unknown types,
    /// window updates that let no body go on): past [`MOST_IDLE_FRAMES`], the server is
    /// flooding the connection.
    idle: u32,
}

/// The most frames in a row that answer no request: a server that keeps the connection busy
/// with nothing else would hold its reader for ever (a ping answered each 10 s takes a day to
/// come to this).
const MOST_IDLE_FRAMES: u32 = 10_000;

/// A stream the server reset with `code`: `refused` for REFUSED_STREAM (the server's word that
/// it did not process it), else `reset`, with the error's name.
pub(crate) fn reset_error(code: u32) -> OpError {
    let class = if code == 0x7 {
        ErrorClass::Refused
    } else {
        ErrorClass::Reset
    };
    let name = frame::error_name(code);
    OpError::new(
        class,
        format!("HTTP/2: the server reset the stream ({name})"),
    )
}

/// Decimal digits (at most nine) as a number.
pub(crate) fn number(v: &[u8]) -> Option<u32> {
    (!v.is_empty() && v.len() <= 9 && v.iter().all(u8::is_ascii_digit))
        .then(|| v.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

fn protocol(message: String) -> OpError {
    OpError::new(ErrorClass::Protocol, format!("HTTP/2: {message}"))
}

/// A connection error: GOAWAY with `code` is written, the error returned.
fn connection_error(out: &mut Vec<u8>, code: u32, message: &str) -> OpError {
    frame::goaway(out, 0, code);
    protocol(format!("{message} ({})", frame::error_name(code)))
}

/// A payload of exactly four bytes, as a number; else a FRAME_SIZE_ERROR saying `what`.
fn word(p: &[u8], out: &mut Vec<u8>, what: &str) -> Result<u32, OpError> {
    (p.try_into().map(u32::from_be_bytes))
        .map_err(|_| connection_error(out, frame::FRAME_SIZE_ERROR, what))
}

impl H2 {
    pub fn new(reqs: Arc<[Request]>) -> H2 {
        assert!(!reqs.is_empty(), "a target has a request");
        H2 {
            bodies: reqs.iter().any(|r| !r.body.is_empty()),
            reqs,
            hpack: hpack::Decoder::new(TABLE_SIZE),
            partial: Vec::new(),
            block: Vec::new(),
            block_of: None,
            streams: FxHashMap::default(),
            next_id: 1,
            peer_max_streams: usize::MAX,
            peer_window: frame::DEFAULT_WINDOW,
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            send_window: frame::DEFAULT_WINDOW,
            unacked: 0,
            goaway: false,
            resume: Vec::new(),
            grpc_message: Vec::new(),
            idle: 0,
        }
    }

    /// Sends what the windows allow of stream `id`'s body.
    fn send_body(&mut self, id: u32, out: &mut Vec<u8>) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let body = &self.reqs[s.which].body;
        while s.sent < body.len() {
            let room = s
                .send_window
                .min(self.send_window)
                .min(self.peer_max_frame as i64);
            if room <= 0 {
                return;
            }
            let n = (body.len() - s.sent).min(room as usize);
            let end = s.sent + n == body.len();
            frame::data(out, id, &body[s.sent..s.sent + n], end);
            s.sent += n;
            s.send_window -= n as i64;
            self.send_window -= n as i64;
        }
    }

    /// Sends what the windows now allow of every body not all sent.
    fn resume_bodies(&mut self, out: &mut Vec<u8>) {
        if !self.bodies {
            return;
        }
        let mut waiting = std::mem::take(&mut self.resume);
        waiting.extend(
            (self.streams.iter())
                .filter(|(_, s)| s.sent < self.reqs[s.which].body.len())
                .map(|(id, _)| *id),
        );
        for &id in &waiting {
            self.send_body(id, out);
        }
        waiting.clear();
        self.resume = waiting;
    }

    /// Stream `id`'s response is complete: judged by its status, as HTTP/1.1's is, or by
    /// its `grpc-status`.
    fn respond(&mut self, id: u32, out: &mut Vec<u8>, done: &mut dyn FnMut(usize, Ended)) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        let outcome = if self.reqs[0].grpc {
            crate::grpc::outcome(s.status, s.grpc, &self.grpc_message)
        } else {
            crate::http::reader::outcome(s.status)
        };
        self.end(id, Ended::Response(outcome), out, done);
    }

    /// Stream `id` is broken: reset with `code`, its request failed as `protocol`.
    fn fail_stream(
        &mut self,
        id: u32,
        code: u32,
        why: &'static str,
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) {
        frame::rst_stream(out, id, code);
        let e = OpError::new(ErrorClass::Protocol, why);
        self.end(id, Ended::Failed(e), out, done);
    }

    /// Stream `id` ended: its request is done as `how` says.
    fn end(&mut self, id: u32, how: Ended, out: &mut Vec<u8>, done: &mut dyn FnMut(usize, Ended)) {
        if let Some(s) = self.streams.remove(&id) {
            // A response that came before the whole body went: the rest is not sent, and the
            // stream is let go on both sides (RFC 9113 §8.1).
            if s.sent < self.reqs[s.which].body.len() {
                frame::rst_stream(out, id, frame::CANCEL);
            }
            done(s.slot, how);
        }
    }

    /// The whole frames at the start of `input`: how many bytes they took, and the first error.
    fn frames(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) -> (usize, Result<(), OpError>) {
        let mut at = 0;
        while let Some(head) = input.get(at..at + frame::HEADER_LEN) {
            let h = Head::parse(head.try_into().unwrap_or(&[0; frame::HEADER_LEN]));
            if h.len > frame::DEFAULT_MAX_FRAME {
                let e = connection_error(
                    out,
                    frame::FRAME_SIZE_ERROR,
                    "a frame larger than dyno's SETTINGS allow",
                );
                return (at, Err(e));
            }
            let Some(p) = input.get(at + frame::HEADER_LEN..at + frame::HEADER_LEN + h.len) else {
                break;
            };
            if let Err(e) = self.frame(h, p, out, done) {
                return (at, Err(e));
            }
            at += frame::HEADER_LEN + h.len;
        }
        (at, Ok(()))
    }

    /// One frame (its header and payload).
    fn frame(
        &mut self,
        h: Head,
        p: &[u8],
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) -> Result<(), OpError> {
        if let Some((id, _)) = self.block_of
            && (h.kind != frame::CONTINUATION || h.stream != id)
        {
            return Err(connection_error(
                out,
                frame::PROTOCOL_ERROR,
                "a header block interrupted",
            ));
        }
        match h.kind {
            frame::DATA | frame::HEADERS | frame::CONTINUATION | frame::RST_STREAM => self.idle = 0,
            _ => self.idle += 1,
        }
        if self.idle > MOST_IDLE_FRAMES {
            return Err(connection_error(
                out,
                frame::ENHANCE_YOUR_CALM,
                "more than 10,000 frames in a row that answer no request",
            ));
        }
        match h.kind {
            frame::DATA => self.data(h, p, out, done),
            frame::HEADERS => {
                let mut p = frame::unpad(h.flags, p).ok_or_else(|| {
                    connection_error(out, frame::PROTOCOL_ERROR, "padding longer than its frame")
                })?;
                if h.flags & frame::PRIORITY_FLAG != 0 {
                    p = p.get(5..).ok_or_else(|| {
                        connection_error(out, frame::FRAME_SIZE_ERROR, "a HEADERS frame too short")
                    })?;
                }
                if h.stream == 0 {
                    return Err(connection_error(
                        out,
                        frame::PROTOCOL_ERROR,
                        "HEADERS on stream 0",
                    ));
                }
                self.block.clear();
                self.fragment(h, p, h.flags & frame::END_STREAM != 0, out, done)
            }
            frame::CONTINUATION => match self.block_of {
                Some((_, end_stream)) => self.fragment(h, p, end_stream, out, done),
                None => Err(connection_error(
                    out,
                    frame::PROTOCOL_ERROR,
                    "CONTINUATION after no HEADERS",
                )),
            },
            frame::RST_STREAM if h.stream == 0 => Err(connection_error(
                out,
                frame::PROTOCOL_ERROR,
                "RST_STREAM on stream 0",
            )),
            frame::PING | frame::GOAWAY if h.stream != 0 => Err(connection_error(
                out,
                frame::PROTOCOL_ERROR,
                "PING or GOAWAY on a stream",
            )),
            frame::RST_STREAM => self.reset(h, p, out, done),
            frame::SETTINGS => self.settings(h, p, out),
            frame::PING => {
                if p.len() != 8 {
                    return Err(connection_error(
                        out,
                        frame::FRAME_SIZE_ERROR,
                        "a PING frame not of 8 bytes",
                    ));
                }
                if h.flags & frame::ACK == 0 {
                    frame::ping_ack(out, p);
                }
                Ok(())
            }
            frame::GOAWAY => self.goaway(p, out, done),
            frame::WINDOW_UPDATE => {
                let before = out.len();
                let r = self.window_update(h, p, out, done);
                if out.len() > before {
                    // It let a body that waited go on: not idle.
                    self.idle = 0;
                }
                r
            }
            frame::PUSH_PROMISE => Err(connection_error(
                out,
                frame::PROTOCOL_ERROR,
                "PUSH_PROMISE, with push disabled",
            )),
            // PRIORITY, and frames of types this version does not know: read past (§5.5).
            _ => Ok(()),
        }
    }

    /// RST_STREAM: the stream's request fails with the error's name (`refused` for
    /// REFUSED_STREAM, the server's word that it did not process it).
    fn reset(
        &mut self,
        h: Head,
        p: &[u8],
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) -> Result<(), OpError> {
        let code = word(p, out, "an RST_STREAM frame not of 4 bytes")?;
        let e = reset_error(code);
        self.end(h.stream, Ended::Failed(e), out, done);
        Ok(())
    }

    fn data(
        &mut self,
        h: Head,
        p: &[u8],
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) -> Result<(), OpError> {
        if h.stream == 0 {
            return Err(connection_error(
                out,
                frame::PROTOCOL_ERROR,
                "DATA on stream 0",
            ));
        }
        let body = frame::unpad(h.flags, p).ok_or_else(|| {
            connection_error(out, frame::PROTOCOL_ERROR, "padding longer than its frame")
        })?;
        // The whole frame counts against the windows, padding included.
        let len = p.len() as u32;
        self.unacked += len;
        if self.unacked > 0 && self.unacked >= self.reqs[0].connection_window / 2 {
            frame::window_update(out, 0, self.unacked);
            self.unacked = 0;
        }
        let end_stream = h.flags & frame::END_STREAM != 0;
        let Some(s) = self.streams.get_mut(&h.stream) else {
            // A stream dyno reset or finished: its bytes were counted above, and that is all.
            return Ok(());
        };
        if s.status == 0 {
            self.fail_stream(
                h.stream,
                frame::PROTOCOL_ERROR,
                "HTTP/2: DATA before a response's headers",
                out,
                done,
            );
            return Ok(());
        }
        s.received += body.len() as u64;
        if self.reqs[s.which].streaming && s.status == 200 {
            let slot = s.slot;
            s.framing.take(body, || done(slot, Ended::Message));
        }
        if s.received > self.reqs[0].max_response {
            self.fail_stream(
                h.stream,
                frame::CANCEL,
                "HTTP/2: a response larger than max_response",
                out,
                done,
            );
            return Ok(());
        }
        if end_stream {
            self.respond(h.stream, out, done);
            return Ok(());
        }
        s.unacked += len;
        if s.unacked > 0 && s.unacked >= self.reqs[0].stream_window / 2 {
            frame::window_update(out, h.stream, s.unacked);
            s.unacked = 0;
        }
        Ok(())
    }

    /// A piece of a header block: decoded once its last piece came.
    fn fragment(
        &mut self,
        h: Head,
        p: &[u8],
        end_stream: bool,
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) -> Result<(), OpError> {
        if self.block.len() + p.len() > MAX_HEADER_BLOCK {
            return Err(connection_error(
                out,
                frame::PROTOCOL_ERROR,
                "a header block larger than 256 KiB",
            ));
        }
        self.block.extend_from_slice(p);
        if h.flags & frame::END_HEADERS == 0 {
            self.block_of = Some((h.stream, end_stream));
            return Ok(());
        }
        self.block_of = None;
        // `None`: no :status; `Some(None)`: one that is not three digits, or several.
        let mut status: Option<Option<u16>> = None;
        let mut grpc = None;
        let mut message = std::mem::take(&mut self.grpc_message);
        message.clear();
        let block = std::mem::take(&mut self.block);
        // grpc-status and grpc-message count only in the block that ends the call.
        let wanted_grpc = self.reqs[0].grpc && end_stream;
        let wanted = |n: &[u8]| {
            n == b":status" || (wanted_grpc && (n == b"grpc-status" || n == b"grpc-message"))
        };
        let decoded = self.hpack.decode(&block, &wanted, &mut |n, v| match n {
            b":status" => {
                let code = number(v).filter(|_| v.len() == 3).map(|c| c as u16);
                status = Some(if status.is_some() { None } else { code });
            }
            b"grpc-status" => grpc = Some(number(v).unwrap_or(u32::MAX)),
            _ => message.extend_from_slice(v),
        });
        self.block = block;
        self.grpc_message = message;
        decoded.map_err(|e| connection_error(out, frame::COMPRESSION_ERROR, e.0))?;
        let Some(s) = self.streams.get_mut(&h.stream) else {
            return Ok(());
        };
        match status {
            // An informational response (not 101, which HTTP/2 has no use for): the real one
            // follows.
            Some(Some(100 | 102..=199)) if !end_stream && s.status == 0 => return Ok(()),
            Some(Some(code @ 200..=599)) if s.status == 0 => s.status = code,
            None if s.status != 0 && end_stream => {} // trailers
            _ => {
                self.fail_stream(
                    h.stream,
                    frame::PROTOCOL_ERROR,
                    "HTTP/2: a response without one :status",
                    out,
                    done,
                );
                return Ok(());
            }
        }
        if grpc.is_some() {
            s.grpc = grpc;
        }
        if end_stream {
            self.respond(h.stream, out, done);
        }
        Ok(())
    }
}

impl Session for H2 {
    fn start(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (
                    frame::SETTINGS_INITIAL_WINDOW_SIZE,
                    self.reqs[0].stream_window,
                ),
                (frame::SETTINGS_HEADER_TABLE_SIZE, TABLE_SIZE as u32),
            ],
        );
        let extra = self.reqs[0]
            .connection_window
            .saturating_sub(frame::DEFAULT_WINDOW as u32);
        if extra > 0 {
            frame::window_update(out, 0, extra);
        }
    }

    fn can_open(&self) -> bool {
        !self.closing() && self.streams.len() < self.peer_max_streams
    }

    fn open(&mut self, slot: usize, which: usize, out: &mut Vec<u8>) {
        let id = self.next_id;
        self.next_id += 2;
        let req = &self.reqs[which];
        let body = !req.body.is_empty();
        frame::headers(out, id, &req.block, !body, self.peer_max_frame);
        let s = Stream {
            slot,
            which,
            status: 0,
            unacked: 0,
            sent: 0,
            send_window: self.peer_window,
            received: 0,
            grpc: None,
            framing: Default::default(),
        };
        self.streams.insert(id, s);
        if body {
            self.send_body(id, out);
        }
    }

    fn feed(
        &mut self,
        data: &[u8],
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) -> Result<(), OpError> {
        let mut partial = std::mem::take(&mut self.partial);
        let buffered = !partial.is_empty();
        if buffered {
            partial.extend_from_slice(data);
        }
        let input: &[u8] = if buffered { &partial } else { data };
        let (at, result) = self.frames(input, out, done);
        if buffered {
            partial.drain(..at);
        } else {
            partial.extend_from_slice(&data[at..]);
        }
        self.partial = partial;
        result
    }

    fn cancel(&mut self, slot: usize, out: &mut Vec<u8>) {
        let id = self
            .streams
            .iter()
            .find(|(_, s)| s.slot == slot)
            .map(|(id, _)| *id);
        if let Some(id) = id {
            self.streams.remove(&id);
            frame::rst_stream(out, id, frame::CANCEL);
        }
    }

    fn closing(&self) -> bool {
        self.goaway || self.next_id > frame::MAX_WINDOW as u32
    }
}

mod control;
#[cfg(test)]
mod tests;
