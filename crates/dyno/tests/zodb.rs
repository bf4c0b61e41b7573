//! The ZODB adapter (`adapters/zodb`), on the real thing: ZODB, ZEO and RelStorage from
//! `adapters/zodb/.venv` (pinned; `./scripts/test` makes it) and a private PostgreSQL. The
//! conformance kit passes on each of its four storages, and the shootout runs on the four side
//! by side with their cache states verified: warm, cold and hot reads each reached below ZODB's
//! pickle cache, steamin's none.

mod common;

use common::*;
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

const STORAGES: [&str; 4] = ["mapping", "file", "zeo", "relstorage"];

fn urls(z: &str, pg: &testkit::Postgres) -> Vec<String> {
    STORAGES
        .iter()
        .map(|s| match *s {
            "relstorage" => format!("{z}?storage=relstorage&dsn={}", pg.url()),
            s => format!("{z}?storage={s}"),
        })
        .collect()
}

#[test]
fn the_kit_passes_on_the_four_zodb_storages() {
    let Some(z) = zodb() else { return };
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (storage, url) in STORAGES.iter().zip(urls(&z, &pg)) {
        let o = dyno(dir.path())
            .args(["adapter-check", &url])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{storage}: {out}");
        assert!(out.contains("14 checks passed"), "{storage}: {out}");
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
fn the_shootout_on_the_four_zodb_storages_verifies_their_cache_states() {
    let Some(z) = zodb() else { return };
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let o = dyno(dir.path())
        .args(["run", "-n", "40", "-c", "1", "--reps", "1", "-o", "o"])
        .args(urls(&z, &pg))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // One table, the four storages side by side, named after the adapter and its storage.
    let header = out
        .lines()
        .find(|l| l.starts_with("test "))
        .unwrap_or_default();
    for s in STORAGES {
        assert!(header.contains(&format!("zodb-{s}")), "{out}");
    }
    let rec = record(&dir.path().join("o"));
    assert_schema_valid(&rec);
    let reads = |target: &str, test: &str| {
        case(&rec, target, test)["reps"][0]["detail"]["store"]["storage_reads"]
            .as_u64()
            .unwrap()
    };
    for s in STORAGES {
        let t = format!("zodb-{s}");
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
    let file = &urls(&z, &pg)[1];
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
