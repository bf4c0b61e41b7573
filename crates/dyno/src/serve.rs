//! `dyno serve`: a reference server on this machine, until Ctrl-C.

use crate::cli::{LinkArgs, ServeArgs};
use anyhow::{Context, Result, anyhow, bail};
use host::link::{Link, LinkSpec};
use host::reference::{Body, Fault, Kind, Server, Spec, Stall, TcpFraming};
use std::net::TcpListener;
use std::process::ExitCode;

fn parse_body(text: &str) -> Result<Body> {
    if text == "json" {
        return Ok(Body::Json);
    }
    let range = text.strip_prefix("sizes:").ok_or_else(|| {
        anyhow!("--body: {text:?} is neither json nor sizes:MIN..MAX (e.g. sizes:5..20000)")
    })?;
    let (a, b) = range.split_once("..").unwrap_or((range, range));
    let n = |t: &str| engine::units::parse_size(t).map_err(|e| anyhow!("--body: {e}"));
    Ok(Body::Sizes {
        min: n(a)? as usize,
        max: n(b)? as usize,
    })
}

fn parse_stall(text: &str) -> Result<Stall> {
    let (p, e) = text
        .split_once('/')
        .ok_or_else(|| anyhow!("--stall: write PAUSE/EVERY, e.g. 500ms/5s"))?;
    let d = |t: &str| engine::units::parse_duration(t).map_err(|e| anyhow!("--stall: {e}"));
    Ok(Stall {
        pause: d(p)?,
        every: d(e)?,
    })
}

fn parse_fault(text: &str) -> Result<Fault> {
    let (kind, n) = text
        .split_once(':')
        .ok_or_else(|| anyhow!("--fault: write reset:N or garbage:N"))?;
    let every: u64 = n
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| anyhow!("--fault: {n:?} is not a whole number above 0"))?;
    match kind {
        "reset" => Ok(Fault::Reset { every }),
        "garbage" => Ok(Fault::Garbage { every }),
        _ => bail!("--fault: {kind:?} is not reset or garbage"),
    }
}

/// The benchmark host, until Ctrl-C.
fn serve_host(a: &ServeArgs) -> Result<ExitCode> {
    let listen = a
        .listen
        .clone()
        .unwrap_or_else(|| "127.0.0.1:7000".to_string());
    let listener = TcpListener::bind(&listen).with_context(|| format!("--listen {listen}"))?;
    let disk = match &a.store {
        Some(path) => Some(std::sync::Arc::new(
            host::store::DiskStore::open(path)
                .with_context(|| format!("--store {}", path.display()))?,
        )),
        None => None,
    };
    let kept = disk
        .as_ref()
        .map_or_else(|| "objects in memory".to_string(), |d| d.describe());
    let server = host::store::StoreServer::start(
        listener,
        host::store::Options {
            token: a.token.clone(),
            disk,
            ..Default::default()
        },
    )
    .context("starting the benchmark host")?;
    println!(
        "dyno serve: benchmark host at dyno://{} ({kept}){}; Ctrl-C to stop",
        server.addr(),
        if a.token.is_some() {
            " (token required)"
        } else {
            ""
        }
    );
    ctrlc::set_handler(|| std::process::exit(0)).context("installing the Ctrl-C handler")?;
    server.wait();
    Ok(ExitCode::SUCCESS)
}

