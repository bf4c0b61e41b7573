//! pgbench's workloads on real PostgreSQL and MariaDB servers (private instances on free
//! loopback ports): the initialisation in dyno's own schema or database, the built-in TPC-B-like
//! script and a custom one, run by the `sql` suite's client; the TPC-B invariant checked after.

use engine::driver::{SqlSession, Store};
use engine::resolve::Drivers;
use std::collections::BTreeMap;
use suites::sql::client::{self, Client};
use suites::sql::eval::{Value, Vars};
use suites::sql::random::Prng;
use suites::sql::script;

pub(super) fn store(url: &str) -> Box<dyn Store> {
    let (scheme, rest) = url.split_once(':').unwrap();
    let target = targets::Registry
        .configure(scheme, rest, &BTreeMap::new())
        .unwrap();
    target.open().unwrap()
}

/// A private PostgreSQL and a private MariaDB, or `None` (a skip, or a failure under
/// `./scripts/test`) when either is missing.
pub(super) fn servers() -> Option<(testkit::Postgres, testkit::mariadb::MariaDb)> {
    Some((
        testkit::Postgres::start()?,
        testkit::mariadb::MariaDb::start()?,
    ))
}

/// One value a query gives (its first row's first column).
pub(super) fn one(s: &mut dyn SqlSession, sql: &str) -> Option<String> {
    let stmt = s.prepare(&[sql.to_string()]).unwrap();
    let mut got = None;
    let mut keep = |_, cols: &engine::driver::SqlRow<'_>| got = cols[0].1.map(str::to_string);
    s.execute(stmt, &[], Some(&mut keep)).unwrap();
    got
}

/// Runs `script` `n` times as client 0 with scale 1; how many SQL commands it timed.
fn run(s: &mut dyn SqlSession, text: &script::Script, n: usize, seed: u64) -> usize {
    let mut ready = client::ready(text, s).unwrap();
    let mut base = Prng::new(seed);
    let vars = Vars::from_iter([
        ("scale".to_string(), Value::Int(1)),
        ("client_id".to_string(), Value::Int(0)),
    ]);
    let prng = Prng::new(base.next_u64());
    let mut c = Client::new(vars, prng, base.next_u64() as i64);
    let mut timed = 0;
    for _ in 0..n {
        c.run(
            &mut ready,
            s,
            &mut |_, _| timed += 1,
            &mut std::thread::sleep,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    timed
}

/// The TPC-B invariant: every delta added to an account is in the history (and, for the
/// TPC-B-like script, to its teller and its branch).
fn invariant_holds(s: &mut dyn SqlSession, tpcb: bool) {
    let balances = one(s, "SELECT sum(abalance) FROM pgbench_accounts");
    let deltas = one(s, "SELECT sum(delta) FROM pgbench_history");
    let tellers = one(s, "SELECT sum(tbalance) FROM pgbench_tellers");
    let branches = one(s, "SELECT sum(bbalance) FROM pgbench_branches");
    assert!(deltas.is_some(), "no history at all");
    assert_eq!(balances, deltas, "accounts against history");
    if !tpcb {
        return;
    }
    assert_eq!(tellers, deltas, "tellers against history");
    assert_eq!(branches, deltas, "branches against history");
}

const CUSTOM: &str = "\
# MySQL's comment, read through on both databases: the hot accounts' share; 'quotes' are fine
\\set aid random_zipfian(1, 100000 * :scale, 1.2)
SELECT abalance, bid FROM pgbench_accounts WHERE aid = :aid;
\\gset acct_
SELECT count(*) AS branches FROM pgbench_branches; # every branch; one at scale 1
\\gset
\\if :acct_bid = 1 AND :branches >= 1
  UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
  INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, :acct_bid, :aid, 1, CURRENT_TIMESTAMP);
\\else
  SELECT 1/0;
\\endif
\\sleep 1 us
";

/// Succeeds only where `--define` gave `mode` 1 and `client_id` 7.
const DEFINED: &str = "\
\\if :mode = 1 AND :client_id = 7
SELECT 1;
\\else
SELECT 1/0;
\\endif
";

/// Transactions that conflict on one row at REPEATABLE READ (PostgreSQL's syntax).
const CONFLICT: &str = "\
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT bbalance FROM pgbench_branches WHERE bid = 1;
UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;
END;
";

/// pgbench's TPC-B-like transaction in a pipeline, with a sync point inside.
const PIPELINED: &str = "\
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
\\startpipeline
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
\\syncpipeline
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
\\endpipeline
";

/// A history row of `delta` (a pipeline's statement) plus a million, outside what the
/// scripts' draws add.
fn history(delta: i32) -> String {
    format!(
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 1, {}, CURRENT_TIMESTAMP);",
        1_000_000 + delta
    )
}

