//! `postgres://` for the `sql` suite: a session in dyno's schema (its `search_path`) on dyno's
//! own wire ([`wire`](super::wire)), prepared statements with parameters sent as text for the
//! server to read as the types it infers (as pgbench's `-M prepared` does), and each row's
//! columns read back as text.

use super::wire::{Prepared, Wire};
use super::*;
use engine::driver::{SqlParam, SqlSession};

pub(super) struct PgSql {
    w: Wire,
    stmts: Vec<Prepared>,
}

impl PgSql {
    /// A session of `config`'s server working in `schema`.
    pub(super) fn open(config: &Config, schema: &str) -> Result<PgSql, OpError> {
        let w = config.connect_in(Some(schema))?;
        Ok(PgSql {
            w,
            stmts: Vec::new(),
        })
    }
}

impl SqlSession for PgSql {
    fn dialect(&self) -> engine::driver::Dialect {
        engine::driver::Dialect::Postgres
    }
    fn prepare(&mut self, parts: &[String]) -> Result<usize, OpError> {
        let mut sql = String::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                sql.push_str(&format!("${i}"));
            }
            sql.push_str(p);
        }
        let stmt = self.w.prepare(&sql)?;
        self.stmts.push(stmt);
        Ok(self.stmts.len() - 1)
    }

    fn execute(
        &mut self,
        stmt: usize,
        params: &[SqlParam<'_>],
        row: Option<&mut dyn FnMut(&engine::driver::SqlRow<'_>)>,
    ) -> Result<u64, OpError> {
        self.w.execute(&self.stmts[stmt], params, row)
    }

    fn batch(&mut self, sql: &str) -> Result<(), OpError> {
        self.w.batch(sql)
    }

    fn pipelines(&self) -> bool {
        true
    }

    fn start_pipeline(&mut self) -> Result<(), OpError> {
        self.w.start_pipeline();
        Ok(())
    }

    fn queue(&mut self, stmt: usize, params: &[SqlParam<'_>]) -> Result<(), OpError> {
        self.w.queue(&self.stmts[stmt], params);
        Ok(())
    }

    fn sync_segment(&mut self) -> Result<(), OpError> {
        self.w.sync_segment()
    }

    fn end_pipeline(&mut self, done: &mut dyn FnMut(usize)) -> Result<(), (usize, OpError)> {
        self.w.end_pipeline(done)
    }
}
