//! One client of the append suite: transactions of appends to lists and reads of them on its
//! own session, each timed, and kept for the history with what it read and how it ended. On a
//! SQL database the session is SQL this module writes ([`SqlLists`]); on another store, the
//! store's own ([`Store::connect_lists`]: etcd's guarded `Txn`).

use super::Isolation;
use engine::driver::{Dialect, ErrorClass, ListSession, OpError, SqlParam, SqlSession, Store};
use engine::recorder::Recorder;
use results::consistency::Outcome;
use results::consistency::append::{Mop, Txn};
use results::rng::splitmix64;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The table, in the store's own schema or database.
pub const TABLE: &str = "append_lists";

/// Micro-operations per transaction: one to this many, as Elle's defaults.
const MAX_MOPS: u64 = 4;

/// Makes the table (anew: a run's lists start empty).
pub fn make(store: &dyn Store) -> Result<(), String> {
    let mut s = store.connect_sql().map_err(|e| e.to_string())?;
    (s.batch(&format!("drop table if exists {TABLE}")))
        .and_then(|()| {
            s.batch(&format!(
                "create table {TABLE} (k bigint primary key, v text not null)"
            ))
        })
        .map_err(|e| format!("making {TABLE}: {e}"))
}

/// The prepared statements of a session.
struct Stmts {
    read: usize,
    append: usize,
}

fn prepare(s: &mut dyn SqlSession) -> Result<Stmts, OpError> {
    let append = match s.dialect() {
        Dialect::Postgres => {
            format!(") on conflict (k) do update set v = {TABLE}.v || ',' || excluded.v")
        }
        Dialect::MySql => ") on duplicate key update v = concat(v, ',', values(v))".to_string(),
    };
    Ok(Stmts {
        read: s.prepare(&[format!("select v from {TABLE} where k = "), String::new()])?,
        append: s.prepare(&[
            format!("insert into {TABLE} (k, v) values ("),
            ", ".into(),
            append,
        ])?,
    })
}

/// What began each transaction at `level`.
fn begin(dialect: Dialect, level: Isolation) -> Vec<String> {
    let words = level.sql();
    match dialect {
        Dialect::Postgres => vec![format!("begin isolation level {words}")],
        Dialect::MySql => vec![
            format!("set transaction isolation level {words}"),
            "start transaction".into(),
        ],
    }
}

/// A list as the table holds it: values joined by commas.
fn list_of(text: Option<&str>) -> Result<Vec<u64>, OpError> {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return Ok(Vec::new());
    };
    (text.split(','))
        .map(|v| v.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            let shown: String = text.chars().take(60).collect();
            OpError::new(
                ErrorClass::Corrupt,
                format!("a list dyno did not write: {shown:?}"),
            )
        })
}

/// Runs `mops` as one transaction, filling in what each read returned. The error, and whether
/// it came from the commit (whose outcome a broken connection leaves unknown).
fn transaction(
    s: &mut dyn SqlSession,
    (st, begin): (&Stmts, &[String]),
    mops: &mut [Mop],
) -> Result<(), (OpError, bool)> {
    let before = |e| (e, false);
    for b in begin {
        s.batch(b).map_err(before)?;
    }
    for m in mops.iter_mut() {
        match m {
            Mop::Append { key, value } => {
                let v = value.to_string();
                let params = [SqlParam::Int(*key as i64), SqlParam::Text(&v)];
                s.execute(st.append, &params, None).map_err(before)?;
            }
            Mop::Read { key, list } => {
                let mut text: Option<Option<String>> = None;
                let mut row = |_, r: &engine::driver::SqlRow<'_>| {
                    text = Some(r.first().and_then(|c| c.1).map(String::from));
                };
                (s.execute(st.read, &[SqlParam::Int(*key as i64)], Some(&mut row)))
                    .map_err(before)?;
                *list = Some(list_of(text.flatten().as_deref()).map_err(before)?);
            }
        }
    }
    s.batch("commit").map_err(|e| (e, true))
}

