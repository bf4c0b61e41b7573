//! HPACK (RFC 7541): the decoder of the header blocks a server sends, and the encoder of the
//! one block a target sends with every request.
//!
//! A response's headers are decoded as far as dyno needs them: every representation is read
//! (the dynamic table must follow the server's), but a value is Huffman-decoded only when its
//! header is one the caller asked for, or when it enters the dynamic table. Nothing is
//! allocated per block beyond what enters the table.

use super::huffman;
use super::table::STATIC;
use std::collections::VecDeque;

/// A header block dyno cannot read: the connection's HPACK state is lost with it
/// (`COMPRESSION_ERROR`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub &'static str);

/// What a decoded header is handed to the caller as.
pub type Each<'a> = dyn FnMut(&[u8], &[u8]) + 'a;

pub struct Decoder {
    /// Newest first: dynamic index 62 is `table[0]`.
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max: usize,
    /// What dyno's SETTINGS allow (`SETTINGS_HEADER_TABLE_SIZE`): the most `max` may become.
    limit: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

/// An integer with an `n`-bit prefix (§5.1), from `b[*at..]`.
fn integer(b: &[u8], at: &mut usize, n: u8) -> Result<usize, Error> {
    let first = *b.get(*at).ok_or(Error("a header block cut short"))?;
    *at += 1;
    let mask = (1u16 << n) as usize - 1;
    let mut v = usize::from(first) & mask;
    if v < mask {
        return Ok(v);
    }
    let mut shift = 0u32;
    loop {
        let byte = *b.get(*at).ok_or(Error("a header block cut short"))?;
        *at += 1;
        if shift > 28 {
            return Err(Error("an integer too large"));
        }
        v += usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
}

/// A string literal's bytes and whether they are Huffman-coded (§5.2).
fn string<'b>(b: &'b [u8], at: &mut usize) -> Result<(&'b [u8], bool), Error> {
    let huffman = b.get(*at).is_some_and(|x| x & 0x80 != 0);
    let len = integer(b, at, 7)?;
    let end = at.checked_add(len).filter(|&e| e <= b.len());
    let end = end.ok_or(Error("a string longer than its header block"))?;
    let s = &b[*at..end];
    *at = end;
    Ok((s, huffman))
}

/// `raw` as text into `out` (decoded when Huffman-coded).
fn text(raw: &[u8], huffman: bool, out: &mut Vec<u8>) -> Result<(), Error> {
    out.clear();
    if huffman {
        huffman::decode(raw, out).map_err(|_| Error("a Huffman code that is not HPACK's"))
    } else {
        out.extend_from_slice(raw);
        Ok(())
    }
}

impl Decoder {
    pub fn new(limit: usize) -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max: limit,
            limit,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// The entry at `index` (1-based; the static table, then the dynamic one).
    fn entry(&self, index: usize) -> Result<(&[u8], &[u8]), Error> {
        match index {
            0 => Err(Error("index 0")),
            i if i <= STATIC.len() => {
                let (n, v) = STATIC[i - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            i => (self.table.get(i - STATIC.len() - 1))
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or(Error("an index past the tables")),
        }
    }

    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some((n, v)) = self.table.pop_back() else {
                break;
            };
            self.size -= n.len() + v.len() + 32;
        }
    }

    fn insert(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let size = name.len() + value.len() + 32;
        self.evict(size);
        // An entry larger than the table empties it and is not kept (§4.4).
        if size <= self.max {
            self.size += size;
            self.table.push_front((name, value));
        }
    }

    /// Decodes one header block: `each(name, value)` for every header whose name `wanted`
    /// accepts (the others are read past). An error leaves the decoder unusable.
    pub fn decode(
        &mut self,
        b: &[u8],
        wanted: &dyn Fn(&[u8]) -> bool,
        each: &mut Each<'_>,
    ) -> Result<(), Error> {
        let mut at = 0;
        let mut header_seen = false;
        while at < b.len() {
            let first = b[at];
            if first & 0x80 != 0 {
                let i = integer(b, &mut at, 7)?;
                let (n, v) = self.entry(i)?;
                if wanted(n) {
                    each(n, v);
                }
            } else if first & 0xc0 == 0x40 {
                self.literal(b, &mut at, 6, true, wanted, each)?;
            } else if first & 0xe0 == 0x20 {
                // A table size update, only at a block's start (§4.2).
                if header_seen {
                    return Err(Error("a table size update after a header"));
                }
                let max = integer(b, &mut at, 5)?;
                if max > self.limit {
                    return Err(Error("a table larger than dyno's SETTINGS allow"));
                }
                self.max = max;
                self.evict(0);
                continue;
            } else {
                // Without indexing (0000) or never indexed (0001).
                self.literal(b, &mut at, 4, false, wanted, each)?;
            }
            header_seen = true;
        }
        Ok(())
    }

    /// A literal representation: its name by index or literal, its value literal; kept in the
    /// dynamic table when `index`.
    fn literal(
        &mut self,
        b: &[u8],
        at: &mut usize,
        prefix: u8,
        index: bool,
        wanted: &dyn Fn(&[u8]) -> bool,
        each: &mut Each<'_>,
    ) -> Result<(), Error> {
        let i = integer(b, at, prefix)?;
        let mut name = std::mem::take(&mut self.name);
        if i == 0 {
            let (raw, h) = string(b, at)?;
            text(raw, h, &mut name)?;
        } else {
            name.clear();
            name.extend_from_slice(self.entry(i)?.0);
        }
        let (raw, h) = string(b, at)?;
        let want = wanted(&name);
        if want || index {
            let mut value = std::mem::take(&mut self.value);
            text(raw, h, &mut value)?;
            if want {
                each(&name, &value);
            }
            if index {
                self.insert(name.clone(), value.clone());
            }
            self.value = value;
        }
        self.name = name;
        Ok(())
    }
}

/// Encodes request headers as literals without indexing (§6.2.2), names by the static table's
/// index where it has them, nothing Huffman-coded: the same block is valid on every stream,
/// whatever the server's table holds, so it is made once per target.
pub fn encode(headers: &[(&str, &str)]) -> Vec<u8> {
    // First a table size update to 0: dyno's encoder keeps no table, and so a server that
    // allows less than the default 4,096 bytes (SETTINGS_HEADER_TABLE_SIZE) is told so in
    // every block, whenever its SETTINGS arrive (§4.2, §6.3).
    let mut out = vec![0x20];
    for (name, value) in headers {
        let full = STATIC.iter().position(|(n, v)| n == name && v == value);
        if let Some(i) = full {
            put_integer(&mut out, i + 1, 7, 0x80);
            continue;
        }
        match STATIC.iter().position(|(n, _)| n == name) {
            Some(i) => put_integer(&mut out, i + 1, 4, 0x00),
            None => {
                out.push(0x00);
                put_integer(&mut out, name.len(), 7, 0x00);
                out.extend_from_slice(name.as_bytes());
            }
        }
        put_integer(&mut out, value.len(), 7, 0x00);
        out.extend_from_slice(value.as_bytes());
    }
    out
}

fn put_integer(out: &mut Vec<u8>, v: usize, n: u8, flags: u8) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 0x80 {
        out.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}
