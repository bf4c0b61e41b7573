//! `postgres://` for the `sql` suite: a session in dyno's schema (its `search_path`) on dyno's
//! own wire ([`wire`](super::wire)), its statements sent as pgbench's `-M` says: prepared once
//! with parameters sent as text for the server to read as the types it infers (`-M prepared`,
//! the default), parsed again at each run as an unnamed statement (`-M extended`), or written
//! out with the values in the text (`-M simple`); each row's columns read back as text.

use super::wire::{Prepared, Wire};
use super::*;
use engine::driver::{QueryMode, SqlParam, SqlSession};

pub(super) struct PgSql {
    w: Wire,
    mode: QueryMode,
    stmts: Vec<Stmt>,
}

/// A statement made ready, as the query mode sends it.
enum Stmt {
    /// Prepared on the server.
    Named(Prepared),
    /// Its text with `$1`, `$2`…, parsed at each run.
    Unnamed(String),
    /// The text around its values.
    Simple(Vec<String>),
}

impl PgSql {
    /// A session of `config`'s server working in `schema`.
    pub(super) fn open(config: &Config, schema: &str) -> Result<PgSql, OpError> {
        let w = config.connect_in(Some(schema))?;
        Ok(PgSql {
            w,
            mode: QueryMode::Prepared,
            stmts: Vec::new(),
        })
    }
}

/// Why `-M simple` has no pipelines: the simple protocol answers each query before the next
/// (pgbench refuses a pipeline with `-M simple` too).
const SIMPLE_NO_PIPELINES: &str =
    "pipelines need the extended protocol: give -M prepared or -M extended, not -M simple";

/// `parts` joined by `$1`, `$2`…
fn numbered(parts: &[String]) -> String {
    let mut sql = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            sql.push_str(&format!("${i}"));
        }
        sql.push_str(p);
    }
    sql
}

impl SqlSession for PgSql {
    fn dialect(&self) -> engine::driver::Dialect {
        engine::driver::Dialect::Postgres
    }

    fn set_query_mode(&mut self, mode: QueryMode) -> Result<(), String> {
        self.mode = mode;
        Ok(())
    }

    fn prepare(&mut self, parts: &[String]) -> Result<usize, OpError> {
        let stmt = match self.mode {
            QueryMode::Prepared => Stmt::Named(self.w.prepare(&numbered(parts))?),
            QueryMode::Extended => Stmt::Unnamed(numbered(parts)),
            QueryMode::Simple => Stmt::Simple(parts.to_vec()),
        };
        self.stmts.push(stmt);
        Ok(self.stmts.len() - 1)
    }

    fn execute(
        &mut self,
        stmt: usize,
        params: &[SqlParam<'_>],
        row: Option<&mut engine::driver::EachSqlRow<'_>>,
    ) -> Result<u64, OpError> {
        match &self.stmts[stmt] {
            Stmt::Named(p) => self.w.execute(p, params, row),
            Stmt::Unnamed(sql) => self.w.execute_unnamed(sql, params, row),
            Stmt::Simple(parts) => self.w.simple(parts, params, row),
        }
    }

    fn batch(&mut self, sql: &str) -> Result<(), OpError> {
        self.w.batch(sql)
    }

    fn set_timeout(&mut self, d: std::time::Duration) {
        self.w.set_timeout(d);
    }

    fn in_transaction(&self) -> bool {
        !self.w.idle()
    }

    fn usable(&self) -> bool {
        self.w.usable()
    }

    fn copy_in(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> bool,
    ) -> Result<u64, OpError> {
        self.w.copy_in(sql, fill)
    }

    fn pipelines(&self) -> Result<(), &'static str> {
        match self.mode {
            QueryMode::Simple => Err(SIMPLE_NO_PIPELINES),
            _ => Ok(()),
        }
    }

    fn start_pipeline(&mut self) -> Result<(), OpError> {
        self.w.start_pipeline();
        Ok(())
    }

    fn queue(&mut self, stmt: usize, params: &[SqlParam<'_>]) -> Result<(), OpError> {
        match &self.stmts[stmt] {
            Stmt::Named(p) => self.w.queue(p, params),
            Stmt::Unnamed(sql) => self.w.queue_unnamed(sql, params),
            Stmt::Simple(_) => {
                return Err(OpError::new(ErrorClass::Application, SIMPLE_NO_PIPELINES));
            }
        }
        Ok(())
    }

    fn sync_segment(&mut self) -> Result<(), OpError> {
        self.w.sync_segment()
    }

    fn end_pipeline(&mut self, done: &mut dyn FnMut(usize)) -> Result<(), (usize, OpError)> {
        self.w.end_pipeline(done)
    }
}
