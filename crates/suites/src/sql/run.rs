//! A run of the `sql` suite on one target: pgbench's tables made at the plan's scale, then each
//! repetition's clients (many per generator thread) running the scripts in a closed loop, and
//! at the end the TPC-B invariant checked where the scripts keep it.

use super::SqlSettings;
use super::random::Prng;
use super::script::{Kind, Source};
use super::session::{close, reconnect, set_up};
use engine::driver::{ErrorClass, Store};
use engine::fiber::Barrier;
use engine::plan::PlanTarget;
use engine::recorder::Recorder;
use engine::suite::{After, Plan, Point, RepCtx, Repeat, TargetError, TestOutcome, settings};
use feed::{Ending, Feed, tell_failures, with_series};
use invariant::invariant;
use results::{Detail, Rep, Status};
use retry::Conflict;
pub(super) use retry::MOST_TRIES;
use schedule::Schedule;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use transaction::{Timing, transaction};

mod feed;
mod invariant;
mod retry;
mod schedule;
mod transaction;

pub(super) fn run(
    plan: &Plan,
    point: &Point,
    target: &PlanTarget,
    interrupt: &AtomicBool,
    run: &mut dyn Repeat,
) -> Result<(), TargetError> {
    let s = settings::<SqlSettings>(plan);
    let store = target.config.open().map_err(TargetError::Open)?;
    run.describe(store.namespace(), store.versions());
    let made = made(&*store, s);
    let store_ref: &dyn Store = &*store;
    let last = plan.reps + u32::from(plan.warmup) - 1;
    let single = results::hlog::single(plan.targets.len(), plan.reps, plan.warmup);
    let comment = format!(
        "dyno {} sql {} on {} ({})",
        env!("CARGO_PKG_VERSION"),
        s.test,
        target.name,
        results::redact_url(&target.url)
    );
    // The figures as they come (pgbench's -P), transactions by the interval.
    let planned = s.transactions.is_none().then_some(s.duration_ns);
    let live = Mutex::new(engine::load::Live::counting(
        planned,
        ("tx", "transactions"),
    ));
    run.repeat(Some(&live), None, &mut |ctx| {
        if let Err(why) = &made {
            ctx.report(TestOutcome::not_run(s.test, Status::Failed, why.clone()));
            return After::Fail(why.clone());
        }
        if ctx.rep > 0
            && s.pgbench
            && let Err(why) = vacuum(store_ref, s.vacuum)
        {
            ctx.report(TestOutcome::not_run(s.test, Status::Failed, why.clone()));
            return After::Fail(why);
        }
        let hlog = (s.hlog.as_ref()).map(|h| {
            results::hlog::path_for(h, &target.name, point.sweep.as_ref(), ctx.rep, single)
        });
        let hlog = hlog.as_deref().map(|h| (h, comment.as_str()));
        // A log that cannot be written stops the run before it runs, as a load's does (the
        // collector makes it again, from the clients' start).
        if let Some((path, comment)) = hlog
            && let Err(e) = results::hlog::Streamed::create(path, SystemTime::now(), comment)
        {
            ctx.report(TestOutcome::not_run(s.test, Status::Failed, e.to_string()));
            return After::Fail(e.to_string());
        }
        let mut o = measure(store_ref, ctx, s, (point, hlog));
        if ctx.rep == last
            && ctx.measured
            && o.status == Status::Ok
            && let Err(why) = invariant(store_ref, s)
        {
            o.status = Status::Failed;
            o.reason = Some(why);
        }
        ctx.report(o);
        After::Next
    });
    let _ = interrupt;
    if let Err(e) = store.close() {
        run.warn(format!("target {}: {e}", target.name));
    }
    Ok(())
}

/// pgbench's tables (at the plan's scale) and sysbench's, as the scripts need them, made in the
/// store's own schema.
fn made(store: &dyn Store, s: &SqlSettings) -> Result<(), String> {
    let mut session = store.connect_sql().map_err(|e| e.to_string())?;
    session.set_timeout(engine::driver::SETUP_TIMEOUT);
    if s.pgbench {
        (super::init::init(session.as_mut(), s.scale, &s.shape))
            .map_err(|e| format!("making pgbench's tables: {e}"))?;
    }
    if let Some(o) = &s.oltp {
        let mut p = Prng::new(s.seed);
        let mut row = || super::sysbench::row(&mut p, o);
        (super::sysbench::init(session.as_mut(), o, &mut row))
            .map_err(|e| format!("making sysbench's tables: {e}"))?;
    }
    Ok(())
}

