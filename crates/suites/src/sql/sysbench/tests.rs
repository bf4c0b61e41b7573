use super::*;
use crate::sql::script::Kind as Cmd;

fn defaults() -> Oltp {
    Oltp {
        tables: 1,
        table_size: 10_000,
        range_size: 100,
        point_selects: 10,
        simple_ranges: 1,
        sum_ranges: 1,
        order_ranges: 1,
        distinct_ranges: 1,
        index_updates: 1,
        non_index_updates: 1,
        delete_inserts: 1,
        range_selects: true,
        skip_trx: false,
        auto_inc: true,
        secondary: false,
        create_secondary: true,
        rand_type: "sb_special",
        rand: Params::default(),
        quoted: false,
    }
}

/// The script's SQL, in order.
fn sql(s: &Script) -> Vec<&str> {
    (s.commands.iter())
        .filter_map(|c| match &c.kind {
            Cmd::Sql { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn read_write_is_sysbenchs_mix_of_twenty_queries() {
    let s = defaults().script("oltp_read_write").unwrap();
    let q = sql(&s);
    assert_eq!(q.len(), 20, "{q:#?}");
    assert_eq!(q[0], "BEGIN;");
    assert!(
        q[1..11]
            .iter()
            .all(|t| *t == "SELECT c FROM sbtest:t WHERE id=:id;")
    );
    assert_eq!(
        q[11..15],
        [
            "SELECT c FROM sbtest:t WHERE id BETWEEN :id AND :end;",
            "SELECT SUM(k) FROM sbtest:t WHERE id BETWEEN :id AND :end;",
            "SELECT c FROM sbtest:t WHERE id BETWEEN :id AND :end ORDER BY c;",
            "SELECT DISTINCT c FROM sbtest:t WHERE id BETWEEN :id AND :end ORDER BY c;",
        ]
    );
    assert_eq!(q[15], "UPDATE sbtest:t SET k=k+1 WHERE id=:id;");
    assert_eq!(q[16], "UPDATE sbtest:t SET c=:c WHERE id=:id;");
    assert_eq!(q[17], "DELETE FROM sbtest:t WHERE id=:id;");
    assert_eq!(
        q[18],
        "INSERT INTO sbtest:t (id, k, c, pad) VALUES (:id, :k, :c, :pad);"
    );
    assert_eq!(q[19], "COMMIT;");
    // The table is a name, not a parameter; ids are drawn by --rand-type.
    match &s
        .commands
        .iter()
        .find(|c| matches!(c.kind, Cmd::Sql { .. }) && c.line > 2)
        .unwrap()
        .kind
    {
        Cmd::Sql {
            vars,
            spliced,
            parts,
            ..
        } => {
            assert_eq!(vars, &["t", "id"]);
            assert_eq!(spliced, &[0]);
            assert_eq!(parts[0], "SELECT c FROM sbtest");
        }
        _ => unreachable!(),
    }
    let draws_of = |f: &str| {
        (s.commands.iter())
            .filter(|c| matches!(&c.kind, Cmd::Set { expr, .. } if format!("{expr:?}").contains(f)))
            .count()
    };
    // An id per query that takes one, a k per insert; a table per group of queries.
    assert_eq!(draws_of("SbSpecial"), 10 + 4 + 2 + 2);
    assert_eq!(draws_of("Random,"), 8);
}

#[test]
fn each_script_runs_its_own_part_of_the_mix() {
    let o = defaults();
    assert_eq!(
        sql(&o.script("oltp_point_select").unwrap()),
        ["SELECT c FROM sbtest:t WHERE id=:id;"]
    );
    assert_eq!(sql(&o.script("oltp_read_only").unwrap()).len(), 16);
    let w = o.script("oltp_write_only").unwrap();
    assert_eq!(sql(&w).len(), 6);
    let quiet = Oltp {
        skip_trx: true,
        range_selects: false,
        point_selects: 3,
        rand_type: "sb_uniform",
        ..o.clone()
    };
    let r = quiet.script("oltp_read_only").unwrap();
    assert_eq!(sql(&r), vec!["SELECT c FROM sbtest:t WHERE id=:id;"; 3]);
    let nothing = Oltp {
        index_updates: 0,
        non_index_updates: 0,
        delete_inserts: 0,
        ..o.clone()
    };
    assert_eq!(
        sql(&nothing.script("oltp_write_only").unwrap()),
        ["BEGIN;", "COMMIT;"]
    );
    assert!(o.script("oltp_nothing").is_err());
}

#[test]
fn under_simple_the_text_values_are_quoted_and_keep_their_names() {
    let o = Oltp {
        quoted: true,
        ..defaults()
    };
    let s = o.script("oltp_write_only").unwrap();
    let q = sql(&s);
    assert!(
        q.contains(&"UPDATE sbtest:t SET c=':c' WHERE id=:id;"),
        "{q:#?}"
    );
    let insert = "INSERT INTO sbtest:t (id, k, c, pad) VALUES (:id, :k, ':c', ':pad');";
    assert!(q.contains(&insert), "{q:#?}");
    // sysbench's names for them, as without quotes.
    assert_eq!(label(insert), Some("inserts"));
    assert_eq!(
        label("UPDATE sbtest:t SET c=':c' WHERE id=:id;"),
        Some("non_index_updates")
    );
}

/// The ids are drawn with `--rand-*`'s parameters, written into the draw's call.
#[test]
fn the_draws_take_the_rand_parameters() {
    let draws = |o: &Oltp| -> Vec<String> {
        let s = o.script("oltp_point_select").unwrap();
        (s.commands.iter())
            .filter_map(|c| match &c.kind {
                Cmd::Set { var, expr } if var == "id" => Some(format!("{expr:?}")),
                _ => None,
            })
            .collect()
    };
    let parsed = |text: &str| format!("{:?}", crate::sql::expr::parse(text).unwrap());
    let mut o = defaults();
    assert_eq!(
        draws(&o),
        [parsed("sb_special(1, :table_size, 12, 1.0, 75.0)")]
    );
    o.rand = Params {
        spec_pct: 10.0,
        spec_res: 50.0,
        ..Params::default()
    };
    assert_eq!(
        draws(&o),
        [parsed("sb_special(1, :table_size, 12, 10.0, 50.0)")]
    );
    o.rand_type = "sb_pareto";
    o.rand.pareto_h = 0.3;
    assert_eq!(draws(&o), [parsed("sb_pareto(1, :table_size, 0.3)")]);
    o.rand_type = "sb_uniform";
    assert_eq!(draws(&o), [parsed("sb_uniform(1, :table_size)")]);
}
