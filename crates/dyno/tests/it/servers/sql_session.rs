//! How the sql suite's sessions connect and send their statements, on real PostgreSQL and
//! MariaDB: pgbench's `-C` (a new connection for every transaction) and `-M` (prepared,
//! extended, simple).

use super::sql::{one, servers, store};
use std::time::{Duration, Instant};

/// The sessions PostgreSQL has counted in its `postgres` database, once they number at least
/// `want` (the count of a session that ended may come a moment after it), or after 20 s.
fn pg_sessions(url: &str, want: u64) -> u64 {
    let st = store(url);
    let mut s = st.connect_sql().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let q = "SELECT sessions FROM pg_stat_database WHERE datname = 'postgres'";
        let n: u64 = one(s.as_mut(), q).unwrap().parse().unwrap();
        if n >= want || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `-C`: each transaction on a connection of its own, on both databases — the servers count a
/// connection per transaction, the record times each in a row of its own, and the TPC-B
/// invariant still holds (the run checks it, and fails if not).
#[test]
fn with_connect_every_transaction_opens_a_connection_of_its_own() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let connections = || -> u64 {
        let out = maria.sql("SHOW GLOBAL STATUS LIKE 'Connections'");
        out.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let (pg_before, maria_before) = (pg_sessions(&pg.url(), 0), connections());
    let dir = tempfile::tempdir().unwrap();
    let args = ["run", "--suite", "sql", "-b", "tpcb-like", "-C", "-t", "20"];
    crate::common::dyno(dir.path())
        .args(args)
        .args(["-c", "2", "-o", "re", &pg.url(), &maria.url()])
        .assert()
        .success();
    let rec = crate::common::record(&dir.path().join("re"));
    crate::common::assert_schema_valid(&rec);
    assert_eq!(rec["plan"]["custom"]["sql"]["connect"], true);
    for target in ["postgres", "mysql"] {
        let c = crate::common::case(&rec, target, "tpcb-like");
        assert_eq!(c["status"], "ok", "{target}: {}", c["reason"]);
        let rep = &c["reps"][0];
        assert_eq!(rep["detail"]["custom"]["figures"]["transactions"], 40);
        let row = &rep["by_op"]["connections"];
        assert_eq!(row["count"], 40, "{target}: {row}");
        assert!(row["latency_ns"]["p50"].as_u64().unwrap() > 0, "{row}");
        // A closed loop keeps the connection out of the transaction's latency: each client's
        // time is its connections' and its transactions' (and a little between), so their
        // means add up to no more than the run's time per transaction of a client. Counted
        // in both, a connection would overshoot by its own mean.
        let mean = |v: &serde_json::Value| v["mean"].as_f64().unwrap();
        let (tx, conn) = (mean(&rep["latency_ns"]), mean(&row["latency_ns"]));
        let per_tx = 2.0 * rep["wall_ns"].as_f64().unwrap() / 40.0;
        assert!(
            tx + conn <= 1.05 * per_tx,
            "{target}: transaction {tx} ns + connection {conn} ns > {per_tx} ns"
        );
    }
    // Without -C, the run opens a handful (its tables, a session per client, the checks).
    let pg_new = pg_sessions(&pg.url(), pg_before + 40) - pg_before;
    assert!(
        pg_new >= 40,
        "PostgreSQL saw {pg_new} sessions for 40 transactions"
    );
    let maria_new = connections() - maria_before;
    assert!(
        maria_new >= 40,
        "MariaDB saw {maria_new} connections for 40 transactions"
    );

    // A plan file's `connect = true`, and the command line's way back: without it, no
    // connections row; the later of --connect and --no-connect wins.
    let plan = format!(
        "[suite]\nname = \"sql\"\nbuiltin = \"select-only\"\nconnect = true\ntransactions = 5\n\n\
         [targets.postgres]\nurl = \"{}\"\n",
        pg.url()
    );
    std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
    for (flags, on) in [
        (&[][..], true),
        (&["--no-connect"][..], false),
        (&["--no-connect", "--connect"][..], true),
    ] {
        let out = format!("plan-{on}-{}", flags.len());
        crate::common::dyno(dir.path())
            .args(["run", "plan.toml", "-o", &out])
            .args(flags)
            .assert()
            .success();
        let rec = crate::common::record(&dir.path().join(&out));
        assert_eq!(rec["plan"]["custom"]["sql"]["connect"], on, "{flags:?}");
        let c = crate::common::case(&rec, "postgres", "select-only");
        let row = c["reps"][0]["by_op"].get("connections");
        assert_eq!(row.is_some(), on, "{flags:?}: {c}");
    }
}

/// Fails (a division by zero, at its last `\set`) unless the session has statements prepared
/// on the server exactly when `-D prepared=1` says it should: PostgreSQL lists them in
/// `pg_prepared_statements` (not the unnamed one), MariaDB counts its COM_STMT_PREPARE. `more`
/// may set `bad` to 1 as well.
fn checked(count: &str, more: &str) -> String {
    format!(
        "{count};\n\\gset\n\\set bad CASE WHEN :n > 0 THEN 1 - :prepared ELSE :prepared END\n{more}\\if :bad\n\\set fail 1 / 0\n\\endif\n"
    )
}

const PG_COUNT: &str = "SELECT count(*) AS n FROM pg_prepared_statements";
/// And on PostgreSQL, whether a value reached the server as a parameter (`-D params=1`) or in
/// the text: the statement's own text, as the server shows it, holds `$1` or the value.
const PG_PARAMS: &str = "SELECT (position(chr(36) || '1' in query) > 0)::int AS placeholder \
    FROM pg_stat_activity WHERE pid = pg_backend_pid() AND :client_id >= 0;\n\\gset\n\
    \\set bad :bad + CASE WHEN :placeholder = :params THEN 0 ELSE 1 END\n";
const MARIA_COUNT: &str = "SELECT VARIABLE_VALUE AS n FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'COM_STMT_PREPARE'";

/// `-M`: each mode runs pgbench's TPC-B and sysbench's read-write mix (its text values written
/// into the text under `-M simple`) and sends what it says — prepared statements only with
/// `-M prepared`, as the server sees; `-M extended` on MySQL, and a pipeline under `-M simple`,
/// are refused with the reason.
#[test]
fn query_modes_send_statements_as_pgbench_does() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pg.sql"), checked(PG_COUNT, PG_PARAMS)).unwrap();
    std::fs::write(dir.path().join("maria.sql"), checked(MARIA_COUNT, "")).unwrap();
    // `expect`: whether statements are prepared, and whether values go as parameters.
    let run = |mode: &str, url: &str, script: &str, expect: (u8, u8), out: &str| {
        let defines = format!("prepared={},params={}", expect.0, expect.1);
        let done = crate::common::dyno(dir.path())
            .args(["run", "--suite", "sql", "-M", mode, "-b", "tpcb-like"])
            .args(["--script", script, "-D", &defines])
            .args(["-t", "10", "-c", "2", "-o", out, url])
            .assert();
        let rec = crate::common::record(&dir.path().join(out));
        assert_eq!(rec["plan"]["custom"]["sql"]["query_mode"], mode);
        let c = rec["cases"][0].clone();
        let status = c["status"].as_str().unwrap().to_string();
        // A case that failed fails the run.
        assert_eq!(done.get_output().status.success(), status == "ok", "{c}");
        (status, c["reason"].to_string())
    };
    let ok = ("ok".to_string(), "null".to_string());
    let pg_modes = [
        ("simple", (0, 0)),
        ("extended", (0, 1)),
        ("prepared", (1, 1)),
    ];
    for (mode, expect) in pg_modes {
        let got = run(mode, &pg.url(), "pg.sql", expect, &format!("pg-{mode}"));
        assert_eq!(got, ok, "postgres -M {mode}");
    }
    for (mode, expect) in [("simple", (0, 0)), ("prepared", (1, 1))] {
        let out = format!("maria-{mode}");
        let got = run(mode, &maria.url(), "maria.sql", expect, &out);
        assert_eq!(got, ok, "mysql -M {mode}");
    }
    // The checks can fail: prepared statements where none were expected, and values in the
    // text where parameters were.
    for (mode, expect) in [("prepared", (0, 1)), ("simple", (0, 1))] {
        let out = format!("pg-wrong-{mode}");
        let (status, reason) = run(mode, &pg.url(), "pg.sql", expect, &out);
        assert_eq!(status, "failed", "-M {mode}");
        assert!(reason.contains("line 8: division by zero"), "{reason}");
    }
    let (status, reason) = run(
        "extended",
        &maria.url(),
        "maria.sql",
        (0, 0),
        "maria-extended",
    );
    assert_eq!(status, "failed");
    assert!(
        reason.contains("-M extended is PostgreSQL's extended protocol"),
        "{reason}"
    );

    // sysbench's writes under -M simple: c and pad quoted in the text. (And its tables made,
    // only they are analyzed: a table of PostgreSQL's `public` keeps no statistics.)
    let st = store(&pg.url());
    let mut s = st.connect_sql().unwrap();
    s.batch("CREATE TABLE public.foreign_t (a int); INSERT INTO public.foreign_t VALUES (1)")
        .unwrap();
    let simple = ["run", "--suite", "sql", "-M", "simple"];
    for (url, out) in [(pg.url(), "sb-pg"), (maria.url(), "sb-maria")] {
        crate::common::dyno(dir.path())
            .args(simple)
            .args(["-b", "oltp_read_write", "--table-size", "1000"])
            .args(["-t", "10", "-c", "2", "-o", out, &url])
            .assert()
            .success();
    }
    let stats = "SELECT count(*) FROM pg_stats WHERE tablename = 'foreign_t'";
    assert_eq!(one(s.as_mut(), stats).as_deref(), Some("0"));
    s.batch("ANALYZE public.foreign_t").unwrap();
    assert_eq!(
        one(s.as_mut(), stats).as_deref(),
        Some("1"),
        "the check sees it"
    );

    // A pipeline needs the extended protocol.
    let piped = "\\startpipeline\nSELECT 1;\n\\endpipeline\n";
    std::fs::write(dir.path().join("piped.sql"), piped).unwrap();
    crate::common::dyno(dir.path())
        .args(simple)
        .args(["--script", "piped.sql", "-t", "2", "-o", "piped", &pg.url()])
        .assert()
        .failure();
    let rec = crate::common::record(&dir.path().join("piped"));
    let reason = rec["cases"][0]["reason"].to_string();
    assert!(
        reason.contains("line 1: \\\\startpipeline: pipelines need"),
        "{reason}"
    );
}

