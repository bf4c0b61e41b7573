//! The benchmark host's limits: each broken rule gets a clear error on that connection only,
//! while other connections keep working.

use host::store::{MAX_FRAME, StoreServer, expect, kind, write_frame};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

fn connect(s: &StoreServer) -> TcpStream {
    let c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c
}

/// A client that works: opens a namespace, puts and gets one object.
fn works(s: &StoreServer, token: Option<&str>) {
    let mut c = connect(s);
    let mut body = Vec::new();
    if let Some(t) = token {
        write_frame(&mut c, kind::HELLO, &[t.as_bytes()]).unwrap();
        expect(&mut c, &mut body, kind::OK).unwrap();
    }
    write_frame(&mut c, kind::OPEN, &[b"dyno_test"]).unwrap();
    expect(&mut c, &mut body, kind::OK).unwrap();
    write_frame(&mut c, kind::PUT, &[&7u64.to_be_bytes(), b"seven"]).unwrap();
    expect(&mut c, &mut body, kind::OK).unwrap();
    write_frame(&mut c, kind::GET, &[&7u64.to_be_bytes()]).unwrap();
    expect(&mut c, &mut body, kind::VALUE).unwrap();
    assert_eq!(body, b"seven");
}

fn error_of(c: &mut TcpStream) -> String {
    let mut body = Vec::new();
    let e = expect(c, &mut body, kind::OK).unwrap_err();
    e.to_string()
}

#[test]
fn an_oversized_frame_is_refused_and_others_go_on() {
    let s = StoreServer::start(TcpListener::bind("127.0.0.1:0").unwrap(), None).unwrap();
    let mut held = connect(&s);
    write_frame(&mut held, kind::OPEN, &[b"dyno_test"]).unwrap();
    let mut bad = connect(&s);
    bad.write_all(&(MAX_FRAME + 1).to_be_bytes()).unwrap();
    let e = error_of(&mut bad);
    assert!(
        e.contains(&format!(
            "a frame of {} bytes exceeds the limit of {MAX_FRAME}",
            MAX_FRAME + 1
        )),
        "{e}"
    );
    works(&s, None);
    let mut body = Vec::new();
    expect(&mut held, &mut body, kind::OK).unwrap();
}

#[test]
fn garbage_closes_only_its_connection() {
    let s = StoreServer::start(TcpListener::bind("127.0.0.1:0").unwrap(), None).unwrap();
    let mut bad = connect(&s);
    bad.write_all(&[0, 0, 0, 3, 0x7f, 1, 2]).unwrap();
    assert!(error_of(&mut bad).contains("unknown frame kind 0x7f"));
    let mut bad = connect(&s);
    write_frame(&mut bad, kind::OPEN, &[b"not_ours"]).unwrap();
    assert!(error_of(&mut bad).contains("a namespace starts with dyno_"));
    let mut bad = connect(&s);
    write_frame(&mut bad, kind::GET, &[b"k"]).unwrap();
    assert!(error_of(&mut bad).contains("no namespace: send OPEN first"));
    works(&s, None);
}

#[test]
fn a_wrong_or_missing_token_is_refused() {
    let s = StoreServer::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        Some("right".into()),
    )
    .unwrap();
    let mut c = connect(&s);
    write_frame(&mut c, kind::HELLO, &[b"wrong"]).unwrap();
    assert!(error_of(&mut c).contains("wrong token"));
    let mut c = connect(&s);
    write_frame(&mut c, kind::OPEN, &[b"dyno_x"]).unwrap();
    assert!(error_of(&mut c).contains("authentication required"));
    works(&s, Some("right"));
}

#[test]
fn connections_over_the_limit_are_told_so() {
    let s =
        StoreServer::start_with_limit(TcpListener::bind("127.0.0.1:0").unwrap(), None, 2).unwrap();
    let mut a = connect(&s);
    let mut b = connect(&s);
    // Make sure both are being served before the third arrives.
    let mut body = Vec::new();
    for c in [&mut a, &mut b] {
        write_frame(c, kind::BEGIN, &[]).unwrap();
        expect(c, &mut body, kind::OK).unwrap();
    }
    let mut third = connect(&s);
    assert!(error_of(&mut third).contains("too many connections (the limit is 2)"));
    drop(a);
    std::thread::sleep(Duration::from_millis(100));
    works(&s, None);
    write_frame(&mut b, kind::COMMIT, &[]).unwrap();
    expect(&mut b, &mut body, kind::OK).unwrap();
}
