//! pgbench's initialisation (`pgbench -i -s SCALE`), in dyno's own schema or database: its four
//! tables, as pgbench creates them (its `-F` fillfactor, `--unlogged-tables` and `--partitions`
//! of `pgbench_accounts` by range or hash on PostgreSQL; InnoDB on MySQL, which partitions too),
//! loaded with `SCALE` branches, 10 tellers and 100,000 accounts per branch, every balance 0 and
//! the history empty; then the primary keys, pgbench's foreign keys if asked
//! (`--foreign-keys`), and the planner's statistics.

use engine::driver::{Dialect, ErrorClass, OpError, SqlSession};
use engine::plan::{Kind, PlanError, RawPlan, Setting};

const HEADING: Option<&str> = Some("SQL suite (pgbench)");

pub static FILLFACTOR: Setting = Setting {
    key: "fillfactor",
    short: Some('F'),
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "SQL: the fillfactor of pgbench's accounts, tellers and branches, 10 to 100 (pgbench's -F; PostgreSQL only) [default: 100].",
    heading: HEADING,
};

pub static PARTITIONS: Setting = Setting {
    key: "partitions",
    short: None,
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "SQL: pgbench_accounts made of this many partitions (pgbench's --partitions) [default: 0, none].",
    heading: HEADING,
};

pub static PARTITION_METHOD: Setting = Setting {
    key: "partition_method",
    short: None,
    aliases: &[],
    kind: Kind::Text,
    value_name: "range|hash",
    help: "SQL: how --partitions splits pgbench_accounts by aid (pgbench's --partition-method): range, equal runs of ids, or hash [default: range].",
    heading: HEADING,
};

pub static UNLOGGED_TABLES: Setting = Setting {
    key: "unlogged_tables",
    short: None,
    aliases: &[],
    kind: Kind::Flag,
    value_name: "",
    help: "SQL: pgbench's tables made UNLOGGED, their writes kept out of the write-ahead log (pgbench's --unlogged-tables; PostgreSQL only).",
    heading: HEADING,
};

pub static FOREIGN_KEYS: Setting = Setting {
    key: "foreign_keys",
    short: None,
    aliases: &[],
    kind: Kind::Flag,
    value_name: "",
    help: "SQL: pgbench's foreign keys between its tables, added after the load (pgbench's --foreign-keys), so every write checks them.",
    heading: HEADING,
};

pub static VACUUM: Setting = Setting {
    key: "vacuum",
    short: None,
    aliases: &[],
    kind: Kind::Flag,
    value_name: "",
    help: "SQL: vacuum pgbench's branches and tellers before each repetition after the first, as pgbench vacuums them before a run; --no-vacuum leaves each repetition the tables as the last left them (pgbench's -n; PostgreSQL only) [default: on].",
    heading: HEADING,
};

pub static VACUUM_ALL: Setting = Setting {
    key: "vacuum_all",
    short: None,
    aliases: &[],
    kind: Kind::Flag,
    value_name: "",
    help: "SQL: vacuum pgbench's accounts and history too (pgbench's -v; PostgreSQL only).",
    heading: HEADING,
};

/// What is vacuumed before each repetition after the first (the first runs on tables just
/// made, vacuumed and analysed), as pgbench vacuums before each run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vacuum {
    /// `--no-vacuum` (pgbench's `-n`).
    Off,
    /// pgbench's default: the small tables every tpcb-like transaction updates.
    BranchesTellers,
    /// `--vacuum-all` (pgbench's `-v`): the four tables.
    All,
}

