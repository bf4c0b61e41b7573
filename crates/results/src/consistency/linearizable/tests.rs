use super::*;

const BUDGET: Duration = Duration::from_secs(10);

fn op(client: u32, call: Call, outcome: Outcome, (from, to): (u64, u64)) -> Op {
    Op {
        client,
        key: 1,
        call,
        outcome,
        invoke_ns: from,
        complete_ns: to,
    }
}

fn write(client: u32, value: u64, at: (u64, u64)) -> Op {
    op(client, Call::Write { value }, Outcome::Ok, at)
}

fn read(client: u32, saw: Option<u64>, at: (u64, u64)) -> Op {
    op(client, Call::Read { saw }, Outcome::Ok, at)
}

#[test]
fn a_sequential_history_and_overlapping_ones_are_linearizable() {
    let h = [
        write(1, 1, (0, 10)),
        read(2, Some(1), (20, 30)),
        write(1, 2, (40, 50)),
        read(2, Some(2), (60, 70)),
    ];
    assert!(check(&h, BUDGET).is_valid());
    // A read overlapping a write may see either value.
    for saw in [Some(1), Some(2)] {
        let h = [
            write(1, 1, (0, 10)),
            write(1, 2, (20, 50)),
            read(2, saw, (30, 40)),
        ];
        assert!(check(&h, BUDGET).is_valid(), "{saw:?}");
    }
    // Before any write the key is absent.
    assert!(check(&[read(1, None, (0, 5)), write(2, 3, (6, 9))], BUDGET).is_valid());
}

#[test]
fn a_stale_read_and_a_lost_write_are_violations_with_their_proof() {
    // Write 2 finished before the read began, yet the read saw 1.
    let stale = [
        write(1, 1, (0, 10)),
        write(1, 2, (20, 30)),
        read(2, Some(1), (40, 50)),
        read(2, Some(2), (60, 70)),
    ];
    let r = check(&stale, BUDGET);
    assert_eq!(r.violations.len(), 1, "{r:?}");
    // The smallest set that cannot be ordered, each read's value still written in it.
    assert_eq!(r.violations[0].1, stale[..3].to_vec());
    // An acknowledged write a later read does not see.
    let lost = [write(1, 7, (0, 10)), read(2, None, (20, 30))];
    let r = check(&lost, BUDGET);
    assert!(!r.is_valid());
    assert_eq!(r.violations[0].1, lost.to_vec());
    assert!(
        lost[1]
            .describe()
            .contains("client 2 read nothing on key 1 at 0.000–0.000 ms: ok")
    );
}

#[test]
fn unknown_and_failed_outcomes_may_or_may_not_have_happened() {
    let unknown = op(1, Call::Write { value: 5 }, Outcome::Unknown, (0, 0));
    // Seen later, or never: both possible.
    assert!(check(&[unknown, read(2, Some(5), (100, 110))], BUDGET).is_valid());
    assert!(check(&[unknown, read(2, None, (100, 110))], BUDGET).is_valid());
    // Seen, then not seen: once taken effect, it stays.
    let h = [
        unknown,
        read(2, Some(5), (100, 110)),
        read(2, None, (120, 130)),
    ];
    assert!(!check(&h, BUDGET).is_valid());
    // A failed write never happened: a read that sees it is a violation.
    let failed = op(1, Call::Write { value: 5 }, Outcome::Failed, (0, 10));
    assert!(!check(&[failed, read(2, Some(5), (20, 30))], BUDGET).is_valid());
    // An unknown read constrains nothing.
    let blind = op(2, Call::Read { saw: Some(42) }, Outcome::Unknown, (0, 5));
    assert!(check(&[write(1, 1, (0, 1)), blind], BUDGET).is_valid());
}

#[test]
fn compare_and_set_swaps_only_from_its_value() {
    let cas = |swapped, at| {
        op(
            2,
            Call::Cas {
                from: Some(1),
                to: 2,
                swapped,
            },
            Outcome::Ok,
            at,
        )
    };
    let ok = [
        write(1, 1, (0, 10)),
        cas(true, (20, 30)),
        read(3, Some(2), (40, 50)),
    ];
    assert!(check(&ok, BUDGET).is_valid());
    // It swapped although the value was 3.
    let bad = [write(1, 3, (0, 10)), cas(true, (20, 30))];
    assert!(!check(&bad, BUDGET).is_valid());
    // It did not swap although it could have, with nothing else to blame.
    let refused = [write(1, 1, (0, 10)), cas(false, (20, 30))];
    assert!(!check(&refused, BUDGET).is_valid());
}

