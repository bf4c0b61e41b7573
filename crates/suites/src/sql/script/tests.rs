use super::*;
use proptest::prelude::*;

fn sql_of(c: &Command) -> (&str, &[String], &[String], Option<&str>) {
    match &c.kind {
        Kind::Sql {
            text,
            parts,
            vars,
            assign,
            ..
        } => (
            text,
            parts,
            vars,
            assign.as_ref().map(|a| a.prefix.as_str()),
        ),
        k => panic!("not SQL: {k:?}"),
    }
}

fn statements_of(c: &Command) -> usize {
    match &c.kind {
        Kind::Sql { statements, .. } => *statements,
        k => panic!("not SQL: {k:?}"),
    }
}

#[test]
fn the_built_in_scripts_read_as_pgbench_runs_them() {
    let s = built_in("tpcb-like").unwrap();
    assert_eq!(s.commands.len(), 11);
    assert!(matches!(&s.commands[0].kind, Kind::Set { var, .. } if var == "aid"));
    let (text, parts, vars, _) = sql_of(&s.commands[5]);
    assert_eq!(
        text,
        "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;"
    );
    assert_eq!(vars, ["delta", "aid"]);
    assert_eq!(
        parts,
        [
            "UPDATE pgbench_accounts SET abalance = abalance + ",
            " WHERE aid = ",
            ";"
        ]
    );
    assert_eq!(s.commands[5].line, 6);
    assert_eq!(sql_of(&s.commands[10]).0, "END;");
    assert_eq!(built_in("simple").unwrap().commands.len(), 9);
    assert_eq!(built_in("select-only").unwrap().commands.len(), 2);
    assert!(
        built_in("nosuch")
            .unwrap_err()
            .contains("tpcb-like, simple-update, select-only")
    );
    // "s" is a prefix of two: not unique.
    assert!(built_in("s").is_err());
}

#[test]
fn a_script_with_every_command_dyno_runs() {
    let text = "\
-- a comment line
\\set n random_zipfian(1, 1000, 1.07)
\\set big :n * \\
    2
SELECT abalance, 'a;b' AS x, 1::int AS y
  FROM pgbench_accounts   -- the accounts
  WHERE aid = :n;
\\gset acct_
\\if :acct_abalance > 0
  \\sleep 10 ms
\\elif :n = 1
  \\sleep :n us
\\else
  \\sleep 1
\\endif
UPDATE t SET v = 1; UPDATE t SET v = 2
";
    let s = parse("mine.sql", text).unwrap();
    let kinds: Vec<&Kind> = s.commands.iter().map(|c| &c.kind).collect();
    assert_eq!(s.commands.len(), 12, "{kinds:#?}");
    assert!(matches!(kinds[1], Kind::Set { var, .. } if var == "big"));
    let (text, parts, vars, gset) = sql_of(&s.commands[2]);
    assert_eq!(s.commands[2].line, 5);
    assert!(text.starts_with("SELECT abalance, 'a;b' AS x, 1::int AS y"));
    assert!(!text.contains("the accounts"), "{text}");
    assert_eq!(vars, ["n"]);
    assert_eq!(parts.len(), 2);
    assert_eq!(gset, Some("acct_"));
    assert_eq!(
        kinds[4],
        &Kind::Sleep {
            amount: Amount::Literal(10),
            unit_us: 1000
        }
    );
    assert_eq!(
        kinds[6],
        &Kind::Sleep {
            amount: Amount::Var("n".into()),
            unit_us: 1
        }
    );
    assert_eq!(
        kinds[8],
        &Kind::Sleep {
            amount: Amount::Literal(1),
            unit_us: 1_000_000
        }
    );
    assert_eq!(kinds[9], &Kind::Endif);
    assert_eq!(sql_of(&s.commands[10]).0, "UPDATE t SET v = 1;");
    assert_eq!(sql_of(&s.commands[11]).0, "UPDATE t SET v = 2");
}