impl Vacuum {
    /// What a plan asks for; refused where no pgbench tables are made, or both off and all.
    pub fn resolve(raw: &RawPlan, made: bool) -> Result<Vacuum, PlanError> {
        let (on, all) = (raw.settings.flag(&VACUUM), raw.settings.flag(&VACUUM_ALL));
        if let Some(at) = (on.as_ref().or(all.as_ref()))
            .map(|v| v.at.clone())
            .filter(|_| !made)
        {
            return Err(PlanError::new(
                at,
                "vacuum and vacuum_all act on pgbench's tables, which none of this run's scripts uses",
            )
            .hint("run a pgbench script (-b tpcb-like, select-only… or --script), or leave the setting out"));
        }
        let all = all.filter(|a| a.value);
        match (on.map(|o| o.value), all) {
            (Some(false), Some(a)) => Err(PlanError::new(
                a.at,
                "vacuum_all asks for a vacuum that --no-vacuum turns off",
            )
            .hint("give one of --no-vacuum (pgbench's -n) and --vacuum-all (its -v)")),
            (Some(false), None) => Ok(Vacuum::Off),
            (_, Some(_)) => Ok(Vacuum::All),
            (_, None) => Ok(Vacuum::BranchesTellers),
        }
    }

    /// The statement, on PostgreSQL (MySQL has no vacuum).
    pub fn statement(self) -> Option<&'static str> {
        match self {
            Vacuum::Off => None,
            Vacuum::BranchesTellers => Some("vacuum pgbench_branches, pgbench_tellers"),
            Vacuum::All => {
                Some("vacuum pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history")
            }
        }
    }

    /// As the run's record keeps it.
    pub fn name(self) -> &'static str {
        match self {
            Vacuum::Off => "off",
            Vacuum::BranchesTellers => "branches and tellers",
            Vacuum::All => "all",
        }
    }
}

/// How pgbench's tables are made: `pgbench -i`'s options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub fillfactor: u32,
    /// Partitions of `pgbench_accounts` (0: a table of its own), by hash or else by range.
    pub partitions: u32,
    pub hash: bool,
    pub unlogged: bool,
    pub foreign_keys: bool,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            fillfactor: 100,
            partitions: 0,
            hash: false,
            unlogged: false,
            foreign_keys: false,
        }
    }
}

impl Shape {
    /// The shape a plan asks for, checked as pgbench checks it; asked for where no pgbench
    /// tables are made (`made` false: only sysbench's built-ins run), it is refused.
    pub fn resolve(raw: &RawPlan, made: bool) -> Result<Shape, PlanError> {
        let s = &raw.settings;
        let given = (s.int(&FILLFACTOR).map(|v| v.at))
            .or_else(|| s.int(&PARTITIONS).map(|v| v.at))
            .or_else(|| s.text(&PARTITION_METHOD).map(|v| v.at))
            .or_else(|| s.flag(&UNLOGGED_TABLES).map(|v| v.at))
            .or_else(|| s.flag(&FOREIGN_KEYS).map(|v| v.at));
        if let Some(at) = given.filter(|_| !made) {
            return Err(PlanError::new(
                at,
                "fillfactor, partitions, partition_method, unlogged_tables and foreign_keys shape pgbench's tables, which none of this run's scripts uses",
            )
            .hint("run a pgbench script (-b tpcb-like, select-only… or --script), or leave the setting out"));
        }
        let mut shape = Shape::default();
        if let Some(f) = raw.settings.int(&FILLFACTOR) {
            if !(10..=100).contains(&f.value) {
                return Err(PlanError::new(
                    f.at,
                    format!("fillfactor must be 10 to 100, got {}", f.value),
                ));
            }
            shape.fillfactor = f.value as u32;
        }
        if let Some(p) = raw.settings.int(&PARTITIONS) {
            if !(0..=MAX_PARTITIONS).contains(&p.value) {
                return Err(PlanError::new(
                    p.at,
                    format!("partitions must be 0 to {MAX_PARTITIONS}, got {}", p.value),
                ));
            }
            shape.partitions = p.value as u32;
        }
        if let Some(m) = raw.settings.text(&PARTITION_METHOD) {
            shape.hash = match m.value.trim().to_ascii_lowercase().as_str() {
                "range" => false,
                "hash" => true,
                _ => {
                    return Err(PlanError::new(
                        m.at.clone(),
                        format!("no partition method {:?}", m.value),
                    )
                    .hint("write range or hash"));
                }
            };
            if shape.partitions == 0 {
                return Err(PlanError::new(
                    m.at.clone(),
                    "partition_method needs partitions above 0",
                )
                .hint("give --partitions N, as pgbench's --partition-method needs"));
            }
        }
        shape.unlogged = raw.settings.flag(&UNLOGGED_TABLES).is_some_and(|f| f.value);
        shape.foreign_keys = raw.settings.flag(&FOREIGN_KEYS).is_some_and(|f| f.value);
        Ok(shape)
    }

