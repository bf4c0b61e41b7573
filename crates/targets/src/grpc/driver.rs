//! The `grpc://` and `grpcs://` drivers: their options, the call's headers and message.

use super::{proto, reflect};
use crate::http::{self, Http2, h2};
use crate::options::Opts;
use engine::driver::{
    ConfigError, DriverError, DriverInfo, Endpoint, Family, OptionSpec, TargetConfig,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub static INFO: DriverInfo = DriverInfo {
    scheme: "grpc",
    query_options: false,
    summary: "gRPC unary calls over HTTP/2 in the clear, the messages described by a .proto file and given as JSON",
    forms: &[
        "grpc://127.0.0.1:50051/helloworld.Greeter/SayHello   (--proto greeter.proto --data '{\"name\":\"x\"}')",
    ],
    families: &[Family::Request],
    options: OPTIONS,
    clients: engine::driver::ClientModel::EventLoop,
};

/// `grpcs://`: the same over TLS (ALPN h2).
#[cfg(feature = "tls")]
pub static GRPCS_INFO: DriverInfo = DriverInfo {
    scheme: "grpcs",
    query_options: false,
    summary: "gRPC unary calls over TLS (HTTP/2 agreed on by ALPN)",
    forms: &["grpcs://example.test:443/package.Service/Method   (--proto FILE, --ca FILE)"],
    families: &[Family::Request],
    options: GRPCS_OPTIONS,
    clients: engine::driver::ClientModel::EventLoop,
};

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "proto",
        default: "",
        help: "the .proto file describing the service (ghz's --proto); without it, the server's reflection service is asked when the run starts",
    },
    OptionSpec {
        name: "import_path",
        default: "",
        help: "directories the .proto file's imports are looked up in, comma-separated (before the file's own)",
    },
    OptionSpec {
        name: "data",
        default: "",
        help: "the request message as JSON (protobuf's JSON mapping)",
    },
    OptionSpec {
        name: "data_file",
        default: "",
        help: "read the request message's JSON from this file",
    },
    OptionSpec {
        name: "headers",
        default: "",
        help: "the call's metadata, one `name: value` per line",
    },
    OptionSpec {
        name: "deadline",
        default: "",
        help: "sent as grpc-timeout: the server gives up (DEADLINE_EXCEEDED) after this long",
    },
    http::OPTIONS[5],
    http::STREAMS,
    http::WINDOW,
    http::CONNECTION_WINDOW,
];

#[cfg(feature = "tls")]
const GRPCS_OPTIONS: &[OptionSpec] = &[
    OPTIONS[0],
    OPTIONS[1],
    OPTIONS[2],
    OPTIONS[3],
    OPTIONS[4],
    OPTIONS[5],
    OPTIONS[6],
    OPTIONS[7],
    OPTIONS[8],
    OPTIONS[9],
    http::CA,
    http::INSECURE,
];

