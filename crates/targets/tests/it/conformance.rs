//! Every driver keeps the same contract: what is put is read back, a missing key is `not_found`,
//! deletes delete, the cold state is reached (or declared unreachable) and data survives it, and a
//! temporary namespace is gone after close.

use engine::clock::Clock;
use engine::driver::{CacheDrop, ErrorClass, TargetConfig, TxMode};
use engine::resolve::Drivers;
use std::collections::BTreeMap;
use targets::Registry;

fn config(url: &str) -> Box<dyn TargetConfig> {
    let parts = engine::plan::split_url(url).expect("a URL");
    let opts: BTreeMap<String, String> = parts
        .query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Registry
        .configure(parts.scheme, parts.rest, &opts)
        .unwrap_or_else(|e| panic!("{url}: {e:?}"))
}

/// The generator backends a network driver's contract runs on, as a client on a fiber: epoll,
/// epoll with a nap before each wait, and io_uring where this kernel allows it.
fn backends() -> Vec<engine::fiber::Generators> {
    let epoll = engine::fiber::Generators::from(1);
    let mut out = vec![
        epoll,
        engine::fiber::Generators {
            nap: std::time::Duration::from_micros(20),
            ..epoll
        },
    ];
    match engine::ring::uring_allowed() {
        Ok(()) => out.push(engine::fiber::Generators {
            threads: 1,
            ring: true,
            nap: std::time::Duration::ZERO,
        }),
        Err(why) => eprintln!("io_uring not tested: {why}"),
    }
    out
}

/// A network driver's contract, run by a client on a fiber on each backend.
fn contract_on_each_backend(url: &str) {
    for generators in backends() {
        let job: engine::fiber::Job<'_, ()> = Box::new(|| contract(url));
        if let Err(panic) = engine::fiber::join_all(generators, vec![job]).remove(0) {
            std::panic::resume_unwind(panic);
        }
    }
}

