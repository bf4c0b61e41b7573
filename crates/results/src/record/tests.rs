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

/// A suite's own figures read from a record written before they could carry a time series,
/// and with one: only the second has a series, and each writes back as it was read.
#[test]
fn custom_figures_keep_a_series_only_when_they_have_one() {
    let old = r#"{"custom":{"suite":"sql","figures":{"transactions":3}}}"#;
    let d: Detail = serde_json::from_str(old).unwrap();
    assert_eq!(d.series(), None);
    assert_eq!(serde_json::to_string(&d).unwrap(), old);
    let iv = IntervalRecord {
        end_ns: 1_000_000_000,
        responses: 3,
        ..IntervalRecord::default()
    };
    let new = Detail::Custom {
        suite: "sql".into(),
        figures: serde_json::json!({"transactions": 3}),
        intervals: vec![iv],
        started_ns: Some(7),
    };
    let back: Detail = serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
    assert_eq!(back.series(), Some((&[iv][..], 7)));
}
