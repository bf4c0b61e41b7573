//! Which failed transactions run again, and how many times: pgbench's `--max-tries` for its
//! serialization failures and deadlocks, and sysbench's restarts of its own scripts.

use super::super::client::ServerCode;

/// The most tries `--max-tries` takes, and what "as many as it takes" stands for (a bound, so
/// a transaction that can never pass still ends).
pub(in crate::sql) const MOST_TRIES: u32 = 1_000_000;

/// Tries a transaction takes at most: `--max-tries`'s; when not given, pgbench's default, one,
/// and in sysbench's built-ins as many as it takes, as sysbench restarts a transaction until it
/// succeeds. "As many as it takes" (and pgbench's `--max-tries 0`) is until it does, the run
/// ends, it is later than the latency limit, or [`MOST_TRIES`] tries.
pub(super) fn tries(max_tries: Option<u32>, sysbench: bool) -> u32 {
    match (max_tries, sysbench) {
        // pgbench's 0: no limit but the run's end and the latency limit.
        (Some(0), _) => MOST_TRIES,
        (Some(n), _) => n,
        (None, false) => 1,
        (None, true) => MOST_TRIES,
    }
}

/// The failures a transaction is retried for (with `--max-tries`): pgbench's, and for sysbench's
/// built-ins the others sysbench restarts a transaction on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Conflict {
    Serialization,
    Deadlock,
    /// A unique violation (PostgreSQL's 23505), a lock wait timeout (MySQL's 1205) or a record
    /// changed since it was read (1020): sysbench's, only in its built-ins.
    Other,
}

impl Conflict {
    pub(super) const ALL: [Conflict; 3] =
        [Conflict::Serialization, Conflict::Deadlock, Conflict::Other];

    /// Its count's name in the record.
    pub(super) fn figure(self) -> &'static str {
        match self {
            Conflict::Serialization => "failed_serialization",
            Conflict::Deadlock => "failed_deadlock",
            Conflict::Other => "failed_other_conflict",
        }
    }
}

/// Which of them an error is, by the server's code: a deadlock (PostgreSQL's 40P01, MySQL's
/// 1213), a serialization failure (40001), or, for sysbench's scripts, another error sysbench
/// retries (a duplicate key, 23505; MySQL's lock wait timeout, 1205, and changed record, 1020).
pub(super) fn conflict(message: &str, sysbench: bool) -> Option<Conflict> {
    match ServerCode::of(message)? {
        ServerCode::Postgres("40P01") | ServerCode::Mysql(1213, _) => Some(Conflict::Deadlock),
        ServerCode::Postgres("40001") | ServerCode::Mysql(_, "40001") => {
            Some(Conflict::Serialization)
        }
        ServerCode::Postgres("23505") | ServerCode::Mysql(1205 | 1020, _) if sysbench => {
            Some(Conflict::Other)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_is_told_by_the_servers_code() {
        let deadlock = Some(Conflict::Deadlock);
        assert_eq!(
            conflict("postgres: execute: ERROR 40P01: deadlock detected", false),
            deadlock
        );
        // MySQL's deadlock carries the serialization failure's SQLSTATE: its number decides.
        let my = "mysql: execute: ERROR 1213 (40001): Deadlock found when trying to get lock";
        assert_eq!(conflict(my, false), deadlock);
        let serial = "postgres: execute: ERROR 40001: could not serialize access";
        assert_eq!(conflict(serial, false), Some(Conflict::Serialization));
        // What sysbench retries beside them counts only for sysbench's scripts.
        for other in [
            "postgres: execute: ERROR 23505: duplicate key value violates unique constraint",
            "mysql: execute: ERROR 1205 (HY000): Lock wait timeout exceeded",
            "mysql: execute: ERROR 1020 (HY000): Record has changed since last read",
        ] {
            assert_eq!(conflict(other, true), Some(Conflict::Other), "{other}");
            assert_eq!(conflict(other, false), None, "{other}");
        }
        assert_eq!(
            conflict("postgres: execute: ERROR 42601: syntax error", true),
            None
        );
        assert_eq!(conflict("postgres: read: connection reset", true), None);
    }
}
