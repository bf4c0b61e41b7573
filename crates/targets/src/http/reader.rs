//! Reading HTTP/1.x responses as a stream: the head up to [`MAX_HEAD`], then the body counted by
//! `Content-Length`, by chunks, or until the server closes — never held in memory.

use super::check::{Captured, Checks, MAX_CHECKED_BODY};
use engine::driver::{ErrorClass, OpError};
use engine::load::{Feed, ResponseReader};
use memchr::memmem;
use std::mem::MaybeUninit;

/// Response headers larger than this are a protocol error (nginx's default limit is 8 KiB).
pub const MAX_HEAD: usize = 64 << 10;
/// Headers per response parsed (more is a protocol error).
const MAX_HEADERS: usize = 100;
/// Where a head ends, searched for with SIMD. In a profile against nginx (2026-11-28) the
/// reader's byte-by-byte scan and its zeroing of the header slots (below) took 5.4% of dyno's
/// CPU, twice httparse's parse; without them a request costs 3% less (`bench/before-after.sh`).
static HEAD_END: std::sync::LazyLock<memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memmem::Finder::new(b"\r\n\r\n"));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading the hex size; `ext`: inside `;extensions`.
    Size {
        value: u64,
        digits: bool,
        ext: bool,
    },
    /// The LF after the size line's CR.
    SizeLf {
        value: u64,
    },
    Data {
        left: u64,
    },
    /// CRLF after the data.
    DataCr,
    DataLf,
    /// Trailer lines until an empty one; `empty`: the current line has no bytes yet.
    Trailer {
        empty: bool,
        cr: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body { left: u64 },
    Chunked(Chunk),
    UntilClose,
}

/// Reads HTTP/1.x responses as a stream.
pub struct HttpReader {
    head: Vec<u8>,
    state: State,
    head_request: bool,
    /// A mix's requests: which of them are HEAD (their responses have no body).
    heads: Option<std::sync::Arc<[bool]>>,
    /// Each request's checks on its responses, and what the current one's (`which`) failed.
    checks: Option<std::sync::Arc<[Checks]>>,
    which: usize,
    failed: u64,
    /// The body, kept up to [`MAX_CHECKED_BODY`] while a check reads it; its whole length.
    body: Vec<u8>,
    keep: bool,
    body_len: u64,
    /// What the current response captured.
    captured: Captured,
    max_response: u64,
    seen: u64,
    status: u16,
    keep_alive: bool,
}

fn protocol(message: &'static str) -> OpError {
    OpError::new(ErrorClass::Protocol, message)
}

pub(super) fn outcome(status: u16) -> Result<(), OpError> {
    match status {
        200..=299 => Ok(()),
        300..=399 => Err(OpError::new(ErrorClass::Application, "HTTP 3xx response")),
        400..=499 => Err(OpError::new(ErrorClass::Application, "HTTP 4xx response")),
        _ => Err(OpError::new(ErrorClass::Application, "HTTP 5xx response")),
    }
}

impl HttpReader {
    /// Whether the response so far (heads, interim ones included, and body) is within
    /// `max_response`.
    fn within_limit(&self) -> Result<(), OpError> {
        if self.seen > self.max_response {
            return Err(protocol("response larger than max_response"));
        }
        Ok(())
    }

    pub fn new(head_request: bool, max_response: u64) -> HttpReader {
        HttpReader {
            head: Vec::with_capacity(1024),
            state: State::Head,
            head_request,
            heads: None,
            checks: None,
            which: 0,
            failed: 0,
            body: Vec::new(),
            keep: false,
            body_len: 0,
            captured: Captured::default(),
            max_response,
            seen: 0,
            status: 0,
            keep_alive: true,
        }
    }

    /// A reader for a mix's requests, `heads[i]` saying whether request `i` is HEAD.
    pub fn for_mix(heads: std::sync::Arc<[bool]>, max_response: u64) -> HttpReader {
        HttpReader {
            heads: Some(heads),
            ..HttpReader::new(false, max_response)
        }
    }

    /// The same, checking each request's responses with `checks` (by request).
    pub(crate) fn with_checks(self, checks: std::sync::Arc<[Checks]>) -> HttpReader {
        HttpReader {
            checks: Some(checks),
            ..self
        }
    }

    /// The current request's checks, if it has any.
    fn checks(&self) -> Option<&Checks> {
        current(&self.checks, self.which)
    }

