//! The host's wire format, shared by the server and its clients (`dyno://`, `dyno stats`):
//! request and response kinds, frames, and the `VALUES` body of a batched read.

use super::*;

pub mod kind {
    pub const HELLO: u8 = 0x01;
    pub const OPEN: u8 = 0x02;
    pub const BEGIN: u8 = 0x03;
    pub const PUT: u8 = 0x04;
    pub const GET: u8 = 0x05;
    pub const DELETE: u8 = 0x06;
    pub const COMMIT: u8 = 0x07;
    pub const STATS: u8 = 0x08;
    pub const DROP: u8 = 0x09;
    pub const MGET: u8 = 0x0A;
    pub const INFO: u8 = 0x0B;
    pub const MKDIR: u8 = 0x0C;
    pub const STAT: u8 = 0x0D;
    pub const LIST: u8 = 0x0E;
    pub const RMDIR: u8 = 0x0F;
    /// A scan: from a key (u64 BE), at most a count (u32 BE) of objects, in key order.
    pub const SCAN: u8 = 0x10;
    pub const OK: u8 = 0x80;
    pub const VALUE: u8 = 0x81;
    pub const NOT_FOUND: u8 = 0x82;
    pub const ERR: u8 = 0x83;
    pub const TEXT: u8 = 0x84;
    pub const VALUES: u8 = 0x85;
    /// A scan's reply: per object its key (u64 BE), its length (u32 BE), its bytes.
    pub const ENTRIES: u8 = 0x86;
}

/// Operation names, indexed by request kind (1..=16), for statistics.
pub(super) const OPS: [&str; 17] = [
    "", "hello", "open", "begin", "put", "get", "delete", "commit", "stats", "drop", "mget",
    "info", "mkdir", "stat", "list", "rmdir", "scan",
];

/// Reads one frame: (kind, body). `Ok(None)` at a clean end of stream.
pub fn read_frame(r: &mut impl Read, body: &mut Vec<u8>) -> io::Result<Option<u8>> {
    let mut head = [0u8; 5];
    match r.read_exact(&mut head[..4]) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(head[..4].try_into().expect("4 bytes"));
    if len == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "an empty frame (no kind byte)",
        ));
    }
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes exceeds the limit of {MAX_FRAME}"),
        ));
    }
    r.read_exact(&mut head[4..5])?;
    body.clear();
    r.by_ref().take(u64::from(len - 1)).read_to_end(body)?;
    if body.len() as u32 != len - 1 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the frame ended early",
        ));
    }
    Ok(Some(head[4]))
}

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, kind: u8, parts: &[&[u8]]) -> io::Result<()> {
    let len: usize = 1 + parts.iter().map(|p| p.len()).sum::<usize>();
    w.write_all(&(len as u32).to_be_bytes())?;
    w.write_all(&[kind])?;
    for p in parts {
        w.write_all(p)?;
    }
    Ok(())
}

/// Appends a frame to a buffer.
pub(super) fn frame(out: &mut Vec<u8>, kind: u8, parts: &[&[u8]]) {
    write_frame(out, kind, parts).expect("writing to a Vec does not fail");
}

/// Why a `VALUES` body does not hold the values asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValuesError {
    #[error("a value's length is cut short")]
    LengthCut,
    #[error("a value of {len} bytes is cut short")]
    ValueCut { len: usize },
    #[error("{got} values for {keys} keys")]
    Count { got: usize, keys: usize },
}

/// Cuts a `VALUES` body (per key: u32 BE length, bytes) into values end to end in `out` and
/// their ends in `ends`; checks there are exactly `n` and nothing is left over.
pub fn split_values(
    body: &[u8],
    n: usize,
    out: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Result<(), ValuesError> {
    out.clear();
    ends.clear();
    let mut at = 0;
    while at < body.len() {
        let Some(len) = body.get(at..at + 4) else {
            return Err(ValuesError::LengthCut);
        };
        let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
        let Some(v) = body.get(at + 4..at + 4 + len) else {
            return Err(ValuesError::ValueCut { len });
        };
        out.extend_from_slice(v);
        ends.push(out.len());
        at += 4 + len;
    }
    if ends.len() != n {
        return Err(ValuesError::Count {
            got: ends.len(),
            keys: n,
        });
    }
    Ok(())
}

/// Cuts an `ENTRIES` body (per object: key u64 BE, length u32 BE, bytes) into `out`.
pub fn split_entries(body: &[u8], out: &mut Vec<(u64, Vec<u8>)>) -> Result<(), ValuesError> {
    out.clear();
    let mut at = 0;
    while at < body.len() {
        let Some(head) = body.get(at..at + 12) else {
            return Err(ValuesError::LengthCut);
        };
        let key = u64::from_be_bytes(head[..8].try_into().expect("8 bytes"));
        let len = u32::from_be_bytes(head[8..].try_into().expect("4 bytes")) as usize;
        let Some(v) = body.get(at + 12..at + 12 + len) else {
            return Err(ValuesError::ValueCut { len });
        };
        out.push((key, v.to_vec()));
        at += 12 + len;
    }
    Ok(())
}

/// Reads a response and checks its kind; an `ERR` becomes an error with the host's message.
pub fn expect(s: &mut impl Read, body: &mut Vec<u8>, want: u8) -> io::Result<()> {
    match read_frame(s, body)? {
        Some(k) if k == want => Ok(()),
        Some(kind::ERR) => Err(io::Error::other(format!(
            "the host said: {}",
            String::from_utf8_lossy(body)
        ))),
        Some(k) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected response 0x{k:02x} (wanted 0x{want:02x})"),
        )),
        None => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the host closed the connection",
        )),
    }
}
