//! The shootout and magma suites against a real PostgreSQL (a private instance on a free
//! loopback port, started by `testkit`).

use crate::common::*;

#[test]
fn shootout_and_magma_on_postgres_in_a_schema_of_their_own() {
    let Some(pg) = testkit::Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a = dyno(dir.path())
        .args(["run", "--quick", "-o", "shootout", &pg.url()])
        .assert()
        .success();
    let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    assert!(
        out.contains("fsync=on synchronous_commit=on"),
        "durability read from the server:\n{out}"
    );
    let rec = record(&dir.path().join("shootout"));
    assert_schema_valid(&rec);
    for test in ["add", "update", "warm", "cold", "hot", "steamin"] {
        let c = case(&rec, "postgres", test);
        let want = if test == "cold" { "na" } else { "ok" };
        assert_eq!(c["status"], want, "{test}: {}", c["reason"]);
    }
    assert!(
        case(&rec, "postgres", "cold")["reason"]
            .as_str()
            .unwrap()
            .contains("shared buffers")
    );
    assert!(
        case(&rec, "postgres", "add")["versions"]["postgresql"]
            .as_str()
            .unwrap()
            .starts_with(char::is_numeric)
    );

    let target = format!("{}?synchronous_commit=off", pg.url());
    let (_, rec) = magma_quick(dir.path(), "magma", &target, 0);
    assert_magma_ok(&rec);
    assert_eq!(
        rec["plan"]["targets"][0]["durability"], "fsync=on synchronous_commit=off",
        "what dyno's sessions run with"
    );
    assert_eq!(dyno_schemas(&pg.url()), 0, "dyno dropped what it created");
}
