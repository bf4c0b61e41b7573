//! `dyno adapter-check exec:PROGRAM[?OPTIONS]`: the adapter conformance kit.
//!
//! It drives the adapter through the same driver a run uses (`targets::exec`), so what passes
//! here is what a run will do: the handshake, a store and its namespace, sessions in separate
//! processes, every operation the adapter says it has, with values checked byte for byte, a
//! missing key's error, a second session seeing the first's commit, the storage-read count, the
//! cache drop, and the store's close. One line per check (`ok` or `FAIL` with the reason); the
//! first failure of the handshake or the store stops the rest, which could only fail with it.

use anyhow::{Result, bail};
use engine::clock::Clock;
use engine::driver::{CacheDrop, ErrorClass, Session, Store, TxMode};
use std::io::Write;
use std::process::ExitCode;

/// Prints a line; a reader that went away (`| head`) ends the printing quietly, not the checks.
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

struct Kit {
    passed: usize,
    failed: usize,
}

impl Kit {
    fn check(&mut self, what: &str, r: Result<String, String>) -> bool {
        match r {
            Ok(note) if note.is_empty() => say!("ok    {what}"),
            Ok(note) => say!("ok    {what}: {note}"),
            Err(why) => {
                say!("FAIL  {what}: {why}");
                self.failed += 1;
                return false;
            }
        }
        self.passed += 1;
        true
    }
}

fn value(key: u64, version: u8, len: usize) -> Vec<u8> {
    // Every byte value 0..=255 appears (a value is bytes, not text), keyed and versioned.
    let mut v: Vec<u8> = (0..len)
        .map(|i| (i as u64 ^ key).wrapping_mul(31) as u8)
        .collect();
    v[0] = version;
    v
}

