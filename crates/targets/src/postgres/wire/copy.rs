//! `COPY … FROM STDIN`: the protocol's copy-in exchange (a Query, the server's CopyInResponse,
//! the rows as CopyData, CopyDone, the command's end), as `pgbench -i` loads its tables.

use super::Wire;
use crate::postgres::message::{begin, encode_simple, end, server_err, tag_rows};
use engine::driver::{ErrorClass, OpError};

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
                // CopyDone, in the same write as the last rows.
                self.out.extend_from_slice(&[b'c', 0, 0, 0, 4]);
            }
            self.send("copy")?;
            if !more {
                break;
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
}