/// TPC-B-like in a pipeline keeps the invariant on PostgreSQL; MySQL refuses it with its line.
fn pipelined_tpcb(s: &mut dyn SqlSession, url: &str) {
    let piped = script::parse("piped.sql", PIPELINED).unwrap();
    if url.starts_with("mysql") {
        let e = client::ready(&piped, s).err().expect("refused");
        assert!(
            e.to_string()
                .starts_with("line 5: \\startpipeline: pipelines need PostgreSQL's"),
            "{e}"
        );
        return;
    }
    assert_eq!(run(s, &piped, 200, 9), 200 * 7, "every command timed");
    invariant_holds(s, true);
}

/// How a script's one transaction fails (as client 0 with no variables), and the commands it
/// timed before.
fn fails(s: &mut dyn SqlSession, text: &str) -> (String, Vec<usize>) {
    let text = script::parse("f.sql", text).unwrap();
    let mut ready = client::ready(&text, s).unwrap();
    let mut c = Client::new(Vars::default(), Prng::new(1), 0);
    let mut timed = Vec::new();
    let e = (c.run(&mut ready, s, &mut |i, _| timed.push(i), &mut |_| {})).unwrap_err();
    (e.to_string(), timed)
}

/// A failed statement in a pipeline is named by its line, its segment undone; a pipeline left
/// by a script's mistake is abandoned (what was sent done, what was not dropped), and the
/// session is in step after. (PostgreSQL; history rows the invariant does not hold.)
fn pipeline_failures(s: &mut dyn SqlSession) {
    let count = |s: &mut dyn SqlSession, delta| {
        let delta = 1_000_000 + delta;
        one(
            s,
            &format!("SELECT count(*) FROM pgbench_history WHERE delta = {delta}"),
        )
    };
    let failing = format!(
        "\\startpipeline\n{}\nSELECT 1/0;\n{}\n\\endpipeline\n",
        history(5),
        history(7)
    );
    let (e, timed) = fails(s, &failing);
    assert!(
        e.starts_with("line 3: ") && e.contains("division by zero"),
        "{e}"
    );
    assert_eq!(timed, [1], "the statement before the failure completed");
    assert_eq!(count(s, 5).as_deref(), Some("0"), "its segment was undone");
    assert_eq!(count(s, 7).as_deref(), Some("0"), "the rest was skipped");
    let left = format!(
        "\\startpipeline\n{}\n\\syncpipeline\n{}\n\\set x 1 / 0\n\\endpipeline\n",
        history(11),
        history(13)
    );
    let (e, _) = fails(s, &left);
    assert!(e.starts_with("line 5: "), "{e}");
    assert_eq!(
        count(s, 11).as_deref(),
        Some("1"),
        "the segment sent was run"
    );
    assert_eq!(
        count(s, 13).as_deref(),
        Some("0"),
        "what was not sent was dropped"
    );
    // A statement the server cancels (its error's class is a timeout's) fails its segment
    // alone: the next segment runs, and the session reads on in step.
    s.batch("SET statement_timeout = '100ms'").unwrap();
    let slow = format!(
        "\\startpipeline\nSELECT pg_sleep(1);\n\\syncpipeline\n{}\n\\endpipeline\n",
        history(17)
    );
    let (e, _) = fails(s, &slow);
    assert!(
        e.starts_with("line 2: ") && e.contains("statement timeout"),
        "{e}"
    );
    s.batch("SET statement_timeout = 0").unwrap();
    assert_eq!(count(s, 17).as_deref(), Some("1"), "the next segment ran");
}

