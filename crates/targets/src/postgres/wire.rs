//! A PostgreSQL connection, written on the protocol itself (version 3.0, the extended query
//! protocol) over an [`engine::fiber::Stream`]: a statement is one write (Bind, Execute, Sync)
//! and the replies are read from a buffer, a message at a time, into one body buffer reused for
//! every message; a row is handed over as where its values lie in that buffer. The sql family's
//! statements are in text, as pgbench sends and reads them; the kv family's in binary (see
//! [`Arg`]).
//!
//! Why not tokio-postgres, as both families used before: its client and connection halves talk
//! through a channel, each reply is split into reference-counted buffers and each row into a
//! `Row` before dyno sees it. On pgbench's `select-only` that was a quarter of dyno's own
//! (user) CPU per transaction; on the kv family's reads, more than half of dyno's own code (21%
//! of a read's CPU samples before, 10% after) — `docs/src/measurements/sql.md` and
//! `docs/src/measurements/generator.md` have the figures before and after. Logging
//! in uses `postgres-protocol`'s messages and its SCRAM-SHA-256 (the crate tokio-postgres is
//! built on).
//!
//! Bounds: a reply has [`TIMEOUT`]; one that does not come in time cancels the statement on the
//! server (a CancelRequest with the session's BackendKeyData, as psql's and pgbench's cancel
//! sends it) rather than every statement carrying a server-side `statement_timeout`: arming
//! that timer for each statement cost PostgreSQL 5% of pgbench's `tpcb-like` rate here
//! (`docs/src/measurements/sql.md`), and neither pgbench nor sysbench sets one.

use super::message::{
    Arg, Malformed, SYNC, begin, cstr, encode_bind_execute, encode_execute, encode_simple,
    encode_unnamed, end, malformed, parse_data_row, parse_row_description, server_err, tag_rows,
};
use super::{TIMEOUT, keepalive};
use bytes::BytesMut;
use engine::driver::{ErrorClass, NO_STATEMENT, OpError, SqlParam};
use engine::fiber::Stream;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::frontend;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// The longest message dyno reads (a longer length is taken for a broken stream).
const MAX_MESSAGE: usize = 1 << 30;

/// Who logs in, where.
pub struct Login<'a> {
    pub user: &'a str,
    pub password: Option<&'a [u8]>,
    pub database: Option<&'a str>,
}

/// A statement prepared on the server: its name there and its result columns' names.
#[derive(Debug)]
pub struct Prepared {
    name: String,
    pub columns: Vec<String>,
}

pub struct Wire {
    input: BufReader<Stream>,
    /// The type and body of the last message read.
    kind: u8,
    body: Vec<u8>,
    /// What is being sent (reused).
    out: Vec<u8>,
    /// Where the values of the row being read lie (reused).
    at: Vec<Option<Range<usize>>>,
    prepared: usize,
    /// Whether the last ReadyForQuery said the session is in no transaction (`I`, not `T` in
    /// one or `E` in a failed one).
    idle: bool,
    /// Where the server listens and the key it gave this session (BackendKeyData: process ID
    /// and secret), to cancel a statement whose reply did not come in time.
    cancel: Option<(SocketAddr, i32, i32)>,
    /// A pipeline's statements queued, per segment (a segment ends with a Sync); empty outside
    /// a pipeline.
    segments: Vec<usize>,
    /// Whether the connection is still in step with the server (see [`Wire::send`]).
    step: crate::net::Step,
    /// How long a reply may take, all told ([`TIMEOUT`]; shorter in tests).
    timeout: Duration,
}

/// How long the cancel request's own connection may take: it is sent after a reply already
/// took [`TIMEOUT`], so it must not add as much again.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

fn read_err(context: &str, e: &std::io::Error) -> OpError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return OpError::new(
            ErrorClass::Reset,
            format!("postgres: {context}: the server closed the connection"),
        );
    }
    OpError::io(&format!("postgres: {context}: receive"), e)
}

impl Wire {
    /// Connects to `addr` and logs in (trust, password, MD5 or SCRAM-SHA-256).
    pub fn open(addr: SocketAddr, login: &Login<'_>) -> Result<Wire, OpError> {
        Wire::open_within(addr, login, TIMEOUT)
    }

