//! Batched reads: `get_many` (each value whole) and `get_heads` (each value's whole length and
//! first bytes only, for a reader that checks values it need not hold: the shootout's reads
//! through ZODB's pickle cache, whose time is then the adapter's reads and not the copying of
//! every object back to dyno). Each as one binary frame, or as a JSON message.

use super::*;
use engine::graph::Heads;

impl ExecSession {
    /// `get_many`: in a binary frame where the adapter has one, else as JSON.
    pub(super) fn read_values(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        if self.a.binary && self.binary_get_many {
            let body = keys_body(&[], keys);
            let got = self.call_batch(
                (bin::GET_MANY, bin::VALUES, "VALUES"),
                &body,
                keys.len(),
                |b| values(b, keys.len(), out, ends),
            );
            match got {
                // An adapter of the binary framing from before its get_many frame: JSON then.
                Err(e) if e.message.contains("no binary kind") => self.binary_get_many = false,
                done => return done,
            }
        }
        let r = self.call_keys("get_many", keys, None)?;
        let Some(texts) = column(&r, "values", keys.len()) else {
            return Err(self
                .a
                .protocol_error("get_many_ok has no \"values\" array of one value per key"));
        };
        out.clear();
        ends.clear();
        for text in texts {
            match text.as_str().map(|t| decode_into(t, out)) {
                Some(Ok(())) => ends.push(out.len()),
                _ => {
                    return Err(self
                        .a
                        .protocol_error("a value of get_many_ok is not a base64 string"));
                }
            }
        }
        Ok(())
    }

    /// `get_heads`, where the adapter has it: in a binary frame, or as JSON.
    pub(super) fn read_heads(
        &mut self,
        keys: &[u64],
        head: usize,
        out: &mut Heads,
    ) -> Result<(), OpError> {
        let Ok(head32) = u32::try_from(head) else {
            return Err(OpError::new(
                ErrorClass::Application,
                format!("a head of {head} bytes: get_heads asks for at most 4 GiB - 1"),
            ));
        };
        if self.a.binary {
            let body = keys_body(&head32.to_le_bytes(), keys);
            return self.call_batch(
                (bin::GET_HEADS, bin::HEADS, "HEADS"),
                &body,
                keys.len(),
                |b| heads(b, keys.len(), head, out),
            );
        }
        let r = self.call_keys("get_heads", keys, Some(head))?;
        let (Some(lens), Some(texts)) = (
            column(&r, "lengths", keys.len()),
            column(&r, "heads", keys.len()),
        ) else {
            return Err(self.a.protocol_error(
                "get_heads_ok has no \"lengths\" and \"heads\" arrays of one entry per key",
            ));
        };
        out.bytes.clear();
        out.ends.clear();
        out.lens.clear();
        for (len, text) in lens.iter().zip(texts) {
            let before = out.bytes.len();
            let len = len.as_u64().map(|l| l as usize);
            match (len, text.as_str().map(|t| decode_into(t, &mut out.bytes))) {
                (Some(len), Some(Ok(()))) if out.bytes.len() - before == len.min(head) => {
                    out.ends.push(out.bytes.len());
                    out.lens.push(len);
                }
                _ => {
                    return Err(self.a.protocol_error(format!(
                        "get_heads_ok's entry {} is not a length and the base64 of that many bytes, or of the first {head}",
                        out.ends.len()
                    )));
                }
            }
        }
        Ok(())
    }

    /// A batched read in one binary frame of `kind`, whose reply of kind `want` (named
    /// `name`) `parse` reads into the caller's buffers, giving the storage reads it reports.
    fn call_batch(
        &mut self,
        (kind, want, name): (u8, u8, &str),
        body: &[u8],
        n: usize,
        parse: impl FnOnce(&[u8]) -> Option<u32>,
    ) -> Result<(), OpError> {
        let got = self.a.call_bin(kind, &[body])?;
        let parsed = (got == want).then(|| parse(&self.a.body)).flatten();
        let Some(reads) = parsed else {
            return Err(self.a.protocol_error(format!(
                "a reply of kind {got:#x} where {name} ({want:#x}) for {n} keys was due"
            )));
        };
        self.add_reads(u64::from(reads), n);
        Ok(())
    }