/// `dyno stats ADDR`: the host's server-side figures.
pub fn stats(addr: &str, token: Option<&str>) -> Result<ExitCode> {
    let a: std::net::SocketAddr = addr
        .parse()
        .map_err(|_| anyhow!("{addr:?} is not an address like 127.0.0.1:7000"))?;
    let stats = host::store::fetch_stats(a, token)
        .with_context(|| format!("asking {addr} for its statistics"))?;
    println!(
        "{:<8} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "op", "count", "p50", "p99", "p99.9", "max"
    );
    let us = report::units::latency;
    for s in &stats {
        let h = &s.latency;
        println!(
            "{:<8} {:>12} {:>12} {:>12} {:>12} {:>12}",
            s.op,
            s.count,
            us(h.value_at_quantile(0.5)),
            us(h.value_at_quantile(0.99)),
            us(h.value_at_quantile(0.999)),
            us(h.max())
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn serve(a: ServeArgs) -> Result<ExitCode> {
    if !a.http && !a.tcp {
        return serve_host(&a);
    }
    let kind = if a.tcp {
        let framing = match a.framing.as_str() {
            "length:4" => TcpFraming::Length4,
            "line" => TcpFraming::Line,
            "close" => TcpFraming::Close,
            "raw" => TcpFraming::Raw,
            other => bail!("--framing: {other:?} is not length:4, line, close or raw"),
        };
        Kind::Tcp {
            framing,
            on_connect: a.on_connect,
        }
    } else {
        if a.on_connect {
            bail!("--on-connect applies to --tcp");
        }
        Kind::Http
    };
    let spec = Spec {
        kind,
        body: parse_body(&a.body)?,
        stall: a.stall.as_deref().map(parse_stall).transpose()?,
        fault: a.fault.as_deref().map(parse_fault).transpose()?,
        seed: a.seed,
        service: (a.service_time.as_deref())
            .map(|t| engine::units::parse_duration(t).map_err(|e| anyhow!("--service-time: {e}")))
            .transpose()?,
    };
    let listen = a.listen.unwrap_or_else(|| {
        if a.tcp {
            "127.0.0.1:7070"
        } else {
            "127.0.0.1:8080"
        }
        .to_string()
    });
    let listener = TcpListener::bind(&listen).with_context(|| format!("--listen {listen}"))?;
    let server = Server::start(listener, spec.clone()).context("starting the server")?;
    let scheme = if a.tcp { "tcp" } else { "http" };
    println!(
        "dyno serve: {scheme}://{} ({:?}); Ctrl-C to stop",
        server.addr(),
        spec.body
    );
    ctrlc::set_handler(|| std::process::exit(0)).context("installing the Ctrl-C handler")?;
    server.wait();
    Ok(ExitCode::SUCCESS)
}

/// `dyno link`: proxies connections from `--listen` to `--to`, impaired, until Ctrl-C.
pub fn link(a: LinkArgs) -> Result<ExitCode> {
    let mut spec = match a.preset.as_deref() {
        None => LinkSpec {
            delay: std::time::Duration::ZERO,
            jitter: std::time::Duration::ZERO,
            rate_bits_per_s: None,
            seed: 1,
        },
        Some("lan") => LinkSpec::lan(),
        Some("wan") => LinkSpec::wan(),
        Some(other) => bail!("--preset: {other:?} is not lan or wan"),
    };
    let d =
        |flag: &str, t: &str| engine::units::parse_duration(t).map_err(|e| anyhow!("{flag}: {e}"));
    if let Some(t) = &a.delay {
        spec.delay = d("--delay", t)?;
    }
    if let Some(t) = &a.jitter {
        spec.jitter = d("--jitter", t)?;
    }
    if let Some(t) = &a.rate {
        let r = engine::units::parse_bitrate(t).map_err(|e| anyhow!("--rate: {e}"))?;
        if r == 0 {
            bail!("--rate: a link carries more than 0 bits per second");
        }
        spec.rate_bits_per_s = Some(r);
    }
    let to: std::net::SocketAddr =
        a.to.parse()
            .map_err(|_| anyhow!("--to: {:?} is not an address like 127.0.0.1:8080", a.to))?;
    let listener =
        TcpListener::bind(&a.listen).with_context(|| format!("--listen {}", a.listen))?;
    let link = Link::start(listener, to, spec).context("starting the link")?;
    println!(
        "dyno link: {} -> {to}, {:?} one way ± {:?}, {}; Ctrl-C to stop",
        link.addr(),
        spec.delay,
        spec.jitter,
        spec.rate_bits_per_s
            .map_or("no bandwidth cap".to_string(), |r| format!("{r} bit/s"))
    );
    ctrlc::set_handler(|| std::process::exit(0)).context("installing the Ctrl-C handler")?;
    link.wait();
    Ok(ExitCode::SUCCESS)
}
