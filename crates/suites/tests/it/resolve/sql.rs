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

/// sysbench's `--rand-*` parameters: its defaults in the record, the values given kept, and one
/// its distribution would refuse refused at its place, in the distribution's words.
#[test]
fn the_rand_parameters_are_sysbenchs() {
    let oltp = |settings: &str| plan(&format!("builtin = \"oltp_read_only\"\n{settings}"));
    let rand = |settings: &str| {
        let s = &resolve(&oltp(settings)).unwrap().record().custom["sql"]["sysbench"];
        [
            "rand_spec_iter",
            "rand_spec_pct",
            "rand_spec_res",
            "rand_pareto_h",
            "rand_zipfian_exp",
        ]
        .map(|k| s[k].as_f64().unwrap())
    };
    assert_eq!(rand(""), [12.0, 1.0, 75.0, 0.2, 0.8]);
    let given = "rand_spec_iter = 6\nrand_spec_pct = 10\nrand_spec_res = 50.5\n\
                 rand_pareto_h = \"0.3\"\nrand_zipfian_exp = 1.2";
    assert_eq!(rand(given), [6.0, 10.0, 50.5, 0.3, 1.2]);
    for (bad, says) in [
        (
            "rand_spec_iter = 0",
            "plan.toml:4:18: rand_spec_iter: the number of iterations must be 1 to 1000",
        ),
        (
            "rand_spec_res = 100",
            "plan.toml:4:17: rand_spec_res: the special percentages must be 0 to 100 (res below 100)",
        ),
        (
            "rand_pareto_h = 1.5",
            "plan.toml:4:17: rand_pareto_h: the pareto parameter must be between 0 and 1",
        ),
        (
            "rand_spec_pct = \"x\"",
            "plan.toml:4:17: rand_spec_pct: \"x\" is not a number",
        ),
    ] {
        assert_eq!(err(&oltp(bad)), says, "{bad}");
    }
}

/// sysbench's settings where only pgbench's scripts run would shape nothing: refused at their
/// place.
#[test]
fn sysbenchs_settings_are_refused_without_its_scripts() {
    for (setting, at) in [("tables = 3", "3:10"), ("rand_spec_pct = 5", "3:17")] {
        assert_eq!(
            err(&plan(setting)),
            format!(
                "plan.toml:{at}: {} is sysbench's: it shapes sysbench's tables or mix, which none \
                 of this run's scripts uses\n  hint: run one of sysbench's built-ins (-b \
                 oltp_read_write, oltp_point_select…), or leave the setting out",
                setting.split(' ').next().unwrap()
            )
        );
    }
}

/// `--max-tries 0` is pgbench's "no limit": allowed where a duration or a latency limit ends
/// the retrying, refused (as pgbench refuses it) where only a count of transactions is given.
#[test]
fn unlimited_tries_need_something_to_end_them() {
    let tries = |settings: &str| {
        let p = resolve(&plan(settings)).unwrap();
        p.record().custom["sql"]["max_tries"].clone()
    };
    assert_eq!(tries("max_tries = 0"), 0);
    assert_eq!(
        tries("max_tries = 0\ntransactions = 5\nlatency_limit = \"50ms\""),
        0
    );
    assert_eq!(
        err(&plan("max_tries = 0\ntransactions = 5")),
        "plan.toml:3:13: max_tries 0 (no limit) needs a duration or a latency limit to end the \
         retrying\n  hint: give --duration in place of -t, or --latency-limit"
    );
    assert!(err(&plan("max_tries = -1")).contains("max_tries must be 0 to 1000000"));
}
