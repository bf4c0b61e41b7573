//! Checks, captures and scenarios through the real binary, at nginx's tiny shop (`/login`
//! hands out a token, `/account/…` wants it): each check counted passed or failed per request,
//! a failed one failing its request when asked, a threshold on the share passed; a scenario
//! that logs in, captures the token and uses it; bad checks and captures refused where they
//! were written.

use crate::common::*;
use serde_json::Value;

#[test]
fn a_bad_check_is_refused_where_it_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |args: &[&str]| refused_run(dir.path(), args);
    let url = "http://127.0.0.1:9/";
    let err = refused(&[url, "--expect", "json token exists"]);
    assert!(err.contains("--expect: http: option checks: check `json token exists`: \"token\" is not a JSON pointer"), "{err}");
    let err = refused(&[url, "--expect", "stauts == 200"]);
    assert!(err.contains("did you mean \"status\"?"), "{err}");
    let err = refused(&["h2c://127.0.0.1:9/", "--expect", "status == 200"]);
    assert!(
        err.contains("checks are made on HTTP/1.1 responses only"),
        "{err}"
    );
    let err = refused(&[url, "--capture", "token = json token"]);
    assert!(
        err.contains("capture `token = json token`: \"token\" is not a JSON pointer"),
        "{err}"
    );
    let err = refused(&[
        url,
        "-H",
        "Authorization: {{capture.tokn}}",
        "--capture",
        "token = json /token",
    ]);
    assert!(
        err.contains("no request captures \"tokn\"; did you mean \"token\"?"),
        "{err}"
    );
    let err = refused(&[url, "--scenario", "login"]);
    assert!(
        err.contains("a scenario's steps are the requests of a mix"),
        "{err}"
    );
    let err = refused(&[url, "--threshold", "checks > 99"]);
    assert!(
        err.contains("is not a percentage (checks > 99.9%)"),
        "{err}"
    );
}

/// The checks of `rec`'s first repetition: (request, check) → (passed, failed).
fn checks(rec: &Value) -> std::collections::BTreeMap<(String, String), (u64, u64)> {
    let load = &rec["cases"][0]["reps"][0]["detail"]["load"];
    (load["checks"].as_array().unwrap().iter())
        .map(|c| {
            let key = (
                c["request"].as_str().unwrap().to_string(),
                c["check"].as_str().unwrap().to_string(),
            );
            (
                key,
                (c["passed"].as_u64().unwrap(), c["failed"].as_u64().unwrap()),
            )
        })
        .collect()
}

mod servers {
    use super::*;

    fn shop_plan(dir: &std::path::Path, n: &Nginx, fail: bool) -> std::path::PathBuf {
        let plan = format!(
            r#"[targets.shop]
url = "{}"
checks = ["status == 200"]
checks_fail = {fail}

[[targets.shop.requests]]
name = "login"
method = "POST"
path = "/login"
checks = ["json /token == {token}", "header Content-Type contains json", "size < 1KiB"]

[[targets.shop.requests]]
name = "account"
path = "/account/7"
"#,
            n.url("/"),
            token = testkit::SHOP_TOKEN
        );
        let p = dir.join("shop.toml");
        std::fs::write(&p, plan).unwrap();
        p
    }

