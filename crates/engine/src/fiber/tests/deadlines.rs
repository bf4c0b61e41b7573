//! Deadlines on a stream: a read's, a reply's as a whole, a connect's.

use super::*;

/// A peer that accepts `n` connections and sends nothing on them; [`SilentPeers::close`] (or
/// `at_most` passing) closes them.
pub(super) fn silent_peers(n: usize, at_most: Duration) -> (std::net::SocketAddr, SilentPeers) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (done, over) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let held: Vec<_> = (0..n).map(|_| listener.accept().unwrap()).collect();
        let _ = over.recv_timeout(at_most);
        drop(held);
    });
    (addr, SilentPeers { done, thread })
}

pub(super) struct SilentPeers {
    done: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl SilentPeers {
    pub(super) fn close(self) {
        drop(self.done);
        self.thread.join().unwrap();
    }
}

/// `read` run on a thread, then on a fiber of each backend: what each run returned.
fn on_a_thread_and_each_backend<T: Send>(read: impl Fn() -> T + Send + Copy) -> Vec<T> {
    let mut ran = vec![read()];
    for generators in backends(1) {
        let r = join_all(generators, vec![Box::new(read) as Job<'_, _>]);
        ran.push(r.into_iter().next().unwrap().unwrap());
    }
    ran
}

#[test]
fn a_read_past_its_deadline_times_out_on_a_fiber_and_on_a_thread() {
    let (addr, peers) = silent_peers(1 + backends(1).len(), Duration::from_secs(10));
    let read = move || {
        let mut s = Stream::connect(&addr, Duration::from_secs(1)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(50)));
        let t = Instant::now();
        let e = s.read(&mut [0u8; 16]).unwrap_err();
        (e.kind(), t.elapsed())
    };
    for (kind, took) in on_a_thread_and_each_backend(read) {
        assert_eq!(kind, io::ErrorKind::TimedOut);
        assert!(
            took >= Duration::from_millis(50) && took < Duration::from_millis(450),
            "{took:?}"
        );
    }
    peers.close();
}

/// A far deadline (at least [`clock::FAR`]) is taken from the scheduler's coarse clock: the
/// read still times out on time, on each backend, whether its thread is quiet or another fiber
/// wakes it every few milliseconds.
#[test]
fn a_far_read_deadline_times_out_on_time_on_a_quiet_thread_and_a_busy_one() {
    let limit = clock::FAR + Duration::from_millis(200);
    let (addr, peers) = silent_peers(2 * backends(1).len(), Duration::from_secs(60));
    let read = move || {
        let mut s = Stream::connect(&addr, Duration::from_secs(1)).unwrap();
        s.set_read_timeout(Some(limit));
        let t = Instant::now();
        let e = s.read(&mut [0u8; 16]).unwrap_err();
        Some((e.kind(), t.elapsed()))
    };
    let busy = move || {
        let end = Instant::now() + limit + Duration::from_millis(300);
        while Instant::now() < end {
            sleep(Duration::from_millis(3));
        }
        None
    };
    for generators in backends(1) {
        let quiet = join_all(generators, vec![Box::new(read) as Job<'_, _>]);
        let busy = join_all(
            generators,
            vec![Box::new(read) as Job<'_, _>, Box::new(busy)],
        );
        for r in quiet.into_iter().chain(busy).filter_map(|r| r.unwrap()) {
            let (kind, took) = r;
            assert_eq!(kind, io::ErrorKind::TimedOut, "{generators:?}");
            // The coarse clock may be behind by what the fiber ran since it was resumed: a far
            // deadline may come that much early, never late.
            let early = Duration::from_millis(100);
            assert!(
                took + early >= limit && took < limit + Duration::from_millis(500),
                "{generators:?}: {took:?}"
            );
        }
    }
    peers.close();
}

/// A connect the server does not answer (its listen queue full, so it drops the handshake)
/// waits on its fiber: the thread's other fiber runs meanwhile, and the connect times out on
/// time, on each backend.
#[test]
fn a_connect_that_is_not_answered_lets_the_other_fibers_run() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // SAFETY: the listener's own socket, listening again with a queue of one.
    assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
    // Fill the queue: these complete, and are never accepted.
    let held: Vec<TcpStream> = (0..4)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok())
        .collect();
    assert!(!held.is_empty());
    let limit = Duration::from_millis(600);
    for generators in backends(1) {
        let ticks = std::sync::atomic::AtomicU32::new(0);
        let connect = || {
            let t = Instant::now();
            let r = Stream::connect(&addr, limit);
            (
                r.err().map(|e| e.kind()),
                t.elapsed(),
                ticks.load(Ordering::Relaxed),
            )
        };
        let tick = || {
            for _ in 0..10 {
                sleep(Duration::from_millis(10));
                ticks.fetch_add(1, Ordering::Relaxed);
            }
            (None, Duration::ZERO, 0u32)
        };
        let jobs = vec![Box::new(connect) as Job<'_, _>, Box::new(tick)];
        let r = join_all(generators, jobs);
        let (kind, took, ticked) = r.into_iter().next().unwrap().unwrap();
        assert_eq!(kind, Some(io::ErrorKind::TimedOut), "{took:?}");
        assert!(took >= limit && took < limit * 3, "{took:?}");
        // The other fiber ran all its ticks while the connect waited.
        assert_eq!(ticked, 10);
    }
    drop(held);
}

/// A server for `n` connections, one after another: each request of 3 bytes read, then `answer`
/// writes on the connection.
fn answering(n: usize, answer: fn(&mut TcpStream)) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        for _ in 0..n {
            let (mut s, _) = listener.accept().unwrap();
            let mut ask = [0u8; 3];
            s.read_exact(&mut ask).unwrap();
            answer(&mut s);
        }
    });
    (addr, server)
}

/// A server that answers a byte at a time, each in time, and never ends: a stream opened for a
/// request-reply driver ends the reply at its bound from the request, on a thread and on each
/// backend, having read what came meanwhile.
#[test]
fn a_reply_that_trickles_for_ever_ends_at_its_bound() {
    let (addr, server) = answering(1 + backends(1).len(), |s| {
        // Bounded: 200 bytes at most, 4 s; the client's hanging up ends it sooner.
        for _ in 0..200 {
            if s.write_all(b"x").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let bound = Duration::from_millis(300);
    let read = move || {
        let mut s = Stream::open(&addr, Duration::from_secs(1), bound).unwrap();
        s.write_all(b"ask").unwrap();
        let t = Instant::now();
        let mut got = 0;
        let e = loop {
            match s.read(&mut [0u8; 16]) {
                Ok(0) => break io::Error::other("the end of the stream"),
                Ok(n) => got += n,
                Err(e) => break e,
            }
        };
        (e.kind(), e.to_string(), t.elapsed(), got)
    };
    for (kind, message, took, got) in on_a_thread_and_each_backend(read) {
        assert_eq!(kind, io::ErrorKind::TimedOut, "{message}");
        assert_eq!(message, "no end to the reply within 0.3 s");
        assert!(took >= bound && took < bound * 3, "{took:?}");
        assert!(got >= 5, "{got} bytes read before the bound");
    }
    server.join().unwrap();
}

/// What came in time is read even after the reply's bound has passed (a reader that got to it
/// late), and only a read that would wait fails: on a thread and on each backend.
#[test]
fn a_reply_that_came_in_time_is_read_after_its_bound() {
    let (addr, server) = answering(1 + backends(1).len(), |s| {
        s.write_all(&[1; 40]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        s.write_all(&[2; 10]).unwrap();
        // Held open until the client hangs up (bounded by the read timeout).
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = s.read(&mut [0u8; 1]);
    });
    let bound = Duration::from_millis(100);
    let read = move || {
        let mut s = Stream::open(&addr, Duration::from_secs(1), bound).unwrap();
        s.write_all(b"ask").unwrap();
        let mut buf = [0u8; 64];
        let first = s.read(&mut buf).unwrap();
        sleep(bound * 2);
        let late = s.read(&mut buf).map(|n| buf[..n].to_vec());
        let next = s.read(&mut buf).map_err(|e| e.to_string());
        (first, late.map_err(|e| e.to_string()), next)
    };
    for (first, late, next) in on_a_thread_and_each_backend(read) {
        assert_eq!(first, 40);
        assert_eq!(late, Ok(vec![2; 10]));
        assert_eq!(next, Err("no end to the reply within 0.1 s".to_string()));
    }
    server.join().unwrap();
}
