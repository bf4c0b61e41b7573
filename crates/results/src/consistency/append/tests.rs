use super::*;

fn txn(client: u32, mops: Vec<Mop>, at: u64) -> Txn {
    Txn {
        client,
        mops,
        outcome: Outcome::Ok,
        invoke_ns: at * 1_000,
        complete_ns: at * 1_000 + 500,
    }
}

fn ap(key: u64, value: u64) -> Mop {
    Mop::Append { key, value }
}

fn r(key: u64, list: &[u64]) -> Mop {
    Mop::Read {
        key,
        list: Some(list.to_vec()),
    }
}

/// The kinds found, sorted.
fn kinds(h: &[Txn]) -> Vec<&'static str> {
    let report = check(h, Duration::from_secs(5));
    assert!(report.unknown.is_empty(), "{report:?}");
    let mut k: Vec<&str> = report.findings.iter().map(|f| f.kind).collect();
    k.sort_unstable();
    k
}

#[test]
fn each_anomaly_is_named_by_its_edges() {
    // G0: x's order says T1 then T2, y's says T2 then T1.
    let g0 = [
        txn(1, vec![ap(1, 1), ap(2, 1)], 1),
        txn(2, vec![ap(1, 2), ap(2, 2)], 1),
        txn(3, vec![r(1, &[1, 2]), r(2, &[2, 1])], 3),
    ];
    assert_eq!(kinds(&g0), ["G0"]);
    // G1c: each read the other's append.
    let g1c = [
        txn(1, vec![ap(1, 1), r(2, &[1])], 1),
        txn(2, vec![ap(2, 1), r(1, &[1])], 1),
    ];
    assert_eq!(kinds(&g1c), ["G1c"]);
    // G-single (read skew): T1 saw T2's append to y but not its append to x.
    let single = [
        txn(1, vec![r(1, &[]), r(2, &[1])], 2),
        txn(2, vec![ap(1, 1), ap(2, 1)], 1),
        txn(3, vec![r(1, &[1])], 3),
    ];
    assert_eq!(kinds(&single), ["G-single"]);
    // G2-item (write skew): each read the key the other appended to, and missed it.
    let skew = [
        txn(1, vec![r(1, &[]), ap(2, 1)], 1),
        txn(2, vec![r(2, &[]), ap(1, 1)], 1),
        txn(3, vec![r(1, &[1]), r(2, &[1])], 3),
    ];
    assert_eq!(kinds(&skew), ["G2-item"]);
    // G1a: an aborted transaction's append was read.
    let mut aborted = txn(1, vec![ap(1, 1)], 1);
    aborted.outcome = Outcome::Failed;
    assert_eq!(kinds(&[aborted, txn(2, vec![r(1, &[1])], 2)]), ["G1a"]);
    // G1b: a read ended in a value its transaction appended over.
    let g1b = [
        txn(1, vec![ap(1, 1), ap(1, 2)], 1),
        txn(2, vec![r(1, &[1])], 1),
    ];
    assert_eq!(kinds(&g1b), ["G1b"]);
    // A transaction that did not see its own append; a list with a value twice; two reads
    // that disagree on the order.
    assert_eq!(kinds(&[txn(1, vec![ap(1, 5), r(1, &[])], 1)]), ["internal"]);
    assert_eq!(
        kinds(&[txn(1, vec![r(1, &[3, 3])], 1)]),
        ["duplicate-elements"]
    );
    let order = [txn(1, vec![r(1, &[1, 2])], 1), txn(2, vec![r(1, &[2])], 2)];
    assert_eq!(kinds(&order), ["incompatible-order"]);
}

