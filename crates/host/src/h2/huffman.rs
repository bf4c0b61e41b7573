//! HPACK's Huffman code (RFC 7541, Appendix B), decoded four bits at a time: the code's tree
//! is walked once, at first use, into a table of (state, nibble) → (next state, the symbol a
//! code ended with). No code is shorter than five bits, so a nibble ends at most one.

use std::sync::OnceLock;

/// Each symbol's code (its bits, right-aligned) and length; symbol 256 is EOS.
#[rustfmt::skip]
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28), (0xfffffe4, 28), (0xfffffe5, 28),
    (0xfffffe6, 28), (0xfffffe7, 28), (0xfffffe8, 28), (0xffffea, 24), (0x3ffffffc, 30), (0xfffffe9, 28),
    (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28), (0xfffffec, 28), (0xfffffed, 28), (0xfffffee, 28),
    (0xfffffef, 28), (0xffffff0, 28), (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28),
    (0xffffff4, 28), (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28), (0xffffff8, 28), (0xffffff9, 28),
    (0xffffffa, 28), (0xffffffb, 28), (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12),
    (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11), (0x3fa, 10), (0x3fb, 10),
    (0xf9, 8), (0x7fb, 11), (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6),
    (0x0, 5), (0x1, 5), (0x2, 5), (0x19, 6), (0x1a, 6), (0x1b, 6),
    (0x1c, 6), (0x1d, 6), (0x1e, 6), (0x1f, 6), (0x5c, 7), (0xfb, 8),
    (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10), (0x1ffa, 13), (0x21, 6),
    (0x5d, 7), (0x5e, 7), (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7),
    (0x63, 7), (0x64, 7), (0x65, 7), (0x66, 7), (0x67, 7), (0x68, 7),
    (0x69, 7), (0x6a, 7), (0x6b, 7), (0x6c, 7), (0x6d, 7), (0x6e, 7),
    (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7), (0xfc, 8), (0x73, 7),
    (0xfd, 8), (0x1ffb, 13), (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6),
    (0x7ffd, 15), (0x3, 5), (0x23, 6), (0x4, 5), (0x24, 6), (0x5, 5),
    (0x25, 6), (0x26, 6), (0x27, 6), (0x6, 5), (0x74, 7), (0x75, 7),
    (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5), (0x2b, 6), (0x76, 7),
    (0x2c, 6), (0x8, 5), (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7),
    (0x79, 7), (0x7a, 7), (0x7b, 7), (0x7ffe, 15), (0x7fc, 11), (0x3ffd, 14),
    (0x1ffd, 13), (0xffffffc, 28), (0xfffe6, 20), (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20),
    (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22), (0x7fffd9, 23), (0x3fffd6, 22), (0x7fffda, 23),
    (0x7fffdb, 23), (0x7fffdc, 23), (0x7fffdd, 23), (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23),
    (0xffffec, 24), (0xffffed, 24), (0x3fffd7, 22), (0x7fffe0, 23), (0xffffee, 24), (0x7fffe1, 23),
    (0x7fffe2, 23), (0x7fffe3, 23), (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23),
    (0x3fffd9, 22), (0x7fffe6, 23), (0x7fffe7, 23), (0xffffef, 24), (0x3fffda, 22), (0x1fffdd, 21),
    (0xfffe9, 20), (0x3fffdb, 22), (0x3fffdc, 22), (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21),
    (0x7fffea, 23), (0x3fffdd, 22), (0x3fffde, 22), (0xfffff0, 24), (0x1fffdf, 21), (0x3fffdf, 22),
    (0x7fffeb, 23), (0x7fffec, 23), (0x1fffe0, 21), (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21),
    (0x7fffed, 23), (0x3fffe1, 22), (0x7fffee, 23), (0x7fffef, 23), (0xfffea, 20), (0x3fffe2, 22),
    (0x3fffe3, 22), (0x3fffe4, 22), (0x7ffff0, 23), (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23),
    (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20), (0x7fff1, 19), (0x3fffe7, 22), (0x7ffff2, 23),
    (0x3fffe8, 22), (0x1ffffec, 25), (0x3ffffe2, 26), (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27),
    (0x7ffffdf, 27), (0x3ffffe5, 26), (0xfffff1, 24), (0x1ffffed, 25), (0x7fff2, 19), (0x1fffe3, 21),
    (0x3ffffe6, 26), (0x7ffffe0, 27), (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27), (0xfffff2, 24),
    (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26), (0xffffffd, 28), (0x7ffffe3, 27),
    (0x7ffffe4, 27), (0x7ffffe5, 27), (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20), (0x1fffe6, 21),
    (0x3fffe9, 22), (0x1fffe7, 21), (0x1fffe8, 21), (0x7ffff3, 23), (0x3fffea, 22), (0x3fffeb, 22),
    (0x1ffffee, 25), (0x1ffffef, 25), (0xfffff4, 24), (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23),
    (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26), (0x3ffffed, 26), (0x7ffffe7, 27), (0x7ffffe8, 27),
    (0x7ffffe9, 27), (0x7ffffea, 27), (0x7ffffeb, 27), (0xffffffe, 28), (0x7ffffec, 27), (0x7ffffed, 27),
    (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27), (0x3ffffee, 26), (0x3fffffff, 30),
];

