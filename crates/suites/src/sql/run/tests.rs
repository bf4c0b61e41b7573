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
