//! The sql suite's flag setting: `-C` on the command line, `connect = true` in a plan file.

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
