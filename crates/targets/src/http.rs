//! `http://HOST[:PORT]/PATH` and `https://…` — HTTP/1.1 request/response load, in the clear or
//! over TLS (rustls, `crate::tls`; Cargo feature `tls`, on by default).
//!
//! The request is built once (method, path and query, `Host`, `User-Agent`, the plan's headers
//! and body) and sent as is for every request. Responses are read as a stream: headers up to
//! [`MAX_HEAD`], then the body counted by `Content-Length`, by chunks, or until the server closes —
//! never held in memory. 2xx is success; any other complete response is counted as
//! `application` (non-2xx); anything that is not HTTP is `protocol`. Keep-alive is the default;
//! `keepalive=false` opens a connection per request and says `Connection: close`.
//!
//! The URL's query is part of the request; options come from flags or the plan:
//! `method`, `headers` (one `Name: value` per line), `body`, `body_file`, `keepalive`,
//! `max_response`.

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
    scheme: "http",
    query_options: false,
    summary: "HTTP/1.1 request/response load (keep-alive or a connection per request)",
    forms: &["http://127.0.0.1:8080/path?query"],
    families: &[Family::Request],
    options: OPTIONS,
};

/// `https://`: the same load over TLS, with the certificate checked.
#[cfg(feature = "tls")]
pub static HTTPS_INFO: DriverInfo = DriverInfo {
    scheme: "https",
    query_options: false,
    summary: "HTTP/1.1 load over TLS (rustls); the certificate checked against Mozilla's roots, a CA file, or not at all",
    forms: &["https://example.test/path   (--ca FILE, --insecure)"],
    families: &[Family::Request],
    options: HTTPS_OPTIONS,
};

#[cfg(feature = "tls")]
const HTTPS_OPTIONS: &[OptionSpec] = &[
    OPTIONS[0],
    OPTIONS[1],
    OPTIONS[2],
    OPTIONS[3],
    OPTIONS[4],
    OPTIONS[5],
    OptionSpec {
        name: "ca",
        default: "",
        help: "trust the CA certificates of this PEM file instead of Mozilla's roots",
    },
    OptionSpec {
        name: "insecure",
        default: "false",
        help: "accept any certificate (a test server's self-signed one); the traffic is still encrypted",
    },
];

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "method",
        default: "GET",
        help: "request method",
    },
    OptionSpec {
        name: "headers",
        default: "",
        help: "extra headers, one `Name: value` per line",
    },
    OptionSpec {
        name: "body",
        default: "",
        help: "request body",
    },
    OptionSpec {
        name: "body_file",
        default: "",
        help: "read the request body from this file",
    },
    OptionSpec {
        name: "keepalive",
        default: "true",
        help: "reuse connections (false: one per request)",
    },
    OptionSpec {
        name: "max_response",
        default: "64MiB",
        help: "largest response accepted",
    },
];

/// Response headers larger than this are a protocol error (nginx's default limit is 8 KiB).
pub const MAX_HEAD: usize = 64 << 10;
/// Headers per response parsed (more is a protocol error).
const MAX_HEADERS: usize = 100;

#[derive(Debug, Clone)]
struct Config {
    authority: String,
    path: String,
    method: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    body_file: Option<PathBuf>,
    keepalive: bool,
    max_response: u64,
    resolved: BTreeMap<String, String>,
    #[cfg(feature = "tls")]
    tls: Option<(crate::tls::Client, crate::tls::Trust)>,
}

/// Validates the URL and options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    configure_as(&INFO, rest, options).map(|c| Box::new(c) as Box<dyn TargetConfig>)
}

