//! The benchmark host's limits: each broken rule gets a clear error on that connection only,
//! while other connections keep working.

use host::store::{MAX_FRAME, Options, StoreServer, expect, kind, write_frame};
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
    let s = StoreServer::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        Options::default(),
    )
    .unwrap();
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
    let s = StoreServer::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        Options::default(),
    )
    .unwrap();
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
        Options {
            token: Some("right".into()),
            ..Options::default()
        },
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
    let s = StoreServer::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        Options {
            max_connections: 2,
            ..Options::default()
        },
    )
    .unwrap();
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

/// Sends one request and checks the response's kind; returns its body.
fn call(c: &mut TcpStream, k: u8, parts: &[&[u8]], want: u8) -> Vec<u8> {
    write_frame(c, k, parts).unwrap();
    let mut body = Vec::new();
    expect(c, &mut body, want).unwrap_or_else(|e| panic!("request 0x{k:02x}: {e}"));
    body
}

fn opened(s: &StoreServer) -> TcpStream {
    let mut c = connect(s);
    call(&mut c, kind::OPEN, &[b"dyno_tx"], kind::OK);
    c
}

/// Writes between BEGIN and COMMIT are seen by their own connection at once, by others only
/// after the commit; a connection that closes mid-transaction leaves nothing behind.
fn transactions_are_atomic(s: &StoreServer) {
    let (mut a, mut b) = (opened(s), opened(s));
    let key = 1u64.to_be_bytes();
    call(&mut a, kind::BEGIN, &[], kind::OK);
    call(&mut a, kind::PUT, &[&key, b"one"], kind::OK);
    assert_eq!(call(&mut a, kind::GET, &[&key], kind::VALUE), b"one");
    call(&mut b, kind::GET, &[&key], kind::NOT_FOUND);
    let values = call(&mut a, kind::MGET, &[&key], kind::VALUES);
    assert_eq!(values, [&3u32.to_be_bytes()[..], b"one"].concat());
    call(&mut a, kind::COMMIT, &[], kind::OK);
    assert_eq!(call(&mut b, kind::GET, &[&key], kind::VALUE), b"one");

    call(&mut a, kind::BEGIN, &[], kind::OK);
    call(&mut a, kind::DELETE, &[&key], kind::OK);
    call(&mut a, kind::GET, &[&key], kind::NOT_FOUND);
    call(&mut a, kind::PUT, &[&2u64.to_be_bytes(), b"two"], kind::OK);
    drop(a);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(call(&mut b, kind::GET, &[&key], kind::VALUE), b"one");
    call(&mut b, kind::GET, &[&2u64.to_be_bytes()], kind::NOT_FOUND);
}

#[test]
fn transactions_in_memory() {
    let s = StoreServer::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        Options::default(),
    )
    .unwrap();
    transactions_are_atomic(&s);
    let info = host::store::fetch_info(s.addr(), None).unwrap();
    assert_eq!(info["durability"], "volatile (host memory)");
}

#[test]
fn a_store_on_disk_keeps_objects_across_restarts_and_refuses_foreign_directories() {
    use host::store::DiskStore;
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let start = || {
        let disk = Arc::new(DiskStore::open(&path).unwrap());
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        StoreServer::start(
            l,
            Options {
                disk: Some(disk),
                ..Options::default()
            },
        )
        .unwrap()
    };
    let s = start();
    transactions_are_atomic(&s);
    let info = host::store::fetch_info(s.addr(), None).unwrap();
    assert!(
        info["durability"].starts_with("LMDB at ")
            && info["durability"].ends_with("fsync at commit"),
        "{info:?}"
    );
    // A second namespace is apart from the first, and DROP deletes only its own objects.
    let mut other = connect(&s);
    call(&mut other, kind::OPEN, &[b"dyno_other"], kind::OK);
    call(
        &mut other,
        kind::PUT,
        &[&1u64.to_be_bytes(), b"other"],
        kind::OK,
    );
    call(&mut other, kind::DROP, &[b"dyno_other"], kind::OK);
    drop((other, s));

    let s = start();
    let mut c = opened(&s);
    assert_eq!(
        call(&mut c, kind::GET, &[&1u64.to_be_bytes()], kind::VALUE),
        b"one",
        "committed objects survive the host's restart"
    );
    let mut other = connect(&s);
    call(&mut other, kind::OPEN, &[b"dyno_other"], kind::OK);
    call(
        &mut other,
        kind::GET,
        &[&1u64.to_be_bytes()],
        kind::NOT_FOUND,
    );
    drop((c, other, s));

    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("precious"), b"not dyno's").unwrap();
    let e = DiskStore::open(&foreign).err().unwrap().to_string();
    assert!(e.contains("is not a dyno host store"), "{e}");
    assert_eq!(
        std::fs::read_dir(&foreign).unwrap().count(),
        1,
        "left untouched"
    );
}

#[test]
fn a_batched_read_over_the_frame_limit_is_refused_and_the_connection_goes_on() {
    let s = StoreServer::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        Options::default(),
    )
    .unwrap();
    let mut c = opened(&s);
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let big = vec![7u8; 40 << 20];
    for k in [1u64, 2] {
        call(&mut c, kind::PUT, &[&k.to_be_bytes(), &big], kind::OK);
    }
    let keys = [1u64.to_be_bytes(), 2u64.to_be_bytes()].concat();
    write_frame(&mut c, kind::MGET, &[&keys]).unwrap();
    let e = error_of(&mut c);
    assert!(
        e.contains("over the frame limit") && e.contains("ask for fewer keys"),
        "{e}"
    );
    // One of them fits, and the connection still serves.
    let one = call(&mut c, kind::MGET, &[&1u64.to_be_bytes()], kind::VALUES);
    assert_eq!(one.len(), 4 + big.len());
    let missing = call(
        &mut c,
        kind::MGET,
        &[&keys[..8], &9u64.to_be_bytes()],
        kind::NOT_FOUND,
    );
    assert_eq!(missing, 9u64.to_be_bytes());
}
