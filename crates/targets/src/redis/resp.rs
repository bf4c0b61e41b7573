//! RESP on one connection: commands written, replies read back with bounds on every length.

use super::*;

/// A reply.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reply {
    Status,
    Error(String),
    Int(i64),
    /// A bulk string, read into the caller's buffer; `false` for nil.
    Bulk(bool),
    /// An array of `n` elements (their replies follow), or nil (`-1`).
    Array(i64),
}

pub(super) struct Conn {
    /// The connection, read through a buffer; a command is written on it whole
    /// (`input.get_mut()`).
    pub(super) input: BufReader<Stream>,
    pub(super) frame: Vec<u8>,
    pub(super) line: Vec<u8>,
    step: crate::net::Step,
}

pub(super) fn io_err(context: &'static str) -> impl Fn(std::io::Error) -> OpError {
    move |e| OpError::io(context, &e)
}

pub(super) fn protocol(msg: &'static str) -> OpError {
    OpError::new(ErrorClass::Protocol, msg)
}

/// Reads one RESP reply from `input`: a line of at most 64 KiB, and for a bulk string its bytes
/// into `bulk`. Memory grows with the bytes that arrive, never with the length a reply claims
/// (at most [`MAX_BULK`]), so a hostile length costs nothing until its bytes come.
pub(super) fn read_reply(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    bulk: &mut Vec<u8>,
) -> Result<Reply, OpError> {
    line.clear();
    let n = input
        .take(64 << 10)
        .read_until(b'\n', line)
        .map_err(io_err("receive"))?;
    if n == 0 {
        return Err(OpError::new(
            ErrorClass::Reset,
            "the server closed the connection",
        ));
    }
    if n < 3 || !line.ends_with(b"\r\n") {
        return Err(protocol("a reply line not ended by CRLF"));
    }
    let body = &line[1..n - 2];
    let int = || -> Result<i64, OpError> {
        std::str::from_utf8(body)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| protocol("a reply length that is not a number"))
    };
    match line[0] {
        b'+' => Ok(Reply::Status),
        b'-' => Ok(Reply::Error(String::from_utf8_lossy(body).into_owned())),
        b':' => Ok(Reply::Int(int()?)),
        b'*' => Ok(Reply::Array(int()?)),
        b'$' => {
            let len = int()?;
            if len < 0 {
                return Ok(Reply::Bulk(false));
            }
            let len = len as usize;
            if len > MAX_BULK {
                return Err(protocol("a bulk reply larger than 512 MiB"));
            }
            bulk.clear();
            let want = len as u64 + 2;
            let got = input
                .take(want)
                .read_to_end(bulk)
                .map_err(io_err("receive"))?;
            if got as u64 != want {
                return Err(OpError::new(
                    ErrorClass::Reset,
                    "the server closed the connection inside a bulk reply",
                ));
            }
            if &bulk[len..] != b"\r\n" {
                return Err(protocol("a bulk reply not ended by CRLF"));
            }
            bulk.truncate(len);
            Ok(Reply::Bulk(true))
        }
        _ => Err(protocol("not a RESP reply")),
    }
}

impl Conn {
    pub(super) fn open(addr: SocketAddr, password: Option<&str>) -> Result<Conn, OpError> {
        let s = Stream::open(&addr, TIMEOUT, TIMEOUT).map_err(io_err("connect"))?;
        let mut c = Conn {
            input: BufReader::with_capacity(READ_BUFFER, s),
            frame: Vec::with_capacity(512),
            line: Vec::with_capacity(64),
            step: crate::net::Step::default(),
        };
        if let Some(p) = password {
            c.command(&[b"AUTH", p.as_bytes()])?;
            c.expect_ok(&mut Vec::new())?;
        }
        Ok(c)
    }

    /// Sends one command as a RESP array of bulk strings, in one write (with whatever
    /// [`Conn::push`] held before it).
    pub(super) fn command(&mut self, args: &[&[u8]]) -> Result<(), OpError> {
        self.push(args);
        self.send()
    }

    /// Writes one command into the frame without sending it: it goes with the next
    /// [`Conn::send`].
    pub(super) fn push(&mut self, args: &[&[u8]]) {
        write!(self.frame, "*{}\r\n", args.len()).expect("writing to a Vec");
        for a in args {
            write!(self.frame, "${}\r\n", a.len()).expect("writing to a Vec");
            self.frame.extend_from_slice(a);
            self.frame.extend_from_slice(b"\r\n");
        }
    }

    /// Sends the commands the frame holds, in one write.
    pub(super) fn send(&mut self) -> Result<(), OpError> {
        if let Err(e) = self.step.send("redis", "send") {
            self.frame.clear();
            return Err(e);
        }
        let sent = (self.input.get_mut())
            .write_all(&self.frame)
            .map_err(io_err("send"));
        self.frame.clear();
        self.step.watch(sent)
    }

    /// Reads one reply; a bulk string's bytes go into `bulk`.
    pub(super) fn reply(&mut self, bulk: &mut Vec<u8>) -> Result<Reply, OpError> {
        let r = read_reply(&mut self.input, &mut self.line, bulk);
        self.step.watch(r)
    }

    /// `e`, a reply of the wrong shape, leaves the connection out of step: its elements, or
    /// the replies after it, are not what the next read expects.
    pub(super) fn off_step(&mut self, e: OpError) -> OpError {
        self.step.lose();
        e
    }

    pub(super) fn expect_ok(&mut self, scratch: &mut Vec<u8>) -> Result<(), OpError> {
        match self.reply(scratch)? {
            Reply::Status => Ok(()),
            Reply::Error(e) => Err(OpError::new(ErrorClass::Application, format!("redis: {e}"))),
            _ => Err(protocol("an unexpected reply (wanted a status)")),
        }
    }
}
