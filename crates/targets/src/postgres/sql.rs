//! `postgres://` for the `sql` suite: a session in dyno's schema (its `search_path`), prepared
//! statements with parameters sent as text for the server to read as the types it infers (as
//! pgbench's `-M prepared` does), and each row's columns read back as text.

use super::*;
use engine::driver::{SqlParam, SqlSession};
use tokio_postgres::types::{Format, FromSql, IsNull, ToSql, Type};

/// A parameter sent in text format, whatever type the server gave its placeholder.
#[derive(Debug)]
struct Text<'a>(SqlParam<'a>);

impl ToSql for Text<'_> {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            SqlParam::Null => Ok(IsNull::Yes),
            SqlParam::Int(i) => {
                use std::fmt::Write;
                write!(out, "{i}")?;
                Ok(IsNull::No)
            }
            SqlParam::Text(s) => {
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
        }
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    fn encode_format(&self, _: &Type) -> Format {
        Format::Text
    }
    tokio_postgres::types::to_sql_checked!();
}

/// A column read as text, as pgbench's `\gset` stores it.
struct AsText(Option<String>);

impl<'a> FromSql<'a> for AsText {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let text = match *ty {
            Type::INT2 => i16::from_sql(ty, raw)?.to_string(),
            Type::INT4 => i32::from_sql(ty, raw)?.to_string(),
            Type::INT8 => i64::from_sql(ty, raw)?.to_string(),
            Type::FLOAT4 => f32::from_sql(ty, raw)?.to_string(),
            Type::FLOAT8 => f64::from_sql(ty, raw)?.to_string(),
            Type::BOOL => if bool::from_sql(ty, raw)? { "t" } else { "f" }.to_string(),
            Type::OID => u32::from_sql(ty, raw)?.to_string(),
            _ if <&str as FromSql>::accepts(ty) => <&str>::from_sql(ty, raw)?.to_string(),
            _ => {
                return Err(format!(
                    "a {ty} column: dyno reads integer, float, boolean and text columns"
                )
                .into());
            }
        };
        Ok(AsText(Some(text)))
    }
    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(AsText(None))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

pub(super) struct PgSql {
    c: Conn,
    stmts: Vec<Statement>,
}

impl PgSql {
    /// A session of `config`'s server working in `schema`.
    pub(super) fn open(config: &Config, schema: &str) -> Result<PgSql, OpError> {
        let mut c = config.connect()?;
        let sql = format!("SET search_path TO {schema}");
        (c.drive).run("SET search_path", c.client.batch_execute(&sql))?;
        Ok(PgSql {
            c,
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
        let c = &mut self.c;
        let stmt = (c.drive).run("prepare", c.client.prepare(&sql))?;
        self.stmts.push(stmt);
        Ok(self.stmts.len() - 1)
    }

    fn execute(
        &mut self,
        stmt: usize,
        params: &[SqlParam<'_>],
        row: Option<&mut dyn FnMut(&engine::driver::SqlRow<'_>)>,
    ) -> Result<u64, OpError> {
        let stmt = &self.stmts[stmt];
        let texts: Vec<Text<'_>> = params.iter().map(|p| Text(*p)).collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            texts.iter().map(|t| t as &(dyn ToSql + Sync)).collect();
        let c = &mut self.c;
        if stmt.columns().is_empty() {
            return (c.drive).run("execute", c.client.execute(stmt, &refs));
        }
        let rows = (c.drive).run("query", c.client.query(stmt, &refs))?;
        let Some(row) = row else {
            return Ok(rows.len() as u64);
        };
        let names: Vec<&str> = stmt.columns().iter().map(|c| c.name()).collect();
        let mut values: Vec<AsText> = Vec::with_capacity(names.len());
        for r in &rows {
            values.clear();
            for i in 0..names.len() {
                values.push(
                    r.try_get::<_, AsText>(i)
                        .map_err(|e| op_err("reading a row", e))?,
                );
            }
            let cols: Vec<(&str, Option<&str>)> = names
                .iter()
                .zip(&values)
                .map(|(n, v)| (*n, v.0.as_deref()))
                .collect();
            row(&cols);
        }
        Ok(rows.len() as u64)
    }

    fn batch(&mut self, sql: &str) -> Result<(), OpError> {
        let c = &mut self.c;
        (c.drive).run("batch", c.client.batch_execute(sql))
    }
}
