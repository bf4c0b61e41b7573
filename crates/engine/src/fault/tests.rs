use super::*;

fn raw(text: &str) -> RawFault {
    RawFault::from_flag(text).unwrap()
}

#[test]
fn faults_resolve_and_read_back_as_written() {
    let f = raw("kill every=10s after=500ms")
        .resolve(&["redis"])
        .unwrap();
    assert_eq!(f.to_string(), "kill target=redis every=10s after=500ms");
    let f = raw("pause target=b at=12s,5s for=2s healthy=1s")
        .resolve(&["a", "b"])
        .unwrap();
    assert_eq!(f.when, When::At(vec![5_000_000_000, 12_000_000_000]));
    assert_eq!(f.to_string(), "pause target=b at=5s,12s for=2s healthy=1s");
    let e = |t: &str, started: &[&str]| raw(t).resolve(started).unwrap_err().to_string();
    assert!(e("kill every=1s", &[]).contains("needs a target whose process dyno starts"));
    assert!(e("kill every=1s", &["a", "b"]).contains("name one"));
    assert!(e("kill target=c every=1s", &["a"]).contains("has no process dyno starts"));
    assert!(e("kill every=1s at=2s", &["a"]).contains("exactly one of"));
    assert!(e("pause every=1s after=1s", &["a"]).contains("after is not a setting"));
    assert!(e("explode every=1s", &["a"]).contains("unknown fault action"));
    assert!(e("kill every=1s colour=red", &["a"]).contains("unknown fault key"));
    assert!(RawFault::from_flag("kill every").is_err());
    // A partition cuts the clients off too unless told to let them through.
    let f = raw("partition every=2s for=1s clients=pass")
        .resolve(&["a"])
        .unwrap();
    assert_eq!(
        f.to_string(),
        "partition target=a every=2s for=1s clients=pass"
    );
    let f = raw("partition every=2s clients=cut")
        .resolve(&["a"])
        .unwrap();
    assert_eq!(f.to_string(), "partition target=a every=2s for=1s");
    assert!(
        e("partition every=2s clients=some", &["a"]).contains("write clients=cut or clients=pass")
    );
    assert!(e("pause every=2s clients=pass", &["a"]).contains("clients is not a setting"));
    // A cluster's members in turn, or the one named.
    let f = raw("kill target=r every=5s")
        .resolve(&["r/p", "r/q", "web"])
        .unwrap();
    assert_eq!(f.members, ["r/p", "r/q"]);
    assert_eq!(f.to_string(), "kill target=r every=5s after=1s");
    let f = raw("kill target=r member=q every=5s")
        .resolve(&["r/p", "r/q"])
        .unwrap();
    assert_eq!(f.to_string(), "kill target=r member=q every=5s after=1s");
    assert!(e("kill target=r member=z every=1s", &["r/p"]).contains("has no member \"z\""));
    // dyno's own clients need no process of a target.
    let f = raw("restart-clients every=30s").resolve(&[]).unwrap();
    assert_eq!(f.to_string(), "restart-clients every=30s");
}

#[test]
fn a_role_query_names_the_member_whose_port_stands_alone_in_its_output() {
    let role = |cmd: &str| Role {
        cmd: cmd.into(),
        ports: vec![("r/p".into(), 6379), ("r/q".into(), 16379)],
    };
    assert_eq!(
        role("printf '127.0.0.1\\n16379\\n'").primary(),
        Ok("r/q".into())
    );
    assert_eq!(
        role("echo master 127.0.0.1:6379").primary(),
        Ok("r/p".into())
    );
    assert!(
        role("echo 163790")
            .primary()
            .unwrap_err()
            .contains("named no member")
    );
}

/// A watch that keeps what it is told.
#[derive(Default)]
struct Told(std::sync::Mutex<Vec<FaultEvent>>);

impl crate::runner::Watch for Told {
    fn clock(&self, _: &Clock) {}
    fn fault(&self, event: &FaultEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

#[test]
fn a_schedule_started_over_counts_again_from_that_moment() {
    // restart-clients at 60 ms and 120 ms of each schedule (none past 150 ms), as a level
    // with two tests would see them.
    let f = raw("restart-clients every=60ms").resolve(&[]).unwrap();
    let clock = Clock::monotonic();
    let clients = Arc::new(AtomicU64::new(0));
    let told = Arc::new(Told::default());
    let n = Nemesis::start(
        vec![f],
        (
            Vec::new(),
            clients.clone(),
            Default::default(),
            Default::default(),
        ),
        (Box::new(|_, _| {}), Some(told.clone())),
        clock.clone(),
        (1, 0, 150_000_000),
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        clients.load(Ordering::Relaxed),
        2,
        "the first schedule, whole"
    );
    let again = clock.now_ns();
    n.start_over();
    let taken = clock.now_ns();
    assert!(
        taken - again < 100_000_000,
        "taken up between faults at once"
    );
    std::thread::sleep(Duration::from_millis(300));
    n.heal();
    n.start_over(); // after the final heal: nothing, at once
    let events = n.stop();
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(clients.load(Ordering::Relaxed), 4);
    // Each event was told as it happened (a restart-clients begins and ends at once).
    assert_eq!(*told.0.lock().unwrap(), events);
    let second: Vec<u64> = events[2..].iter().map(|e| e.start_ns - again).collect();
    assert!(
        (60_000_000..100_000_000).contains(&second[0])
            && (120_000_000..160_000_000).contains(&second[1]),
        "the second schedule counts from its start: {second:?}"
    );
}

#[test]
fn schedules_are_bounded_and_staggers_stay_within_twice_the_mean() {
    assert_eq!(schedule(&When::Every(3), 0, 10), [3, 6, 9]);
    assert_eq!(schedule(&When::Every(1), 0, u64::MAX).len(), MAX_EVENTS);
    assert_eq!(schedule(&When::At(vec![2, 8, 20]), 0, 10), [2, 8]);
    let s = schedule(&When::Stagger(1_000), 7, 1_000_000);
    assert!(
        s.windows(2).all(|w| w[1] > w[0] && w[1] - w[0] <= 2_000),
        "{s:?}"
    );
    assert!((400..=2_000).contains(&s.len()), "{}", s.len());
    assert_eq!(s, schedule(&When::Stagger(1_000), 7, 1_000_000), "seeded");
}
