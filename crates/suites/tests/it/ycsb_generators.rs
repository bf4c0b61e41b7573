//! dyno's YCSB generators against YCSB's own: the key sequences in `tests/it/vectors/ycsb-keys.txt`
//! were printed by YCSB's Java classes fed a fixed stream of draws (`scripts/ycsb-vectors.sh`);
//! the same stream through dyno's generators must give the same keys, every one. Then the
//! distributions' shapes: the zipfian's top-key share against the analytic value, the exact
//! Zipf's frequencies, the latest generator's preference for recent inserts.

use std::collections::HashMap;
use suites::ycsb::keys::*;

fn vectors() -> HashMap<String, Vec<i64>> {
    let text = include_str!("vectors/ycsb-keys.txt");
    (text.lines())
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next().unwrap().to_string();
            (name, words.map(|w| w.parse().unwrap()).collect())
        })
        .collect()
}

/// Where the first difference is, if any, with the neighbourhood.
fn same(name: &str, got: &[i64], want: &[i64]) {
    assert_eq!(got.len(), want.len(), "{name}: lengths");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{name}: key {i} is {} where YCSB gives {} (YCSB around it: {:?})",
            got[i],
            want[i],
            &want[i.saturating_sub(3)..(i + 3).min(want.len())]
        );
    }
}

#[test]
fn the_key_sequences_are_ycsbs() {
    let v = vectors();
    let n = v["zipfian-1000"].len();
    assert_eq!(n, 2000);

    let inputs = [
        0,
        1,
        2,
        3,
        255,
        256,
        1000,
        999_999,
        123_456_789_012,
        i64::MAX,
        -1,
    ];
    let hashes: Vec<i64> = inputs.iter().map(|&x| fnvhash64(x)).collect();
    same("fnvhash64", &hashes, &v["fnvhash64"]);

    let mut d = SplitMix(1);
    let mut z = Zipfian::with_items(1000, &mut d);
    same(
        "zipfian-1000",
        &(0..n).map(|_| z.next(&mut d)).collect::<Vec<_>>(),
        &v["zipfian-1000"],
    );

    let mut d = SplitMix(5);
    let mut g = Zipfian::with_items(1000, &mut d);
    let grown: Vec<i64> = (0..n).map(|i| g.next_of(1000 + i as i64, &mut d)).collect();
    same("zipfian-growing", &grown, &v["zipfian-growing"]);

    for (name, seed, max) in [("scrambled-0-1000", 2, 1000), ("scrambled-0-1100", 6, 1100)] {
        let mut d = SplitMix(seed);
        let mut s = ScrambledZipfian::new(0, max, &mut d);
        same(
            name,
            &(0..n).map(|_| s.next(&mut d)).collect::<Vec<_>>(),
            &v[name],
        );
    }

    let mut d = SplitMix(3);
    let mut c = Acknowledged::new(1000);
    let mut l = SkewedLatest::new(c.last(), &mut d);
    let mut latest = Vec::new();
    for i in 0..n {
        latest.push(l.next(c.last(), &mut d));
        if i % 10 == 9 {
            let k = c.issue();
            c.acknowledge(k);
        }
    }
    same(
        "latest-1000-ack-every-10",
        &latest,
        &v["latest-1000-ack-every-10"],
    );

    let mut d = SplitMix(4);
    let u = Uniform::new(0, 999);
    same(
        "uniform-0-999",
        &(0..n).map(|_| u.next(&mut d)).collect::<Vec<_>>(),
        &v["uniform-0-999"],
    );
}

/// Over 10^6 draws, the share of the most popular key of YCSB's zipfian over 1,000 items is the
/// analytic P(0) = 1 / ζ(1000, 0.99) within 1% (relative); the exact Zipf's likewise for its
/// first three keys.
#[test]
fn the_zipfians_top_keys_have_their_analytic_shares() {
    const DRAWS: usize = 1_000_000;
    let mut d = SplitMix(42);
    let mut z = Zipfian::with_items(1000, &mut d);
    let mut counts = vec![0u64; 1000];
    for _ in 0..DRAWS {
        counts[z.next(&mut d) as usize] += 1;
    }
    let p0 = 1.0 / zeta(0, 1000, ZIPFIAN_CONSTANT, 0.0);
    let share = counts[0] as f64 / DRAWS as f64;
    assert!(
        (share / p0 - 1.0).abs() < 0.01,
        "top key: {share} against {p0}"
    );

    let exact = ExactZipf::new(1000, 1.2);
    let mut counts = vec![0u64; 1000];
    for _ in 0..DRAWS {
        counts[exact.at(d.next_f64())] += 1;
    }
    for (i, &count) in counts.iter().enumerate().take(3) {
        let share = count as f64 / DRAWS as f64;
        assert!(
            (share / exact.p(i) - 1.0).abs() < 0.01,
            "key {i}: {share} against {}",
            exact.p(i)
        );
    }
}

/// Workload D's generator reads recent inserts: with 1,000 records and inserts acknowledged as
/// it goes, most draws fall among the newest 10% of keys, and none beyond the last acknowledged.
#[test]
fn latest_favours_recent_inserts() {
    let mut d = SplitMix(7);
    let mut c = Acknowledged::new(1000);
    let mut l = SkewedLatest::new(c.last(), &mut d);
    let (mut recent, mut total) = (0, 0);
    for i in 0..100_000 {
        if i % 20 == 0 {
            let k = c.issue();
            c.acknowledge(k);
        }
        let last = c.last();
        let k = l.next(last, &mut d);
        assert!((0..=last).contains(&k), "{k} beyond {last}");
        total += 1;
        recent += u32::from(k > last - (last + 1) / 10);
    }
    let share = f64::from(recent) / f64::from(total);
    assert!(share > 0.6, "{share} of draws among the newest 10%");
}

/// Acknowledgements out of order: the limit moves only over a contiguous run.
#[test]
fn the_acknowledged_counter_waits_for_gaps() {
    let mut c = Acknowledged::new(10);
    let (a, b, e) = (c.issue(), c.issue(), c.issue());
    assert_eq!((a, b, e), (10, 11, 12));
    c.acknowledge(b);
    c.acknowledge(e);
    assert_eq!(c.last(), 9);
    c.acknowledge(a);
    assert_eq!(c.last(), 12);
}
