//! The part of the MySQL client/server protocol dyno speaks (MariaDB and MySQL alike): packets,
//! the handshake with `mysql_native_password`, text queries and prepared statements with binary
//! rows. Everything read here was written by a server: each read is bounded by the payload it
//! is in, and a payload that ends early or says something impossible is a [`Malformed`] error,
//! never a panic.

use sha1::{Digest, Sha1};

pub const COM_QUIT: u8 = 0x01;
pub const COM_QUERY: u8 = 0x03;
pub const COM_STMT_PREPARE: u8 = 0x16;
pub const COM_STMT_EXECUTE: u8 = 0x17;

const CLIENT_LONG_PASSWORD: u32 = 0x1;
const CLIENT_FOUND_ROWS: u32 = 0x2;
const CLIENT_LONG_FLAG: u32 = 0x4;
const CLIENT_CONNECT_WITH_DB: u32 = 0x8;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
/// A text query may hold several statements (pgbench's compound commands, `\\;`), each
/// answered by a result of its own.
const CLIENT_MULTI_STATEMENTS: u32 = 0x1_0000;
const CLIENT_MULTI_RESULTS: u32 = 0x2_0000;
const CLIENT_PLUGIN_AUTH: u32 = 0x8_0000;
/// MariaDB's extended capability (in the handshake's reserved bytes, when the server clears
/// `CLIENT_LONG_PASSWORD`, its `CLIENT_MYSQL`): a prepared statement's result set may come
/// without its column definitions, which the client keeps from the PREPARE (as libmariadb does;
/// the server then builds no definitions per execution).
pub const MARIADB_CACHE_METADATA: u32 = 0x10;

/// Column types dyno reads in binary rows.
pub const TYPE_LONGLONG: u8 = 0x08;
pub const TYPE_BLOB: u8 = 0xfc;
pub const TYPE_VAR_STRING: u8 = 0xfd;

/// The one authentication method dyno answers (MariaDB's default for a user with a password).
pub const NATIVE_PASSWORD: &str = "mysql_native_password";

/// The largest payload of one packet; a longer one goes on in the next.
pub const MAX_PAYLOAD: usize = 0xff_ffff;

/// A payload that is not what the protocol allows.
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed(pub String);

/// Reads a payload front to back; every read checks what is left.
pub struct Cur<'a> {
    b: &'a [u8],
}

impl<'a> Cur<'a> {
    pub fn new(b: &'a [u8]) -> Cur<'a> {
        Cur { b }
    }
    pub fn is_empty(&self) -> bool {
        self.b.is_empty()
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if n > self.b.len() {
            return Err(Malformed(format!(
                "a field of {n} bytes where {} are left",
                self.b.len()
            )));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    pub fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, Malformed> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    pub fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    /// A length-encoded integer; `None` for the NULL marker (0xfb) of a text row.
    pub fn lenenc(&mut self) -> Result<Option<u64>, Malformed> {
        Ok(Some(match self.u8()? {
            0xfb => return Ok(None),
            0xfc => u64::from(self.u16()?),
            0xfd => {
                let b = self.take(3)?;
                u64::from(b[0]) | u64::from(b[1]) << 8 | u64::from(b[2]) << 16
            }
            0xfe => self.u64()?,
            0xff => return Err(Malformed("0xff is not a length".into())),
            n => u64::from(n),
        }))
    }
    /// A length-encoded string; `None` for NULL.
    pub fn lenenc_bytes(&mut self) -> Result<Option<&'a [u8]>, Malformed> {
        match self.lenenc()? {
            None => Ok(None),
            Some(n) => {
                let n =
                    usize::try_from(n).map_err(|_| Malformed("a length beyond memory".into()))?;
                self.take(n).map(Some)
            }
        }
    }
    /// A string ended by a NUL byte (or by the payload's end).
    pub fn nul_str(&mut self) -> &'a [u8] {
        let end = self.b.iter().position(|&c| c == 0).unwrap_or(self.b.len());
        let s = &self.b[..end];
        self.b = &self.b[(end + 1).min(self.b.len())..];
        s
    }
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.b)
    }
}

/// Appends a length-encoded integer.
pub fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// An error the server sent (an ERR packet).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerError {
    pub code: u16,
    pub state: String,
    pub message: String,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ERROR {} ({}): {}", self.code, self.state, self.message)
    }
}

/// Parses an ERR packet's payload (its first byte, 0xff, included).
pub fn parse_err(payload: &[u8]) -> Result<ServerError, Malformed> {
    let mut c = Cur::new(payload);
    if c.u8()? != 0xff {
        return Err(Malformed("not an error packet".into()));
    }
    let code = c.u16()?;
    let mut state = String::new();
    let mut rest = c.rest();
    if rest.first() == Some(&b'#') && rest.len() >= 6 {
        state = String::from_utf8_lossy(&rest[1..6]).into_owned();
        rest = &rest[6..];
    }
    Ok(ServerError {
        code,
        state,
        message: String::from_utf8_lossy(rest).into_owned(),
    })
}

