//! Request templates through the real binary: what nginx was sent follows the fields (a Zipf's
//! top key in its share, data rows in order, at random or per client), and a bad template or
//! data file is refused where it was written, before anything runs.

use crate::common::*;

#[test]
fn a_bad_template_is_refused_where_it_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("users.csv"), "email,name\na@x.test,Ann\n").unwrap();
    let refused = |args: &[&str]| refused_run(d, args);
    let err = refused(&["http://127.0.0.1:9/k/{{zipff 10 1}}"]);
    assert!(
        err.contains(
            "path: at column 4: unknown template field {{zipff 10 1}}; did you mean \"zipf\"?"
        ),
        "{err}"
    );
    let err = refused(&[
        "http://127.0.0.1:9/",
        "--body",
        "{\"u\": \"{{data.mail}}\"}",
        "--data-rows",
        "users.csv",
    ]);
    assert!(err.contains("body: at column 8: {{data.mail}}: the data file has no column \"mail\"; did you mean \"email\"?"), "{err}");
    let err = refused(&["http://127.0.0.1:9/{{data.email}}"]);
    assert!(err.contains("no data file is given"), "{err}");
    let err = refused(&["http://127.0.0.1:9/", "--data-rows", "nowhere.csv"]);
    assert!(
        err.contains("data_rows: nowhere.csv: No such file"),
        "{err}"
    );
    let err = refused(&["h2c://127.0.0.1:9/{{seq}}"]);
    assert!(err.contains("filled in on HTTP/1.1 only"), "{err}");
    // Off, the text is sent as written.
    let plan = "[targets.a]\nurl = \"http://127.0.0.1:9/{{zipff}}\"\ntemplates = false\n";
    std::fs::write(d.join("off.toml"), plan).unwrap();
    dyno(d).args(["validate", "off.toml"]).assert().success();
}

mod servers {
    use super::*;

    /// `dyno run URL ARGS` at nginx (logging what it was sent), one load thread, seed 1.
    fn sent(url: &str, args: &[&str]) -> (Nginx, Vec<String>) {
        let n = Nginx::start_logged().expect("nginx (./scripts/test installs it)");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("users.csv"),
            "email,name\na@x.test,Ann Lee\nb@x.test,Bo\nc@x.test,Cy\n",
        )
        .unwrap();
        dyno(dir.path())
            .args([
                "run",
                &n.url(url),
                "--threads",
                "1",
                "--seed",
                "1",
                "-r",
                "1",
                "-o",
                "o",
            ])
            .args(args)
            .assert()
            .success();
        assert_schema_valid(&record(&dir.path().join("o")));
        let log = n.requests();
        (n, log)
    }

    /// `{{zipf 1000 0.99}}` over 10^5 requests: the top key's share is the formula's, 1/ζ(1000,
    /// 0.99), within 2%; every key is 1 to 1000.
    #[test]
    fn zipf_keys_follow_the_distribution() {
        let _serial = serial();
        let (_n, log) = sent("/k/{{zipf 1000 0.99}}", &["-c", "4", "--requests", "25000"]);
        assert_eq!(log.len(), 100_000);
        let mut top = 0;
        for line in &log {
            let k: u64 = line.strip_prefix("GET /k/").unwrap().parse().unwrap();
            assert!((1..=1000).contains(&k), "{line}");
            top += u64::from(k == 1);
        }
        let zeta: f64 = (1..=1000).map(|k| 1.0 / (k as f64).powf(0.99)).sum();
        let share = top as f64 / log.len() as f64;
        assert!(
            (share * zeta - 1.0).abs() < 0.02,
            "top key {share} against {}",
            1.0 / zeta
        );
    }

    /// Data rows: in order (one connection: row 0, 1, 2, 0…), per client (each connection its
    /// row), at random (every row, none in a fixed cycle); `{{seq}}` numbers every request once.
    #[test]
    fn data_rows_in_order_per_client_and_at_random() {
        let _serial = serial();
        let (_n, log) = sent(
            "/u/{{data.name}}/{{seq}}",
            &["-c", "1", "--requests", "7", "--data-rows", "users.csv"],
        );
        let want: Vec<String> = [
            "Ann%20Lee",
            "Bo",
            "Cy",
            "Ann%20Lee",
            "Bo",
            "Cy",
            "Ann%20Lee",
        ]
        .iter()
        .enumerate()
        .map(|(i, name)| format!("GET /u/{name}/{i}"))
        .collect();
        assert_eq!(log, want);

        let args = [
            "-c",
            "3",
            "--requests",
            "50",
            "--data-rows",
            "users.csv",
            "--data-order",
            "per-client",
        ];
        let (_n, log) = sent("/u/{{data.email}}/{{client}}", &args);
        assert_eq!(log.len(), 150);
        for line in &log {
            let (email, client) = line
                .strip_prefix("GET /u/")
                .unwrap()
                .split_once('/')
                .unwrap();
            let client: usize = client.parse().unwrap();
            assert_eq!(
                email,
                ["a@x.test", "b@x.test", "c@x.test"][client % 3],
                "{line}"
            );
        }

        let args = [
            "-c",
            "1",
            "--requests",
            "300",
            "--data-rows",
            "users.csv",
            "--data-order",
            "random",
        ];
        let (_n, log) = sent("/u/{{data.email}}", &args);
        let firsts: Vec<char> = log.iter().map(|l| l.chars().nth(7).unwrap()).collect();
        for row in ['a', 'b', 'c'] {
            let n = firsts.iter().filter(|c| **c == row).count();
            assert!((60..=140).contains(&n), "{row}: {n} of 300");
        }
        let cycle = firsts
            .windows(3)
            .all(|w| w[0] != w[1] && w[1] != w[2] && w[0] != w[2]);
        assert!(!cycle, "drawn, not cycled");
    }
}