#[test]
fn keys_are_checked_apart_and_a_key_out_of_time_is_unknown() {
    let mut h = vec![write(1, 1, (0, 10)), read(2, None, (20, 30))];
    h.push(Op {
        key: 2,
        ..write(1, 1, (0, 10))
    });
    h.push(Op {
        key: 2,
        ..read(1, Some(1), (20, 30))
    });
    let r = check(&h, BUDGET);
    assert_eq!((r.keys, r.ops), (2, 4));
    assert_eq!(r.violations.iter().map(|v| v.0).collect::<Vec<_>>(), [1]);
    // Thousands of operations and no time: undecided, said so, not hung.
    let long: Vec<Op> = (0..6000)
        .map(|i| write(1, i, (i * 10, i * 10 + 5)))
        .collect();
    let r = check(&long, Duration::ZERO);
    assert_eq!(r.unknown.len(), 1, "{r:?}");
    assert!(
        r.unknown[0]
            .1
            .contains("6000 operations not decided within")
    );
}

/// A history made from a sequential register: each operation takes effect at an instant of
/// its own inside its interval, which overlaps others at random; some outcomes are unknown
/// (taking effect, or not at all) and some failed (not taking effect).
fn linearizable_history(seed: u64, n: usize, keys: u64) -> Vec<Op> {
    let mut s = seed;
    let mut draw = |m: u64| crate::rng::splitmix64(&mut s) % m;
    let mut value: BTreeMap<u64, Option<u64>> = BTreeMap::new();
    let mut out = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let at = i * 100 + 50;
        let (invoke, complete) = (at - draw(400).min(at), at + draw(400));
        let key = draw(keys);
        let v = value.entry(key).or_default();
        let (call, outcome) = match draw(10) {
            0..=3 => (Call::Read { saw: *v }, Outcome::Ok),
            4..=6 => {
                let value = i + 1;
                *v = Some(value);
                (Call::Write { value }, Outcome::Ok)
            }
            7 => {
                let from = *v;
                *v = Some(i + 1);
                let (call, outcome) = (
                    Call::Cas {
                        from,
                        to: i + 1,
                        swapped: true,
                    },
                    Outcome::Ok,
                );
                (call, outcome)
            }
            8 => match draw(2) {
                0 => {
                    *v = Some(i + 1);
                    (Call::Write { value: i + 1 }, Outcome::Unknown)
                }
                _ => (Call::Write { value: i + 1 }, Outcome::Unknown),
            },
            _ => (Call::Write { value: i + 1 }, Outcome::Failed),
        };
        out.push(Op {
            client: draw(16) as u32,
            key,
            call,
            outcome,
            invoke_ns: invoke,
            complete_ns: complete,
        });
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Every history a sequential register could have produced is accepted.
    #[test]
    fn every_history_of_a_sequential_register_is_linearizable(seed in 0u64..u64::MAX, n in 1usize..120, keys in 1u64..4) {
        let mut h = linearizable_history(seed, n, keys);
        let r = check(&h, BUDGET);
        proptest::prop_assert!(r.is_valid(), "{r:?}");
        // The check can fail: one read made to see a value nobody wrote is caught.
        if let Some(read) = h.iter_mut().find(|o| matches!(o.call, Call::Read { .. })) {
            read.call = Call::Read { saw: Some(u64::MAX) };
            let r = check(&h, BUDGET);
            proptest::prop_assert_eq!(r.violations.len(), 1, "{:?}", r);
        }
    }
}

#[test]
fn a_proof_loses_a_write_once_the_read_that_named_it_is_gone() {
    // Listed client by client, as a history is handed over: write 3 can go only after read 3.
    let h = [
        write(2, 1, (0, 10)),
        write(2, 3, (50, 60)),
        write(2, 4, (70, 80)),
        write(3, 2, (20, 30)),
        read(3, Some(1), (35, 45)),
        read(3, Some(3), (65, 68)),
        read(3, Some(4), (90, 95)),
    ];
    let r = check(&h, BUDGET);
    assert_eq!(r.violations.len(), 1);
    assert_eq!(
        r.violations[0].1,
        [h[0], h[3], h[4]].to_vec(),
        "written 1, then 2, then 1 read"
    );
}