/// `https://`: as [`configure`], and the TLS client (a `ca` file is read here, so a bad one is
/// refused before anything runs).
#[cfg(feature = "tls")]
pub fn configure_https(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let mut c = configure_as(&HTTPS_INFO, rest, options)?;
    let o = Opts::new("https", options, HTTPS_INFO.options)?;
    let trust = match (o.text("ca"), o.bool("insecure")?) {
        ("", false) => crate::tls::Trust::Roots,
        (ca, false) => crate::tls::Trust::Ca(PathBuf::from(ca)),
        ("", true) => crate::tls::Trust::Insecure,
        (_, true) => {
            return Err(
                ConfigError::option("insecure", "both ca and insecure=true are set")
                    .hint("keep ca to check the certificate, or insecure=true not to"),
            );
        }
    };
    let host = match c.authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() && !h.is_empty() => h.to_string(),
        _ => c.authority.clone(),
    };
    c.tls = Some((crate::tls::Client::new(&host, &trust)?, trust));
    Ok(Box::new(c))
}

fn configure_as(
    info: &DriverInfo,
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Config, ConfigError> {
    let o = Opts::new(info.scheme, options, info.options)?;
    let after = rest.strip_prefix("//").ok_or_else(|| {
        ConfigError::url("an HTTP URL needs //HOST").hint("write e.g. http://127.0.0.1:8080/")
    })?;
    let (authority, path) = match after.find(['/', '?']) {
        Some(i) if after.as_bytes()[i] == b'/' => (&after[..i], after[i..].to_string()),
        Some(i) => (&after[..i], format!("/{}", &after[i..])),
        None => (after, "/".to_string()),
    };
    if authority.is_empty() {
        return Err(
            ConfigError::url("the URL has no host").hint("write e.g. http://127.0.0.1:8080/")
        );
    }
    if path.contains(['\r', '\n', ' ']) {
        return Err(ConfigError::url("the path contains spaces or line breaks")
            .hint("percent-encode them (%20, %0A)"));
    }
    let method = o.text("method").to_string();
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(
            ConfigError::option("method", format!("{method:?} is not an HTTP method"))
                .hint("write e.g. GET, POST or PUT"),
        );
    }
    let mut headers = Vec::new();
    for line in o
        .text("headers")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        let (name, value) = line.split_once(':').ok_or_else(|| {
            ConfigError::option("headers", format!("{line:?} is not `Name: value`"))
        })?;
        let name = name.trim();
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(ConfigError::option(
                "headers",
                format!("{name:?} is not a header name"),
            ));
        }
        if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("host") {
            return Err(
                ConfigError::option("headers", format!("{name} is set by dyno"))
                    .hint("dyno sends Host from the URL and Content-Length from the body"),
            );
        }
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let (body, body_file) = match (o.text("body"), o.text("body_file")) {
        ("", "") => (None, None),
        (b, "") => (Some(b.as_bytes().to_vec()), None),
        ("", f) => (None, Some(PathBuf::from(f))),
        _ => {
            return Err(
                ConfigError::option("body_file", "both body and body_file are set")
                    .hint("keep one of the two"),
            );
        }
    };
    Ok(Config {
        authority: authority.to_string(),
        path,
        method,
        headers,
        body,
        body_file,
        keepalive: o.bool("keepalive")?,
        max_response: o.size("max_response")?,
        resolved: o.resolved(),
        #[cfg(feature = "tls")]
        tls: None,
    })
}

impl TargetConfig for Config {
    fn durability(&self) -> String {
        let reuse = if self.keepalive {
            "keep-alive"
        } else {
            "connection per request"
        };
        #[cfg(feature = "tls")]
        if let Some((_, trust)) = &self.tls {
            return format!("{reuse}, {}", trust.label());
        }
        reuse.into()
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn data_path(&self) -> Option<PathBuf> {
        None
    }
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn endpoint(&self) -> Result<Endpoint, DriverError> {
        #[cfg(feature = "tls")]
        let port = if self.tls.is_some() { 443 } else { 80 };
        #[cfg(not(feature = "tls"))]
        let port = 80;
        let addr = crate::net::resolve(&self.authority, Some(port))?;
        let body = crate::net::bytes(&self.body, &self.body_file, "body_file")?;
        let mut req = format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: dyno/{}\r\n",
            self.method,
            self.path,
            self.authority,
            env!("CARGO_PKG_VERSION")
        );
        for (k, v) in &self.headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH") {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        if !self.keepalive {
            req.push_str("Connection: close\r\n");
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(&body);
        Ok(Endpoint {
            addr,
            protocol: Arc::new(Http {
                request: bytes,
                keepalive: self.keepalive,
                head_request: self.method == "HEAD",
                max_response: self.max_response,
                #[cfg(feature = "tls")]
                tls: self.tls.as_ref().map(|t| t.0.clone()),
            }),
        })
    }
}

