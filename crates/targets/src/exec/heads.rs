//! `get_heads`: a batched read of each value's whole length and first bytes only, for a reader
//! that checks values it need not hold (the shootout's reads through ZODB's pickle cache), so
//! that its time is the adapter's reads and not the copying of every value back to dyno.

use super::*;
use engine::graph::Heads;

impl ExecSession {
    /// The heads in one binary frame (`GET_HEADS`, answered by `HEADS`).
    pub(super) fn get_heads_binary(
        &mut self,
        keys: &[u64],
        head: usize,
        out: &mut Heads,
    ) -> Result<(), OpError> {
        let body = keys_body(&(head as u32).to_le_bytes(), keys);
        let kind = self.a.call_bin(bin::GET_HEADS, &[&body])?;
        let parsed = (kind == bin::HEADS)
            .then(|| heads(&self.a.body, keys.len(), head, out))
            .flatten();
        let Some(reads) = parsed else {
            return Err(self.a.protocol_error(format!(
                "a reply of kind {kind:#x} where HEADS (0x87) with {} heads of at most {head} bytes was due",
                keys.len()
            )));
        };
        self.add_reads(reads, keys.len());
        Ok(())
    }

    /// The heads as a JSON message (`get_heads`, answered by `get_heads_ok`).
    pub(super) fn get_heads_json(
        &mut self,
        keys: &[u64],
        head: usize,
        out: &mut Heads,
    ) -> Result<(), OpError> {
        let keys_text: Vec<String> = keys.iter().map(u64::to_string).collect();
        let r = self.a.call(
            json!({"type": "get_heads", "keys": keys_text, "head": head}),
            "get_heads_ok",
        )?;
        self.count(&r, keys.len() as u64);
        let column = |name| {
            r.get(name)
                .and_then(Value::as_array)
                .filter(|v| v.len() == keys.len())
        };
        let (Some(lens), Some(texts)) = (column("lengths"), column("heads")) else {
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
            let decoded = text.as_str().map(|t| decode_into(t, &mut out.bytes));
            match (len, decoded) {
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
}

/// A batched read's request body: `prefix`, the keys' count as a `u32`, then the keys.
pub(super) fn keys_body(prefix: &[u8], keys: &[u64]) -> Vec<u8> {
    let mut body = Vec::with_capacity(prefix.len() + 4 + 8 * keys.len());
    body.extend_from_slice(prefix);
    body.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    keys.iter()
        .for_each(|k| body.extend_from_slice(&k.to_le_bytes()));
    body
}

/// A HEADS frame's body: its storage reads, and its `n` values' lengths and heads (each the
/// first `head` bytes of its value, or all of a shorter one) into `out`; `None` when it is not
/// that.
fn heads(body: &[u8], n: usize, head: usize, out: &mut Heads) -> Option<u32> {
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?))
    };
    let (reads, count) = (u32_at(0)?, u32_at(4)?);
    if count as usize != n {
        return None;
    }
    out.bytes.clear();
    out.ends.clear();
    out.lens.clear();
    let mut at = n.checked_mul(4)?.checked_add(8)?;
    for i in 0..n {
        let len = u32_at(8 + 4 * i)? as usize;
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
    use super::{Heads, heads};
    use proptest::prelude::*;

    fn body(reads: u32, lens: &[u32], heads: &[&[u8]]) -> Vec<u8> {
        let mut b = reads.to_le_bytes().to_vec();
        b.extend_from_slice(&(lens.len() as u32).to_le_bytes());
        lens.iter()
            .for_each(|l| b.extend_from_slice(&l.to_le_bytes()));
        heads.iter().for_each(|h| b.extend_from_slice(h));
        b
    }

    #[test]
    fn a_heads_frame_gives_each_length_and_head_in_order() {
        let mut out = Heads::default();
        let b = body(7, &[1400, 0, 3], &[b"0123", b"", b"xyz"]);
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

    proptest! {
        /// Whatever an adapter sends, reading it answers without a panic, and what it accepts
        /// holds one length and one head (never longer than asked) per key.
        #[test]
        fn any_bytes_read_or_refuse_cleanly(
            b in proptest::collection::vec(any::<u8>(), 0..96),
            n in 0usize..4,
            head in 0usize..20,
        ) {
            let mut out = Heads::default();
            if heads(&b, n, head, &mut out).is_some() {
                prop_assert_eq!(out.lens.len(), n);
                prop_assert!(out.iter().all(|(h, len)| h.len() == len.min(head)));
            }
        }
    }
}