fn contract(url: &str) {
    let store = config(url).open().unwrap_or_else(|e| panic!("{url}: {e}"));
    let ns = store.namespace();
    assert!(ns.created_by_dyno, "{url}");
    let clock = Clock::monotonic();
    let mut s = store.connect(&clock).unwrap();
    let mut buf = Vec::new();

    s.begin(TxMode::Write).unwrap();
    for k in [1u64, 2, 1 << 40] {
        s.put(k, &vec![k as u8; 300]).unwrap();
    }
    s.put(2, b"overwritten").unwrap();
    s.commit().unwrap();

    s.begin(TxMode::Read).unwrap();
    s.get(1, &mut buf).unwrap();
    assert_eq!(buf, vec![1u8; 300], "{url}");
    s.get(2, &mut buf).unwrap();
    assert_eq!(buf, b"overwritten", "{url}");
    let e = s.get(99, &mut buf).unwrap_err();
    assert_eq!(e.class, ErrorClass::NotFound, "{url}: {e}");
    s.commit().unwrap();
    assert_eq!(s.storage_reads(), 3, "{url}: every get is counted");

    // The graph family's batched read: values in key order, a missing key fails it, and the
    // session stays usable after.
    s.begin(TxMode::Read).unwrap();
    let (mut out, mut ends) = (Vec::new(), Vec::new());
    s.get_many(&[2, 1 << 40, 1], &mut out, &mut ends).unwrap();
    let parts: Vec<&[u8]> = engine::graph::split(&out, &ends).collect();
    assert_eq!(
        parts,
        vec![&b"overwritten"[..], &[0u8; 300][..], &[1u8; 300][..]],
        "{url}"
    );
    let e = s.get_many(&[1, 99, 2], &mut out, &mut ends).unwrap_err();
    assert_eq!(e.class, ErrorClass::NotFound, "{url}: {e}");
    // Its heads: each value's whole length and first bytes, in key order.
    let mut heads = engine::graph::Heads::default();
    s.get_heads(&[1 << 40, 2], 16, &mut heads).unwrap();
    let got: Vec<(&[u8], usize)> = heads.iter().collect();
    assert_eq!(
        got,
        [(&[0u8; 16][..], 300), (&b"overwritten"[..], 11)],
        "{url}"
    );
    s.get(2, &mut buf).unwrap();
    assert_eq!(buf, b"overwritten", "{url}: in step after a failed batch");
    s.commit().unwrap();

    // YCSB's scan, where the store keeps its keys in order: from a key, in key order, at most
    // as many as asked; elsewhere refused.
    let mut rows = Vec::new();
    s.begin(TxMode::Read).unwrap();
    if store.scans().is_ok() {
        s.scan(2, 10, &mut rows).unwrap();
        let keys: Vec<u64> = rows.iter().map(|r| r.0).collect();
        assert_eq!(keys, [2, 1 << 40], "{url}");
        assert_eq!(rows[0].1, b"overwritten", "{url}");
        assert_eq!(rows[1].1, vec![0u8; 300], "{url}");
        s.scan(0, 1, &mut rows).unwrap();
        assert_eq!(rows, [(1, vec![1u8; 300])], "{url}");
        s.scan((1 << 40) + 1, 5, &mut rows).unwrap();
        assert!(rows.is_empty(), "{url}");
    } else {
        assert!(s.scan(0, 1, &mut rows).is_err(), "{url}");
    }
    s.commit().unwrap();

    s.begin(TxMode::Write).unwrap();
    s.delete(1).unwrap();
    match s.delete(1) {
        Err(e) => {
            assert_eq!(e.class, ErrorClass::NotFound, "{url}: {e}");
            s.commit().unwrap();
        }
        // Redis queues a transaction's commands (MULTI): their answers come with EXEC's.
        Ok(()) => {
            assert!(url.starts_with("redis:"), "{url}: a missing key deleted");
            let e = s.commit().unwrap_err();
            assert_eq!(e.class, ErrorClass::NotFound, "{url}: {e}");
        }
    }
    // A key put and deleted in one transaction is gone after it.
    s.begin(TxMode::Write).unwrap();
    s.put(5, b"short-lived").unwrap();
    s.delete(5).unwrap();
    s.commit().unwrap();
    s.begin(TxMode::Read).unwrap();
    let e = s.get(5, &mut buf).unwrap_err();
    assert_eq!(e.class, ErrorClass::NotFound, "{url}: {e}");
    s.commit().unwrap();
    drop(s);

    match store.drop_caches().unwrap() {
        CacheDrop::Done(what) => assert!(!what.is_empty(), "{url}"),
        CacheDrop::NotReachable(why) => {
            assert!(
                url.starts_with("mem:")
                    || url.starts_with("dyno:")
                    || url.starts_with("postgres:")
                    || url.starts_with("mysql:")
                    || url.starts_with("redis:")
                    || url.starts_with("etcd:"),
                "{url}: {why}"
            )
        }
    }
    let mut s = store.connect(&clock).unwrap();
    s.begin(TxMode::Read).unwrap();
    assert_eq!(
        s.get(1, &mut buf).unwrap_err().class,
        ErrorClass::NotFound,
        "{url}"
    );
    s.get(1 << 40, &mut buf).unwrap();
    assert_eq!(buf, vec![0u8; 300], "{url}: data survives the cold drop");
    s.commit().unwrap();
    drop(s);

    let location = ns.location.split(' ').next().unwrap().to_string();
    store.close().unwrap();
    if ns.temporary && location.starts_with('/') {
        assert!(
            !std::path::Path::new(&location).exists(),
            "{url}: temporary namespace {location} removed"
        );
    }
}

/// The `namespace` family: folders are made under existing parents only, once; stat finds them;
/// list names a folder's entries; rmdir removes empty folders only.
fn folders(url: &str) {
    let config = config(url);
    assert!(
        config
            .families()
            .contains(&engine::driver::Family::Namespace),
        "{url} declares the namespace family"
    );
    let store = config.open().unwrap_or_else(|e| panic!("{url}: {e}"));
    let clock = Clock::monotonic();
    let mut s = store.connect(&clock).unwrap();
    let mut names = Vec::new();
    s.stat("").unwrap();
    s.mkdir("a").unwrap();
    s.mkdir("a/b").unwrap();
    s.mkdir("a/c.d").unwrap();
    let e = s.mkdir("x/y").unwrap_err();
    assert_eq!(e.class, ErrorClass::NotFound, "{url}: no parent: {e}");
    assert!(s.mkdir("a/b").is_err(), "{url}: made twice");
    assert!(s.mkdir("a/../b").is_err(), "{url}: .. refused");
    s.stat("a/b").unwrap();
    assert_eq!(
        s.stat("a/zz").unwrap_err().class,
        ErrorClass::NotFound,
        "{url}"
    );
    s.list("a", &mut names).unwrap();
    names.sort();
    assert_eq!(names, ["b", "c.d"], "{url}");
    assert!(s.rmdir("a").is_err(), "{url}: not empty");
    s.rmdir("a/b").unwrap();
    s.list("a", &mut names).unwrap();
    assert_eq!(names, ["c.d"], "{url}");
    assert_eq!(s.stat("a/b").unwrap_err().class, ErrorClass::NotFound);
    // A second session sees the first one's folders.
    let mut t = store.connect(&clock).unwrap();
    t.stat("a/c.d").unwrap();
    drop((s, t));
    store.close().unwrap();
}

