//! dyno's suites, one folder (or file) each, and their registry.
//!
//! A suite is one module here implementing [`engine::suite::Suite`] (how it runs) and
//! [`report::View`] (how its records read), named once through [`results::Named`], and one line
//! in [`BUILT_IN`]. Everything of a suite lives in its folder: its settings, their resolution and
//! the shard rule, how a repetition runs, its record detail and how shards of it merge, its tables
//! and plots. The engine holds the mechanisms and names no suite; the renderers neither. What the
//! store suites share — opening the store, describing its cases, the server's own figures between
//! tests, closing it — is `on_store`.

pub mod append;
pub mod history;
pub mod kv;
pub mod load;
pub mod magma;
pub mod namespace;
pub mod shootout;
pub mod sql;
pub mod ycsb;

use engine::driver::{ServerOp, Store};
use engine::plan::PlanTarget;
use engine::shard::Shard;
use engine::suite::{After, RepCtx, Repeat, Suite, TargetError, TestOutcome};
use std::sync::atomic::AtomicBool;

/// A suite of a registry: how it runs and how its records read.
pub trait Entry: Suite + report::View {}

impl<T: Suite + report::View> Entry for T {}

/// Every suite of this build, in the order a run with no suite named tries them: the first
/// whose operation family every target speaks runs.
pub static BUILT_IN: [&dyn Entry; 8] = [
    &shootout::Shootout,
    &magma::Magma,
    &load::Load,
    &namespace::Namespace,
    &kv::Kv,
    &ycsb::Ycsb,
    &sql::Sql,
    &append::Append,
];

