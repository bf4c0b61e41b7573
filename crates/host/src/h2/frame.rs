//! HTTP/2 frames (RFC 9113 §4 and §6): the 9-byte header, the types and flags dyno reads and
//! writes, and the writers of the frames a client sends.

/// The client's connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const HEADER_LEN: usize = 9;
/// The largest frame payload a peer must accept before it says otherwise.
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The initial flow-control window of a stream and of the connection.
pub const DEFAULT_WINDOW: i64 = 65_535;
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// An error code's name (RFC 9113 §7), for messages.
pub fn error_name(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => "an unknown error code",
    }
}

pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    pub fn parse(b: &[u8; HEADER_LEN]) -> Head {
        Head {
            len: usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// Appends a frame header.
pub fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// A SETTINGS frame of `(id, value)` pairs.
pub fn settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    head(out, values.len() * 6, SETTINGS, 0, 0);
    for (id, v) in values {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

pub fn settings_ack(out: &mut Vec<u8>) {
    head(out, 0, SETTINGS, ACK, 0);
}

pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn ping_ack(out: &mut Vec<u8>, opaque: &[u8]) {
    head(out, 8, PING, ACK, 0);
    out.extend_from_slice(opaque);
}

pub fn goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A header block as HEADERS and, past `max_frame`, CONTINUATION frames.
pub fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max_frame: usize) {
    let mut chunks = block.chunks(max_frame.max(1)).peekable();
    let mut kind = HEADERS;
    let first_flags = if end_stream { END_STREAM } else { 0 };
    let mut flags = first_flags;
    if block.is_empty() {
        head(out, 0, HEADERS, first_flags | END_HEADERS, stream);
        return;
    }
    while let Some(chunk) = chunks.next() {
        if chunks.peek().is_none() {
            flags |= END_HEADERS;
        }
        head(out, chunk.len(), kind, flags, stream);
        out.extend_from_slice(chunk);
        kind = CONTINUATION;
        flags = 0;
    }
}

/// A DATA frame.
pub fn data(out: &mut Vec<u8>, stream: u32, payload: &[u8], end_stream: bool) {
    head(
        out,
        payload.len(),
        DATA,
        if end_stream { END_STREAM } else { 0 },
        stream,
    );
    out.extend_from_slice(payload);
}

/// A padded frame's payload without its padding (`None`: the padding is longer than the
/// frame).
pub fn unpad(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    if flags & PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len().checked_sub(usize::from(pad)).map(|n| &rest[..n])
}