/// A SQL session running list-append transactions at an isolation level.
struct SqlLists {
    session: Box<dyn SqlSession>,
    stmts: Stmts,
    begin: Vec<String>,
    /// The connection failed, or a rollback did: a new session is needed.
    broken: bool,
}

impl SqlLists {
    fn open(store: &dyn Store, level: Isolation) -> Result<SqlLists, OpError> {
        let mut session = store.connect_sql()?;
        let stmts = prepare(session.as_mut())?;
        let begin = begin(session.dialect(), level);
        Ok(SqlLists {
            session,
            stmts,
            begin,
            broken: false,
        })
    }
}

impl ListSession for SqlLists {
    fn transaction(&mut self, mops: &mut [Mop]) -> Result<(), (OpError, bool)> {
        let r = transaction(self.session.as_mut(), (&self.stmts, &self.begin), mops);
        // Only a failed connection needs a new session; a lock wait that timed out (MySQL's
        // 1205) leaves the connection sound, its transaction to roll back.
        self.broken = !self.session.usable();
        r
    }
    fn recover(&mut self) {
        // A session whose rollback failed may hold the transaction open: a new one.
        self.broken = self.broken || self.session.batch("rollback").is_err();
    }
    fn usable(&self) -> bool {
        !self.broken
    }
}

/// What a client did in a repetition.
pub struct ClientRun {
    pub rec: Recorder,
    pub txns: Vec<Txn>,
    pub committed: u64,
    pub aborted: u64,
    pub unknown: u64,
}

/// How a client reaches the store: as SQL (`sql`), or through the store's own list session;
/// and the keys the clients share.
pub struct Reach<'a> {
    pub store: &'a dyn Store,
    pub sql: bool,
    pub keys: &'a Keys,
    /// Above every value appended so far in the target's run.
    pub used: AtomicU64,
}

/// Elle's key rotation: `-n` keys in use at once, each retired for a fresh one once it has been
/// given `per_key` appends, so no list grows past that (a store that keeps every version, as
/// etcd does, keeps each list's whole history).
pub struct Keys {
    /// Appends given to each slot so far, by every client of the target.
    appends: Vec<std::sync::atomic::AtomicU64>,
    per_key: u64,
}

impl Keys {
    pub fn new(slots: u64, per_key: u64) -> Keys {
        Keys {
            appends: (0..slots).map(|_| Default::default()).collect(),
            per_key: per_key.max(1),
        }
    }

    fn key(&self, slot: usize, appends: u64) -> u64 {
        slot as u64 + self.appends.len() as u64 * (appends / self.per_key)
    }

    /// The key of slot `draw`'s next append.
    fn to_append(&self, draw: u64) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        let slot = (draw % self.appends.len() as u64) as usize;
        self.key(slot, self.appends[slot].fetch_add(1, Relaxed))
    }

    /// The key slot `draw` holds now.
    fn to_read(&self, draw: u64) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        let slot = (draw % self.appends.len() as u64) as usize;
        self.key(slot, self.appends[slot].load(Relaxed))
    }
}

impl Reach<'_> {
    fn open(&self, level: Isolation) -> Result<Box<dyn ListSession>, OpError> {
        if self.sql {
            return Ok(Box::new(SqlLists::open(self.store, level)?));
        }
        self.store.connect_lists()
    }
}

/// How many transactions a client runs: `count` of them, or until `duration_ns` ends.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub count: Option<u64>,
    pub duration_ns: Option<u64>,
}