/// The server's first packet.
#[derive(Debug, Clone, PartialEq)]
pub struct Handshake {
    pub version: String,
    /// The server's ID of this connection (what `KILL QUERY` names).
    pub connection_id: u32,
    pub capabilities: u32,
    /// MariaDB's extended capabilities (0 from MySQL).
    pub mariadb: u32,
    /// The scramble's 20 bytes.
    pub nonce: Vec<u8>,
    pub plugin: String,
}

/// Parses the initial handshake (protocol 10).
pub fn parse_handshake(payload: &[u8]) -> Result<Handshake, Malformed> {
    let mut c = Cur::new(payload);
    let protocol = c.u8()?;
    if protocol != 10 {
        return Err(Malformed(format!(
            "handshake protocol {protocol}, not 10: not a MySQL or MariaDB server?"
        )));
    }
    let version = String::from_utf8_lossy(c.nul_str()).into_owned();
    let connection_id = c.u32()?;
    let mut nonce = c.take(8)?.to_vec();
    c.u8()?;
    let mut capabilities = u32::from(c.u16()?);
    let mut plugin = String::from(NATIVE_PASSWORD);
    let mut mariadb = 0;
    if !c.is_empty() {
        let _charset = c.u8()?;
        let _status = c.u16()?;
        capabilities |= u32::from(c.u16()?) << 16;
        let auth_len = c.u8()?;
        c.take(6)?;
        let extended = c.u32()?;
        if capabilities & CLIENT_LONG_PASSWORD == 0 {
            mariadb = extended;
        }
        if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            let n = usize::from(auth_len).saturating_sub(8).max(13);
            let part = c.take(n)?;
            // The second part ends with a NUL that is not the scramble's.
            let part = part.strip_suffix(&[0]).unwrap_or(part);
            nonce.extend_from_slice(part);
        }
        if capabilities & CLIENT_PLUGIN_AUTH != 0 {
            plugin = String::from_utf8_lossy(c.nul_str()).into_owned();
        }
    }
    Ok(Handshake {
        version,
        connection_id,
        capabilities,
        mariadb,
        nonce,
        plugin,
    })
}

/// `mysql_native_password`'s answer: SHA1(pw) XOR SHA1(nonce ‖ SHA1(SHA1(pw))); empty for no
/// password.
pub fn scramble_native(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(nonce);
    h.update(stage2);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// The client's answer to the handshake (HandshakeResponse41), as a payload; asks for
/// [`MARIADB_CACHE_METADATA`] where `server` offers it.
pub fn handshake_response(
    user: &str,
    auth: &[u8],
    db: Option<&str>,
    server: &Handshake,
) -> Vec<u8> {
    let server_caps = server.capabilities;
    let mut caps = CLIENT_LONG_PASSWORD
        | CLIENT_FOUND_ROWS
        | CLIENT_LONG_FLAG
        | CLIENT_PROTOCOL_41
        | CLIENT_TRANSACTIONS
        | CLIENT_SECURE_CONNECTION
        | CLIENT_MULTI_STATEMENTS
        | CLIENT_MULTI_RESULTS
        | CLIENT_PLUGIN_AUTH;
    if db.is_some() {
        caps |= CLIENT_CONNECT_WITH_DB;
    }
    caps &= server_caps;
    let mariadb = server.mariadb & MARIADB_CACHE_METADATA;
    if mariadb != 0 {
        // A client speaking MariaDB's extensions says so by clearing CLIENT_MYSQL.
        caps &= !CLIENT_LONG_PASSWORD;
    }
    let mut out = Vec::with_capacity(64 + user.len());
    out.extend_from_slice(&caps.to_le_bytes());
    out.extend_from_slice(&(MAX_PAYLOAD as u32).to_le_bytes());
    out.push(45); // utf8mb4_general_ci
    out.extend_from_slice(&[0; 19]);
    out.extend_from_slice(&mariadb.to_le_bytes());
    out.extend_from_slice(user.as_bytes());
    out.push(0);
    out.push(auth.len() as u8);
    out.extend_from_slice(auth);
    if let Some(db) = db.filter(|_| caps & CLIENT_CONNECT_WITH_DB != 0) {
        out.extend_from_slice(db.as_bytes());
        out.push(0);
    }
    out.extend_from_slice(NATIVE_PASSWORD.as_bytes());
    out.push(0);
    out
}

/// What COM_STMT_PREPARE answered: the statement's id and how many columns and parameters.
pub fn parse_prepare_ok(payload: &[u8]) -> Result<(u32, u16, u16), Malformed> {
    let mut c = Cur::new(payload);
    if c.u8()? != 0 {
        return Err(Malformed("a prepare answer that is not OK".into()));
    }
    let id = c.u32()?;
    let columns = c.u16()?;
    let params = c.u16()?;
    Ok((id, columns, params))
}

/// A column of a result: its name, its type byte and its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub kind: u8,
    pub flags: u16,
}

