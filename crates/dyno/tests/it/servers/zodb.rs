//! The ZODB adapter (`adapters/zodb`), on the real thing: ZODB, ZEO and RelStorage from
//! `adapters/zodb/.venv` (pinned; `./scripts/test` makes it), a private PostgreSQL and a private
//! MariaDB. The conformance kit passes on each of its storages (RelStorage on both servers), and
//! the shootout runs on them side by side with their cache states verified: warm, cold and hot
//! reads each reached below ZODB's pickle cache, steamin's none.

use crate::common::*;
use std::path::Path;

/// The adapter's URL prefix, or `None` (a skip, or a failure under `./scripts/test`) when its
/// environment has not been made.
fn zodb() -> Option<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../adapters/zodb")
        .canonicalize()
        .unwrap();
    let python = dir.join(".venv/bin/python");
    testkit::installed(
        "the ZODB adapter's environment (adapters/zodb/setup.sh)",
        &[python.to_str().unwrap()],
    )?;
    Some(format!("exec:{}", dir.join("adapter.py").display()))
}

/// The four storages, and RelStorage on MariaDB (zodbshootout's `mysql` column).
const STORAGES: [&str; 5] = ["mapping", "file", "zeo", "relstorage", "relstorage-mysql"];

/// The servers RelStorage runs on.
struct Servers {
    pg: testkit::Postgres,
    maria: testkit::mariadb::MariaDb,
}

fn servers() -> Option<Servers> {
    Some(Servers {
        pg: testkit::Postgres::start()?,
        maria: testkit::mariadb::MariaDb::start()?,
    })
}

/// A storage's column: named after the adapter and its options' one-word values, so the second
/// RelStorage target is `zodb-relstorage-2`.
fn column(storage: &str) -> String {
    match storage {
        "relstorage-mysql" => "zodb-relstorage-2".into(),
        s => format!("zodb-{s}"),
    }
}

fn urls(z: &str, s: &Servers) -> Vec<String> {
    STORAGES
        .iter()
        .map(|storage| match *storage {
            "relstorage" => format!("{z}?storage=relstorage&dsn={}", s.pg.url()),
            "relstorage-mysql" => format!("{z}?storage=relstorage&dsn={}", s.maria.url()),
            storage => format!("{z}?storage={storage}"),
        })
        .collect()
}

#[test]
fn the_kit_passes_on_each_zodb_storage() {
    let Some(z) = zodb() else { return };
    let Some(servers) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (storage, url) in STORAGES.iter().zip(urls(&z, &servers)) {
        let o = dyno(dir.path())
            .args(["adapter-check", &url])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{storage}: {out}");
        assert!(out.contains("15 checks passed"), "{storage}: {out}");
        // The pickle cache is the adapter's client cache, and the kit saw it serve and empty.
        assert!(
            out.contains("client cache: ZODB pickle cache")
                && out.contains("ok    client cache: a read again is served by it"),
            "{storage}: {out}"
        );
        // FileStorage locks its file: one session (process) at a time, said in the handshake.
        assert_eq!(
            out.contains("1 session(s) at a time"),
            *storage == "file",
            "{storage}: {out}"
        );
    }
}

