//! One HTTP/2 connection to a gRPC server for calls one after another, on a blocking socket
//! (a client's fiber, or a thread): etcd's driver, and asking a server's reflection service. A
//! call is its HEADERS frame (the header block made once per method when the connection opens)
//! and its message in DATA frames as the server's windows allow, written at once; the answer is
//! read frame by frame until its stream ends, its one message kept and the verdict taken from
//! the trailers' `grpc-status` ([`super::outcome`]). Every frame the server sends is bounded,
//! and every header block is decoded (HPACK's table follows the server's) whichever stream it
//! is on. The load engine's calls go the other way, many at once (`crate::http::h2`).

use crate::http::h2::{frame, hpack, number};
use engine::driver::{ErrorClass, OpError};
use engine::fiber::Stream;
use std::borrow::Cow;
use std::io::{BufReader, Read, Write};
use std::time::Duration;

/// The receive window dyno offers for each stream and the connection.
const WINDOW: u32 = (1 << 30) - 1;
/// The largest answer (its message) dyno accepts.
const MAX_MESSAGE: usize = 64 << 20;
/// The largest header block dyno assembles.
const MAX_BLOCK: usize = 64 << 10;

pub struct Conn {
    input: BufReader<Stream>,
    hpack: hpack::Decoder,
    /// Each method's header block, by its place in the paths the connection was opened with.
    blocks: Vec<Vec<u8>>,
    next_id: u32,
    out: Vec<u8>,
    /// Acknowledgements of the server's PINGs, sent with the next write dyno makes anyway
    /// (most often the next call's request), rather than each in a write of its own: etcd
    /// pings as a request's data arrives, and an acknowledgement sent apart in every call cost
    /// dyno a send and etcd a wake-up each (21,283 control-only segments in 2 s of reads and
    /// 2 s of writes, against 4,398 once they went with the next request; 2026-11-27).
    acks: Vec<u8>,
    /// The request message, framed (flag, length, bytes).
    body: Vec<u8>,
    payload: Vec<u8>,
    block: Vec<u8>,
    /// Whether the HEADERS frame of the block being assembled ended its stream.
    block_ends: bool,
    grpc_message: Vec<u8>,
    /// The server's windows for what dyno sends: the connection's, and a new stream's.
    send_window: i64,
    stream_window: i64,
    max_frame: usize,
    /// Bytes received on the connection since dyno last gave them back.
    unacked: u32,
    /// The server said GOAWAY, or an answer never ended: no new call on this connection.
    gone: bool,
    /// How long a call's answer may take, all told (each read waits that long at most, too).
    timeout: Duration,
}

/// What a call's answer said so far: its `:status`, `grpc-status`, and whether it ended.
#[derive(Default)]
struct Answer {
    status: u16,
    grpc: Option<u32>,
    ended: bool,
}

fn protocol(msg: impl Into<Cow<'static, str>>) -> OpError {
    OpError::new(ErrorClass::Protocol, msg)
}

fn io_err(context: &'static str) -> impl Fn(std::io::Error) -> OpError {
    move |e| OpError::io(context, &e)
}

/// A connection to `endpoint` (`HOST:PORT`), its reads and writes bounded by `timeout`.
pub fn connect(endpoint: &str, timeout: Duration) -> Result<Stream, OpError> {
    let addr = crate::net::resolve(endpoint, None)
        .map_err(|e| OpError::new(ErrorClass::Refused, e.message))?;
    Stream::open(&addr, timeout.min(Duration::from_secs(2)), timeout).map_err(io_err("connect"))
}