/// pgbench's compound commands and result variables, as its documentation writes them:
/// `\gset` in place of the `;`, statements joined by `\;` and sent as one query, `\aset`
/// taking every statement's last row (a statement without rows skipped), `\gset` only the
/// last statement's. Fails (a division by zero in a `\set`: MySQL's `SELECT 1/0` is NULL) unless
/// every variable holds what its query
/// gave; on MariaDB the same script reads as one multi-statement query.
const COMPOUND: &str = "\
\\set aid random(1, 100000 * :scale)
SELECT abalance AS bal, :aid AS aid_back FROM pgbench_accounts WHERE aid = :aid \\gset a_
SELECT 1 AS one \\; UPDATE pgbench_accounts SET abalance = abalance WHERE aid = :aid \\;
  SELECT 3 AS three, :aid AS again \\aset c_
SELECT 5 AS nothing FROM pgbench_branches WHERE bid < 0 \\; SELECT 6 AS six \\aset
SELECT 7 AS x \\; SELECT 8 AS y \\gset g_
SELECT v AS last FROM (SELECT 1 AS v UNION ALL SELECT 3 UNION ALL SELECT 2) t ORDER BY v \\aset
\\set ok :a_aid_back = :aid AND :a_bal = 0 AND :c_one = 1 AND :c_three = 3 AND :c_again = :aid
\\if NOT (:ok AND :six = 6 AND :g_y = 8 AND :last = 3)
  \\set fail 1 / 0
