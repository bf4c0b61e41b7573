//! One HTTP/1.1 POST, blocking, bounded in time: what a push sends its batch with.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long connecting, sending and waiting for the answer may each take.
pub const TIMEOUT: Duration = Duration::from_secs(2);

/// POSTs `body` to `path` on `addr` (`HOST:PORT`) with `headers`; `Err` says why it was not
/// taken (no connection, no answer in time, a status other than 2xx with the answer's first
/// words).
pub fn post(addr: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<(), String> {
    // Each address the name has, in turn (`localhost` may be ::1 first, the server on
    // 127.0.0.1 only).
    let mut last = format!("{addr}: no address");
    let mut conn = None;
    for to in addr.to_socket_addrs().map_err(|e| format!("{addr}: {e}"))? {
        match TcpStream::connect_timeout(&to, TIMEOUT) {
            Ok(c) => {
                conn = Some(c);
                break;
            }
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    let mut s = conn.ok_or(last)?;
    let io = |e: std::io::Error| format!("{addr}: {e}");
    s.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
    s.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: dyno/{}\r\nContent-Length: {}\r\nConnection: close\r\n",
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).map_err(io)?;
    s.write_all(body).map_err(io)?;
    // The status line and the first words of the body, enough to say what went wrong.
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while answer.len() < 4096 {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(_) if !answer.is_empty() => break,
            Err(e) => return Err(io(e)),
        }
        if answer.windows(4).any(|w| w == b"\r\n\r\n") && status(&answer).is_some_and(ok) {
            return Ok(());
        }
    }
    match status(&answer) {
        Some(code) if ok(code) => Ok(()),
        Some(code) => {
            let text = String::from_utf8_lossy(&answer);
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b.trim());
            Err(format!(
                "{addr}{path}: HTTP {code}: {}",
                body.chars().take(200).collect::<String>()
            ))
        }
        None => Err(format!("{addr}{path}: no HTTP answer")),
    }
}

fn ok(code: u16) -> bool {
    (200..300).contains(&code)
}

/// The status code of an answer's first line.
fn status(answer: &[u8]) -> Option<u16> {
    let line = answer.split(|&b| b == b'\r').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split(' ');
    words.next().filter(|v| v.starts_with("HTTP/1."))?;
    words.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_read_from_the_first_line_only() {
        assert_eq!(status(b"HTTP/1.1 204 No Content\r\n\r\n"), Some(204));
        assert_eq!(status(b"HTTP/1.0 400 Bad\r\nX: 1"), Some(400));
        assert_eq!(status(b"SSH-2.0 x"), None);
        assert_eq!(status(b""), None);
        assert_eq!(status(b"HTTP/1.1 two"), None);
    }
}
