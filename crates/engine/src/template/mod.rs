//! Request templates: text with `{{…}}` fields filled in at each request's start, so ids and
//! payloads vary as users' do.
//!
//! | field | value |
//! |---|---|
//! | `{{seq}}` | the request's number in the run, from 0, unique over every thread |
//! | `{{client}}` | the connection (a stream's slot on HTTP/2) sending it, from 0 |
//! | `{{uniform A B}}` | an integer drawn uniformly from A to B, both included |
//! | `{{zipf N THETA}}` | an integer from 1 to N, rank k drawn with P ∝ 1/k^THETA, exactly ([`ExactZipf`]) |
//! | `{{uuid}}` | a random UUID (version 4) |
//! | `{{data.COLUMN}}` | COLUMN of a row of the target's data file ([`Rows`]) |
//! | `{{capture.NAME}}` | what the client captured as NAME from an earlier response (empty before) |
//!
//! `seq`, `client` and the data row are the request's: every field of one request (its path,
//! headers and body) sees the same; `uniform`, `zipf` and `uuid` draw anew at each field. A
//! template is parsed once, when the plan is resolved, into literal bytes and fields; rendering
//! writes into a buffer the connection reuses, so a request allocates nothing once the buffers
//! have grown to its size. Draws come from the load thread's seeded stream.

mod rows;

pub use rows::{Order, Rows};

use crate::zipf::ExactZipf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest N of `{{zipf N THETA}}`: its table holds one f64 per rank.
pub const MAX_ZIPF: u64 = 10_000_000;

/// How a field's value is written where it lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// As it is (a body).
    None,
    /// A URL's path and query: bytes that cannot stand there (space, control, non-ASCII, and
    /// `#%"<>\^`{|}`) percent-encoded.
    Path,
    /// A header's value: line breaks and other control bytes written as spaces.
    Header,
}

#[derive(Debug, Clone)]
enum Field {
    Seq,
    Client,
    Uniform { lo: i64, span: u64 },
    Zipf(Arc<ExactZipf>),
    Uuid,
    Data(usize),
    Capture(usize),
}

#[derive(Debug, Clone)]
enum Part {
    Literal(std::ops::Range<usize>),
    Field(Field),
}

/// A text with fields, parsed.
#[derive(Debug, Clone)]
pub struct Template {
    text: Box<[u8]>,
    parts: Vec<Part>,
    escape: Escape,
}

/// Why a template was refused: where in its text (a byte offset) and what to write instead.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    pub offset: usize,
    pub message: String,
    pub hint: Option<String>,
}

/// What a target's templates share: the run's request numbers and the data file's rows.
#[derive(Debug, Default)]
pub struct Shared {
    seq: AtomicU64,
    rows: Option<Rows>,
    next_row: AtomicU64,
}

impl Shared {
    pub fn new(rows: Option<Rows>) -> Shared {
        Shared {
            rows,
            ..Shared::default()
        }
    }

    pub fn rows(&self) -> Option<&Rows> {
        self.rows.as_ref()
    }
}

/// One request's draws, made as its fields ask: the same `seq` and row for all its templates.
pub struct Draw<'a> {
    shared: &'a Shared,
    client: u64,
    rng: &'a mut u64,
    captures: &'a [Vec<u8>],
    /// This generator's shard and their count: `seq` and in-order rows interleave over them.
    shard: (u64, u64),
    seq: Option<u64>,
    row: Option<usize>,
}

impl<'a> Draw<'a> {
    /// The draws of a request sent by `client`, from the thread's stream `rng`.
    pub fn new(shared: &'a Shared, client: u64, rng: &'a mut u64) -> Draw<'a> {
        Draw {
            shared,
            client,
            rng,
            captures: &[],
            shard: (0, 1),
            seq: None,
            row: None,
        }
    }

    /// As the generator `shard` of `shards` (both numbered over every shard, interleaved).
    pub fn in_shard(self, (shard, shards): (u64, u64)) -> Draw<'a> {
        Draw {
            shard: (shard, shards.max(1)),
            ..self
        }
    }

    /// What the client captured, by slot, for `{{capture.NAME}}`.
    pub fn with_captures(self, captures: &'a [Vec<u8>]) -> Draw<'a> {
        Draw { captures, ..self }
    }

    fn next(&mut self) -> u64 {
        results::rng::splitmix64(self.rng)
    }

    fn seq(&mut self) -> u64 {
        let (shard, shards) = self.shard;
        *(self.seq.get_or_insert_with(|| {
            self.shared.seq.fetch_add(1, Ordering::Relaxed) * shards + shard
        }))
    }

    fn row(&mut self) -> usize {
        if let Some(r) = self.row {
            return r;
        }
        let rows = self.shared.rows.as_ref().expect("a data field has rows");
        let n = rows.len() as u64;
        let r = match rows.order() {
            Order::InOrder => {
                let (shard, shards) = self.shard;
                (self.shared.next_row.fetch_add(1, Ordering::Relaxed) * shards + shard) % n
            }
            Order::Random => ((u128::from(self.next()) * u128::from(n)) >> 64) as u64,
            Order::PerClient => self.client % n,
        } as usize;
        self.row = Some(r);
        r
    }
}