\\endif
";

/// Compound commands run as pgbench runs them on both databases: with values written in only
/// under `-M simple` (refused before the run otherwise, with its line), without variables sent
/// as written under every mode; `\gset` keeps only the last statement's row.
#[test]
fn compound_commands_and_their_results_run_as_in_pgbench() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("compound.sql"), COMPOUND).unwrap();
    // (Its END, PostgreSQL's, reaches MySQL as COMMIT.)
    let fixed = "BEGIN \\; SELECT count(*) AS n FROM pgbench_branches \\; END;\n";
    std::fs::write(dir.path().join("fixed.sql"), fixed).unwrap();
    // `\gset` of a compound sets nothing from its first statement, `\aset` nothing from a
    // statement without rows.
    let first = "SELECT 7 AS x \\; SELECT 8 AS y \\gset\nSELECT :x;\n";
    std::fs::write(dir.path().join("first.sql"), first).unwrap();
    let empty = "SELECT 5 AS nothing FROM pgbench_branches WHERE bid < 0 \\; SELECT 6 AS six \\aset\n\
                 SELECT :nothing;\n";
    std::fs::write(dir.path().join("empty.sql"), empty).unwrap();
    let run = |mode: &str, script: &str, url: &str, out: &str| {
        let args = ["-M", mode, "--script", script];
        super::sql_tables::sql_case(dir.path(), url, &args, out).0
    };
    for (url, db, modes) in [
        (pg.url(), "pg", &["simple", "extended", "prepared"][..]),
        (maria.url(), "maria", &["simple", "prepared"][..]),
    ] {
        let c = run("simple", "compound.sql", &url, &format!("compound-{db}"));
        assert_eq!(c["status"], "ok", "{url}: {}", c["reason"]);
        assert_eq!(
            c["reps"][0]["detail"]["custom"]["figures"]["transactions"],
            20
        );
        for mode in modes {
            let c = run(mode, "fixed.sql", &url, &format!("fixed-{db}-{mode}"));
            assert_eq!(c["status"], "ok", "{url} -M {mode}: {}", c["reason"]);
        }
        for (script, var) in [("first.sql", "x"), ("empty.sql", "nothing")] {
            let c = run("simple", script, &url, &format!("{script}-{db}"));
            assert_eq!(c["status"], "failed");
            let undefined = format!("undefined variable \\\"{var}\\\"");
            assert!(c["reason"].to_string().contains(&undefined), "{c}");
        }
    }
    // Under -M prepared the values cannot be written in: refused before anything runs.
    let refused = crate::common::dyno(dir.path())
        .args([
            "run",
            "--suite",
            "sql",
            "--script",
            "compound.sql",
            "-t",
            "1",
            &pg.url(),
        ])
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&refused.get_output().stderr).to_string();
    assert!(err.contains("compound.sql:3: a compound command"), "{err}");
    assert!(err.contains("give -M simple"), "{err}");
}