/// The flag of an UNSIGNED integer column.
pub const UNSIGNED: u16 = 0x20;

/// Parses a column definition.
pub fn column(payload: &[u8]) -> Result<Column, Malformed> {
    let mut c = Cur::new(payload);
    let mut name = Vec::new();
    for i in 0..6 {
        // catalog, schema, table, org_table, name, org_name
        let field = c.lenenc_bytes()?.unwrap_or(&[]);
        if i == 4 {
            name = field.to_vec();
        }
    }
    c.lenenc()?; // the fixed fields' length, 0x0c
    c.u16()?; // character set
    c.u32()?; // column length
    let kind = c.u8()?;
    let flags = c.u16()?;
    Ok(Column {
        name: String::from_utf8_lossy(&name).into_owned(),
        kind,
        flags,
    })
}

/// A binary value of a column of type `kind` as text, as the text protocol would send it;
/// `None` for a type dyno does not read (dates and times).
pub fn value_text(kind: u8, unsigned: bool, v: &[u8]) -> Option<String> {
    let int = |n: usize| -> Option<[u8; 8]> {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(v.get(..n)?);
        let negative = !unsigned && v[n - 1] & 0x80 != 0;
        if negative {
            b[n..].fill(0xff);
        }
        Some(b)
    };
    Some(match kind {
        0x01 | 0x02 | 0x0d | 0x03 | 0x09 | TYPE_LONGLONG => {
            let n = match kind {
                0x01 => 1,
                0x02 | 0x0d => 2,
                0x03 | 0x09 => 4,
                _ => 8,
            };
            let b = int(n)?;
            if unsigned {
                u64::from_le_bytes(b).to_string()
            } else {
                i64::from_le_bytes(b).to_string()
            }
        }
        0x04 => f32::from_le_bytes(v.try_into().ok()?).to_string(),
        0x05 => f64::from_le_bytes(v.try_into().ok()?).to_string(),
        0x07 | 0x0a | 0x0b | 0x0c => return None,
        _ => String::from_utf8_lossy(v).into_owned(),
    })
}

/// True for an EOF packet (not a row that starts with 0xfe: those are longer).
pub fn is_eof(payload: &[u8]) -> bool {
    payload.first() == Some(&0xfe) && payload.len() < 9
}

/// `SERVER_MORE_RESULTS_EXISTS`: another statement's result follows this one's.
const MORE_RESULTS: u16 = 0x8;

/// `SERVER_STATUS_IN_TRANS`: a transaction is open.
const IN_TRANS: u16 = 0x1;

/// The server's status flags in an OK or EOF packet that ends a statement's result; None in
/// another packet, or one too short to say.
fn status(payload: &[u8]) -> Option<u16> {
    let mut c = Cur::new(payload.get(1..).unwrap_or_default());
    match payload.first() {
        Some(0x00) => c.lenenc().and_then(|_| c.lenenc()).and_then(|_| c.u16()),
        Some(0xfe) if is_eof(payload) => c.u16().and_then(|_| c.u16()),
        _ => return None,
    }
    .ok()
}

/// Whether an OK or EOF packet that ends a statement's result says another follows (a text
/// query of several statements, `CLIENT_MULTI_STATEMENTS`). A packet too short to say, says no.
pub fn more_results(payload: &[u8]) -> bool {
    status(payload).is_some_and(|s| s & MORE_RESULTS != 0)
}

/// Whether an OK or EOF packet that ends a statement's result says a transaction is open.
pub fn in_transaction(payload: &[u8]) -> bool {
    status(payload).is_some_and(|s| s & IN_TRANS != 0)
}

