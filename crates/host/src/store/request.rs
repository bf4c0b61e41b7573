//! A request frame parsed into what it asks, before the server acts on it: every check of a
//! frame's shape (a key of 8 bytes, a namespace's name, a path in UTF-8, the kind itself) is
//! here, and testable without a socket.

use super::kind;

/// The folder operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FolderOp {
    Mkdir,
    Stat,
    List,
    Rmdir,
}

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Request<'a> {
    /// The token (empty when the host has none).
    Hello(&'a [u8]),
    Open(&'a str),
    Drop(&'a str),
    Begin,
    Commit,
    Info,
    Put(u64, &'a [u8]),
    Get(u64),
    Delete(u64),
    /// Whole 8-byte keys, big-endian, end to end.
    MGet(&'a [u8]),
    /// From a key, at most a count of objects.
    Scan(u64, u32),
    Folder(FolderOp, &'a str),
    Stats,
}

/// What is wrong with a frame; the reply's text.
pub(super) type Malformed = &'static str;

impl<'a> Request<'a> {
    /// Whether a request of kind `k` works on the opened namespace (and needs one).
    pub(super) fn needs_namespace(k: u8) -> bool {
        matches!(
            k,
            kind::PUT
                | kind::GET
                | kind::DELETE
                | kind::MGET
                | kind::SCAN
                | kind::MKDIR
                | kind::STAT
                | kind::LIST
                | kind::RMDIR
        )
    }

    /// The request a frame of kind `k` carrying `body` makes; `Err` with the reply's text for a
    /// malformed one, `Ok(None)` for a kind the host does not know.
    pub(super) fn parse(k: u8, body: &'a [u8]) -> Result<Option<Request<'a>>, Malformed> {
        let key = || -> Result<u64, Malformed> {
            (body.get(..8))
                .map(|k| u64::from_be_bytes(k.try_into().expect("8 bytes")))
                .ok_or("a key is 8 bytes")
        };
        let namespace = || -> Result<&'a str, Malformed> {
            let name = std::str::from_utf8(body).map_err(|_| "a namespace is UTF-8")?;
            if !name.starts_with("dyno_") || name.len() > 200 {
                return Err("a namespace starts with dyno_ (and is at most 200 bytes)");
            }
            Ok(name)
        };
        let folder = |op| -> Result<Request<'a>, Malformed> {
            let path = std::str::from_utf8(body).map_err(|_| "a folder path is UTF-8")?;
            Ok(Request::Folder(op, path))
        };
        Ok(Some(match k {
            kind::HELLO => Request::Hello(body),
            kind::OPEN => Request::Open(namespace()?),
            kind::DROP => Request::Drop(namespace()?),
            kind::BEGIN => Request::Begin,
            kind::COMMIT => Request::Commit,
            kind::INFO => Request::Info,
            kind::PUT => Request::Put(key()?, &body[8..]),
            kind::GET => Request::Get(key()?),
            kind::DELETE => Request::Delete(key()?),
            kind::MGET if !body.len().is_multiple_of(8) => {
                return Err("MGET carries whole 8-byte keys");
            }
            kind::MGET => Request::MGet(body),
            kind::SCAN if body.len() != 12 => {
                return Err("SCAN carries an 8-byte key and a 4-byte count");
            }
            kind::SCAN => Request::Scan(
                key()?,
                u32::from_be_bytes(body[8..12].try_into().expect("4 bytes")),
            ),
            kind::MKDIR => folder(FolderOp::Mkdir)?,
            kind::STAT => folder(FolderOp::Stat)?,
            kind::LIST => folder(FolderOp::List)?,
            kind::RMDIR => folder(FolderOp::Rmdir)?,
            kind::STATS => Request::Stats,
            _ => return Ok(None),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_parse_into_requests_and_malformed_ones_say_why() {
        let put = [&7u64.to_be_bytes()[..], b"value"].concat();
        assert_eq!(
            Request::parse(kind::PUT, &put),
            Ok(Some(Request::Put(7, b"value")))
        );
        assert_eq!(
            Request::parse(kind::GET, &9u64.to_be_bytes()),
            Ok(Some(Request::Get(9)))
        );
        assert_eq!(Request::parse(kind::GET, b"short"), Err("a key is 8 bytes"));
        assert_eq!(
            Request::parse(kind::OPEN, b"dyno_x"),
            Ok(Some(Request::Open("dyno_x")))
        );
        assert!(Request::parse(kind::OPEN, b"other").is_err());
        assert_eq!(
            Request::parse(kind::DROP, &[0xff]),
            Err("a namespace is UTF-8")
        );
        let scan = [&5u64.to_be_bytes()[..], &100u32.to_be_bytes()].concat();
        assert_eq!(
            Request::parse(kind::SCAN, &scan),
            Ok(Some(Request::Scan(5, 100)))
        );
        assert_eq!(
            Request::parse(kind::SCAN, &[0; 8]),
            Err("SCAN carries an 8-byte key and a 4-byte count")
        );
        assert_eq!(
            Request::parse(kind::MGET, &[0; 12]),
            Err("MGET carries whole 8-byte keys")
        );
        assert_eq!(
            Request::parse(kind::LIST, b"a/b"),
            Ok(Some(Request::Folder(FolderOp::List, "a/b")))
        );
        assert_eq!(Request::parse(0x7f, b""), Ok(None));
        assert!(Request::needs_namespace(kind::MKDIR));
        assert!(!Request::needs_namespace(kind::HELLO));
    }
}
