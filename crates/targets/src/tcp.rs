//! `tcp://HOST:PORT` — raw TCP request/response load.
//!
//! Each request sends `payload` (possibly nothing: then the response is what the server sends on
//! its own) and reads one response, framed by:
//!
//! - `length:N` — an N-byte big-endian length prefix (N = 1, 2, 4 or 8; `length:4le` for little
//!   endian), then that many bytes;
//! - `delimiter:TEXT` — everything up to and including TEXT (escapes: `\n`, `\r`, `\t`, `\0`,
//!   `\\`, `\xHH`);
//! - `fixed:N` — exactly N bytes;
//! - `close` — everything until the server closes (one connection per request, like the seed's
//!   server that sends a document and hangs up).
//!
//! `connection_per_request=true` opens a connection for every request with any framing.

use crate::options::Opts;
use engine::driver::{
    ConfigError, DriverError, DriverInfo, Endpoint, ErrorClass, Family, OpError, OptionSpec,
    TargetConfig,
};
use engine::load::{Feed, Protocol, ResponseReader};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "tcp",
    query_options: true,
    summary: "raw TCP request/response load; responses framed by length prefix, delimiter, size or close",
    forms: &[
        "tcp://127.0.0.1:7000?framing=close",
        "tcp://127.0.0.1:7000?payload=PING\\n&framing=delimiter:\\n",
    ],
    families: &[Family::Request],
    options: &[
        OptionSpec {
            name: "payload",
            default: "",
            help: "bytes to send per request (escapes: \\n \\r \\t \\0 \\\\ \\xHH)",
        },
        OptionSpec {
            name: "payload_file",
            default: "",
            help: "send this file's bytes instead",
        },
        OptionSpec {
            name: "framing",
            default: "close",
            help: "length:N[le], delimiter:TEXT, fixed:N or close",
        },
        OptionSpec {
            name: "connection_per_request",
            default: "false",
            help: "a new connection for every request",
        },
        OptionSpec {
            name: "max_response",
            default: "64MiB",
            help: "largest response accepted",
        },
    ],
    clients: engine::driver::ClientModel::EventLoop,
};

/// How a response's end is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framing {
    Length { bytes: usize, little: bool },
    Delimiter(Vec<u8>),
    Fixed(u64),
    Close,
}

/// Why an escaped byte string cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EscapeError {
    #[error("{0:?}: \\x needs two hex digits")]
    Hex(String),
    #[error("{0:?}: unknown escape \\{1}")]
    Unknown(String, char),
    #[error("{0:?} ends with a lone backslash")]
    LoneBackslash(String),
}

/// Decodes `\n`, `\r`, `\t`, `\0`, `\\` and `\xHH`.
pub fn unescape(text: &str) -> Result<Vec<u8>, EscapeError> {
    let mut out = Vec::with_capacity(text.len());
    let mut it = text.bytes();
    while let Some(b) = it.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match it.next() {
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b't') => out.push(b'\t'),
            Some(b'0') => out.push(0),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hi = it.next().and_then(|c| (c as char).to_digit(16));
                let lo = it.next().and_then(|c| (c as char).to_digit(16));
                match (hi, lo) {
                    (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                    _ => return Err(EscapeError::Hex(text.into())),
                }
            }
            Some(c) => return Err(EscapeError::Unknown(text.into(), c as char)),
            None => return Err(EscapeError::LoneBackslash(text.into())),
        }
    }
    Ok(out)
}

fn parse_framing(text: &str) -> Result<Framing, ConfigError> {
    let bad = |why: String| {
        ConfigError::option("framing", why)
            .hint("write length:4, length:4le, delimiter:\\n, fixed:512 or close")
    };
    let (kind, arg) = text.split_once(':').unwrap_or((text, ""));
    match kind {
        "close" if arg.is_empty() => Ok(Framing::Close),
        "length" => {
            let (n, little) = match arg.strip_suffix("le") {
                Some(n) => (n, true),
                None => (arg.strip_suffix("be").unwrap_or(arg), false),
            };
            match n.parse::<usize>() {
                Ok(bytes @ (1 | 2 | 4 | 8)) => Ok(Framing::Length { bytes, little }),
                _ => Err(bad(format!("{text:?}: the prefix is 1, 2, 4 or 8 bytes"))),
            }
        }
        "delimiter" => {
            let d = unescape(arg).map_err(|e| bad(e.to_string()))?;
            if d.is_empty() {
                return Err(bad(format!("{text:?}: the delimiter is empty")));
            }
            Ok(Framing::Delimiter(d))
        }
        "fixed" => arg
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .map(Framing::Fixed)
            .ok_or_else(|| bad(format!("{text:?}: the size is a whole number above 0"))),
        _ => Err(bad(format!("{text:?} is not a framing"))),
    }
}

#[derive(Debug, Clone)]
struct Config {
    authority: String,
    payload: Option<Vec<u8>>,
    payload_file: Option<PathBuf>,
    framing: Framing,
    per_request: bool,
    max_response: u64,
    resolved: BTreeMap<String, String>,
}

