//! `dyno link` as a user runs it: a process that forwards to a server, with a delay.

use crate::common::*;
use predicates::prelude::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

#[test]
fn dyno_link_forwards_with_the_delay_asked() {
    let _serial = serial();
    // An echo server.
    let echo = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = echo.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = echo.accept() {
            let mut b = [0u8; 4];
            while s.read_exact(&mut b).is_ok() && s.write_all(&b).is_ok() {}
        }
    });
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("dyno"))
        .args([
            "link",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--to",
            &to.to_string(),
            "--delay",
            "5ms",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut c = loop {
        if let Ok(c) = TcpStream::connect(("127.0.0.1", port)) {
            break c;
        }
        assert!(Instant::now() < deadline, "dyno link did not listen");
        std::thread::sleep(Duration::from_millis(20));
    };
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [1u8, 2, 3, 4];
    let t = Instant::now();
    c.write_all(&b).unwrap();
    c.read_exact(&mut b).unwrap();
    let rtt = t.elapsed();
    // SAFETY: signalling the child this test started, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let _ = child.wait();
    assert_eq!(b, [1, 2, 3, 4]);
    assert!(
        rtt >= Duration::from_millis(10) && rtt < Duration::from_millis(50),
        "{rtt:?}"
    );
}

#[test]
fn bad_link_flags_are_named() {
    let dir = tempfile::tempdir().unwrap();
    for (args, message) in [
        (
            vec!["--rate", "fast"],
            "Error: --rate: \"fast\" is not a bit rate",
        ),
        (
            vec!["--preset", "moon"],
            "Error: --preset: \"moon\" is not lan or wan",
        ),
        (vec!["--delay", "5"], "Error: --delay: \"5\" has no unit"),
    ] {
        dyno(dir.path())
            .args(["link", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"])
            .args(&args)
            .assert()
            .code(1)
            .stderr(predicate::str::starts_with(message));
    }
}