#[test]
fn a_meta_command_ends_the_sql_on_its_line_as_in_pgbench() {
    // pgbench's own examples: `\gset` in place of the `;`, and compound commands.
    let text = "UPDATE pgbench_accounts SET abalance = abalance + :delta\n  WHERE aid = :aid RETURNING abalance \\gset\n\
                SELECT 1 AS one \\; SELECT 2 AS two \\gset p_\n\
                SELECT 1 AS a \\; UPDATE t SET v = 1 \\; SELECT 3 AS c \\aset\n\
                SELECT 4 \\sleep 1 ms\n";
    let s = parse("g.sql", text).unwrap();
    let kinds: Vec<_> = s.commands.iter().map(|c| (c.line, &c.kind)).collect();
    assert_eq!(s.commands.len(), 5, "{kinds:#?}");
    let (sql, _, vars, gset) = sql_of(&s.commands[0]);
    assert_eq!(
        sql,
        "UPDATE pgbench_accounts SET abalance = abalance + :delta\n  WHERE aid = :aid RETURNING abalance"
    );
    assert_eq!(
        (vars, gset),
        (&["delta".to_string(), "aid".into()][..], Some(""))
    );
    assert_eq!(statements_of(&s.commands[0]), 1);
    let (sql, _, _, gset) = sql_of(&s.commands[1]);
    assert_eq!(
        (sql, gset),
        ("SELECT 1 AS one  ; SELECT 2 AS two", Some("p_"))
    );
    assert_eq!((s.commands[1].line, statements_of(&s.commands[1])), (3, 2));
    assert!(
        matches!(&s.commands[2].kind, Kind::Sql { assign: Some(a), statements: 3, .. } if a.every && a.prefix.is_empty())
    );
    assert_eq!(sql_of(&s.commands[3]).0, "SELECT 4");
    assert!(matches!(kinds[4], (5, Kind::Sleep { unit_us: 1000, .. })));
}

#[test]
fn a_compound_commands_end_is_sent_as_commit() {
    let s = parse("c.sql", "BEGIN \\; UPDATE t SET v = 1 \\; end;\nEND;\n").unwrap();
    assert_eq!(
        sql_of(&s.commands[0]).0,
        "BEGIN  ; UPDATE t SET v = 1  ; COMMIT;"
    );
    // One of its own stays as written (the MySQL session sends it as COMMIT).
    assert_eq!(sql_of(&s.commands[1]).0, "END;");
}

#[test]
fn quotes_and_comments_are_read_through() {
    let text = "SELECT 'a;b\nc', \"x;\"\"y\", E'it\\'s;', $$ ; $$, $f$ ;$$; $f$ /* ; /* ; */ ; */ FROM t\n\
                  WHERE v = 1; -- ; \\gset\nSELECT 2;";
    let s = parse("q.sql", text).unwrap();
    assert_eq!(s.commands.len(), 2, "{:#?}", s.commands);
    let (sql, ..) = sql_of(&s.commands[0]);
    assert!(
        sql.starts_with("SELECT 'a;b\nc', \"x;\"\"y\", E'it\\'s;', $$ ; $$, $f$ ;$$; $f$ "),
        "{sql}"
    );
    assert!(
        sql.ends_with("FROM t\nWHERE v = 1;") && !sql.contains("/*"),
        "{sql}"
    );
    assert_eq!(
        (s.commands[1].line, sql_of(&s.commands[1]).0),
        (4, "SELECT 2;")
    );
    // A `;` in parentheses ends nothing (a rule's actions); `\:` is a colon; a string with a
    // backslash both servers end in one place reads.
    let text = "CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO u VALUES (1); DELETE FROM v);\n\
                SELECT 'C:\\x', 'a\\\\' \\: x;\nSELECT 3;";
    let s = parse("r.sql", text).unwrap();
    assert_eq!(s.commands.len(), 3, "{:#?}", s.commands);
    assert!(sql_of(&s.commands[0]).0.ends_with("DELETE FROM v);"));
    assert_eq!(sql_of(&s.commands[1]).0, "SELECT 'C:\\x', 'a\\\\'  : x;");
    // A parameter `$1` is no dollar quote, nor is a `$` inside a word.
    let s = parse("d.sql", "SELECT a$1$, a$$b FROM t$x$;\nSELECT 2;").unwrap();
    assert_eq!(s.commands.len(), 2);
}