    /// [`Wire::open`] with replies given `timeout` (shorter in tests).
    fn open_within(
        addr: SocketAddr,
        login: &Login<'_>,
        timeout: Duration,
    ) -> Result<Wire, OpError> {
        let io = |e: std::io::Error| OpError::io("postgres: connect", &e);
        let s = Stream::open(&addr, TIMEOUT, timeout).map_err(io)?;
        keepalive(s.as_raw_fd());
        let mut w = Wire {
            input: BufReader::with_capacity(16 * 1024, s),
            kind: 0,
            body: Vec::with_capacity(1024),
            out: Vec::with_capacity(1024),
            at: Vec::new(),
            prepared: 0,
            idle: true,
            cancel: None,
            segments: Vec::new(),
            step: crate::net::Step::default(),
            timeout,
        };
        let mut params = vec![
            ("user", login.user),
            ("client_encoding", "UTF8"),
            ("application_name", "dyno"),
        ];
        params.extend(login.database.map(|d| ("database", d)));
        let mut buf = BytesMut::new();
        frontend::startup_message(params, &mut buf).map_err(io)?;
        write_to(w.input.get_mut(), &buf, "login")?;
        w.authenticate(login)?;
        let (mut failed, mut key) = (None, None);
        let ended = w.until_ready("login", |w| {
            if w.kind == b'E' && failed.is_none() {
                failed = Some(server_err("login", &w.body));
            }
            if let (b'K', Some(k)) = (w.kind, w.body.get(..8)) {
                let int = |b: &[u8]| i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                key = Some((int(&k[..4]), int(&k[4..])));
            }
            Ok(())
        });
        // A server refusing the session (too many connections, no such database) says why,
        // then closes: its words, not the closed connection after them.
        if let Some(e) = failed {
            return Err(e);
        }
        ended?;
        w.cancel = key.map(|(pid, secret)| (addr, pid, secret));
        Ok(w)
    }

    /// Asks the server to cancel what this session runs (best effort: on a connection of its
    /// own, answered by nothing; a server that cannot be reached is not asked).
    fn cancel_statement(&mut self) {
        let Some((addr, pid, secret)) = self.cancel.take() else {
            return;
        };
        let Ok(mut s) = Stream::connect(&addr, CANCEL_TIMEOUT) else {
            return;
        };
        s.set_write_timeout(Some(CANCEL_TIMEOUT));
        let mut request = BytesMut::new();
        frontend::cancel_request(pid, secret, &mut request);
        let _ = s.write_all(&request);
    }