#[test]
fn folders_on_fs_and_on_the_host() {
    folders("fs:");
    folders("fs:?fsync=true");
    folders("host:");
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = host::store::StoreServer::start(l, Default::default()).unwrap();
    folders(&format!("dyno://{}", server.addr()));
    let stats = host::store::fetch_stats(server.addr(), None).unwrap();
    let count = |op: &str| stats.iter().find(|s| s.op == op).map_or(0, |s| s.count);
    assert_eq!(
        (count("mkdir"), count("stat"), count("list"), count("rmdir")),
        (6, 5, 2, 2),
        "each folder operation is one request, counted by the host"
    );
}

#[test]
fn mem() {
    contract("mem:");
}

#[test]
fn mock() {
    contract("mock:?latency=1us");
}

#[test]
fn sqlite() {
    contract("sqlite:");
    contract("sqlite:?journal_mode=delete&synchronous=full");
}

#[test]
fn fs() {
    contract("fs:");
    contract("fs:?fsync=true");
}

#[test]
fn dyno_host() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = host::store::StoreServer::start(
        l,
        host::store::Options {
            token: Some("s3cret".into()),
            ..Default::default()
        },
    )
    .unwrap();
    contract_on_each_backend(&format!("dyno://{}?token=s3cret", server.addr()));
    let stats = host::store::fetch_stats(server.addr(), Some("s3cret")).unwrap();
    let count = |op: &str| stats.iter().find(|s| s.op == op).map_or(0, |s| s.count);
    let runs = backends().len() as u64;
    assert_eq!(
        count("put"),
        5 * runs,
        "three puts, an overwrite and a short-lived key"
    );
    assert_eq!(
        count("get"),
        7 * runs,
        "three before the batches, one after, one of the short-lived key, two after the drop"
    );
    assert_eq!(
        count("mget"),
        3 * runs,
        "each batched read is one request (the heads' too)"
    );
    assert_eq!(count("drop"), runs, "the namespace was dropped");
    let puts = stats.iter().find(|s| s.op == "put").unwrap();
    assert_eq!(
        puts.latency.len() as u64,
        count("put"),
        "a server-side latency per put"
    );
}

#[test]
fn lmdb() {
    contract("lmdb:");
    contract("lmdb:?sync=false");
}

#[cfg(feature = "redb")]
#[test]
fn redb() {
    contract("redb:");
    contract("redb:?durability=none");
}

#[test]
fn a_dyno_namespace_can_be_reused_by_a_later_run() {
    let dir = tempfile::tempdir().unwrap();
    for url in [
        format!("sqlite:{}/dyno.db", dir.path().display()),
        format!("fs:{}/tree", dir.path().display()),
        format!("lmdb:{}/lmdb", dir.path().display()),
    ] {
        for _ in 0..2 {
            let c = config(&url);
            c.preflight().unwrap();
            let store = c.open().unwrap();
            assert!(!store.namespace().temporary);
            store.close().unwrap();
        }
    }
}

#[test]
fn unknown_options_and_bad_values_are_refused_before_anything_is_touched() {
    let e = Registry
        .configure(
            "sqlite",
            "",
            &BTreeMap::from([("synchronus".into(), "full".into())]),
        )
        .err()
        .unwrap();
    assert_eq!(e.option.as_deref(), Some("synchronus"));
    assert!(
        e.message.contains("did you mean \"synchronous\"?"),
        "{}",
        e.message
    );
    let e = Registry
        .configure(
            "fs",
            "",
            &BTreeMap::from([("fsync".into(), "maybe".into())]),
        )
        .err()
        .unwrap();
    assert!(e.message.contains("not a boolean"), "{}", e.message);
    let e = Registry
        .configure(
            "mock",
            "",
            &BTreeMap::from([("fail_class".into(), "timout".into())]),
        )
        .err()
        .unwrap();
    assert!(
        e.message.contains("did you mean \"timeout\"?"),
        "{}",
        e.message
    );
    assert!(Registry.configure("mem", "/x", &BTreeMap::new()).is_err());
}