    /// A batched read as a JSON message of `kind` (with a `head`, where given): its reply
    /// (`KIND_ok`), its storage reads counted.
    fn call_keys(
        &mut self,
        kind: &str,
        keys: &[u64],
        head: Option<usize>,
    ) -> Result<Value, OpError> {
        let keys_text: Vec<String> = keys.iter().map(u64::to_string).collect();
        let mut m = json!({"type": kind, "keys": keys_text});
        if let Some(h) = head {
            m["head"] = json!(h);
        }
        let r = self.a.call(m, &format!("{kind}_ok"))?;
        self.count(&r, keys.len());
        Ok(r)
    }
}

/// A JSON reply's array `name`, when it has one entry per key.
fn column<'a>(r: &'a Value, name: &str, n: usize) -> Option<&'a Vec<Value>> {
    r.get(name)
        .and_then(Value::as_array)
        .filter(|v| v.len() == n)
}

/// A batched read's request body: `prefix`, the keys' count as a `u32`, then the keys.
fn keys_body(prefix: &[u8], keys: &[u64]) -> Vec<u8> {
    let mut body = Vec::with_capacity(prefix.len() + 4 + 8 * keys.len());
    body.extend_from_slice(prefix);
    body.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    keys.iter()
        .for_each(|k| body.extend_from_slice(&k.to_le_bytes()));
    body
}

fn u32_at(body: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?))
}

/// A batched reply's storage reads, when its count (the `u32` after them) is `n`.
fn reads_of(body: &[u8], n: usize) -> Option<u32> {
    (u32_at(body, 4)? as usize == n).then(|| u32_at(body, 0))?
}

/// A VALUES frame's body: its storage reads, and its `n` values end to end in `out` (`ends`
/// where each ends); `None` when it is not that.
fn values(body: &[u8], n: usize, out: &mut Vec<u8>, ends: &mut Vec<usize>) -> Option<u32> {
    let reads = reads_of(body, n)?;
    out.clear();
    ends.clear();
    let mut at = 8;
    for _ in 0..n {
        let len = u32_at(body, at)? as usize;
        out.extend_from_slice(body.get(at + 4..(at + 4).checked_add(len)?)?);
        ends.push(out.len());
        at += 4 + len;
    }
    (at == body.len()).then_some(reads)
}

/// A HEADS frame's body: its storage reads, and its `n` values' lengths and heads (each the
/// first `head` bytes of its value, or all of a shorter one) into `out`; `None` when it is not
/// that.
fn heads(body: &[u8], n: usize, head: usize, out: &mut Heads) -> Option<u32> {
    let reads = reads_of(body, n)?;
    out.bytes.clear();
    out.ends.clear();
    out.lens.clear();
    let mut at = n.checked_mul(4)?.checked_add(8)?;
    for i in 0..n {
        let len = u32_at(body, 8 + 4 * i)? as usize;
        let keep = len.min(head);
        out.bytes
            .extend_from_slice(body.get(at..at.checked_add(keep)?)?);
        out.ends.push(out.bytes.len());
        out.lens.push(len);
        at += keep;
    }
    (at == body.len()).then_some(reads)
}

#[cfg(test)]
mod tests {
    use super::{Heads, heads, values};
    use proptest::prelude::*;

    fn values_body(reads: u32, vals: &[&[u8]]) -> Vec<u8> {
        let mut b = reads.to_le_bytes().to_vec();
        b.extend_from_slice(&(vals.len() as u32).to_le_bytes());
        for v in vals {
            b.extend_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(v);
        }
        b
    }

    fn heads_body(reads: u32, lens: &[u32], heads: &[&[u8]]) -> Vec<u8> {
        let mut b = reads.to_le_bytes().to_vec();
        b.extend_from_slice(&(lens.len() as u32).to_le_bytes());
        lens.iter()
            .for_each(|l| b.extend_from_slice(&l.to_le_bytes()));
        heads.iter().for_each(|h| b.extend_from_slice(h));
        b
    }