fn workloads(url: &str) {
    let store = store(url);
    let mut s = store.connect_sql().unwrap();
    suites::sql::init::init(s.as_mut(), 1, &Default::default()).unwrap();
    assert_eq!(
        one(s.as_mut(), "SELECT count(*) FROM pgbench_accounts").as_deref(),
        Some("100000")
    );
    assert_eq!(
        one(s.as_mut(), "SELECT count(*) FROM pgbench_tellers").as_deref(),
        Some("10")
    );

    let tpcb = script::built_in("tpcb-like").unwrap();
    assert_eq!(run(s.as_mut(), &tpcb, 300, 42), 300 * 7, "{url}");
    invariant_holds(s.as_mut(), true);
    pipelined_tpcb(s.as_mut(), url);

    let custom = script::parse("custom.sql", CUSTOM).unwrap();
    assert_eq!(run(s.as_mut(), &custom, 200, 7), 200 * 4, "{url}");
    invariant_holds(s.as_mut(), false);

    // An undefined variable and a server's error fail the transaction with their line.
    let (e, _) = fails(s.as_mut(), "SELECT :nosuch;\n");
    assert_eq!(e, "line 1: undefined variable \"nosuch\"");
    let (e, _) = fails(s.as_mut(), "\n\nSELECT * FROM no_such_table;\n");
    assert!(e.starts_with("line 3: "), "{e}");
    assert!(e.contains("no_such_table"), "{e}");
    // One that ends inside its transaction stops its client, as pgbench's: rolled back.
    let (e, timed) = fails(s.as_mut(), &format!("BEGIN;\n{}\n", history(19)));
    assert!(e.starts_with("line 2: the script ended with its transaction still open"));
    assert_eq!((timed, s.in_transaction()), (vec![0, 1], false), "{e}");
    let left = "SELECT count(*) FROM pgbench_history WHERE delta = 1000019";
    assert_eq!(one(s.as_mut(), left).as_deref(), Some("0"), "{url}");
    if url.starts_with("postgres") {
        pipeline_failures(s.as_mut());
    }
    drop(s);
    store.close().unwrap();
}

#[test]
fn pgbench_workloads_run_on_postgresql_and_mariadb_and_keep_the_tpcb_invariant() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    workloads(&pg.url());
    workloads(&maria.url());
    let left = maria
        .sql("SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'dyno%'");
    assert_eq!(left.trim(), "0");
}

/// `--define`'s variables reach every client, in place of dyno's own of the same name.
fn defines_reach_every_client(dir: &std::path::Path, url: &str) {
    std::fs::write(dir.join("defined.sql"), DEFINED).unwrap();
    // (A case whose transactions failed ends the run with status 3.)
    // (The flag given twice joins its values, as pgbench takes -D.)
    let both: &[&str] = &["-D", "mode=1", "--define", "client_id=7"];
    for (defines, failed, status) in [(both, 0, 0), (&["-D", "mode=2"], 10, 3)] {
        let out = format!("defined-{failed}");
        let script = ["run", "--suite", "sql", "--script", "defined.sql"];
        crate::common::dyno(dir)
            .args(script)
            .args(defines)
            .args(["-t", "5", "-c", "2", "-o", &out, url])
            .assert()
            .code(status);
        let rec = crate::common::record(&dir.join(&out));
        let c = crate::common::case(&rec, "postgres", "defined.sql");
        let figures = &c["reps"][0]["detail"]["custom"]["figures"];
        assert_eq!(figures["failed"], failed, "{defines:?}: {figures}");
        assert_eq!(figures["transactions"], 10, "{defines:?}: {figures}");
    }
}

