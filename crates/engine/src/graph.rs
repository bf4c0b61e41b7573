//! The `graph` family's objects: an object has an id, a version, references to other objects and
//! a payload, and is stored as one value of the driver's kv operations. Clients follow references
//! themselves (one read per step, or a batched `get_many`), as ZODB and Magma clients do.
//!
//! Layout, little-endian: `id u64 | version u64 | refs u32 | payload u32 | refs × u64 | payload`.
//! Every object read back is decoded and checked against the id it was read under, so a store
//! that answers the wrong object, or a truncated one, fails the read as `corrupt`.

use crate::error::{ErrorClass, OpError};

/// Bytes before the references.
pub const HEADER: usize = 24;

/// Encodes an object into `out` (cleared first).
pub fn encode(id: u64, version: u64, refs: &[u64], payload: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(HEADER + refs.len() * 8 + payload.len());
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(refs.len() as u32).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    for r in refs {
        out.extend_from_slice(&r.to_le_bytes());
    }
    out.extend_from_slice(payload);
}

/// A decoded object, borrowing the bytes it was read into.
#[derive(Debug, Clone, Copy)]
pub struct Object<'a> {
    pub id: u64,
    pub version: u64,
    refs: &'a [u8],
    pub payload: &'a [u8],
}

impl<'a> Object<'a> {
    /// Decodes `bytes`, read under key `id`.
    pub fn decode(bytes: &'a [u8], id: u64) -> Result<Object<'a>, OpError> {
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        if bytes.len() < HEADER {
            return Err(corrupt(
                id,
                format!("{} bytes, shorter than a header", bytes.len()),
            ));
        }
        let (nrefs, len) = (half(16) as usize, half(20) as usize);
        let want = HEADER + nrefs * 8 + len;
        if bytes.len() != want {
            return Err(corrupt(
                id,
                format!("{} bytes, its header says {want}", bytes.len()),
            ));
        }
        if word(0) != id {
            return Err(corrupt(id, format!("it holds object {:#x}", word(0))));
        }
        Ok(Object {
            id,
            version: word(8),
            refs: &bytes[HEADER..HEADER + nrefs * 8],
            payload: &bytes[HEADER + nrefs * 8..],
        })
    }

    /// The number of references.
    pub fn ref_count(&self) -> usize {
        self.refs.len() / 8
    }

    /// The `i`-th reference.
    pub fn reference(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.refs[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
    }

    /// Every reference, in order.
    pub fn references(&self) -> impl Iterator<Item = u64> + 'a {
        self.refs
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
    }

    /// Fails unless this is version `version`.
    pub fn expect_version(&self, version: u64) -> Result<&Self, OpError> {
        if self.version == version {
            return Ok(self);
        }
        Err(corrupt(
            self.id,
            format!("version {}, expected {version}", self.version),
        ))
    }
}

#[cold]
fn corrupt(id: u64, what: String) -> OpError {
    OpError::new(ErrorClass::Corrupt, format!("object {id:#x}: {what}"))
}

/// The values of a batched read (`Session::get_many`), one slice per key.
pub fn split<'a>(out: &'a [u8], ends: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut start = 0;
    ends.iter().map(move |&e| {
        let v = &out[start..e];
        start = e;
        v
    })
}

/// A batched read of each value's first bytes and whole length only
/// ([`Session::get_heads`](crate::driver::Session::get_heads)): what a reader needs of values
/// it checks and need not hold (the shootout checks a 16-byte header and the length), without
/// the values' bytes carried back from the target.
#[derive(Debug, Default, Clone)]
pub struct Heads {
    /// The heads, end to end: each value's first bytes (all of a shorter one).
    pub bytes: Vec<u8>,
    /// Where each head ends in `bytes`.
    pub ends: Vec<usize>,
    /// Each value's whole length.
    pub lens: Vec<usize>,
}

impl Heads {
    /// Each value's head and whole length, in the keys' order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], usize)> + '_ {
        split(&self.bytes, &self.ends).zip(self.lens.iter().copied())
    }

    /// Cuts the whole values a `get_many` left in `bytes` and `ends` to their first `head`
    /// bytes, their lengths kept in `lens`.
    pub fn cut(&mut self, head: usize) {
        self.lens.clear();
        let (mut start, mut at) = (0, 0);
        for end in self.ends.iter_mut() {
            let keep = (*end - start).min(head);
            self.bytes.copy_within(start..start + keep, at);
            self.lens.push(*end - start);
            start = *end;
            at += keep;
            *end = at;
        }
        self.bytes.truncate(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_cut_from_whole_values_keep_each_length() {
        let mut h = Heads {
            bytes: b"abcdefXYZ".to_vec(),
            ends: vec![6, 6, 9],
            lens: vec![99],
        };
        h.cut(4);
        let got: Vec<(&[u8], usize)> = h.iter().collect();
        assert_eq!(got, [(&b"abcd"[..], 6), (&b""[..], 0), (&b"XYZ"[..], 3)]);
        assert_eq!(h.bytes, b"abcdXYZ");
    }

    #[test]
    fn objects_round_trip_and_are_checked() {
        let mut buf = Vec::new();
        encode(7, 3, &[10, 11, 12], b"hello", &mut buf);
        let o = Object::decode(&buf, 7).unwrap();
        assert_eq!((o.id, o.version, o.ref_count()), (7, 3, 3));
        assert_eq!(o.references().collect::<Vec<_>>(), vec![10, 11, 12]);
        assert_eq!(o.reference(2), 12);
        assert_eq!(o.payload, b"hello");
        assert!(o.expect_version(3).is_ok());
        let e = o.expect_version(4).unwrap_err();
        assert_eq!(e.class, ErrorClass::Corrupt);
        assert!(e.message.contains("version 3, expected 4"), "{}", e.message);

        let e = Object::decode(&buf, 8).unwrap_err();
        assert!(e.message.contains("holds object 0x7"), "{}", e.message);
        let e = Object::decode(&buf[..buf.len() - 1], 7).unwrap_err();
        assert!(e.message.contains("its header says"), "{}", e.message);
        let e = Object::decode(&buf[..10], 7).unwrap_err();
        assert!(e.message.contains("shorter than a header"), "{}", e.message);
    }

    #[test]
    fn split_cuts_a_batched_read() {
        let out = b"aabbbc";
        let parts: Vec<&[u8]> = split(out, &[2, 5, 6]).collect();
        assert_eq!(parts, vec![&b"aa"[..], b"bbb", b"c"]);
    }
}