impl Template {
    /// Parses `text`; `rows` are the data file's, for `{{data.COLUMN}}`.
    pub fn parse(
        text: &str,
        escape: Escape,
        rows: Option<&Rows>,
    ) -> Result<Template, TemplateError> {
        Template::parse_with(text, escape, rows, &[])
    }

    /// As [`Template::parse`], with the names of the values clients capture (their slots, in
    /// order), for `{{capture.NAME}}`.
    pub fn parse_with(
        text: &str,
        escape: Escape,
        rows: Option<&Rows>,
        captures: &[String],
    ) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut at = 0;
        while let Some(open) = text[at..].find("{{").map(|i| at + i) {
            if open > at {
                parts.push(Part::Literal(at..open));
            }
            let close =
                (text[open..].find("}}").map(|i| open + i)).ok_or_else(|| TemplateError {
                    offset: open,
                    message: "a field `{{` with no `}}`".into(),
                    hint: Some("close it, e.g. {{seq}}".into()),
                })?;
            let field = field(text[open + 2..close].trim(), rows, captures).map_err(
                |(message, hint)| TemplateError {
                    offset: open,
                    message,
                    hint,
                },
            )?;
            parts.push(Part::Field(field));
            at = close + 2;
        }
        if at < text.len() {
            parts.push(Part::Literal(at..text.len()));
        }
        Ok(Template {
            text: text.as_bytes().into(),
            parts,
            escape,
        })
    }

    /// Bytes with no field in them, sent as they are.
    pub fn literal(bytes: &[u8]) -> Template {
        Template {
            text: bytes.into(),
            parts: vec![Part::Literal(0..bytes.len())],
            escape: Escape::None,
        }
    }

    /// Whether it has no field: it is the same text every time.
    pub fn is_fixed(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// Writes the text with its fields filled in from `d` at the end of `out`.
    pub fn render(&self, d: &mut Draw, out: &mut Vec<u8>) {
        for p in &self.parts {
            match p {
                Part::Literal(r) => out.extend_from_slice(&self.text[r.clone()]),
                Part::Field(f) => self.value(f, d, out),
            }
        }
    }

    fn value(&self, f: &Field, d: &mut Draw, out: &mut Vec<u8>) {
        let mut n = itoa::Buffer::new();
        let number = |n: &mut itoa::Buffer, out: &mut Vec<u8>, v: i64| {
            out.extend_from_slice(n.format(v).as_bytes())
        };
        match f {
            Field::Seq => {
                let s = d.seq();
                out.extend_from_slice(n.format(s).as_bytes());
            }
            Field::Client => out.extend_from_slice(n.format(d.client).as_bytes()),
            Field::Uniform { lo, span } => {
                let r = ((u128::from(d.next()) * u128::from(*span)) >> 64) as u64;
                number(&mut n, out, lo.wrapping_add(r as i64));
            }
            Field::Zipf(z) => {
                let u = (d.next() >> 11) as f64 / (1u64 << 53) as f64;
                out.extend_from_slice(n.format(z.at(u) + 1).as_bytes());
            }
            Field::Uuid => uuid(d.next(), d.next(), out),
            Field::Capture(slot) => {
                let v = d.captures.get(*slot).map_or(&[][..], Vec::as_slice);
                escaped(v, self.escape, out);
            }
            Field::Data(col) => {
                let row = d.row();
                let rows = d.shared.rows.as_ref().expect("a data field has rows");
                escaped(rows.cell(row, *col), self.escape, out);
            }
        }
    }
}

/// A value written where it lands (see [`Escape`]).
fn escaped(v: &[u8], escape: Escape, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    match escape {
        Escape::None => out.extend_from_slice(v),
        Escape::Header => out.extend(
            v.iter()
                .map(|&b| if b < 0x20 || b == 0x7f { b' ' } else { b }),
        ),
        Escape::Path => {
            for &b in v {
                if b <= 0x20 || b >= 0x7f || b"#%\"<>\\^`{|}".contains(&b) {
                    out.extend_from_slice(&[
                        b'%',
                        HEX[usize::from(b >> 4)],
                        HEX[usize::from(b & 15)],
                    ]);
                } else {
                    out.push(b);
                }
            }
        }
    }
}

