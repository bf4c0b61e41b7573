//! `COPY … FROM STDIN`: the protocol's copy-in exchange (a Query, the server's CopyInResponse,
//! the rows as CopyData, CopyDone, the command's end), as `pgbench -i` loads its tables.

use super::Wire;
use crate::postgres::message::{begin, encode_simple, end, server_err, tag_rows};
use engine::driver::{ErrorClass, OpError};
use std::os::fd::AsRawFd;

impl Wire {
    /// Runs `sql`, a `COPY … FROM STDIN` in the text format, with the rows `fill` writes: each
    /// call appends whole lines (one CopyData message) and says whether more follow. The rows
    /// the server copied; its error, once the exchange has ended.
    pub fn copy_in(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> bool,
    ) -> Result<u64, OpError> {
        self.in_step();
        self.out.clear();
        encode_simple(&mut self.out, &[sql], &[]);
        self.send("copy")?;
        self.read_message("copy")?;
        match self.kind {
            b'G' => {}
            kind => {
                let refused = match kind {
                    b'E' => server_err("copy", &self.body),
                    _ => OpError::new(
                        ErrorClass::Application,
                        format!("postgres: copy: `{sql}` is no COPY … FROM STDIN"),
                    ),
                };
                if kind != b'Z' {
                    self.until_ready("copy", |_| Ok(()))?;
                }
                return Err(refused);
            }
        }
        loop {
            self.out.clear();
            let at = begin(&mut self.out, b'd');
            let more = fill(&mut self.out);
            end(&mut self.out, at);
            if !more {
                self.out.extend_from_slice(&COPY_DONE);
            }
            self.send("copy")?;
            if !more {
                break;
            }
            // A server that refused the rows says so at once and drops the rest: stop there
            // rather than make and send the whole table first.
            if let Some(refused) = self.refused_while_copying()? {
                self.out.clear();
                self.out.extend_from_slice(&COPY_DONE);
                self.send("copy")?;
                self.until_ready("copy", |_| Ok(()))?;
                return Err(refused);
            }
        }
        let mut rows = 0;
        self.until_ready("copy", |w| match w.kind {
            b'C' => {
                rows = tag_rows(&w.body);
                Ok(())
            }
            b'E' => Err(server_err("copy", &w.body)),
            _ => Ok(()),
        })?;
        Ok(rows)
    }

    /// The error the server sent while the rows were going in, if it sent one; notices are
    /// passed over. Reads only what has arrived (a message begun is read to its end).
    fn refused_while_copying(&mut self) -> Result<Option<OpError>, OpError> {
        let fd = self.input.get_ref().as_raw_fd();
        while !self.input.buffer().is_empty() || arrived(fd) {
            self.read_frame("copy").inspect_err(|_| self.step.lose())?;
            if self.kind == b'E' {
                return Ok(Some(server_err("copy", &self.body)));
            }
        }
        Ok(None)
    }
}

/// CopyDone.
const COPY_DONE: [u8; 5] = [b'c', 0, 0, 0, 4];

/// Whether anything (bytes, or the end) has arrived on `fd`, without waiting.
fn arrived(fd: std::os::fd::RawFd) -> bool {
    let mut b = 0u8;
    // SAFETY: a one-byte buffer that lives across the call; MSG_PEEK leaves the byte queued.
    let n = unsafe {
        libc::recv(
            fd,
            (&mut b as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n >= 0
}
