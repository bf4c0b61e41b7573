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
use engine::driver::{ConfigError, DriverError, DriverInfo, Endpoint, Family, TargetConfig};

use std::collections::BTreeMap;
#[cfg(feature = "tls")]
use std::path::PathBuf;
use std::sync::Arc;

mod check;
pub mod h2;
mod mix;
#[cfg(feature = "grpc")]
pub(crate) use mix::{own_name, weighed, weight};
mod options;
pub(crate) use options::*;
mod protocol;
use protocol::Http;
pub(crate) use protocol::Http2;
mod reader;
mod request;
mod template;
pub use reader::{HttpReader, MAX_HEAD};
#[cfg(feature = "grpc")]
pub(crate) use request::{h2_block, header_line, header_lines};

use mix::Named;
use request::Req;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "http",
    query_options: false,
    summary: "HTTP/1.1 request/response load (keep-alive or a connection per request)",
    forms: &["http://127.0.0.1:8080/path?query"],
    families: &[Family::Request],
    options: OPTIONS,
    clients: engine::driver::ClientModel::EventLoop,
};

/// `h2c://`: HTTP/2 in the clear, by prior knowledge (RFC 9113 §3.3), several requests in
/// flight on each connection.
pub static H2C_INFO: DriverInfo = DriverInfo {
    scheme: "h2c",
    query_options: false,
    summary: "HTTP/2 in the clear (prior knowledge): many requests in flight per connection, each on a stream",
    forms: &["h2c://127.0.0.1:8080/path?query   (--streams 10)"],
    families: &[Family::Request],
    options: H2C_OPTIONS,
    clients: engine::driver::ClientModel::EventLoop,
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
    clients: engine::driver::ClientModel::EventLoop,
};

#[derive(Debug, Clone)]
struct Config {
    authority: String,
    /// The request the URL and the options say; alone unless there is a mix.
    req: Req,
    /// The mix's requests (`requests_file`, or the plan's), sent instead when there are any.
    mix: Vec<Named>,
    /// Whether and from what the requests' `{{…}}` fields are filled in.
    templates: template::Settings,
    /// A scenario's steps as written (the mix's request names), and its think time (ns).
    scenario: String,
    think: (u64, u64),
    keepalive: bool,
    max_response: u64,
    resolved: BTreeMap<String, String>,
    #[cfg(feature = "tls")]
    tls: Option<(crate::tls::Client, crate::tls::Trust)>,
    /// `version=auto`: the version is the server's pick by ALPN.
    #[cfg(feature = "tls")]
    alpn: Option<crate::tls::Alpn>,
    /// HTTP/2: streams per connection and the receive windows.
    h2: Option<H2Settings>,
}

/// Validates the URL and options; touches nothing.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let mut c = configure_as(&INFO, rest, options)?;
    c.check_requests(false).map_err(|r| c.in_file(r))?;
    Ok(Box::new(c))
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
    let trust = trust(&o)?;
    let host = host_of(&c.authority);
    let version = o.choice("version", &["auto", "1.1", "2"])?;
    if version != "1.1" {
        h2_settings(&o)?;
    }
    // auto offers HTTP/2 only where it can serve: kept-alive connections, no connection headers.
    let auto = version == "auto" && c.keepalive && h2_options(&mut c.clone(), &o).is_ok();
    if version == "2" || auto {
        h2_options(&mut c, &o)?;
    } else if o.text("streams") != "1" {
        return Err(ConfigError::option(
            "streams",
            "streams are HTTP/2's, and this target speaks HTTP/1.1 (version=1.1, or keepalive=false)",
        )
        .hint("leave version to auto or set it to 2 (--http-version 2), or leave streams out"));
    }
    let alpn: &[&[u8]] = if version == "2" { &[b"h2"] } else { &[] };
    c.tls = Some((crate::tls::Client::new(&host, &trust, alpn)?, trust.clone()));
    if auto {
        c.alpn = Some(crate::tls::Alpn::new(&host, &trust)?);
    }
    c.check_requests(false).map_err(|r| c.in_file(r))?;
    Ok(Box::new(c))
}

/// The certificate check the `ca` and `insecure` options ask for.
#[cfg(feature = "tls")]
pub(crate) fn trust(o: &Opts) -> Result<crate::tls::Trust, ConfigError> {
    Ok(match (o.text("ca"), o.bool("insecure")?) {
        ("", false) => crate::tls::Trust::Roots,
        (ca, false) => crate::tls::Trust::Ca(PathBuf::from(ca)),
        ("", true) => crate::tls::Trust::Insecure,
        (_, true) => {
            return Err(
                ConfigError::option("insecure", "both ca and insecure=true are set")
                    .hint("keep ca to check the certificate, or insecure=true not to"),
            );
        }
    })
}

