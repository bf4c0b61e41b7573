//! HTTP/1.1 to etcd's JSON gateway on one connection: requests written, responses (length or
//! chunked) read with bounds, the answers' JSON, the gateway's errors classified.

use super::*;

pub(super) fn io_err(context: &'static str) -> impl Fn(std::io::Error) -> OpError {
    move |e| OpError::io(context, &e)
}

pub(super) fn protocol(msg: impl Into<std::borrow::Cow<'static, str>>) -> OpError {
    OpError::new(ErrorClass::Protocol, msg)
}

/// One keep-alive HTTP/1.1 connection to one member.
pub(super) struct Conn {
    /// The connection, read through a buffer; a request is written on it whole
    /// (`input.get_mut()`).
    pub(super) input: BufReader<Stream>,
    pub(super) host: String,
    pub(super) request: Vec<u8>,
    pub(super) line: Vec<u8>,
    step: crate::net::Step,
}

/// What the gateway answered: its status and body.
pub(super) struct Answer<'a> {
    pub(super) status: u16,
    pub(super) body: &'a [u8],
}

impl Conn {
    pub(super) fn open(endpoint: &str, timeout: Duration) -> Result<Conn, OpError> {
        let s = crate::grpc::connect(endpoint, timeout)?;
        Ok(Conn {
            input: BufReader::with_capacity(16 << 10, s),
            host: endpoint.to_string(),
            request: Vec::with_capacity(512),
            line: Vec::with_capacity(128),
            step: crate::net::Step::default(),
        })
    }

    /// Whether requests may still be sent: not once a reply failed on the connection.
    pub(super) fn usable(&self) -> bool {
        self.step.kept()
    }

    /// Sends `method path` with `body` (JSON) and reads the answer's body into `into`.
    pub(super) fn call<'a>(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        into: &'a mut Vec<u8>,
    ) -> Result<Answer<'a>, OpError> {
        self.request.clear();
        write!(
            self.request,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.host,
            body.len()
        )
        .expect("writing to a Vec");
        self.request.extend_from_slice(body);
        self.step.send("etcd", "send")?;
        let sent = (self.input.get_mut())
            .write_all(&self.request)
            .map_err(io_err("send"));
        self.step.watch(sent)?;
        let status = read_response(&mut self.input, &mut self.line, into);
        let status = self.step.watch(status)?;
        Ok(Answer { status, body: into })
    }
}

