//! The server's error code in a driver's message: what tells a conflict, and a name the server
//! does not know yet, apart from other failures.

/// A server's error code as the drivers write it into their messages: PostgreSQL's SQLSTATE
/// (`postgres: …: ERROR 42P01: …`), or MySQL's error number and SQLSTATE (`mysql: …: ERROR 1146
/// (42S02): …`). MySQL's number is needed beside its SQLSTATE: 42000 alone is both a syntax error
/// and an unknown function, and 40001 is its deadlock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ServerCode<'a> {
    Postgres(&'a str),
    Mysql(u16, &'a str),
}

impl<'a> ServerCode<'a> {
    /// The code in a driver's message; None for an error the server did not send.
    pub fn of(message: &'a str) -> Option<ServerCode<'a>> {
        let (_, rest) = message.split_once("ERROR ")?;
        let (code, _) = rest.split_once(':')?;
        match code.split_once(" (") {
            Some((n, state)) => Some(ServerCode::Mysql(n.parse().ok()?, state.strip_suffix(')')?)),
            None => Some(ServerCode::Postgres(code)),
        }
    }

    /// Whether the server refused a statement for naming a table, function, column, type or
    /// schema it does not know (PostgreSQL's 42P01, 42883, 42703, 42704, 3F000; MySQL's 1146,
    /// 1305, 1054).
    pub(crate) fn names_the_unknown(self) -> bool {
        match self {
            ServerCode::Postgres(s) => ["42P01", "42883", "42703", "42704", "3F000"].contains(&s),
            ServerCode::Mysql(n, _) => [1146, 1305, 1054].contains(&n),
        }
    }
}
