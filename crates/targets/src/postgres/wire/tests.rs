use super::*;
use std::time::Instant;

/// A server that logs a client in (no cancel key) and answers its first request with what
/// `answer` writes; what it then reads (the cancel request, if one comes).
fn server(
    answer: impl FnOnce(&mut std::net::TcpStream) + Send + 'static,
) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let mut s = testkit::accept_within(&l, Duration::from_secs(10));
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut startup = [0u8; 512];
        let _ = s.read(&mut startup).unwrap();
        // AuthenticationOk, ReadyForQuery; then the statement.
        s.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 0, b'Z', 0, 0, 0, 5, b'I'])
            .unwrap();
        let _ = s.read(&mut startup).unwrap();
        answer(&mut s);
    });
    (addr, t)
}

const LOGIN: Login<'static> = Login {
    user: "dyno",
    password: None,
    database: None,
};

/// A server that answers with notices and nothing else, as fast as it can, for ever: the
/// reply's bound ends it (the driver's, counting messages that come without a wait, or the
/// stream's, at a wait), and the session sends nothing more.
#[test]
fn a_reply_of_notices_alone_ends_at_its_bound() {
    let (addr, t) = server(|s| {
        // Empty NoticeResponses, a thousand a write, for 5 s at most, while the client reads.
        let notices: Vec<u8> = [b'N', 0, 0, 0, 5, 0].repeat(1000);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if s.write_all(&notices).is_err() {
                return;
            }
        }
    });
    let mut w = Wire::open_within(addr, &LOGIN, Duration::from_millis(300)).unwrap();
    let at = Instant::now();
    let e = w.batch("select 1").unwrap_err();
    assert_eq!(e.class, ErrorClass::Timeout, "{e}");
    assert!(
        e.message.contains("no end to the reply within 0.3 s"),
        "{e}"
    );
    assert!(at.elapsed() < Duration::from_secs(3), "{:?}", at.elapsed());
    assert!(!w.usable());
    drop(w);
    t.join().unwrap();
}

#[test]
fn a_reply_that_does_not_come_in_time_cancels_its_statement() {
    use std::net::TcpListener;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let key = *b"\0\0\x30\x39SeCr";
    let server = std::thread::spawn(move || {
        let mut s = testkit::accept_within(&l, Duration::from_secs(10));
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut startup = [0u8; 512];
        let _ = s.read(&mut startup).unwrap();
        // AuthenticationOk, BackendKeyData, ReadyForQuery; then the statement, unanswered.
        let mut login = vec![b'R', 0, 0, 0, 8, 0, 0, 0, 0, b'K', 0, 0, 0, 12];
        login.extend_from_slice(&key);
        login.extend_from_slice(&[b'Z', 0, 0, 0, 5, b'I']);
        s.write_all(&login).unwrap();
        let _ = s.read(&mut startup).unwrap();
        let mut c = testkit::accept_within(&l, Duration::from_secs(10));
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = [0u8; 16];
        c.read_exact(&mut got).unwrap();
        drop(s);
        got
    });
    let login = Login {
        user: "dyno",
        password: None,
        database: None,
    };
    let mut w = Wire::open_within(addr, &login, Duration::from_millis(200)).unwrap();
    let e = w.batch("select pg_sleep(60)").unwrap_err();
    assert_eq!(e.class, ErrorClass::Timeout, "{e}");
    let got = server.join().unwrap();
    // Length 16, then the code 1234 << 16 | 5678, then the key as the server gave it.
    assert_eq!(&got[..8], [0, 0, 0, 16, 4, 210, 22, 46]);
    assert_eq!(&got[8..], b"\0\0\x30\x39SeCr");
}

/// A statement given a longer timeout (making a large scale's tables) waits for a reply that
/// comes after the driver's own bound, and does not time out; without it, it does.
#[test]
fn a_longer_timeout_waits_for_a_slow_reply() {
    for longer in [true, false] {
        let (addr, t) = server(|s| {
            std::thread::sleep(Duration::from_millis(800));
            // CommandComplete "SELECT 0", ReadyForQuery (idle); a client gone is no matter.
            let mut reply = vec![b'C', 0, 0, 0, 13];
            reply.extend_from_slice(b"SELECT 0\0");
            reply.extend_from_slice(&[b'Z', 0, 0, 0, 5, b'I']);
            let _ = s.write_all(&reply);
        });
        let mut w = Wire::open_within(addr, &LOGIN, Duration::from_millis(300)).unwrap();
        if longer {
            w.set_timeout(Duration::from_secs(5));
        }
        let r = w.batch("select 1");
        match longer {
            true => assert!(r.is_ok(), "{r:?}"),
            false => assert_eq!(r.unwrap_err().class, ErrorClass::Timeout),
        }
        drop(w);
        t.join().unwrap();
    }
}

/// A message is read whole however it comes: in the buffer with others, larger than the
/// buffer, or a byte at a time.
#[test]
fn messages_are_read_whole_however_they_arrive() {
    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }
    fn data_row(value: &[u8]) -> Vec<u8> {
        let mut body = vec![0, 1];
        body.extend_from_slice(&(value.len() as u32).to_be_bytes());
        body.extend_from_slice(value);
        message(b'D', &body)
    }
    let big: Vec<u8> = (0..40_000).map(|i| b'a' + (i % 26) as u8).collect();
    let small = b"twelve bytes".to_vec();
    let (big_sent, small_sent) = (big.clone(), small.clone());
    let (addr, t) = server(move |s| {
        s.set_nodelay(true).unwrap();
        // RowDescription of one text column "v"; then a row larger than the 16 KiB buffer.
        let mut first = message(
            b'T',
            b"\0\x01v\0\0\0\0\0\0\0\0\0\0\x19\xff\xff\xff\xff\xff\xff\0\0",
        );
        first.extend(data_row(&big_sent));
        s.write_all(&first).unwrap();
        // A row a byte at a time, then the end of the reply in one write.
        for b in data_row(&small_sent) {
            s.write_all(&[b]).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut end = message(b'C', b"SELECT 2\0");
        end.extend(message(b'Z', b"I"));
        s.write_all(&end).unwrap();
        let mut rest = [0u8; 64];
        let _ = s.read(&mut rest);
    });
    let mut w = Wire::open_within(addr, &LOGIN, Duration::from_secs(5)).unwrap();
    let mut got: Vec<(String, Option<String>)> = Vec::new();
    let rows = w
        .simple(
            &["select v".to_string()],
            &[],
            Some(&mut |_, row: &engine::driver::SqlRow<'_>| {
                for (name, value) in row {
                    got.push((name.to_string(), value.map(str::to_string)));
                }
            }),
        )
        .unwrap();
    assert_eq!(rows, 2);
    let want = [
        String::from_utf8(big).unwrap(),
        String::from_utf8(small).unwrap(),
    ];
    assert_eq!(got.len(), 2);
    for ((name, value), want) in got.iter().zip(&want) {
        assert_eq!(name, "v");
        assert_eq!(value.as_deref(), Some(want.as_str()));
    }
    assert!(w.usable());
    drop(w);
    t.join().unwrap();
}