struct Http {
    request: Vec<u8>,
    keepalive: bool,
    head_request: bool,
    max_response: u64,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::Client>,
}

impl Protocol for Http {
    fn request(&self) -> &[u8] {
        &self.request
    }
    fn connection_per_request(&self) -> bool {
        !self.keepalive
    }
    fn reader(&self) -> Box<dyn ResponseReader> {
        Box::new(HttpReader::new(self.head_request, self.max_response))
    }
    #[cfg(feature = "tls")]
    fn channel(&self) -> Result<Option<Box<dyn engine::load::Channel>>, OpError> {
        self.tls.as_ref().map(|t| t.channel()).transpose()
    }
}

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
    max_response: u64,
    seen: u64,
    status: u16,
    keep_alive: bool,
}

fn protocol(message: &'static str) -> OpError {
    OpError::new(ErrorClass::Protocol, message)
}

fn outcome(status: u16) -> Result<(), OpError> {
    match status {
        200..=299 => Ok(()),
        300..=399 => Err(OpError::new(ErrorClass::Application, "HTTP 3xx response")),
        400..=499 => Err(OpError::new(ErrorClass::Application, "HTTP 4xx response")),
        _ => Err(OpError::new(ErrorClass::Application, "HTTP 5xx response")),
    }
}

impl HttpReader {
    pub fn new(head_request: bool, max_response: u64) -> HttpReader {
        HttpReader {
            head: Vec::with_capacity(1024),
            state: State::Head,
            head_request,
            max_response,
            seen: 0,
            status: 0,
            keep_alive: true,
        }
    }

    fn done(&self, used: usize) -> Feed {
        Feed::Done {
            used,
            outcome: outcome(self.status),
            keep_alive: self.keep_alive,
        }
    }