impl Conn {
    /// Connects to `endpoint` for calls to `paths` (`/package.Service/Method`), and sends
    /// HTTP/2's preface and dyno's settings (the server's come with the first answer).
    pub fn open(endpoint: &str, timeout: Duration, paths: &[&str]) -> Result<Conn, OpError> {
        let mut s = connect(endpoint, timeout)?;
        let agent = format!("dyno/{}", env!("CARGO_PKG_VERSION"));
        let blocks = (paths.iter())
            .map(|path| {
                hpack::encode(&[
                    (":method", "POST"),
                    (":scheme", "http"),
                    (":path", path),
                    (":authority", endpoint),
                    ("content-type", "application/grpc"),
                    ("te", "trailers"),
                    ("user-agent", &agent),
                ])
            })
            .collect();
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, WINDOW),
            ],
        );
        frame::window_update(&mut out, 0, WINDOW - frame::DEFAULT_WINDOW as u32);
        s.write_all(&out).map_err(io_err("send"))?;
        out.clear();
        Ok(Conn {
            input: BufReader::with_capacity(16 << 10, s),
            hpack: hpack::Decoder::new(4096),
            blocks,
            next_id: 1,
            out,
            acks: Vec::new(),
            body: Vec::with_capacity(512),
            payload: Vec::with_capacity(1024),
            block: Vec::new(),
            block_ends: false,
            grpc_message: Vec::new(),
            send_window: frame::DEFAULT_WINDOW,
            stream_window: frame::DEFAULT_WINDOW,
            max_frame: frame::DEFAULT_MAX_FRAME,
            unacked: 0,
            gone: false,
            timeout,
        })
    }

    /// Whether calls may still go on it (the server has not said GOAWAY, every answer ended).
    pub fn usable(&self) -> bool {
        !self.gone
    }

    /// Calls the method of `paths[path]` with `request`; the answer's message (without its
    /// framing) in `reply`.
    pub fn call(
        &mut self,
        path: usize,
        request: &impl prost::Message,
        reply: &mut Vec<u8>,
    ) -> Result<(), OpError> {
        if self.gone || self.next_id > frame::MAX_WINDOW as u32 {
            // A server draining the connection may wait for the acknowledgements it is owed.
            self.out.append(&mut self.acks);
            let _ = self.flush();
            return Err(OpError::new(
                ErrorClass::Reset,
                "gRPC: no new call on this connection: the server closed it (GOAWAY), or an answer never ended",
            ));
        }
        let id = self.next_id;
        self.next_id += 2;
        self.body.clear();
        self.body.extend_from_slice(&[0; 5]);
        request
            .encode(&mut self.body)
            .map_err(|e| protocol(format!("gRPC: a request too large to encode: {e}")))?;
        let len = (self.body.len() - 5) as u32;
        self.body[1..5].copy_from_slice(&len.to_be_bytes());
        let block = (self.blocks.get(path)).ok_or_else(|| protocol("gRPC: no such method"))?;
        frame::headers(&mut self.out, id, block, false, self.max_frame);
        reply.clear();
        let mut answer = Answer::default();
        let mut stream_window = self.stream_window;
        let mut sent = 0;
        // Frames that keep coming (pings, settings, other streams' data) but never the end.
        let mut bound = engine::fiber::Bound::new(self.timeout);
        loop {
            // As much of the message as the windows allow, then what the server says.
            while sent < self.body.len() {
                let room = (self.send_window.min(stream_window)).min(self.max_frame as i64);
                if room <= 0 {
                    break;
                }
                let n = (self.body.len() - sent).min(room as usize);
                let end = sent + n == self.body.len();
                frame::data(&mut self.out, id, &self.body[sent..sent + n], end);
                sent += n;
                self.send_window -= n as i64;
                stream_window -= n as i64;
            }
            self.flush()?;
            if answer.ended {
                break;
            }
            if bound.passed() {
                self.gone = true;
                return Err(crate::net::no_end("gRPC", "call", self.timeout));
            }
            self.read_frame(id, &mut answer, &mut stream_window, reply)?;
        }
        super::outcome(answer.status, answer.grpc, &self.grpc_message)?;
        match reply.get(..5) {
            Some([0, l @ ..])
                if u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize == reply.len() - 5 =>
            {
                reply.drain(..5);
                Ok(())
            }
            _ => Err(protocol(
                "gRPC: an answer that is not one uncompressed message",
            )),
        }
    }

    fn flush(&mut self) -> Result<(), OpError> {
        if !self.out.is_empty() {
            self.out.append(&mut self.acks);
            (self.input.get_mut())
                .write_all(&self.out)
                .map_err(io_err("send"))?;
            self.out.clear();
        }
        Ok(())
    }

    /// Reads one frame and takes it into account: call `id`'s answer, the windows, the
    /// server's settings and pings.
    fn read_frame(
        &mut self,
        id: u32,
        answer: &mut Answer,
        stream_window: &mut i64,
        reply: &mut Vec<u8>,
    ) -> Result<(), OpError> {
        let mut head = [0u8; frame::HEADER_LEN];
        self.input.read_exact(&mut head).map_err(closed)?;
        let h = frame::Head::parse(&head);
        if h.len > frame::DEFAULT_MAX_FRAME {
            return Err(protocol("gRPC: a frame larger than dyno's SETTINGS allow"));
        }
        let mut p = std::mem::take(&mut self.payload);
        p.resize(h.len, 0);
        let read = self.input.read_exact(&mut p).map_err(closed);
        let r = read.and_then(|()| self.take(h, &p, id, answer, stream_window, reply));
        self.payload = p;
        r
    }

    fn take(
        &mut self,
        h: frame::Head,
        p: &[u8],
        id: u32,
        answer: &mut Answer,
        stream_window: &mut i64,
        reply: &mut Vec<u8>,
    ) -> Result<(), OpError> {
        let bad = |what: &'static str| protocol(format!("gRPC: {what}"));
        match h.kind {
            frame::DATA => {
                self.unacked += p.len() as u32;
                if self.unacked >= WINDOW / 2 {
                    frame::window_update(&mut self.out, 0, self.unacked);
                    self.unacked = 0;
                }
                if h.stream == id {
                    let data = frame::unpad(h.flags, p).ok_or_else(|| bad("bad padding"))?;
                    if reply.len() + data.len() > MAX_MESSAGE + 5 {
                        return Err(bad("an answer larger than 64 MiB"));
                    }
                    reply.extend_from_slice(data);
                    answer.ended |= h.flags & frame::END_STREAM != 0;
                }
            }
            frame::HEADERS | frame::CONTINUATION => {
                let mut p = p;
                if h.kind == frame::HEADERS {
                    self.block.clear();
                    self.block_ends = h.flags & frame::END_STREAM != 0;
                    p = frame::unpad(h.flags, p).ok_or_else(|| bad("bad padding"))?;
                    if h.flags & frame::PRIORITY_FLAG != 0 {
                        p = p.get(5..).ok_or_else(|| bad("a HEADERS frame too short"))?;
                    }
                }
                if self.block.len() + p.len() > MAX_BLOCK {
                    return Err(bad("a header block larger than 64 KiB"));
                }
                self.block.extend_from_slice(p);
                if h.flags & frame::END_HEADERS != 0 {
                    let ours = h.stream == id;
                    self.headers(ours, answer)?;
                    answer.ended |= ours && self.block_ends;
                }
            }
            frame::RST_STREAM if h.stream == id => {
                let code = p
                    .get(..4)
                    .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                return Err(crate::http::h2::reset_error(code));
            }
            frame::SETTINGS if h.flags & frame::ACK == 0 => self.settings(p, stream_window),
            frame::PING if h.flags & frame::ACK == 0 && p.len() == 8 => {
                frame::ping_ack(&mut self.acks, p);
                // A server pinging on and on within one call is answered as it goes.
                if self.acks.len() >= 1 << 10 {
                    self.out.append(&mut self.acks);
                }
            }
            frame::WINDOW_UPDATE if p.len() == 4 => {
                let inc = i64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff);
                if h.stream == 0 {
                    self.send_window += inc;
                } else if h.stream == id {
                    *stream_window += inc;
                }
            }
            frame::GOAWAY if p.len() >= 8 => {
                self.gone = true;
                self.out.append(&mut self.acks);
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                if last < id {
                    // Above its last stream: never processed (RFC 9113 §6.8), so refused.
                    let name = frame::error_name(u32::from_be_bytes([p[4], p[5], p[6], p[7]]));
                    return Err(OpError::new(
                        ErrorClass::Refused,
                        format!("gRPC: the server went away before the call ({name})"),
                    ));
                }
            }
            frame::PUSH_PROMISE => return Err(bad("PUSH_PROMISE, with push disabled")),
            _ => {}
        }
        Ok(())
    }

    /// The server's SETTINGS: the windows and frame size it allows, acknowledged.
    fn settings(&mut self, p: &[u8], stream_window: &mut i64) {
        for e in p.chunks_exact(6) {
            let v = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
            match u16::from_be_bytes([e[0], e[1]]) {
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    *stream_window += i64::from(v) - self.stream_window;
                    self.stream_window = i64::from(v);
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    self.max_frame = (v as usize).clamp(16_384, 16_777_215)
                }
                _ => {}
            }
        }
        frame::settings_ack(&mut self.out);
    }

    /// A whole header block: decoded, and if it is call `id`'s (`ours`), its statuses kept —
    /// `grpc-status` and `grpc-message` only from the block that ends the call (its trailers).
    fn headers(&mut self, ours: bool, answer: &mut Answer) -> Result<(), OpError> {
        let wanted = |n: &[u8]| matches!(n, b":status" | b"grpc-status" | b"grpc-message");
        let mut message = std::mem::take(&mut self.grpc_message);
        if ours {
            message.clear();
        }
        let trailers = self.block_ends;
        let decoded = self.hpack.decode(&self.block, &wanted, &mut |n, v| {
            if !ours || (n != b":status" && !trailers) {
                return;
            }
            match n {
                b":status" => answer.status = number(v).map_or(0, |c| c as u16),
                b"grpc-status" => answer.grpc = Some(number(v).unwrap_or(u32::MAX)),
                _ => message.extend_from_slice(v),
            }
        });
        self.grpc_message = message;
        decoded.map_err(|e| protocol(format!("gRPC: a header block HPACK refuses: {}", e.0)))
    }
}

/// A read that failed: the connection closed, or an I/O error.
fn closed(e: std::io::Error) -> OpError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return OpError::new(ErrorClass::Reset, "gRPC: the server closed the connection");
    }
    OpError::io("receive", &e)
}