const NONE: u16 = u16::MAX;

#[derive(Clone, Copy)]
struct Step {
    next: u8,
    symbol: u16,
    fail: bool,
}

struct Machine {
    steps: Vec<Step>,
    /// Whether a code may end in this state: the bits since the last symbol are fewer than
    /// eight and all ones (EOS's prefix, the only padding allowed).
    accept: Vec<bool>,
}

/// The code's tree: node 0 the root; `children[n]` the nodes after a 0 and a 1 bit, a leaf
/// being `LEAF | symbol`.
const LEAF: u16 = 0x8000;

fn tree() -> Vec<[u16; 2]> {
    let mut nodes: Vec<[u16; 2]> = vec![[0, 0]];
    for (symbol, &(code, len)) in CODES.iter().enumerate() {
        let mut n = 0usize;
        for i in (0..len).rev() {
            let bit = ((code >> i) & 1) as usize;
            if i == 0 {
                nodes[n][bit] = LEAF | symbol as u16;
            } else {
                if nodes[n][bit] == 0 {
                    nodes.push([0, 0]);
                    nodes[n][bit] = (nodes.len() - 1) as u16;
                }
                n = nodes[n][bit] as usize;
            }
        }
    }
    nodes
}

fn machine() -> &'static Machine {
    static M: OnceLock<Machine> = OnceLock::new();
    M.get_or_init(|| {
        let nodes = tree();
        // Each node's depth and whether the path to it is all ones.
        let mut depth = vec![0u8; nodes.len()];
        let mut ones = vec![false; nodes.len()];
        ones[0] = true;
        for n in 0..nodes.len() {
            for (bit, &c) in nodes[n].iter().enumerate() {
                if c & LEAF == 0 && c != 0 {
                    depth[c as usize] = depth[n] + 1;
                    ones[c as usize] = ones[n] && bit == 1;
                }
            }
        }
        let mut steps = Vec::with_capacity(nodes.len() * 16);
        for start in 0..nodes.len() {
            for nibble in 0..16u8 {
                let mut n = start;
                let mut step = Step {
                    next: 0,
                    symbol: NONE,
                    fail: false,
                };
                for i in (0..4).rev() {
                    let c = nodes[n][usize::from((nibble >> i) & 1)];
                    if c & LEAF != 0 {
                        let symbol = c & !LEAF;
                        step.fail |= symbol == 256;
                        step.symbol = symbol;
                        n = 0;
                    } else {
                        n = c as usize;
                    }
                }
                step.next = n as u8;
                steps.push(step);
            }
        }
        let accept = (0..nodes.len()).map(|n| ones[n] && depth[n] < 8).collect();
        Machine { steps, accept }
    })
}

/// A string that is not in HPACK's Huffman code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

/// Decodes `raw` onto `out`; `Err` for EOS inside the string or padding that is not EOS's
/// prefix of fewer than eight bits.
pub fn decode(raw: &[u8], out: &mut Vec<u8>) -> Result<(), Invalid> {
    let m = machine();
    let mut state = 0usize;
    for &b in raw {
        for nibble in [b >> 4, b & 0x0f] {
            let s = m.steps[state * 16 + usize::from(nibble)];
            if s.fail {
                return Err(Invalid);
            }
            if s.symbol != NONE {
                out.push(s.symbol as u8);
            }
            state = usize::from(s.next);
        }
    }
    if m.accept[state] {
        Ok(())
    } else {
        Err(Invalid)
    }
}

/// Encodes `text` (for tests, and for a server that wants shorter headers).
pub fn encode(text: &[u8], out: &mut Vec<u8>) {
    let (mut acc, mut bits) = (0u64, 0u32);
    for &b in text {
        let (code, len) = CODES[usize::from(b)];
        acc = acc << len | u64::from(code);
        bits += u32::from(len);
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        // Padding: the most significant bits of EOS (all ones).
        out.push(((acc << (8 - bits)) as u8) | ((1u8 << (8 - bits)) - 1));
    }
}