pub fn check(url: &str) -> Result<ExitCode> {
    let Some(rest) = url.strip_prefix("exec:") else {
        bail!("{url}: the conformance kit checks adapters: give exec:PROGRAM[?OPTION=VALUE…]");
    };
    let (program, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut options = std::collections::BTreeMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        options.insert(k.to_string(), v.to_string());
    }
    let config = targets::exec::configure(program, &options).map_err(|e| {
        anyhow::anyhow!(
            "{url}: {}{}",
            e.message,
            e.hint.map(|h| format!(" ({h})")).unwrap_or_default()
        )
    })?;
    let mut kit = Kit {
        passed: 0,
        failed: 0,
    };
    say!("dyno adapter-check {url}");
    let hello = targets::exec::handshake(program, &options);
    let sessions_limit = hello.as_ref().ok().and_then(|h| h.sessions);
    if !kit.check(
        "handshake (init → init_ok: protocol, name, durability, ops, framing)",
        hello.map(|h| {
            format!(
                "{}; durability {:?}; ops {}; {} framing{}{}",
                h.name,
                h.durability,
                h.ops.join(" "),
                h.framing,
                h.client_cache
                    .map(|c| format!("; client cache: {c}"))
                    .unwrap_or_default(),
                h.sessions
                    .map(|n| format!("; {n} session(s) at a time"))
                    .unwrap_or_default(),
            )
        }),
    ) {
        return Ok(summary(&kit));
    }
    let store = match config.open() {
        Ok(s) => s,
        Err(e) => {
            kit.check("store: open → a namespace", Err(e.message));
            return Ok(summary(&kit));
        }
    };
    kit.check("store: open → a namespace", Ok(store.namespace().location));
    let versions = store.versions();
    kit.check(
        "versions named",
        Ok(versions
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")),
    );
    sessions(&mut kit, &*store, sessions_limit);
    kit.check(
        "store: drop_caches (done, or not supported with a reason)",
        match store.drop_caches() {
            Ok(CacheDrop::Done(what)) => Ok(format!("done: {what}")),
            Ok(CacheDrop::NotReachable(why)) if !why.trim().is_empty() => {
                Ok(format!("not supported: {why}"))
            }
            Ok(CacheDrop::NotReachable(_)) => Err("not supported, without a reason".into()),
            Err(e) => Err(e.to_string()),
        },
    );
    kit.check(
        "store: close",
        store.close().map(|()| String::new()).map_err(|e| e.message),
    );
    Ok(summary(&kit))
}

fn sessions(kit: &mut Kit, store: &dyn Store, limit: Option<u64>) {
    let clock = Clock::monotonic();
    let mut a = match store.connect(&clock) {
        Ok(s) => s,
        Err(e) => {
            kit.check("session: start and init", Err(e.to_string()));
            return;
        }
    };
    kit.check("session: start and init", Ok(String::new()));
    kit.check(
        "put 4 keys (up to 2^64 - 2) in a write transaction, commit",
        write(&mut *a, 1).map(|()| String::new()),
    );
    kit.check(
        "get each back, byte for byte",
        read(&mut *a, 1).map(|n| format!("{n} of 4 reads reached the storage")),
    );
    kit.check(
        "overwrite, and read the new values",
        write(&mut *a, 2)
            .and_then(|()| read(&mut *a, 2))
            .map(|_| String::new()),
    );
    kit.check(
        "get_many (or one get per key) returns each value in the keys' order",
        get_many(&mut *a),
    );
    kit.check(
        "get_heads (or get_many, cut) returns each value's length and first bytes",
        get_heads(&mut *a),
    );
    if store.client_cache().is_some() {
        kit.check(
            "client cache: a read again is served by it; after drop_client_cache, none is",
            client_cache(&mut *a),
        );
    }
    // An adapter that serves one session at a time gets its second after the first is closed.
    let second = |kit: &mut Kit| {
        let what = "a second session (another process) reads the first one's commit";
        match store.connect(&clock) {
            Ok(mut b) => kit.check(what, read(&mut *b, 2).map(|_| String::new())),
            Err(e) => kit.check(what, Err(e.to_string())),
        };
    };
    if limit.is_some_and(|n| n < 2) {
        drop(a);
        second(kit);
        a = match store.connect(&clock) {
            Ok(s) => s,
            Err(e) => {
                kit.check("the first session again", Err(e.to_string()));
                return;
            }
        };
    } else {
        second(kit);
    }
    kit.check(
        "delete, then get: a not-found error (code 20)",
        delete_then_get(&mut *a),
    );
    if store.scans().is_ok() {
        kit.check("scan from a key: the next keys in order", scan(&mut *a));
    }
}

/// The keys the kit writes: small, large, and up to 2^64 - 2.
const KEYS: [u64; 4] = [1, 2, 1 << 40, u64::MAX - 1];

/// Puts every key's value of `version` in a write transaction.
fn write(s: &mut dyn Session, version: u8) -> Result<(), String> {
    s.begin(TxMode::Write).map_err(|e| format!("begin: {e}"))?;
    for &k in &KEYS {
        s.put(k, &value(k, version, 300))
            .map_err(|e| format!("put {k}: {e}"))?;
    }
    s.commit().map_err(|e| format!("commit: {e}"))
}

/// Gets every key back and checks its value of `version`; the reads that reached the storage.
fn read(s: &mut dyn Session, version: u8) -> Result<u64, String> {
    let before = s.storage_reads();
    s.begin(TxMode::Read).map_err(|e| format!("begin: {e}"))?;
    let mut out = Vec::new();
    for &k in &KEYS {
        s.get(k, &mut out).map_err(|e| format!("get {k}: {e}"))?;
        if out != value(k, version, 300) {
            return Err(format!(
                "get {k}: {} bytes, not the {} written",
                out.len(),
                300
            ));
        }
    }
    s.commit().map_err(|e| format!("commit: {e}"))?;
    Ok(s.storage_reads() - before)
}

fn get_many(a: &mut dyn Session) -> Result<String, String> {
    let (mut out, mut ends) = (Vec::new(), Vec::new());
    a.get_many(&[KEYS[2], KEYS[0]], &mut out, &mut ends)
        .map_err(|e| e.to_string())?;
    let want: Vec<u8> = [value(KEYS[2], 2, 300), value(KEYS[0], 2, 300)].concat();
    match out == want && ends == [300, 600] {
        true => Ok(String::new()),
        false => Err("other values, or in another order".into()),
    }
}

/// Heads shorter than the values, none, and longer (each value whole).
fn get_heads(a: &mut dyn Session) -> Result<String, String> {
    let (v3, v1) = (value(KEYS[3], 2, 300), value(KEYS[1], 2, 300));
    let mut heads = engine::graph::Heads::default();
    for head in [20, 0, 400] {
        a.get_heads(&[KEYS[3], KEYS[1]], head, &mut heads)
            .map_err(|e| format!("a head of {head} bytes: {e}"))?;
        let got: Vec<(&[u8], usize)> = heads.iter().collect();
        let cut = head.min(300);
        if got != [(&v3[..cut], 300), (&v1[..cut], 300)] {
            return Err(format!(
                "a head of {head} bytes: other lengths or first bytes, or in another order"
            ));
        }
    }
    Ok(String::new())
}

fn client_cache(a: &mut dyn Session) -> Result<String, String> {
    read(a, 2)?;
    let cached = read(a, 2)?;
    a.drop_client_cache()
        .map_err(|e| format!("drop_client_cache: {e}"))?;
    let dropped = read(a, 2)?;
    if cached != 0 || dropped != KEYS.len() as u64 {
        return Err(format!(
            "{cached} of 4 reads reached the storage from a full client cache (0 due), {dropped} of 4 after it was emptied (4 due)"
        ));
    }
    Ok(String::new())
}

fn delete_then_get(a: &mut dyn Session) -> Result<String, String> {
    a.begin(TxMode::Write).map_err(|e| e.to_string())?;
    a.delete(KEYS[1]).map_err(|e| format!("delete: {e}"))?;
    a.commit().map_err(|e| e.to_string())?;
    match a.get(KEYS[1], &mut Vec::new()) {
        Err(e) if e.class == ErrorClass::NotFound => Ok(String::new()),
        Err(e) => Err(format!(
            "an error of class {} ({e}), not not_found",
            e.class.as_str()
        )),
        Ok(()) => Err("the deleted key was read".into()),
    }
}

fn scan(a: &mut dyn Session) -> Result<String, String> {
    let mut items = Vec::new();
    a.scan(0, 10, &mut items).map_err(|e| e.to_string())?;
    let got: Vec<u64> = items.iter().map(|(k, _)| *k).collect();
    let want = vec![KEYS[0], KEYS[2], KEYS[3]];
    match got == want {
        true => Ok(String::new()),
        false => Err(format!("keys {got:?}, not {want:?}")),
    }
}

fn summary(kit: &Kit) -> ExitCode {
    say!();
    if kit.failed == 0 {
        say!("{} checks passed", kit.passed);
        ExitCode::SUCCESS
    } else {
        say!(
            "{} of {} checks failed",
            kit.failed,
            kit.passed + kit.failed
        );
        ExitCode::from(1)
    }
}