    /// A body's bytes as they pass: counted, and kept while a check reads them.
    #[inline]
    fn body_bytes(&mut self, bytes: &[u8]) {
        self.body_len += bytes.len() as u64;
        if self.keep && self.body.len() < MAX_CHECKED_BODY {
            let room = MAX_CHECKED_BODY - self.body.len();
            self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    /// The response ended after `used` bytes: its verdict (its status's, or a failed check's
    /// where checks fail requests).
    fn done(&mut self, used: usize, keep_alive: bool) -> Feed {
        let mut verdict = outcome(self.status);
        let captured = &mut self.captured;
        let checked = current(&self.checks, self.which).map(|c| {
            let failed = self.failed | c.on_body(&self.body, self.body_len, captured);
            let why =
                (c.fail && failed != 0).then(|| format!("check `{}` failed", c.first(failed)));
            (failed, why)
        });
        if let Some((failed, why)) = checked {
            self.failed = failed;
            if let (Some(why), true) = (why, verdict.is_ok()) {
                verdict = Err(OpError::new(ErrorClass::Application, why));
            }
        }
        Feed::Done {
            used,
            outcome: verdict,
            keep_alive,
        }
    }

    /// Parses complete response headers; sets the status, keep-alive and the body's framing.
    fn parse_head(&mut self, head: &[u8]) -> Result<State, OpError> {
        // Left uninitialised: see `HEAD_END`.
        let mut headers = [const { MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
        let mut r = httparse::Response::new(&mut []);
        let config = httparse::ParserConfig::default();
        match config.parse_response_with_uninit_headers(&mut r, head, &mut headers) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => return Err(protocol("incomplete response headers")),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(protocol("more than 100 response headers"));
            }
            Err(_) => return Err(protocol("not an HTTP response")),
        }
        let status = r.code.unwrap_or(0);
        let http11 = r.version == Some(1);
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut keep_alive = http11;
        for h in r.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .ok_or_else(|| protocol("invalid Content-Length"))?;
                if length.is_some_and(|l| l != v) {
                    return Err(protocol("conflicting Content-Length headers"));
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .split(|b| *b == b',')
                    .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                for t in h.value.split(|b| *b == b',') {
                    let t = t.trim_ascii();
                    if t.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") {
                        keep_alive = true;
                    }
                }
            }
        }
        self.status = status;
        self.keep_alive = keep_alive;
        if status >= 200 {
            let captured = &mut self.captured;
            let c = current(&self.checks, self.which);
            self.failed |= c.map_or(0, |c| c.on_head(status, r.headers, captured));
        }
        if self.head_request || status == 204 || status == 304 || (100..200).contains(&status) {
            return Ok(State::Body { left: 0 });
        }
        Ok(if chunked {
            State::Chunked(Chunk::Size {
                value: 0,
                digits: false,
                ext: false,
            })
        } else if let Some(n) = length {
            if n > self.max_response {
                return Err(protocol("response larger than max_response"));
            }
            State::Body { left: n }
        } else {
            self.keep_alive = false;
            State::UntilClose
        })
    }

    /// Advances the chunked decoder over `data`; returns how many bytes it used and whether the
    /// message ended.
    fn chunked(&mut self, mut c: Chunk, data: &[u8]) -> Result<(usize, bool), OpError> {
        let mut i = 0;
        while i < data.len() {
            if let Chunk::Data { left } = c {
                let take = (left as usize).min(data.len() - i);
                self.body_bytes(&data[i..i + take]);
                i += take;
                let left = left - take as u64;
                c = if left == 0 {
                    Chunk::DataCr
                } else {
                    Chunk::Data { left }
                };
                continue;
            }
            let b = data[i];
            i += 1;
            c = match c {
                Chunk::Size { value, digits, ext } => match b {
                    b'\r' => Chunk::SizeLf { value },
                    _ if ext => Chunk::Size { value, digits, ext },
                    b';' | b' ' | b'\t' if digits => Chunk::Size {
                        value,
                        digits,
                        ext: true,
                    },
                    _ => {
                        let d = (b as char)
                            .to_digit(16)
                            .ok_or_else(|| protocol("invalid chunk size"))?;
                        if value > (u64::MAX >> 4) {
                            return Err(protocol("chunk size overflows"));
                        }
                        Chunk::Size {
                            value: value * 16 + u64::from(d),
                            digits: true,
                            ext,
                        }
                    }
                },
                Chunk::SizeLf { value } => {
                    if b != b'\n' {
                        return Err(protocol("chunk size line not ended by CRLF"));
                    }
                    if value == 0 {
                        Chunk::Trailer {
                            empty: true,
                            cr: false,
                        }
                    } else {
                        Chunk::Data { left: value }
                    }
                }
                Chunk::DataCr if b == b'\r' => Chunk::DataLf,
                Chunk::DataLf if b == b'\n' => Chunk::Size {
                    value: 0,
                    digits: false,
                    ext: false,
                },
                Chunk::DataCr | Chunk::DataLf => {
                    return Err(protocol("chunk data not followed by CRLF"));
                }
                Chunk::Trailer { empty, cr } => match (b, cr) {
                    (b'\r', false) => Chunk::Trailer { empty, cr: true },
                    (b'\n', true) if empty => {
                        self.state = State::Head;
                        return Ok((i, true));
                    }
                    (b'\n', true) => Chunk::Trailer {
                        empty: true,
                        cr: false,
                    },
                    _ => Chunk::Trailer {
                        empty: false,
                        cr: false,
                    },
                },
                Chunk::Data { .. } => unreachable!("handled above"),
            };
        }
        self.state = State::Chunked(c);
        Ok((i, false))
    }
}

