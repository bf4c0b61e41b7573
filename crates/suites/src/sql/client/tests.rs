use super::*;
use proptest::prelude::*;

#[test]
fn a_server_code_is_read_from_each_drivers_message() {
    let pg = "postgres: prepare: ERROR 42P01: relation \"t\" does not exist";
    assert_eq!(ServerCode::of(pg), Some(ServerCode::Postgres("42P01")));
    let my = "mysql: execute: ERROR 1213 (40001): Deadlock found when trying to get lock";
    assert_eq!(ServerCode::of(my), Some(ServerCode::Mysql(1213, "40001")));
    // The server's own words after the code may say anything, ERROR and colons included.
    let quoting = "postgres: execute: ERROR 40001: could not serialize: ERROR 40P01: x";
    assert_eq!(ServerCode::of(quoting), Some(ServerCode::Postgres("40001")));
    for not_the_servers in [
        "postgres: connect: connection refused",
        "mysql: read: ERROR without a code",
        "mysql: ERROR 12x3 (40001): a number that is not one",
        "mysql: ERROR 1213 (40001: an unclosed state",
    ] {
        assert_eq!(ServerCode::of(not_the_servers), None, "{not_the_servers}");
    }
}

#[test]
fn what_names_the_unknown_is_told_from_what_does_not() {
    let unknown = |m: &str| ServerCode::of(m).is_some_and(ServerCode::names_the_unknown);
    assert!(unknown(
        "postgres: prepare: ERROR 42883: function f(integer) does not exist"
    ));
    assert!(unknown(
        "mysql: prepare: ERROR 1305 (42000): FUNCTION d.f does not exist"
    ));
    // The same SQLSTATE as 1305, for a syntax error: the number tells them apart.
    assert!(!unknown(
        "mysql: prepare: ERROR 1064 (42000): You have an error in your SQL syntax"
    ));
    assert!(!unknown(
        "postgres: prepare: ERROR 42601: syntax error at or near \"SELEC\""
    ));
}

proptest! {
    /// Whatever follows `ERROR ` in a message, reading its code neither panics nor invents one
    /// that is not in the text.
    #[test]
    fn reading_a_code_from_any_message_is_total(head in ".{0,20}", tail in ".{0,40}") {
        let message = format!("{head}ERROR {tail}");
        let found = match ServerCode::of(&message) {
            Some(ServerCode::Postgres(state)) => message.contains(&format!("ERROR {state}:")),
            Some(ServerCode::Mysql(n, state)) => {
                message.contains(&format!("({state}):")) && message.contains(&n.to_string())
            }
            None => true,
        };
        prop_assert!(found, "a code not in {:?}", message);
    }
}