#[test]
fn a_cycle_is_told_transaction_by_transaction() {
    let skew = [
        txn(1, vec![r(1, &[]), ap(2, 1)], 1),
        txn(2, vec![r(2, &[]), ap(1, 1)], 1),
        txn(3, vec![r(1, &[1]), r(2, &[1])], 3),
    ];
    let report = check(&skew, Duration::from_secs(5));
    let f = &report.findings[0];
    let mut txns = f.txns.clone();
    txns.sort_unstable();
    assert_eq!(txns, [0, 1]);
    assert!(
        f.why.starts_with("a cycle of 2 transactions: T1 (client ")
            && f.why.matches(" rw key ").count() == 2,
        "{}",
        f.why
    );
    assert_eq!((report.txns, report.keys), (3, 2));
    assert_eq!(
        skew[0].describe(),
        "client 1 [read key 1: [], append 1 to key 2] at 0.001–0.002 ms: committed"
    );
    // What each model forbids.
    assert!(forbids("serializable", "G2-item"));
    assert!(!forbids("snapshot-isolation", "G2-item") && forbids("snapshot-isolation", "G-single"));
    assert!(!forbids("read-committed", "G-single") && forbids("read-committed", "G1c"));
}

/// A serial execution of random transactions on `keys` lists: each transaction sees every
/// earlier one, so the history is serializable whatever the clients and outcomes.
fn serial(seed: u64, n: usize, keys: u64) -> Vec<Txn> {
    let mut s = seed;
    let mut next = move || crate::rng::splitmix64(&mut s);
    let mut lists: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut value = 0;
    let mut out = Vec::new();
    for t in 0..n as u64 {
        let mut mops = Vec::new();
        let aborted = next() % 8 == 0;
        let mut mine = lists.clone();
        for _ in 0..1 + next() % 4 {
            let key = next() % keys;
            if next() % 2 == 0 {
                value += 1;
                mine.entry(key).or_default().push(value);
                mops.push(ap(key, value));
            } else {
                mops.push(r(key, mine.get(&key).map_or(&[][..], |l| l)));
            }
        }
        let mut txn = txn((next() % 5) as u32, mops, t * 10);
        match aborted {
            true => txn.outcome = Outcome::Failed,
            false => lists = mine,
        }
        // Answers lost now and then: the transaction happened, what it read is not known.
        if !aborted && next() % 10 == 0 {
            txn.outcome = Outcome::Unknown;
            for m in &mut txn.mops {
                if let Mop::Read { list, .. } = m {
                    *list = None;
                }
            }
        }
        out.push(txn);
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Every serial history is serializable; with a transaction whose append was read made to
    /// have aborted, it is not.
    #[test]
    fn every_serial_history_is_serializable(seed in 0u64..u64::MAX, n in 1usize..150, keys in 1u64..5) {
        let mut h = serial(seed, n, keys);
        let report = check(&h, Duration::from_secs(5));
        proptest::prop_assert!(report.findings.is_empty() && report.unknown.is_empty(), "{:?}", report);
        // (reader, key, value) of every committed read.
        let read: Vec<(usize, u64, u64)> = (h.iter().enumerate())
            .filter(|(_, t)| t.outcome == Outcome::Ok)
            .flat_map(|(i, t)| t.mops.iter().map(move |m| (i, m)))
            .filter_map(|(i, m)| match m {
                Mop::Read { key, list: Some(l) } => Some(l.iter().map(move |v| (i, *key, *v))),
                _ => None,
            })
            .flatten()
            .collect();
        let by_other = |i: usize, t: &Txn| {
            (t.mops.iter()).any(|m| {
                matches!(m, Mop::Append { key, value } if read.iter().any(|&(j, k, v)| j != i && k == *key && v == *value))
            })
        };
        let seen = (h.iter_mut().enumerate())
            .find(|(i, t)| t.outcome == Outcome::Ok && by_other(*i, t))
            .map(|(_, t)| t);
        if let Some(t) = seen {
            t.outcome = Outcome::Failed;
            let report = check(&h, Duration::from_secs(5));
            proptest::prop_assert!(report.findings.iter().any(|f| f.kind == "G1a"), "{:?}", report);
        }
    }
}