/// Before each repetition after the first, pgbench's own step before a run: `VACUUM` of the
/// branches and the tellers, which tpcb-like updates over and over, so that each repetition
/// starts as a pgbench run does, not on the dead rows of the one before; of every table with
/// `--vacuum-all` (`-v`), of none with `--no-vacuum` (`-n`). (pgbench also empties the history,
/// which dyno keeps for the TPC-B invariant checked at the end.) PostgreSQL's: InnoDB purges
/// its own.
fn vacuum(store: &dyn Store, what: super::init::Vacuum) -> Result<(), String> {
    let Some(statement) = what.statement() else {
        return Ok(());
    };
    let mut session = store.connect_sql().map_err(|e| e.to_string())?;
    if session.dialect() != engine::driver::Dialect::Postgres {
        return Ok(());
    }
    session.set_timeout(engine::driver::SETUP_TIMEOUT);
    (session.batch(statement)).map_err(|e| format!("{statement}: {e}"))
}

/// What one client did in a repetition.
pub(super) struct ClientRun {
    pub(super) transactions: Recorder,
    /// Per script (none when there is one), its transactions.
    scripts: Vec<Recorder>,
    /// Per script, per command: its SQL's times, held [`HELD`] at a time
    /// ([`Recorder::deferred`]).
    commands: Vec<Vec<Recorder>>,
    /// A script's own mistake (an undefined variable…): the run is wrong, not the server.
    pub(super) broken: Option<String>,
    /// The connection's failure (refused, or lost) that ended this client before the run's
    /// end, as pgbench's client aborts.
    pub(super) lost: Option<String>,
    /// An open loop: how late each transaction started, after its intended start; and each
    /// transaction timed from its actual start (service time, uncorrected).
    lag: Recorder,
    service: Recorder,
    /// Transactions slower than the latency limit, and (open loop) skipped for being too late.
    late: u64,
    skipped: u64,
    /// Tries a transaction may take (pgbench's --max-tries; unset: see [`tries`]), and what the
    /// retries did.
    max_tries: Option<u32>,
    retries: u64,
    retried: u64,
    /// Transactions that failed for each [`Conflict`].
    conflicts: [u64; 3],
    /// When its clock started: connected, its statements prepared.
    began: Option<Instant>,
    /// Under `-C`: each connection's time, the last one's closing and this one's opening.
    pub(super) connections: Recorder,
}

/// A command's times a client holds before it puts them into their histogram together.
const HELD: usize = 512;

impl ClientRun {
    /// After a transaction that ended so (`Err`: the script's own failure), on a session still
    /// `usable` or not: whether the client ends here, and why, kept.
    fn ends_at(
        &mut self,
        ended: Result<Result<(), engine::driver::OpError>, String>,
        usable: bool,
    ) -> bool {
        match ended {
            Err(stop) => self.broken = Some(stop),
            // Every later statement would fail at once.
            Ok(Err(e)) if !usable => {
                let mut why = e.message.into_owned();
                if !e.class.is_connection() {
                    // The server's error, then the rollback's failure.
                    why.push_str(", and the connection failed after it");
                }
                self.lost = Some(why);
            }
            Ok(_) => {}
        }
        self.broken.is_some() || self.lost.is_some()
    }

    /// Nothing done yet: a recorder per script (when there are several) and per command.
    fn new(s: &SqlSettings) -> ClientRun {
        ClientRun {
            transactions: Recorder::new(),
            // Only a mix of scripts has a row per script.
            scripts: (s.scripts.iter())
                .filter(|_| s.scripts.len() > 1)
                .map(|_| Recorder::new())
                .collect(),
            commands: (s.scripts.iter())
                .map(|(sc, _)| {
                    sc.commands
                        .iter()
                        .map(|_| Recorder::deferred(HELD))
                        .collect()
                })
                .collect(),
            broken: None,
            lost: None,
            lag: Recorder::new(),
            service: Recorder::new(),
            late: 0,
            skipped: 0,
            max_tries: s.max_tries,
            retries: 0,
            retried: 0,
            conflicts: [0; 3],
            began: None,
            connections: Recorder::new(),
        }
    }
}

