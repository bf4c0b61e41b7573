//! How a run of the sql suite ends when it cannot go on as asked, on real PostgreSQL and
//! MariaDB: clients the server refuses, a server that goes away while they run, and a script
//! whose transactions never wait.

use super::sql::servers;
use std::time::{Duration, Instant};

/// Waits until `count` (the server's sessions, by a query of its own) reaches `want`: 60 s at most.
fn wait_for_sessions(count: impl Fn() -> u64, want: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while count() < want {
        assert!(Instant::now() < deadline, "the clients never came");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `run` beside `server`, stops the server once the run's 4 clients are in (`sessions`
/// counts 5 with the count's own), and returns the run's output, which must end within 30 s of
/// the stop.
fn stopped_under_a_run<S>(
    server: S,
    sessions: impl Fn(&S) -> u64,
    run: impl FnOnce() -> std::process::Output + Send,
) -> std::process::Output {
    std::thread::scope(|scope| {
        let running = scope.spawn(run);
        wait_for_sessions(|| sessions(&server), 5);
        std::thread::sleep(Duration::from_millis(500));
        let gone = Instant::now();
        drop(server);
        let out = running.join().unwrap();
        let took = gone.elapsed();
        assert!(took < Duration::from_secs(30), "{took:?}");
        out
    })
}

/// A server that goes away under a run: each client's next statement fails, the client ends
/// (as pgbench's client aborts on a lost connection) rather than failing every later
/// transaction at once, for ever; the run ends long before its 60 s, and the case fails, naming
/// the lost connection, its figures those of the transactions before.
#[test]
fn a_server_that_goes_away_ends_the_clients_and_fails_the_case() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let (pg_url, maria_url) = (pg.url(), maria.url());
    let pg_sessions = {
        let url = pg_url.clone();
        move || -> u64 {
            let Ok(mut c) = postgres::Client::connect(&url, postgres::NoTls) else {
                return 0;
            };
            let q = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'";
            c.query_one(q, &[]).map_or(0, |r| r.get::<_, i64>(0) as u64)
        }
    };
    let maria_sessions = |m: &testkit::mariadb::MariaDb| -> u64 {
        let out = m.sql("SHOW GLOBAL STATUS LIKE 'Threads_connected'");
        out.split_whitespace()
            .nth(1)
            .unwrap_or("0")
            .parse()
            .unwrap_or(0)
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |url: &str, out: &str| {
        crate::common::dyno(dir.path())
            .args([
                "run",
                "--suite",
                "sql",
                "-b",
                "select-only",
                "-c",
                "4",
                "-d",
                "60s",
            ])
            .args(["--quiet", "-o", out, url])
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap()
    };
    let pg_out = stopped_under_a_run(pg, |_| pg_sessions(), || run(&pg_url, "pg"));
    let maria_out = stopped_under_a_run(maria, maria_sessions, || run(&maria_url, "maria"));
    for (out, dir_name, target) in [(pg_out, "pg", "postgres"), (maria_out, "maria", "mysql")] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(3), "{target}: {stdout}");
        assert!(
            stdout.contains("4 of 4 clients ended before the run did, their connection failed"),
            "{target}: {stdout}"
        );
        let rec = crate::common::record(&dir.path().join(dir_name));
        let c = crate::common::case(&rec, target, "select-only");
        assert_eq!(c["status"], "failed", "{target}");
        let figures = &c["reps"][0]["detail"]["custom"]["figures"];
        assert_eq!(figures["clients_lost"], 4, "{target}: {figures}");
        // A failed transaction for each client, not one for every turn of a loop.
        assert_eq!(figures["failed"], 4, "{target}: {figures}");
        assert!(
            figures["transactions"].as_u64().unwrap() > 4,
            "{target}: {figures}"
        );
        let wall = c["reps"][0]["wall_ns"].as_u64().unwrap();
        assert!(wall < 50_000_000_000, "{target}: ran {wall} ns");
    }
}

