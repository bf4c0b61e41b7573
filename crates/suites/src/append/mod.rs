//! The `append` suite: Elle's list-append workload on SQL databases (`postgres://`,
//! `mysql://`) and etcd (`etcd://`, its guarded `Txn`: `targets/src/etcd/lists.rs`), for
//! checking their isolation. `-c` clients each run `-t` transactions (or for `-d`, Jepsen's
//! time limit) of one to four
//! micro-operations — append a value unique to its key to the key's list, or read the list —
//! over `-n` keys at once (10 unless given: few keys, many conflicts; each retired for a fresh
//! one after `writes_per_key` appends, as Elle does), at the isolation level asked for
//! (`isolation`; etcd's are serializable only), in a table of the store's own schema or
//! database made anew (etcd: keys under the run's own prefix). Each
//! transaction is timed, and with `--check serializable` (or `snapshot-isolation`,
//! `read-committed`) kept in the history with what its reads returned and how it ended —
//! committed, aborted (a serialization failure, a deadlock: it did not happen) or unknown (a
//! commit whose answer was lost) — and the history checked by Elle's method when the target's
//! run ends.

mod client;
mod table;

use crate::history::Keeper;
use engine::driver::Family;
use engine::plan::setting::shared;
use engine::plan::{Kind, MAX_CLIENTS, PlanError, PlanTarget, RawPlan, Setting};
use engine::recorder::Recorder;
use engine::suite::{
    After, Clients, Common, Param, Plan, Point, RepCtx, Repeat, Settings, Suite, TargetError,
    TestOutcome, settings,
};
use results::consistency::append::Txn;
use results::{Detail, Rep, Status};
use std::sync::atomic::AtomicBool;

/// The suite.
pub struct Append;

/// The one test.
const TEST: &str = "append";

/// Keys unless `-n` says.
const DEFAULT_KEYS: u64 = 10;

/// Appends a key is given before it is retired for a fresh one, unless told.
const DEFAULT_WRITES_PER_KEY: u64 = 256;

pub static WRITES_PER_KEY: Setting = Setting {
    key: "writes_per_key",
    short: None,
    aliases: &[],
    kind: Kind::Int,
    value_name: "N",
    help: "append: appends a key is given before it is retired for a fresh one, so no list grows longer (Elle's max-writes-per-key) [default: 256].",
    heading: Some("list-append suite (Elle)"),
};

pub static ISOLATION: Setting = Setting {
    key: "isolation",
    short: None,
    aliases: &[],
    kind: Kind::Text,
    value_name: "LEVEL",
    help: "append: the transactions' isolation level on SQL databases: read-committed, repeatable-read or serializable [default: serializable; etcd's are serializable only].",
    heading: Some("list-append suite (Elle)"),
};

/// An isolation level, as SQL names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    const ALL: [(&'static str, Isolation); 3] = [
        ("read-committed", Isolation::ReadCommitted),
        ("repeatable-read", Isolation::RepeatableRead),
        ("serializable", Isolation::Serializable),
    ];

    /// The words of `SET TRANSACTION ISOLATION LEVEL`.
    fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }
}

#[derive(Debug)]
struct AppendSettings {
    keys: u64,
    writes_per_key: u64,
    budget: client::Budget,
    isolation: Isolation,
    seed: u64,
}

impl Settings for AppendSettings {
    fn record(&self, plan: &mut results::PlanRecord) {
        let level = Isolation::ALL.iter().find(|l| l.1 == self.isolation);
        plan.custom.insert(
            "append".into(),
            serde_json::json!({
                "keys": self.keys,
                "writes_per_key": self.writes_per_key,
                "transactions_per_client": self.budget.count,
                "duration_ns": self.budget.duration_ns,
                "isolation": level.map(|l| l.0),
            }),
        );
    }
    fn rep_duration_ns(&self) -> Option<u64> {
        self.budget.duration_ns
    }
}

static SETTINGS: &[&Setting] = &[
    &shared::OBJECTS,
    &shared::CLIENTS,
    &shared::THREADS,
    &shared::IO,
    &shared::NAP,
    &crate::sql::TRANSACTIONS,
    &crate::sql::DURATION,
    &ISOLATION,
    &WRITES_PER_KEY,
];

