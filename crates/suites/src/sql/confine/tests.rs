use super::*;
use proptest::prelude::*;

fn refused(sql: &str) -> String {
    match check(sql) {
        Err((at, why)) => format!("{at}: {why}"),
        Ok(()) => panic!("{sql:?} was let through"),
    }
}

#[test]
fn scripts_in_dyno_s_schema_pass() {
    for sql in [
        "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
        "INSERT INTO sbtest:t (id, k, c, pad) VALUES (:id, :k, :c, :pad);",
        "DELETE FROM sbtest:t WHERE id=:id;",
        "SELECT pgbench_accounts.abalance FROM pgbench_accounts WHERE pgbench_accounts.aid = 1;",
        "SELECT count(*) FROM information_schema.tables;",
        "SELECT * FROM t FOR UPDATE OF t;",
        "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET v = excluded.v;",
        "CREATE TABLE mine (id int); CREATE INDEX mine_id ON mine (id);",
        "SELECT 'UPDATE public.t SET x = 1', $$INSERT INTO a.b$$ -- DELETE FROM x.y\n;",
        "SET LOCAL statement_timeout = '1s';",
        "BEGIN ISOLATION LEVEL REPEATABLE READ;",
        "SELECT :acct_bid::int;",
        "SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE;",
        "SET SESSION sql_mode = 'ANSI';",
        "SELECT a.x FROM a FORCE INDEX (PRIMARY) JOIN u ON a.id = u.id;",
        "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE t.v = 2;",
        "WITH d AS (DELETE FROM a RETURNING *) SELECT * FROM d JOIN public.x ON true;",
    ] {
        assert_eq!(check(sql), Ok(()), "{sql}");
    }
}

#[test]
fn writes_and_moves_outside_are_refused_with_their_place() {
    assert_eq!(
        refused("UPDATE public.t SET x = 1;"),
        "7: public.t writes outside dyno's own schema: the script runs in dyno's schema (or database), where a table's name alone is dyno's table; write it without the schema"
    );
    for (sql, at) in [
        ("INSERT INTO shop.orders VALUES (1);", 12),
        ("insert into \"public\".\"t\" values (1);", 12),
        ("DELETE FROM `other`.t;", 12),
        ("TRUNCATE TABLE ONLY public.x;", 20),
        ("DROP TABLE IF EXISTS public.x;", 21),
        ("CREATE INDEX i ON public.x (a);", 18),
        (
            "WITH d AS (DELETE FROM a.b RETURNING *) SELECT * FROM d;",
            23,
        ),
        ("SELECT * INTO other.copy FROM t;", 14),
        ("INSERT other.t VALUES (1);", 7),
        ("UPDATE LOW_PRIORITY IGNORE other.t SET a = 1;", 27),
        ("DELETE QUICK IGNORE FROM other.t;", 25),
        ("CREATE VIEW public.v AS SELECT 1;", 12),
        ("DROP SEQUENCE IF EXISTS public.s;", 24),
    ] {
        assert!(
            refused(sql).starts_with(&format!("{at}: ")),
            "{sql}: {}",
            refused(sql)
        );
    }
    for sql in [
        "SET search_path = public;",
        "set role postgres;",
        "RESET SESSION AUTHORIZATION;",
        "USE mysql;",
        "GRANT ALL ON t TO public;",
        "COPY t TO '/tmp/x';",
        "DO $$ BEGIN END $$;",
        "CREATE SCHEMA other;",
        "DROP DATABASE shop;",
        "SET GLOBAL max_connections = 1;",
        "SET LOCAL search_path = public;",
        "SET SESSION AUTHORIZATION postgres;",
        "RESET ALL;",
        "DISCARD ALL;",
        "SELECT * FROM t INTO OUTFILE '/tmp/x';",
        "ALTER TABLE t SET SCHEMA public;",
    ] {
        refused(sql);
    }
}

/// A script may run on either server, so it is read as each reads it: a write hidden from
/// one reading (MySQL's backslash escapes and `#` comments, or PostgreSQL's lack of them) is
/// found by the other.
#[test]
fn a_write_hidden_from_one_servers_reading_is_found_by_the_other() {
    // MySQL: the string ends at the last quote; PostgreSQL: at `\'`, and the UPDATE is quoted.
    assert!(refused(r"SELECT 'it\'s'; UPDATE other.t SET x = 1; SELECT '';").contains("other.t"));
    // PostgreSQL: `#` is an operator and the UPDATE runs; MySQL: a comment.
    assert!(refused("SELECT 1 # 2\n; UPDATE other.t SET x = 1;").contains("other.t"));
    // Each reading alone would let one of these through.
    assert!(refused(r"SELECT 'a\'' -- ' UPDATE other.t SET x = 1").contains("other.t"));
    assert!(refused("SELECT 1 # UPDATE other.t SET x = 1\n;").contains("other.t"));
    // A backslash at a string's end, as MySQL escapes it: nothing hidden.
    assert_eq!(check(r"INSERT INTO t VALUES ('a\\', 'b');"), Ok(()));
}

proptest! {
    /// Whatever the text, the check answers (and points inside it).
    #[test]
    fn any_text_is_checked_without_a_panic(s in ".{0,200}") {
        if let Err((at, _)) = check(&s) {
            prop_assert!(at <= s.len());
        }
    }
}
