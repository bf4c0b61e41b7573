use super::*;

#[test]
fn passwords_are_redacted_and_nothing_else_changes() {
    assert_eq!(
        redact_url("postgres://bob:s3cret@127.0.0.1:5432/db"),
        "postgres://bob:***@127.0.0.1:5432/db"
    );
    assert_eq!(
        redact_url("redis://127.0.0.1:6379"),
        "redis://127.0.0.1:6379"
    );
    assert_eq!(redact_url("sqlite:/tmp/a.db"), "sqlite:/tmp/a.db");
    assert_eq!(redact_url("http://u@h/p?x=a:b@c"), "http://u@h/p?x=a:b@c");
}

#[test]
fn a_case_is_found_by_target_test_and_sweep_point() {
    let r = crate::store::read_record(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../dyno/tests/fixtures/run-1/ratesweep/run.json"
    )))
    .unwrap();
    let at_300: Vec<&Case> = r
        .cases
        .iter()
        .filter(|c| c.is("http", "load", Some(("rate", 300))))
        .collect();
    assert_eq!(at_300.len(), 1);
    assert_eq!(at_300[0].sweep.as_ref().unwrap().value, 300);
    // Outside the sweep there is no such case, and another point is another case.
    assert!(r.case_of("http", "load").is_none());
    assert!(!at_300[0].is("http", "load", Some(("rate", 100))));
    assert_eq!(r.tests_where(|_| true), ["load"]);
    // Its identity names it in full, and finds it again.
    let id = at_300[0].id();
    assert_eq!(id.to_string(), "load on http (loopback) at rate=300");
    assert_eq!(r.case(&id), Some(at_300[0]));
    let elsewhere = CaseId {
        topology: "lan".into(),
        ..id.clone()
    };
    assert_eq!(r.case(&elsewhere), None, "another topology is another case");
    let ids: std::collections::BTreeSet<CaseId> = r.cases.iter().map(Case::id).collect();
    assert_eq!(
        ids.len(),
        r.cases.len(),
        "every case of a run has its own identity"
    );
}