    /// As the run's record keeps it.
    pub fn record(&self) -> serde_json::Value {
        serde_json::json!({
            "fillfactor": self.fillfactor,
            "partitions": self.partitions,
            "partition_method": (self.partitions > 0).then_some(if self.hash { "hash" } else { "range" }),
            "unlogged_tables": self.unlogged,
            "foreign_keys": self.foreign_keys,
        })
    }
}

/// The most partitions `--partitions` may ask for (each is a table the server keeps).
const MAX_PARTITIONS: i64 = 10_000;

/// pgbench's foreign keys: the table, its column, and the table it references.
const FOREIGN: [(&str, &str, &str); 5] = [
    ("pgbench_tellers", "bid", "pgbench_branches"),
    ("pgbench_accounts", "bid", "pgbench_branches"),
    ("pgbench_history", "bid", "pgbench_branches"),
    ("pgbench_history", "tid", "pgbench_tellers"),
    ("pgbench_history", "aid", "pgbench_accounts"),
];

/// Accounts per branch, tellers per branch: pgbench's.
pub const ACCOUNTS: u64 = 100_000;
pub const TELLERS: u64 = 10;

/// Rows per `INSERT` where the server cannot make them itself.
const ROWS_PER_INSERT: u64 = 5_000;

/// The tables, in the order pgbench creates them; `{with}` is the table options.
const TABLES: [(&str, &str); 4] = [
    (
        "pgbench_history",
        "tid int, bid int, aid int, delta int, mtime timestamp, filler char(22)",
    ),
    (
        "pgbench_tellers",
        "tid int not null, bid int, tbalance int, filler char(84)",
    ),
    (
        "pgbench_accounts",
        "aid int not null, bid int, abalance int, filler char(84)",
    ),
    (
        "pgbench_branches",
        "bid int not null, bbalance int, filler char(88)",
    ),
];

/// The scale from which pgbench's account ids are `bigint` (pgbench's `SCALE_32BIT_THRESHOLD`):
/// 100,000 accounts a scale pass 2^31 near 21,475.
const BIGINT_FROM: u64 = 20_000;

/// A table's `columns` at `scale`: `aid` a `bigint` from [`BIGINT_FROM`] on, as pgbench makes it.
fn wide(columns: &str, scale: u64) -> String {
    if scale < BIGINT_FROM {
        return columns.to_string();
    }
    columns.replacen("aid int", "aid bigint", 1)
}