#[test]
fn the_shootout_on_the_zodb_storages_verifies_their_cache_states() {
    let Some(z) = zodb() else { return };
    let Some(servers) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let o = dyno(dir.path())
        .args(["run", "-n", "40", "-c", "1", "--reps", "1", "-o", "o"])
        .args(urls(&z, &servers))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // One table, the storages side by side, named after the adapter and its storage.
    let header = out
        .lines()
        .find(|l| l.starts_with("test "))
        .unwrap_or_default();
    for s in STORAGES {
        assert!(header.contains(&column(s)), "{out}");
    }
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    let reads = |target: &str, test: &str| {
        case(&rec, target, test)["reps"][0]["detail"]["store"]["storage_reads"]
            .as_u64()
            .unwrap()
    };
    for s in STORAGES {
        let t = column(s);
        for test in ["add", "update", "warm", "hot", "steamin"] {
            let c = case(&rec, &t, test);
            assert_eq!(c["status"], "ok", "{t} {test}: {}", c["reason"]);
        }
        assert_eq!(case(&rec, &t, "add")["versions"]["ZODB"], "6.0");
        // Warm: new sessions (processes), every object loaded from below the pickle cache; hot:
        // the same sessions, their pickle caches emptied; steamin: served by the pickle cache.
        assert_eq!(reads(&t, "warm"), 40, "{t}");
        assert_eq!(reads(&t, "hot"), 40, "{t}");
        assert_eq!(reads(&t, "steamin"), 0, "{t}");
        // Reads as zodbshootout times them: one batch of the client's objects per test.
        for test in ["warm", "hot", "steamin"] {
            let note = case(&rec, &t, test)["cache"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(
                note.contains("(get_heads: each object's length and header"),
                "{t} {test}: {note}"
            );
        }
        // Hot and steamin timed as zodbshootout times them, the reads alone; warm with its
        // transaction's begin and commit (the commit time), as zodbshootout's cold with its
        // connection's opening. RelStorage's begin polls its database: far longer than what a
        // client does around its batch.
        let timed = |test: &str| {
            let r = &case(&rec, &t, test)["reps"][0];
            let batch = r["latency_ns"]["mean"].as_f64().unwrap() * 40.0;
            let commit = r["detail"]["store"]["commit_ns"].as_f64().unwrap();
            (r["client_ns"][0].as_f64().unwrap(), batch, commit)
        };
        let (client, batch, commit) = timed("warm");
        // (The mean is the histogram's: within its 0.1%.)
        let whole = client >= 0.99 * batch + commit;
        assert!(whole, "{t} warm: {client} {batch} {commit}");
        if s.starts_with("relstorage") {
            for test in ["hot", "steamin"] {
                let (client, batch, commit) = timed(test);
                let alone = commit > 0.0 && client < batch + commit / 2.0;
                assert!(alone, "{t} {test}: {client} {batch} {commit}");
            }
        }
        let hot = case(&rec, &t, "hot");
        assert!(
            hot["cache"]
                .as_str()
                .unwrap()
                .starts_with("the target's client cache emptied (ZODB pickle cache"),
            "{hot}"
        );
        // Cold: only where the caches below the sessions are dyno's to drop.
        let cold = case(&rec, &t, "cold");
        if s == "file" || s == "zeo" {
            assert_eq!(cold["status"], "ok", "{t}: {}", cold["reason"]);
            assert_eq!(reads(&t, "cold"), 40);
            assert!(
                cold["cache"].as_str().unwrap().contains("fincore"),
                "{cold}"
            );
        } else {
            assert_eq!(cold["status"], "na", "{t}: {cold}");
        }
    }

    // Two clients on a FileStorage: refused at connect, with the reason and the fix.
    let file = &urls(&z, &servers)[1];
    let o = dyno(dir.path())
        .args([
            "run", "-n", "10", "-c", "2", "--reps", "1", "-o", "two", file,
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    let rec = record(&dir.path().join("two"));
    let add = case(&rec, "zodb-file", "add");
    assert_eq!(add["status"], "failed");
    let reason = add["reason"].as_str().unwrap();
    assert!(
        reason.contains("serves 1 session(s) at a time") && reason.contains("run with -c 1"),
        "{reason}"
    );
}

/// `--profile` on a ZODB run: the ZEO server, started by the plan as the target's process, and
/// the adapter's sessions, started by dyno, are Python programs (py-spy, found beside their
/// interpreter in the adapter's environment); dyno is native (perf). Each test gets a flame graph
/// of each that worked in it, naming its functions.
#[test]
fn profile_draws_the_zeo_server_the_sessions_and_dyno_per_test() {
    let Some(z) = zodb() else { return };
    if testkit::installed("perf", &["/usr/bin/perf"]).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let venv = Path::new(&z["exec:".len()..])
        .parent()
        .unwrap()
        .join(".venv");
    let port = testkit::free_port();
    let plan = dir.path().join("zeo.toml");
    std::fs::write(
        &plan,
        format!(
            "[suite]\nname = \"shootout\"\nobjects = 3000\nconcurrency = 1\nreps = 1\n\n\
             [targets.zeo]\nurl = \"{z}?storage=zeo&address=127.0.0.1:{port}\"\n\n\
             [targets.zeo.process]\n\
             cmd = \"{py} -m ZEO.runzeo -a 127.0.0.1:{port} -f {data}\"\n\
             ready = \"tcp:127.0.0.1:{port}\"\n",
            py = venv.join("bin/python").display(),
            data = dir.path().join("Data.fs").display(),
        ),
    )
    .unwrap();
    dyno(dir.path())
        .arg("run")
        .arg(&plan)
        .args(["--profile", "o/profiles", "-o", "o", "--quiet"])
        .assert()
        .success();
    let out = dir.path().join("o");
    let rec = record(&out);
    assert_schema_valid(&rec);
    // What must have been sampled: the server writes in add and update and serves warm's
    // reads (hot's come from the sessions' ZEO caches); the sessions work in every test that
    // reads or writes through them; dyno's own, where it sends every object (a read test's
    // batches bring back only each object's length and header: too little work to be sure of
    // a sample).
    let expect = [
        ("zeo", "py-spy", "ZEOServer", &["add", "update", "warm"][..]),
        (
            "adapter-session",
            "py-spy",
            "Zodb.get",
            &["warm", "hot"][..],
        ),
        // (Steamin is one batched read the pickle cache serves in a few milliseconds: too short
        // for py-spy's samples to be sure to land in it.)
        (
            "adapter-session",
            "py-spy",
            "Zodb.commit",
            &["add", "update"][..],
        ),
        // A Rust path: perf walks dyno's stacks by frame pointers, which a default build omits,
        // so its graphs are shallow, but every frame it names is dyno's code.
        ("dyno", "perf", "::", &["add", "update"][..]),
    ];
    for (process, tool, function, tests) in expect {
        for test in tests {
            let c = case(&rec, "zeo", test);
            assert_eq!(c["status"], "ok", "{test}: {}", c["reason"]);
            let profiles = c["profiles"].as_array().unwrap();
            let mine: Vec<_> = profiles
                .iter()
                .filter(|p| p["process"] == process)
                .collect();
            assert!(
                !mine.is_empty(),
                "{test}: no profile of {process}: {profiles:?}"
            );
            assert!(mine.iter().all(|p| p["tool"] == tool), "{mine:?}");
            let named = mine.iter().filter_map(|p| p["svg"].as_str()).any(|svg| {
                assert!(svg.starts_with(&format!("profiles/zeo/{test}/")), "{svg}");
                let text = std::fs::read_to_string(out.join(svg)).unwrap();
                text.contains("<svg") && text.contains(function)
            });
            assert!(
                named,
                "{test}: no flame graph of {process} names {function}: {mine:?}"
            );
        }
    }
}
