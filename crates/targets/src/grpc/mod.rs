//! `grpc://HOST:PORT/package.Service/Method` and `grpcs://…` — gRPC unary calls as load, on the
//! load engine's HTTP/2 (`crate::http::h2`), many calls in flight per connection.
//!
//! The method and its request message are described by a `.proto` file read when the plan is
//! resolved (`proto`, `import_path`), or, without one, by the server's reflection service when
//! the run starts; the request is given as JSON (`data`, `data_file`) and encoded once: every
//! call sends the same bytes. A call succeeds when its `grpc-status` is 0;
//! any other status fails it, counted in the class nearest its meaning (DEADLINE_EXCEEDED a
//! `timeout`, NOT_FOUND `not_found`, RESOURCE_EXHAUSTED `full`, UNAVAILABLE `refused`,
//! DATA_LOSS `corrupt`, the rest `application`) with the status's name and message kept as the
//! class's example. `deadline` is sent as `grpc-timeout`; `headers` are the call's metadata.
//!
//! Always built (etcd's driver uses them): gRPC's status codes, named and classed, here (etcd's
//! JSON gateway reports the same codes); `conn` a connection for calls one after another on a
//! blocking socket. With the `grpc` feature: `proto` reads `.proto` files, `reflect` asks a
//! server's reflection service instead, `driver` is the drivers.

mod conn;
#[cfg(feature = "grpc")]
mod driver;
#[cfg(feature = "grpc")]
mod proto;
#[cfg(feature = "grpc")]
mod reflect;

pub use conn::{Conn, connect};
#[cfg(all(feature = "grpc", feature = "tls"))]
pub use driver::{GRPCS_INFO, configure_grpcs};
#[cfg(feature = "grpc")]
pub use driver::{INFO, configure};

use engine::driver::{ErrorClass, OpError};

/// gRPC's status codes by number (grpc/doc/statuscodes.md).
const STATUS: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The error class nearest a status's meaning.
pub fn class(code: usize) -> ErrorClass {
    match STATUS.get(code).copied().unwrap_or("") {
        "DEADLINE_EXCEEDED" => ErrorClass::Timeout,
        "NOT_FOUND" => ErrorClass::NotFound,
        "RESOURCE_EXHAUSTED" => ErrorClass::Full,
        "UNAVAILABLE" => ErrorClass::Refused,
        "DATA_LOSS" => ErrorClass::Corrupt,
        _ => ErrorClass::Application,
    }
}

/// A gRPC response's verdict: its HTTP `status`, its `grpc-status` (`u32::MAX` when not a
/// number) and `grpc-message` (percent-encoded, as sent).
pub fn outcome(status: u16, grpc: Option<u32>, message: &[u8]) -> Result<(), OpError> {
    if status != 200 {
        return Err(OpError::new(
            ErrorClass::Application,
            format!("gRPC: HTTP status {status}, not 200"),
        ));
    }
    let code = match grpc {
        Some(0) => return Ok(()),
        None => {
            return Err(OpError::new(
                ErrorClass::Protocol,
                "gRPC: a response without grpc-status",
            ));
        }
        Some(c) if c as usize >= STATUS.len() => {
            return Err(OpError::new(
                ErrorClass::Protocol,
                "gRPC: a grpc-status that is not a status code",
            ));
        }
        Some(c) => c as usize,
    };
    let class = class(code);
    let text = String::from_utf8_lossy(&percent_decoded(message)).into_owned();
    let text = if text.is_empty() {
        format!("gRPC {} ({code})", STATUS[code])
    } else {
        format!("gRPC {} ({code}): {text}", STATUS[code])
    };
    Err(OpError::new(class, text))
}

/// `grpc-message`'s percent-encoding undone (a `%` not followed by two hex digits kept).
fn percent_decoded(v: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        match (
            v[i],
            v.get(i + 1).copied().and_then(hex),
            v.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push(h << 4 | l);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// Where a response is in its length-prefixed messages (gRPC's framing: a flag byte, a 4-byte
/// length, the message), for server streaming: each message is told as it completes.
#[derive(Debug, Clone, Default)]
pub struct Framing {
    head: [u8; 5],
    have: usize,
    left: u64,
}

impl Framing {
    /// Takes the next bytes of the response; `message` is called for each message they end.
    pub fn take(&mut self, mut data: &[u8], mut message: impl FnMut()) {
        while !data.is_empty() {
            if self.have < 5 {
                let n = (5 - self.have).min(data.len());
                self.head[self.have..self.have + n].copy_from_slice(&data[..n]);
                self.have += n;
                data = &data[n..];
                if self.have == 5 {
                    let [_, a, b, c, d] = self.head;
                    self.left = u64::from(u32::from_be_bytes([a, b, c, d]));
                }
            } else {
                let n = data
                    .len()
                    .min(usize::try_from(self.left).unwrap_or(usize::MAX));
                self.left -= n as u64;
                data = &data[n..];
            }
            if self.have == 5 && self.left == 0 {
                message();
                self.have = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_named_and_classed() {
        assert_eq!(outcome(200, Some(0), b""), Ok(()));
        let e = outcome(200, Some(14), b"no%20leader").unwrap_err();
        assert_eq!(e.class, ErrorClass::Refused);
        assert_eq!(e.message, "gRPC UNAVAILABLE (14): no leader");
        let e = outcome(200, Some(4), b"").unwrap_err();
        assert_eq!(
            (e.class, e.message.as_ref()),
            (ErrorClass::Timeout, "gRPC DEADLINE_EXCEEDED (4)")
        );
        assert_eq!(
            outcome(200, None, b"").unwrap_err().class,
            ErrorClass::Protocol
        );
        assert_eq!(
            outcome(200, Some(17), b"").unwrap_err().class,
            ErrorClass::Protocol
        );
        assert_eq!(
            outcome(200, Some(u32::MAX), b"").unwrap_err().class,
            ErrorClass::Protocol
        );
        assert_eq!(
            outcome(503, Some(0), b"").unwrap_err().class,
            ErrorClass::Application
        );
        assert_eq!(percent_decoded(b"100%25 %zz%4"), b"100% %zz%4");
    }

    #[test]
    fn messages_are_told_however_the_bytes_are_cut() {
        let mut stream = Vec::new();
        for body in [&b"abc"[..], b"", b"0123456789"] {
            stream.push(0);
            stream.extend_from_slice(&(body.len() as u32).to_be_bytes());
            stream.extend_from_slice(body);
        }
        for cut in 1..stream.len() {
            let mut f = Framing::default();
            let mut told = 0;
            for piece in stream.chunks(cut) {
                f.take(piece, || told += 1);
            }
            assert_eq!(told, 3, "pieces of {cut}");
        }
    }
}
