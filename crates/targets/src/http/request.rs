//! One HTTP request of a target as written — method, path and query, headers, body — checked
//! once, and its bytes for HTTP/1.1 and its header block for HTTP/2, each built once per run.

use super::h2;
use crate::options::Opts;
use engine::driver::{ConfigError, DriverError};
use std::path::PathBuf;

/// A request as written: what the target's options (or one request of its mix) say.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Req {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub body_file: Option<PathBuf>,
    /// Checks on its responses, one per line as written, and whether a failed one fails it.
    pub checks: Vec<String>,
    pub checks_fail: bool,
    /// Values its responses give the client's next requests (`NAME = json /POINTER`…).
    pub captures: Vec<String>,
}

/// The headers dyno sets itself on HTTP/1.1, and why.
const RESERVED: (&[&str], &str) = (
    &["content-length", "host"],
    "dyno sends Host from the URL and Content-Length from the body",
);

impl Req {
    /// The request `o`'s options `method`, `headers`, `body` and `body_file` say, to `path`.
    pub(crate) fn from_opts(o: &Opts, path: String) -> Result<Req, ConfigError> {
        let method = method(o.text("method"))?;
        let headers = header_lines(o, RESERVED.0, RESERVED.1)?;
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
        let lines = |name: &str| -> Vec<String> {
            (o.text(name).lines().map(str::trim))
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        };
        let (checks, captures) = (lines("checks"), lines("capture"));
        Ok(Req {
            method,
            path,
            headers,
            body,
            body_file,
            checks,
            checks_fail: o.bool("checks_fail")?,
            captures,
        })
    }

    /// The body's bytes (a body file read now).
    pub(crate) fn body(&self) -> Result<Vec<u8>, DriverError> {
        crate::net::bytes(&self.body, &self.body_file, "body_file")
    }

    /// Whether the request says how long its body is (any body, or a method that has one).
    fn sized(&self, body: &[u8]) -> bool {
        !body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH")
    }

    /// The request's HTTP/1.1 bytes: request line, `Host`, `User-Agent`, the plan's headers,
    /// `Content-Length` when it has a body, `Connection: close` when not kept alive, the body.
    pub(crate) fn h1(&self, authority: &str, keepalive: bool, body: &[u8]) -> Vec<u8> {
        let mut req = format!(
            "{} {} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: dyno/{}\r\n",
            self.method,
            self.path,
            env!("CARGO_PKG_VERSION")
        );
        for (k, v) in &self.headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if self.sized(body) {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        if !keepalive {
            req.push_str("Connection: close\r\n");
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        bytes
    }

    /// The request's HTTP/2 header block (the pseudo-headers, `user-agent`, the plan's headers
    /// in lower case, `content-length` for a body), encoded once.
    pub(crate) fn h2_block(&self, authority: &str, tls: bool, body: &[u8]) -> Vec<u8> {
        let length = body.len().to_string();
        let fixed = [
            (":method", self.method.as_str()),
            (":scheme", if tls { "https" } else { "http" }),
            (":authority", authority),
            (":path", self.path.as_str()),
        ];
        let extra: &[(&str, &str)] = if self.sized(body) {
            &[("content-length", &length)]
        } else {
            &[]
        };
        h2_block(&fixed, &self.headers, extra)
    }
}

/// A method as HTTP spells it (upper-case letters).
pub(crate) fn method(m: &str) -> Result<String, ConfigError> {
    if m.is_empty() || !m.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(
            ConfigError::option("method", format!("{m:?} is not an HTTP method"))
                .hint("write e.g. GET, POST or PUT"),
        );
    }
    Ok(m.to_string())
}

/// A path (and query) as sent: it starts with `/` and holds no space or line break.
pub(crate) fn path(p: &str, option: &str) -> Result<String, ConfigError> {
    let err = |why: &str, hint: &str| {
        Err(ConfigError::option(option, format!("{p:?} {why}")).hint(hint.to_string()))
    };
    if !p.starts_with('/') {
        return err(
            "is not a path",
            "write it from the root, e.g. /items/1?full=yes",
        );
    }
    if outside_fields(p).contains(['\r', '\n', ' ']) {
        return err(
            "contains spaces or line breaks",
            "percent-encode them (%20, %0A)",
        );
    }
    Ok(p.to_string())
}

/// `text` without its template fields (`{{uniform 1 9}}` holds spaces a path may not).
pub(crate) fn outside_fields(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        match rest[open..].find("}}") {
            Some(close) => rest = &rest[open + close + 2..],
            None => {
                rest = &rest[open..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The `headers` option: one `Name: value` per line; `reserved` names (lower case) are dyno's.
pub(crate) fn header_lines(
    o: &Opts,
    reserved: &[&str],
    why: &str,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut headers = Vec::new();
    for line in (o.text("headers").lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        headers.push(header_line(line, reserved, why).map_err(|m| m.at("headers"))?);
    }
    Ok(headers)
}

/// Why a header line was refused, and what to do; placed by the caller.
pub(crate) struct Refused {
    pub message: String,
    pub hint: Option<String>,
}

impl Refused {
    /// As an option's error.
    pub(crate) fn at(self, option: &str) -> ConfigError {
        let e = ConfigError::option(option, self.message);
        match self.hint {
            Some(h) => e.hint(h),
            None => e,
        }
    }
}

/// One `Name: value` line, its name checked.
pub(crate) fn header_line(
    line: &str,
    reserved: &[&str],
    why: &str,
) -> Result<(String, String), Refused> {
    let refused = |message: String, hint: Option<&str>| Refused {
        message,
        hint: hint.map(str::to_string),
    };
    let (name, value) = line
        .split_once(':')
        .ok_or_else(|| refused(format!("{line:?} is not `Name: value`"), None))?;
    let name = name.trim();
    if name.is_empty()
        || !(name.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(refused(format!("{name:?} is not a header name"), None));
    }
    if reserved.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(refused(format!("{name} is set by dyno"), Some(why)));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// The headers dyno sets on HTTP/1.1 requests, for a requests file's lines.
pub(crate) fn reserved() -> (&'static [&'static str], &'static str) {
    RESERVED
}

/// An HTTP/2 request's header block, encoded: `fixed` (the pseudo-headers first), dyno's
/// `user-agent`, the plan's `headers` in lower case, then `extra`.
pub(crate) fn h2_block(
    fixed: &[(&str, &str)],
    headers: &[(String, String)],
    extra: &[(&str, &str)],
) -> Vec<u8> {
    let agent = format!("dyno/{}", env!("CARGO_PKG_VERSION"));
    let names: Vec<String> = headers
        .iter()
        .map(|(k, _)| k.to_ascii_lowercase())
        .collect();
    let mut all = fixed.to_vec();
    all.push(("user-agent", &agent));
    all.extend((names.iter().map(String::as_str)).zip(headers.iter().map(|(_, v)| v.as_str())));
    all.extend_from_slice(extra);
    h2::hpack::encode(&all)
}