/// `dyno run --suite sql` as a user runs it: both databases as columns, the built-ins mixed by
/// weight and a script file, every transaction and command in the record; the generator
/// napping before its waits (`--nap`) changes none of that.
#[test]
fn the_sql_suite_runs_pgbench_scripts_on_both_databases() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::dyno(dir.path())
        .args([
            "run",
            "--suite",
            "sql",
            "-b",
            "tpcb-like@3,select-only",
            "-t",
            "40",
            "-c",
            "3",
            "--nap",
            "40us",
        ])
        .args(["-o", "mix", &pg.url(), &maria.url()])
        .assert()
        .success();
    let table = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        table.contains("tpcb-like:009 UPDATE pgbench_branches SET bbalance"),
        "{table}"
    );
    let rec = crate::common::record(&dir.path().join("mix"));
    crate::common::assert_schema_valid(&rec);
    assert_eq!(rec["plan"]["io"]["nap_ns"], 40_000, "{}", rec["plan"]);
    for target in ["postgres", "mysql"] {
        let c = crate::common::case(&rec, target, "mix");
        assert_eq!(c["status"], "ok", "{target}: {}", c["reason"]);
        let rep = &c["reps"][0];
        assert_eq!(
            rep["detail"]["custom"]["figures"]["transactions"], 120,
            "{target}"
        );
        let tpcb = rep["by_op"]["script tpcb-like"]["count"].as_u64().unwrap();
        let select = rep["by_op"]["script select-only"]["count"]
            .as_u64()
            .unwrap();
        assert_eq!(tpcb + select, 120);
        assert!(
            tpcb > 2 * select,
            "{target}: weights 3:1 gave {tpcb}:{select}"
        );
        assert_eq!(
            rep["by_op"]["tpcb-like:011 END;"]["count"].as_u64(),
            Some(tpcb),
            "every transaction's every command is timed"
        );
    }

    // An open loop: the rate asked for, the schedule lag beside the latency, and transactions
    // slower than an impossible limit counted late.
    crate::common::dyno(dir.path())
        .args([
            "run",
            "--suite",
            "sql",
            "-b",
            "select-only",
            "-c",
            "2",
            "-d",
            "2s",
        ])
        .args([
            "-R",
            "300",
            "-L",
            "1us",
            "--interval",
            "500ms",
            "--hlog",
            "open.hlog",
            "-o",
            "open",
            &pg.url(),
        ])
        .assert()
        .success();
    let rec = crate::common::record(&dir.path().join("open"));
    let c = crate::common::case(&rec, "postgres", "select-only");
    let rep = &c["reps"][0];
    let n = rep["ops"].as_u64().unwrap();
    // Those already later than the limit when due are skipped (as pgbench skips them): how
    // many depends on how late this machine wakes the generator, so the schedule's count is
    // the run ones and the skipped together.
    let skipped = rep["detail"]["custom"]["figures"]["skipped"]
        .as_u64()
        .unwrap();
    assert!(
        n > 0 && (450..=750).contains(&(n + skipped)),
        "{n} transactions run and {skipped} skipped at 300/s for 2 s"
    );
    assert!(
        rep["by_op"]["schedule lag"]["count"].as_u64() == Some(n),
        "{rep}"
    );
    // Each transaction's service time (from its actual start) is its latency less its lag, so
    // no quantile of it exceeds the latency's.
    let service = &rep["by_op"]["service time"];
    assert_eq!(service["count"].as_u64(), Some(n), "{rep}");
    for q in ["p50", "p99", "max"] {
        let (s, l) = (&service["latency_ns"][q], &rep["latency_ns"][q]);
        assert!(s.as_u64().unwrap() <= l.as_u64().unwrap(), "{q}: {s} > {l}");
    }
    let figures = &rep["detail"]["custom"]["figures"];
    assert_eq!(
        figures["late"], n,
        "every transaction run is later than 1 µs"
    );
    // The time series, an --interval each from the clients' start, holds every transaction
    // once; the report draws it.
    let series = rep["detail"]["custom"]["intervals"].as_array().unwrap();
    assert!((4..=5).contains(&series.len()), "{series:?}");
    let (mut at, mut done) = (0, 0);
    for iv in series {
        assert_eq!(iv["start_ns"].as_u64(), Some(at), "{series:?}");
        at = iv["end_ns"].as_u64().unwrap();
        done += iv["responses"].as_u64().unwrap() + iv["errors"].as_u64().unwrap();
    }
    assert_eq!(done, n, "{series:?}");
    assert!(rep["detail"]["custom"]["started_ns"].as_u64().is_some());
    // The interval log holds every transaction that succeeded, with HdrHistogram's own parser.
    let logged = crate::common::hlog_count(&dir.path().join("open.hlog"));
    assert_eq!(logged, n - rep["errors"].as_u64().unwrap());
    assert!(dir.path().join("open/plots/series-rate.svg").exists());

    // Concurrent updates of one row at REPEATABLE READ fail with serialization failures: counted
    // as such, once; retried with --max-tries until they pass.
    std::fs::write(dir.path().join("conflict.sql"), CONFLICT).unwrap();
    for (tries, out) in [("1", "once"), ("1000", "retried")] {
        crate::common::dyno(dir.path())
            .args([
                "run",
                "--suite",
                "sql",
                "--script",
                "conflict.sql",
                "-c",
                "4",
                "-t",
                "30",
            ])
            .args(["--max-tries", tries, "-o", out, &pg.url()])
            .assert()
            .success();
    }
    let figures = |out: &str| {
        let rec = crate::common::record(&dir.path().join(out));
        let c = crate::common::case(&rec, "postgres", "conflict.sql");
        c["reps"][0]["detail"]["custom"]["figures"].clone()
    };
    let once = figures("once");
    assert!(once["failed_serialization"].as_u64().unwrap() > 0, "{once}");
    assert_eq!(once["failed"], once["failed_serialization"], "{once}");
    assert_eq!(once["retries"], 0);
    let retried = figures("retried");
    assert_eq!(retried["failed"], 0, "{retried}");
    assert!(retried["retried"].as_u64().unwrap() > 0, "{retried}");

    defines_reach_every_client(dir.path(), &pg.url());

    // A read-only run keeps no invariant to check, and passes.
    crate::common::dyno(dir.path())
        .args(["run", "--suite", "sql", "-b", "select-only", "-t", "20"])
        .args(["-o", "reads", &pg.url()])
        .assert()
        .success();

    std::fs::write(dir.path().join("mine.sql"), CUSTOM).unwrap();
    let out = crate::common::dyno(dir.path())
        .args([
            "run", "--suite", "sql", "--script", "mine.sql", "-d", "1s", "--scale", "2",
        ])
        .args(["-o", "custom", &maria.url()])
        .assert()
        .success();
    let rec = crate::common::record(&dir.path().join("custom"));
    let c = crate::common::case(&rec, "mysql", "mine.sql");
    assert_eq!(c["status"], "ok", "{}", c["reason"]);
    assert!(c["reps"][0]["ops"].as_u64().unwrap() > 10, "{out:?}");
    assert_eq!(rec["plan"]["custom"]["sql"]["scale"], 2);
    let left = maria
        .sql("SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'dyno%'");
    assert_eq!(left.trim(), "0", "dyno dropped its database");
}