/// Creates pgbench's tables in `shape` for `scale`, as pgbench creates them.
fn create(session: &mut dyn SqlSession, scale: u64, shape: &Shape) -> Result<(), OpError> {
    let dialect = session.dialect();
    let refused = |why: &'static str| Err(OpError::new(ErrorClass::Application, why));
    if dialect == Dialect::MySql && shape.fillfactor != 100 {
        return refused(
            "-F (fillfactor) is PostgreSQL's: InnoDB keeps no fillfactor of a table's own",
        );
    }
    if dialect == Dialect::MySql && shape.unlogged {
        return refused("--unlogged-tables is PostgreSQL's: MySQL has no unlogged tables");
    }
    let method = if shape.hash { "hash" } else { "range" };
    // Partition p's ids by range, as pgbench bounds them: from, to (not included), runs of
    // equal size, the first and last open-ended. Both servers write them so.
    let size = (ACCOUNTS * scale).div_ceil(u64::from(shape.partitions.max(1)));
    let bound = |p: u32| (p as u64 * size + 1).to_string();
    let range = |p: u32| {
        let from = if p == 1 {
            "minvalue".into()
        } else {
            bound(p - 1)
        };
        let to = if p == shape.partitions {
            "maxvalue".into()
        } else {
            bound(p)
        };
        (from, to)
    };
    for (name, columns) in TABLES {
        let columns = &wide(columns, scale);
        let partitioned = shape.partitions > 0 && name == "pgbench_accounts";
        let sql = match dialect {
            Dialect::Postgres => {
                // As pgbench 17: unlogged only without partitions (then each partition is).
                let unlogged = if shape.unlogged && shape.partitions == 0 {
                    " unlogged"
                } else {
                    ""
                };
                let options = match name {
                    _ if partitioned => format!(" partition by {method} (aid)"),
                    "pgbench_history" => String::new(),
                    _ => format!(" with (fillfactor={})", shape.fillfactor),
                };
                format!("create{unlogged} table {name}({columns}){options}")
            }
            Dialect::MySql if partitioned && shape.hash => format!(
                "create table {name}({columns}) ENGINE=InnoDB partition by hash (aid) partitions {}",
                shape.partitions
            ),
            Dialect::MySql if partitioned => {
                let parts: Vec<String> = (1..=shape.partitions)
                    .map(|p| format!("partition p{p} values less than ({})", range(p).1))
                    .collect();
                format!(
                    "create table {name}({columns}) ENGINE=InnoDB partition by range (aid) ({})",
                    parts.join(", ")
                )
            }
            Dialect::MySql => format!("create table {name}({columns}) ENGINE=InnoDB"),
        };
        session.batch(&sql)?;
    }
    if dialect == Dialect::MySql {
        return Ok(());
    }
    for p in 1..=shape.partitions {
        let unlogged = if shape.unlogged { " unlogged" } else { "" };
        let values = match (shape.hash, range(p)) {
            (true, _) => format!("with (modulus {}, remainder {})", shape.partitions, p - 1),
            (false, (from, to)) => format!("from ({from}) to ({to})"),
        };
        session.batch(&format!(
            "create{unlogged} table pgbench_accounts_{p} partition of pgbench_accounts for values {values} with (fillfactor={})",
            shape.fillfactor
        ))?;
    }
    Ok(())
}

/// Creates and loads pgbench's tables in `shape` for `scale` on `session`.
pub fn init(session: &mut dyn SqlSession, scale: u64, shape: &Shape) -> Result<(), OpError> {
    create(session, scale, shape)?;
    let accounts = ACCOUNTS * scale;
    match session.dialect() {
        Dialect::Postgres => {
            load(session, scale, shape)?;
            // As `pgbench -i` does (its step `v`, before the keys): the rows' hint bits and
            // visibility set before the run, not by its first transactions; only dyno's tables
            // (an unqualified `analyze` would go through every table of the database).
            session.batch(
                "vacuum analyze pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history",
            )?;
            keys(session, shape)
        }
        Dialect::MySql => {
            insert_rows(session, "pgbench_branches(bid, bbalance)", scale, |b| {
                format!("({b}, 0)")
            })?;
            insert_rows(
                session,
                "pgbench_tellers(tid, bid, tbalance)",
                TELLERS * scale,
                |t| format!("({t}, {}, 0)", (t - 1) / TELLERS + 1),
            )?;
            insert_rows(
                session,
                "pgbench_accounts(aid, bid, abalance, filler)",
                accounts,
                |a| format!("({a}, {}, 0, '')", (a - 1) / ACCOUNTS + 1),
            )?;
            // InnoDB rebuilds a table when its primary key is added: the statistics after.
            keys(session, shape)?;
            session.batch(
                "analyze table pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history",
            )
        }
    }
}

/// pgbench's primary keys, and its foreign keys if asked.
fn keys(session: &mut dyn SqlSession, shape: &Shape) -> Result<(), OpError> {
    for (table, key) in [
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
        ("pgbench_accounts", "aid"),
    ] {
        session.batch(&format!("alter table {table} add primary key ({key})"))?;
    }
    if shape.foreign_keys {
        for (table, column, referenced) in FOREIGN {
            session.batch(&format!(
                "alter table {table} add constraint {table}_{column}_fkey foreign key ({column}) references {referenced} ({column})"
            ))?;
        }
    }
    Ok(())
}