#[test]
fn a_hash_comment_is_read_through_where_a_statement_would_begin() {
    // MySQL's `#` comment runs to the line's end: a quote or a `;` in it is its own.
    let text = "# don't; stop\n\\set id random(1, 10)\nSELECT :id; # the row's id; \"or\" not\n\
                  \t# another\nSELECT 2 # 3;\n# the end's";
    let s = parse("h.sql", text).unwrap();
    assert_eq!(s.commands.len(), 3, "{:#?}", s.commands);
    assert_eq!(
        (s.commands[1].line, sql_of(&s.commands[1]).0),
        (3, "SELECT :id;")
    );
    // Inside a statement `#` is PostgreSQL's exclusive or, sent as written.
    assert_eq!(
        (s.commands[2].line, sql_of(&s.commands[2]).0),
        (5, "SELECT 2 # 3;")
    );
}

#[test]
fn a_routine_body_is_read_to_its_end_as_psql_reads_it() {
    let commands = |text: &str| -> Vec<String> {
        let s = parse("f.sql", text).unwrap();
        (s.commands.iter())
            .map(|c| sql_of(c).0.to_string())
            .collect()
    };
    // PostgreSQL's SQL-standard body: its `;`s end nothing until the END closing BEGIN ATOMIC,
    // a CASE inside closed by its own END.
    let f = "CREATE OR REPLACE FUNCTION f(a int) RETURNS int LANGUAGE sql\n\
             BEGIN ATOMIC\n  SELECT CASE WHEN a > 0 THEN a END;\n  SELECT a + 1;\nEND;";
    assert_eq!(commands(&format!("{f}\nSELECT f(1);")), [f, "SELECT f(1);"]);
    let p = "create procedure p() language sql begin atomic insert into t values (1); end;";
    assert_eq!(commands(&format!("{p} call p();")), [p, "call p();"]);
    // MySQL's compound statement: END IF closes what BEGIN did not open, END CASE its CASE.
    let m = "CREATE PROCEDURE m(x INT) BEGIN\n  IF x > 0 THEN SELECT 1; END IF;\n  \
             CASE x WHEN 1 THEN SELECT 2; END CASE;\n  WHILE x > 0 DO SET x = x - 1; END WHILE;\nEND;";
    assert_eq!(commands(&format!("{m}\nCALL m(1);")), [m, "CALL m(1);"]);
    // Elsewhere BEGIN and END are words like any other: a transaction, a CASE, a name.
    assert_eq!(
        commands(
            "BEGIN;\nSELECT CASE WHEN true THEN 1 END;\nCREATE TABLE begin_end (x int);\nEND;"
        ),
        [
            "BEGIN;",
            "SELECT CASE WHEN true THEN 1 END;",
            "CREATE TABLE begin_end (x int);",
            "END;"
        ]
    );
    // A BEGIN in a function's parentheses or its quoted body counts for nothing.
    let q = "CREATE FUNCTION g(\"begin\" int) RETURNS int AS $$ BEGIN RETURN 1; END; $$ LANGUAGE plpgsql;";
    assert_eq!(commands(&format!("{q}\nSELECT 1;")), [q, "SELECT 1;"]);
    // A body left open is one command to the script's end, as psql sends it.
    assert_eq!(
        commands("CREATE FUNCTION h() RETURNS int BEGIN ATOMIC SELECT 1;\nSELECT 2;").len(),
        1
    );
}