/// `\setshell` stores what its command printed, `\shell` runs one whose failure fails the
/// transaction with its line and its words (PostgreSQL: the commands are the client's, not the
/// server's).
#[test]
fn shell_commands_run_as_in_pgbench() {
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // `grep -c` prints 0 and fails: `\setshell` reads it, as pgbench does.
    let script = "\\setshell n expr :client_id + 40\n\\shell test :n -ge 40\n\
                  \\setshell z grep -c nothing /dev/null\n\
                  \\if :n - :client_id <> 40 OR :z <> 0\n  \\set fail 1 / 0\n\\endif\nSELECT :n;\n";
    std::fs::write(dir.path().join("shell.sql"), script).unwrap();
    std::fs::write(
        dir.path().join("fails.sql"),
        "SELECT 1;\n\\shell echo no >&2; exit 3\n",
    )
    .unwrap();
    let run = |script: &str, out: &str| {
        super::sql_tables::sql_case(dir.path(), &pg.url(), &["--script", script], out).0
    };
    let c = run("shell.sql", "shell");
    assert_eq!(c["status"], "ok", "{}", c["reason"]);
    assert_eq!(
        c["reps"][0]["detail"]["custom"]["figures"]["transactions"],
        20
    );
    let c = run("fails.sql", "fails");
    assert_eq!(c["status"], "failed");
    let reason = c["reason"].to_string();
    assert!(
        reason.contains("line 2: \\\\shell echo no >&2; exit 3: it failed (exit status: 3): no"),
        "{reason}"
    );
}