    /// Parses complete response headers; sets the status, keep-alive and the body's framing.
    fn parse_head(&mut self, head: &[u8]) -> Result<State, OpError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut r = httparse::Response::new(&mut headers);
        match r.parse(head) {
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

impl ResponseReader for HttpReader {
    fn feed(&mut self, data: &[u8], eof: bool) -> Result<Feed, OpError> {
        let mut i = 0;
        loop {
            match self.state {
                State::Head => {
                    // Most heads arrive whole in one read: parse them where they are, and buffer
                    // only a head split across reads.
                    let whole = if self.head.is_empty() {
                        let limit = (data.len() - i).min(MAX_HEAD);
                        data[i..i + limit]
                            .windows(4)
                            .position(|w| w == b"\r\n\r\n")
                            .map(|pos| pos + 4)
                    } else {
                        None
                    };
                    let next = match whole {
                        Some(len) => {
                            let next = self.parse_head(&data[i..i + len])?;
                            i += len;
                            self.seen += len as u64;
                            next
                        }
                        None => {
                            let old = self.head.len();
                            let take = (data.len() - i).min(MAX_HEAD - old);
                            self.head.extend_from_slice(&data[i..i + take]);
                            let from = old.saturating_sub(3);
                            let Some(pos) =
                                self.head[from..].windows(4).position(|w| w == b"\r\n\r\n")
                            else {
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
                                return Ok(Feed::More);
                            };
                            let head_len = from + pos + 4;
                            i += head_len - old;
                            self.seen += head_len as u64;
                            let mut head = std::mem::take(&mut self.head);
                            head.truncate(head_len);
                            let next = self.parse_head(&head);
                            head.clear();
                            self.head = head;
                            next?
                        }
                    };
                    if (100..200).contains(&self.status) && self.status != 101 {
                        continue; // an interim response: the real one follows
                    }
                    if self.status == 101 {
                        return Err(protocol("the server switched protocols (101)"));
                    }
                    self.state = next;
                    if next == (State::Body { left: 0 }) {
                        self.state = State::Head;
                        return Ok(self.done(i));
                    }
                }
                State::Body { left } => {
                    let take = (left as usize).min(data.len() - i);
                    i += take;
                    self.seen += take as u64;
                    let left = left - take as u64;
                    if left == 0 {
                        self.state = State::Head;
                        return Ok(self.done(i));
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
                    if self.seen > self.max_response {
                        return Err(protocol("response larger than max_response"));
                    }
                    if ended {
                        return Ok(self.done(i));
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
                    if self.seen > self.max_response {
                        return Err(protocol("response larger than max_response"));
                    }
                    if eof {
                        self.state = State::Head;
                        return Ok(Feed::Done {
                            used: data.len(),
                            outcome: outcome(self.status),
                            keep_alive: false,
                        });
                    }
                    return Ok(Feed::More);
                }
            }
        }
    }

    fn reset(&mut self) {
        self.head.clear();
        self.state = State::Head;
        self.seen = 0;
        self.status = 0;
        self.keep_alive = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `parts` one after another; returns the final feed and the bytes used of the last part.
    fn feed_all(r: &mut HttpReader, parts: &[&[u8]]) -> Result<Feed, OpError> {
        let mut last = Ok(Feed::More);
        for p in parts {
            last = r.feed(p, false);
            if !matches!(last, Ok(Feed::More)) {
                return last;
            }
        }
        last
    }

    #[test]
    fn content_length_split_anywhere() {
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        for cut in 1..resp.len() {
            let mut r = HttpReader::new(false, 1 << 20);
            let f = feed_all(&mut r, &[&resp[..cut], &resp[cut..]]).unwrap();
            assert_eq!(
                f,
                Feed::Done {
                    used: resp.len() - cut,
                    outcome: Ok(()),
                    keep_alive: true
                },
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n";
        for cut in 1..resp.len() {
            let mut r = HttpReader::new(false, 1 << 20);
            match feed_all(&mut r, &[&resp[..cut], &resp[cut..]]).unwrap() {
                Feed::Done {
                    used,
                    outcome,
                    keep_alive,
                } => {
                    assert_eq!(used, resp.len() - cut, "cut at {cut}");
                    assert!(outcome.is_ok() && keep_alive);
                }
                Feed::More => panic!("cut at {cut}: not done"),
            }
        }
    }

    #[test]
    fn non_2xx_is_application_and_close_is_honoured() {
        let mut r = HttpReader::new(false, 1 << 20);
        let f = r
            .feed(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                false,
            )
            .unwrap();
        let Feed::Done {
            outcome,
            keep_alive,
            ..
        } = f
        else {
            panic!()
        };
        assert_eq!(outcome.unwrap_err().class, ErrorClass::Application);
        assert!(!keep_alive);
    }

    #[test]
    fn until_close_and_http10() {
        let mut r = HttpReader::new(false, 1 << 20);
        assert_eq!(
            r.feed(b"HTTP/1.0 200 OK\r\n\r\nsome body", false).unwrap(),
            Feed::More
        );
        assert_eq!(
            r.feed(b"", true).unwrap(),
            Feed::Done {
                used: 0,
                outcome: Ok(()),
                keep_alive: false
            }
        );
    }

    #[test]
    fn interim_100_is_skipped_and_head_has_no_body() {
        let mut r = HttpReader::new(false, 1 << 20);
        let resp =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        assert!(matches!(
            r.feed(resp, false).unwrap(),
            Feed::Done {
                used: 70,
                outcome: Ok(()),
                ..
            }
        ));
        let mut r = HttpReader::new(true, 1 << 20);
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
        assert!(matches!(
            r.feed(resp, false).unwrap(),
            Feed::Done { used: 39, .. }
        ));
    }

    #[test]
    fn garbage_and_truncation_are_errors_not_hangs() {
        let mut r = HttpReader::new(false, 1 << 20);
        let e = r.feed(b"\x00\x01garbage\r\n\r\n", false).unwrap_err();
        assert_eq!(e.class, ErrorClass::Protocol);
        let mut r = HttpReader::new(false, 1 << 20);
        assert_eq!(
            r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", false)
                .unwrap(),
            Feed::More
        );
        assert_eq!(r.feed(b"", true).unwrap_err().class, ErrorClass::Reset);
        let mut r = HttpReader::new(false, 1 << 20);
        let e = r.feed(&vec![b'a'; MAX_HEAD + 10], false).unwrap_err();
        assert!(e.message.contains("64 KiB"));
        let mut r = HttpReader::new(false, 100);
        let e = r
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", false)
            .unwrap_err();
        assert!(e.message.contains("max_response"));
        let mut r = HttpReader::new(false, 1 << 20);
        let e = r
            .feed(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                false,
            )
            .unwrap_err();
        assert!(e.message.contains("chunk size"));
    }

    #[test]
    fn reader_is_reusable_across_responses() {
        let mut r = HttpReader::new(false, 1 << 20);
        for _ in 0..3 {
            r.reset();
            let f = r
                .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
                .unwrap();
            assert!(matches!(
                f,
                Feed::Done {
                    outcome: Ok(()),
                    ..
                }
            ));
        }
    }

    #[test]
    fn the_request_is_built_once_from_url_and_options() {
        let opts = BTreeMap::from([
            ("method".to_string(), "POST".to_string()),
            ("headers".to_string(), "X-A: 1\nX-B: two".to_string()),
            ("body".to_string(), "{}".to_string()),
        ]);
        let c = configure("//127.0.0.1:8080/v1/x?q=1", &opts).unwrap();
        let ep = c.endpoint().unwrap();
        let req = String::from_utf8(ep.protocol.request().to_vec()).unwrap();
        assert!(
            req.starts_with("POST /v1/x?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
            "{req}"
        );
        assert!(
            req.contains("X-A: 1\r\nX-B: two\r\nContent-Length: 2\r\n\r\n{}"),
            "{req}"
        );
        assert_eq!(ep.addr.port(), 8080);
        assert!(configure("//h/", &BTreeMap::from([("method".into(), "get".into())])).is_err());
        assert!(configure("127.0.0.1/", &BTreeMap::new()).is_err());
        let e = configure(
            "//h/",
            &BTreeMap::from([("headers".into(), "Host: x".into())]),
        )
        .err()
        .unwrap();
        assert!(e.message.contains("set by dyno"));
    }

    mod fuzz {
        use super::*;
        use crate::fuzz::{bytes_and_cuts, drive, mutated};
        use proptest::prelude::*;

        const VALID: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\nT: v\r\n\r\nHTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\nbye";

        fn check(data: &[u8], cuts: &[usize], eof: bool) {
            for head in [false, true] {
                let mut r = HttpReader::new(head, 4096);
                // The reader keeps only a head, of at most MAX_HEAD bytes.
                drive(&mut r, data, cuts, eof);
                assert!(r.head.len() <= MAX_HEAD);
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

        #[test]
        fn a_head_that_never_ends_is_refused_at_its_bound() {
            let mut r = HttpReader::new(false, 1 << 20);
            let line =
                b"X-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
            let mut fed = 0;
            let mut first = r.feed(b"HTTP/1.1 200 OK\r\n", false);
            while matches!(first, Ok(Feed::More)) && fed <= MAX_HEAD * 2 {
                first = r.feed(line, false);
                fed += line.len();
            }
            assert!(first.is_err(), "an endless head must be an error");
            assert!(r.head.len() <= MAX_HEAD);
        }
    }
}
