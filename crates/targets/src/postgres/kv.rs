//! `postgres://` for the kv and graph families: a session's statements on dyno's own wire
//! ([`wire`](super::wire)), in binary both ways — a key as bigint's 8 bytes, a value as bytea's
//! own bytes, a batched read's keys as one bigint[] — and each value copied once, from the
//! reply's buffer to the caller's (a batched read's twice: its rows come in any order).

use super::message::{Bin, int8};
use super::wire::{Prepared, Row, Wire};
use crate::gather::Gathered;
use engine::driver::{ErrorClass, OpError, Session, TxMode};

pub(super) struct PgSession {
    w: Wire,
    put: Prepared,
    get: Prepared,
    get_many: Prepared,
    delete: Prepared,
    /// Keys are bigint: their order agrees with u64's below 2^63, where every YCSB key is.
    scan: Prepared,
    reads: u64,
    /// A batched read's rows.
    rows: Gathered,
}

fn not_found() -> OpError {
    OpError::new(ErrorClass::NotFound, "postgres: no such key")
}

/// A row without the columns its statement selects: a server dyno cannot read.
fn short_row() -> OpError {
    OpError::new(
        ErrorClass::Protocol,
        "postgres: a row without the key or value its statement selects",
    )
}

impl PgSession {
    /// Prepares the family's statements on `w`, in `schema`'s table.
    pub(super) fn open(mut w: Wire, schema: &str) -> Result<PgSession, OpError> {
        let s = schema;
        let mut prepare = |sql: String| w.prepare(&sql);
        let put = prepare(format!(
            "INSERT INTO {s}.objects (k, v) VALUES ($1, $2) \
             ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
        ))?;
        let get = prepare(format!("SELECT v FROM {s}.objects WHERE k = $1"))?;
        let get_many = prepare(format!("SELECT k, v FROM {s}.objects WHERE k = ANY($1)"))?;
        let delete = prepare(format!("DELETE FROM {s}.objects WHERE k = $1"))?;
        let scan = prepare(format!(
            "SELECT k, v FROM {s}.objects WHERE k >= $1 ORDER BY k LIMIT $2"
        ))?;
        Ok(PgSession {
            w,
            put,
            get,
            get_many,
            delete,
            scan,
            reads: 0,
            rows: Gathered::default(),
        })
    }
}

/// A `SELECT k, v` row's key and value.
fn key_value<'a>(row: &Row<'a>) -> Result<(u64, &'a [u8]), OpError> {
    let key = int8(row.get(0)).ok_or_else(short_row)?;
    Ok((key, row.get(1).ok_or_else(short_row)?))
}

/// Keys are u64; PostgreSQL's bigint is signed: the same 64 bits.
fn k(key: u64) -> i64 {
    key as i64
}

impl Session for PgSession {
    fn begin(&mut self, mode: TxMode) -> Result<(), OpError> {
        // A transaction a failed operation left open (or failed) ends first: in it, BEGIN would
        // only be warned about, and every statement after refused.
        if !self.w.idle() {
            self.w.batch("ROLLBACK")?;
        }
        self.w.batch(match mode {
            TxMode::Read => "BEGIN READ ONLY",
            TxMode::Write => "BEGIN",
        })
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        let params = [Bin::Int8(k(key)), Bin::Bytes(value)];
        self.w.run(&self.put, &params, None).map(drop)
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        out.clear();
        let mut found = false;
        let mut each = |row: Row<'_>| {
            found = true;
            out.extend_from_slice(row.get(0).ok_or_else(short_row)?);
            Ok(())
        };
        self.w
            .run(&self.get, &[Bin::Int8(k(key))], Some(&mut each))?;
        if found { Ok(()) } else { Err(not_found()) }
    }
    fn scan(
        &mut self,
        start: u64,
        count: usize,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), OpError> {
        self.reads += 1;
        out.clear();
        let params = [Bin::Int8(k(start)), Bin::Int8(count as i64)];
        let mut each = |row: Row<'_>| {
            let (key, v) = key_value(&row)?;
            out.push((key, v.to_vec()));
            Ok(())
        };
        self.w.run(&self.scan, &params, Some(&mut each)).map(drop)
    }
    fn get_many(
        &mut self,
        keys: &[u64],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), OpError> {
        self.reads += keys.len() as u64;
        let rows = &mut self.rows;
        rows.clear();
        let mut each = |row: Row<'_>| {
            let (key, v) = key_value(&row)?;
            rows.add(key, v);
            Ok(())
        };
        let params = [Bin::Int8s(keys)];
        self.w.run(&self.get_many, &params, Some(&mut each))?;
        out.clear();
        ends.clear();
        self.rows.place(keys, out, ends, not_found)
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        match self.w.run(&self.delete, &[Bin::Int8(k(key))], None)? {
            0 => Err(not_found()),
            _ => Ok(()),
        }
    }
    fn commit(&mut self) -> Result<(), OpError> {
        // Outside a transaction (the server says so) there is nothing to commit.
        if self.w.idle() {
            return Ok(());
        }
        self.w.batch("COMMIT")
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}
