//! The append suite's budget: a count of transactions per client, or a duration; not both.

use super::{err, resolve};

fn plan(settings: &str) -> String {
    format!("[suite]\nname = \"append\"\n{settings}\n[targets.db]\nurl = \"sql:\"\n")
}

#[test]
fn the_append_suite_runs_a_count_of_transactions_or_for_a_duration() {
    let p = resolve(&plan("")).unwrap();
    let append = &p.record().custom["append"];
    assert_eq!(
        (&append["transactions_per_client"], &append["duration_ns"]),
        (&200.into(), &serde_json::Value::Null)
    );
    assert_eq!(p.settings.rep_duration_ns(), None);

    let p = resolve(&plan("duration = \"3s\"")).unwrap();
    let append = &p.record().custom["append"];
    assert_eq!(
        (&append["transactions_per_client"], &append["duration_ns"]),
        (&serde_json::Value::Null, &3_000_000_000u64.into())
    );
    assert_eq!(p.settings.rep_duration_ns(), Some(3_000_000_000));

    assert_eq!(
        err(&plan("transactions = 50\nduration = \"3s\"")),
        "plan.toml:4:12: the append suite takes transactions or a duration, not both\n  hint: \
         leave out -t to run for the duration, or -d to run -t transactions"
    );
    assert!(
        err(&plan("duration = \"soon\"")).starts_with("plan.toml:3:12: "),
        "{}",
        err(&plan("duration = \"soon\""))
    );
}
