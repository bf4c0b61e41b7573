//! The sql suite's settings of sessions: `-C` (a flag: `connect = true` in a plan file) and `-M`.

use super::{err, resolve};

fn plan(settings: &str) -> String {
    format!("[suite]\nname = \"sql\"\n{settings}\n[targets.db]\nurl = \"sql:\"\n")
}

#[test]
fn connect_is_a_flag_on_or_off() {
    let connect = |settings: &str| {
        let p = resolve(&plan(settings)).unwrap();
        p.record().custom["sql"]["connect"].clone()
    };
    assert_eq!(connect(""), false);
    assert_eq!(connect("connect = true"), true);
    assert_eq!(connect("connect = false"), false);
    assert_eq!(
        err(&plan("connect = 1")),
        "plan.toml:3:11: `connect` must be a boolean, not an integer\n  hint: write connect = \
         true or connect = false"
    );
}

#[test]
fn the_query_mode_is_one_of_pgbenchs() {
    let mode = |settings: &str| {
        let p = resolve(&plan(settings)).unwrap();
        p.record().custom["sql"]["query_mode"].clone()
    };
    assert_eq!(mode(""), "prepared");
    for m in ["simple", "extended", "prepared"] {
        assert_eq!(mode(&format!("query_mode = \"{m}\"")), m);
    }
    assert_eq!(
        err(&plan("query_mode = \"parsed\"")),
        "plan.toml:3:14: no query mode \"parsed\"\n  hint: write one of simple, extended, prepared"
    );
}

/// pgbench's `-i` options shape its tables, checked as pgbench checks them, and only where
/// pgbench's tables are made.
#[test]
fn the_tables_shape_is_pgbenchs() {
    let tables = |settings: &str| {
        let p = resolve(&plan(settings)).unwrap();
        p.record().custom["sql"]["tables"].clone()
    };
    assert_eq!(
        tables(""),
        serde_json::json!({"fillfactor": 100, "partitions": 0, "partition_method": null,
            "unlogged_tables": false, "foreign_keys": false})
    );
    let all = "fillfactor = 90\npartitions = 4\npartition_method = \"hash\"\n\
               unlogged_tables = true\nforeign_keys = true";
    assert_eq!(
        tables(all),
        serde_json::json!({"fillfactor": 90, "partitions": 4, "partition_method": "hash",
            "unlogged_tables": true, "foreign_keys": true})
    );
    assert_eq!(tables("partitions = 2")["partition_method"], "range");
    for (settings, says) in [
        (
            "fillfactor = 5",
            "plan.toml:3:14: fillfactor must be 10 to 100, got 5",
        ),
        (
            "partitions = -1",
            "plan.toml:3:14: partitions must be 0 to 10000, got -1",
        ),
        (
            "partitions = 2\npartition_method = \"list\"",
            "plan.toml:4:20: no partition method \"list\"\n  hint: write range or hash",
        ),
        (
            "partition_method = \"range\"",
            "plan.toml:3:20: partition_method needs partitions above 0",
        ),
        (
            "builtin = \"oltp_read_write\"\nforeign_keys = true",
            "plan.toml:4:16: fillfactor, partitions, partition_method, unlogged_tables and foreign_keys shape pgbench's tables",
        ),
    ] {
        let e = err(&plan(settings));
        assert!(e.starts_with(says), "{settings}: {e}");
    }
}
