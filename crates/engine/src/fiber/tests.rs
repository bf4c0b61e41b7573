use super::*;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn jobs_return_in_order_and_a_panic_is_its_own() {
    let r = join_all(
        2,
        (0..10)
            .map(|i| -> Job<'_, usize> {
                Box::new(move || {
                    yield_now();
                    if i == 3 {
                        panic!("three");
                    }
                    i * 2
                })
            })
            .collect(),
    );
    assert_eq!(r.len(), 10);
    for (i, r) in r.iter().enumerate() {
        if i == 3 {
            assert!(r.is_err());
        } else {
            assert_eq!(*r.as_ref().unwrap(), i * 2);
        }
    }
}

#[test]
fn a_barrier_holds_every_fiber_until_the_last_arrives() {
    let n = 50;
    let b = Barrier::new(n);
    let arrived = AtomicUsize::new(0);
    let r = join_all(
        3,
        (0..n)
            .map(|i| -> Job<'_, usize> {
                let (b, arrived) = (&b, &arrived);
                Box::new(move || {
                    sleep(Duration::from_millis((i % 7) as u64));
                    arrived.fetch_add(1, Ordering::SeqCst);
                    b.wait();
                    // Everyone arrived before anyone passed.
                    let seen = arrived.load(Ordering::SeqCst);
                    b.wait();
                    seen
                })
            })
            .collect(),
    );
    for x in r {
        assert_eq!(x.unwrap(), n);
    }
}

/// 200 clients on 2 threads, each with its own connection to a line echo server, each
/// checking every reply it reads is its own.
#[test]
fn many_streams_per_thread_each_read_their_own_replies() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let clients = 200;
    let rounds = 20;
    let server = std::thread::spawn(move || {
        let mut handles = Vec::new();
        for _ in 0..clients {
            let (s, _) = listener.accept().unwrap();
            handles.push(std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                for line in BufReader::new(s).lines() {
                    let Ok(line) = line else { break };
                    if w.write_all(format!("{line}\n").as_bytes()).is_err() {
                        break;
                    }
                }
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
    });
    let r = join_all(
        2,
        (0..clients)
            .map(|c| -> Job<'_, usize> {
                Box::new(move || {
                    let mut s = Stream::connect(&addr, Duration::from_secs(5)).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut r = BufReader::new(s.try_clone().unwrap());
                    let mut ok = 0;
                    for i in 0..rounds {
                        s.write_all(format!("{c} {i}\n").as_bytes()).unwrap();
                        let mut line = String::new();
                        r.read_line(&mut line).unwrap();
                        assert_eq!(line, format!("{c} {i}\n"));
                        ok += 1;
                    }
                    ok
                })
            })
            .collect(),
    );
    assert!(r.into_iter().all(|x| x.unwrap() == rounds));
    server.join().unwrap();
}

#[test]
fn a_read_past_its_deadline_times_out_on_a_fiber_and_on_a_thread() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = std::thread::spawn(move || {
        let a = listener.accept().unwrap();
        let b = listener.accept().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        drop((a, b));
    });
    let read = move || {
        let mut s = Stream::connect(&addr, Duration::from_secs(1)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(50)));
        let t = Instant::now();
        let e = s.read(&mut [0u8; 16]).unwrap_err();
        (e.kind(), t.elapsed())
    };
    let on_fiber = join_all(1, vec![Box::new(read) as Job<'_, _>])
        .pop()
        .unwrap()
        .unwrap();
    let on_thread = read();
    for (kind, took) in [on_fiber, on_thread] {
        assert_eq!(kind, io::ErrorKind::TimedOut);
        assert!(
            took >= Duration::from_millis(50) && took < Duration::from_millis(450),
            "{took:?}"
        );
    }
    hold.join().unwrap();
}
