//! The reference server's HTTP/2 in the clear (h2c by prior knowledge): a connection that opens
//! with HTTP/2's preface is served here, on its own thread as every connection is. Requests are
//! answered in the order they complete, each with the same status, body, stall and faults as
//! HTTP/1.1's; the stall holds the whole connection, as it holds an HTTP/1.1 one.
//!
//! A gRPC call (`content-type: application/grpc…`) to any method is answered with its own
//! request message (an echo: any unary method whose request and response types are one) and
//! `grpc-status` 0, or with the status its `x-dyno-grpc-status` metadata asks for; with
//! `x-dyno-grpc-messages: N` the echo is sent N times, as a server-streaming method answers.

use super::{Body, Shared};
use crate::h2::{frame, hpack};
use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;

/// The receive window offered for each stream and the connection.
const WINDOW: u32 = (1 << 30) - 1;

/// The largest gRPC request kept to echo; a larger one gets RESOURCE_EXHAUSTED.
const MAX_GRPC_REQUEST: usize = 4 << 20;
/// The most copies of it a streamed answer sends.
const MAX_GRPC_MESSAGES: u32 = 10_000;

/// A request whose body is still coming: its status (from its path) and whether it is HEAD.
struct Open {
    status: u16,
    head: bool,
    /// gRPC: the status to answer with, the request's body so far (echoed), and how many
    /// times it is echoed.
    grpc: Option<u32>,
    body: Vec<u8>,
    copies: u32,
}

struct Conn<'a> {
    input: BufReader<TcpStream>,
    out: TcpStream,
    shared: &'a Shared,
    hpack: hpack::Decoder,
    open: HashMap<u32, Open>,
    /// The client's windows for what the server sends: the connection's, and each new
    /// stream's initial one (a response waits for room).
    send_window: i64,
    stream_window: i64,
    windows: HashMap<u32, i64>,
    w: Vec<u8>,
}

/// Serves one h2c connection whose first bytes are HTTP/2's preface.
pub(super) fn serve(
    input: BufReader<TcpStream>,
    out: TcpStream,
    shared: &Shared,
    rng: &mut u64,
) -> io::Result<()> {
    let mut c = Conn {
        input,
        out,
        shared,
        hpack: hpack::Decoder::new(4096),
        open: HashMap::new(),
        send_window: frame::DEFAULT_WINDOW,
        stream_window: frame::DEFAULT_WINDOW,
        windows: HashMap::new(),
        w: Vec::with_capacity(1024),
    };
    let mut preface = [0u8; 24];
    c.input.read_exact(&mut preface)?;
    if preface != frame::PREFACE {
        return Ok(());
    }
    frame::settings(
        &mut c.w,
        &[
            (frame::SETTINGS_MAX_CONCURRENT_STREAMS, 1000),
            (frame::SETTINGS_INITIAL_WINDOW_SIZE, WINDOW),
        ],
    );
    frame::window_update(&mut c.w, 0, WINDOW - frame::DEFAULT_WINDOW as u32);
    c.flush()?;
    let mut block = Vec::new();
    let mut payload = Vec::new();
    loop {
        if c.shared.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let Some(h) = c.read_frame(&mut payload)? else {
            return Ok(());
        };
        match h.kind {
            frame::HEADERS | frame::CONTINUATION => {
                if h.kind == frame::HEADERS {
                    block.clear();
                    let mut p = frame::unpad(h.flags, &payload).unwrap_or(&[]);
                    if h.flags & frame::PRIORITY_FLAG != 0 {
                        p = p.get(5..).unwrap_or(&[]);
                    }
                    block.extend_from_slice(p);
                } else {
                    block.extend_from_slice(&payload);
                }
                if block.len() > super::MAX_REQUEST_HEAD {
                    return c.goaway(frame::PROTOCOL_ERROR);
                }
                if h.flags & frame::END_HEADERS == 0 {
                    continue;
                }
                let Some(open) = c.request(&block) else {
                    return c.goaway(frame::COMPRESSION_ERROR);
                };
                if h.flags & frame::END_STREAM != 0 {
                    if !c.answer(h.stream, &open, rng)? {
                        return Ok(());
                    }
                } else {
                    c.open.insert(h.stream, open);
                }
            }
            frame::DATA => {
                if !c.data(h, &payload, rng)? {
                    return Ok(());
                }
            }
            frame::GOAWAY => return Ok(()),
            frame::RST_STREAM => {
                c.open.remove(&h.stream);
            }
            _ => c.control(h, &payload)?,
        }
    }
}

