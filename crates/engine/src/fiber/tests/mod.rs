use super::*;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};

mod deadlines;
mod nap;

/// The backends a test runs its fibers on: epoll, epoll with a nap before each wait, and
/// io_uring where this kernel allows it.
fn backends(threads: usize) -> Vec<Generators> {
    let mut out = vec![
        Generators::from(threads),
        Generators {
            nap: Duration::from_micros(20),
            ..Generators::from(threads)
        },
    ];
    match crate::ring::uring_allowed() {
        Ok(()) => out.push(Generators {
            threads,
            ring: true,
            nap: Duration::ZERO,
        }),
        Err(why) => eprintln!("io_uring not tested: {why}"),
    }
    out
}

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
    for generators in backends(3) {
        a_barrier_holds_every_fiber(generators);
    }
}

fn a_barrier_holds_every_fiber(generators: Generators) {
    let n = 50;
    let b = Barrier::new(n);
    let arrived = AtomicUsize::new(0);
    let r = join_all(
        generators,
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
/// One of three never comes: the watcher opens the barrier after its limit, the two waiting
/// fibers go on, and a wait after that returns at once. Released in time, the watcher leaves
/// it shut.
#[test]
fn a_barrier_one_caller_never_reaches_is_opened_by_its_watcher() {
    for generators in backends(2) {
        let b = Barrier::new(3);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let t = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| b.open_unless_released(Duration::from_millis(200), &stop));
            let jobs = (0..2)
                .map(|_| -> Job<'_, bool> { Box::new(|| b.wait()) })
                .collect();
            let r: Vec<bool> = join_all(generators, jobs)
                .into_iter()
                .map(|r| r.unwrap())
                .collect();
            assert_eq!(r, [false, false]);
        });
        assert!(
            t.elapsed() >= Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
        assert!(!b.wait(), "an open barrier lets a late caller through");
    }
    let b = Barrier::new(2);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| b.open_unless_released(Duration::from_secs(5), &stop));
        let other = s.spawn(|| b.wait());
        let last = b.wait();
        assert!(last ^ other.join().unwrap());
        watcher.join().unwrap();
    });
    assert!(!b.lock().open, "released in time: not opened");
}

#[test]
fn many_streams_per_thread_each_read_their_own_replies() {
    for generators in backends(2) {
        many_streams_read_their_own_replies(generators);
    }
}