    #[test]
    fn each_check_is_counted_and_may_fail_its_request() {
        let _serial = serial();
        let n = Nginx::start_logged().expect("nginx (./scripts/test installs it)");
        let dir = tempfile::tempdir().unwrap();
        let plan = shop_plan(dir.path(), &n, false);
        let run = |out: &str, more: &[&str]| {
            dyno(dir.path())
                .arg("run")
                .arg(&plan)
                .args([
                    "--suite",
                    "load",
                    "-c",
                    "2",
                    "--requests",
                    "200",
                    "-r",
                    "1",
                    "-o",
                    out,
                ])
                .args(more)
                .output()
                .unwrap()
        };
        // Counted only: the account's 401s fail its check, not the requests.
        let o = run("counted", &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rec = record(&dir.path().join("counted"));
        assert_schema_valid(&rec);
        let c = checks(&rec);
        let (login, account) = (
            c[&("login".into(), "status == 200".into())],
            c[&("account".into(), "status == 200".into())],
        );
        assert_eq!(login.1, 0);
        assert_eq!(account.0, 0);
        assert_eq!(
            login.0 + account.1,
            400,
            "every response checked once: {c:?}"
        );
        for check in [
            "json /token == s3cret-7",
            "header Content-Type contains json",
            "size < 1KiB",
        ] {
            assert_eq!(c[&("login".into(), check.into())], (login.0, 0), "{check}");
        }
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains("shop: checks on responses"), "{stdout}");
        // The 401s are non-2xx anyway; with checks_fail a 200 failing a check fails too.
        let plan_fail = shop_plan(dir.path(), &n, true);
        let text = std::fs::read_to_string(&plan_fail)
            .unwrap()
            .replace("json /token == s3cret-7", "json /token == other");
        std::fs::write(&plan_fail, text).unwrap();
        let o = run("failing", &["--threshold", "checks > 99%"]);
        assert_eq!(
            o.status.code(),
            Some(4),
            "the threshold broke: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let rec = record(&dir.path().join("failing"));
        let errors = &rec["cases"][0]["error_examples"]["application"];
        let by_op = &rec["cases"][0]["reps"][0]["by_op"];
        assert_eq!(
            by_op["login"]["errors"], by_op["login"]["count"],
            "every login failed its check"
        );
        let example = errors.as_str().unwrap_or_default();
        assert!(
            example.contains("check `json /token == other` failed") || example.contains("HTTP 4xx"),
            "{example}"
        );
    }

    /// The shop's scenario: log in, capture the token, ask for the account with it.
    fn scenario_plan(dir: &std::path::Path, n: &Nginx, capture: &str) -> std::path::PathBuf {
        let plan = format!(
            r#"[targets.shop]
url = "{}"
scenario = "login, account"
checks = ["status == 200"]

[[targets.shop.requests]]
name = "login"
method = "POST"
path = "/login"
capture = ["{capture}"]

[[targets.shop.requests]]
name = "account"
path = "/account/{{{{client}}}}"
headers = ["Authorization: Bearer {{{{capture.token}}}}"]
"#,
            n.url("/")
        );
        let p = dir.join(format!("scenario-{}.toml", capture.len()));
        std::fs::write(&p, plan).unwrap();
        p
    }

    /// The mean of an encoded histogram, and its count.
    fn mean(text: &Value) -> (f64, u64) {
        let h = results::histogram::decode(text.as_str().unwrap()).unwrap();
        (h.mean(), h.len())
    }

    /// With the token captured no check fails; with a capture that finds nothing, every
    /// account request fails its check and the capture is counted missed, by name. Each
    /// iteration is timed end to end: the sum of its two steps (closed loop, no think time:
    /// the second step starts the instant the first ends).
    #[test]
    fn a_scenario_logs_in_captures_the_token_and_uses_it() {
        let _serial = serial();
        let n = Nginx::start_logged().expect("nginx (./scripts/test installs it)");
        let dir = tempfile::tempdir().unwrap();
        let run = |plan: &std::path::Path, out: &str| {
            dyno(dir.path())
                .arg("run")
                .arg(plan)
                .args([
                    "--suite",
                    "load",
                    "-c",
                    "2",
                    "--requests",
                    "200",
                    "-r",
                    "1",
                    "-o",
                    out,
                ])
                .assert()
                .success();
            let rec = record(&dir.path().join(out));
            assert_schema_valid(&rec);
            rec
        };
        let rec = run(
            &scenario_plan(dir.path(), &n, "token = json /token"),
            "with",
        );
        let c = checks(&rec);
        assert_eq!(
            c[&("account".into(), "status == 200".into())],
            (200, 0),
            "{c:?}"
        );
        assert_eq!(
            c[&("login".into(), "capture token = json /token".into())],
            (200, 0)
        );
        let load = &rec["cases"][0]["reps"][0]["detail"]["load"];
        let it = &load["scenario"];
        assert_eq!(it["steps"], serde_json::json!(["login", "account"]));
        assert_eq!(
            (it["completed"].as_u64(), it["failed"].as_u64()),
            (Some(200), Some(0))
        );
        let by_op = &rec["cases"][0]["reps"][0]["by_op"];
        let (login, account, whole) = (
            mean(&by_op["login"]["histogram"]),
            mean(&by_op["account"]["histogram"]),
            mean(&it["histogram"]),
        );
        assert_eq!((login.1, account.1, whole.1), (200, 200, 200));
        let steps = login.0 + account.0;
        assert!(
            (whole.0 / steps - 1.0).abs() < 0.01,
            "iterations {} against steps summed {steps}",
            whole.0
        );
        let log = n.requests();
        assert_eq!(
            log.iter()
                .filter(|l| l.starts_with("GET /account/"))
                .count(),
            200
        );

        let rec = run(
            &scenario_plan(dir.path(), &n, "token = json /nothing"),
            "without",
        );
        let c = checks(&rec);
        assert_eq!(
            c[&("account".into(), "status == 200".into())],
            (0, 200),
            "{c:?}"
        );
        assert_eq!(
            c[&("login".into(), "capture token = json /nothing".into())],
            (0, 200)
        );
    }

    /// In an open loop each arrival starts an iteration, whose second step follows on the
    /// same connection: about rate × duration iterations, each with its two steps, every
    /// account request carrying the token its login captured.
    #[test]
    fn a_scenario_in_an_open_loop_starts_an_iteration_per_arrival() {
        let _serial = serial();
        let n = Nginx::start_logged().expect("nginx (./scripts/test installs it)");
        let dir = tempfile::tempdir().unwrap();
        let plan = scenario_plan(dir.path(), &n, "token = json /token");
        dyno(dir.path())
            .arg("run")
            .arg(&plan)
            .args([
                "--suite", "load", "--rate", "200", "-d", "2s", "-c", "4", "-r", "1", "-o", "open",
            ])
            .assert()
            .success();
        let rec = record(&dir.path().join("open"));
        assert_schema_valid(&rec);
        let it = &rec["cases"][0]["reps"][0]["detail"]["load"]["scenario"];
        let completed = it["completed"].as_u64().unwrap();
        assert!((360..=400).contains(&completed), "{it}");
        assert_eq!(it["failed"], 0, "{it}");
        let by_op = &rec["cases"][0]["reps"][0]["by_op"];
        let (login, account) = (
            by_op["login"]["count"].as_u64().unwrap(),
            by_op["account"]["count"].as_u64().unwrap(),
        );
        assert!(
            login >= completed && login - account <= 4,
            "{login} logins, {account} account requests"
        );
        let c = checks(&rec);
        assert_eq!(c[&("account".into(), "status == 200".into())].1, 0, "{c:?}");
    }
}
