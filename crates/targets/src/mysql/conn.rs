//! One connection to a MySQL or MariaDB server over an [`engine::fiber::Stream`]: a session's
//! waits yield to the generator thread's other clients. Commands are written whole; replies are
//! read through a buffer, a packet at a time, into a payload buffer reused for every packet.

use super::proto::{self, Cur, Malformed, Param, Row, ServerError};
use engine::driver::{ErrorClass, OpError};
use engine::fiber::Stream;
use std::io::{BufReader, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Connecting, and every reply, at most this long.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A prepared statement: its id and its result columns (their types, apart, for the rows).
#[derive(Debug, Clone)]
pub struct Stmt {
    pub id: u32,
    pub params: u16,
    pub types: Vec<u8>,
    pub columns: Vec<proto::Column>,
    /// The parameter types the server last had for it (see [`proto::execute_request`]).
    pub sent: std::cell::RefCell<Vec<[u8; 2]>>,
}

/// What a text query answered: its rows of text (none for a statement without).
#[derive(Debug, Default)]
pub struct QueryResult {
    pub rows: Vec<Vec<Option<String>>>,
}

/// Sees each row of a text result, with the index of the statement it came from and the
/// result's columns.
type EachText<'a> = dyn FnMut(usize, &[proto::Column], Vec<Option<String>>) + 'a;

/// The most results one reply is read for: a server answering with more is broken.
const MAX_RESULTS: usize = 1 << 16;

fn too_many(context: &str) -> OpError {
    malformed(
        context,
        Malformed(format!("more than {MAX_RESULTS} results to one request")),
    )
}

pub struct Conn {
    input: BufReader<Stream>,
    /// The payload of the last packet read.
    payload: Vec<u8>,
    /// The command being sent (its payload), and its packets as written: both reused.
    cmd: Vec<u8>,
    out: Vec<u8>,
    /// The sequence number the next packet carries.
    seq: u8,
    /// Where the values of the row being read lie (reused).
    at: Vec<Option<std::ops::Range<usize>>>,
    /// MariaDB's cached metadata agreed on: a column count carries a "definitions follow" byte.
    cache_metadata: bool,
    pub version: String,
    /// How to stop on the server a statement whose reply did not come in time.
    killer: Option<Killer>,
    /// A request was sent and its reply not read to its end: a reply lost, late or malformed
    /// leaves the connection out of step with the server (what it reads next would answer the
    /// earlier request), so it sends nothing more.
    in_flight: bool,
    /// How long a reply may take, all told (each read waits that long at most, too), and the
    /// bound of the one being read: a server that trickles a reply for ever is cut off.
    timeout: Duration,
    reply: engine::fiber::Bound,
}

/// Who this connection logged in as, where, and the server's ID of it: `KILL QUERY` from a
/// connection of its own stops a statement the server is still running after dyno gave up on
/// it (as the mysql client's Ctrl-C does). This is the bound on the server's side, instead of
/// a `max_statement_time` on every statement: that timer cost MariaDB 2–5% of sysbench's
/// `oltp_read_write` rate here (`docs/src/measurements/sql.md`), and sysbench sets none.
struct Killer {
    addr: SocketAddr,
    user: String,
    password: String,
    db: Option<String>,
    id: u32,
}

/// How long the killing connection may take, all told per step: it is made after a reply
/// already took [`TIMEOUT`], so it must not add as much again.
const KILL_TIMEOUT: Duration = Duration::from_secs(5);

fn malformed(context: &str, m: Malformed) -> OpError {
    OpError::new(ErrorClass::Protocol, format!("mysql: {context}: {}", m.0))
}

/// The errors a server sends as it closes the connection: ER_SERVER_SHUTDOWN, MariaDB's
/// ER_CONNECTION_KILLED, MySQL's ER_CLIENT_INTERACTION_TIMEOUT.
const ENDING: [u16; 3] = [1053, 1927, 4031];

/// An error the server sent, by class: what a client can do about it differs.
pub fn server_err(context: &str, e: &ServerError) -> OpError {
    let class = match e.code {
        // ER_LOCK_WAIT_TIMEOUT, ER_STATEMENT_TIMEOUT (MariaDB), ER_QUERY_TIMEOUT (MySQL)
        1205 | 1969 | 3024 => ErrorClass::Timeout,
        // ER_CON_COUNT_ERROR, ER_OUT_OF_RESOURCES, ER_DISK_FULL, ER_RECORD_FILE_FULL
        1040 | 1041 | 1021 | 1114 => ErrorClass::Full,
        // ER_ACCESS_DENIED_ERROR, ER_DBACCESS_DENIED_ERROR, ER_HOST_NOT_PRIVILEGED
        1044 | 1045 | 1130 => ErrorClass::Refused,
        _ => ErrorClass::Application,
    };
    OpError::new(class, format!("mysql: {context}: {e}"))
}

impl Conn {
    /// Connects to `addr` and logs in as `user`, with `mysql_native_password`.
    pub fn open(
        addr: SocketAddr,
        user: &str,
        password: &str,
        db: Option<&str>,
    ) -> Result<Conn, OpError> {
        Conn::open_within(addr, (user, password, db), TIMEOUT)
    }

    /// [`Conn::open`] with `timeout` for connecting and for each reply.
    fn open_within(
        addr: SocketAddr,
        (user, password, db): (&str, &str, Option<&str>),
        timeout: Duration,
    ) -> Result<Conn, OpError> {
        let io = |e: std::io::Error| OpError::io("mysql: connect", &e);
        let s = Stream::open(&addr, timeout, timeout).map_err(io)?;
        let mut c = Conn {
            input: BufReader::with_capacity(16 * 1024, s),
            payload: Vec::with_capacity(1024),
            cmd: Vec::with_capacity(1024),
            out: Vec::with_capacity(1024),
            seq: 0,
            at: Vec::new(),
            cache_metadata: false,
            version: String::new(),
            killer: None,
            in_flight: false,
            timeout,
            reply: engine::fiber::Bound::new(timeout),
        };
        c.read_packet("handshake")?;
        if c.payload.first() == Some(&0xff) {
            return Err(c.error("handshake"));
        }
        let h = proto::parse_handshake(&c.payload).map_err(|m| malformed("handshake", m))?;
        c.version = h.version.clone();
        let mut nonce = h.nonce.clone();
        let auth = proto::scramble_native(password.as_bytes(), &nonce);
        let response = proto::handshake_response(user, &auth, db, &h);
        c.cache_metadata = h.mariadb & proto::MARIADB_CACHE_METADATA != 0;
        c.write_packet(&response, "login")?;
        // The server may ask for another method (an auth switch, 0xfe) once.
        for _ in 0..2 {
            c.read_packet("login")?;
            match c.payload.first() {
                Some(0x00) => {
                    c.killer = Some(Killer {
                        addr,
                        user: user.into(),
                        password: password.into(),
                        db: db.map(String::from),
                        id: h.connection_id,
                    });
                    return Ok(c);
                }
                Some(0xff) => return Err(c.error("login")),
                Some(0xfe) => {
                    let mut cur = Cur::new(&c.payload[1..]);
                    let plugin = String::from_utf8_lossy(cur.nul_str()).into_owned();
                    if plugin != proto::NATIVE_PASSWORD {
                        return Err(OpError::new(
                            ErrorClass::Refused,
                            format!(
                                "mysql: login: the server asks for {plugin}; dyno speaks \
                                 mysql_native_password (create the user IDENTIFIED WITH \
                                 mysql_native_password)"
                            ),
                        ));
                    }
                    nonce = cur.rest().strip_suffix(&[0]).unwrap_or(&[]).to_vec();
                    let auth = proto::scramble_native(password.as_bytes(), &nonce);
                    c.write_packet(&auth, "login")?;
                }
                _ => {
                    return Err(malformed("login", Malformed("an unexpected answer".into())));
                }
            }
        }
        Err(malformed(
            "login",
            Malformed("the server asked twice".into()),
        ))
    }

    /// The server's error in the last packet read, which ends its reply.
    fn error(&mut self, context: &str) -> OpError {
        match proto::parse_err(&self.payload) {
            // The server ending the connection says why in an error packet: nothing more will
            // be answered on it.
            Ok(e) if ENDING.contains(&e.code) => {
                OpError::new(ErrorClass::Reset, format!("mysql: {context}: {e}"))
            }
            Ok(e) => {
                self.in_flight = false;
                server_err(context, &e)
            }
            Err(m) => malformed(context, m),
        }
    }

    /// Reads one packet's payload into `self.payload` (a payload of 16 MiB − 1 goes on in the
    /// next packet, whose bytes are appended).
    fn read_packet(&mut self, context: &str) -> Result<(), OpError> {
        self.read_packet_once(context).inspect_err(|e| {
            if e.class == ErrorClass::Timeout {
                self.kill_query();
            }
        })
    }

    /// Kills, from a connection of its own, the statement this one runs (best effort, once).
    fn kill_query(&mut self) {
        let Some(k) = self.killer.take() else { return };
        let login = (k.user.as_str(), k.password.as_str(), k.db.as_deref());
        if let Ok(mut c) = Conn::open_within(k.addr, login, KILL_TIMEOUT) {
            c.killer = None;
            let _ = c.query(&format!("KILL QUERY {}", k.id));
            c.quit();
        }
    }

    fn read_packet_once(&mut self, context: &str) -> Result<(), OpError> {
        if self.reply.passed() {
            return Err(crate::net::no_end("mysql", context, self.timeout));
        }
        self.payload.clear();
        loop {
            let mut header = [0u8; 4];
            self.input
                .read_exact(&mut header)
                .map_err(|e| read_err(context, &e))?;
            let len =
                usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
            self.seq = header[3].wrapping_add(1);
            let at = self.payload.len();
            self.payload.resize(at + len, 0);
            (self.input.read_exact(&mut self.payload[at..])).map_err(|e| read_err(context, &e))?;
            if len < proto::MAX_PAYLOAD {
                return Ok(());
            }
        }
    }

    /// Writes `payload` as one packet (or more, past 16 MiB − 1), continuing the sequence.
    fn write_packet(&mut self, payload: &[u8], context: &str) -> Result<(), OpError> {
        self.out.clear();
        let mut chunks = payload.chunks(proto::MAX_PAYLOAD).peekable();
        if payload.is_empty() {
            self.out.extend_from_slice(&[0, 0, 0, self.seq]);
        }
        while let Some(chunk) = chunks.next() {
            let len = chunk.len() as u32;
            self.out.extend_from_slice(&len.to_le_bytes()[..3]);
            self.out.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            self.out.extend_from_slice(chunk);
            if chunks.peek().is_none() && chunk.len() == proto::MAX_PAYLOAD {
                self.out.extend_from_slice(&[0, 0, 0, self.seq]);
            }
        }
        let s = self.input.get_mut();
        (s.write_all(&self.out)).map_err(|e| OpError::io(&format!("mysql: {context}: send"), &e))
    }

    /// Sends the command in `self.cmd` (its first byte the command's), starting a new
    /// sequence.
    fn send_cmd(&mut self, context: &str) -> Result<(), OpError> {
        if self.in_flight {
            return Err(crate::net::out_of_step("mysql", context));
        }
        self.in_flight = true;
        self.reply = engine::fiber::Bound::new(self.timeout);
        self.seq = 0;
        let cmd = std::mem::take(&mut self.cmd);
        let sent = self.write_packet(&cmd, context);
        self.cmd = cmd;
        sent
    }

    /// `command` followed by `text` in `self.cmd`, sent.
    fn send_text(&mut self, command: u8, text: &str, context: &str) -> Result<(), OpError> {
        self.cmd.clear();
        self.cmd.push(command);
        self.cmd.extend_from_slice(text.as_bytes());
        self.send_cmd(context)
    }

    /// How long a reply may take from now on, as a whole and each read of it.
    pub fn set_timeout(&mut self, d: Duration) {
        self.timeout = d;
        self.input.get_mut().set_timeouts(d);
    }

    /// Whether requests may still be sent: every reply so far was read to its end.
    pub fn usable(&self) -> bool {
        !self.in_flight
    }

    /// Whether the server said, at the end of the last statement's result, that a
    /// transaction is open.
    pub fn in_transaction(&self) -> bool {
        proto::in_transaction(&self.payload)
    }

    /// Runs a text statement (`BEGIN`, DDL, a `SELECT` of settings).
    pub fn query(&mut self, sql: &str) -> Result<QueryResult, OpError> {
        let context = sql.split_whitespace().next().unwrap_or("query");
        self.send_text(proto::COM_QUERY, sql, context)?;
        let mut rows = Vec::new();
        self.text_result(context, Some(&mut |_, _, row| rows.push(row)))?;
        Ok(QueryResult { rows })
    }

    /// Runs `parts` with `params` written between them as a text statement (pgbench's `-M
    /// simple`, sysbench's `--db-ps-mode=disable`); `row` sees each row with its columns'
    /// names. Returns the affected rows, or the rows a query gave.
    pub fn query_spliced(
        &mut self,
        parts: &[String],
        params: &[engine::driver::SqlParam<'_>],
        row: Option<&mut engine::driver::EachSqlRow<'_>>,
    ) -> Result<u64, OpError> {
        let context = "query";
        self.cmd.clear();
        self.cmd.push(proto::COM_QUERY);
        engine::driver::splice(&mut self.cmd, parts, params);
        self.send_cmd(context)?;
        let Some(row) = row else {
            return self.text_result(context, None);
        };
        let mut named = |result, columns: &[proto::Column], values: Vec<Option<String>>| {
            let cols: Vec<(&str, Option<&str>)> = (columns.iter().zip(&values))
                .map(|(c, v)| (c.name.as_str(), v.as_deref()))
                .collect();
            row(result, &cols);
        };
        self.text_result(context, Some(&mut named))
    }

    /// The result of the text query just sent, of each of its statements in turn while the
    /// server says more follow: the last one's count — an OK's affected rows, or a result
    /// set's rows, each handed to `each` (when given) with its statement's index and the
    /// columns.
    fn text_result(
        &mut self,
        context: &str,
        mut each: Option<&mut EachText<'_>>,
    ) -> Result<u64, OpError> {
        for result in 0..MAX_RESULTS {
            let count = self.statement_result(context, result, each.as_deref_mut())?;
            if !proto::more_results(&self.payload) {
                self.in_flight = false;
                return Ok(count);
            }
        }
        Err(too_many(context))
    }

    /// One statement's result of a text query (its last packet left in `self.payload`).
    fn statement_result(
        &mut self,
        context: &str,
        result: usize,
        mut each: Option<&mut EachText<'_>>,
    ) -> Result<u64, OpError> {
        self.read_packet(context)?;
        match self.payload.first() {
            Some(0x00) => {
                let mut c = Cur::new(&self.payload[1..]);
                let affected = c.lenenc().map_err(|m| malformed(context, m))?;
                return Ok(affected.unwrap_or(0));
            }
            Some(0xff) => return Err(self.error(context)),
            _ => {}
        }
        let columns = self.definitions(context)?;
        let mut rows = 0;
        loop {
            self.read_packet(context)?;
            if proto::is_eof(&self.payload) {
                return Ok(rows);
            }
            if self.payload.first() == Some(&0xff) {
                return Err(self.error(context));
            }
            rows += 1;
            if let Some(each) = each.as_mut() {
                let values = (proto::text_row(&self.payload, columns.len()))
                    .map_err(|m| malformed(context, m))?;
                each(result, &columns, values);
            }
        }
    }

    /// Reads `n` column (or parameter) definitions and the EOF after them; their types.
    fn skip_definitions(&mut self, n: usize, context: &str) -> Result<Vec<proto::Column>, OpError> {
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            self.read_packet(context)?;
            columns.push(proto::column(&self.payload).map_err(|m| malformed(context, m))?);
        }
        if n > 0 {
            self.read_packet(context)?;
            if !proto::is_eof(&self.payload) {
                return Err(malformed(
                    context,
                    Malformed("no EOF after the definitions".into()),
                ));
            }
        }
        Ok(columns)
    }

    /// Prepares a statement.
    pub fn prepare(&mut self, sql: &str) -> Result<Stmt, OpError> {
        self.send_text(proto::COM_STMT_PREPARE, sql, "prepare")?;
        self.read_packet("prepare")?;
        if self.payload.first() == Some(&0xff) {
            return Err(self.error("prepare"));
        }
        let (id, columns, params) =
            proto::parse_prepare_ok(&self.payload).map_err(|m| malformed("prepare", m))?;
        self.skip_definitions(usize::from(params), "prepare")?;
        let columns = self.skip_definitions(usize::from(columns), "prepare")?;
        self.in_flight = false;
        Ok(Stmt {
            id,
            params,
            types: columns.iter().map(|c| c.kind).collect(),
            columns,
            sent: Default::default(),
        })
    }

    /// Executes a prepared statement; `row` sees each row. Returns the affected rows (0 for a
    /// `SELECT`).
    pub fn execute<'a, P: Copy + Into<Param<'a>>>(
        &mut self,
        stmt: &Stmt,
        params: &[P],
        context: &str,
        mut row: impl FnMut(&Row<'_>) -> Result<(), OpError>,
    ) -> Result<u64, OpError> {
        debug_assert_eq!(usize::from(stmt.params), params.len());
        proto::execute_request(&mut self.cmd, stmt.id, params, &mut stmt.sent.borrow_mut());
        let result = self
            .send_cmd(context)
            .and_then(|()| self.execute_reply(stmt, context, &mut row));
        if result.is_err() {
            // Whether the server kept the types is not known: they go with the next execution.
            stmt.sent.borrow_mut().clear();
        }
        result
    }

    /// A prepared statement's reply: its result, and past any after it — a `CALL` answers with
    /// a result per `SELECT` it ran, then its own (to a client with `CLIENT_MULTI_RESULTS`),
    /// read past so the next reply is the next command's.
    fn execute_reply(
        &mut self,
        stmt: &Stmt,
        context: &str,
        row: &mut impl FnMut(&Row<'_>) -> Result<(), OpError>,
    ) -> Result<u64, OpError> {
        let (count, refused) = self.first_result(stmt, context, row)?;
        for result in 1..MAX_RESULTS {
            if !proto::more_results(&self.payload) {
                self.in_flight = false;
                return refused.map_or(Ok(count), Err);
            }
            self.statement_result(context, result, None)?;
        }
        Err(too_many(context))
    }

    /// The first result of a prepared statement's reply: its count, and the first refusal of
    /// `row`, whose result was still read to its end.
    fn first_result(
        &mut self,
        stmt: &Stmt,
        context: &str,
        row: &mut impl FnMut(&Row<'_>) -> Result<(), OpError>,
    ) -> Result<(u64, Option<OpError>), OpError> {
        self.read_packet(context)?;
        match self.payload.first() {
            Some(0x00) => {
                let mut c = Cur::new(&self.payload[1..]);
                let affected = c.lenenc().map_err(|m| malformed(context, m))?;
                return Ok((affected.unwrap_or(0), None));
            }
            Some(0xff) => return Err(self.error(context)),
            _ => {}
        }
        let fresh = self.definitions(context)?;
        // Definitions sent again (the statement's result changed shape, or a `CALL`'s, which
        // has none when prepared) are this result's.
        let types: Vec<u8>;
        let (types, columns) = if fresh.is_empty() {
            (&stmt.types, &stmt.columns)
        } else {
            types = fresh.iter().map(|c| c.kind).collect();
            (&types, &fresh)
        };
        let mut at = std::mem::take(&mut self.at);
        let result = self.rows((types, columns), &mut at, context, row);
        self.at = at;
        result
    }

    /// After a result's column count (in `self.payload`): its column definitions and the EOF
    /// after them. Empty when the server, with MariaDB's cached metadata, sent none (it then
    /// sends the EOF alone).
    fn definitions(&mut self, context: &str) -> Result<Vec<proto::Column>, OpError> {
        let mut c = Cur::new(&self.payload);
        let n = (c.lenenc())
            .map_err(|m| malformed(context, m))?
            .unwrap_or(0) as usize;
        let follow = !self.cache_metadata || c.u8().map_err(|m| malformed(context, m))? == 1;
        if follow {
            return self.skip_definitions(n, context);
        }
        self.read_packet(context)?;
        if !proto::is_eof(&self.payload) {
            return Err(malformed(
                context,
                Malformed("no EOF after the column count".into()),
            ));
        }
        Ok(Vec::new())
    }

    /// The rows of a binary result set, up to its EOF, each to `row` until it refuses one
    /// (that refusal returned beside the count, 0: the rest read past, so that the next reply
    /// read is the next request's).
    fn rows(
        &mut self,
        (types, columns): (&[u8], &[proto::Column]),
        at: &mut Vec<Option<std::ops::Range<usize>>>,
        context: &str,
        row: &mut impl FnMut(&Row<'_>) -> Result<(), OpError>,
    ) -> Result<(u64, Option<OpError>), OpError> {
        let mut refused = None;
        loop {
            self.read_packet(context)?;
            if proto::is_eof(&self.payload) {
                return Ok((0, refused));
            }
            if self.payload.first() == Some(&0xff) {
                return Err(self.error(context));
            }
            if refused.is_some() {
                continue;
            }
            proto::binary_row(&self.payload, types, at).map_err(|m| malformed(context, m))?;
            let r = Row {
                payload: &self.payload,
                at,
                columns,
            };
            refused = row(&r).err();
        }
    }

    /// Says goodbye, never waiting for it ([`crate::net::send_now`]).
    pub fn quit(&mut self) {
        // One packet, the first of its sequence: its length, 0, and the command.
        let bye = [1, 0, 0, 0, proto::COM_QUIT];
        crate::net::send_now(self.input.get_ref().as_raw_fd(), &bye);
    }
}

fn read_err(context: &str, e: &std::io::Error) -> OpError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return OpError::new(
            ErrorClass::Reset,
            format!("mysql: {context}: the server closed the connection"),
        );
    }
    OpError::io(&format!("mysql: {context}: receive"), e)
}

#[cfg(test)]
mod tests;