    /// Answers the server's authentication requests until it says OK.
    fn authenticate(&mut self, login: &Login<'_>) -> Result<(), OpError> {
        let refused =
            |why: &str| OpError::new(ErrorClass::Refused, format!("postgres: login: {why}"));
        let password = || {
            login
                .password
                .ok_or_else(|| refused("the server asks for a password and the URL gives none"))
        };
        let mut scram: Option<sasl::ScramSha256> = None;
        let mut buf = BytesMut::new();
        // At most a few exchanges (SCRAM's is three).
        for _ in 0..8 {
            self.read_message("login")?;
            match self.kind {
                b'E' => return Err(server_err("login", &self.body)),
                b'R' => {}
                _ => return Err(malformed("login", Malformed("an unexpected answer"))),
            }
            let code = self
                .body
                .get(..4)
                .map(|c| i32::from_be_bytes(c.try_into().unwrap_or_default()));
            let data = self.body.get(4..).unwrap_or(&[]).to_vec();
            buf.clear();
            match code {
                Some(0) => return Ok(()),
                Some(3) => frontend::password_message(password()?, &mut buf),
                Some(5) => {
                    let salt: [u8; 4] = (data.get(..4).and_then(|s| s.try_into().ok()))
                        .ok_or_else(|| malformed("login", Malformed("an MD5 request without salt")))?;
                    let hash = md5_hash(login.user.as_bytes(), password()?, salt);
                    frontend::password_message(hash.as_bytes(), &mut buf)
                }
                Some(10) => {
                    if !data.split(|&b| b == 0).any(|m| m == sasl::SCRAM_SHA_256.as_bytes()) {
                        return Err(refused("the server offers no SASL method dyno speaks (SCRAM-SHA-256)"));
                    }
                    let s = sasl::ScramSha256::new(password()?, sasl::ChannelBinding::unsupported());
                    let sent = frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), &mut buf);
                    scram = Some(s);
                    sent
                }
                Some(11) | Some(12) => {
                    let s = scram.as_mut().ok_or_else(|| malformed("login", Malformed("SASL out of turn")))?;
                    if code == Some(12) {
                        s.finish(&data).map_err(|e| refused(&format!("the server's SCRAM proof: {e}")))?;
                        continue;
                    }
                    s.update(&data).map_err(|e| refused(&format!("SCRAM: {e}")))?;
                    frontend::sasl_response(s.message(), &mut buf)
                }
                _ => return Err(refused("the server asks for an authentication dyno does not speak (trust, password, md5 or scram-sha-256)")),
            }
            .map_err(|e| OpError::io("postgres: login", &e))?;
            write_to(self.input.get_mut(), &buf, "login")?;
        }
        Err(malformed(
            "login",
            Malformed("no end to the authentication"),
        ))
    }

    /// Prepares `sql` (parameters `$1`, `$2`…, their types the server's inference) as a
    /// statement of this connection's, and learns its result columns.
    pub fn prepare(&mut self, sql: &str) -> Result<Prepared, OpError> {
        self.in_step();
        let name = format!("dyno{}", self.prepared);
        self.out.clear();
        let at = begin(&mut self.out, b'P');
        cstr(&mut self.out, &name);
        cstr(&mut self.out, sql);
        self.out.extend_from_slice(&[0, 0]);
        end(&mut self.out, at);
        let at = begin(&mut self.out, b'D');
        self.out.push(b'S');
        cstr(&mut self.out, &name);
        end(&mut self.out, at);
        self.out.extend_from_slice(SYNC);
        self.send("prepare")?;
        let mut columns = Vec::new();
        self.until_ready("prepare", |w| {
            match w.kind {
                b'E' => return Err(server_err("prepare", &w.body)),
                b'T' => {
                    columns = parse_row_description(&w.body).map_err(|m| malformed("prepare", m))?
                }
                _ => {}
            }
            Ok(())
        })?;
        self.prepared += 1;
        Ok(Prepared { name, columns })
    }

    /// Runs a prepared statement with `params`; `row` is handed each row (rows are not read
    /// apart when it is `None`), and a row it refuses fails the statement. Returns the rows its
    /// command tag counts: selected, inserted, updated or deleted.
    pub fn run<A: Arg>(
        &mut self,
        stmt: &Prepared,
        params: &[A],
        row: Option<&mut EachRow<'_>>,
    ) -> Result<u64, OpError> {
        let encode = |out: &mut Vec<u8>| encode_execute(out, &stmt.name, params);
        match row {
            None => self.request("execute", encode, None),
            Some(each) => self.request("execute", encode, Some(&mut |r, _, _| each(r))),
        }
    }

    /// Runs a prepared statement with `params` in text (the sql family's): `row` sees each row
    /// with its columns' names. The rows its command tag counts.
    pub fn execute(
        &mut self,
        stmt: &Prepared,
        params: &[SqlParam<'_>],
        row: Option<&mut engine::driver::EachSqlRow<'_>>,
    ) -> Result<u64, OpError> {
        let encode = |out: &mut Vec<u8>| encode_execute(out, &stmt.name, params);
        self.text_request("execute", encode, &stmt.columns, row)
    }

    /// Runs `sql` (parameters `$1`, `$2`…) with `params` as an unnamed statement, parsed again
    /// ([`encode_unnamed`]: pgbench's `-M extended`); `row` sees each row in text.
    pub fn execute_unnamed(
        &mut self,
        sql: &str,
        params: &[SqlParam<'_>],
        row: Option<&mut engine::driver::EachSqlRow<'_>>,
    ) -> Result<u64, OpError> {
        let encode = |out: &mut Vec<u8>| {
            encode_unnamed(out, sql, params);
            out.extend_from_slice(SYNC);
        };
        self.text_request("execute", encode, &[], row)
    }

    /// Runs `parts` with `params` written between them as one Query (the simple protocol:
    /// pgbench's `-M simple`); `row` sees each row in text.
    pub fn simple(
        &mut self,
        parts: &[String],
        params: &[SqlParam<'_>],
        row: Option<&mut engine::driver::EachSqlRow<'_>>,
    ) -> Result<u64, OpError> {
        let encode = |out: &mut Vec<u8>| encode_simple(out, parts, params);
        self.text_request("query", encode, &[], row)
    }

    /// [`Wire::request`] with each row in text: its columns named by a RowDescription in the
    /// reply, or else by `columns`.
    fn text_request(
        &mut self,
        context: &str,
        encode: impl FnOnce(&mut Vec<u8>),
        columns: &[String],
        row: Option<&mut engine::driver::EachSqlRow<'_>>,
    ) -> Result<u64, OpError> {
        let Some(each) = row else {
            return self.request(context, encode, None);
        };
        let mut text = |r: Row<'_>, named: Option<&[String]>, result| {
            row_text(r, named.unwrap_or(columns), result, &mut *each)
        };
        self.request(context, encode, Some(&mut text))
    }

    /// Sends the request `encode` writes (a pipeline left open is abandoned first) and reads
    /// its reply to ReadyForQuery: `row`, when given, sees each row, with the columns a
    /// RowDescription in the reply named, if one did, and the index of the statement it came
    /// from (a Query may hold several, each ended by its CommandComplete). The rows the last
    /// command tag counts; a row the caller refuses, or the server's error, fails the request.
    fn request(
        &mut self,
        context: &str,
        encode: impl FnOnce(&mut Vec<u8>),
        mut row: Option<&mut RowNamed<'_>>,
    ) -> Result<u64, OpError> {
        self.in_step();
        self.out.clear();
        encode(&mut self.out);
        self.send(context)?;
        let (mut rows, mut described, mut result) = (0, None::<Vec<String>>, 0);
        let mut at = std::mem::take(&mut self.at);
        let read = self.until_ready(context, |w| {
            match (w.kind, row.as_mut()) {
                (b'T', Some(_)) => {
                    let names =
                        parse_row_description(&w.body).map_err(|m| malformed(context, m))?;
                    described = Some(names);
                }
                (b'D', Some(each)) => {
                    parse_data_row(&w.body, &mut at).map_err(|m| malformed(context, m))?;
                    let r = Row {
                        body: &w.body,
                        at: &at,
                    };
                    each(r, described.as_deref(), result)?;
                }
                (b'C', _) => {
                    rows = tag_rows(&w.body);
                    result += 1;
                }
                (b'I', _) => result += 1,
                (b'E', _) => return Err(server_err(context, &w.body)),
                _ => {}
            }
            Ok(())
        });
        self.at = at;
        read.map(|()| rows)
    }

    /// Begins a pipeline (a pipeline left open before is abandoned first).
    pub fn start_pipeline(&mut self) {
        self.in_step();
        self.out.clear();
        self.segments.push(0);
    }

    /// The pipeline being written: one begins if none has.
    fn piping(&mut self) -> &mut usize {
        if self.segments.is_empty() {
            self.start_pipeline();
        }
        self.segments.last_mut().expect("a segment")
    }

    /// Queues a prepared statement with `params` in the pipeline (one begins if none has):
    /// written out, sent at the next [`Wire::sync_segment`] or [`Wire::end_pipeline`], its
    /// reply read at the end.
    pub fn queue<A: Arg>(&mut self, stmt: &Prepared, params: &[A]) {
        *self.piping() += 1;
        encode_bind_execute(&mut self.out, &stmt.name, params);
    }

    /// Queues `sql` as an unnamed statement with `params` in the pipeline (one begins if none
    /// has), as [`Wire::execute_unnamed`] sends it.
    pub fn queue_unnamed(&mut self, sql: &str, params: &[SqlParam<'_>]) {
        *self.piping() += 1;
        encode_unnamed(&mut self.out, sql, params);
    }

    /// Ends the pipeline's segment with a Sync and sends it (pgbench's `\syncpipeline`): the
    /// server commits what the segment ran outside a transaction block, and a failure in it
    /// skips no further than its end. Its replies are read at the end.
    pub fn sync_segment(&mut self) -> Result<(), OpError> {
        self.piping();
        self.out.extend_from_slice(SYNC);
        self.send("pipeline")?;
        self.out.clear();
        self.segments.push(0);
        Ok(())
    }

    /// Ends the pipeline: sends what is queued with a last Sync, then reads every segment's
    /// replies, each message within the socket's timeout and all of them within the stream's
    /// bound on a reply, counted from that last write. `done(k)` is called as the `k`-th
    /// statement queued (from 0) completes. A statement the server fails skips the rest of its
    /// segment; the first failure is the result — the index of the statement it came at
    /// ([`NO_STATEMENT`] for the sending, or a segment's commit) and why — once every reply
    /// has been read, so the session stays in step. A connection that fails ends the reading
    /// (and the session: [`Wire::send`]).
    pub fn end_pipeline(&mut self, done: &mut dyn FnMut(usize)) -> Result<(), (usize, OpError)> {
        self.piping();
        self.out.extend_from_slice(SYNC);
        self.send("pipeline").map_err(|e| (NO_STATEMENT, e))?;
        let (mut first_failure, mut start) = (None, 0);
        for segment in 0..self.segments.len() {
            let n = self.segments[segment];
            let (mut k, mut refused) = (start, None);
            // The server's refusal is kept apart from what `until_ready` returns, which is then
            // the connection's failure alone.
            let read = self.until_ready("pipeline", |w| {
                match w.kind {
                    b'C' | b'I' => {
                        done(k);
                        k += 1;
                    }
                    b'E' if refused.is_none() => refused = Some(server_err("pipeline", &w.body)),
                    _ => {}
                }
                Ok(())
            });
            // The statement whose reply was awaited; after the segment's last, its commit.
            let at = if k < start + n { k } else { NO_STATEMENT };
            if let Some(e) = refused {
                first_failure.get_or_insert((at, e));
            }
            if let Err(e) = read {
                first_failure.get_or_insert((at, e));
                break;
            }
            start += n;
        }
        self.segments.clear();
        first_failure.map_or(Ok(()), Err)
    }

    /// A pipeline left before its end (its transaction failed on the client's side): what was
    /// not sent is dropped, and what was is read to its end, so the next request is in step
    /// (or, should the connection fail, refused: [`Wire::send`]).
    fn abandon_pipeline(&mut self) {
        // A failed connection has nothing more to give.
        let sent = if self.step.kept() {
            self.segments.len().saturating_sub(1)
        } else {
            0
        };
        self.segments.clear();
        self.out.clear();
        for _ in 0..sent {
            if self.until_ready("pipeline", |_| Ok(())).is_err() {
                break;
            }
        }
    }

    /// Before a request of its own: a pipeline left open is abandoned.
    fn in_step(&mut self) {
        if !self.segments.is_empty() {
            self.abandon_pipeline();
        }
    }

    /// Runs SQL as written (the simple query protocol: several statements may be sent).
    pub fn batch(&mut self, sql: &str) -> Result<(), OpError> {
        self.in_step();
        self.out.clear();
        encode_simple(&mut self.out, &[sql], &[]);
        let context = sql.split_whitespace().next().unwrap_or("query");
        self.send(context)?;
        self.until_ready(context, |w| match w.kind {
            b'E' => Err(server_err(context, &w.body)),
            _ => Ok(()),
        })
    }

    /// Reads messages, each handed to `each`, until ReadyForQuery: each message within
    /// [`TIMEOUT`] (the socket's), and no more once [`TIMEOUT`] has passed since the first.
    /// The first error `each` returns is the result, once the reply has been read to its end
    /// (the next statement's reply must not start in the middle of this one's).
    fn until_ready(
        &mut self,
        context: &str,
        mut each: impl FnMut(&Wire) -> Result<(), OpError>,
    ) -> Result<(), OpError> {
        let mut bound = engine::fiber::Bound::new(self.timeout);
        let mut failed = None;
        loop {
            self.read_message(context)?;
            if self.kind == b'Z' {
                self.idle = self.body.first() == Some(&b'I');
                return failed.map_or(Ok(()), Err);
            }
            if failed.is_none() {
                failed = each(self).err();
            }
            if bound.passed() {
                self.step.lose();
                self.cancel_statement();
                return Err(crate::net::no_end("postgres", context, self.timeout));
            }
        }
    }

    /// How long a reply may take from now on, as a whole and each read of it.
    pub fn set_timeout(&mut self, d: Duration) {
        self.timeout = d;
        self.input.get_mut().set_timeouts(d);
    }

    /// Whether the session is in no transaction, as the server last said.
    pub fn idle(&self) -> bool {
        self.idle
    }

    /// Whether requests may still be sent (see [`Wire::send`]).
    pub fn usable(&self) -> bool {
        self.step.kept()
    }

    /// Sends what `self.out` holds — nothing once the connection has failed: a reply lost, late or malformed leaves
    /// the session out of step with the server (what it reads next would answer an earlier
    /// request), so every later request fails at once, as the connection's.
    fn send(&mut self, context: &str) -> Result<(), OpError> {
        self.step.send("postgres", context)?;
        let sent = write_to(self.input.get_mut(), &self.out, context);
        self.step.watch(sent)
    }

    /// Reads one message: its type into `self.kind`, its body into `self.body`. Notices,
    /// parameter changes and notifications, which may come at any time, are passed over.
    fn read_message(&mut self, context: &str) -> Result<(), OpError> {
        self.read_message_once(context).inspect_err(|e| {
            self.step.lose();
            if e.class == ErrorClass::Timeout {
                self.cancel_statement();
            }
        })
    }

    fn read_message_once(&mut self, context: &str) -> Result<(), OpError> {
        // Made at the first message passed over: a server that sends nothing else is bounded
        // as a reply is.
        let mut bound: Option<engine::fiber::Bound> = None;
        loop {
            self.read_frame(context)?;
            if !matches!(self.kind, b'N' | b'S' | b'A') {
                return Ok(());
            }
            let timeout = self.timeout;
            if bound
                .get_or_insert_with(|| engine::fiber::Bound::new(timeout))
                .passed()
            {
                let context = format!("{context} (nothing but notices and notifications)");
                return Err(crate::net::no_end("postgres", &context, timeout));
            }
        }
    }

    /// Reads one message of any type: its type into `self.kind`, its body into `self.body`.
    fn read_frame(&mut self, context: &str) -> Result<(), OpError> {
        // Most often the whole message is in the buffer: copied from there, not read in two
        // steps into a body zeroed first.
        let buf = (self.input.fill_buf()).map_err(|e| read_err(context, &e))?;
        if let Some(header) = buf.get(..5) {
            let len = frame_len(header, context)?;
            if let Some(body) = buf.get(5..len + 1) {
                self.kind = header[0];
                self.body.clear();
                self.body.extend_from_slice(body);
                self.input.consume(len + 1);
                return Ok(());
            }
        }
        let mut header = [0u8; 5];
        (self.input.read_exact(&mut header)).map_err(|e| read_err(context, &e))?;
        let len = frame_len(&header, context)?;
        self.kind = header[0];
        self.body.resize(len - 4, 0);
        (self.input.read_exact(&mut self.body)).map_err(|e| read_err(context, &e))
    }
}

/// A message's length (its own four bytes included) from its five-byte header.
fn frame_len(header: &[u8], context: &str) -> Result<usize, OpError> {
    let len = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    if !(4..=MAX_MESSAGE as i32).contains(&len) {
        return Err(malformed(
            context,
            Malformed("a message of impossible length"),
        ));
    }
    Ok(len as usize)
}

fn write_to(s: &mut Stream, bytes: &[u8], context: &str) -> Result<(), OpError> {
    (s.write_all(bytes)).map_err(|e| OpError::io(&format!("postgres: {context}: send"), &e))
}

/// What [`Wire::run`] hands each row to; an error fails the statement.
pub type EachRow<'a> = dyn FnMut(Row<'_>) -> Result<(), OpError> + 'a;

/// A row with the columns a RowDescription named, if one came ([`Wire::request`]), and the
/// index of the statement it came from.
type RowNamed<'a> = dyn FnMut(Row<'_>, Option<&[String]>, usize) -> Result<(), OpError> + 'a;

