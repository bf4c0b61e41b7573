//! The live view (`dyno run --ui`) in a real headless Chromium, during an open-loop load of
//! `dyno serve --http` that dyno starts and pauses once: the page's figures change with each
//! interval, the pause is a band as soon as it happens, and at the end the page is the run's
//! HTML report. The page fetches nothing but dyno's own address, and the server answers no
//! other address unless told to, and then only with its token.

use crate::common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use testkit::browser::Browser;

/// The plan: 5 s at 400 requests a second, 500 ms intervals, the server paused at 2 s for
/// 600 ms.
fn plan(dir: &std::path::Path) -> std::path::PathBuf {
    let dyno_bin = env!("CARGO_BIN_EXE_dyno");
    let text = format!(
        r#"
[suite]
name = "load"
reps = 1

[load]
duration = "5s"
rate = 400
interval = "500ms"

[targets.web]
url = "http://127.0.0.1:{{port.web}}/"

[[targets.web.process.members]]
name = "web"
cmd = "{dyno_bin} serve --http --listen 127.0.0.1:{{port}}"

[[faults]]
action = "pause"
at = ["2s"]
for = "600ms"
"#
    );
    let path = dir.join("live.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// What the page shows now.
fn look(b: &Browser) -> serde_json::Value {
    b.eval(
        "const t = (id) => (document.getElementById(id) || {}).textContent;
         return { updates: +(document.body.dataset.updates || 0), rate: t('now-rate'),
                  p99: t('now-p99'), bands: document.querySelectorAll('rect.fault').length,
                  band_at: document.body.dataset.bandAt, title: document.title,
                  tables: document.querySelectorAll('table').length };",
    )
}

/// Starts `dyno run ARGS -o OUT` in `dir`: the process, and the view's address (the line of
/// its standard error that gives it; the rest is read on, so dyno never blocks on a full pipe).
fn start(
    dir: &std::path::Path,
    args: &[&str],
    out: &std::path::Path,
) -> (std::process::Child, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dyno"))
        .current_dir(dir)
        .arg("run")
        .args(args)
        .arg("-o")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("dyno said where its live view is")
            .unwrap();
        if let Some(url) = line.strip_prefix("dyno: live view at ") {
            break url.to_string();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    (child, url)
}

#[test]
fn the_live_view_follows_the_run_shows_the_fault_at_once_and_ends_as_the_report() {
    let Some(browser) = Browser::start(1200, 1000) else {
        return;
    };
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let plan = plan(dir.path());
    let (mut child, url) = start(dir.path(), &[plan.to_str().unwrap(), "--ui"], &out);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    browser.open(&url);
    let (mut seen, mut band_at, mut shot) = (Vec::new(), None, None);
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        let now = look(&browser);
        if !now["title"].as_str().unwrap().ends_with("live") {
            break; // the report
        }
        let figures = (
            now["rate"].clone(),
            now["p99"].clone(),
            now["updates"].clone(),
        );
        if now["updates"].as_u64() > Some(0) && seen.last() != Some(&figures) {
            seen.push(figures);
        }
        if band_at.is_none() && now["bands"].as_u64() > Some(0) {
            // The intervals the page held when the fault reached it, as the page counted them.
            band_at = now["band_at"].as_str().and_then(|n| n.parse::<u64>().ok());
        }
        if shot.is_none() && band_at.is_some() && now["updates"].as_u64() >= Some(7) {
            shot = Some(browser.screenshot());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(child.wait().unwrap().success());
    assert!(
        seen.len() >= 3,
        "the figures changed {} times: {seen:?}",
        seen.len()
    );

    // The band came with the interval the pause began in, or the next at the latest.
    let rec = record(&out);
    let fault = &rec["faults"][0];
    let started = rec["cases"][0]["reps"][0]["detail"]["load"]["started_ns"]
        .as_u64()
        .unwrap();
    // The pause is timed from the run's start, the load from its own: the pause may come
    // before the load began (a slow start), in its interval 0 then.
    let into = fault["start_ns"].as_u64().unwrap().saturating_sub(started);
    let interval = into / 500_000_000;
    let band_at = band_at.expect("a fault band was drawn");
    assert!(
        band_at <= interval + 1,
        "the pause began {into} ns into the load (interval {interval}); the band came with {band_at} intervals shown"
    );

    // The page is now the report: the same tables and charts as the file (below).
    let end = look(&browser);
    // With the live view's charts frozen in it: every interval the record kept, the pause a
    // band; and the same from the file the run wrote.
    let kept = rec["cases"][0]["reps"][0]["detail"]["load"]["intervals"]
        .as_array()
        .unwrap()
        .len();
    let frozen = "return [...document.querySelectorAll('section.dyno-view section.case')]
        .map((s) => [+s.dataset.intervals, s.querySelectorAll('rect.fault').length,
                     s.querySelectorAll('svg.chart polyline').length])";
    let shown = browser.eval(frozen);
    assert_eq!(shown, serde_json::json!([[kept, 3, 8]]), "{end}");
    let requests = browser.requests();
    let _ = browser.console();
    browser.open(&format!("file://{}", out.join("report.html").display()));
    assert_eq!(browser.eval(frozen), shown);
    assert_eq!(look(&browser)["tables"], end["tables"]);
    assert!(browser.console().is_empty(), "{:?}", browser.console());
    let base = url.trim_end_matches('/');
    assert!(
        requests.iter().any(|r| r.ends_with("/events"))
            && requests.iter().all(|r| r.starts_with(base)),
        "the page and its events, from dyno's address only: {requests:?}"
    );
    if let Ok(dir) = std::env::var("DYNO_SCREENSHOTS") {
        std::fs::write(
            format!("{dir}/ui-live.png"),
            shot.expect("a screenshot mid-run"),
        )
        .unwrap();
        std::fs::write(format!("{dir}/ui-final.png"), browser.screenshot()).unwrap();
    }
}

/// One GET of `path` on `addr` with `host`: the status line.
fn get(addr: &str, host: &str, path: &str) -> String {
    ask(addr, &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n"))
}

/// One request (its head without the blank line ending it): the answer's status line.
fn ask(addr: &str, head: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "{head}Connection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer.lines().next().unwrap_or("").to_string()
}

/// This machine's address on its network, when it has one besides loopback.
fn own_address() -> Option<std::net::IpAddr> {
    // A UDP socket "connected" to a documentation address sends nothing; it only picks the
    // interface a packet would leave by.
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("198.51.100.1:9").ok()?;
    Some(s.local_addr().ok()?.ip()).filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
}

#[test]
fn the_view_answers_only_its_own_address_unless_told_and_then_only_with_its_token() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let server = RefServer::start();
    let target = format!("http://127.0.0.1:{}/", server.port);
    let run = |ui: &str| {
        let out = dir.path().join(ui.replace(['=', ':', '.'], "-"));
        start(
            dir.path(),
            &[&target, "-d", "3s", "--rate", "50", "-r", "1", ui],
            &out,
        )
    };
    let (mut child, url) = run("--ui");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let port = addr.rsplit(':').next().unwrap().to_string();
    assert_eq!(get(&addr, &addr, "/"), "HTTP/1.1 200 OK");
    assert_eq!(
        get(&addr, &format!("localhost:{port}"), "/"),
        "HTTP/1.1 200 OK"
    );
    // A name rebound to 127.0.0.1 by someone else's page is not this server's name.
    assert_eq!(
        get(&addr, &format!("attacker.example:{port}"), "/"),
        "HTTP/1.1 403 Forbidden"
    );
    assert_eq!(get(&addr, &addr, "/nothing"), "HTTP/1.1 404 Not Found");
    // Without --ui-stop the page cannot stop the run.
    let stop = format!("POST /stop HTTP/1.1\r\nHost: {addr}\r\nX-Dyno-Stop: 1\r\n");
    assert_eq!(ask(&addr, &stop), "HTTP/1.1 403 Forbidden");
    // From the machine's other address: nothing listens there.
    let own = own_address();
    if let Some(ip) = own {
        assert!(
            TcpStream::connect((ip, port.parse::<u16>().unwrap())).is_err(),
            "{ip}"
        );
    }
    assert!(child.wait().unwrap().success());

    // Told to listen there: every request needs the token printed with the address.
    let Some(ip) = own else { return };
    let (mut child, url) = run(&format!("--ui={ip}:0"));
    let (base, token) = url.split_once("/?token=").expect("a token in the address");
    let addr = base.trim_start_matches("http://");
    assert_eq!(token.len(), 32, "{url}");
    assert_eq!(get(addr, addr, "/"), "HTTP/1.1 403 Forbidden");
    assert_eq!(get(addr, addr, "/?token=0000"), "HTTP/1.1 403 Forbidden");
    assert_eq!(
        get(addr, addr, &format!("/?token={token}")),
        "HTTP/1.1 200 OK"
    );
    assert!(child.wait().unwrap().success());
}

#[test]
fn the_stop_button_stops_the_run_when_allowed_and_the_finished_repetition_is_kept() {
    let Some(browser) = Browser::start(1000, 800) else {
        return;
    };
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let server = RefServer::start();
    let out = dir.path().join("out");
    // Three repetitions of 4 s; stopped in the second.
    let target = format!("http://127.0.0.1:{}/", server.port);
    let args = [
        target.as_str(),
        "-d",
        "4s",
        "--rate",
        "100",
        "-r",
        "3",
        "--ui",
        "--ui-stop",
    ];
    let (mut child, url) = start(dir.path(), &args, &out);
    let t0 = Instant::now();
    browser.open(&url);
    let state = || browser.eval("return document.getElementById('state').textContent");
    let until = Instant::now() + Duration::from_secs(30);
    while !state().as_str().unwrap_or("").contains("repetition 2 of 3") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    // The first press asks again; the second stops.
    let press = "const b = document.getElementById('stop'); b.click(); return b.textContent";
    assert_eq!(browser.eval(press), "Press again to stop");
    browser.eval(press);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted");
    assert!(
        t0.elapsed() < Duration::from_secs(11),
        "stopped before its third repetition"
    );
    let rec = record(&out);
    assert_eq!(rec["interrupted"], true);
    let reps = rec["cases"][0]["reps"].as_array().unwrap();
    assert!(!reps.is_empty(), "the finished repetition is kept");
}

/// The events `/events` at `addr` sends, as they come, until `enough` says so (at most 30 s).
fn events_until(addr: &str, enough: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    for line in BufReader::new(s).lines() {
        let Ok(line) = line else { break };
        if let Some(data) = line.strip_prefix("data: ") {
            let e: serde_json::Value = serde_json::from_str(data).unwrap();
            if enough(&e) {
                return e;
            }
            seen.push(e["kind"].clone());
        }
        if Instant::now() > until {
            break;
        }
    }
    panic!("the events never said it: {seen:?}");
}

#[test]
fn rank_0s_view_shows_every_shards_progress() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let server = RefServer::start();
    let target = format!("http://127.0.0.1:{}/", server.port);
    let rendezvous = format!("127.0.0.1:{}", testkit::free_port());
    let load = [&target, "-d", "4s", "--rate", "200", "-c", "2", "-r", "1"];
    let shard = |i: u32| {
        [
            "--shard".to_string(),
            format!("{i}/2"),
            "--rendezvous".to_string(),
            rendezvous.clone(),
        ]
    };
    let mut rank0: Vec<&str> = load.to_vec();
    let s0 = shard(0);
    rank0.extend(s0.iter().map(String::as_str));
    rank0.push("--ui");
    let (mut child0, url) = start(dir.path(), &rank0, &dir.path().join("out"));
    let mut child1 = std::process::Command::new(env!("CARGO_BIN_EXE_dyno"))
        .current_dir(dir.path())
        .arg("run")
        .args(load)
        .args(shard(1))
        .args(["-o", "out", "--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    // Both shards, each at its own rate (100/s, half the plan's), running the same case.
    let running = |e: &serde_json::Value| {
        e["kind"] == "shards"
            && (e["shards"].as_array().unwrap().iter())
                .filter(|s| s["state"] == "running" && s["rate"].as_f64() > Some(50.0))
                .count()
                == 2
    };
    let e = events_until(addr, running);
    let shards = e["shards"].as_array().unwrap();
    assert_eq!(shards[0]["index"], 0, "{e}");
    assert_eq!(shards[1]["index"], 1, "{e}");
    for s in shards {
        assert_eq!(
            (&s["target"], &s["test"], &s["rep"]),
            (&"http".into(), &"load".into(), &1.into()),
            "{e}"
        );
        let rate = s["rate"].as_f64().unwrap();
        assert!((80.0..120.0).contains(&rate), "{e}");
        assert!(s["ago_ms"].as_u64() < Some(2000), "{e}");
    }
    assert!(child1.wait().unwrap().success());
    assert!(child0.wait().unwrap().success());
}
