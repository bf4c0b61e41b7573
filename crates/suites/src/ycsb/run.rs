//! The load phase and each workload's run: clients on fibers, their part of a shard's, their figures gathered.

use super::*;
use crate::history::{Keeper, Local};

/// The load phase: this shard's clients insert its slice of the records (all of them alone),
/// client `c` of `k` the slice's records `c, c+k, …`.
pub(super) fn load(
    store: &dyn Store,
    ctx: &RepCtx,
    point: &Point,
    (records, shard): (i64, Shard),
    (virtual_time, keeper): (bool, Option<&Keeper>),
) -> TestOutcome {
    let (_, clients) = clients_of(point, shard);
    let first = shard.first(records as u64) as i64;
    let end = first + shard.part(records as u64) as i64;
    let start = ctx.clock.now_ns();
    let threads = crate::generator_threads(store, ctx.generators, clients as usize);
    let jobs = (0..clients)
        .map(|c| -> engine::fiber::Job<'_, (Recs, u64)> {
            let clock = client_clock(ctx, virtual_time);
            let mut history = keeper.map(|_| Local::new(ctx.clock, c));
            Box::new(move || {
                let mut rec: Recs = Default::default();
                let t0 = clock.now_ns();
                let mut session = match store.connect(&clock) {
                    Ok(s) => s,
                    Err(e) => {
                        rec[slot(Op::Insert)].fail(e);
                        return (rec, 0);
                    }
                };
                let mut val = Vec::with_capacity(RECORD);
                let mut k = first + i64::from(c);
                while k < end && !ctx.interrupt.load(Ordering::Relaxed) {
                    record(k, 0, &mut val);
                    let o0 = clock.now_ns();
                    let h0 = history.as_ref().map_or(0, Local::now);
                    let r = write(&mut *session, k, &val);
                    if let Some(h) = &mut history {
                        note(h, (Op::Insert, k, h0), &r, (&[], &val, &[]));
                    }
                    rec[slot(Op::Insert)].record(clock.now_ns() - o0, r);
                    k += i64::from(clients);
                }
                if let (Some(keeper), Some(h)) = (keeper, history) {
                    keeper.add("load", h.ops());
                }
                (rec, clock.now_ns() - t0)
            })
        })
        .collect();
    let runs: Vec<(Recs, u64)> = engine::fiber::join_all(threads, jobs)
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let client_ns: Vec<u64> = runs.iter().map(|r| r.1).collect();
    let wall = wall_of(ctx, start, virtual_time, &client_ns);
    let recs = runs.into_iter().map(|r| r.0).collect();
    let interrupted = ctx.interrupt.load(Ordering::Relaxed);
    let mut o = outcome(
        "load",
        clients,
        wall,
        client_ns,
        recs,
        (BTreeMap::new(), None, interrupted),
        &[],
    );
    // A shard's slice, as YCSB's insertstart and insertcount.
    if shard.count > 1
        && let Some(Detail::Custom { figures, .. }) = o.rep.as_mut().map(|r| &mut r.detail)
    {
        figures["insertstart"] = first.into();
        figures["insertcount"] = (end - first).into();
    }
    o
}

/// This shard's clients of the point's: the global number of its first, and how many.
pub(super) fn clients_of(point: &Point, shard: Shard) -> (u32, u32) {
    let all = u64::from(point.clients.max(1));
    (shard.first(all) as u32, shard.part(all) as u32)
}

/// One workload on every client: `operations` shared among them.
/// The exact Zipf over the records a zipfian workload draws from with `exact:THETA`.
fn exact_zipf(
    zipf: ZipfMode,
    w: &Workload,
    records: i64,
) -> Option<std::sync::Arc<keys::ExactZipf>> {
    match zipf {
        ZipfMode::Exact(theta) if w.distribution == Distribution::Zipfian => Some(
            std::sync::Arc::new(keys::ExactZipf::new(records as usize, theta)),
        ),
        _ => None,
    }
}

