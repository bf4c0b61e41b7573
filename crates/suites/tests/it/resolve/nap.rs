//! `nap`: resolved for the store suites' clients, kept in the record, refused where no thread
//! of dyno's would nap.

use super::{err, resolve};
use std::time::Duration;

fn plan(suite: &str, settings: &str, url: &str) -> String {
    format!("[suite]\nname = \"{suite}\"\n{settings}\n[targets.db]\nurl = \"{url}\"\n")
}

#[test]
fn a_nap_reaches_the_generators_and_the_record() {
    let p = resolve(&plan("kv", "nap = \"30us\"", "mem:")).unwrap();
    assert_eq!(p.generators().nap, Duration::from_micros(30));
    let io = p
        .record()
        .io
        .expect("a store suite's record says its clients' io");
    assert_eq!((io.backend.as_str(), io.nap_ns), ("epoll", Some(30_000)));

    let p = resolve(&plan("kv", "", "mem:")).unwrap();
    assert_eq!(p.generators().nap, Duration::ZERO);
    assert_eq!(p.record().io.unwrap().nap_ns, None);
    let p = resolve(&plan("sql", "nap = \"0\"", "sql:")).unwrap();
    assert_eq!(p.record().io.unwrap().nap_ns, None);
}

#[test]
fn a_nap_too_long_unreadable_on_the_ring_or_for_the_load_suite_is_refused() {
    assert_eq!(
        err(&plan("kv", "nap = \"2ms\"", "mem:")),
        "plan.toml:3:7: nap must be at most 1ms\n  hint: a reply that comes during a nap is taken \
         up to the nap late; 20us to 80us spares the wake-ups at a server's pace"
    );
    assert_eq!(
        err(&plan("kv", "nap = \"soon\"", "mem:")),
        "plan.toml:3:7: nap: \"soon\" is not a duration; write e.g. 100us, 2ms or 1s"
    );
    let e = err(&plan("load", "nap = \"20us\"", "http://127.0.0.1:1/"));
    assert!(
        e.starts_with("plan.toml:3:7: nap is how the store suites' clients wait"),
        "{e}"
    );
    let on_ring = err(&plan("kv", "nap = \"20us\"\nio = \"uring\"", "mem:"));
    match engine::ring::uring_allowed() {
        Ok(()) => assert!(
            on_ring.starts_with(
                "plan.toml:3:7: nap is how a generator thread waits on epoll, and its clients \
                 run on io_uring"
            ),
            "{on_ring}"
        ),
        // Refused for the ring itself, at `io`.
        Err(_) => assert!(on_ring.starts_with("plan.toml:4:6: "), "{on_ring}"),
    }
}