/// Every client's part of one repetition; its intervals also to `hlog` (a path and the log's
/// comment) when given.
fn measure(
    store: &dyn Store,
    ctx: &RepCtx,
    s: &SqlSettings,
    (point, hlog): (&Point, Option<(&Path, &str)>),
) -> TestOutcome {
    let clients = point.clients.max(1) as usize;
    // A rate sweep's point (a capacity search's step) sets the open loop's rate.
    let rate = point.swept("rate").map(|r| r as f64).or(s.rate);
    let start = Instant::now();
    let (runs, ended, logged) = run_clients(store, ctx, s, (clients, rate), hlog);
    // From the clients' start, all connected and prepared, to the last one's end: the
    // rate leaves out connecting, as pgbench's "tps … without initial connection time" does.
    let began = runs.iter().filter_map(|r| r.began).min().unwrap_or(start);
    let wall_ns = (ended.saturating_duration_since(began).as_nanos() as u64).max(1);
    let mut all = Recorder::new();
    let mut scripts: Vec<Recorder> = s.scripts.iter().map(|_| Recorder::new()).collect();
    let mut commands: Vec<Vec<Recorder>> = (s.scripts.iter())
        .map(|(sc, _)| sc.commands.iter().map(|_| Recorder::new()).collect())
        .collect();
    let (mut lag, mut service, mut connections) =
        (Recorder::new(), Recorder::new(), Recorder::new());
    let (mut late, mut skipped) = (0, 0);
    let (mut retries, mut retried, mut conflicts) = (0, 0, [0; 3]);
    for r in &runs {
        lag.merge(&r.lag);
        connections.merge(&r.connections);
        service.merge(&r.service);
        late += r.late;
        skipped += r.skipped;
        retries += r.retries;
        retried += r.retried;
        for (a, b) in conflicts.iter_mut().zip(r.conflicts) {
            *a += b;
        }
        all.merge(&r.transactions);
        for (a, b) in scripts.iter_mut().zip(&r.scripts) {
            a.merge(b);
        }
        for (a, b) in commands.iter_mut().zip(&r.commands) {
            for (x, y) in a.iter_mut().zip(b) {
                x.merge(y);
            }
        }
    }
    let mut by_op = by_op(s, &scripts, &commands);
    if rate.is_some() {
        by_op.insert(super::table::LAG.into(), lag.figures());
        by_op.insert(super::table::SERVICE.into(), service.figures());
    }
    if s.connect {
        by_op.insert(super::table::CONNECTIONS.into(), connections.figures());
    }
    let errors = all.error_count();
    let ok = all.ops - errors;
    let mut figures = serde_json::json!({
        "transactions": all.ops,
        "failed": errors,
        "scale": s.scale,
        "late": late,
        "skipped": skipped,
        "retries": retries,
        "retried": retried,
        "clients_lost": runs.iter().filter(|r| r.lost.is_some()).count(),
    });
    for (c, n) in Conflict::ALL.iter().zip(conflicts) {
        figures[c.figure()] = n.into();
    }
    let rep = Rep {
        ops: all.ops,
        clients: clients as u32,
        wall_ns,
        client_ns: Vec::new(),
        ops_per_s: results::rate::per_s(ok as f64, wall_ns),
        errors,
        latency_ns: results::stats::latency_summary(&all.latency),
        by_op,
        detail: with_series(Detail::custom("sql", figures), ctx),
    };
    let status = verdict(&runs, (ok, errors), ctx.interrupt, logged);
    TestOutcome::ran(s.test, status, rep, all)
}

/// The case's status, and why when not ok: the script's own failure first, then clients ended
/// by their connection (pgbench's "Run was aborted; the above results are incomplete").
fn verdict(
    runs: &[ClientRun],
    (ok, failed): (u64, u64),
    interrupt: &AtomicBool,
    logged: std::io::Result<()>,
) -> (Status, Option<String>) {
    if let Some(why) = runs.iter().find_map(|r| r.broken.as_ref()) {
        return (Status::Failed, Some(format!("the script failed: {why}")));
    }
    let lost: Vec<&String> = runs.iter().filter_map(|r| r.lost.as_ref()).collect();
    if let Some(first) = lost.first() {
        let why = format!(
            "{} of {} clients ended before the run did, their connection failed (the first: \
             {first}); the figures, of the {ok} transactions that succeeded, cover less than was \
             asked",
            lost.len(),
            runs.len()
        );
        return (Status::Failed, Some(why));
    }
    match ok {
        0 if failed > 0 => (
            Status::Failed,
            Some(format!("no transaction succeeded ({failed} failed)")),
        ),
        0 => (Status::Failed, Some("no transaction ran".into())),
        _ if interrupt.load(Ordering::Relaxed) => (
            Status::Interrupted,
            Some("interrupted during the test".into()),
        ),
        _ => match logged {
            Ok(()) => (Status::Ok, None),
            Err(e) => (Status::Failed, Some(e.to_string())),
        },
    }
}

