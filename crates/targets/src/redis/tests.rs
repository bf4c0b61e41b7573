use super::*;

use proptest::prelude::*;

/// Reads replies from `bytes` until an error or the end: never a panic, and `bulk` never
/// larger than what arrived.
fn read_all(bytes: &[u8]) -> Vec<Result<Reply, OpError>> {
    let mut input = std::io::Cursor::new(bytes);
    let (mut line, mut bulk) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    // Each reply consumes at least 3 bytes, so this many reads always reach the end.
    for _ in 0..=bytes.len() / 3 + 1 {
        let r = read_reply(&mut input, &mut line, &mut bulk);
        assert!(
            bulk.len() <= bytes.len(),
            "bulk {} of {}",
            bulk.len(),
            bytes.len()
        );
        let stop = r.is_err();
        out.push(r);
        if stop {
            break;
        }
    }
    out
}

#[test]
fn replies_as_redis_sends_them() {
    let r = read_all(b"+OK\r\n$5\r\nhello\r\n$-1\r\n:42\r\n*2\r\n-ERR no\r\n");
    assert!(matches!(r[0], Ok(Reply::Status)));
    assert!(matches!(r[1], Ok(Reply::Bulk(true))));
    assert!(matches!(r[2], Ok(Reply::Bulk(false))));
    assert!(matches!(r[3], Ok(Reply::Int(42))));
    assert!(matches!(r[4], Ok(Reply::Array(2))));
    assert!(matches!(&r[5], Ok(Reply::Error(e)) if e == "ERR no"));
    // A claimed 500 MiB bulk with 3 bytes behind it: an error, and no 500 MiB buffer.
    let r = read_all(b"$524288000\r\nabc");
    assert_eq!(r[0].as_ref().unwrap_err().class, ErrorClass::Reset);
}

const VALID: &[u8] = b"+OK\r\n$5\r\nhello\r\n$-1\r\n:42\r\n*2\r\n$3\r\nabc\r\n$0\r\n\r\n-ERR x\r\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_bytes_are_replies_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        read_all(&bytes);
    }

    #[test]
    fn mutated_replies_are_replies_or_an_error(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut in any::<usize>(),
    ) {
        let mut bytes = VALID.to_vec();
        for (at, b) in edits {
            let at = at % bytes.len();
            bytes[at] = b;
        }
        bytes.truncate(cut % (bytes.len() + 1));
        read_all(&bytes);
    }
}

#[test]
fn sentinel_urls_name_their_sentinels_and_master() {
    let none = BTreeMap::new();
    let c = configure_sentinel("//127.0.0.1:26379,127.0.0.1:26380/m", &none).unwrap();
    assert_eq!(c.topology(), "loopback");
    for bad in [
        "//127.0.0.1:26379",
        "//127.0.0.1/m",
        "///m",
        "//127.0.0.1:1/",
    ] {
        let e = configure_sentinel(bad, &none).map(|_| ()).unwrap_err();
        assert!(
            e.hint.unwrap().contains("redis+sentinel://HOST:PORT"),
            "{bad}"
        );
    }
}

/// A write transaction whose held commands are lost with the connection (here: the server
/// hangs up once 16 KiB of them have arrived) is cut: the write that was sending fails on the
/// connection, the next writes and the commit fail as cut (none was applied), rather than
/// going out as plain writes and the commit succeeding; the next transaction starts clean.
#[test]
fn a_transaction_cut_with_its_connection_fails_to_its_commit() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.windows(5).any(|w| w == b"MULTI") {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "no MULTI came");
            got.extend_from_slice(&buf[..n]);
        }
        s.write_all(b"+OK\r\n").unwrap();
        let mut held = 0;
        while held < HOLD_BYTES {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "the held commands did not come");
            held += n;
        }
    });
    let mut session = RedisSession::new(Conn::open(addr, None).unwrap(), "t:", None);
    session.begin(TxMode::Write).unwrap();
    let value = [7u8; 300];
    let failed = (0..1000u64)
        .find_map(|k| session.put(k, &value).err())
        .expect("a put sent the held commands to a server that hung up");
    assert!(failed.class.is_connection(), "{failed}");
    server.join().unwrap();
    for e in [
        session.put(5000, &value).unwrap_err(),
        session.delete(1).unwrap_err(),
        session.commit().unwrap_err(),
    ] {
        assert_eq!(e.class, ErrorClass::Reset, "{e}");
        assert!(e.message.contains("none was applied"), "{e}");
    }
    // The cut ends at the commit: a read-only transaction commits nothing.
    session.begin(TxMode::Read).unwrap();
    session.commit().unwrap();
}

/// A reply the driver cannot read, or one of another shape than asked for (its elements unread),
/// leaves the connection out of step (its next read would be the rest of this one): every later
/// request fails at once, and none is sent.
#[test]
fn a_malformed_or_misshapen_reply_leaves_the_connection_sending_nothing_more() {
    for (reply, class) in [
        (&b"?not RESP\r\n"[..], ErrorClass::Protocol),
        (&b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"[..], ErrorClass::Protocol),
    ] {
        let (first, later, more) = after_reply(reply);
        assert_eq!(first.class, class, "{first}");
        for e in later {
            assert_eq!(e.class, ErrorClass::Reset, "{e}");
            assert!(e.message.contains("sends nothing more"), "{e}");
        }
        assert_eq!(more, 0, "bytes sent after the reply");
    }
}

/// A GET answered by `reply`: its error, the errors of a GET and a SET after it, and the bytes
/// the server received after the first command.
fn after_reply(reply: &'static [u8]) -> (OpError, Vec<OpError>, usize) {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "no command came");
        s.write_all(reply).unwrap();
        // Whatever else arrives until the client hangs up (bounded by its read timeout).
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut more = 0;
        while let Ok(n @ 1..) = s.read(&mut buf) {
            more += n;
        }
        more
    });
    let mut session = RedisSession::new(Conn::open(addr, None).unwrap(), "t:", None);
    let mut out = Vec::new();
    let first = session.get(1, &mut out).unwrap_err();
    let later = vec![
        session.get(2, &mut out).unwrap_err(),
        session.put(3, b"v").unwrap_err(),
    ];
    drop(session);
    (first, later, server.join().unwrap())
}