/// The sql family's own PostgreSQL wire logs in by each password method the server may ask
/// for (cleartext, MD5, SCRAM-SHA-256), runs a transaction after, and a wrong password is
/// refused in the server's words.
#[test]
fn postgres_sessions_log_in_by_password_md5_and_scram() {
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let mut admin = postgres::Client::connect(&pg.url(), postgres::NoTls).unwrap();
    for (user, encryption) in [
        ("dyno_password", "scram-sha-256"),
        ("dyno_md5", "md5"),
        ("dyno_scram", "scram-sha-256"),
    ] {
        admin
            .batch_execute(&format!(
                "SET password_encryption = '{encryption}'; \
                 CREATE ROLE {user} LOGIN SUPERUSER PASSWORD 's3cret'"
            ))
            .unwrap();
        let url = format!("postgres://{user}:s3cret@127.0.0.1:{}/postgres", pg.port);
        let store = store(&url);
        let mut s = store.connect_sql().unwrap();
        s.batch("CREATE TABLE t (a int)").unwrap();
        let insert = s
            .prepare(&["INSERT INTO t VALUES (".into(), ")".into()])
            .unwrap();
        let n = s.execute(insert, &[engine::driver::SqlParam::Int(-7)], None);
        assert_eq!(n.unwrap(), 1, "{user}");
        assert_eq!(
            one(s.as_mut(), "SELECT sum(a) FROM t").as_deref(),
            Some("-7")
        );
        drop(s);
        store.close().unwrap();
    }
    let url = format!("postgres://dyno_scram:wrong@127.0.0.1:{}/postgres", pg.port);
    let (scheme, rest) = url.split_once(':').unwrap();
    let target = (targets::Registry.configure(scheme, rest, &BTreeMap::new())).unwrap();
    let e = target
        .open()
        .err()
        .expect("a wrong password is refused")
        .to_string();
    assert!(e.contains("ERROR 28P01"), "{e}");
}