/// A version 4 UUID from two random words, as text.
fn uuid(a: u64, b: u64, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let a = (a & !0xF000) | 0x4000; // version 4
    let b = (b & !(0b11 << 62)) | (0b10 << 62); // RFC 4122 variant
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.extend_from_slice(&[HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 15)]]);
    }
}

type Refusal = (String, Option<String>);

/// The field `{{inner}}` names.
fn field(inner: &str, rows: Option<&Rows>, captures: &[String]) -> Result<Field, Refusal> {
    let words: Vec<&str> = inner.split_whitespace().collect();
    let args = |n: usize, form: &str| -> Result<(), Refusal> {
        match words.len() == n + 1 {
            true => Ok(()),
            false => Err((format!("{{{{{inner}}}}}: write {{{{{form}}}}}"), None)),
        }
    };
    let int = |w: &str| -> Result<i64, Refusal> {
        w.parse::<i64>().map_err(|_| {
            (
                format!("{{{{{inner}}}}}: {w:?} is not a whole number"),
                None,
            )
        })
    };
    match words.first().copied().unwrap_or("") {
        "seq" => args(0, "seq").map(|_| Field::Seq),
        "client" => args(0, "client").map(|_| Field::Client),
        "uuid" => args(0, "uuid").map(|_| Field::Uuid),
        "uniform" => {
            args(2, "uniform A B")?;
            let (lo, hi) = (int(words[1])?, int(words[2])?);
            if lo > hi {
                return Err((
                    format!("{{{{{inner}}}}}: {lo} is above {hi}"),
                    Some("write the lower bound first".into()),
                ));
            }
            let span = (hi as i128 - lo as i128 + 1).min(u64::MAX as i128) as u64;
            Ok(Field::Uniform { lo, span })
        }
        "zipf" => {
            args(2, "zipf N THETA")?;
            let n = int(words[1])?;
            let theta: f64 = (words[2].parse().ok())
                .filter(|t: &f64| t.is_finite() && *t > 0.0 && *t <= 100.0)
                .ok_or_else(|| {
                    (
                        format!(
                            "{{{{{inner}}}}}: THETA {:?} is not a number above 0 (at most 100)",
                            words[2]
                        ),
                        Some("write e.g. {{zipf 1000 0.99}}".into()),
                    )
                })?;
            if !(1..=MAX_ZIPF as i64).contains(&n) {
                return Err((format!("{{{{{inner}}}}}: N is 1 to {MAX_ZIPF}"), None));
            }
            Ok(Field::Zipf(Arc::new(ExactZipf::new(n as usize, theta))))
        }
        w if w.starts_with("capture.") => {
            args(0, "capture.NAME")?;
            capture(&w["capture.".len()..], inner, captures)
        }
        w if w.starts_with("data.") => {
            args(0, "data.COLUMN")?;
            let column = &w["data.".len()..];
            let Some(rows) = rows else {
                return Err((
                    format!("{{{{{inner}}}}}: no data file is given"),
                    Some("name one with the option data_rows (--data-rows FILE)".into()),
                ));
            };
            rows.column(column).map(Field::Data).ok_or_else(|| {
                let known = rows.columns().join(", ");
                (format!("{{{{{inner}}}}}: the data file has no column {column:?}; {}its columns: {known}", crate::suggest::did_you_mean(column, rows.columns().iter().map(String::as_str))), None)
            })
        }
        other => Err((
            format!(
                "unknown template field {{{{{inner}}}}}; {}fields: seq, client, uniform A B, zipf N THETA, uuid, data.COLUMN, capture.NAME",
                crate::suggest::did_you_mean(
                    other,
                    ["seq", "client", "uniform", "zipf", "uuid"].into_iter()
                )
            ),
            None,
        )),
    }
}

/// `{{capture.NAME}}`: the slot of NAME among the names captured.
fn capture(name: &str, inner: &str, captures: &[String]) -> Result<Field, Refusal> {
    if let Some(slot) = captures.iter().position(|c| c == name) {
        return Ok(Field::Capture(slot));
    }
    let known = match captures.is_empty() {
        true => "no request captures anything".to_string(),
        false => format!("captured: {}", captures.join(", ")),
    };
    let like = crate::suggest::did_you_mean(name, captures.iter().map(String::as_str));
    Err((
        format!("{{{{{inner}}}}}: no request captures {name:?}; {like}{known}"),
        Some("capture it in an earlier step: capture = [\"NAME = json /POINTER\"]".into()),
    ))
}

#[cfg(test)]
mod tests;