/// The host of `HOST[:PORT]`, the name a certificate is checked against.
pub(crate) fn host_of(authority: &str) -> String {
    match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() && !h.is_empty() => h.to_string(),
        _ => authority.to_string(),
    }
}

/// `//AUTHORITY[/PATH][?QUERY]` split into its authority and its path (`/` when none), both
/// checked.
pub(crate) fn split_url(rest: &str, example: &str) -> Result<(String, String), ConfigError> {
    let after = rest.strip_prefix("//").ok_or_else(|| {
        ConfigError::url("the URL needs //HOST").hint(format!("write e.g. {example}"))
    })?;
    let (authority, path) = match after.find(['/', '?']) {
        Some(i) if after.as_bytes()[i] == b'/' => (&after[..i], after[i..].to_string()),
        Some(i) => (&after[..i], format!("/{}", &after[i..])),
        None => (after, "/".to_string()),
    };
    if authority.is_empty() {
        return Err(ConfigError::url("the URL has no host").hint(format!("write e.g. {example}")));
    }
    if request::outside_fields(&path).contains(['\r', '\n', ' ']) {
        return Err(ConfigError::url("the path contains spaces or line breaks")
            .hint("percent-encode them (%20, %0A)"));
    }
    Ok((authority.to_string(), path))
}