impl Suite for Append {
    fn help(&self) -> &'static str {
        "Elle's list-append transactions on SQL databases (at an isolation level) and etcd, their history checked for G0, G1, G-single and G2-item (--check serializable)"
    }

    fn family(&self) -> Family {
        Family::Lists
    }

    fn settings(&self) -> &'static [&'static Setting] {
        SETTINGS
    }

    fn checks(&self) -> &'static [&'static str] {
        &["serializable", "snapshot-isolation", "read-committed"]
    }

    fn targets_hint(&self) -> &'static str {
        "the append suite runs on SQL databases (postgres://, mysql://) and etcd://"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: 4,
            max: MAX_CLIENTS,
            why: "each client is a session of its own",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![Param::CLIENTS]
    }

    fn default_reps(&self, _: bool) -> u32 {
        1
    }

    fn default_warmup(&self) -> bool {
        false
    }

    fn resolve(&self, raw: &RawPlan, c: &Common) -> Result<Box<dyn Settings>, PlanError> {
        let keys = match raw.settings.int(&shared::OBJECTS) {
            Some(n) if !(1..=1_000_000).contains(&n.value) => {
                return Err(
                    PlanError::new(n.at, "the append suite's keys (-n) are 1 to 1000000")
                        .hint("few keys make conflicts: the default is 10"),
                );
            }
            Some(n) => n.value as u64,
            None => DEFAULT_KEYS,
        };
        let budget = budget(raw, c)?;
        let writes_per_key = match raw.settings.int(&WRITES_PER_KEY) {
            Some(w) if !(1..=1_000_000).contains(&w.value) => {
                return Err(PlanError::new(w.at, "writes per key are 1 to 1000000"));
            }
            Some(w) => w.value as u64,
            None => DEFAULT_WRITES_PER_KEY,
        };
        let isolation = match raw.settings.text(&ISOLATION) {
            None => Isolation::Serializable,
            Some(l) => match Isolation::ALL.iter().find(|x| x.0 == l.value.trim()) {
                Some(x) => x.1,
                None => {
                    return Err(PlanError::new(
                        l.at.clone(),
                        format!("{:?} is not an isolation level", l.value),
                    )
                    .hint("write read-committed, repeatable-read or serializable"));
                }
            },
        };
        Ok(Box::new(AppendSettings {
            keys,
            writes_per_key,
            budget,
            isolation,
            seed: c.seed,
        }))
    }

    fn tests(&self, _: &Plan, _: &Point) -> Vec<&'static str> {
        vec![TEST]
    }

    fn run(
        &self,
        plan: &Plan,
        point: &Point,
        target: &PlanTarget,
        interrupt: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        let s = settings::<AppendSettings>(plan);
        let store = target.config.open().map_err(TargetError::Open)?;
        run.describe(store.namespace(), store.versions());
        let sql = target.config.families().contains(&Family::Sql);
        let made = match sql {
            true => client::make(&*store),
            false if s.isolation != Isolation::Serializable => Err(
                "this target's transactions are serializable only: leave --isolation out".into(),
            ),
            false => Ok(()),
        };
        let keeper: Option<Keeper<Txn>> = Keeper::new(plan, run);
        let keys = client::Keys::new(s.keys, s.writes_per_key);
        let reach = client::Reach {
            store: &*store,
            sql,
            keys: &keys,
            used: std::sync::atomic::AtomicU64::new(0),
        };
        run.repeat(None, None, &mut |ctx| {
            if let Err(why) = &made {
                ctx.report(TestOutcome::not_run(TEST, Status::Failed, why.clone()));
                return After::Fail(why.clone());
            }
            let (o, txns) = measure(&reach, ctx, s, point);
            if let Some(k) = &keeper {
                k.add(TEST, txns);
            }
            ctx.report(o);
            After::Next
        });
        let _ = interrupt;
        if let Some(h) = keeper.and_then(|k| k.take(Vec::new(), run)) {
            let v = results::consistency::verdict::transactional(
                &h.items,
                (h.model, h.budget),
                h.tests,
                h.file,
                h.cut,
            );
            run.consistency(v);
        }
        if let Err(e) = store.close() {
            run.warn(format!("target {}: {e}", target.name));
        }
        Ok(())
    }
}