/// The record's rows by operation: each script's transactions (when there are several), and
/// each SQL command of each script, named by its script, line and first words (a command
/// written several times in a script is one row, named by its first line).
fn by_op(
    s: &SqlSettings,
    scripts: &[Recorder],
    commands: &[Vec<Recorder>],
) -> BTreeMap<String, results::OpFigures> {
    let mut out = BTreeMap::new();
    for (k, (script, _)) in s.scripts.iter().enumerate() {
        if s.scripts.len() > 1 {
            out.insert(format!("script {}", script.name), scripts[k].figures());
        }
        let mut rows: Vec<(&str, usize, Recorder)> = Vec::new();
        for (i, c) in script.commands.iter().enumerate() {
            if let Kind::Sql { text, .. } = &c.kind {
                match rows.iter_mut().find(|(t, ..)| t == text) {
                    Some((.., r)) => r.merge(&commands[k][i]),
                    None => rows.push((text, c.line, commands[k][i].clone())),
                }
            }
        }
        for (text, line, r) in rows {
            let words: Vec<&str> = text.split_whitespace().take(4).collect();
            let words = super::sysbench::label(text).map_or(words.join(" "), str::to_string);
            let name = format!("{}:{line:03} {words}", script.name);
            out.insert(name, r.figures());
        }
    }
    out
}

/// One client's transactions, once every client has passed `gate`: until the duration ends,
/// or its count of them is done.
fn client_run(
    store: &dyn Store,
    (ctx, gate): (&RepCtx, &Barrier),
    s: &SqlSettings,
    (id, clients, schedule, feed): (usize, usize, Option<&Schedule>, Option<&Feed>),
) -> ClientRun {
    let mut out = ClientRun::new(s);
    // Every client is connected and prepared before any starts, as pgbench's and sysbench's
    // threads meet at a barrier: the clock runs with all of them at work, none still logging
    // in (and making the server fork a backend) while others run.
    let arrival = Arrival(gate);
    let seed = rep_seed(s.seed, ctx.rep);
    let set_up = set_up(store, s, (id, clients, seed), &mut out);
    drop(arrival);
    let Some((session, mut ready, mut client)) = set_up else {
        // Refused before the start: told in the first interval.
        tell_failures((feed, id), [0; ErrorClass::COUNT], &out);
        return out;
    };
    let mut session = Some(session);
    if s.connect {
        // Each transaction opens its own: the one made to check the scripts is not kept.
        close(&mut session);
    }
    // Under -C: how long closing the last transaction's connection took.
    let mut closing = Duration::ZERO;
    let mut choose = Prng::new(seed.wrapping_add(id as u64 + 1));
    let total: u64 = s.scripts.iter().map(|(_, w)| w).sum();
    let start = Instant::now();
    out.began = Some(start);
    if let Some(f) = feed {
        f.began(start);
    }
    let deadline = start + Duration::from_nanos(s.duration_ns);
    let limit = s.latency_limit_ns.map(Duration::from_nanos);
    let (mut done, mut turn) = (0u64, 0);
    loop {
        // A transaction that did not wait (a script without SQL) lets the thread's other
        // clients run, and the coarse clock move, before the next.
        engine::fiber::take_turn(&mut turn);
        let over = match s.transactions {
            Some(n) => done >= n,
            // The coarse clock: behind by no more than this client's last turn.
            None => engine::fiber::coarse_now() >= deadline,
        };
        if over || ctx.interrupt.load(Ordering::Relaxed) {
            return out;
        }
        done += 1;
        let mut intended = None;
        if let Some(schedule) = schedule {
            let due = schedule.take(start);
            if s.transactions.is_none() && due >= deadline {
                return out;
            }
            // Already later than the limit when due: skipped, as pgbench skips it.
            if limit.is_some_and(|l| Instant::now() > due + l) {
                out.skipped += 1;
                continue;
            }
            engine::fiber::sleep_until(due);
            intended = Some(due);
        }
        let k = pick(&mut choose, s, total);
        let mut connected = None;
        if s.connect {
            let places = (&mut session, &mut ready[..]);
            let before = out.transactions.errors;
            connected = reconnect(store, (s, k), places, (&mut out, closing));
            if connected.is_none() {
                tell_failures((feed, id), before, &out);
                return out;
            }
        }
        let Some(open) = session.as_deref_mut() else {
            return out;
        };
        let timing = Timing {
            intended,
            connected,
            limit,
            sysbench: s.scripts[k].0.source == Source::Sysbench,
            ends: s.transactions.is_none().then_some(deadline),
            feed: feed.map(|f| (f, id)),
            interrupt: ctx.interrupt,
        };
        let ended = transaction(&mut client, &mut ready[k], open, &mut out, (k, timing));
        if out.ends_at(ended, open.usable()) {
            return out;
        }
        if s.connect {
            closing = close(&mut session);
        }
    }
}

