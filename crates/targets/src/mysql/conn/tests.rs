use super::*;
use crate::mysql::proto::tests::{MARIADB_HANDSHAKE, hex};
use std::net::{TcpListener, TcpStream};

/// One packet's payload, read whole.
fn packet(s: &mut TcpStream) -> Vec<u8> {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).unwrap();
    let mut p = vec![0; usize::from(h[0]) | usize::from(h[1]) << 8];
    s.read_exact(&mut p).unwrap();
    p
}

/// Accepts a connection and logs it in (the handshake of a real MariaDB, connection ID 4).
fn logged_in(l: &TcpListener) -> TcpStream {
    let mut s = testkit::accept_within(l, Duration::from_secs(10));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let hello = hex(MARIADB_HANDSHAKE);
    s.write_all(&[hello.len() as u8, 0, 0, 0]).unwrap();
    s.write_all(&hello).unwrap();
    packet(&mut s);
    s.write_all(&[7, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0]).unwrap();
    s
}

/// A server on a free loopback port: `run` given its listener on a thread of its own.
fn server<T: Send + 'static>(
    run: impl FnOnce(TcpListener) -> T + Send + 'static,
) -> (std::net::SocketAddr, std::thread::JoinHandle<T>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    (addr, std::thread::spawn(move || run(l)))
}

/// A server that trickles a result for ever (a row each 10 ms, each read in time): the
/// reply's bound cuts it off, and the connection sends nothing more.
#[test]
fn a_reply_that_never_ends_is_cut_off_at_its_bound() {
    let (addr, server) = server(|l| {
        let mut s = logged_in(&l);
        packet(&mut s);
        let mut send = |seq: usize, p: &[u8]| {
            let mut b = vec![p.len() as u8, 0, 0, seq as u8];
            b.extend_from_slice(p);
            s.write_all(&b).is_ok()
        };
        // One column, `a`, a VAR_STRING; the EOF after the definitions; then rows.
        let column = [
            3, b'd', b'e', b'f', 0, 0, 0, 1, b'a', 0, 0x0c, 0x21, 0, 1, 0, 0, 0, 0xfd, 0, 0, 0, 0,
            0,
        ];
        send(1, &[1, 1]);
        send(2, &column);
        send(3, &[0xfe, 0, 0, 2, 0]);
        for seq in 4..504 {
            if !send(seq, &[1, b'x']) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let mut c = Conn::open_within(addr, ("dyno", "", None), Duration::from_millis(300)).unwrap();
    // No statement to kill on this server.
    c.killer = None;
    let at = std::time::Instant::now();
    let e = c.query("SELECT a FROM t").unwrap_err();
    assert_eq!(e.class, ErrorClass::Timeout, "{e}");
    assert!(e.message.contains("no end to the reply"), "{e}");
    assert!(at.elapsed() < Duration::from_secs(3), "{:?}", at.elapsed());
    assert!(!c.usable());
    drop(c);
    server.join().unwrap();
}

#[test]
fn a_reply_that_does_not_come_in_time_kills_its_statement() {
    let (addr, server) = server(|l| {
        let mut s = logged_in(&l);
        let asked = packet(&mut s);
        // Unanswered; then the killer comes on a connection of its own.
        let mut k = logged_in(&l);
        let kill = packet(&mut k);
        k.write_all(&[7, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        drop(s);
        (asked, kill)
    });
    let mut c = Conn::open_within(addr, ("dyno", "", None), Duration::from_millis(200)).unwrap();
    let Err(e) = c.query("SELECT SLEEP(60)") else {
        panic!("a reply came")
    };
    assert_eq!(e.class, ErrorClass::Timeout, "{e}");
    let (asked, kill) = server.join().unwrap();
    assert_eq!(asked, b"\x03SELECT SLEEP(60)");
    assert_eq!(kill, b"\x03KILL QUERY 4");
    // Once: the connection's killer is spent.
    assert!(c.killer.is_none());
    // A late reply would answer the next request: the connection sends nothing more.
    assert!(!c.usable());
    let e = c.query("SELECT 1").unwrap_err();
    assert_eq!(e.class, ErrorClass::Reset, "{e}");
    assert!(e.message.contains("failed before"), "{e}");
}

/// A statement given a longer timeout (making a large scale's tables) waits for an answer that
/// comes after the connection's own bound; without it, it times out.
#[test]
fn a_longer_timeout_waits_for_a_slow_answer() {
    for longer in [true, false] {
        let (addr, server) = server(|l| {
            let mut s = logged_in(&l);
            packet(&mut s);
            std::thread::sleep(Duration::from_millis(800));
            // OK; a client gone is no matter.
            let _ = s.write_all(&[7, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0]);
        });
        let mut c =
            Conn::open_within(addr, ("dyno", "", None), Duration::from_millis(300)).unwrap();
        // No statement to kill on this server.
        c.killer = None;
        if longer {
            c.set_timeout(Duration::from_secs(5));
        }
        let r = c.query("CREATE INDEX k_1 ON sbtest1(k)");
        match longer {
            true => assert!(r.is_ok(), "{:?}", r.err()),
            false => assert_eq!(r.err().map(|e| e.class), Some(ErrorClass::Timeout)),
        }
        drop(c);
        server.join().unwrap();
    }
}