#[test]
fn shell_commands_read_as_pgbench_splits_them() {
    let s = parse(
        "s.sql",
        "\\setshell n  expr :x + ::y 5\n\\shell touch done\n",
    )
    .unwrap();
    let lit = |t: &str| Word::Literal(t.into());
    assert_eq!(
        s.commands[0].kind,
        Kind::Shell {
            var: Some("n".into()),
            words: vec![
                lit("expr"),
                Word::Var("x".into()),
                lit("+"),
                lit(":y"),
                lit("5")
            ],
        }
    );
    assert_eq!(
        (s.commands[1].line, &s.commands[1].kind),
        (
            2,
            &Kind::Shell {
                var: None,
                words: vec![lit("touch"), lit("done")]
            }
        )
    );
    located(&[
        (
            "\\setshell 9x echo 1",
            1,
            11,
            "\\setshell needs a variable's name",
        ),
        (
            "\\setshell",
            1,
            10,
            "\\setshell needs a variable's name, not \"\"",
        ),
        ("\\setshell x", 1, 11, "\\setshell needs a command to run"),
        ("\\shell  ", 1, 9, "\\shell needs a command to run"),
        ("\\shell echo :", 1, 8, "\\shell: \":\" is not a :variable"),
    ]);
}

#[test]
fn pipelines_read_as_pgbench_writes_them() {
    let text = "\\startpipeline\nBEGIN;\nUPDATE t SET v = v + 1 WHERE k = :k;\n\\syncpipeline\n\
                \\if :k > 1\n  SELECT v FROM t WHERE k = :k;\n\\endif\nEND;\n\\endpipeline\n\\sleep 1 ms\n";
    let s = parse("p.sql", text).unwrap();
    let kinds: Vec<_> = s.commands.iter().map(|c| (c.line, &c.kind)).collect();
    assert_eq!(kinds[0], (1, &Kind::StartPipeline));
    assert!(matches!(kinds[1].1, Kind::Sql { text, .. } if text == "BEGIN;"));
    assert_eq!(kinds[3], (4, &Kind::SyncPipeline));
    assert!(matches!(kinds[5].1, Kind::Sql { vars, .. } if vars == &["k"]));
    assert_eq!(kinds[8], (9, &Kind::EndPipeline));
    assert_eq!(s.commands.len(), 10);
}

/// Each text fails to read, at its line and column, with a message that says so.
fn located(cases: &[(&str, usize, usize, &str)]) {
    for &(text, line, column, says) in cases {
        let e = parse("f.sql", text).unwrap_err();
        assert_eq!((e.line, e.column), (line, column), "{text:?}: {e:?}");
        assert!(e.message.contains(says), "{text:?}: {e:?}");
    }
}

#[test]
fn quotes_left_open_and_empty_statements_are_located() {
    located(&[
        (
            "SELECT 1;\n  SELECT 'x\n",
            2,
            10,
            "unterminated quoted string",
        ),
        ("SELECT \"x", 1, 8, "unterminated quoted name"),
        ("SELECT `x", 1, 8, "unterminated quoted name"),
        (
            "SELECT 1;\nSELECT 'it\\'s';",
            2,
            8,
            "end this string in different places",
        ),
        (
            "INSERT /* é */ INTO public.t VALUES (1);",
            1,
            22,
            "public.t writes outside",
        ),
        (
            "SELECT $a$ x $b$;",
            1,
            8,
            "unterminated dollar-quoted string",
        ),
        ("SELECT 1 /* /* */", 1, 10, "unterminated /* comment"),
        ("\\; SELECT 1", 1, 1, "empty statement before \\;"),
        (
            "SELECT 1 \\; \\; SELECT 2",
            1,
            13,
            "empty statement before \\;",
        ),
        ("SELECT 1 \\;\n;", 1, 10, "empty statement after \\;"),
        (
            "SELECT 1 \\; SELECT 2 \\;",
            1,
            22,
            "empty statement after \\;",
        ),
        (
            "SELECT 1 \\; INSERT INTO public.t VALUES (1);",
            1,
            25,
            "public.t writes outside dyno's own schema",
        ),
    ]);
}