/// The clients of one repetition, many per generator thread, started together: what each did,
/// when the last ended (not when the figures' collector, later, had told the last interval and
/// made its log durable), and whether the intervals' `.hlog`, if asked for, was written whole.
fn run_clients(
    store: &dyn Store,
    ctx: &RepCtx,
    s: &SqlSettings,
    (clients, rate): (usize, Option<f64>),
    hlog: Option<(&Path, &str)>,
) -> (Vec<ClientRun>, Instant, std::io::Result<()>) {
    let threads = super::super::generator_threads(store, ctx.generators, clients);
    let gate = Barrier::new(clients);
    let gate = &gate;
    // An open loop: the run's arrivals, taken by whichever client is free.
    let seed = rep_seed(s.seed, ctx.rep).wrapping_mul(31).wrapping_add(7);
    let schedule = rate.map(|r| Schedule::new(r, seed));
    let schedule = schedule.as_ref();
    let feed = (ctx.live).map(|_| Feed::new(clients, Duration::from_nanos(s.interval_ns)));
    let feed = feed.as_ref();
    let jobs = (0..clients)
        .map(|id| -> engine::fiber::Job<'_, ClientRun> {
            let shared = (id, clients, schedule, feed);
            Box::new(move || client_run(store, (ctx, gate), s, shared))
        })
        .collect();
    std::thread::scope(|scope| {
        // A client that never arrives (its generator thread failed) does not hold the others
        // for ever; nor does the gate outlast an interruption.
        scope.spawn(|| gate.open_unless_released(GATE_LIMIT, ctx.interrupt));
        let collector =
            (feed.zip(ctx.live)).map(|(f, live)| scope.spawn(move || f.collect(live, hlog)));
        // Told however the clients end, a panic included: the collector waits for it.
        let ending = Ending(feed);
        let runs = engine::fiber::join_all(threads, jobs);
        drop(ending);
        let ended = Instant::now();
        let logged = match collector.map(|c| c.join()) {
            Some(Ok(logged)) => logged,
            Some(Err(_)) => Err(std::io::Error::other("the figures' collector failed")),
            None => Ok(()),
        };
        (
            runs.into_iter().filter_map(Result::ok).collect(),
            ended,
            logged,
        )
    })
}

/// Repetition `rep`'s seed: the plan's for the first (the warm-up, when there is one), so that
/// it draws what pgbench draws with that seed, and one more for each after it, so that a
/// repetition does not read again the very rows the one before it read (and found cached).
fn rep_seed(seed: u64, rep: u32) -> u64 {
    seed.wrapping_add(u64::from(rep))
}

/// How long the clients wait for each other at the start, at most: every one connected and
/// its statements prepared.
const GATE_LIMIT: Duration = Duration::from_secs(120);

/// A client's arrival at the start: when dropped, even by a panic, so the others do not wait
/// for it forever.
struct Arrival<'a>(&'a Barrier);

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        self.0.wait();
    }
}

/// The script a transaction runs: by weight, as pgbench draws it.
fn pick(p: &mut Prng, s: &SqlSettings, total: u64) -> usize {
    if s.scripts.len() == 1 {
        return 0;
    }
    let mut w = p.uint_range(0, total - 1) as i64;
    for (k, (_, weight)) in s.scripts.iter().enumerate() {
        w -= *weight as i64;
        if w < 0 {
            return k;
        }
    }
    s.scripts.len() - 1
}