/// Loads pgbench's rows on PostgreSQL as `pgbench -i` does by default (its step `g`): in one
/// transaction that first empties the tables, each table `COPY`'d from the client, `FREEZE`
/// where the table is an ordinary one (not partitioned). Its rows are then frozen and its pages
/// written as they filled (COPY's ring of buffers), where an `INSERT … SELECT` from
/// `generate_series` (pgbench's step `G`) leaves the rows unfrozen and the whole table dirty in
/// the server's buffers: pgbench's own `select-only` ran at 0.987× the rate after `G` (ten
/// alternating rounds of 8 s at scale 8, 2026-11-29; `docs/src/measurements/sql.md`).
fn load(session: &mut dyn SqlSession, scale: u64, shape: &Shape) -> Result<(), OpError> {
    session.batch("begin")?;
    let loaded = (|| {
        session.batch(
            "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
        )?;
        let freeze = " with (freeze on)";
        copy_rows(session, "pgbench_branches", freeze, scale, |out, b| {
            decimal(out, b);
            out.extend_from_slice(b"\t0\t\\N\n");
        })?;
        copy_rows(
            session,
            "pgbench_tellers",
            freeze,
            TELLERS * scale,
            |out, t| {
                decimal(out, t);
                out.push(b'\t');
                decimal(out, (t - 1) / TELLERS + 1);
                out.extend_from_slice(b"\t0\t\\N\n");
            },
        )?;
        let freeze = if shape.partitions == 0 { freeze } else { "" };
        copy_rows(
            session,
            "pgbench_accounts",
            freeze,
            ACCOUNTS * scale,
            |out, a| {
                decimal(out, a);
                out.push(b'\t');
                decimal(out, (a - 1) / ACCOUNTS + 1);
                out.extend_from_slice(b"\t0\t\n");
            },
        )?;
        session.batch("commit")
    })();
    if loaded.is_err() {
        let _ = session.batch("rollback");
    }
    loaded
}

/// Bytes of rows per CopyData message.
const COPY_CHUNK: usize = 64 * 1024;

/// Copies rows 1..=`count` of `table`, each written by `row` (a line of COPY's text format).
fn copy_rows(
    session: &mut dyn SqlSession,
    table: &str,
    options: &str,
    count: u64,
    row: impl Fn(&mut Vec<u8>, u64),
) -> Result<(), OpError> {
    let mut next = 1;
    let copied = session.copy_in(&format!("copy {table} from stdin{options}"), &mut |out| {
        let start = out.len();
        while next <= count && out.len() - start < COPY_CHUNK {
            row(out, next);
            next += 1;
        }
        next <= count
    })?;
    if copied != count {
        return Err(OpError::new(
            ErrorClass::Application,
            format!("copying {table}: the server took {copied} rows of {count}"),
        ));
    }
    Ok(())
}

/// `n` in decimal at the end of `out`: a row's numbers (800,000 rows at scale 8; `write!`
/// took several times as long).
fn decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Inserts rows 1..=`count` of `table`, each written by `row`, in statements of
/// [`ROWS_PER_INSERT`].
fn insert_rows(
    session: &mut dyn SqlSession,
    table: &str,
    count: u64,
    row: impl Fn(u64) -> String,
) -> Result<(), OpError> {
    let mut first = 1;
    while first <= count {
        let last = (first + ROWS_PER_INSERT - 1).min(count);
        let values: Vec<String> = (first..=last).map(&row).collect();
        session.batch(&format!("insert into {table} values {}", values.join(", ")))?;
        first = last + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// From pgbench's threshold on, the account ids (in the accounts and the history) are
    /// bigint, the rest as below it.
    #[test]
    fn account_ids_are_bigint_from_pgbenchs_threshold() {
        let at = |scale| TABLES.map(|(name, c)| (name, wide(c, scale)));
        for (name, c) in at(BIGINT_FROM - 1) {
            assert!(!c.contains("bigint"), "{name}: {c}");
        }
        for (name, c) in at(BIGINT_FROM) {
            let has_aid = name == "pgbench_accounts" || name == "pgbench_history";
            assert_eq!(c.contains("aid bigint"), has_aid, "{name}: {c}");
            assert!(!c.contains("aid int"), "{name}: {c}");
        }
    }
}