/// One data row: where each value lies in the message's body (`None` for NULL).
pub struct Row<'a> {
    body: &'a [u8],
    at: &'a [Option<Range<usize>>],
}

impl<'a> Row<'a> {
    /// Column `i`'s value (`None` for NULL or a column the row does not have).
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        let r = self.at.get(i)?.clone()?;
        Some(&self.body[r])
    }
}

/// Hands `row` one data row's values as text, named by `columns`, of statement `result`.
fn row_text(
    r: Row<'_>,
    columns: &[String],
    result: usize,
    row: &mut engine::driver::EachSqlRow<'_>,
) -> Result<(), OpError> {
    let mut cols = Vec::with_capacity(r.at.len());
    for i in 0..r.at.len() {
        let name = columns.get(i).map_or("?", String::as_str);
        let value = match r.get(i) {
            None => None,
            Some(v) => Some(std::str::from_utf8(v).map_err(|_| {
                malformed(
                    "execute",
                    Malformed("a value that is not UTF-8 in a UTF8 session"),
                )
            })?),
        };
        cols.push((name, value));
    }
    row(result, &cols);
    Ok(())
}

impl Drop for Wire {
    /// Says goodbye (Terminate), so the server logs an orderly end rather than a lost client;
    /// never waits for it (a full send buffer means a server not listening).
    fn drop(&mut self) {
        crate::net::send_now(self.input.get_ref().as_raw_fd(), &[b'X', 0, 0, 0, 4]);
    }
}

mod copy;
#[cfg(test)]
mod tests;
