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