/// Validates the URL and options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let o = Opts::new("tcp", options, INFO.options)?;
    let authority = crate::net::authority(rest, true, "tcp://HOST:PORT", "tcp://127.0.0.1:7000")?;
    let framing = parse_framing(o.text("framing"))?;
    let (payload, payload_file) = match (o.text("payload"), o.text("payload_file")) {
        (p, "") => (
            Some(unescape(p).map_err(|e| ConfigError::option("payload", e.to_string()))?),
            None,
        ),
        ("", f) => (None, Some(PathBuf::from(f))),
        _ => {
            return Err(ConfigError::option(
                "payload_file",
                "both payload and payload_file are set",
            )
            .hint("keep one of the two"));
        }
    };
    Ok(Box::new(Config {
        authority: authority.to_string(),
        payload,
        payload_file,
        per_request: o.bool("connection_per_request")? || framing == Framing::Close,
        framing,
        max_response: o.size("max_response")?,
        resolved: o.resolved(),
    }))
}

impl TargetConfig for Config {
    fn durability(&self) -> String {
        if self.per_request {
            "connection per request"
        } else {
            "persistent connections"
        }
        .into()
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn endpoint(&self) -> Result<Endpoint, DriverError> {
        let addr = crate::net::resolve(&self.authority, None)?;
        let payload = crate::net::bytes(&self.payload, &self.payload_file, "payload_file")?;
        Ok(Endpoint {
            addr,
            protocol: Arc::new(Tcp {
                payload,
                framing: self.framing.clone(),
                per_request: self.per_request,
                max_response: self.max_response,
            }),
        })
    }
}

struct Tcp {
    payload: Vec<u8>,
    framing: Framing,
    per_request: bool,
    max_response: u64,
}

impl Protocol for Tcp {
    fn request(&self, _: usize) -> &[u8] {
        &self.payload
    }
    fn connection_per_request(&self) -> bool {
        self.per_request
    }
    fn reader(&self) -> Box<dyn ResponseReader> {
        Box::new(TcpReader::new(self.framing.clone(), self.max_response))
    }
}

/// Finds the end of framed responses in a byte stream.
pub struct TcpReader {
    framing: Framing,
    max_response: u64,
    prefix: [u8; 8],
    prefix_got: usize,
    /// Body bytes still expected (length and fixed framings), once known.
    left: Option<u64>,
    /// Delimiter bytes matched so far.
    matched: usize,
    seen: u64,
}

impl TcpReader {
    pub fn new(framing: Framing, max_response: u64) -> TcpReader {
        TcpReader {
            framing,
            max_response,
            prefix: [0; 8],
            prefix_got: 0,
            left: None,
            matched: 0,
            seen: 0,
        }
    }

    fn done(used: usize, keep_alive: bool) -> Feed {
        Feed::Done {
            used,
            outcome: Ok(()),
            keep_alive,
        }
    }
}

fn too_large() -> OpError {
    OpError::new(ErrorClass::Protocol, "response larger than max_response")
}

impl ResponseReader for TcpReader {
    fn feed(&mut self, data: &[u8], eof: bool) -> Result<Feed, OpError> {
        let mut i = 0;
        let feed = match &self.framing {
            Framing::Close => {
                self.seen += data.len() as u64;
                if self.seen > self.max_response {
                    return Err(too_large());
                }
                if eof {
                    return Ok(Self::done(data.len(), false));
                }
                return Ok(Feed::More);
            }
            Framing::Fixed(n) => {
                let left = *self.left.get_or_insert(*n);
                let take = (left as usize).min(data.len());
                i += take;
                self.left = Some(left - take as u64);
                (self.left == Some(0)).then(|| Self::done(i, true))
            }
            Framing::Length { bytes, little } => {
                let bytes = *bytes;
                while self.left.is_none() && i < data.len() {
                    self.prefix[self.prefix_got] = data[i];
                    self.prefix_got += 1;
                    i += 1;
                    if self.prefix_got == bytes {
                        let mut v: u64 = 0;
                        for k in 0..bytes {
                            let b = if *little {
                                self.prefix[bytes - 1 - k]
                            } else {
                                self.prefix[k]
                            };
                            v = (v << 8) | u64::from(b);
                        }
                        if v > self.max_response {
                            return Err(too_large());
                        }
                        self.left = Some(v);
                    }
                }
                match self.left {
                    Some(left) => {
                        let take = (left as usize).min(data.len() - i);
                        i += take;
                        self.left = Some(left - take as u64);
                        (self.left == Some(0)).then(|| Self::done(i, true))
                    }
                    None => None,
                }
            }
            Framing::Delimiter(d) => {
                let mut end = None;
                while i < data.len() {
                    let b = data[i];
                    i += 1;
                    if b == d[self.matched] {
                        self.matched += 1;
                    } else {
                        self.matched = usize::from(b == d[0]);
                    }
                    if self.matched == d.len() {
                        end = Some(i);
                        break;
                    }
                }
                self.seen += i as u64;
                if self.seen > self.max_response {
                    return Err(too_large());
                }
                end.map(|used| Self::done(used, true))
            }
        };
        match feed {
            Some(f) => Ok(f),
            None if eof => Err(OpError::new(
                ErrorClass::Reset,
                "connection closed before the response ended",
            )),
            None => Ok(Feed::More),
        }
    }

