//! The shootout against a real Redis (a private instance on a free loopback port).

mod common;

use common::*;
use std::io::{Read, Write};

/// Counts the keys in the server (DBSIZE), over a raw RESP exchange.
fn dbsize(port: u16) -> i64 {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"*1\r\n$6\r\nDBSIZE\r\n").unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap();
    let text = std::str::from_utf8(&buf[..n]).unwrap();
    text.trim_start_matches(':').trim().parse().unwrap()
}

#[test]
fn shootout_on_redis_in_its_own_prefix_and_nothing_left_behind() {
    let Some(r) = Redis::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = dyno(dir.path())
        .args(["run", "--quick", "-o", "o"])
        .arg(format!("redis://127.0.0.1:{}", r.port))
        .assert()
        .success();
    let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    assert!(
        out.contains("no AOF, no RDB"),
        "durability read from the server:\n{out}"
    );
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    for test in ["add", "update", "warm", "cold", "hot", "steamin"] {
        let c = case(&rec, "redis", test);
        let want = if test == "cold" { "na" } else { "ok" };
        assert_eq!(c["status"], want, "{test}: {}", c["reason"]);
        assert_eq!(c["topology"], "loopback");
    }
    assert_eq!(
        case(&rec, "redis", "add")["versions"]["redis"]
            .as_str()
            .unwrap()
            .split('.')
            .count(),
        3
    );
    assert_eq!(dbsize(r.port), 0, "dyno removed exactly what it wrote");
}

#[test]
fn magma_on_redis_reads_in_batches_and_leaves_nothing_behind() {
    let Some(r) = Redis::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_, rec) = magma_quick(dir.path(), "o", &format!("redis://127.0.0.1:{}", r.port), 0);
    assert_magma_ok(&rec);
    assert_eq!(dbsize(r.port), 0, "dyno removed exactly what it wrote");
}