/// Client `id` of `clients` runs its `budget` of transactions at `level`, and stops early when
/// interrupted; `clock` is the run's.
pub fn run(
    reach: &Reach<'_>,
    (id, clients, seed, rep): (u32, u32, u64, u32),
    (budget, level): (Budget, Isolation),
    (clock, interrupt): (&engine::clock::Clock, &AtomicBool),
) -> ClientRun {
    let mut out = ClientRun {
        rec: Recorder::new(),
        txns: Vec::new(),
        committed: 0,
        aborted: 0,
        unknown: 0,
    };
    let mut state = seed ^ (u64::from(rep) << 40) ^ (u64::from(id) << 20);
    let mut draw = move || splitmix64(&mut state);
    // Values unique across clients and repetitions, and small: the client's n-th append is
    // (base + n) × clients + id + 1, above every value an earlier repetition used.
    let clients = u64::from(clients);
    let n = Cell::new(reach.used.load(Ordering::Acquire).div_ceil(clients));
    let next = || {
        n.set(n.get() + 1);
        n.get() * clients + u64::from(id) + 1
    };
    let mut session: Option<Box<dyn ListSession>> = None;
    let end_ns = budget.duration_ns.map(|d| clock.now_ns() + d);
    for _ in 0..budget.count.unwrap_or(u64::MAX) {
        let t0 = clock.now_ns();
        if end_ns.is_some_and(|e| t0 >= e) || interrupt.load(Ordering::Relaxed) {
            break;
        }
        let s = match &mut session {
            Some(s) => s,
            None => match reach.open(level) {
                Ok(s) => session.insert(s),
                Err(e) => {
                    out.rec.record(clock.now_ns() - t0, Err(e));
                    engine::fiber::sleep(std::time::Duration::from_millis(10));
                    continue;
                }
            },
        };
        let mut mops: Vec<Mop> = (0..1 + draw() % MAX_MOPS)
            .map(|_| {
                let slot = draw();
                match draw() % 2 {
                    0 => Mop::Append {
                        key: reach.keys.to_append(slot),
                        value: next(),
                    },
                    _ => Mop::Read {
                        key: reach.keys.to_read(slot),
                        list: None,
                    },
                }
            })
            .collect();
        let r = s.transaction(&mut mops);
        let t1 = clock.now_ns();
        if let Err((e, _)) = &r {
            s.recover();
            if e.class.is_connection() {
                // Nothing answers: a moment before the next try, not a loop of instant failures.
                engine::fiber::sleep(std::time::Duration::from_millis(10));
            }
        }
        let outcome = match &r {
            Ok(()) => Outcome::Ok,
            // A commit sent and not answered may have happened; anything before it did not.
            Err((e, true)) if crate::history::indefinite(e.class) => Outcome::Unknown,
            Err(_) => Outcome::Failed,
        };
        if !s.usable() {
            session = None;
        }
        if outcome != Outcome::Ok {
            for m in &mut mops {
                if let Mop::Read { list, .. } = m {
                    *list = None;
                }
            }
        }
        match outcome {
            Outcome::Ok => out.committed += 1,
            Outcome::Failed => out.aborted += 1,
            Outcome::Unknown => out.unknown += 1,
        }
        out.rec.record(t1 - t0, r.map(|()| 0).map_err(|(e, _)| e));
        out.txns.push(Txn {
            client: id,
            mops,
            outcome,
            invoke_ns: t0,
            complete_ns: t1,
        });
    }
    reach
        .used
        .fetch_max((n.get() + 1) * clients, Ordering::AcqRel);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_moves_to_a_fresh_key_after_its_writes() {
        let k = Keys::new(3, 2);
        // Slot 1: keys 1, 1, then 4, 4, then 7; reads follow the slot's key of the moment.
        let appended: Vec<u64> = (0..5).map(|_| k.to_append(4)).collect();
        assert_eq!(appended, [1, 1, 4, 4, 7]);
        assert_eq!((k.to_read(1), k.to_read(0), k.to_read(2)), (7, 0, 2));
    }

    #[test]
    fn a_list_reads_back_and_garbage_is_refused() {
        assert_eq!(list_of(None).unwrap(), Vec::<u64>::new());
        assert_eq!(list_of(Some("")).unwrap(), Vec::<u64>::new());
        assert_eq!(list_of(Some("3,17,4")).unwrap(), [3, 17, 4]);
        let e = list_of(Some("3,x")).unwrap_err();
        assert_eq!(e.class, ErrorClass::Corrupt);
        assert_eq!(
            begin(Dialect::MySql, Isolation::RepeatableRead),
            [
                "set transaction isolation level repeatable read",
                "start transaction"
            ]
        );
        assert_eq!(
            begin(Dialect::Postgres, Isolation::Serializable),
            ["begin isolation level serializable"]
        );
    }
}