impl HttpReader {
    /// Reads a response head from `data[i..]`: the state it leads to and the bytes of `data` it
    /// used once it is whole, `None` while more is needed. Most heads arrive whole in one read
    /// and are parsed where they are; only a head split across reads is buffered.
    #[inline]
    fn read_head(
        &mut self,
        data: &[u8],
        i: usize,
        eof: bool,
    ) -> Result<Option<(State, usize)>, OpError> {
        let whole = if self.head.is_empty() {
            let limit = (data.len() - i).min(MAX_HEAD);
            HEAD_END.find(&data[i..i + limit]).map(|pos| pos + 4)
        } else {
            None
        };
        match whole {
            Some(len) => {
                let next = self.parse_head(&data[i..i + len])?;
                self.seen += len as u64;
                Ok(Some((next, len)))
            }
            None => {
                let old = self.head.len();
                let take = (data.len() - i).min(MAX_HEAD - old);
                self.head.extend_from_slice(&data[i..i + take]);
                let from = old.saturating_sub(3);
                let Some(pos) = HEAD_END.find(&self.head[from..]) else {
                    if self.head.len() >= MAX_HEAD {
                        return Err(protocol("response headers larger than 64 KiB"));
                    }
                    if eof {
                        return Err(OpError::new(
                            ErrorClass::Reset,
                            if self.head.is_empty() {
                                "connection closed before a response"
                            } else {
                                "connection closed inside the response headers"
                            },
                        ));
                    }
                    return Ok(None);
                };
                let head_len = from + pos + 4;
                self.seen += head_len as u64;
                let mut head = std::mem::take(&mut self.head);
                head.truncate(head_len);
                let next = self.parse_head(&head);
                head.clear();
                self.head = head;
                Ok(Some((next?, head_len - old)))
            }
        }
    }
}

/// Request `which`'s checks among `checks`, if it has any.
fn current(checks: &Option<std::sync::Arc<[Checks]>>, which: usize) -> Option<&Checks> {
    (checks.as_ref()?.get(which)).filter(|c| !c.is_empty())
}

impl ResponseReader for HttpReader {
    fn checks_failed(&self) -> u64 {
        self.failed
    }
    fn take_captures(&mut self, into: &mut [Vec<u8>]) {
        let mut got = self.captured.got;
        while got != 0 {
            let slot = got.trailing_zeros() as usize;
            got &= got - 1;
            if let (Some(to), Some(from)) = (into.get_mut(slot), self.captured.values.get_mut(slot))
            {
                std::mem::swap(to, from);
            }
        }
        self.captured.got = 0;
    }
    fn feed(&mut self, data: &[u8], eof: bool) -> Result<Feed, OpError> {
        let mut i = 0;
        loop {
            match self.state {
                State::Head => {
                    let Some((next, used)) = self.read_head(data, i, eof)? else {
                        return Ok(Feed::More);
                    };
                    i += used;
                    if (100..200).contains(&self.status) && self.status != 101 {
                        // An interim response: the real one follows. Their heads count
                        // toward the limit, so a server that sends nothing else is stopped.
                        self.within_limit()?;
                        continue;
                    }
                    if self.status == 101 {
                        return Err(protocol("the server switched protocols (101)"));
                    }
                    self.state = next;
                    if next == (State::Body { left: 0 }) {
                        self.state = State::Head;
                        return Ok(self.done(i, self.keep_alive));
                    }
                }
                State::Body { left } => {
                    let take = (left as usize).min(data.len() - i);
                    self.body_bytes(&data[i..i + take]);
                    i += take;
                    self.seen += take as u64;
                    let left = left - take as u64;
                    if left == 0 {
                        self.state = State::Head;
                        return Ok(self.done(i, self.keep_alive));
                    }
                    self.state = State::Body { left };
                    if eof {
                        return Err(OpError::new(
                            ErrorClass::Reset,
                            "connection closed inside the body",
                        ));
                    }
                    return Ok(Feed::More);
                }
                State::Chunked(c) => {
                    let (used, ended) = self.chunked(c, &data[i..])?;
                    i += used;
                    self.seen += used as u64;
                    self.within_limit()?;
                    if ended {
                        return Ok(self.done(i, self.keep_alive));
                    }
                    if eof {
                        return Err(OpError::new(
                            ErrorClass::Reset,
                            "connection closed inside a chunked body",
                        ));
                    }
                    return Ok(Feed::More);
                }
                State::UntilClose => {
                    self.seen += (data.len() - i) as u64;
                    self.body_bytes(&data[i..]);
                    self.within_limit()?;
                    if eof {
                        self.state = State::Head;
                        return Ok(self.done(data.len(), false));
                    }
                    return Ok(Feed::More);
                }
            }
        }
    }

    fn reset(&mut self, which: usize) {
        if let Some(heads) = &self.heads {
            self.head_request = heads.get(which).copied().unwrap_or(false);
        }
        self.which = which;
        self.failed = 0;
        self.captured.got = 0;
        self.body.clear();
        self.body_len = 0;
        self.keep = self.checks().is_some_and(Checks::reads_body);
        self.head.clear();
        self.state = State::Head;
        self.seen = 0;
        self.status = 0;
        self.keep_alive = true;
    }
}

#[cfg(test)]
mod tests;