/// A script without SQL never waits: its clients take turns on their thread, and the run ends
/// at its duration (it once went on for ever, the scheduler's coarse clock never read again).
#[test]
fn a_script_without_sql_ends_at_its_duration() {
    let Some((pg, _maria)) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("meta.sql"),
        "\\set a random(1, 10)\n\\set b :a * 2\n",
    )
    .unwrap();
    let started = Instant::now();
    crate::common::dyno(dir.path())
        .args([
            "run", "--suite", "sql", "--script", "meta.sql", "-c", "3", "-j", "1",
        ])
        .args(["-d", "1s", "--quiet", "-o", "meta", &pg.url()])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "{:?}",
        started.elapsed()
    );
    let rec = crate::common::record(&dir.path().join("meta"));
    let c = crate::common::case(&rec, "postgres", "meta.sql");
    let figures = &c["reps"][0]["detail"]["custom"]["figures"];
    assert!(
        figures["transactions"].as_u64().unwrap() > 1000,
        "{figures}"
    );
    assert_eq!(figures["failed"], 0, "{figures}");
}

/// Clients connect and prepare, then start together (as pgbench's and sysbench's threads meet
/// at a barrier); one the server refuses still arrives, so the others start without it, and the
/// refusal is counted in the server's words. A user allowed two connections at once: two
/// clients of four (dyno makes its tables before they come). The case fails, as pgbench's run
/// is "aborted" when a client is: its figures are of fewer clients than were asked for.
#[test]
fn clients_the_server_refuses_do_not_hold_back_the_others() {
    let Some((pg, maria)) = servers() else {
        return;
    };
    let mut admin = postgres::Client::connect(&pg.url(), postgres::NoTls).unwrap();
    admin
        .batch_execute(
            "CREATE ROLE dyno_few LOGIN CONNECTION LIMIT 2; \
             GRANT CREATE ON DATABASE postgres TO dyno_few",
        )
        .unwrap();
    maria.sql(
        "CREATE USER dyno_few@'127.0.0.1' IDENTIFIED BY 'few' WITH MAX_USER_CONNECTIONS 2; \
         GRANT ALL ON *.* TO dyno_few@'127.0.0.1'",
    );
    let dir = tempfile::tempdir().unwrap();
    let urls = [
        format!("postgres://dyno_few@127.0.0.1:{}/postgres", pg.port),
        format!("mysql://dyno_few:few@127.0.0.1:{}", maria.port),
    ];
    crate::common::dyno(dir.path())
        .args(["run", "--suite", "sql", "-b", "select-only", "-t", "50"])
        .args(["-c", "4", "--quiet", "-o", "few"])
        .args(&urls)
        .timeout(Duration::from_secs(120))
        .assert()
        .code(3)
        .stdout(predicates::str::contains(
            "2 of 4 clients ended before the run did, their connection failed",
        ));
    let rec = crate::common::record(&dir.path().join("few"));
    for (target, says) in [
        ("postgres", "53300: too many connections for role"),
        ("mysql", "1226"),
    ] {
        let c = crate::common::case(&rec, target, "select-only");
        let figures = &c["reps"][0]["detail"]["custom"]["figures"];
        assert_eq!(
            (
                &figures["transactions"],
                &figures["failed"],
                &figures["clients_lost"]
            ),
            (&102.into(), &2.into(), &2.into()),
            "{target}: {figures}"
        );
        let refused = c["error_examples"].to_string();
        assert!(refused.contains(says), "{target}: {refused}");
        // The refusals are in the time series too, as its first interval's failures.
        let series = c["reps"][0]["detail"]["custom"]["intervals"]
            .as_array()
            .unwrap();
        let failed: u64 = series.iter().map(|i| i["errors"].as_u64().unwrap()).sum();
        assert_eq!(failed, 2, "{target}: {series:?}");
    }
}