    fn reset(&mut self, _: usize) {
        self.prefix_got = 0;
        self.left = None;
        self.matched = 0;
        self.seen = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_split(framing: Framing, resp: &[u8]) {
        for cut in 0..=resp.len() {
            let mut r = TcpReader::new(framing.clone(), 1 << 20);
            let first = r.feed(&resp[..cut], false).unwrap();
            let f = match first {
                Feed::More => r.feed(&resp[cut..], false).unwrap(),
                done => {
                    assert_eq!(cut, resp.len(), "done early at {cut}");
                    done
                }
            };
            match f {
                Feed::Done {
                    used,
                    outcome,
                    keep_alive,
                } => {
                    assert!(outcome.is_ok() && keep_alive);
                    assert_eq!(
                        used,
                        if cut == resp.len() {
                            resp.len()
                        } else {
                            resp.len() - cut
                        }
                    );
                }
                Feed::More => panic!("{framing:?} cut {cut}: not done"),
            }
        }
    }

    #[test]
    fn every_framing_finds_the_end_wherever_the_bytes_split() {
        read_split(
            Framing::Length {
                bytes: 4,
                little: false,
            },
            b"\x00\x00\x00\x05hello",
        );
        read_split(
            Framing::Length {
                bytes: 2,
                little: true,
            },
            b"\x03\x00abc",
        );
        read_split(Framing::Delimiter(b"\r\n".to_vec()), b"a\rb\r\r\n");
        read_split(Framing::Fixed(7), b"1234567");
    }

    #[test]
    fn close_framing_ends_at_eof_and_a_short_response_is_a_reset() {
        let mut r = TcpReader::new(Framing::Close, 1 << 20);
        assert_eq!(r.feed(b"abc", false).unwrap(), Feed::More);
        assert_eq!(
            r.feed(b"", true).unwrap(),
            Feed::Done {
                used: 0,
                outcome: Ok(()),
                keep_alive: false
            }
        );
        let mut r = TcpReader::new(Framing::Fixed(10), 1 << 20);
        assert_eq!(r.feed(b"abc", false).unwrap(), Feed::More);
        assert_eq!(r.feed(b"", true).unwrap_err().class, ErrorClass::Reset);
    }

    #[test]
    fn limits_hold() {
        let mut r = TcpReader::new(
            Framing::Length {
                bytes: 4,
                little: false,
            },
            100,
        );
        assert!(
            r.feed(b"\xff\xff\xff\xff", false)
                .unwrap_err()
                .message
                .contains("max_response")
        );
        let mut r = TcpReader::new(Framing::Delimiter(b"\n".to_vec()), 4);
        assert!(r.feed(b"abcdefgh", false).is_err());
    }

    #[test]
    fn options_are_checked() {
        assert_eq!(unescape(r"a\n\x41\\").unwrap(), b"a\nA\\");
        assert!(unescape(r"\q").is_err());
        assert_eq!(
            parse_framing("length:4le").unwrap(),
            Framing::Length {
                bytes: 4,
                little: true
            }
        );
        assert_eq!(
            parse_framing(r"delimiter:\r\n").unwrap(),
            Framing::Delimiter(b"\r\n".to_vec())
        );
        assert!(parse_framing("length:3").is_err());
        assert!(parse_framing("fixed:0").is_err());
        assert!(parse_framing("lines").is_err());
        assert!(configure("//127.0.0.1", &BTreeMap::new()).is_err());
        let c = configure("//127.0.0.1:7000", &BTreeMap::new()).unwrap();
        assert_eq!(
            c.durability(),
            "connection per request",
            "close framing implies it"
        );
    }

    mod fuzz {
        use super::*;
        use crate::fuzz::{bytes_and_cuts, drive, mutated};
        use proptest::prelude::*;

        const VALID: &[u8] = b"\x00\x00\x00\x05hello\x00\x00\x00\x00line\r\nmore\r\nfixed!!";

        fn framings() -> Vec<Framing> {
            vec![
                Framing::Length {
                    bytes: 4,
                    little: false,
                },
                Framing::Length {
                    bytes: 2,
                    little: true,
                },
                Framing::Length {
                    bytes: 8,
                    little: false,
                },
                Framing::Delimiter(b"\r\n".to_vec()),
                Framing::Fixed(7),
                Framing::Close,
            ]
        }

        fn check(data: &[u8], cuts: &[usize], eof: bool) {
            for f in framings() {
                let mut r = TcpReader::new(f, 4096);
                // The reader keeps a length prefix and counters: nothing grows with the input.
                drive(&mut r, data, cuts, eof);
                assert!(r.prefix_got <= r.prefix.len());
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn any_bytes_are_responses_or_an_error((data, cuts, eof) in bytes_and_cuts()) {
                check(&data, &cuts, eof);
            }

            #[test]
            fn mutated_responses_are_responses_or_an_error((data, cuts, eof) in mutated(VALID)) {
                check(&data, &cuts, eof);
            }
        }
    }
}