impl Conn<'_> {
    /// A DATA frame: its bytes kept for a gRPC call's echo (else dropped), the windows
    /// refilled, the request answered once its stream ends; `false` when the connection is
    /// to end.
    fn data(&mut self, h: frame::Head, payload: &[u8], rng: &mut u64) -> io::Result<bool> {
        if let Some(open) = self.open.get_mut(&h.stream)
            && open.grpc.is_some()
        {
            if open.body.len() + payload.len() > MAX_GRPC_REQUEST {
                open.grpc = Some(8);
            } else {
                open.body
                    .extend_from_slice(frame::unpad(h.flags, payload).unwrap_or(&[]));
            }
        }
        if !payload.is_empty() {
            // Refilled at once.
            frame::window_update(&mut self.w, 0, payload.len() as u32);
            if h.flags & frame::END_STREAM == 0 {
                frame::window_update(&mut self.w, h.stream, payload.len() as u32);
            }
        }
        if h.flags & frame::END_STREAM != 0
            && let Some(open) = self.open.remove(&h.stream)
            && !self.answer(h.stream, &open, rng)?
        {
            return Ok(false);
        }
        self.flush()?;
        Ok(true)
    }

    /// Reads one frame into `payload`: its header, or `None` when the client closed.
    fn read_frame(&mut self, payload: &mut Vec<u8>) -> io::Result<Option<frame::Head>> {
        let mut head = [0u8; frame::HEADER_LEN];
        match self.input.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let h = frame::Head::parse(&head);
        if h.len > frame::DEFAULT_MAX_FRAME {
            self.goaway(frame::FRAME_SIZE_ERROR)?;
            return Ok(None);
        }
        payload.resize(h.len, 0);
        self.input.read_exact(payload)?;
        Ok(Some(h))
    }

    /// SETTINGS, PING and WINDOW_UPDATE: answered or taken into account.
    fn control(&mut self, h: frame::Head, p: &[u8]) -> io::Result<()> {
        match h.kind {
            frame::SETTINGS if h.flags & frame::ACK == 0 => {
                for e in p.chunks_exact(6) {
                    let v = i64::from(u32::from_be_bytes([e[2], e[3], e[4], e[5]]));
                    if u16::from_be_bytes([e[0], e[1]]) == frame::SETTINGS_INITIAL_WINDOW_SIZE {
                        self.stream_window = v;
                    }
                }
                frame::settings_ack(&mut self.w);
            }
            frame::PING if h.flags & frame::ACK == 0 && p.len() == 8 => {
                frame::ping_ack(&mut self.w, p)
            }
            frame::WINDOW_UPDATE if p.len() == 4 => {
                let inc = i64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff);
                if h.stream == 0 {
                    self.send_window += inc;
                } else {
                    *self.windows.entry(h.stream).or_insert(self.stream_window) += inc;
                }
            }
            _ => {}
        }
        self.flush()
    }

    /// A request's header block: its status by its path (as HTTP/1.1's), `None` if the block
    /// does not decode (the connection is then lost).
    fn request(&mut self, block: &[u8]) -> Option<Open> {
        let mut path = Vec::new();
        let mut head = false;
        let mut grpc = None;
        let (mut asked, mut copies) = (0, 1);
        let wanted = |n: &[u8]| {
            matches!(
                n,
                b":path"
                    | b":method"
                    | b"content-type"
                    | b"x-dyno-grpc-status"
                    | b"x-dyno-grpc-messages"
            )
        };
        let number = |v: &[u8]| std::str::from_utf8(v).ok().and_then(|v| v.parse().ok());
        let decoded = self.hpack.decode(block, &wanted, &mut |n, v| match n {
            b":path" => path = v.to_vec(),
            b":method" => head = v == b"HEAD",
            b"content-type" => {
                if v.starts_with(b"application/grpc") {
                    grpc = Some(0);
                }
            }
            b"x-dyno-grpc-messages" => {
                copies = number(v).unwrap_or(1).clamp(1, MAX_GRPC_MESSAGES);
            }
            _ => asked = number(v).unwrap_or(2),
        });
        decoded.ok()?;
        let path = String::from_utf8_lossy(&path).into_owned();
        Some(Open {
            status: self.shared.status_of(&path),
            head,
            grpc: grpc.map(|_: u32| asked),
            body: Vec::new(),
            copies,
        })
    }

    /// Answers stream `id` (after the faults and the stall); `false` when the connection is to
    /// end (a reset or garbage, as the fault says).
    fn answer(&mut self, id: u32, open: &Open, rng: &mut u64) -> io::Result<bool> {
        let garbage = b"\x00\x01\x02 this is not HTTP/2\r\n\r\n";
        if !self.shared.fault_or_stall(&mut self.out, garbage)? {
            return Ok(false);
        }
        if let Some(code) = open.grpc {
            return self.answer_grpc(id, code, &open.body, open.copies);
        }
        let payload = self.shared.payload(rng);
        let content_type = match self.shared.spec.body {
            Body::Json => "application/json",
            Body::Sizes { .. } => "application/octet-stream",
        };
        let status = open.status.to_string();
        let length = payload.len().to_string();
        let block = hpack::encode(&[
            (":status", &status),
            ("content-type", content_type),
            ("content-length", &length),
        ]);
        let body = !open.head && !payload.is_empty();
        frame::headers(&mut self.w, id, &block, !body, frame::DEFAULT_MAX_FRAME);
        if body {
            self.send(id, payload, true)?;
        }
        self.windows.remove(&id);
        self.flush()?;
        Ok(true)
    }

    /// A gRPC call's answer: its request echoed `copies` times with status 0, or trailers only
    /// with `code`.
    fn answer_grpc(&mut self, id: u32, code: u32, request: &[u8], copies: u32) -> io::Result<bool> {
        let status = code.to_string();
        let mut head = vec![(":status", "200"), ("content-type", "application/grpc")];
        if code != 0 || request.is_empty() {
            let code = if code == 0 { "13" } else { status.as_str() };
            head.extend([("grpc-status", code), ("grpc-message", "asked%20for")]);
            let block = hpack::encode(&head);
            frame::headers(&mut self.w, id, &block, true, frame::DEFAULT_MAX_FRAME);
        } else {
            let block = hpack::encode(&head);
            frame::headers(&mut self.w, id, &block, false, frame::DEFAULT_MAX_FRAME);
            for _ in 0..copies {
                if !self.send(id, request, false)? {
                    return Ok(false);
                }
                // Each message on its way as it is made, as a streaming server's are.
                self.flush()?;
            }
            let block = hpack::encode(&[("grpc-status", "0")]);
            frame::headers(&mut self.w, id, &block, true, frame::DEFAULT_MAX_FRAME);
        }
        self.windows.remove(&id);
        self.flush()?;
        Ok(true)
    }

    /// Sends `payload` as DATA on stream `id` as the client's windows allow (waiting for
    /// them), its last frame ending the stream when `end`; `false` when the client went.
    fn send(&mut self, id: u32, payload: &[u8], end: bool) -> io::Result<bool> {
        let mut sent = 0;
        while sent < payload.len() {
            let window = *self.windows.entry(id).or_insert(self.stream_window);
            let room = window
                .min(self.send_window)
                .min(frame::DEFAULT_MAX_FRAME as i64);
            if room <= 0 {
                // Wait for the client's window, answering its other frames meanwhile.
                self.flush()?;
                let mut p = Vec::new();
                match self.read_frame(&mut p)? {
                    None => return Ok(false),
                    Some(h)
                        if h.kind == frame::WINDOW_UPDATE
                            || h.kind == frame::SETTINGS
                            || h.kind == frame::PING =>
                    {
                        self.control(h, &p)?
                    }
                    Some(h) if h.kind == frame::RST_STREAM && h.stream == id => break,
                    Some(_) => {}
                }
                continue;
            }
            let n = (payload.len() - sent).min(room as usize);
            let last = end && sent + n == payload.len();
            frame::data(&mut self.w, id, &payload[sent..sent + n], last);
            sent += n;
            self.send_window -= n as i64;
            *self.windows.entry(id).or_default() -= n as i64;
        }
        Ok(true)
    }

    fn goaway(&mut self, code: u32) -> io::Result<()> {
        frame::goaway(&mut self.w, 0, code);
        self.flush()
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.w.is_empty() {
            self.out.write_all(&self.w)?;
            self.w.clear();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, Server, Spec};
    use super::*;
    use proptest::prelude::*;
    use std::net::TcpListener;
    use std::time::Duration;

    fn server() -> Server {
        let spec = Spec {
            kind: Kind::Http,
            body: Body::Json,
            stall: None,
            fault: None,
            seed: 1,
            service: None,
        };
        Server::start(TcpListener::bind("127.0.0.1:0").unwrap(), spec).unwrap()
    }

    /// Sends `bytes` after the preface and reads what comes back until the server ends the
    /// connection or 2 s pass.
    fn exchange(s: &Server, bytes: &[u8]) -> Vec<u8> {
        let mut c = TcpStream::connect(s.addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        c.write_all(frame::PREFACE).unwrap();
        let _ = c.write_all(bytes);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let mut got = Vec::new();
        let _ = c.read_to_end(&mut got);
        got
    }

    /// A frame as read back: its kind, its stream, and its headers if it is HEADERS.
    type Frame = (u8, u32, Vec<(String, String)>);

    /// The frames of `got`, in order.
    fn frames_of(got: &[u8]) -> Vec<Frame> {
        let mut at = 0;
        let mut out = Vec::new();
        let mut d = hpack::Decoder::new(4096);
        while at + 9 <= got.len() {
            let h = frame::Head::parse(got[at..at + 9].try_into().unwrap());
            let p = &got[at + 9..at + 9 + h.len];
            let mut headers = Vec::new();
            if h.kind == frame::HEADERS {
                d.decode(p, &|_| true, &mut |n, v| {
                    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                    headers.push((text(n), text(v)))
                })
                .unwrap();
            }
            out.push((h.kind, h.stream, headers));
            at += 9 + h.len;
        }
        out
    }

    fn header(frame: &Frame, name: &str) -> String {
        let found = frame.2.iter().find(|(n, _)| n == name);
        found.map(|(_, v)| v.clone()).unwrap_or_default()
    }

    #[test]
    fn a_request_is_answered_with_headers_and_data() {
        let s = server();
        let mut req = Vec::new();
        frame::settings(&mut req, &[]);
        let block = hpack::encode(&[(":method", "GET"), (":path", "/status/404")]);
        frame::headers(&mut req, 1, &block, true, frame::DEFAULT_MAX_FRAME);
        let got = frames_of(&exchange(&s, &req));
        // SETTINGS, WINDOW_UPDATE, SETTINGS ACK, then stream 1's HEADERS and DATA.
        let kinds: Vec<(u8, u32)> = got.iter().map(|f| (f.0, f.1)).collect();
        assert!(
            kinds.ends_with(&[(frame::HEADERS, 1), (frame::DATA, 1)]),
            "{kinds:?}"
        );
        assert_eq!(header(&got[got.len() - 2], ":status"), "404");
    }

    #[test]
    fn a_grpc_call_is_echoed_or_answered_with_the_status_asked_for() {
        let s = server();
        let mut req = Vec::new();
        frame::settings(&mut req, &[]);
        let call = |metadata: &[(&str, &str)]| {
            let mut h = vec![
                (":method", "POST"),
                (":path", "/any.Service/Method"),
                ("content-type", "application/grpc"),
            ];
            h.extend_from_slice(metadata);
            hpack::encode(&h)
        };
        let message = b"\0\0\0\0\x02\x08\x01";
        frame::headers(&mut req, 1, &call(&[]), false, frame::DEFAULT_MAX_FRAME);
        frame::data(&mut req, 1, message, true);
        let unavailable = call(&[("x-dyno-grpc-status", "14")]);
        frame::headers(&mut req, 3, &unavailable, false, frame::DEFAULT_MAX_FRAME);
        frame::data(&mut req, 3, message, true);
        let raw = exchange(&s, &req);
        let got = frames_of(&raw);
        let on = |id: u32| -> Vec<_> { got.iter().filter(|f| f.1 == id).cloned().collect() };
        let one = on(1);
        assert_eq!(one.len(), 3, "{one:?}");
        assert_eq!(header(&one[0], ":status"), "200");
        assert_eq!(one[1].0, frame::DATA);
        assert!(raw.windows(message.len()).any(|w| w == message));
        assert_eq!(header(&one[2], "grpc-status"), "0");
        let three = on(3);
        assert_eq!(three.len(), 1, "{three:?}");
        assert_eq!(header(&three[0], "grpc-status"), "14");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Whatever follows the preface, the server neither crashes nor stops serving.
        #[test]
        fn any_frames_leave_the_server_serving(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let s = server();
            exchange(&s, &bytes);
            let again = exchange(&s, &[]);
            prop_assert!(again.len() >= 9);
        }
    }
}