/// A MySQL `CALL` answers with a result per `SELECT` it runs and one of its own: prepared, it
/// is read to its end, so the next statement's reply is that statement's; as text (`-M
/// simple`), each result's rows come with their statement's index. So is a result with a row
/// dyno cannot read (a date): the statement fails, the session goes on in step.
#[test]
fn a_mysql_reply_is_read_to_its_end() {
    let Some((_pg, maria)) = servers() else {
        return;
    };
    let st = store(&maria.url());
    let mut s = st.connect_sql().unwrap();
    s.batch("CREATE PROCEDURE twice() BEGIN SELECT 1 AS a; SELECT 2 AS b; END")
        .unwrap();
    let call = s.prepare(&["CALL twice()".to_string()]).unwrap();
    for k in 0..3 {
        let mut seen = Vec::new();
        let mut keep = |i, r: &engine::driver::SqlRow<'_>| seen.push((i, r[0].0.to_string()));
        s.execute(call, &[], Some(&mut keep)).unwrap();
        assert_eq!(seen, [(0, "a".to_string())]);
        let after = format!("SELECT {k} AS n");
        assert_eq!(one(s.as_mut(), &after), Some(k.to_string()), "in step");
    }
    s.set_query_mode(engine::driver::QueryMode::Simple).unwrap();
    let text = s.prepare(&["CALL twice()".to_string()]).unwrap();
    let mut seen = Vec::new();
    let mut keep = |i, r: &engine::driver::SqlRow<'_>| seen.push((i, r[0].0.to_string()));
    s.execute(text, &[], Some(&mut keep)).unwrap();
    assert_eq!(seen, [(0, "a".to_string()), (1, "b".to_string())]);
    assert_eq!(one(s.as_mut(), "SELECT 4").as_deref(), Some("4"), "in step");
    s.set_query_mode(engine::driver::QueryMode::Prepared)
        .unwrap();
    let dates = ["SELECT CURRENT_DATE AS d UNION ALL SELECT CURRENT_DATE + INTERVAL 1 DAY"];
    let dates = s.prepare(&[dates[0].to_string()]).unwrap();
    let mut none = |_, _: &engine::driver::SqlRow<'_>| {};
    let e = s.execute(dates, &[], Some(&mut none)).unwrap_err();
    assert!(e.message.contains("no date or time columns"), "{e}");
    assert!(s.usable());
    assert_eq!(one(s.as_mut(), "SELECT 5").as_deref(), Some("5"), "in step");
    drop(s);
    st.close().unwrap();
}

/// A script that makes a function and then calls it with a variable: the function's body is
/// one command to its END (PostgreSQL's `BEGIN ATOMIC`, MariaDB's compound statement, each
/// with a `;` and a CASE inside), and under `-M prepared` the call, which the server could not
/// prepare when the session began, is prepared at its first run, as pgbench prepares each
/// command just before it first sends it. A statement naming what is never made still fails,
/// named by its line.
#[test]
fn a_script_makes_a_function_and_calls_it_prepared() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let check = "SELECT dyno_next(:client_id) AS n \\gset\n\
                 \\if :n <> :client_id + 1\n  \\set fail 1 / 0\n\\endif\n";
    let pg_fn = "CREATE OR REPLACE FUNCTION dyno_next(a int) RETURNS int LANGUAGE sql\n\
                 BEGIN ATOMIC\n  SELECT CASE WHEN a >= 0 THEN a + 1 END;\nEND;\n";
    let maria_fn = "CREATE OR REPLACE FUNCTION dyno_next(a INT) RETURNS INT DETERMINISTIC\n\
                    BEGIN\n  IF a < 0 THEN RETURN 0; END IF;\n  \
                    CASE WHEN a >= 0 THEN RETURN a + 1; ELSE RETURN 0; END CASE;\nEND;\n";
    std::fs::write(dir.path().join("pg.sql"), format!("{pg_fn}{check}")).unwrap();
    std::fs::write(dir.path().join("maria.sql"), format!("{maria_fn}{check}")).unwrap();
    std::fs::write(
        dir.path().join("never.sql"),
        "SELECT 1;\nSELECT dyno_never(:client_id);\n",
    )
    .unwrap();
    // One client: two replacing one function at once collide on PostgreSQL's catalog row.
    let run = |url: &str, script: &str, out: &str| {
        let done = crate::common::dyno(dir.path())
            .args([
                "run", "--suite", "sql", "-M", "prepared", "--script", script,
            ])
            .args(["-t", "5", "-c", "1", "-o", out, url])
            .assert();
        let c = crate::common::record(&dir.path().join(out))["cases"][0].clone();
        assert_eq!(
            done.get_output().status.success(),
            c["status"] == "ok",
            "{c}"
        );
        c
    };
    for (url, script) in [(pg.url(), "pg.sql"), (maria.url(), "maria.sql")] {
        let c = run(&url, script, &format!("run-{script}"));
        assert_eq!(c["status"], "ok", "{url}: {}", c["reason"]);
        let figures = &c["reps"][0]["detail"]["custom"]["figures"];
        assert_eq!(figures["transactions"], 5, "{figures}");
        // Each transaction fails at the call, the error kept with its line.
        let c = run(&url, "never.sql", &format!("never-{script}"));
        assert_eq!(c["status"], "failed");
        assert!(c["reason"].to_string().contains("5 failed"), "{c}");
        let errors = c["error_examples"]["application"].to_string();
        assert!(
            errors.contains("line 2: ") && errors.contains("dyno_never"),
            "{c}"
        );
    }
}

