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