fn configure_as(
    info: &DriverInfo,
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Config, ConfigError> {
    let o = Opts::new(info.scheme, options, info.options)?;
    let (authority, path) = split_url(rest, "http://127.0.0.1:8080/")?;
    let req = Req::from_opts(&o, path)?;
    let mut mix = match o.text("requests_file") {
        "" => Vec::new(),
        f => mix::from_file(std::path::Path::new(f), info.scheme, &authority)?,
    };
    // The target's headers, checks and captures hold for each request of the file, first.
    for n in &mut mix {
        n.req.headers.splice(0..0, req.headers.iter().cloned());
        n.req.checks.splice(0..0, req.checks.iter().cloned());
        n.req.captures.splice(0..0, req.captures.iter().cloned());
        n.req.checks_fail = req.checks_fail;
    }
    // Listed only when not their default: a run without them compares with runs from before
    // these options were.
    let mut resolved = o.resolved();
    let quiet = [
        "requests_file",
        "templates",
        "data_rows",
        "data_order",
        "checks",
        "checks_fail",
        "capture",
        "scenario",
        "think",
    ];
    resolved.retain(|k, v| {
        !quiet.contains(&k.as_str()) || (info.options.iter()).any(|s| s.name == k && s.default != v)
    });
    Ok(Config {
        templates: template::Settings::from_opts(&o)?,
        scenario: o.text("scenario").to_string(),
        think: think(o.text("think"))?,
        authority,
        req,
        mix,
        keepalive: info.scheme == "h2c" || o.bool("keepalive")?,
        max_response: o.size("max_response")?,
        resolved,
        #[cfg(feature = "tls")]
        tls: None,
        #[cfg(feature = "tls")]
        alpn: None,
        h2: None,
    })
}

/// A think time: a duration, or a range `A..B` drawn uniformly (ns).
fn think(t: &str) -> Result<(u64, u64), ConfigError> {
    let ns = |d: &str| {
        engine::units::parse_duration(d.trim())
            .map(|d| d.as_nanos() as u64)
            .map_err(|e| ConfigError::option("think", e.to_string()))
    };
    let (lo, hi) = match t.split_once("..") {
        Some((a, b)) => (ns(a)?, ns(b)?),
        None => (ns(t)?, ns(t)?),
    };
    if lo > hi {
        return Err(ConfigError::option(
            "think",
            format!("{t:?}: the range ends below its start"),
        ));
    }
    Ok((lo, hi))
}

/// A refusal as the plan's mix places it: its request's index, or `usize::MAX` for the
/// target's own options.
fn placed((i, e): template::Refusal) -> (usize, ConfigError) {
    (i.unwrap_or(usize::MAX), e)
}

/// How many streams a connection carries, as the column header says it.
pub(crate) fn streams_label(n: usize) -> String {
    match n {
        1 => "1 stream per connection".into(),
        n => format!("{n} streams per connection"),
    }
}

/// HTTP/2's streams per connection, and the receive windows of each stream and the connection.
pub(crate) type H2Settings = (usize, u32, u32);

/// HTTP/2's own options: streams per connection, and the stream's and connection's windows.
pub(crate) fn h2_settings(o: &Opts) -> Result<H2Settings, ConfigError> {
    let streams = o.text("streams");
    let streams = (streams.parse::<usize>().ok())
        .filter(|n| (1..=10_000).contains(n))
        .ok_or_else(|| {
            ConfigError::option(
                "streams",
                format!("{streams:?} is not a count of 1 to 10000"),
            )
            .hint("write e.g. --streams 10")
        })?;
    let window = |name: &str| -> Result<u32, ConfigError> {
        let v = o.size(name)?;
        (1..=h2::frame::MAX_WINDOW as u64)
            .contains(&v)
            .then_some(v as u32)
            .ok_or_else(|| {
                ConfigError::option(name, format!("{v} bytes: a window is 1 byte to 2GiB - 1"))
            })
    };
    Ok((streams, window("window")?, window("connection_window")?))
}

/// HTTP/2's own options read into `c`, and the headers HTTP/2 forbids (RFC 9113 §8.2.2)
/// refused.
fn h2_options(c: &mut Config, o: &Opts) -> Result<(), ConfigError> {
    c.h2 = Some(h2_settings(o)?);
    c.keepalive = true;
    h2_headers_allowed(&c.req.headers)?;
    (c.mix.iter()).try_for_each(|n| h2_headers_allowed(&n.req.headers))
}

/// Refuses the connection headers HTTP/2 forbids (RFC 9113 §8.2.2) among the plan's.
pub(crate) fn h2_headers_allowed(headers: &[(String, String)]) -> Result<(), ConfigError> {
    let forbidden = [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ];
    match (headers.iter()).find(|(name, _)| forbidden.contains(&name.to_ascii_lowercase().as_str()))
    {
        Some((name, _)) => Err(ConfigError::option(
            "headers",
            format!("{name} is a connection header, which HTTP/2 forbids"),
        )),
        None => Ok(()),
    }
}

/// `h2c://`: as [`configure`], and HTTP/2's own options.
pub fn configure_h2c(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let mut c = configure_as(&H2C_INFO, rest, options)?;
    let o = Opts::new("h2c", options, H2C_INFO.options)?;
    h2_options(&mut c, &o)?;
    c.check_requests(false).map_err(|r| c.in_file(r))?;
    Ok(Box::new(c))
}

impl TargetConfig for Config {
    fn durability(&self) -> String {
        // What the connections speak, as far as known without asking the server.
        #[cfg(feature = "tls")]
        let h2 = match self.alpn.as_ref().map(|a| a.found()) {
            Some(Some(true)) | None => self.h2,
            Some(_) => None,
        };
        #[cfg(not(feature = "tls"))]
        let h2 = self.h2;
        let h2 = h2.map(|(streams, _, _)| format!("HTTP/2, {}", streams_label(streams)));
        let reuse = match (&h2, self.keepalive) {
            (Some(h2), _) => h2.as_str(),
            (None, true) => "keep-alive",
            (None, false) => "connection per request",
        };
        #[cfg(feature = "tls")]
        if let Some((_, trust)) = &self.tls {
            let by = match self.alpn.as_ref().map(|a| a.found()) {
                Some(Some(true)) => " (h2 by ALPN)",
                Some(Some(false)) => " (HTTP/1.1 by ALPN)",
                Some(None) => " (or HTTP/2, by ALPN: not asked yet)",
                None => "",
            };
            return format!("{reuse}{by}, {}", trust.label());
        }
        reuse.into()
    }
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn with_requests(
        &mut self,
        requests: &[BTreeMap<String, String>],
    ) -> Result<(), (usize, ConfigError)> {
        if requests.is_empty() {
            return self.check_requests(true).map_err(placed);
        }
        if !self.mix.is_empty() {
            let e = ConfigError::option(
                "requests_file",
                "a requests file and the plan's requests are both given",
            )
            .hint("keep one of the two");
            return Err((0, e));
        }
        let mix = mix::from_plan(&self.resolved, &self.req.path, requests)?;
        if self.h2.is_some() {
            for (i, n) in mix.iter().enumerate() {
                h2_headers_allowed(&n.req.headers).map_err(|e| (i, e))?;
            }
        }
        self.mix = mix;
        self.check_requests(true).map_err(placed)
    }
    fn options(&self) -> BTreeMap<String, String> {
        let mut all = self.resolved.clone();
        if !self.mix.is_empty() {
            // The mix as run: its requests' names and weights (a changed mix is another setting).
            let each: Vec<String> = (self.mix.iter())
                .map(|n| format!("{} ×{}", n.name, n.weight))
                .collect();
            all.insert("requests".into(), each.join("; "));
        }
        all
    }
    fn endpoint(&self) -> Result<Endpoint, DriverError> {
        #[cfg(feature = "tls")]
        let port = if self.tls.is_some() { 443 } else { 80 };
        #[cfg(not(feature = "tls"))]
        let port = 80;
        let addr = crate::net::resolve(&self.authority, Some(port))?;
        let (h2, tls) = self.chosen()?;
        #[cfg(not(feature = "tls"))]
        let _ = tls;
        let reqs = self.reqs();
        let bodies = (reqs.iter().map(|r| r.body())).collect::<Result<Vec<_>, _>>()?;
        let with: Vec<(&Req, &[u8])> = reqs
            .iter()
            .copied()
            .zip(bodies.iter().map(Vec::as_slice))
            .collect();
        let compiled = check::compile(&reqs).map_err(|(_, e)| DriverError::new(e.message))?;
        let (checks, captured) = compiled.map_or((None, Vec::new()), |(c, n)| (Some(c), n));
        let rendered = template::for_run(
            &self.templates,
            &with,
            &captured,
            &self.authority,
            self.keepalive,
        )?;
        if rendered.is_some() && h2.is_some() {
            return Err(DriverError::new(TEMPLATES_ON_H2));
        }
        let scenario =
            (self.scenario()).map_err(|e| DriverError::new(format!("scenario: {}", e.message)))?;
        let mix = (!self.mix.is_empty()).then(|| {
            let named = self.mix.iter().map(|n| (n.name.clone(), n.weight));
            engine::load::Mix::new(named.collect()).expect("a mix is checked when read")
        });
        if let Some((streams, window, connection_window)) = h2 {
            let requests = (reqs.iter().zip(bodies)).map(|(r, body)| h2::Request {
                block: r.h2_block(&self.authority, self.is_tls(), &body),
                body,
                max_response: self.max_response,
                stream_window: window,
                connection_window,
                grpc: false,
                streaming: false,
            });
            return Ok(Endpoint {
                addr,
                protocol: Arc::new(Http2 {
                    requests: requests.collect(),
                    mix,
                    scenario,
                    streams,
                    #[cfg(feature = "tls")]
                    tls,
                }),
            });
        }
        let requests = (reqs.iter().zip(&bodies))
            .map(|(r, body)| r.h1(&self.authority, self.keepalive, body))
            .collect();
        Ok(Endpoint {
            addr,
            protocol: Arc::new(Http {
                requests,
                rendered,
                check_names: (checks.iter().flat_map(|c| c.iter()))
                    .map(check::Checks::names)
                    .collect(),
                checks,
                captures: captured.len(),
                heads: reqs.iter().map(|r| r.method == "HEAD").collect(),
                mix,
                scenario,
                keepalive: self.keepalive,
                max_response: self.max_response,
                #[cfg(feature = "tls")]
                tls,
            }),
        })
    }
}

/// The TLS client a run's connections use (none in the clear).
#[cfg(feature = "tls")]
type TlsClient = Option<crate::tls::Client>;
#[cfg(not(feature = "tls"))]
type TlsClient = Option<()>;

impl Config {
    /// What the connections speak: HTTP/2's settings when they speak it, and their TLS client.
    /// With `version=auto` the server's pick by ALPN decides (asked once); a handshake that
    /// fails leaves HTTP/1.1, whose connections then fail the same way, each counted.
    fn chosen(&self) -> Result<(Option<H2Settings>, TlsClient), DriverError> {
        #[cfg(feature = "tls")]
        if let Some(alpn) = &self.alpn {
            let addr = crate::net::resolve(&self.authority, Some(443))?;
            let streams = self.h2.is_some_and(|(streams, _, _)| streams > 1);
            return match alpn.h2(addr) {
                Ok(true) => Ok((self.h2, Some(alpn.h2.clone()))),
                Ok(false) if streams => Err(DriverError::new(format!(
                    "{} picked HTTP/1.1 by ALPN, and streams (--streams) are HTTP/2's: \
                     leave streams out, or ask a server that speaks HTTP/2",
                    self.authority
                ))),
                Err(why) if streams => Err(DriverError::new(format!(
                    "{}: no HTTP version agreed on by ALPN ({why}), and streams are HTTP/2's",
                    self.authority
                ))),
                // A failed handshake: HTTP/1.1, whose connections then fail the same way,
                // each counted.
                _ => Ok((None, Some(alpn.h1.clone()))),
            };
        }
        #[cfg(feature = "tls")]
        return Ok((self.h2, self.tls.as_ref().map(|t| t.0.clone())));
        #[cfg(not(feature = "tls"))]
        Ok((self.h2, None))
    }

    /// The scenario the options `scenario` and `think` say, by the mix's request names.
    fn scenario(&self) -> Result<Option<engine::load::Scenario>, ConfigError> {
        let steps: Vec<&str> = (self.scenario.split(',').map(str::trim))
            .filter(|s| !s.is_empty())
            .collect();
        if steps.is_empty() {
            return Ok(None);
        }
        if self.mix.is_empty() {
            return Err(ConfigError::option("scenario", "a scenario's steps are the requests of a mix, and this target has none")
                .hint("name the requests in [[targets.NAME.requests]] or a requests file (--requests-file)"));
        }
        let names: Vec<&str> = self.mix.iter().map(|n| n.name.as_str()).collect();
        let steps = (steps.iter())
            .map(|s| {
                names.iter().position(|n| n == s).ok_or_else(|| {
                    let like = engine::suggest::did_you_mean(s, names.iter().copied());
                    ConfigError::option(
                        "scenario",
                        format!(
                            "no request is named {s:?}; {like}the mix's: {}",
                            names.join(", ")
                        ),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(engine::load::Scenario {
            steps,
            think_ns: self.think,
        }))
    }

    /// The requests it sends: its one, or its mix's.
    fn reqs(&self) -> Vec<&Req> {
        match self.mix.is_empty() {
            true => vec![&self.req],
            false => self.mix.iter().map(|n| &n.req).collect(),
        }
    }

    /// Refuses templates that cannot be rendered (a field unknown, a data column missing, a
    /// data file unreadable) and checks that cannot be made, before anything runs. Both are
    /// HTTP/1.1's for now, so a target that would speak HTTP/2 only by ALPN's choice speaks
    /// HTTP/1.1 instead. A body file's fields are read, and checked, when the run starts.
    /// A refusal's place: a request of the mix (its index), or the target's options.
    fn check_requests(&mut self, mix_final: bool) -> Result<(), template::Refusal> {
        let mixed = !self.mix.is_empty();
        let reqs = self.reqs();
        let inline: Vec<(&Req, &[u8])> = (reqs.iter())
            .map(|r| (*r, r.body.as_deref().unwrap_or_default()))
            .collect();
        let checked = check::compile(&reqs).map_err(|(i, e)| (mixed.then_some(i), e))?;
        let captured = checked.as_ref().map_or(&[][..], |(_, n)| n.as_slice());
        let compiled = template::compile(
            &self.templates,
            &inline,
            captured,
            &self.authority,
            self.keepalive,
        )
        .map_err(|(i, e)| (i.filter(|_| mixed), e))?;
        let (templated, checked) = (compiled.is_some(), checked.is_some());
        // The plan's mix comes after the URL's options: a scenario is checked once it is known.
        if mix_final || mixed {
            self.scenario().map_err(|e| (None, e))?;
        }
        if !(templated || checked) || self.h2.is_none() {
            return Ok(());
        }
        #[cfg(feature = "tls")]
        if self.alpn.take().is_some() {
            self.h2 = None;
            return Ok(());
        }
        Err((
            None,
            match templated {
                true => ConfigError::option("templates", TEMPLATES_ON_H2).hint(
                    "speak HTTP/1.1 (http://, or --http-version 1.1), or set templates=false",
                ),
                false => ConfigError::option("checks", CHECKS_ON_H2)
                    .hint("speak HTTP/1.1 (http://, or --http-version 1.1)"),
            },
        ))
    }

    /// A refusal found before the plan's mix: in a request of the requests file (named in the
    /// message), or in the target's options.
    fn in_file(&self, (i, e): template::Refusal) -> ConfigError {
        match i.and_then(|i| self.mix.get(i)) {
            Some(n) => ConfigError {
                message: format!("request {:?} of the requests file: {}", n.name, e.message),
                ..e
            },
            None => e,
        }
    }

    fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }
}

/// Why templates and checks are refused on HTTP/2.
const CHECKS_ON_H2: &str =
    "checks are made on HTTP/1.1 responses only, and this target speaks HTTP/2";
const TEMPLATES_ON_H2: &str =
    "template fields ({{…}}) are filled in on HTTP/1.1 only, and this target speaks HTTP/2";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_built_once_from_url_and_options() {
        let opts = BTreeMap::from([
            ("method".to_string(), "POST".to_string()),
            ("headers".to_string(), "X-A: 1\nX-B: two".to_string()),
            ("body".to_string(), "{}".to_string()),
        ]);
        let c = configure("//127.0.0.1:8080/v1/x?q=1", &opts).unwrap();
        let ep = c.endpoint().unwrap();
        let req = String::from_utf8(ep.protocol.request(0).to_vec()).unwrap();
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
}
