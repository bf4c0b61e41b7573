//! PostgreSQL's frontend/backend messages as [`Wire`](super::wire::Wire) writes and reads them
//! (protocol 3.0): what a statement's Bind carries, and the replies' bodies read apart. No I/O
//! here; the readers of what a server sent are property-tested.

use engine::driver::{ErrorClass, OpError, SqlParam};
use std::ops::Range;

/// A message the server sent that dyno cannot read.
#[derive(Debug, PartialEq)]
pub struct Malformed(pub &'static str);

pub fn malformed(context: &str, m: Malformed) -> OpError {
    OpError::new(
        ErrorClass::Protocol,
        format!("postgres: {context}: {}", m.0),
    )
}

/// An ErrorResponse as an error of its class (`ERROR 40001: …`: the sql suite tells conflicts
/// apart by the code).
pub fn server_err(context: &str, body: &[u8]) -> OpError {
    let (code, message) = parse_error(body);
    let class = match code.as_str() {
        "57014" => ErrorClass::Timeout,
        c if c.starts_with("53") => ErrorClass::Full,
        c if c.starts_with("28") => ErrorClass::Refused,
        _ => ErrorClass::Application,
    };
    OpError::new(
        class,
        format!("postgres: {context}: ERROR {code}: {message}"),
    )
}

/// An ErrorResponse's SQLSTATE and message (empty where absent).
pub fn parse_error(body: &[u8]) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    let mut rest = body;
    while let [field, tail @ ..] = rest {
        if *field == 0 {
            break;
        }
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let text = String::from_utf8_lossy(&tail[..end]).into_owned();
        match field {
            b'C' => code = text,
            b'M' => message = text,
            _ => {}
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    (code, message)
}

/// A DataRow's values: where each lies in `body` (`None` for NULL).
pub fn parse_data_row(body: &[u8], at: &mut Vec<Option<Range<usize>>>) -> Result<(), Malformed> {
    at.clear();
    let short = Malformed("a data row shorter than its lengths");
    let n = u16::from_be_bytes(body.get(..2).ok_or(short)?.try_into().unwrap_or_default());
    let mut pos = 2;
    for _ in 0..n {
        let len = body
            .get(pos..pos + 4)
            .ok_or(Malformed("a data row cut short"))?;
        let len = i32::from_be_bytes(len.try_into().unwrap_or_default());
        pos += 4;
        if len < 0 {
            at.push(None);
            continue;
        }
        let end = pos + len as usize;
        if end > body.len() {
            return Err(Malformed("a data row's value past its end"));
        }
        at.push(Some(pos..end));
        pos = end;
    }
    Ok(())
}

/// A RowDescription's column names.
pub fn parse_row_description(body: &[u8]) -> Result<Vec<String>, Malformed> {
    let cut = Malformed("a row description cut short");
    let n = u16::from_be_bytes(body.get(..2).ok_or(cut)?.try_into().unwrap_or_default());
    let mut names = Vec::with_capacity(usize::from(n).min(body.len()));
    let mut rest = &body[2..];
    for _ in 0..n {
        let end = (rest.iter().position(|&b| b == 0)).ok_or(Malformed("a column name unended"))?;
        names.push(String::from_utf8_lossy(&rest[..end]).into_owned());
        // Table OID, column number, type OID, type size, type modifier, format: 18 bytes.
        rest = (rest.get(end + 1 + 18..)).ok_or(Malformed("a row description cut short"))?;
    }
    Ok(names)
}

/// The rows a CommandComplete's tag counts (`SELECT 5`, `INSERT 0 1`, `UPDATE 3`); 0 for a tag
/// without a count (`BEGIN`).
pub fn tag_rows(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or(&[]);
    std::str::from_utf8(last)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Starts a message of type `kind` in `out`; [`end`] writes its length.
pub fn begin(out: &mut Vec<u8>, kind: u8) -> usize {
    out.push(kind);
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    at
}

pub fn end(out: &mut [u8], at: usize) {
    let len = (out.len() - at) as i32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

pub fn cstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

/// A statement's parameter as Bind carries it. Its kind's [`Arg::FORMAT`] is the format of
/// every parameter and result column of the statement: text (0) for the sql family, whose
/// parameters the server reads as the types it infers; binary (1) for the kv family, whose
/// types dyno knows (bigint keys, bytea values: no hex text twice the value's size).
pub trait Arg {
    const FORMAT: u8;
    /// Writes the value's length and bytes (-1 alone for NULL).
    fn put(&self, out: &mut Vec<u8>);
}

impl Arg for SqlParam<'_> {
    const FORMAT: u8 = 0;
    fn put(&self, out: &mut Vec<u8>) {
        match self {
            SqlParam::Null => out.extend_from_slice(&(-1i32).to_be_bytes()),
            SqlParam::Int(i) => {
                let mut digits = [0u8; 20];
                sized(out, int_text(*i, &mut digits));
            }
            SqlParam::Text(s) => sized(out, s.as_bytes()),
        }
    }
}

/// A kv statement's parameter, in binary.
pub enum Bin<'a> {
    /// bigint.
    Int8(i64),
    /// bytea.
    Bytes(&'a [u8]),
    /// bigint[]: a one-dimensional array without NULLs (keys: a u64's bits are bigint's).
    Int8s(&'a [u64]),
}

/// The type OID of bigint (an array's elements say it).
const INT8_OID: i32 = 20;

impl Arg for Bin<'_> {
    const FORMAT: u8 = 1;
    fn put(&self, out: &mut Vec<u8>) {
        match self {
            Bin::Int8(i) => sized(out, &i.to_be_bytes()),
            Bin::Bytes(b) => sized(out, b),
            Bin::Int8s(keys) => {
                let len = 20 + 12 * keys.len();
                out.extend_from_slice(&(len as i32).to_be_bytes());
                // Dimensions, has-NULLs, element type; the dimension's length and lower bound.
                for word in [1, 0, INT8_OID, keys.len() as i32, 1] {
                    out.extend_from_slice(&word.to_be_bytes());
                }
                for k in *keys {
                    out.extend_from_slice(&8i32.to_be_bytes());
                    out.extend_from_slice(&k.to_be_bytes());
                }
            }
        }
    }
}

fn sized(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as i32).to_be_bytes());
    out.extend_from_slice(b);
}

/// Bind (the unnamed portal; parameters and results in `A`'s format), Execute (all rows), Sync.
pub fn encode_execute<A: Arg>(out: &mut Vec<u8>, stmt: &str, params: &[A]) {
    encode_bind_execute(out, stmt, params);
    out.extend_from_slice(SYNC);
}

/// Sync: the end of a request (or of a pipeline's segment); the server answers ReadyForQuery.
pub const SYNC: &[u8] = &[b'S', 0, 0, 0, 4];

/// Bind and Execute of prepared statement `stmt` with `params`, without the Sync that ends a
/// request: a pipeline's statement.
pub fn encode_bind_execute<A: Arg>(out: &mut Vec<u8>, stmt: &str, params: &[A]) {
    encode_bind(out, stmt, params);
    out.extend_from_slice(EXECUTE);
}

/// Bind of statement `stmt` (`""`: the unnamed one) with `params` to the unnamed portal.
fn encode_bind<A: Arg>(out: &mut Vec<u8>, stmt: &str, params: &[A]) {
    let at = begin(out, b'B');
    out.push(0);
    cstr(out, stmt);
    out.extend_from_slice(&[0, 1, 0, A::FORMAT]);
    out.extend_from_slice(&(params.len() as u16).to_be_bytes());
    for p in params {
        p.put(out);
    }
    out.extend_from_slice(&[0, 1, 0, A::FORMAT]);
    end(out, at);
}

/// Execute of the unnamed portal, every row.
const EXECUTE: &[u8] = &[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0];

/// A run of `sql` as an unnamed statement (pgbench's `-M extended`, as libpq's
/// `PQsendQueryParams` sends it): Parse (its parameters' types the server's inference), Bind,
/// Describe of the portal (its columns come back with the rows), Execute; without the Sync.
pub fn encode_unnamed(out: &mut Vec<u8>, sql: &str, params: &[SqlParam<'_>]) {
    let at = begin(out, b'P');
    out.push(0);
    cstr(out, sql);
    out.extend_from_slice(&[0, 0]);
    end(out, at);
    encode_bind(out, "", params);
    out.extend_from_slice(&[b'D', 0, 0, 0, 6, b'P', 0]);
    out.extend_from_slice(EXECUTE);
}

/// A Query of `parts` with each of `params` written between two of them, as pgbench's `-M
/// simple` writes a variable's value into the text: a whole number in decimal, text as it is
/// (a script quotes what must be quoted), NULL as `NULL`.
pub fn encode_simple<S: AsRef<str>>(out: &mut Vec<u8>, parts: &[S], params: &[SqlParam<'_>]) {
    let at = begin(out, b'Q');
    engine::driver::splice(out, parts, params);
    out.push(0);
    end(out, at);
}

/// `i` in decimal, written into `buf` (no allocation).
fn int_text(i: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = i.unsigned_abs();
    let mut pos = buf.len();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        pos -= 1;
        buf[pos] = b'-';
    }
    &buf[pos..]
}

/// A bigint column in binary, as a u64 key (the same 64 bits).
pub fn int8(v: Option<&[u8]>) -> Option<u64> {
    Some(u64::from_be_bytes(v?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bind's body after its type and length, and what follows it (Execute, Sync).
    fn bind_of(out: &[u8]) -> (&[u8], &[u8]) {
        assert_eq!(out[0], b'B');
        let len = i32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
        (&out[5..1 + len], &out[1 + len..])
    }

    /// Splits `out` into its messages: each type and body.
    fn messages(mut out: &[u8]) -> Vec<(u8, &[u8])> {
        let mut got = Vec::new();
        while !out.is_empty() {
            let len = i32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
            got.push((out[0], &out[5..1 + len]));
            out = &out[1 + len..];
        }
        got
    }

    #[test]
    fn an_extended_run_is_parse_bind_describe_execute_of_the_unnamed_statement() {
        let mut out = Vec::new();
        encode_unnamed(&mut out, "SELECT $1", &[SqlParam::Int(7)]);
        let got = messages(&out);
        let kinds: Vec<u8> = got.iter().map(|m| m.0).collect();
        assert_eq!(kinds, b"PBDE");
        assert_eq!(got[0].1, b"\0SELECT $1\0\0\0");
        assert_eq!(&got[1].1[..2], b"\0\0", "the unnamed portal and statement");
        assert_eq!(got[2].1, b"P\0", "the portal described");
    }

    #[test]
    fn a_simple_run_writes_the_values_into_the_text_as_pgbench_does() {
        let mut out = Vec::new();
        let parts = ["SELECT ", ", ", ", '", "'"].map(String::from);
        let params = [SqlParam::Int(-42), SqlParam::Null, SqlParam::Text("x y")];
        encode_simple(&mut out, &parts, &params);
        assert_eq!(messages(&out), [(b'Q', &b"SELECT -42, NULL, 'x y'\0"[..])]);
    }

    #[test]
    fn a_statement_is_bind_execute_sync_with_text_everywhere() {
        let mut out = Vec::new();
        let params = [SqlParam::Int(-42), SqlParam::Null, SqlParam::Text("ab")];
        encode_execute(&mut out, "dyno3", &params);
        let bind: Vec<u8> = [
            &b"\0dyno3\0"[..],
            &[0, 1, 0, 0, 0, 3],
            &[0, 0, 0, 3],
            b"-42",
            &[0xff, 0xff, 0xff, 0xff],
            &[0, 0, 0, 2],
            b"ab",
            &[0, 1, 0, 0],
        ]
        .concat();
        let (got, rest) = bind_of(&out);
        assert_eq!(got, &bind[..]);
        assert_eq!(rest, [b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, b'S', 0, 0, 0, 4]);
    }

    #[test]
    fn a_kv_statement_is_binary_both_ways() {
        let mut out = Vec::new();
        let keys = [1, u64::MAX - 1];
        encode_execute(
            &mut out,
            "k",
            &[Bin::Int8(258), Bin::Bytes(b"v"), Bin::Int8s(&keys)],
        );
        let array: Vec<u8> = [
            &[0, 0, 0, 44][..],
            &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 2, 0, 0, 0, 1],
            &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1],
            &[0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe],
        ]
        .concat();
        let bind: Vec<u8> = [
            &b"\0k\0"[..],
            &[0, 1, 0, 1, 0, 3],
            &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 1, 2],
            &[0, 0, 0, 1],
            b"v",
            &array,
            &[0, 1, 0, 1],
        ]
        .concat();
        assert_eq!(bind_of(&out).0, &bind[..]);
        assert_eq!(int8(Some(&258u64.to_be_bytes())), Some(258));
        assert_eq!(int8(Some(b"258")), None);
    }

    #[test]
    fn replies_are_read_as_the_protocol_writes_them() {
        let mut at = Vec::new();
        let row = [&[0, 3][..], &[0, 0, 0, 2], b"ab", &[0xff; 4], &[0, 0, 0, 0]].concat();
        parse_data_row(&row, &mut at).unwrap();
        assert_eq!(at, vec![Some(6..8), None, Some(16..16)]);
        let mut desc = vec![0, 2];
        for name in ["aid", "abalance"] {
            desc.extend_from_slice(name.as_bytes());
            desc.extend_from_slice(&[0; 19]);
        }
        assert_eq!(parse_row_description(&desc).unwrap(), ["aid", "abalance"]);
        assert_eq!(tag_rows(b"SELECT 5\0"), 5);
        assert_eq!(tag_rows(b"INSERT 0 1\0"), 1);
        assert_eq!(tag_rows(b"BEGIN\0"), 0);
        let err = b"SERROR\0VERROR\0C40001\0Mcould not serialize access\0\0";
        let e = server_err("execute", err);
        assert_eq!(e.class, ErrorClass::Application);
        assert_eq!(
            e.message,
            "postgres: execute: ERROR 40001: could not serialize access"
        );
        assert_eq!(server_err("x", b"C57014\0\0").class, ErrorClass::Timeout);
    }

    proptest! {
        #[test]
        fn any_reply_body_parses_or_fails_cleanly(b in proptest::collection::vec(any::<u8>(), 0..96)) {
            let mut at = Vec::new();
            if parse_data_row(&b, &mut at).is_ok() {
                for r in at.iter().flatten() {
                    prop_assert!(r.end <= b.len());
                }
            }
            let _ = parse_row_description(&b);
            let _ = parse_error(&b);
            let _ = tag_rows(&b);
            let _ = int8(Some(&b));
        }

        #[test]
        fn integers_are_written_as_rust_writes_them(i in any::<i64>()) {
            let mut buf = [0u8; 20];
            let want = i.to_string();
            prop_assert_eq!(int_text(i, &mut buf), want.as_bytes());
        }
    }
}