/// The suites of `entries`, as the plan and the runner see them.
pub fn suites(entries: &[&'static dyn Entry]) -> Vec<&'static dyn Suite> {
    entries.iter().map(|e| *e as &dyn Suite).collect()
}

/// The suites of `entries`, as the renderers see them.
pub fn views(entries: &[&'static dyn Entry]) -> Vec<&'static dyn report::View> {
    entries.iter().map(|e| *e as &dyn report::View).collect()
}

/// A suite whose shards split the clients: every point's, so that no shard has none.
fn clients_split(plan: &engine::suite::Plan, shard: Shard) -> Result<(), String> {
    let fewest = (plan.sweeps.iter())
        .filter(|s| s.param == "clients")
        .flat_map(|s| s.values.iter().copied())
        .chain([u64::from(plan.clients)])
        .min()
        .unwrap_or(0);
    match fewest < u64::from(shard.count) {
        true => Err(format!(
            "{fewest} clients cannot be split over {} shards: give -c (and every swept client count) at least {}",
            shard.count, shard.count
        )),
        false => Ok(()),
    }
}

/// A store suite's shards share one namespace and all load it before any test: they meet.
fn shared_namespace(suite: &str, meet: bool) -> Result<(), String> {
    match meet {
        true => Ok(()),
        false => Err(format!(
            "the {suite} suite's shards share one namespace and all load it before any test: give --rendezvous HOST:PORT (rank 0's)"
        )),
    }
}

/// A store suite's state on one opened store, repetition after repetition.
/// A read transaction of one key (`begin`, `get`, `commit`): the kv and ycsb suites' read.
pub(crate) fn get_tx(
    s: &mut dyn engine::driver::Session,
    key: u64,
    out: &mut Vec<u8>,
) -> Result<(), engine::driver::OpError> {
    s.begin(engine::driver::TxMode::Read)?;
    s.get(key, out)?;
    s.commit()
}

/// A write transaction of one key, acknowledged when the commit returns.
pub(crate) fn put_tx(
    s: &mut dyn engine::driver::Session,
    key: u64,
    value: &[u8],
) -> Result<(), engine::driver::OpError> {
    s.begin(engine::driver::TxMode::Write)?;
    s.put(key, value)?;
    s.commit()
}

pub(crate) trait StoreRun: Send {
    /// Runs every test of repetition `ctx.rep`, reporting each as it ends.
    fn run_rep(&mut self, ctx: &RepCtx, report: &mut dyn FnMut(TestOutcome));
}

/// Between a store suite's tests: whether a `restart-clients` fault fell since the last look.
/// The store suites restart their clients between tests, so that no test's transactions are
/// cut in two.
pub(crate) struct ClientRestarts<'a> {
    epoch: &'a dyn Fn() -> u64,
    seen: u64,
}

impl<'a> ClientRestarts<'a> {
    pub fn new(epoch: &'a dyn Fn() -> u64) -> ClientRestarts<'a> {
        ClientRestarts {
            seen: epoch(),
            epoch,
        }
    }

    /// True once after each fault (or several) since the last call.
    pub fn due(&mut self) -> bool {
        let now = (self.epoch)();
        std::mem::replace(&mut self.seen, now) != now
    }

    /// Says in `o`'s reason that its clients were restarted before it (`what`: how).
    pub fn note(o: &mut TestOutcome, what: &str) {
        let note = format!("{what} before this test: a restart-clients fault");
        o.reason = Some(match o.reason.take() {
            Some(why) => format!("{why} ({note})"),
            None => note,
        });
    }
}

/// Runs a store suite on `target`: opens the store (an error fails the target's cases), has
/// `make` set the suite up on it, runs its repetitions through `run` with the server's own
/// figures of each measured test attached, and closes the store.
pub(crate) fn on_store(
    target: &PlanTarget,
    interrupt: &AtomicBool,
    run: &mut dyn Repeat,
    make: &dyn for<'s> Fn(&'s dyn Store, &'s AtomicBool) -> Box<dyn StoreRun + 's>,
) -> Result<(), TargetError> {
    let store = target.config.open().map_err(TargetError::Open)?;
    run.describe(store.namespace(), store.versions());
    let mut suite = make(&*store, interrupt);
    // The server's figures are read between tests (outside any timed part).
    let mut server_before = store.server_stats().and_then(Result::ok);
    let shared: &dyn Store = &*store;
    run.repeat(None, None, &mut |ctx| {
        suite.run_rep(ctx, &mut |mut o| {
            if let Some(before) = &server_before {
                let after = shared.server_stats().and_then(Result::ok);
                if let (Some(after), true) = (&after, ctx.measured) {
                    o.server = server_delta(before, after);
                }
                if after.is_some() {
                    server_before = after;
                }
            }
            ctx.report(o);
        });
        After::Next
    });
    drop(suite);
    if let Err(e) = store.close() {
        run.warn(format!("target {}: {e}", target.name));
    }
    Ok(())
}

/// What the server did between two snapshots of its cumulative figures.
pub(crate) fn server_delta(
    before: &[ServerOp],
    after: &[ServerOp],
) -> Vec<(String, u64, results::Histogram)> {
    after
        .iter()
        .filter_map(|a| {
            let mut h = a.latency.clone();
            let mut count = a.count;
            if let Some(b) = before.iter().find(|b| b.op == a.op) {
                count = count.saturating_sub(b.count);
                h.subtract(&b.latency).ok()?;
            }
            (count > 0).then(|| (a.op.clone(), count, h))
        })
        .collect()
}

/// The threads that carry `clients` clients of `store`: the plan's generator threads where its
/// sessions can share one ([`Store::many_per_thread`]), else one thread per client.
pub(crate) fn generator_threads(
    store: &dyn Store,
    generators: engine::fiber::Generators,
    clients: usize,
) -> engine::fiber::Generators {
    let threads = if store.many_per_thread() {
        generators.threads.clamp(1, clients.max(1))
    } else {
        clients.max(1)
    };
    engine::fiber::Generators {
        threads,
        ..generators
    }
}

/// This generator's shard of the plan: 0 of 1 alone.
pub(crate) fn shard_of(plan: &engine::suite::Plan) -> Shard {
    (plan.shard.as_ref()).map_or(Shard { index: 0, count: 1 }, |s| Shard {
        index: s.index,
        count: s.count,
    })
}

/// Opens the target: alone, a namespace of the run's own; a shard, the namespace its shards
/// share, made by rank 0 before the others open it.
pub(crate) fn open_shared(
    target: &PlanTarget,
    shard: Shard,
    rendezvous: Option<&engine::shard::Rendezvous>,
) -> Result<Box<dyn Store>, TargetError> {
    if shard.count == 1 {
        return target.config.open().map_err(TargetError::Open);
    }
    let Some(r) = rendezvous else {
        return Err(TargetError::Meet(
            "the shards of a store suite share one namespace and load it before any runs: give --rendezvous HOST:PORT".into(),
        ));
    };
    let share = engine::driver::Share {
        run: r.run.clone(),
        owner: shard.index == 0,
    };
    let meet = || r.meet().map_err(|e| TargetError::Meet(e.to_string()));
    if share.owner {
        // Made, then the others are let in; failing, rank 0 ends the run on every shard (they
        // never open a namespace that was not made).
        let store = match target.config.open_shared(&share) {
            Ok(s) => s,
            Err(e) => {
                r.abort(&format!("rank 0 could not open {}: {e}", target.name));
                return Err(TargetError::Open(e));
            }
        };
        if let Err(e) = meet() {
            let _ = store.close();
            return Err(e);
        }
        Ok(store)
    } else {
        meet()?;
        target.config.open_shared(&share).map_err(|e| {
            r.abort(&format!(
                "shard {} could not open {}: {e}",
                shard.index, target.name
            ));
            TargetError::Open(e)
        })
    }
}

/// Closes a store [`open_shared`] opened: a shard first waits for every other to be done with
/// the namespace they share, so rank 0 deletes it last.
pub(crate) fn close_shared(store: Box<dyn Store>, target: &PlanTarget, run: &mut dyn Repeat) {
    if let Some(r) = run.rendezvous()
        && let Err(e) = r.meet()
    {
        run.warn(format!("target {}: {e}", target.name));
    }
    if let Err(e) = store.close() {
        run.warn(format!("target {}: {e}", target.name));
    }
}

/// What a store suite's table says of a shard's record, or of a merged one.
pub(crate) fn shard_note(plan: &results::PlanRecord) -> Option<String> {
    if let Some(s) = &plan.shard {
        return Some(format!(
            "shard {} of {}: this record holds its part of the plan (its slice of the entries, its clients' operations); `dyno merge` adds the shards into the whole",
            s.index, s.count
        ));
    }
    (!plan.merged.is_empty()).then(|| {
        format!(
            "{} shards merged: counts and histograms added exactly",
            plan.merged.len()
        )
    })
}

#[cfg(test)]
mod tests {
    /// A key several suites read is one flag: their descriptions must agree on what it is.
    #[test]
    fn suites_that_share_a_setting_agree_on_its_kind_and_flag() {
        let suites = super::suites(&super::BUILT_IN);
        for d in engine::suite::catalogue(&suites).by_key() {
            for s in &d[1..] {
                assert_eq!(
                    (s.kind, s.short, s.aliases),
                    (d[0].kind, d[0].short, d[0].aliases),
                    "{}",
                    s.key
                );
            }
        }
    }
}
