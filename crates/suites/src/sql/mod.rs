//! The `sql` suite's parts, built ahead of the suite: pgbench's expression language (`expr`
//! parses, `eval` evaluates) and its random functions (`random`), each to pgbench's own
//! definitions and checked against pgbench's answers; and its script language (`script`).

pub mod client;
pub mod eval;
pub mod expr;
pub mod init;
pub mod random;
pub mod script;
