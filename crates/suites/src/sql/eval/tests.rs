use super::*;
use crate::sql::expr::parse;
use proptest::prelude::*;

fn run(text: &str, vars: &Vars) -> R<Value> {
    let e = parse(text).map_err(|e| format!("at {}: {}", e.at, e.message))?;
    let mut prng = Prng::new(1);
    let mut env = Env {
        vars,
        prng: &mut prng,
        default_seed: 4306334408478191133,
        at: ("test", 1),
    };
    eval(&e, &mut env)
}

fn value(text: &str) -> Value {
    run(text, &Vars::default()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// pgbench 15.18's answers (`\set x debug(…)`, 2026-11-26) to expressions that exercise its
/// precedence, its desugaring, its integer and double rules and its functions.
#[test]
fn expressions_evaluate_as_pgbench_evaluates_them() {
    let int = |t: &str, want: i64| assert_eq!(value(t), Value::Int(want), "{t}");
    let boolean = |t: &str, want: bool| assert_eq!(value(t), Value::Bool(want), "{t}");
    let double = |t: &str, want: f64| match value(t) {
        Value::Double(d) => assert!(
            d == want || (d - want).abs() < 1e-12 * want.abs().max(1.0),
            "{t}: {d}"
        ),
        v => panic!("{t}: {v:?}"),
    };
    int("1 + 2 * 3 - 4 / 3 % 2", 6);
    int("-7 / 2", -3);
    int("-7 % 3", -1);
    double("7.0 / 2", 3.5);
    int("1 << 3 | 1 # 2 & 3", 3);
    int("~1 + 2", -4);
    boolean("2 > 1 AND NOT 1 = 2 OR false", true);
    double("CASE WHEN 0 THEN 1 WHEN 2 > 1 THEN 2.5 ELSE 3 END", 2.5);
    boolean("NULL IS NULL", true);
    boolean("1 ISNULL", false);
    boolean("5 IS NOT NULL", true);
    double("least(3, 1.5, 2)", 1.5);
    int("greatest(3, 9, -2)", 9);
    int("int(2.5) + int(3.5) + int(-2.5)", 4);
    double("abs(-3) + abs(-2.25)", 5.25);
    double(
        "sqrt(2) * pi() + exp(1) - ln(10) + pow(2, 0.5)",
        6.27279323599646,
    );
    int("mod(-9, 4) + 10 % -1", -1);
    double("double(7) / 3", 2.333333333333333);
    int("-9223372036854775808", i64::MIN);
    double("1.5e3 + .25", 1500.25);
    assert_eq!(value("CASE WHEN NULL THEN 1 END"), Value::Null);
    assert_eq!(value("NULL + 1"), Value::Null);
    boolean("(1 < 2) IS TRUE", true);
    double("1e300 * 1e300", f64::INFINITY);
    int("hash(-5, 3) # hash_fnv1a(9)", -4351735427435202730);
}

#[test]
fn mistakes_are_errors_with_their_place_or_pgbenchs_words() {
    let vars = Vars::from_iter([
        ("n".to_string(), Value::Text("12".into())),
        ("t".to_string(), Value::Text("yes".into())),
        ("x".to_string(), Value::Text("abc".into())),
    ]);
    for (text, says) in [
        ("1 < 2 < 3", "at 6: syntax error: comparisons do not chain"),
        (
            "1 < 2 = true",
            "at 6: syntax error: comparisons do not chain",
        ),
        ("nosuch(1)", "at 0: unexpected function name \"nosuch\""),
        ("random(1)", "at 0: wrong number of arguments to random: 1"),
        ("(1 + 2", "at 6: syntax error: expected \")\""),
        ("1 $ 2", "at 2: unexpected character '$'"),
        ("9223372036854775808", "at 0: bigint constant overflow"),
        ("99999999999999999999", "at 0: bigint constant overflow"),
        ("1 IS 2", "at 5: syntax error: IS takes NULL, TRUE or FALSE"),
        (
            "CASE WHEN 1 THEN 2",
            "at 18: syntax error: CASE without END",
        ),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("9223372036854775807 + 1", "bigint add out of range"),
        ("-9223372036854775808 / -1", "bigint div out of range"),
        ("int(1e30)", "double to int overflow"),
        ("true + 1", "cannot coerce boolean to int"),
        ("1 AND true", "cannot coerce 1 to boolean"),
        (":missing + 1", "undefined variable \"missing\""),
        (":x + 1", "malformed variable value \"abc\""),
        ("random(5, 1)", "empty range given to random"),
        (
            "random_zipfian(1, 10, 0.5)",
            "zipfian parameter must be in range [1.001, 1000]",
        ),
    ] {
        let got = run(text, &vars).unwrap_err();
        assert!(got.contains(says), "{text}: {got}");
    }
    assert_eq!(run(":n * 2", &vars), Ok(Value::Int(24)));
    assert_eq!(run(":t AND true", &vars), Ok(Value::Bool(true)));
}

#[test]
fn values_read_into_sql_as_pgbench_writes_them() {
    assert_eq!(value("7.0 / 2").to_string(), "3.5");
    assert_eq!(value("double(7) / 3").to_string(), "2.33333333333333");
    assert_eq!(value("1e20 * 1.0").to_string(), "1e+20");
    assert_eq!(value("0.0001 * 1.0").to_string(), "0.0001");
    assert_eq!(value("true").to_string(), "true");
    assert_eq!(value("NULL").to_string(), "NULL");
    assert_eq!(value("-3").to_string(), "-3");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// A script is somebody else's text: any of it parses or fails with a place, and what
    /// parses evaluates or fails with a message; nothing panics.
    #[test]
    fn any_text_parses_and_evaluates_without_a_panic(text in "[-+*/%<>=!~&|#() ,.:a-z0-9eE]{0,40}") {
        let _ = run(&text, &Vars::default());
    }

    #[test]
    fn integer_arithmetic_is_exact_or_refused(a in any::<i64>(), b in any::<i64>()) {
        for (op, want) in [("+", a.checked_add(b)), ("-", a.checked_sub(b)), ("*", a.checked_mul(b))] {
            let text = format!("({a}) {op} ({b})");
            match (run(&text, &Vars::default()), want) {
                (Ok(Value::Int(v)), Some(w)) => prop_assert_eq!(v, w),
                (Err(e), None) => prop_assert!(e.contains("out of range"), "{}", e),
                (got, want) => prop_assert!(false, "{}: {:?} against {:?}", text, got, want),
            }
        }
    }
}

/// `~` and `NOT` wherever an operand may be, binding as pgbench's grammar binds them; and
/// pgbench's limit of 16 arguments.
#[test]
fn tilde_and_not_may_begin_any_operand() {
    let int = |t: &str, want: i64| assert_eq!(value(t), Value::Int(want), "{t}");
    int("1 + ~2", -2);
    int("1 + ~2 * 3 + 4", -10);
    // (1 + ~2) | 3, not 1 + (~2 | 3), which is 0.
    int("1 + ~2 | 3", -1);
    int("2 * ~1 + 1", -6);
    int("-~1", 2);
    int("~~5", 5);
    assert_eq!(value("true AND NOT false"), Value::Bool(true));
    // Accepted where pgbench's grammar accepts it, and refused as pgbench refuses it when run
    // (a comparison takes numbers: no grouping of these makes one that runs).
    let e = run("1 = NOT true", &Vars::default()).unwrap_err();
    assert_eq!(e, "cannot coerce boolean to int");
    let args: Vec<String> = (1..=17).map(|i| i.to_string()).collect();
    let e = run(&format!("least({})", args.join(", ")), &Vars::default()).unwrap_err();
    assert!(
        e.contains("too many function arguments, maximum is 16"),
        "{e}"
    );
    assert_eq!(
        value(&format!("least({})", args[..16].join(", "))),
        Value::Int(1)
    );
}

/// A seed left out of `hash()` and `permute()` is `:default_seed` as it is when the call runs
/// (a script may set it), as pgbench writes the call; without the variable, the client's.
#[test]
fn a_missing_seed_is_the_default_seed_variable() {
    let with = |seed: Value| Vars::from_iter([("default_seed".to_string(), seed)]);
    for vars in [with(Value::Int(42)), with(Value::Text("42".into()))] {
        for (short, long) in [
            ("hash(5)", "hash(5, 42)"),
            ("hash_fnv1a(5)", "hash_fnv1a(5, 42)"),
            ("permute(3, 10)", "permute(3, 10, 42)"),
        ] {
            assert_eq!(run(short, &vars), run(long, &vars), "{short}");
        }
    }
    assert_ne!(value("hash(5)"), value("hash(5, 42)"));
    assert_eq!(value("hash(5)"), value("hash(5, 4306334408478191133)"));
    assert_eq!(run("hash(5)", &with(Value::Null)), Ok(Value::Null));
    assert_eq!(
        value("debug(7)"),
        Value::Int(7),
        "debug() gives its argument"
    );
}

/// `\sleep :var` reads the variable's text as pgbench does (C's `atoi`), and refuses what
/// pgbench refuses: 0 from a text that does not begin with a digit.
#[test]
fn a_sleep_variable_is_read_as_pgbench_reads_it() {
    let ok = |v: Value, want: i64| assert_eq!(v.atoi(), Ok(want), "{v:?}");
    ok(Value::Int(3), 3);
    ok(Value::Int(-3), -3);
    ok(Value::Double(1.5), 1);
    ok(Value::Double(2.7), 2);
    ok(Value::Text("5ms".into()), 5);
    ok(Value::Text(" 7".into()), 7);
    ok(Value::Text("0".into()), 0);
    for bad in [
        Value::Bool(true),
        Value::Null,
        Value::Text("x".into()),
        Value::Text(" 0".into()),
    ] {
        let e = bad.atoi().unwrap_err();
        assert!(e.starts_with("invalid sleep time"), "{bad:?}: {e}");
    }
}