/// `grpc-timeout`'s value: at most eight digits and a unit, the finest that holds `d`.
fn timeout_header(d: Duration) -> String {
    let units = [
        (1u128, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let ns = d.as_nanos();
    for (per, unit) in units {
        let n = ns.div_ceil(per);
        if n < 100_000_000 {
            return format!("{n}{unit}");
        }
    }
    "99999999H".into()
}

/// The metadata dyno sends itself on every call, and why.
const RESERVED: &[&str] = &[
    "content-type",
    "te",
    "content-length",
    "host",
    "grpc-timeout",
    "user-agent",
];
const RESERVED_WHY: &str =
    "dyno sends them for every call (the deadline as grpc-timeout: --deadline)";

/// What every call of a target is: its method, and its request encoded. Made when the plan is
/// resolved from a `.proto` file, or at the run's start from the server's reflection service.
#[derive(Debug, Clone)]
struct Call {
    method: String,
    /// A server-streaming method: each message of a response is timed.
    streaming: bool,
    /// The request message, framed (a compression flag, its length, its bytes).
    body: Vec<u8>,
}

impl Call {
    fn new(
        pool: &prost_reflect::DescriptorPool,
        name: &str,
        json: &str,
    ) -> Result<Call, ConfigError> {
        let m = proto::method(pool, name)?;
        let message = proto::request(&m, json)?;
        let mut body = Vec::with_capacity(5 + message.len());
        body.push(0);
        body.extend_from_slice(&(message.len() as u32).to_be_bytes());
        body.extend_from_slice(&message);
        Ok(Call {
            method: m.full_name().to_string(),
            streaming: m.is_server_streaming(),
            body,
        })
    }
}

/// One method of a mix (`[[targets.NAME.requests]]`: its `path` the method, its `body` the
/// request's JSON, its `headers` metadata after the target's).
#[derive(Debug, Clone)]
struct Method {
    name: String,
    weight: u32,
    path: String,
    json: String,
    metadata: Vec<(String, String)>,
    call: Arc<OnceLock<Result<Call, String>>>,
}

#[derive(Debug, Clone)]
struct Config {
    authority: String,
    path: String,
    /// The request as JSON, for a call made from the server's reflection.
    json: String,
    call: Arc<OnceLock<Result<Call, String>>>,
    /// The `.proto` file's descriptors (none: the server's reflection, at the run's start).
    pool: Option<prost_reflect::DescriptorPool>,
    /// A mix of methods, called instead when there are any.
    mix: Vec<Method>,
    metadata: Vec<(String, String)>,
    deadline: Option<Duration>,
    max_response: u64,
    h2: http::H2Settings,
    resolved: BTreeMap<String, String>,
    #[cfg(feature = "tls")]
    tls: Option<(crate::tls::Client, crate::tls::Trust)>,
}

/// Validates the URL and options, reads the `.proto` file and encodes the request.
pub fn configure(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    configure_as(&INFO, rest, options).map(|c| Box::new(c) as Box<dyn TargetConfig>)
}

/// `grpcs://`: as [`configure`], and the TLS client agreeing on h2.
#[cfg(feature = "tls")]
pub fn configure_grpcs(
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Box<dyn TargetConfig>, ConfigError> {
    let mut c = configure_as(&GRPCS_INFO, rest, options)?;
    let o = Opts::new("grpcs", options, GRPCS_INFO.options)?;
    let trust = http::trust(&o)?;
    let client = crate::tls::Client::new(&http::host_of(&c.authority), &trust, &[b"h2"])?;
    c.tls = Some((client, trust));
    Ok(Box::new(c))
}

fn configure_as(
    info: &DriverInfo,
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<Config, ConfigError> {
    let o = Opts::new(info.scheme, options, info.options)?;
    let example = "grpc://127.0.0.1:50051/helloworld.Greeter/SayHello";
    let (authority, path) = http::split_url(rest, example)?;
    if authority
        .rsplit_once(':')
        .is_none_or(|(_, p)| p.parse::<u16>().is_err())
    {
        return Err(ConfigError::url(format!("{authority} has no port"))
            .hint(format!("gRPC has no default port: write e.g. {example}")));
    }
    let json = match (o.text("data"), o.text("data_file")) {
        (data, "") => data.to_string(),
        ("", f) => std::fs::read_to_string(f)
            .map_err(|e| ConfigError::option("data_file", format!("cannot read {f}: {e}")))?,
        _ => {
            return Err(
                ConfigError::option("data_file", "both data and data_file are set")
                    .hint("keep one of the two"),
            );
        }
    };
    // With a .proto file the call is made now; without, from the server's reflection when
    // the run starts (the server may be one the plan starts).
    let mut pool = None;
    let call = match o.text("proto") {
        "" if info.scheme != "grpc" => {
            return Err(ConfigError::option(
                "proto",
                "a grpcs:// target needs its .proto file (dyno asks reflection in the clear only)",
            )
            .hint("give it with --proto FILE (and --import-path DIR for its imports)"));
        }
        "" => OnceLock::new(),
        proto => {
            let imports: Vec<PathBuf> = (o.text("import_path").split(','))
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .collect();
            let p = proto::pool(std::path::Path::new(proto), &imports)?;
            let call = OnceLock::from(Ok(Call::new(&p, path.trim_start_matches('/'), &json)?));
            pool = Some(p);
            call
        }
    };
    let metadata = http::header_lines(&o, RESERVED, RESERVED_WHY)?;
    http::h2_headers_allowed(&metadata)?;
    let deadline = match o.text("deadline") {
        "" => None,
        _ => Some(o.duration("deadline")?).filter(|d| !d.is_zero()),
    };
    Ok(Config {
        authority,
        path,
        json,
        call: Arc::new(call),
        pool,
        mix: Vec::new(),
        metadata,
        deadline,
        max_response: o.size("max_response")?,
        h2: http::h2_settings(&o)?,
        resolved: o.resolved(),
        #[cfg(feature = "tls")]
        tls: None,
    })
}

impl Config {
    /// The call: made already, or now from the server's reflection service (asked once).
    fn call(&self) -> Result<&Call, DriverError> {
        self.made(&self.call, &self.path, &self.json)
    }

    /// The call to `path` with `json` in `cell`: made already, or now from the server's
    /// reflection service (asked once).
    fn made<'a>(
        &self,
        cell: &'a OnceLock<Result<Call, String>>,
        path: &str,
        json: &str,
    ) -> Result<&'a Call, DriverError> {
        let made = cell.get_or_init(|| {
            let name = path.trim_start_matches('/');
            let service = name.split_once('/').map_or(name, |(s, _)| s);
            let pool = reflect::pool(&self.authority, service, Duration::from_secs(5))?;
            Call::new(&pool, name, json).map_err(|e| match e.hint {
                Some(h) => format!("{} ({h})", e.message),
                None => e.message,
            })
        });
        made.as_ref().map_err(|e| DriverError::new(e.clone()))
    }

    /// A mix's method from the plan's keys (`path`, `body`, `headers`, `name`, `weight`).
    fn method(
        &self,
        given: &BTreeMap<String, String>,
        earlier: &[Method],
    ) -> Result<Method, ConfigError> {
        if let Some(k) = given
            .keys()
            .find(|k| !["name", "weight", "path", "body", "headers"].contains(&k.as_str()))
        {
            return Err(ConfigError::option(
                k,
                "a gRPC call of a mix takes name, weight, path (its method), body (its request as JSON) and headers (its metadata)",
            ));
        }
        let text = |k: &str| given.get(k).map_or("", String::as_str);
        let path = match text("path") {
            "" => self.path.clone(),
            p => format!("/{}", p.trim_start_matches('/')),
        };
        let json = match text("body") {
            "" => self.json.clone(),
            b => b.to_string(),
        };
        let mut metadata = self.metadata.clone();
        for line in text("headers")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            let h = http::header_line(line, RESERVED, RESERVED_WHY).map_err(|r| r.at("headers"))?;
            metadata.push(h);
        }
        http::h2_headers_allowed(&metadata)?;
        let weight = match text("weight") {
            "" => 1,
            w => http::weight(w)?,
        };
        let name = match text("name") {
            "" => path.trim_start_matches('/').to_string(),
            n => http::own_name(n, earlier.iter().map(|m| m.name.as_str()))?,
        };
        let call = match &self.pool {
            Some(pool) => OnceLock::from(Ok(Call::new(pool, path.trim_start_matches('/'), &json)?)),
            None => OnceLock::new(),
        };
        Ok(Method {
            name,
            weight,
            path,
            json,
            metadata,
            call: Arc::new(call),
        })
    }

    fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The call's header block, encoded once.
    fn block(&self) -> Vec<u8> {
        self.block_of(&self.path, &self.metadata)
    }

    /// The header block of a call to `path` with `metadata`.
    fn block_of(&self, path: &str, metadata: &[(String, String)]) -> Vec<u8> {
        let timeout = self.deadline.map(timeout_header);
        let fixed = [
            (":method", "POST"),
            (":scheme", if self.is_tls() { "https" } else { "http" }),
            (":authority", self.authority.as_str()),
            (":path", path),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ];
        let extra: Vec<(&str, &str)> = timeout
            .iter()
            .map(|t| ("grpc-timeout", t.as_str()))
            .collect();
        http::h2_block(&fixed, metadata, &extra)
    }
}

impl TargetConfig for Config {
    fn durability(&self) -> String {
        let calls = match self.call() {
            _ if !self.mix.is_empty() => format!(
                "gRPC, a mix of {} calls, {}",
                self.mix.len(),
                http::streams_label(self.h2.0)
            ),
            Ok(c) => {
                let kind = if c.streaming {
                    "server streaming"
                } else {
                    "unary"
                };
                format!(
                    "gRPC {} ({kind}), {}",
                    c.method,
                    http::streams_label(self.h2.0)
                )
            }
            Err(_) => format!("gRPC {} (not described: no reflection)", self.path),
        };
        #[cfg(feature = "tls")]
        if let Some((_, trust)) = &self.tls {
            return format!("{calls}, {}", trust.label());
        }
        calls
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.resolved.clone()
    }
    fn families(&self) -> &'static [Family] {
        INFO.families
    }
    fn with_requests(
        &mut self,
        requests: &[BTreeMap<String, String>],
    ) -> Result<(), (usize, ConfigError)> {
        let mut mix = Vec::with_capacity(requests.len());
        for (i, given) in requests.iter().enumerate() {
            mix.push(self.method(given, &mix).map_err(|e| (i, e))?);
        }
        let weights: Vec<u32> = mix.iter().map(|m| m.weight).collect();
        http::weighed(&weights).map_err(|e| (usize::MAX, e))?;
        if !mix.is_empty() {
            let each: Vec<String> = mix
                .iter()
                .map(|m| format!("{} ×{}", m.name, m.weight))
                .collect();
            self.resolved.insert("requests".into(), each.join("; "));
        }
        self.mix = mix;
        Ok(())
    }
    fn endpoint(&self) -> Result<Endpoint, DriverError> {
        let addr = crate::net::resolve(&self.authority, None)?;
        let (streams, stream_window, connection_window) = self.h2;
        let request = |block: Vec<u8>, call: &Call| h2::Request {
            block,
            body: call.body.clone(),
            max_response: self.max_response,
            stream_window,
            connection_window,
            grpc: true,
            streaming: call.streaming,
        };
        let requests: Vec<h2::Request> = match self.mix.is_empty() {
            true => vec![request(self.block(), self.call()?)],
            false => (self.mix.iter())
                .map(|m| {
                    Ok(request(
                        self.block_of(&m.path, &m.metadata),
                        self.made(&m.call, &m.path, &m.json)?,
                    ))
                })
                .collect::<Result<_, DriverError>>()?,
        };
        let mix = (!self.mix.is_empty()).then(|| {
            let named = self.mix.iter().map(|m| (m.name.clone(), m.weight));
            engine::load::Mix::new(named.collect()).expect("a mix is checked when read")
        });
        Ok(Endpoint {
            addr,
            protocol: Arc::new(Http2 {
                requests: requests.into(),
                mix,
                scenario: None,
                streams,
                #[cfg(feature = "tls")]
                tls: self.tls.as_ref().map(|t| t.0.clone()),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_are_written_in_eight_digits() {
        assert_eq!(timeout_header(Duration::from_millis(250)), "250000u");
        assert_eq!(timeout_header(Duration::from_secs(20)), "20000000u");
        assert_eq!(timeout_header(Duration::from_nanos(5)), "5n");
        assert_eq!(timeout_header(Duration::from_secs(400_000)), "400000S");
    }
}