    #[test]
    fn a_values_frame_gives_each_value_in_order() {
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        let b = values_body(2, &[b"ab", b"", b"xyz"]);
        assert_eq!(values(&b, 3, &mut out, &mut ends), Some(2));
        assert_eq!(
            (out.as_slice(), ends.as_slice()),
            (&b"abxyz"[..], &[2, 2, 5][..])
        );
        // Another count than the keys', a value cut short, bytes left over: not a reply.
        assert_eq!(values(&b, 2, &mut out, &mut ends), None);
        assert_eq!(values(&b[..b.len() - 1], 3, &mut out, &mut ends), None);
        let mut long = b.clone();
        long.push(0);
        assert_eq!(values(&long, 3, &mut out, &mut ends), None);
    }

    #[test]
    fn a_heads_frame_gives_each_length_and_head_in_order() {
        let mut out = Heads::default();
        let b = heads_body(7, &[1400, 0, 3], &[b"0123", b"", b"xyz"]);
        assert_eq!(heads(&b, 3, 4, &mut out), Some(7));
        let got: Vec<(&[u8], usize)> = out.iter().collect();
        assert_eq!(got, [(&b"0123"[..], 1400), (&b""[..], 0), (&b"xyz"[..], 3)]);
        // Another count than the keys', a head longer or shorter than asked, bytes left over
        // or missing: not a reply.
        assert_eq!(heads(&b, 2, 4, &mut out), None);
        assert_eq!(heads(&b, 3, 5, &mut out), None);
        assert_eq!(heads(&b, 3, 3, &mut out), None);
        assert_eq!(heads(&b[..b.len() - 1], 3, 4, &mut out), None);
        let mut long = b.clone();
        long.push(0);
        assert_eq!(heads(&long, 3, 4, &mut out), None);
    }

    /// A reply body of `n` entries: the reads and the count right, then `rest` (what an adapter
    /// might send after them), so the parsers' loops meet arbitrary bytes.
    fn counted(n: usize, rest: &[u8]) -> Vec<u8> {
        let mut b = 5u32.to_le_bytes().to_vec();
        b.extend_from_slice(&(n as u32).to_le_bytes());
        b.extend_from_slice(rest);
        b
    }

    proptest! {
        /// Whatever an adapter sends, reading it answers without a panic, and what is read holds
        /// one value (or one length and a head never longer than asked) per key.
        #[test]
        fn any_bytes_read_or_refuse_cleanly(
            rest in proptest::collection::vec(any::<u8>(), 0..96),
            n in 0usize..4,
            head in 0usize..20,
            raw in any::<bool>(),
        ) {
            // Small lengths, so that some bodies parse: each length's high bytes zeroed.
            let mut rest = rest;
            rest.chunks_mut(4).for_each(|c| c.iter_mut().skip(1).for_each(|x| *x %= 2));
            let b = if raw { rest.clone() } else { counted(n, &rest) };
            let (mut out, mut ends) = (Vec::new(), Vec::new());
            if values(&b, n, &mut out, &mut ends).is_some() {
                prop_assert_eq!(ends.len(), n);
            }
            let mut h = Heads::default();
            if heads(&b, n, head, &mut h).is_some() {
                prop_assert_eq!(h.lens.len(), n);
                prop_assert!(h.iter().all(|(x, len)| x.len() == len.min(head)));
            }
        }

        /// A well-made HEADS body of any lengths and head is read back as it was made.
        #[test]
        fn a_made_heads_body_reads_back(
            lens in proptest::collection::vec(0u32..40, 0..6),
            head in 0usize..24,
        ) {
            let whole: Vec<Vec<u8>> = lens.iter().map(|&l| (0..l).map(|i| i as u8).collect()).collect();
            let cut: Vec<&[u8]> = whole.iter().map(|v| &v[..v.len().min(head)]).collect();
            let b = heads_body(9, &lens, &cut);
            let mut h = Heads::default();
            prop_assert_eq!(heads(&b, lens.len(), head, &mut h), Some(9));
            let got: Vec<(&[u8], usize)> = h.iter().collect();
            let want: Vec<(&[u8], usize)> = cut.iter().zip(&lens).map(|(c, &l)| (*c, l as usize)).collect();
            prop_assert_eq!(got, want);
        }
    }
}