/// `--rate`: one schedule for all the clients, as pgbench's `-R` (with `-j 1`), so a slow client
/// leaves the arrivals to a free one. Client 0 sleeps 100 ms a transaction at 40 arrivals a
/// second: on a schedule of its own (20 a second) it would fall further behind each second,
/// a second late by the end; on the shared one, client 1 takes what client 0 cannot.
#[test]
fn an_open_loop_has_one_schedule_for_its_clients() {
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let slow = "\\if :client_id = 0\n\\sleep 100 ms\n\\endif\nSELECT 1;\n";
    std::fs::write(dir.path().join("slow.sql"), slow).unwrap();
    let args = [
        "--script", "slow.sql", "--rate", "40", "-d", "2s", "-c", "2",
    ];
    let out = crate::common::dyno(dir.path())
        .args(["run", "--suite", "sql"])
        .args(args)
        .args(["--progress", "lines", "-o", "open", &pg.url()])
        .assert()
        .success();
    // The table heads its figures as pgbench's report does: the query mode, the mean and the
    // standard deviation (which the slow client makes wide).
    let table = String::from_utf8_lossy(&out.get_output().stdout);
    assert!(
        table.contains("· -M prepared ·") && table.contains("mean ± sd"),
        "{table}"
    );
    // The figures as they came, each second (pgbench's -P 1).
    let said = String::from_utf8_lossy(&out.get_output().stderr);
    let lines: Vec<&str> = (said.lines())
        .filter(|l| l.starts_with("dyno: [") && l.contains("] postgres slow.sql: "))
        .collect();
    assert!(
        lines.len() >= 2 && lines[0].contains(" tx/s, p50 "),
        "{said}"
    );
    let rec = crate::common::record(&dir.path().join("open"));
    let rep = &crate::common::case(&rec, "postgres", "slow.sql")["reps"][0];
    let sd = rep["latency_ns"]["stdev"].as_f64().unwrap();
    assert!(sd > 10e6, "{}", rep["latency_ns"]);
    let lag = &rep["by_op"]["schedule lag"]["latency_ns"];
    let ops = rep["ops"].as_u64().unwrap();
    assert!((50..=110).contains(&ops), "about 80 arrivals in 2 s: {ops}");
    assert!(lag["p90"].as_u64().unwrap() < 200_000_000, "{lag}");
}

