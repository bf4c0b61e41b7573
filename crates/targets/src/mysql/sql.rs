//! `mysql://` for the `sql` suite: a session in dyno's database (its default database),
//! prepared statements with parameters sent as text for the server to convert (`-M prepared`,
//! the default) or text statements with the values written in (`-M simple`), and each row's
//! columns read back as text. PostgreSQL's `END` (pgbench's scripts end transactions so) is
//! sent as `COMMIT`, which it means.

use super::*;
use engine::driver::{QueryMode, SqlParam, SqlSession};

pub(super) struct MySql {
    c: Conn,
    simple: bool,
    stmts: Vec<Made>,
}

/// A statement made ready: prepared on the server, or the text around its values.
enum Made {
    Prepared(Stmt),
    Simple(Vec<String>),
}

impl MySql {
    /// A session of `config`'s server with `db` as its database.
    pub(super) fn open(config: &Config, db: &str) -> Result<MySql, OpError> {
        // The database chosen with the login: no `USE` of its own.
        let c = config.connect_in(Some(db))?;
        Ok(MySql {
            c,
            simple: false,
            stmts: Vec::new(),
        })
    }
}

impl Drop for MySql {
    fn drop(&mut self) {
        self.c.quit();
    }
}

/// `END` is PostgreSQL's `COMMIT`; anything else as written.
fn dialect(sql: &str) -> &str {
    let bare = sql.trim().trim_end_matches(';').trim();
    if bare.eq_ignore_ascii_case("end") {
        "COMMIT"
    } else {
        sql
    }
}

impl SqlSession for MySql {
    fn dialect(&self) -> engine::driver::Dialect {
        engine::driver::Dialect::MySql
    }
    fn set_query_mode(&mut self, mode: QueryMode) -> Result<(), String> {
        if mode == QueryMode::Extended {
            return Err("-M extended is PostgreSQL's extended protocol, which MySQL does not have: give -M prepared or -M simple".into());
        }
        self.simple = mode == QueryMode::Simple;
        Ok(())
    }

    fn prepare(&mut self, parts: &[String]) -> Result<usize, OpError> {
        let made = match (self.simple, parts) {
            (true, [whole]) => Made::Simple(vec![dialect(whole).to_string()]),
            (true, _) => Made::Simple(parts.to_vec()),
            (false, _) => Made::Prepared(self.c.prepare(dialect(&parts.join("?")))?),
        };
        self.stmts.push(made);
        Ok(self.stmts.len() - 1)
    }

    fn execute(
        &mut self,
        stmt: usize,
        params: &[SqlParam<'_>],
        mut row: Option<&mut engine::driver::EachSqlRow<'_>>,
    ) -> Result<u64, OpError> {
        let stmt = match &self.stmts[stmt] {
            Made::Prepared(s) => s,
            Made::Simple(parts) => return self.c.query_spliced(parts, params, row),
        };
        // Allocated only when the rows are read.
        let mut texts: Vec<Option<String>> = Vec::new();
        let mut rows = 0;
        let affected = self.c.execute(stmt, params, "execute", |r| {
            rows += 1;
            let Some(row) = row.as_mut() else {
                return Ok(());
            };
            texts.clear();
            for (i, col) in r.columns.iter().enumerate() {
                let text = match r.get(i) {
                    None => None,
                    Some(v) => {
                        let unsigned = col.flags & proto::UNSIGNED != 0;
                        Some(proto::value_text(col.kind, unsigned, v).ok_or_else(|| {
                            OpError::new(
                                ErrorClass::Application,
                                format!(
                                    "mysql: column {}: dyno reads no date or time columns",
                                    col.name
                                ),
                            )
                        })?)
                    }
                };
                texts.push(text);
            }
            let cols: Vec<(&str, Option<&str>)> = (r.columns.iter())
                .zip(&texts)
                .map(|(c, t)| (c.name.as_str(), t.as_deref()))
                .collect();
            row(0, &cols);
            Ok(())
        })?;
        Ok(if stmt.columns.is_empty() {
            affected
        } else {
            rows
        })
    }

    fn batch(&mut self, sql: &str) -> Result<(), OpError> {
        self.c.query(dialect(sql)).map(drop)
    }

    fn set_timeout(&mut self, d: std::time::Duration) {
        self.c.set_timeout(d);
    }

    fn in_transaction(&self) -> bool {
        self.c.in_transaction()
    }

    fn usable(&self) -> bool {
        self.c.usable()
    }
}
