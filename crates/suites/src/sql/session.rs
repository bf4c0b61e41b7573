//! A client's session: opened and its scripts made ready before the clock starts, opened
//! again for each transaction under `-C`; and the client's generator and variables.

use super::SqlSettings;
use super::client::{self, Client, Failure};
use super::eval::{Value, Vars};
use super::random::Prng;
use super::run::ClientRun;
use super::script::Source;
use engine::driver::{SqlSession, Store};
use std::time::{Duration, Instant};

/// A client's session, its scripts' statements prepared, and its generator; `None` when that
/// failed, said in `out`.
pub(super) fn set_up<'a>(
    store: &dyn Store,
    s: &'a SqlSettings,
    (id, clients, seed): (usize, usize, u64),
    out: &mut ClientRun,
) -> Option<(Box<dyn SqlSession>, Vec<client::Ready<'a>>, Client)> {
    let mut session = match store.connect_sql() {
        Ok(x) => x,
        Err(e) => {
            Unprepared::Failed(e).said_in(out);
            return None;
        }
    };
    let mut client = new_client(s, (id, clients, seed));
    match prepared(session.as_mut(), s, &mut client) {
        Ok(ready) => Some((session, ready, client)),
        Err(no) => {
            no.said_in(out);
            None
        }
    }
}

/// Why a session's statements could not be prepared.
enum Unprepared {
    /// The connection or the server failed: a failed transaction.
    Failed(engine::driver::OpError),
    /// The script is wrong: the run is.
    Broken(String),
}

impl Unprepared {
    /// Counted in `out`: a failed transaction that ends the client, or the script's failure.
    fn said_in(self, out: &mut ClientRun) {
        match self {
            Unprepared::Failed(e) => {
                out.lost = Some(e.message.to_string());
                out.transactions.fail(e);
            }
            Unprepared::Broken(why) => out.broken = Some(why),
        }
    }
}

/// What stops a script being made ready: the connection's failure, else the script's.
fn unprepared(f: Failure) -> Unprepared {
    match f {
        Failure::Sql { error, .. } if error.class.is_connection() => Unprepared::Failed(error),
        f => Unprepared::Broken(f.to_string()),
    }
}

/// The scripts made ready on `session` in the plan's query mode: their statements prepared,
/// sysbench's for each table.
fn prepared<'a>(
    session: &mut dyn SqlSession,
    s: &'a SqlSettings,
    client: &mut Client,
) -> Result<Vec<client::Ready<'a>>, Unprepared> {
    (session.set_query_mode(s.query_mode)).map_err(Unprepared::Broken)?;
    let ready: Result<Vec<_>, Failure> = (s.scripts.iter())
        .map(|(sc, _)| client::ready(sc, session))
        .collect();
    let mut ready = ready.map_err(unprepared)?;
    prepare_sysbench(client, &mut ready, s, session).map_err(unprepared)?;
    Ok(ready)
}

/// pgbench's `-C`: a new session for a transaction of script `k`, in place of the one closed
/// after the last (closing it took `closing`), that time and its opening recorded in `out`'s
/// connections; script `k` made ready on it, as pgbench prepares only what it sends (and
/// sysbench's statements as each table comes). When the connection was made, or `None` when
/// this failed: counted in `out` as a failed transaction (the client then stops, as pgbench's
/// does) or the script's failure.
pub(super) fn reconnect<'a>(
    store: &dyn Store,
    (s, k): (&'a SqlSettings, usize),
    (session, ready): (&mut Option<Box<dyn SqlSession>>, &mut [client::Ready<'a>]),
    (out, closing): (&mut ClientRun, Duration),
) -> Option<Instant> {
    let start = Instant::now();
    let opened = store.connect_sql();
    let connected = Instant::now();
    let took = (closing + connected.duration_since(start)).as_nanos() as u64;
    (out.connections).record(took, opened.as_ref().map(|_| 0).map_err(Clone::clone));
    let mut new = match opened {
        Ok(new) => new,
        Err(e) => {
            Unprepared::Failed(e).said_in(out);
            return None;
        }
    };
    let made = (new.set_query_mode(s.query_mode).map_err(Unprepared::Broken))
        .and_then(|()| client::ready(&s.scripts[k].0, new.as_mut()).map_err(unprepared));
    match made {
        Ok(r) => {
            ready[k] = r;
            *session = Some(new);
            Some(connected)
        }
        Err(no) => {
            no.said_in(out);
            None
        }
    }
}

/// Under `-C`: `session` closed at its transaction's end, as pgbench closes it (no session held
/// through an open loop's wait); how long that took, counted with the next connection.
pub(super) fn close(session: &mut Option<Box<dyn SqlSession>>) -> Duration {
    let at = Instant::now();
    drop(session.take());
    at.elapsed()
}

/// sysbench's statements, prepared for each of its tables before the clock starts (as sysbench
/// prepares them in each thread's init).
fn prepare_sysbench(
    client: &mut Client,
    ready: &mut [client::Ready<'_>],
    s: &SqlSettings,
    session: &mut dyn SqlSession,
) -> Result<(), Failure> {
    let Some(o) = &s.oltp else { return Ok(()) };
    for (r, (sc, _)) in ready.iter_mut().zip(&s.scripts) {
        if sc.source == Source::Sysbench {
            client.prepare_spliced(r, "t", 1..=o.tables as i64, session)?;
        }
    }
    Ok(())
}

/// Client `id` of `clients`: its generator seeded from `seed` as pgbench seeds it (a base
/// generator from the seed gives each client's in turn, then the default seed), its variables
/// set.
fn new_client(s: &SqlSettings, (id, clients, seed): (usize, usize, u64)) -> Client {
    let mut base = Prng::new(seed);
    let draws: Vec<u64> = (0..=clients).map(|_| base.next_u64()).collect();
    let mut vars = Vars::from_iter([
        ("scale".to_string(), Value::Int(s.scale as i64)),
        ("client_id".to_string(), Value::Int(id as i64)),
        ("random_seed".to_string(), Value::Int(seed as i64)),
    ]);
    if let Some(o) = &s.oltp {
        for (name, v) in [
            ("tables", o.tables),
            ("table_size", o.table_size),
            ("range_size", o.range_size),
        ] {
            vars.insert(name.to_string(), Value::Int(v as i64));
        }
    }
    let mut client = Client::new(vars, Prng::new(draws[id]), draws[clients] as i64);
    client
        .vars
        .insert("default_seed".into(), Value::Int(client.default_seed));
    // `--define`'s last, so that one of the names above is the user's, as in pgbench.
    for (name, value) in &s.defines {
        (client.vars).insert(name.clone(), Value::Text(value.clone()));
        // hash()'s seed when none is given (pgbench reads the variable).
        if name == "default_seed" {
            client.default_seed = value.trim().parse().expect("checked when read");
        }
    }
    client
}
