//! Asking a host about itself on a connection of its own: its statistics (`dyno stats`) and
//! what it is (`INFO`).

use super::*;

/// One operation's server-side figures since the host started.
#[derive(Debug, Clone)]
pub struct OpStat {
    pub op: String,
    pub count: u64,
    pub latency: results::Histogram,
}

/// Parses a `STATS` reply.
pub fn parse_stats(text: &str) -> io::Result<Vec<OpStat>> {
    text.lines()
        .map(|l| {
            let bad = || {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a bad STATS line: {l:?}"),
                )
            };
            let mut f = l.split_whitespace();
            let (Some(op), Some(count), Some(hist)) = (f.next(), f.next(), f.next()) else {
                return Err(bad());
            };
            Ok(OpStat {
                op: op.to_string(),
                count: count.parse().map_err(|_| bad())?,
                latency: results::histogram::decode(hist).map_err(|_| bad())?,
            })
        })
        .collect()
}

/// Asks a host for its statistics (what `dyno stats` prints, and what runs record).
pub fn fetch_stats(addr: SocketAddr, token: Option<&str>) -> io::Result<Vec<OpStat>> {
    parse_stats(&fetch_stats_text(addr, token)?)
}

pub(super) fn fetch_stats_text(addr: SocketAddr, token: Option<&str>) -> io::Result<String> {
    ask_text(addr, token, kind::STATS)
}

/// Asks a host what it is (`INFO`): `durability` and `version`.
pub fn fetch_info(
    addr: SocketAddr,
    token: Option<&str>,
) -> io::Result<std::collections::BTreeMap<String, String>> {
    Ok(ask_text(addr, token, kind::INFO)?
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// One request answered with `TEXT`, on a connection of its own. A host that answers the token
/// with `ERR` refused it: that is `PermissionDenied`, so a caller can say so.
pub(super) fn ask_text(addr: SocketAddr, token: Option<&str>, k: u8) -> io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut body = Vec::new();
    if let Some(t) = token {
        write_frame(&mut s, kind::HELLO, &[t.as_bytes()])?;
        expect(&mut s, &mut body, kind::OK).map_err(|e| match e.kind() {
            // `expect` makes an `ERR` answer an `Other` error; to `HELLO` it means the token.
            io::ErrorKind::Other => io::Error::new(io::ErrorKind::PermissionDenied, e),
            _ => e,
        })?;
    }
    write_frame(&mut s, k, &[])?;
    expect(&mut s, &mut body, kind::TEXT)?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}