/// `--seed` is pgbench's `--random-seed` for the first repetition, and each repetition after it
/// draws from the next seed, so that it does not read again the rows the one before it read:
/// two runs with one seed draw the same values, and their repetitions draw different ones.
#[test]
fn each_repetition_draws_afresh_and_runs_repeat_each_other() {
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let script = format!(
        "\\set v random(1, 1000000000)\n\\shell echo :random_seed :v >> {}\nSELECT :v;\n",
        seen.display()
    );
    std::fs::write(dir.path().join("seen.sql"), script).unwrap();
    let run = |out: &str| {
        let _ = std::fs::remove_file(&seen);
        crate::common::dyno(dir.path())
            .args(["run", "--suite", "sql", "--script", "seen.sql", "-t", "5"])
            .args([
                "--reps",
                "2",
                "--no-warmup",
                "--seed",
                "9",
                "-o",
                out,
                &pg.url(),
            ])
            .assert()
            .success();
        std::fs::read_to_string(&seen).unwrap()
    };
    let first = run("a");
    let lines: Vec<(&str, &str)> = first.lines().map(|l| l.split_once(' ').unwrap()).collect();
    assert_eq!(lines.len(), 10, "{first}");
    let (rep0, rep1) = lines.split_at(5);
    assert!(rep0.iter().all(|(seed, _)| *seed == "9"), "{first}");
    assert!(rep1.iter().all(|(seed, _)| *seed == "10"), "{first}");
    let values = |rep: &[(&str, &str)]| rep.iter().map(|(_, v)| v.to_string()).collect::<Vec<_>>();
    assert_ne!(values(rep0), values(rep1), "{first}");
    assert_eq!(run("b"), first, "the same seed, the same draws");
}

/// Each repetition after the first starts as a pgbench run does: pgbench's branches and tellers
/// vacuumed (once by the tables' making, then once before each later repetition), the accounts
/// too with `--vacuum-all` (pgbench's -v), none with `--no-vacuum` (its -n), as a script reading
/// the server's counts of them sees.
#[test]
fn each_later_repetition_starts_on_vacuumed_tables() {
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("vacuums");
    let count = |table: &str| {
        format!("(SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = '{table}')")
    };
    let script = format!(
        "SELECT {} + {} AS n, {} AS a \\gset\n\\shell echo :n :a >> {}\n",
        count("pgbench_branches"),
        count("pgbench_tellers"),
        count("pgbench_accounts"),
        seen.display()
    );
    std::fs::write(dir.path().join("vacuums.sql"), script).unwrap();
    // Branches and tellers, then every table (pgbench's -v), then none (its -n); the tables are
    // vacuumed once as they are made.
    for (out, flags, counts) in [
        ("default", &[][..], "2 1\n4 1\n6 1\n"),
        ("all", &["--vacuum-all"][..], "2 1\n4 2\n6 3\n"),
        ("none", &["--no-vacuum"][..], "2 1\n2 1\n2 1\n"),
    ] {
        let _ = std::fs::remove_file(&seen);
        crate::common::dyno(dir.path())
            .args(["run", "--suite", "sql", "--script", "vacuums.sql"])
            .args(["-t", "1", "--reps", "3", "--no-warmup"])
            .args(flags)
            .args(["-o", out, &pg.url()])
            .assert()
            .success();
        let seen = std::fs::read_to_string(&seen).unwrap();
        assert_eq!(seen, counts, "{flags:?}");
    }
    // Both at once contradict each other; without pgbench's tables there is nothing to vacuum.
    for (args, says) in [
        (
            &["--script", "vacuums.sql", "--no-vacuum", "--vacuum-all"][..],
            "vacuum_all asks for a vacuum that --no-vacuum turns off",
        ),
        (
            &["-b", "oltp_point_select", "--no-vacuum"][..],
            "vacuum and vacuum_all act on pgbench's tables",
        ),
    ] {
        let url = pg.url();
        let err =
            crate::common::refused_run(dir.path(), &[&["--suite", "sql"], args, &[&url]].concat());
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The sql suite's running figures hold its thresholds while it runs (`--abort-on-fail`): a
/// 30 s run whose p99 cannot be under 1 µs stops a moment after `abort_after` (2 s), status 4.
#[test]
fn a_broken_threshold_stops_an_sql_run_while_it_runs() {
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    crate::common::dyno(dir.path())
        .args(["run", "--suite", "sql", "-b", "select-only", "-d", "30s"])
        .args([
            "--threshold",
            "p99 < 1us",
            "--abort-on-fail",
            "-o",
            "ab",
            &pg.url(),
        ])
        .assert()
        .code(4);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let rec = crate::common::record(&dir.path().join("ab"));
    assert_eq!(
        rec["aborted"]["threshold"], "p99 < 1us",
        "{}",
        rec["aborted"]
    );
}