#[test]
fn mistakes_are_located() {
    located(&[
        ("\\set x random(1,", 1, 17, "ends early"),
        ("SELECT 1;\n\\set 9x 1", 2, 6, "needs a variable's name"),
        ("\\set x 1 +* 2", 1, 11, "syntax error"),
        ("\\frobnicate", 1, 1, "invalid command \\frobnicate"),
        ("\\aset", 1, 1, "\\aset must follow an SQL command"),
        (
            "SELECT 1 \\gset\n\\aset",
            2,
            1,
            "must follow an SQL command",
        ),
        (
            "\\startpipeline\nSELECT 1 \\; SELECT 2;\n\\endpipeline",
            2,
            1,
            "compound command (\\;) in a pipeline",
        ),
        (
            "\\startpipeline\nSELECT 1 \\aset\n\\endpipeline",
            2,
            1,
            "\\aset in a pipeline",
        ),
        ("\\gset", 1, 1, "must follow an SQL command"),
        (
            "SELECT 1;\n\\gset\n\\gset",
            3,
            1,
            "must follow an SQL command",
        ),
        ("\\if 1\nSELECT 1;", 1, 1, "without a matching \\endif"),
        ("\\else", 1, 1, "without a matching \\if"),
        ("\\if 1\n\\else\n\\elif 2\n\\endif", 3, 1, "after \\else"),
        ("\\endif", 1, 1, "without a matching \\if"),
        ("\\else 1", 1, 7, "takes no argument"),
        ("\\sleep 5 minutes", 1, 8, "unknown time unit"),
        ("\\startpipeline now", 1, 16, "takes no argument"),
        (
            "\\startpipeline\nSELECT 1;\n\\startpipeline",
            3,
            1,
            "inside the pipeline begun on line 1",
        ),
        ("SELECT 1;\n\\endpipeline", 2, 1, "outside a pipeline"),
        ("\\syncpipeline", 1, 1, "outside a pipeline"),
        (
            "SELECT 1;\n\\startpipeline\nSELECT 2;",
            2,
            1,
            "without \\endpipeline",
        ),
        (
            "\\startpipeline\nSELECT 1;\n\\gset\n\\endpipeline",
            2,
            1,
            "\\gset in a pipeline",
        ),
        (
            "\\startpipeline\nSELECT 1 FROM sbtest:t;\n\\endpipeline",
            2,
            1,
            "joined to a name",
        ),
        (
            "\\if 1\n\\startpipeline\n\\endif\n\\endpipeline",
            3,
            1,
            "in the \\if branch it began in",
        ),
        (
            "\\startpipeline\n\\if 1\n\\endpipeline\n\\else\n\\endpipeline\n\\endif",
            4,
            1,
            "must stay open",
        ),
        ("\\sleep x", 1, 8, "not a whole number"),
        ("", 1, 1, "has no command"),
        ("  -- only a comment", 1, 1, "has no command"),
        (
            "SELECT 1;\nUPDATE pgbench_accounts\n  SET abalance = 0;\nINSERT INTO public.t VALUES (1);",
            4,
            13,
            "public.t writes outside dyno's own schema",
        ),
        (
            "BEGIN;\nSET search_path = public;",
            2,
            5,
            "SET SEARCH_PATH would move",
        ),
    ]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A script is somebody else's text: it reads or fails with a place, never a panic.
    #[test]
    fn any_text_reads_or_fails_cleanly(text in "[\\\\a-zEé` :;'\"\\-\\n0-9()+*<>=$/#]{0,120}") {
        if let Err(e) = parse("p.sql", &text) {
            prop_assert!(e.line >= 1 && e.column >= 1);
        }
    }
}
