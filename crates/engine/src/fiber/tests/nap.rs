//! A nap before the scheduler waits: replies that come during it are taken when it ends, and a
//! deadline sooner than the nap is not napped past.

use super::*;

/// A peer that answers each line with `pong\n`, `after` after it came.
fn slow_echo(after: Duration) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut w = s.try_clone().unwrap();
        for line in BufReader::new(s).lines() {
            if line.is_err() {
                break;
            }
            std::thread::sleep(after);
            if w.write_all(b"pong\n").is_err() {
                break;
            }
        }
    });
    addr
}

/// The time from each request's send to its reply, on a fiber of `generators`.
fn round_trips(generators: Generators, addr: std::net::SocketAddr, n: usize) -> Vec<Duration> {
    let job = move || {
        let mut s = Stream::connect(&addr, Duration::from_secs(1)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5)));
        (0..n)
            .map(|_| {
                let t = Instant::now();
                s.write_all(b"ping\n").unwrap();
                let mut got = [0u8; 5];
                s.read_exact(&mut got).unwrap();
                assert_eq!(&got, b"pong\n");
                t.elapsed()
            })
            .collect::<Vec<_>>()
    };
    let r = join_all(generators, vec![Box::new(job) as Job<'_, _>]);
    r.into_iter().next().unwrap().unwrap()
}

#[test]
fn a_reply_that_comes_during_a_nap_is_taken_when_it_ends() {
    let nap = Duration::from_millis(40);
    let napping = Generators {
        nap,
        ..Generators::from(1)
    };
    // The reply comes 10 ms after the request, into the nap (nothing was in when it began,
    // unless this thread was held up 10 ms between its send and its look: once, at most).
    let took = round_trips(napping, slow_echo(Duration::from_millis(10)), 5);
    let napped = took.iter().filter(|t| **t >= nap).count();
    assert!(
        napped >= 4,
        "replies taken {took:?} after their requests, with a {nap:?} nap"
    );
    // Without the nap the same replies are taken as they come.
    let plain = round_trips(Generators::from(1), slow_echo(Duration::from_millis(10)), 5);
    assert!(plain.iter().filter(|t| **t < nap).count() >= 4, "{plain:?}");
}

#[test]
fn a_deadline_sooner_than_the_nap_is_kept() {
    let napping = Generators {
        nap: Duration::from_millis(500),
        ..Generators::from(1)
    };
    // One fiber waits on a socket that stays silent (so the thread may nap), the other sleeps
    // 2 ms: its deadline comes before the nap would end.
    let (addr, peer) = super::deadlines::silent_peers(1, Duration::from_secs(10));
    let silent = move || {
        let mut s = Stream::connect(&addr, Duration::from_secs(1)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(900)));
        let _ = s.read(&mut [0u8; 1]);
        Duration::ZERO
    };
    let sleeper = || {
        yield_now();
        let t = Instant::now();
        sleep(Duration::from_millis(2));
        t.elapsed()
    };
    let jobs: Vec<Job<'_, Duration>> = vec![Box::new(silent), Box::new(sleeper)];
    let took = join_all(napping, jobs).remove(1).unwrap();
    assert!(took >= Duration::from_millis(2), "{took:?}");
    assert!(
        took < Duration::from_millis(400),
        "a 2 ms sleep napped past: {took:?}"
    );
    peer.close();
}

/// Naps stop while the events come later than the nap, and start again once they come within
/// it.
#[test]
fn naps_are_taken_while_events_come_within_them() {
    let mut poll = mio::Poll::new().unwrap();
    let waker = mio::Waker::new(poll.registry(), mio::Token(7)).unwrap();
    let mut events = Events::with_capacity(8);
    let mut napper = super::super::nap::Napper::new(Duration::from_micros(200));
    let polls = Cell::new(0);
    let mut poll_with = |e: &mut Events, t| {
        polls.set(polls.get() + 1);
        poll.poll(e, t)
    };
    // A deadline within the nap: one wait, no nap.
    let short = Some(Duration::from_micros(150));
    napper
        .wait(&mut events, short, short, true, &mut poll_with)
        .unwrap();
    assert_eq!(polls.replace(0), 1);
    // Nothing comes: each nap finds nothing, and the wait after it ends at its 2 ms timeout.
    let mut naps = 0;
    while napper.napping() && naps < 100 {
        let t = Instant::now();
        let ms = Some(Duration::from_millis(2));
        napper
            .wait(&mut events, ms, None, true, &mut poll_with)
            .unwrap();
        assert!(t.elapsed() >= Duration::from_millis(2), "{:?}", t.elapsed());
        assert_eq!(polls.replace(0), 3, "a look, the nap, a look, the wait");
        naps += 1;
    }
    assert!(
        (2..20).contains(&naps),
        "{naps} naps before it stopped napping"
    );
    // An event ready at each wait: each ends at once, and naps are worth taking again.
    let mut waits = 0;
    while !napper.napping() && waits < 100 {
        waker.wake().unwrap();
        napper
            .wait(&mut events, None, None, true, &mut poll_with)
            .unwrap();
        assert!(!events.is_empty());
        waits += 1;
    }
    assert!(
        (1..20).contains(&waits),
        "{waits} waits before it napped again"
    );
}