/// A parameter of a prepared statement (or what becomes one: an SQL session's [`SqlParam`]).
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    U64(u64),
    I64(i64),
    Bytes(&'a [u8]),
    /// Text the server converts to the type it needs (pgbench's way); `None` is NULL.
    Text(Option<&'a str>),
}

impl<'a> From<engine::driver::SqlParam<'a>> for Param<'a> {
    fn from(p: engine::driver::SqlParam<'a>) -> Param<'a> {
        match p {
            engine::driver::SqlParam::Null => Param::Text(None),
            engine::driver::SqlParam::Int(i) => Param::I64(i),
            engine::driver::SqlParam::Text(t) => Param::Text(Some(t)),
        }
    }
}

/// COM_STMT_EXECUTE's payload for `id` with `params` (a NULL in the bitmap).
/// `sent` holds the parameter types the server last had for this statement: they are sent
/// again only when they differ (libmariadb sends them once per binding), and updated.
pub fn execute_request<'a, P: Copy + Into<Param<'a>>>(
    out: &mut Vec<u8>,
    id: u32,
    params: &[P],
    sent: &mut Vec<[u8; 2]>,
) {
    out.clear();
    out.push(COM_STMT_EXECUTE);
    out.extend_from_slice(&id.to_le_bytes());
    out.push(0); // no cursor
    out.extend_from_slice(&1u32.to_le_bytes());
    if params.is_empty() {
        return;
    }
    let nulls = out.len();
    out.extend(std::iter::repeat_n(0u8, params.len().div_ceil(8)));
    let params = || params.iter().map(|&p| Into::<Param<'a>>::into(p));
    for (i, p) in params().enumerate() {
        if matches!(p, Param::Text(None)) {
            out[nulls + i / 8] |= 1 << (i % 8);
        }
    }
    let type_of = |p: Param<'_>| match p {
        Param::U64(_) => [TYPE_LONGLONG, 0x80],
        Param::I64(_) => [TYPE_LONGLONG, 0],
        Param::Bytes(_) => [TYPE_BLOB, 0],
        Param::Text(_) => [TYPE_VAR_STRING, 0],
    };
    let same =
        sent.len() == params().len() && params().zip(sent.iter()).all(|(p, t)| type_of(p) == *t);
    if same {
        out.push(0); // the types the server has
    } else {
        out.push(1); // types follow
        sent.clear();
        for p in params() {
            sent.push(type_of(p));
            out.extend_from_slice(&type_of(p));
        }
    }
    for p in params() {
        match p {
            Param::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Param::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Param::Bytes(b) => {
                put_lenenc(out, b.len() as u64);
                out.extend_from_slice(b);
            }
            Param::Text(None) => {}
            Param::Text(Some(s)) => {
                put_lenenc(out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
        }
    }
}

/// Where a binary row's values lie in its payload, `types` its columns' types: each a range
/// of the payload (a BIGINT's 8 bytes little-endian, a string's bytes), or `None` for NULL.
pub fn binary_row(
    payload: &[u8],
    types: &[u8],
    out: &mut Vec<Option<std::ops::Range<usize>>>,
) -> Result<(), Malformed> {
    out.clear();
    let mut c = Cur::new(payload);
    if c.u8()? != 0 {
        return Err(Malformed(
            "a binary row that does not start with 0x00".into(),
        ));
    }
    let bitmap = c.take((types.len() + 7 + 2) / 8)?;
    for (i, &t) in types.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            out.push(None);
            continue;
        }
        let v = match t {
            0x01 => c.take(1)?,        // TINY
            0x02 | 0x0d => c.take(2)?, // SHORT, YEAR
            0x03 | 0x09 => c.take(4)?, // LONG, INT24
            0x04 => c.take(4)?,        // FLOAT
            0x05 | TYPE_LONGLONG => c.take(8)?,
            // Strings, blobs, decimals; a NULL is in the bitmap, never here.
            _ => c.lenenc_bytes()?.ok_or_else(|| {
                Malformed("a binary row with a NULL length outside its bitmap".into())
            })?,
        };
        let at = v.as_ptr() as usize - payload.as_ptr() as usize;
        out.push(Some(at..at + v.len()));
    }
    Ok(())
}

/// One binary row: its payload, where each value lies, and its result's columns.
pub struct Row<'a> {
    pub payload: &'a [u8],
    pub at: &'a [Option<std::ops::Range<usize>>],
    pub columns: &'a [Column],
}

impl Row<'_> {
    /// Column `i`'s bytes; `None` for NULL or a column the row lacks.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let r = self.at.get(i)?.clone()?;
        self.payload.get(r)
    }
    /// Column `i` as a BIGINT.
    pub fn u64(&self, i: usize) -> Option<u64> {
        Some(u64::from_le_bytes(self.get(i)?.try_into().ok()?))
    }
}

/// A text row's values (a COM_QUERY result), NULL as `None`.
pub fn text_row(payload: &[u8], columns: usize) -> Result<Vec<Option<String>>, Malformed> {
    let mut c = Cur::new(payload);
    (0..columns)
        .map(|_| {
            Ok(c.lenenc_bytes()?
                .map(|b| String::from_utf8_lossy(b).into_owned()))
        })
        .collect()
}

#[cfg(test)]
pub(super) mod tests;