#[test]
fn dyno_host_with_a_store_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let disk = std::sync::Arc::new(host::store::DiskStore::open(dir.path()).unwrap());
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = host::store::StoreServer::start(
        l,
        host::store::Options {
            disk: Some(disk),
            ..Default::default()
        },
    )
    .unwrap();
    let url = format!("dyno://{}", server.addr());
    contract(&url);
    let durability = config(&url).durability();
    assert!(durability.starts_with("LMDB at "), "{durability}");
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres() {
        let Some(pg) = testkit::Postgres::start() else {
            return;
        };
        contract_on_each_backend(&pg.url());
        contract_on_each_backend(&format!("{}?synchronous_commit=off", pg.url()));
        // A read that failed inside its transaction, left open: the next transaction still runs
        // (PostgreSQL would take its BEGIN inside the read-only one, and refuse its write).
        let store = config(&pg.url()).open().unwrap();
        let mut s = store.connect(&Clock::monotonic()).unwrap();
        let mut buf = Vec::new();
        s.begin(TxMode::Read).unwrap();
        assert_eq!(s.get(7, &mut buf).unwrap_err().class, ErrorClass::NotFound);
        s.begin(TxMode::Write).unwrap();
        s.put(7, b"after").unwrap();
        s.commit().unwrap();
        s.begin(TxMode::Read).unwrap();
        s.get(7, &mut buf).unwrap();
        assert_eq!(buf, b"after");
        s.commit().unwrap();
        drop(s);
        store.close().unwrap();
        let mut c = postgres::Client::connect(&pg.url(), postgres::NoTls).unwrap();
        let left: i64 = c
            .query_one(
                "SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'dyno%'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(left, 0, "every schema dyno created was dropped");
        let e = Registry
            .configure("postgres", "//127.0.0.1/postgres", &BTreeMap::new())
            .err()
            .unwrap();
        assert!(e.message.contains("names no user"), "{e:?}");
    }

    #[test]
    fn redis() {
        let Some(redis) = testkit::Redis::start() else {
            return;
        };
        contract_on_each_backend(&format!("redis://127.0.0.1:{}", redis.port));
    }

    #[test]
    fn etcd() {
        let Some(etcd) = testkit::Etcd::start() else {
            return;
        };
        let url = format!("etcd://127.0.0.1:{}", etcd.port);
        contract_on_each_backend(&url);
        contract_on_each_backend(&format!("{url}?api=gateway"));
    }

    #[test]
    fn mysql_on_mariadb() {
        let Some(db) = testkit::mariadb::MariaDb::start() else {
            return;
        };
        contract_on_each_backend(&db.url());
        contract_on_each_backend(&format!("{}/mysql", db.url()));
        let left = db
            .sql("SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'dyno%'");
        assert_eq!(left.trim(), "0", "every database dyno created was dropped");
        // The server's durability, as the column header says it.
        let target = config(&db.url());
        assert_eq!(
            target.durability(),
            "innodb_flush_log_at_trx_commit=1 no binlog"
        );
        // A database dyno did not create is never used, and left as it was: the one dyno logs in
        // to, and one that holds the name dyno's run would take.
        db.sql(
            "CREATE DATABASE shop; CREATE TABLE shop.orders (id INT PRIMARY KEY, v TEXT); \
             INSERT INTO shop.orders VALUES (1, 'a'), (2, 'b'); \
             CREATE DATABASE dyno_shard_00000000000000aa",
        );
        let before = db.sql("CHECKSUM TABLE shop.orders EXTENDED; SHOW TABLES FROM shop");
        contract(&format!("{}/shop", db.url()));
        let taken = engine::driver::Share {
            run: "00000000000000aa".into(),
            owner: true,
        };
        let e = config(&db.url()).open_shared(&taken).err().unwrap();
        assert!(e.message.contains("database exists"), "{e:?}");
        let after = db.sql("CHECKSUM TABLE shop.orders EXTENDED; SHOW TABLES FROM shop");
        assert_eq!(before, after, "the foreign database is as it was");
        let tables = db.sql("SHOW TABLES FROM dyno_shard_00000000000000aa");
        assert_eq!(
            tables, "",
            "nothing was created in the database that was taken"
        );
        // A wrong password is refused with the server's reason.
        let wrong = format!("//dyno:nope@127.0.0.1:{}", db.port);
        let wrong = Registry
            .configure("mysql", &wrong, &BTreeMap::new())
            .unwrap();
        let e = wrong.open().err().unwrap();
        assert!(
            e.message.contains("ERROR 1045 (28000): Access denied"),
            "{e:?}"
        );
        for (bad, says) in [
            ("//127.0.0.1:3306", "names no user"),
            ("127.0.0.1", "the URL's form is"),
            ("//dyno@127.0.0.1/a/b", "the URL's form is"),
            ("//dyno:%zz@127.0.0.1", "bad %-escape"),
        ] {
            let e = Registry
                .configure("mysql", bad, &BTreeMap::new())
                .err()
                .unwrap();
            assert!(e.message.contains(says), "{bad}: {e:?}");
        }
    }
}
