//! One connection of the rendezvous protocol: lines of text, each read bounded in time and in
//! length; and the lines that have arrived, taken without waiting (rank 0 reads its shards'
//! progress between starts this way, and keeps any other line for the read that expects it).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The longest line of the protocol.
const MAX_LINE: usize = 256;

pub(super) struct Line {
    pub(super) input: BufReader<TcpStream>,
    buf: String,
    /// A line begun but not ended when the arrived ones were taken.
    partial: Vec<u8>,
    /// Lines taken with the arrived ones that are not progress: for the next reads.
    queued: VecDeque<String>,
    /// The other side closed (seen while taking the arrived lines).
    closed: bool,
    /// A line over the limit arrived while taking the arrived lines: the connection is of no
    /// more use.
    broken: bool,
    /// A line was sent in part (a full socket): the next line begins by ending it.
    torn: bool,
}

fn too_long() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, "a line over 256 bytes")
}

impl Line {
    pub(super) fn new(s: TcpStream) -> std::io::Result<Line> {
        s.set_nodelay(true)?;
        Ok(Line {
            input: BufReader::new(s),
            buf: String::new(),
            partial: Vec::new(),
            queued: VecDeque::new(),
            closed: false,
            broken: false,
            torn: false,
        })
    }

    pub(super) fn send(&mut self, text: &str) -> std::io::Result<()> {
        let lead = if std::mem::take(&mut self.torn) {
            "\n"
        } else {
            ""
        };
        let s = self.input.get_mut();
        s.set_write_timeout(Some(Duration::from_secs(10)))?;
        s.write_all(format!("{lead}{text}\n").as_bytes())
    }

    /// Sends `text` only if the socket takes it now, never waiting (a line cut short is ended
    /// by the next one sent: the reader skips what it cannot read); whether it went whole.
    pub(super) fn offer(&mut self, text: &str) -> bool {
        let line = format!("{}{text}\n", if self.torn { "\n" } else { "" });
        let s = self.input.get_mut();
        if s.set_nonblocking(true).is_err() {
            return false;
        }
        let sent = s.write(line.as_bytes());
        let _ = s.set_nonblocking(false);
        match sent {
            Ok(n) if n == line.len() => {
                self.torn = false;
                true
            }
            Ok(n) => {
                self.torn |= n > 0;
                false
            }
            Err(_) => false,
        }
    }

    /// The next line, waiting at most until `deadline`.
    pub(super) fn read(&mut self, deadline: Instant) -> std::io::Result<&str> {
        if let Some(l) = self.queued.pop_front() {
            self.buf = l;
            return Ok(&self.buf);
        }
        if self.broken {
            return Err(too_long());
        }
        if self.closed {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.input.get_ref().set_read_timeout(Some(left))?;
        let mut bytes = std::mem::take(&mut self.partial);
        let room = (MAX_LINE + 1).saturating_sub(bytes.len()) as u64;
        let n = match Read::take(&mut self.input, room).read_until(b'\n', &mut bytes) {
            Ok(n) => n,
            Err(e) => {
                // What came is kept for the next read.
                self.partial = bytes;
                return Err(e);
            }
        };
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if bytes.last() != Some(&b'\n') {
            return Err(too_long());
        }
        self.buf = String::from_utf8_lossy(&bytes).trim_end().to_string();
        Ok(&self.buf)
    }

    /// The whole lines that have arrived, without waiting; whether the other side has closed.
    pub(super) fn arrived(&mut self) -> std::io::Result<(Vec<String>, bool)> {
        let mut lines = Vec::new();
        if self.closed {
            return Ok((lines, true));
        }
        self.input.get_ref().set_nonblocking(true)?;
        let result = loop {
            let chunk = match self.input.fill_buf() {
                Ok([]) => {
                    self.closed = true;
                    break Ok(());
                }
                Ok(b) => b.to_vec(),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(e),
            };
            self.input.consume(chunk.len());
            for b in chunk {
                if b == b'\n' {
                    let l = String::from_utf8_lossy(&self.partial)
                        .trim_end()
                        .to_string();
                    lines.push(l);
                    self.partial.clear();
                } else {
                    self.partial.push(b);
                    if self.partial.len() > MAX_LINE {
                        break;
                    }
                }
            }
            if self.partial.len() > MAX_LINE {
                self.broken = true;
                break Err(too_long());
            }
        };
        self.input.get_ref().set_nonblocking(false)?;
        result.map(|()| (lines, self.closed))
    }

    /// Keeps `line` for the next read.
    pub(super) fn keep(&mut self, line: String) {
        self.queued.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (Line, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (Line::new(l.accept().unwrap().0).unwrap(), other)
    }

    #[test]
    fn lines_taken_as_they_arrive_keep_a_half_line_for_the_next_read() {
        let (mut line, mut other) = pair();
        other.write_all(b"progress 1\nready 0\nrea").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let (lines, closed) = line.arrived().unwrap();
        assert_eq!(
            (lines, closed),
            (vec!["progress 1".into(), "ready 0".into()], false)
        );
        line.keep("ready 0".into());
        other.write_all(b"dy 1\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        assert_eq!(line.read(deadline).unwrap(), "ready 0");
        assert_eq!(line.read(deadline).unwrap(), "ready 1");
        drop(other);
        std::thread::sleep(Duration::from_millis(50));
        assert!(line.arrived().unwrap().1, "closed");
        assert!(line.read(deadline).is_err());
    }

    #[test]
    fn a_line_too_long_is_refused_either_way() {
        let (mut line, mut other) = pair();
        other.write_all(&[b'x'; 300]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(line.arrived().is_err());
        let (mut line, mut other) = pair();
        other.write_all(&[b'x'; 300]).unwrap();
        other.write_all(b"\n").unwrap();
        assert!(line.read(Instant::now() + Duration::from_secs(5)).is_err());
    }
}
