use super::*;

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
}

#[test]
fn shards_come_from_flags_slurm_or_an_indexed_job() {
    let none = env(&[]);
    assert_eq!(Shard::parse("2/4", &none), Ok(Shard { index: 2, count: 4 }));
    assert!(
        Shard::parse("4/4", &none)
            .unwrap_err()
            .contains("numbered 0 to 3")
    );
    assert!(
        Shard::parse("1/0", &none)
            .unwrap_err()
            .contains("give 1 to")
    );
    assert!(
        Shard::parse("x/4", &none)
            .unwrap_err()
            .contains("whole number")
    );
    assert!(
        Shard::parse("auto", &none)
            .unwrap_err()
            .contains("SLURM_PROCID")
    );
    let slurm = env(&[("SLURM_PROCID", "3"), ("SLURM_NTASKS", "4")]);
    assert_eq!(
        Shard::parse("auto", &slurm),
        Ok(Shard { index: 3, count: 4 })
    );
    assert!(
        Shard::parse("auto/8", &slurm)
            .unwrap_err()
            .contains("4 tasks")
    );
    let k8s = env(&[("JOB_COMPLETION_INDEX", "5")]);
    assert_eq!(
        Shard::parse("auto/8", &k8s),
        Ok(Shard { index: 5, count: 8 })
    );
    assert!(Shard::parse("auto", &k8s).unwrap_err().contains("auto/N"));
}