/// Reads one HTTP/1.1 response: its status, and its body (Content-Length or chunked) into
/// `body`. Lines are bounded; memory grows with the bytes that arrive, not the lengths claimed.
pub(super) fn read_response(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    body: &mut Vec<u8>,
) -> Result<u16, OpError> {
    let read_line = |line: &mut Vec<u8>, input: &mut dyn BufRead| -> Result<(), OpError> {
        line.clear();
        let n = input
            .take(MAX_LINE)
            .read_until(b'\n', line)
            .map_err(io_err("receive"))?;
        if n == 0 {
            return Err(OpError::new(
                ErrorClass::Reset,
                "the server closed the connection",
            ));
        }
        if !line.ends_with(b"\r\n") {
            return Err(protocol("an HTTP line not ended by CRLF"));
        }
        line.truncate(n - 2);
        Ok(())
    };
    read_line(line, input)?;
    let status = (line
        .strip_prefix(b"HTTP/1.1 ")
        .or(line.strip_prefix(b"HTTP/1.0 ")))
    .and_then(|r| r.get(..3))
    .and_then(|c| std::str::from_utf8(c).ok())
    .and_then(|c| c.parse::<u16>().ok())
    .ok_or_else(|| protocol("not an HTTP status line"))?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    for _ in 0..200 {
        read_line(line, input)?;
        if line.is_empty() {
            body.clear();
            return match (chunked, length) {
                (true, _) => read_chunked(input, line, body).map(|()| status),
                (false, Some(n)) => {
                    let got = input
                        .take(n as u64)
                        .read_to_end(body)
                        .map_err(io_err("receive"))?;
                    if got != n {
                        return Err(OpError::new(
                            ErrorClass::Reset,
                            "the server closed the connection inside a response",
                        ));
                    }
                    Ok(status)
                }
                (false, None) => Err(protocol("a response with neither a length nor chunks")),
            };
        }
        let text = String::from_utf8_lossy(line);
        let Some((name, value)) = text.split_once(':') else {
            return Err(protocol("a header line without a colon"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| protocol("a Content-Length that is not a number"))?;
            if n > MAX_BODY {
                return Err(protocol("a response body over 64 MiB"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        }
    }
    Err(protocol("a response with over 200 header lines"))
}

pub(super) fn read_chunked(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    body: &mut Vec<u8>,
) -> Result<(), OpError> {
    loop {
        line.clear();
        input
            .take(MAX_LINE)
            .read_until(b'\n', line)
            .map_err(io_err("receive"))?;
        let size = std::str::from_utf8(line)
            .ok()
            .map(|s| s.trim().split(';').next().unwrap_or(""))
            .and_then(|s| usize::from_str_radix(s, 16).ok())
            .ok_or_else(|| protocol("a chunk size that is not hexadecimal"))?;
        if body.len() + size > MAX_BODY {
            return Err(protocol("a response body over 64 MiB"));
        }
        let got = input
            .take(size as u64 + 2)
            .read_to_end(body)
            .map_err(io_err("receive"))?;
        if got != size + 2 || !body.ends_with(b"\r\n") {
            return Err(OpError::new(
                ErrorClass::Reset,
                "the server closed the connection inside a chunk",
            ));
        }
        body.truncate(body.len() - 2);
        if size == 0 {
            return Ok(());
        }
    }
}

#[derive(serde::Deserialize)]
pub(super) struct RangeReply {
    #[serde(default)]
    pub(super) kvs: Vec<KeyValue>,
}

#[derive(serde::Deserialize)]
pub(super) struct KeyValue {
    #[serde(default)]
    pub(super) value: String,
    /// A 64-bit number, as text.
    #[serde(default)]
    pub(super) mod_revision: String,
}

/// A delete's answer: how many keys went (a 64-bit number, as text; absent for none).
#[derive(serde::Deserialize)]
pub(super) struct DeleteReply {
    #[serde(default)]
    pub(super) deleted: Option<String>,
}

/// A transaction's answer: whether its guard held, and its operations' answers.
#[derive(serde::Deserialize)]
pub(super) struct TxnReply {
    #[serde(default)]
    pub(super) succeeded: bool,
    #[serde(default)]
    pub(super) responses: Vec<TxnOp>,
}

/// One of a transaction's answers; dyno reads ranges.
#[derive(serde::Deserialize)]
pub(super) struct TxnOp {
    #[serde(default)]
    pub(super) response_range: Option<RangeReply>,
}

#[derive(serde::Deserialize)]
pub(super) struct MemberList {
    #[serde(default)]
    pub(super) members: Vec<serde_json::Value>,
}

/// A member's status: its own ID and the leader's, as the gateway writes 64-bit numbers (text).
#[derive(serde::Deserialize)]
pub(super) struct Status {
    #[serde(default)]
    header: StatusHeader,
    #[serde(default)]
    leader: String,
    #[serde(default)]
    pub(super) version: String,
}

#[derive(serde::Deserialize, Default)]
struct StatusHeader {
    #[serde(default)]
    member_id: String,
}

impl Status {
    /// This member leads (a leader of "0" or none: an election is under way).
    pub(super) fn leads(&self) -> bool {
        !self.leader.is_empty() && self.leader != "0" && self.leader == self.header.member_id
    }
}

/// The gateway's error body: `{"error": …, "code": N, "message": …}`.
#[derive(serde::Deserialize)]
pub(super) struct GatewayError {
    #[serde(default)]
    pub(super) code: i64,
    #[serde(default)]
    pub(super) message: String,
}

/// An answer that is not 200, as an operation error. gRPC's code says what kind
/// ([`crate::grpc::class`]): 4 (deadline exceeded) a timeout, 14 (unavailable: no leader,
/// stopping) a refusal.
pub(super) fn gateway_error(a: &Answer) -> OpError {
    let e: GatewayError = serde_json::from_slice(a.body).unwrap_or(GatewayError {
        code: -1,
        message: String::from_utf8_lossy(&a.body[..a.body.len().min(200)]).into_owned(),
    });
    let class = usize::try_from(e.code).map_or(ErrorClass::Application, crate::grpc::class);
    OpError::new(
        class,
        format!("etcd: HTTP {}: {} (code {})", a.status, e.message, e.code),
    )
}