/// Each client's transactions: `-t` of them, or as many as `-d` leaves time for; not both.
fn budget(raw: &RawPlan, c: &Common) -> Result<client::Budget, PlanError> {
    let count = match raw.settings.int(&crate::sql::TRANSACTIONS) {
        Some(t) if !(1..=10_000_000).contains(&t.value) => {
            return Err(PlanError::new(t.at, "transactions must be 1 to 10000000"));
        }
        t => t.map(|t| t.value as u64),
    };
    let duration_ns = crate::sql::duration_ns(raw)?;
    if let (Some(_), Some(d)) = (count, raw.settings.text(&crate::sql::DURATION)) {
        return Err(PlanError::new(
            d.at,
            "the append suite takes transactions or a duration, not both",
        )
        .hint("leave out -t to run for the duration, or -d to run -t transactions"));
    }
    Ok(client::Budget {
        count: match (count, duration_ns) {
            (None, None) if c.quick => Some(50),
            (None, None) => Some(200),
            (count, _) => count,
        },
        duration_ns,
    })
}

/// Every client's transactions of one repetition: the outcome, and the transactions for the
/// history.
fn measure(
    reach: &client::Reach<'_>,
    ctx: &RepCtx,
    s: &AppendSettings,
    point: &Point,
) -> (TestOutcome, Vec<Txn>) {
    let clients = point.clients.max(1);
    let start = ctx.clock.now_ns();
    let threads = crate::generator_threads(reach.store, ctx.generators, clients as usize);
    let jobs = (0..clients)
        .map(|id| -> engine::fiber::Job<'_, client::ClientRun> {
            let who = (id, clients, s.seed, ctx.rep);
            Box::new(move || {
                client::run(
                    reach,
                    who,
                    (s.budget, s.isolation),
                    (ctx.clock, ctx.interrupt),
                )
            })
        })
        .collect();
    let runs: Vec<client::ClientRun> = engine::fiber::join_all(threads, jobs)
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let wall_ns = (ctx.clock.now_ns() - start).max(1);
    let mut all = Recorder::new();
    let (mut committed, mut aborted, mut unknown) = (0, 0, 0);
    let mut txns = Vec::new();
    for r in runs {
        all.merge(&r.rec);
        committed += r.committed;
        aborted += r.aborted;
        unknown += r.unknown;
        txns.extend(r.txns);
    }
    let issued = committed + aborted + unknown;
    let status = match committed {
        _ if ctx.interrupt.load(std::sync::atomic::Ordering::Relaxed) => (
            Status::Interrupted,
            Some("interrupted during the test".into()),
        ),
        0 if issued > 0 => (
            Status::Failed,
            Some(format!("no transaction committed ({issued} tried)")),
        ),
        0 => (Status::Failed, Some("no transaction ran".into())),
        _ => (Status::Ok, None),
    };
    let mut by_op = std::collections::BTreeMap::new();
    by_op.insert("transaction".to_string(), all.figures());
    let rep = Rep {
        ops: issued,
        clients,
        wall_ns,
        client_ns: Vec::new(),
        ops_per_s: results::rate::per_s(committed as f64, wall_ns),
        errors: aborted + unknown,
        latency_ns: results::stats::latency_summary(&all.latency),
        by_op,
        detail: Detail::custom(
            "append",
            serde_json::json!({
                "committed": committed,
                "aborted": aborted,
                "unknown": unknown,
            }),
        ),
    };
    (TestOutcome::ran(TEST, status, rep, all), txns)
}

impl report::View for Append {
    fn table(&self, r: &results::RunRecord, doc: &mut report::grid::Doc) -> std::io::Result<()> {
        table::render(r, doc)
    }
}

impl results::Named for Append {
    fn name(&self) -> &'static str {
        "append"
    }
}