#[test]
fn parts_add_up_and_differ_by_at_most_one() {
    for n in [0u64, 1, 7, 8, 1000, 1001] {
        for count in [1u32, 3, 8] {
            let parts: Vec<u64> = (0..count)
                .map(|index| Shard { index, count }.part(n))
                .collect();
            assert_eq!(parts.iter().sum::<u64>(), n);
            assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1);
            // Each part begins where the one before it ends: the slices tile 0..n.
            let mut at = 0;
            for index in 0..count {
                let s = Shard { index, count };
                assert_eq!(s.first(n), at, "shard {index} of {count}, n {n}");
                at += s.part(n);
            }
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn shards_meet_and_start_together() {
    let addr = format!("127.0.0.1:{}", free_port());
    let count = 3;
    let names = Mutex::new(Vec::new());
    let starts: Vec<(u64, u64)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..count)
            .map(|index| {
                let (addr, names) = (addr.clone(), &names);
                s.spawn(move || {
                    let r = Rendezvous::join(
                        Shard { index, count },
                        &addr,
                        "plan1",
                        Duration::from_secs(10),
                    )
                    .unwrap();
                    assert!(r.clock_offset_ns.unsigned_abs() < 50_000_000, "one machine");
                    names.lock().unwrap().push(r.run.clone());
                    let mut out = Vec::new();
                    for _ in 0..2 {
                        let at = r.start().unwrap();
                        wait_until(r.local(at));
                        out.push((at, unix_ns()));
                    }
                    out
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    // One name for the run, told to every shard.
    let names = names.into_inner().unwrap();
    assert_eq!(names.len(), 3);
    assert!(
        names.iter().all(|n| *n == names[0] && n.len() == 16),
        "{names:?}"
    );
    // Each repetition: one instant for all, and every shard started at it.
    for rep in 0..2 {
        let of_rep: Vec<&(u64, u64)> = starts.iter().skip(rep).step_by(2).collect();
        assert!(
            of_rep.iter().all(|(at, _)| *at == of_rep[0].0),
            "{starts:?}"
        );
        // A shard's instant is rank 0's, moved by the clock offset it measured (on one machine,
        // zero within its error, under a microsecond or so): it may wake that much early.
        for (at, woke) in of_rep {
            assert!(
                *woke + 100_000 >= *at && woke.saturating_sub(*at) < 5_000_000,
                "{starts:?}"
            );
        }
    }
}

#[test]
fn a_shard_that_leaves_ends_the_others_at_once() {
    let addr = format!("127.0.0.1:{}", free_port());
    let join = |index| {
        Rendezvous::join(
            Shard { index, count: 3 },
            &addr,
            "p",
            Duration::from_secs(10),
        )
        .map_err(|e| e.0)
    };
    let (lead, one) = std::thread::scope(|s| {
        let lead = s.spawn(|| join(0).unwrap().start().map_err(|e| e.0));
        let one = s.spawn(|| join(1).unwrap().start().map_err(|e| e.0));
        // Shard 2 joins, then goes away before its first start.
        drop(join(2).unwrap());
        let t = Instant::now();
        let (lead, one) = (lead.join().unwrap(), one.join().unwrap());
        assert!(t.elapsed() < Duration::from_secs(5), "not after READY_WAIT");
        (lead, one)
    });
    let lead = lead.unwrap_err();
    assert!(lead.contains("shard 2 did not say it was ready"), "{lead}");
    let one = one.unwrap_err();
    assert!(one.contains("rank 0 ended the run: shard 2"), "{one}");
}

#[test]
fn a_shard_that_aborts_ends_the_run_on_every_shard_saying_why() {
    let join = |addr: &str, index| {
        Rendezvous::join(
            Shard { index, count: 3 },
            addr,
            "p",
            Duration::from_secs(10),
        )
        .map_err(|e| e.0)
    };
    // Shard 1 could not open the target: rank 0 and shard 2 end at their next start.
    let addr = format!("127.0.0.1:{}", free_port());
    let (lead, two) = std::thread::scope(|s| {
        let lead = s.spawn(|| join(&addr, 0).unwrap().start().map_err(|e| e.0));
        let two = s.spawn(|| join(&addr, 2).unwrap().start().map_err(|e| e.0));
        let one = join(&addr, 1).unwrap();
        one.abort("shard 1 could not open redis: refused");
        assert!(
            one.start()
                .unwrap_err()
                .0
                .contains("this shard ended the run")
        );
        (lead.join().unwrap(), two.join().unwrap())
    });
    let lead = lead.unwrap_err();
    assert!(
        lead.contains("shard 1 ended the run: shard 1 could not open redis"),
        "{lead}"
    );
    let two = two.unwrap_err();
    assert!(two.contains("rank 0 ended the run: shard 1 ended"), "{two}");
    // Rank 0 could not: the others end at once, told why.
    let addr = format!("127.0.0.1:{}", free_port());
    let (one, two) = std::thread::scope(|s| {
        let one = s.spawn(|| join(&addr, 1).unwrap().start().map_err(|e| e.0));
        let two = s.spawn(|| join(&addr, 2).unwrap().start().map_err(|e| e.0));
        join(&addr, 0).unwrap().abort("rank 0 could not open pg");
        (one.join().unwrap(), two.join().unwrap())
    });
    for e in [one.unwrap_err(), two.unwrap_err()] {
        assert!(
            e.contains("rank 0 ended the run: rank 0 could not open pg"),
            "{e}"
        );
    }
}

/// Why shard `index` of `count` could not join at `addr`.
fn refused(index: u32, count: u32, addr: &str, plan: &str, wait_ms: u64) -> String {
    match Rendezvous::join(
        Shard { index, count },
        addr,
        plan,
        Duration::from_millis(wait_ms),
    ) {
        Ok(_) => panic!("shard {index} of {count} joined at {addr}"),
        Err(e) => e.0,
    }
}

#[test]
fn a_missing_shard_or_another_plan_fails_the_rendezvous_naming_it() {
    let addr = format!("127.0.0.1:{}", free_port());
    let e = refused(0, 3, &addr, "p", 300);
    assert!(e.contains("shards 1, 2 of 3 did not arrive"), "{e}");
    let addr = format!("127.0.0.1:{}", free_port());
    let (lead, other) = std::thread::scope(|s| {
        let lead = s.spawn(|| refused(0, 2, &addr, "p", 10_000));
        let other = refused(1, 2, &addr, "q", 10_000);
        (lead.join().unwrap(), other)
    });
    assert!(lead.contains("shard 1 (from"), "rank 0 names it: {lead}");
    assert!(other.contains("another plan"), "{other}");
    let addr = format!("127.0.0.1:{}", free_port());
    let e = refused(2, 3, &addr, "p", 300);
    assert!(e.contains("rank 0 did not answer"), "{e}");
    let e = refused(0, 2, "nonsense", "p", 5_000);
    assert!(e.contains("write HOST:PORT"), "at once: {e}");
}