/// Client `c`'s own stream: the plan's seed, the repetition, the workload (`index`), the
/// client, mixed — SplitMix64 states a step apart are one stream shifted, and clients drawing
/// the same keys and versions a draw apart would write the same values (a history could not
/// tell their writes apart).
fn client_stream(seed: u64, rep: u32, index: usize, c: u32) -> u64 {
    let mut stream = seed ^ (u64::from(rep) << 48) ^ ((index as u64) << 32) ^ u64::from(c);
    results::rng::splitmix64(&mut stream)
}

pub(super) fn run_workload(
    store: &dyn Store,
    ctx: &RepCtx,
    point: &Point,
    (w, index): (&Workload, usize),
    (records, operations, seed, shard): (i64, u64, u64, Shard),
    (zipf, rate, virtual_time): (ZipfMode, Option<f64>, bool),
    keeper: Option<&Keeper>,
) -> TestOutcome {
    // Every shard's clients count: each draws its share of the operations and of the rate by
    // its global number, so the shards' parts add up to the workload.
    let all = point.clients.max(1);
    let (first, clients) = clients_of(point, shard);
    let shared = Shared::new(records);
    let exact = exact_zipf(zipf, w, records);
    let start = ctx.clock.now_ns();
    let threads = crate::generator_threads(store, ctx.generators, clients as usize);
    let shared = &shared;
    let jobs = (first..first + clients)
        .map(
            |c| -> engine::fiber::Job<'_, (Option<Client>, u64, Option<OpError>)> {
                let share = operations / u64::from(all)
                    + u64::from(u64::from(c) < operations % u64::from(all));
                let client = Client {
                    workload: w,
                    shared,
                    records,
                    shard,
                    operations: share,
                    draws: SplitMix(client_stream(seed, ctx.rep, index, c)),
                    rec: Default::default(),
                    drawn: BTreeMap::new(),
                    scan_lengths: Vec::new(),
                    exact: exact.clone(),
                    corrupt: None,
                    history: keeper.map(|_| Local::new(ctx.clock, c)),
                };
                let clock = client_clock(ctx, virtual_time);
                // The target rate, each client its share.
                let per_s = rate.map(|r| r / f64::from(all));
                Box::new(move || {
                    let t0 = clock.now_ns();
                    match store.connect(&clock) {
                        Ok(mut session) => {
                            let c =
                                client.run(&mut *session, operations, ctx.interrupt, &clock, per_s);
                            (Some(c), clock.now_ns() - t0, None)
                        }
                        Err(e) => (None, 0, Some(e)),
                    }
                })
            },
        )
        .collect();
    let done: Vec<(Option<Client>, u64, Option<OpError>)> = engine::fiber::join_all(threads, jobs)
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let ns: Vec<u64> = done.iter().map(|d| d.1).collect();
    let wall = wall_of(ctx, start, virtual_time, &ns);
    let mut drawn: BTreeMap<i64, u64> = BTreeMap::new();
    let mut corrupt = None;
    let mut recs = Vec::new();
    let mut client_ns = Vec::new();
    let mut lengths = Vec::new();
    for (c, ns, err) in done {
        client_ns.push(ns);
        match (c, err) {
            (Some(c), _) => {
                if let (Some(keeper), Some(h)) = (keeper, c.history) {
                    keeper.add(w.name, h.ops());
                }
                for (k, n) in c.drawn {
                    *drawn.entry(k).or_default() += n;
                }
                corrupt = corrupt.or(c.corrupt);
                lengths.extend(c.scan_lengths);
                recs.push(c.rec);
            }
            (None, Some(e)) => {
                let mut rec: Recs = Default::default();
                rec[slot(Op::Read)].fail(e);
                recs.push(rec);
            }
            (None, None) => {}
        }
    }
    let interrupted = ctx.interrupt.load(Ordering::Relaxed);
    outcome(
        w.name,
        clients,
        wall,
        client_ns,
        recs,
        (drawn, corrupt, interrupted),
        &lengths,
    )
}