fn many_streams_read_their_own_replies(generators: Generators) {
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
        generators,
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

/// A loop that never waits (a server that never stops sending) still meets its [`Bound`]: the
/// coarse clock does not move, the clock itself is looked at every [`Bound::EVERY`] calls.
#[test]
fn a_bound_ends_a_loop_that_never_waits() {
    let spin = || {
        let t = Instant::now();
        let mut bound = Bound::new(clock::FAR + Duration::from_millis(10));
        while !bound.passed() && t.elapsed() < Duration::from_secs(10) {}
        t.elapsed()
    };
    let outside = spin();
    let on_fiber = join_all(1, vec![Box::new(spin) as Job<'_, _>]);
    for took in [outside, on_fiber.into_iter().next().unwrap().unwrap()] {
        let least = clock::FAR + Duration::from_millis(10);
        // The coarse clock may be behind by what the fiber ran since it was resumed: a far
        // deadline may come that much early, never late.
        let early = Duration::from_millis(100);
        assert!(
            took + early >= least && took < least + Duration::from_millis(500),
            "{took:?}"
        );
    }
}

/// Loops that never wait, two fibers on one thread, each ending by the coarse clock: taking
/// turns, both run, and both see the clock move (without, the first held the thread, the
/// second never ran, and the coarse clock stood still: a loop on it never ended).
#[test]
fn loops_that_never_wait_take_turns_and_see_the_clock_move() {
    let spin = |stop: Instant| {
        let (mut mark, mut rounds) = (0, 0u64);
        // The bound on the rounds only keeps a broken scheduler from hanging the test.
        while coarse_now() < stop && rounds < 1 << 32 {
            take_turn(&mut mark);
            rounds += 1;
        }
        (rounds, Instant::now())
    };
    for generators in backends(1) {
        let stop = Instant::now() + clock::FAR;
        let jobs = vec![
            Box::new(move || spin(stop)) as Job<'_, _>,
            Box::new(move || spin(stop)),
        ];
        for r in join_all(generators, jobs) {
            let (rounds, end) = r.unwrap();
            assert!(rounds > 1, "a fiber never ran: {rounds} rounds");
            let late = end.saturating_duration_since(stop);
            assert!(
                end >= stop && late < Duration::from_secs(1),
                "{late:?} late"
            );
        }
    }
}

/// A fiber that only takes turns does not keep the others from being woken: one that sleeps
/// wakes, and ends the spin (it once slept until the spinner ended by itself).
#[test]
fn a_fiber_that_only_takes_turns_lets_a_sleeper_wake() {
    for generators in backends(1) {
        let done = std::sync::atomic::AtomicBool::new(false);
        let spin = || {
            let (t, mut mark) = (Instant::now(), 0);
            while !done.load(Ordering::Relaxed) && t.elapsed() < Duration::from_secs(5) {
                take_turn(&mut mark);
            }
            t.elapsed()
        };
        let sleeper = || {
            sleep(Duration::from_millis(10));
            done.store(true, Ordering::Relaxed);
            Duration::ZERO
        };
        let jobs = vec![Box::new(spin) as Job<'_, _>, Box::new(sleeper)];
        let spun = join_all(generators, jobs)
            .into_iter()
            .next()
            .unwrap()
            .unwrap();
        assert!(spun < Duration::from_secs(1), "{spun:?}");
    }
}

/// A peer's last bytes and its end, arriving while the fiber waits and seen by the poller as
/// one event: the read after the bytes finds the end at once. (It once waited for a second
/// event that never came, and timed out: a PostgreSQL refusing a session says why and closes.)
#[test]
fn the_last_bytes_and_the_end_in_one_event_are_both_read() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        for _ in backends(1) {
            let (mut s, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(100));
            s.write_all(b"bye").unwrap();
        }
    });
    for generators in backends(1) {
        let reader = move || {
            let mut s = Stream::connect(&addr, Duration::from_secs(1)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = [0u8; 16];
            let first = s.read(&mut buf).map(|n| buf[..n].to_vec());
            let t = Instant::now();
            (
                first.unwrap(),
                s.read(&mut buf).map_err(|e| e.kind()),
                t.elapsed(),
            )
        };
        // Holds the thread (not yielding) while the bytes and the end come, so the reader's
        // scheduler polls only once they are both there.
        let hold = || -> (Vec<u8>, Result<usize, io::ErrorKind>, Duration) {
            std::thread::sleep(Duration::from_millis(300));
            (Vec::new(), Ok(0), Duration::ZERO)
        };
        let r = join_all(
            generators,
            vec![Box::new(reader) as Job<'_, _>, Box::new(hold)],
        );
        let (bytes, end, took) = r.into_iter().next().unwrap().unwrap();
        assert_eq!(
            (&bytes[..], end),
            (&b"bye"[..], Ok(0)),
            "ring: {}",
            generators.ring
        );
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
    server.join().unwrap();
}

/// A short sleep is waited for on an exact timer (the ring's, or the epoll scheduler's
/// timerfd): the scheduler's thread sleeps once and wakes on time. It does not poll until the
/// deadline (a sleep of 1.9 ms once polled for 0.9 ms of it), nor wake at epoll's whole
/// milliseconds to sleep again for the rest (a sleep of 1.9 ms once woke twice). A polling
/// thread spends most of the time on CPU; a sleeping one a few system calls per wake (under 3%
/// of it here).
#[test]
fn short_sleeps_sleep_once_and_end_on_time() {
    const SLEEPS: u64 = 300;
    for generators in backends(1) {
        let job: Job<'_, _> = Box::new(|| {
            let (cpu, t0, woke) = (
                Duration::from_nanos(crate::timer::thread_cpu_ns()),
                Instant::now(),
                voluntary_switches(),
            );
            for i in 0..SLEEPS as usize {
                // Under epoll's millisecond, between one and two of them, and a few.
                let due = Instant::now() + Duration::from_micros([500, 1_900, 3_300][i % 3]);
                sleep_until(due);
                assert!(Instant::now() >= due, "woke before its deadline");
            }
            (
                t0.elapsed(),
                Duration::from_nanos(crate::timer::thread_cpu_ns()) - cpu,
                voluntary_switches() - woke,
            )
        });
        let (wall, cpu, slept) = join_all(generators, vec![job]).remove(0).unwrap();
        assert!(wall >= Duration::from_millis(500), "{wall:?}");
        assert!(
            cpu < wall / 4,
            "{generators:?}: {cpu:?} on CPU in {wall:?}: it polled"
        );
        // Once per sleep (a few more for whatever else made the thread wait: a page fault's
        // read, say); twice per sleep of a millisecond or more would be 500.
        assert!(
            slept <= SLEEPS + SLEEPS / 10,
            "{generators:?}: the thread slept {slept} times for {SLEEPS} sleeps"
        );
    }
}

/// How many times this thread has given up its CPU to wait (getrusage's `ru_nvcsw`).
fn voluntary_switches() -> u64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
    u.ru_nvcsw as u64
}

/// On the ring a write returns before the kernel has sent it: a session that leaves its
/// scheduler with a large write still going (the server reading slowly) loses none of it, and
/// its stream goes on working from a plain thread; a send to a peer that has gone is reported by
/// the next call.
#[test]
fn a_ring_stream_sends_everything_before_its_scheduler_returns() {
    if let Err(why) = crate::ring::uring_allowed() {
        eprintln!("io_uring not tested: {why}");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let big = 8 << 20;
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let mut got = vec![0u8; big];
        s.read_exact(&mut got).unwrap();
        assert!(got.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
        s.write_all(b"all\n").unwrap();
        let mut more = [0u8; 4];
        s.read_exact(&mut more).unwrap();
        assert_eq!(&more, b"more");
    });
    let on_ring = Generators {
        threads: 1,
        ring: true,
        nap: Duration::ZERO,
    };
    let bytes: Vec<u8> = (0..big).map(|i| (i % 251) as u8).collect();
    let job = || {
        let mut s = Stream::connect(&addr, Duration::from_secs(1)).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10)));
        s.write_all(&bytes).unwrap();
        s
    };
    let mut s: Stream = join_all(on_ring, vec![Box::new(job) as Job<'_, _>])
        .pop()
        .unwrap()
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut line = String::new();
    BufReader::new(s.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "all\n");
    s.write_all(b"more").unwrap();
    server.join().unwrap();

    // A peer that has gone: a write and then a read on the ring end in an error, not a hang.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let gone = std::thread::spawn(move || drop(listener.accept().unwrap()));
    let job = || {
        let mut s = Stream::connect(&addr, Duration::from_secs(1)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5)));
        gone_peer(&mut s)
    };
    let r = join_all(on_ring, vec![Box::new(job) as Job<'_, bool>]);
    assert!(
        r.into_iter().next().unwrap().unwrap(),
        "no error from a peer that has gone"
    );
    gone.join().unwrap();
}

/// Writes and reads until the connection's end shows: true if it did within 100 tries.
fn gone_peer(s: &mut Stream) -> bool {
    for _ in 0..100 {
        if s.write_all(b"ping\n").is_err() {
            return true;
        }
        match s.read(&mut [0u8; 16]) {
            Ok(0) | Err(_) => return true,
            Ok(_) => {}
        }
    }
    false
}

/// Each read waits with a deadline that its reply beats: the scheduler forgets such timers
/// once they outnumber its fibers, so 4 clients' 5,000 round trips each never have more than a
/// few dozen timers held (before, one for every wait of the last 30 s) — while the live one is
/// kept: a read with no reply ends at its 300 ms deadline while the others' timers are being
/// forgotten (were it forgotten too, the silent peer's end after 3 s would end the read).
#[test]
fn the_deadlines_of_waits_that_ended_are_forgotten() {
    let (clients, rounds) = (4, 5_000);
    for generators in backends(1) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let mut handles = Vec::new();
            for i in 0..=clients {
                let (mut s, _) = listener.accept().unwrap();
                let silent = i == clients;
                // Bounded: the silent peer gives up after 3 s.
                s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
                handles.push(std::thread::spawn(move || {
                    let mut b = [0u8; 1];
                    // The silent peer reads and never answers, until its client has gone.
                    while s.read_exact(&mut b).is_ok() && (silent || s.write_all(&b).is_ok()) {}
                }));
            }
            for h in handles {
                h.join().unwrap();
            }
        });
        let mut jobs: Vec<Job<'_, usize>> = (0..clients)
            .map(|_| -> Job<'_, usize> {
                Box::new(|| {
                    let mut s = Stream::connect(&addr, Duration::from_secs(5)).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(30)));
                    let mut b = [0u8; 1];
                    for i in 0..rounds {
                        s.write_all(&[i as u8]).unwrap();
                        s.read_exact(&mut b).unwrap();
                        assert_eq!(b[0], i as u8);
                    }
                    MOST_TIMERS.with(|m| m.get())
                })
            })
            .collect();
        jobs.push(Box::new(|| {
            // Connected after the echoing clients, which run first on the one thread (the
            // server takes the last connection as the silent one).
            let mut s = Stream::connect(&addr, Duration::from_secs(5)).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(300)));
            let t = Instant::now();
            let e = s.read_exact(&mut [0u8; 1]).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
            let waited = t.elapsed();
            assert!(waited < Duration::from_secs(2), "{waited:?}");
            0
        }));
        let fibers = clients + 1;
        for most in join_all(generators, jobs) {
            let most = most.unwrap();
            assert!(
                most <= 2 * fibers + 65,
                "{generators:?}: {most} timers held"
            );
        }
        server.join().unwrap();
    }
}