/// sysbench's OLTP workloads as built-ins: its tables made, its mix run on both databases, the
/// rows each delete and insert keep checked after, and its options read.
#[test]
fn the_sql_suite_runs_sysbenchs_oltp_workloads_on_both_databases() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    crate::common::dyno(dir.path())
        .args([
            "run",
            "--suite",
            "sql",
            "-b",
            "oltp_read_write",
            "-t",
            "25",
            "-c",
            "3",
        ])
        .args([
            "--tables",
            "2",
            "--table-size",
            "2000",
            "--rand-type",
            "uniform",
        ])
        .args(["-o", "rw", &pg.url(), &maria.url()])
        .assert()
        .success();
    let rec = crate::common::record(&dir.path().join("rw"));
    crate::common::assert_schema_valid(&rec);
    assert_eq!(rec["plan"]["custom"]["sql"]["sysbench"]["tables"], 2);
    assert_eq!(
        rec["plan"]["custom"]["sql"]["sysbench"]["rand_type"],
        "uniform"
    );
    for target in ["postgres", "mysql"] {
        let c = crate::common::case(&rec, target, "oltp_read_write");
        assert_eq!(c["status"], "ok", "{target}: {}", c["reason"]);
        let rep = &c["reps"][0];
        let figures = &rep["detail"]["custom"]["figures"];
        let ok = rep["ops"].as_u64().unwrap() - figures["failed"].as_u64().unwrap();
        assert!(ok >= 60, "{target}: {figures}");
        let rows = rep["by_op"].as_object().unwrap();
        let count = |words: &str| {
            let found: Vec<_> = (rows.iter())
                .filter(|(k, _)| k.starts_with("oltp_read_write:") && k.ends_with(words))
                .collect();
            assert_eq!(
                found.len(),
                1,
                "{target}: one row for {words}: {:?}",
                rows.keys()
            );
            found[0].1["count"].as_u64().unwrap()
        };
        // Each statement is one row, whichever table it ran on; each counted as often as the
        // mix runs it.
        assert_eq!(rows.len(), 11, "{target}: {:?}", rows.keys());
        assert_eq!(count(" COMMIT;"), ok, "{target}");
        assert!(count(" point_selects") >= 10 * ok, "{target}");
        for name in [
            " simple_ranges",
            " sum_ranges",
            " order_ranges",
            " distinct_ranges",
            " index_updates",
            " non_index_updates",
            " deletes",
            " inserts",
        ] {
            assert!(count(name) >= ok, "{target}: {name}");
        }
    }

    crate::common::dyno(dir.path())
        .args([
            "run",
            "--suite",
            "sql",
            "-b",
            "oltp_point",
            "-d",
            "1s",
            "-c",
            "2",
        ])
        .args([
            "--rand-type",
            "zipfian",
            "--table-size",
            "500",
            "-o",
            "points",
            &maria.url(),
        ])
        .assert()
        .success();
    let rec = crate::common::record(&dir.path().join("points"));
    let c = crate::common::case(&rec, "mysql", "oltp_point_select");
    assert_eq!(c["status"], "ok", "{}", c["reason"]);
    assert!(c["reps"][0]["ops"].as_u64().unwrap() > 50);

    // Bad options are refused before anything runs, naming the flag.
    for (args, says) in [
        (&["-b", "oltp_r"][..], "no built-in script \"oltp_r\""),
        (
            &["-b", "oltp_read_only", "--rand-type", "normal"],
            "no --rand-type \"normal\"",
        ),
        (
            &["-b", "oltp_write_only", "--skip-trx", "maybe"],
            "is not on or off",
        ),
        (
            &["-b", "oltp_read_only", "--tables", "0"],
            "tables must be 1 to 1000",
        ),
        (
            &["-b", "select-only", "--interval", "5ms"],
            "interval must be between 10ms and 1h",
        ),
    ] {
        let url = pg.url();
        let err =
            crate::common::refused_run(dir.path(), &[&["--suite", "sql"], args, &[&url]].concat());
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
