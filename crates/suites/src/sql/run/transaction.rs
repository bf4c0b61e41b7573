//! One transaction of a client: its tries (pgbench's `--max-tries`, sysbench's restarts) and
//! its figures.

use super::super::client::{self, Client, Failure};
use super::ClientRun;
use super::feed::Feed;
use super::retry::{conflict, tries};
use engine::driver::SqlSession;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// When a transaction was meant to start (an open loop's schedule), when its connection was
/// made (`-C`), how slow is late, whether its script is one of sysbench's (which retries more
/// kinds of conflict, and draws afresh), and when the run ends (with `--duration`).
#[derive(Clone, Copy)]
pub(super) struct Timing<'a> {
    pub(super) intended: Option<Instant>,
    /// Under `-C`, the transaction starts once connected: preparing its statements on the new
    /// connection is part of it, as in pgbench (which prepares them as they are first sent).
    pub(super) connected: Option<Instant>,
    pub(super) limit: Option<Duration>,
    pub(super) sysbench: bool,
    pub(super) ends: Option<Instant>,
    /// Where the live figures go, and this client's place there.
    pub(super) feed: Option<(&'a Feed, usize)>,
    /// Set by Ctrl-C (or a broken threshold): no more tries.
    pub(super) interrupt: &'a AtomicBool,
}

/// One transaction, recorded, and how it ended; `Err` when the script itself is wrong (the
/// client stops).
pub(super) fn transaction(
    client: &mut Client,
    ready: &mut client::Ready<'_>,
    session: &mut dyn SqlSession,
    out: &mut ClientRun,
    (k, timing): (usize, Timing<'_>),
) -> Result<Result<(), engine::driver::OpError>, String> {
    let now = timing.connected.unwrap_or_else(Instant::now);
    // In an open loop, latency runs from the intended start: a late start is the server's.
    let started = timing.intended.unwrap_or(now);
    // pgbench's --max-tries: a serialization failure or a deadlock runs the transaction again,
    // the client's generator as it was at the transaction's start, so it draws the same values.
    // sysbench's built-ins retry more conflicts, and draw afresh, as sysbench runs its event
    // again.
    let at_start = client.prng.clone();
    let most = tries(out.max_tries, timing.sysbench);
    let mut tries = 0;
    let result = loop {
        tries += 1;
        let commands = &mut out.commands[k];
        let result = client.run(
            ready,
            session,
            &mut |i, took| commands[i].record(took.as_nanos() as u64, Ok(0)),
            &mut engine::fiber::sleep,
        );
        let Err(Failure::Sql { error, .. }) = &result else {
            break result;
        };
        // As pgbench: no more tries once the run is over, or the transaction is later than
        // the latency limit; nor once interrupted.
        let now = Instant::now();
        let again = tries < most
            && !timing.interrupt.load(Ordering::Relaxed)
            && timing.ends.is_none_or(|end| now < end)
            && timing
                .limit
                .is_none_or(|l| now.duration_since(started) <= l);
        if conflict(&error.message, timing.sysbench).is_none() || !again {
            break result;
        }
        let _ = session.batch("ROLLBACK");
        out.retries += 1;
        if !timing.sysbench {
            client.prng = at_start.clone();
        }
    };
    if tries > 1 {
        out.retried += 1;
    }
    let end = Instant::now();
    let took = end.duration_since(started).as_nanos() as u64;
    let served = end.duration_since(now).as_nanos() as u64;
    let outcome = match result {
        Ok(()) => Ok(0),
        Err(Failure::Sql { line, error }) => {
            // The transaction is over: roll back what it left open. The command it failed at
            // counts the failure (pgbench's -r "failures"), untimed.
            let _ = session.batch("ROLLBACK");
            if let Some(r) = out.commands[k].get_mut(client.at) {
                r.fail(error.clone());
            }
            if let Some(c) = conflict(&error.message, timing.sysbench) {
                out.conflicts[c as usize] += 1;
            }
            Err(engine::driver::OpError::new(
                error.class,
                format!("line {line}: {}", error.message),
            ))
        }
        Err(f @ Failure::Script { .. }) => return Err(f.to_string()),
    };
    let ended = outcome.as_ref().map(drop).map_err(Clone::clone);
    tally(out, (k, timing), (took, served), outcome);
    Ok(ended)
}

/// A transaction's figures: as pgbench's, a failed one is counted, by class, but its time (to
/// the failure) is no transaction's latency, nor late.
fn tally(
    out: &mut ClientRun,
    (k, timing): (usize, Timing<'_>),
    (took, served): (u64, u64),
    outcome: Result<u64, engine::driver::OpError>,
) {
    let mut rows = [Some(&mut out.transactions), out.scripts.get_mut(k)];
    match outcome {
        Ok(_) => {
            for r in rows.iter_mut().flatten() {
                r.record(took, Ok(0));
            }
            if timing.limit.is_some_and(|l| took > l.as_nanos() as u64) {
                out.late += 1;
            }
            // In an open loop, how late it started (its latency less its service time), and
            // its service time, as pgbench's lag: of the transactions that succeeded.
            if timing.intended.is_some() {
                out.lag.record(took.saturating_sub(served), Ok(0));
                out.service.record(served, Ok(0));
            }
            if let Some((feed, id)) = timing.feed {
                feed.record(id, Ok((took, timing.intended.map(|_| served))));
            }
        }
        Err(e) => {
            if let Some((feed, id)) = timing.feed {
                feed.record(id, Err(e.class));
            }
            for r in rows.iter_mut().flatten() {
                r.fail(e.clone());
            }
        }
    }
}
