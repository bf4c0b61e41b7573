//! sysbench's OLTP workloads as built-in scripts of the `sql` suite: `oltp_point_select`,
//! `oltp_read_only`, `oltp_read_write` and `oltp_write_only`, each written as a script in
//! pgbench's language from sysbench's options (its query mix, per transaction, with the table
//! drawn per group of queries as sysbench draws it), and its tables `sbtest1..N` (id, k, c, pad)
//! made as `sysbench prepare` makes them. Its `--rand-type` distributions are the script
//! functions `sb_uniform`, `sb_gaussian`, `sb_special`, `sb_pareto` and `sb_zipfian`
//! (in `random`), its `#`-templates `random_digits`.

use super::random::Prng;
use super::random::sysbench::{Params, digits, draw};
use super::script::{self, Script};
use engine::driver::{Dialect, OpError, SqlSession};
use engine::plan::{Kind, PlanError, RawPlan, Setting};

const HEADING: Option<&str> = Some("SQL suite (sysbench)");

const fn setting(key: &'static str, kind: Kind, help: &'static str) -> Setting {
    Setting {
        key,
        short: None,
        aliases: &[],
        kind,
        value_name: "",
        help,
        heading: HEADING,
    }
}

pub static TABLES: Setting = setting(
    "tables",
    Kind::Int,
    "SQL (sysbench): how many tables sbtest1..N the oltp_* built-ins use [default: 1].",
);
pub static TABLE_SIZE: Setting = setting(
    "table_size",
    Kind::Int,
    "SQL (sysbench): rows per sbtest table [default: 10000].",
);
pub static RANGE_SIZE: Setting = setting(
    "range_size",
    Kind::Int,
    "SQL (sysbench): rows per range SELECT [default: 100].",
);
pub static POINT_SELECTS: Setting = setting(
    "point_selects",
    Kind::Int,
    "SQL (sysbench): point SELECTs per transaction [default: 10; 1 in oltp_point_select].",
);
pub static SIMPLE_RANGES: Setting = setting(
    "simple_ranges",
    Kind::Int,
    "SQL (sysbench): simple range SELECTs per transaction [default: 1].",
);
pub static SUM_RANGES: Setting = setting(
    "sum_ranges",
    Kind::Int,
    "SQL (sysbench): SELECT SUM() over a range per transaction [default: 1].",
);
pub static ORDER_RANGES: Setting = setting(
    "order_ranges",
    Kind::Int,
    "SQL (sysbench): range SELECTs with ORDER BY per transaction [default: 1].",
);
pub static DISTINCT_RANGES: Setting = setting(
    "distinct_ranges",
    Kind::Int,
    "SQL (sysbench): range SELECT DISTINCTs per transaction [default: 1].",
);
pub static INDEX_UPDATES: Setting = setting(
    "index_updates",
    Kind::Int,
    "SQL (sysbench): UPDATEs of the indexed column k per transaction [default: 1].",
);
pub static NON_INDEX_UPDATES: Setting = setting(
    "non_index_updates",
    Kind::Int,
    "SQL (sysbench): UPDATEs of the column c per transaction [default: 1].",
);
pub static DELETE_INSERTS: Setting = setting(
    "delete_inserts",
    Kind::Int,
    "SQL (sysbench): DELETE and INSERT pairs per transaction [default: 1].",
);
pub static RANGE_SELECTS: Setting = setting(
    "range_selects",
    Kind::Text,
    "SQL (sysbench): on or off: whether the oltp_* built-ins run their range SELECTs [default: on].",
);
pub static SKIP_TRX: Setting = setting(
    "skip_trx",
    Kind::Text,
    "SQL (sysbench): on or off: on runs every query on its own (autocommit), without BEGIN and COMMIT [default: off].",
);
pub static AUTO_INC: Setting = setting(
    "auto_inc",
    Kind::Text,
    "SQL (sysbench): on or off: on makes id an AUTO_INCREMENT (PostgreSQL: SERIAL) column filled by the server as the tables are made; off, a plain integer column given its ids [default: on].",
);
pub static CREATE_SECONDARY: Setting = setting(
    "create_secondary",
    Kind::Text,
    "SQL (sysbench): on or off: whether each table gets its secondary index k_N on k [default: on].",
);
pub static SECONDARY: Setting = setting(
    "secondary",
    Kind::Text,
    "SQL (sysbench): on or off: on indexes id with a secondary index in place of the primary key (sysbench's --secondary) [default: off].",
);
pub static RAND_TYPE: Setting = Setting {
    value_name: "special|uniform|gaussian|pareto|zipfian",
    ..setting(
        "rand_type",
        Kind::Text,
        "SQL (sysbench): how the oltp_* built-ins draw row ids, as sysbench's --rand-type [default: special].",
    )
};

pub static RAND_SPEC_ITER: Setting = setting(
    "rand_spec_iter",
    Kind::Int,
    "SQL (sysbench): the iterations of the special and gaussian distributions' bell, as sysbench's --rand-spec-iter [default: 12].",
);
pub static RAND_SPEC_PCT: Setting = setting(
    "rand_spec_pct",
    Kind::Number,
    "SQL (sysbench): the percent of the ids the special distribution favours, as sysbench's --rand-spec-pct [default: 1].",
);
pub static RAND_SPEC_RES: Setting = setting(
    "rand_spec_res",
    Kind::Number,
    "SQL (sysbench): the percent of the special distribution's draws on those ids, as sysbench's --rand-spec-res [default: 75].",
);
pub static RAND_PARETO_H: Setting = setting(
    "rand_pareto_h",
    Kind::Number,
    "SQL (sysbench): the pareto distribution's h, between 0 and 1, as sysbench's --rand-pareto-h [default: 0.2].",
);
pub static RAND_ZIPFIAN_EXP: Setting = setting(
    "rand_zipfian_exp",
    Kind::Number,
    "SQL (sysbench): the zipfian distribution's exponent, as sysbench's --rand-zipfian-exp (of its releases after 1.0.20) [default: 0.8].",
);

/// sysbench's settings, in the order `--help` shows them.
pub static SETTINGS: &[&Setting] = &[
    &TABLES,
    &TABLE_SIZE,
    &RANGE_SIZE,
    &POINT_SELECTS,
    &SIMPLE_RANGES,
    &SUM_RANGES,
    &ORDER_RANGES,
    &DISTINCT_RANGES,
    &INDEX_UPDATES,
    &NON_INDEX_UPDATES,
    &DELETE_INSERTS,
    &RANGE_SELECTS,
    &SKIP_TRX,
    &AUTO_INC,
    &SECONDARY,
    &CREATE_SECONDARY,
    &RAND_TYPE,
    &RAND_SPEC_ITER,
    &RAND_SPEC_PCT,
    &RAND_SPEC_RES,
    &RAND_PARETO_H,
    &RAND_ZIPFIAN_EXP,
];

/// Refuses sysbench's settings where none of the run's scripts is one of sysbench's built-ins,
/// at the first one's place: they would shape nothing.
pub fn unused(raw: &RawPlan) -> Result<(), PlanError> {
    let mut given = (raw.settings.entries()).filter(|(k, _)| SETTINGS.iter().any(|s| s.key == *k));
    match given.next() {
        None => Ok(()),
        Some((key, v)) => Err(PlanError::new(
            v.at.clone(),
            format!("{key} is sysbench's: it shapes sysbench's tables or mix, which none of this run's scripts uses"),
        )
        .hint("run one of sysbench's built-ins (-b oltp_read_write, oltp_point_select…), or leave the setting out")),
    }
}

/// The built-ins, by name.
pub const NAMES: [&str; 4] = [
    "oltp_point_select",
    "oltp_read_only",
    "oltp_read_write",
    "oltp_write_only",
];

/// sysbench's options for its OLTP scripts.
#[derive(Debug, Clone, PartialEq)]
pub struct Oltp {
    pub tables: u64,
    pub table_size: u64,
    pub range_size: u64,
    pub point_selects: u64,
    pub simple_ranges: u64,
    pub sum_ranges: u64,
    pub order_ranges: u64,
    pub distinct_ranges: u64,
    pub index_updates: u64,
    pub non_index_updates: u64,
    pub delete_inserts: u64,
    pub range_selects: bool,
    pub skip_trx: bool,
    /// Whether id is filled by the server (`AUTO_INCREMENT`, `SERIAL`) as the tables are made.
    pub auto_inc: bool,
    /// Whether id has a secondary index in place of the primary key.
    pub secondary: bool,
    /// Whether k has its index.
    pub create_secondary: bool,
    /// The script function that draws an id (`sb_special`…), and its parameters.
    pub rand_type: &'static str,
    pub rand: Params,
    /// Whether its text values (c, pad) are written in quotes: under `-M simple` their values
    /// go into the statement's text as they are (sysbench quotes them so without prepared
    /// statements too).
    pub quoted: bool,
}

/// `--rand-spec-iter`, `--rand-spec-pct`, `--rand-spec-res`, `--rand-pareto-h` and
/// `--rand-zipfian-exp` as a plan gives them, sysbench's defaults for the rest. Each value given
/// is tried on a draw of the distribution it is for, and refused at its place, in that
/// distribution's words, where a draw would refuse it.
fn params(raw: &RawPlan) -> Result<Params, PlanError> {
    let mut p = Params::default();
    let tried = |p: &Params, function: &str, key: &str, at: &engine::plan::Origin| {
        draw(function, &mut super::random::Prng::new(1), (1, 10), p)
            .map(drop)
            .map_err(|why| PlanError::new(at.clone(), format!("{key}: {why}")))
    };
    if let Some(v) = raw.settings.int(&RAND_SPEC_ITER) {
        p.spec_iter = v.value;
        tried(&p, "sb_special", RAND_SPEC_ITER.key, &v.at)?;
    }
    type Field = fn(&mut Params) -> &mut f64;
    let fields: [(&Setting, Field, &str); 4] = [
        (&RAND_SPEC_PCT, |p| &mut p.spec_pct, "sb_special"),
        (&RAND_SPEC_RES, |p| &mut p.spec_res, "sb_special"),
        (&RAND_PARETO_H, |p| &mut p.pareto_h, "sb_pareto"),
        (&RAND_ZIPFIAN_EXP, |p| &mut p.zipfian_exp, "sb_zipfian"),
    ];
    for (s, field, function) in fields {
        let Some(v) = raw.settings.text(s) else {
            continue;
        };
        let x = v.value.trim().parse::<f64>().ok().filter(|x| x.is_finite());
        *field(&mut p) = x.ok_or_else(|| {
            PlanError::new(
                v.at.clone(),
                format!("{}: {:?} is not a number", s.key, v.value),
            )
        })?;
        tried(&p, function, s.key, &v.at)?;
    }
    Ok(p)
}

/// The distributions of `--rand-type`, and the function each is.
const RAND_TYPES: [(&str, &str); 5] = [
    ("special", "sb_special"),
    ("uniform", "sb_uniform"),
    ("gaussian", "sb_gaussian"),
    ("pareto", "sb_pareto"),
    ("zipfian", "sb_zipfian"),
];

impl Oltp {
    /// The options, for the record's plan.
    pub fn record(&self) -> serde_json::Value {
        let rand_type = RAND_TYPES.iter().find(|(_, f)| *f == self.rand_type);
        serde_json::json!({
            "tables": self.tables,
            "table_size": self.table_size,
            "range_size": self.range_size,
            "point_selects": self.point_selects,
            "simple_ranges": self.simple_ranges,
            "sum_ranges": self.sum_ranges,
            "order_ranges": self.order_ranges,
            "distinct_ranges": self.distinct_ranges,
            "index_updates": self.index_updates,
            "non_index_updates": self.non_index_updates,
            "delete_inserts": self.delete_inserts,
            "range_selects": self.range_selects,
            "skip_trx": self.skip_trx,
            "auto_inc": self.auto_inc,
            "secondary": self.secondary,
            "create_secondary": self.create_secondary,
            "rand_type": rand_type.map(|(n, _)| *n),
            "rand_spec_iter": self.rand.spec_iter,
            "rand_spec_pct": self.rand.spec_pct,
            "rand_spec_res": self.rand.spec_res,
            "rand_pareto_h": self.rand.pareto_h,
            "rand_zipfian_exp": self.rand.zipfian_exp,
        })
    }

    /// The options as a plan gives them, sysbench's defaults for the rest.
    pub fn resolve(raw: &RawPlan) -> Result<Oltp, PlanError> {
        let count = |s: &Setting, default: u64, min: i64, max: i64| match raw.settings.int(s) {
            Some(v) if !(min..=max).contains(&v.value) => Err(PlanError::new(
                v.at,
                format!("{} must be {min} to {max}, got {}", s.key, v.value),
            )),
            Some(v) => Ok(v.value as u64),
            None => Ok(default),
        };
        let switch = |s: &Setting, default: bool| match raw.settings.text(s) {
            None => Ok(default),
            Some(v) => match v.value.trim().to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" | "1" => Ok(true),
                "off" | "false" | "no" | "0" => Ok(false),
                _ => Err(PlanError::new(
                    v.at.clone(),
                    format!("{}: {:?} is not on or off", s.key, v.value),
                )
                .hint("write on or off")),
            },
        };
        let rand_type = match raw.settings.text(&RAND_TYPE) {
            None => "sb_special",
            Some(v) => (RAND_TYPES.iter())
                .find(|(name, _)| v.value.trim().eq_ignore_ascii_case(name))
                .map(|(_, f)| *f)
                .ok_or_else(|| {
                    PlanError::new(v.at.clone(), format!("no --rand-type {:?}", v.value))
                        .hint("write special, uniform, gaussian, pareto or zipfian")
                })?,
        };
        let rand = params(raw)?;
        const MANY: i64 = 1_000_000;
        Ok(Oltp {
            tables: count(&TABLES, 1, 1, 1000)?,
            table_size: count(&TABLE_SIZE, 10_000, 1, 100_000_000)?,
            range_size: count(&RANGE_SIZE, 100, 1, MANY)?,
            point_selects: count(&POINT_SELECTS, 10, 0, MANY)?,
            simple_ranges: count(&SIMPLE_RANGES, 1, 0, MANY)?,
            sum_ranges: count(&SUM_RANGES, 1, 0, MANY)?,
            order_ranges: count(&ORDER_RANGES, 1, 0, MANY)?,
            distinct_ranges: count(&DISTINCT_RANGES, 1, 0, MANY)?,
            index_updates: count(&INDEX_UPDATES, 1, 0, MANY)?,
            non_index_updates: count(&NON_INDEX_UPDATES, 1, 0, MANY)?,
            delete_inserts: count(&DELETE_INSERTS, 1, 0, MANY)?,
            range_selects: switch(&RANGE_SELECTS, true)?,
            skip_trx: switch(&SKIP_TRX, false)?,
            auto_inc: switch(&AUTO_INC, true)?,
            secondary: switch(&SECONDARY, false)?,
            create_secondary: switch(&CREATE_SECONDARY, true)?,
            rand_type,
            rand,
            quoted: super::query_mode(raw)? == engine::driver::QueryMode::Simple,
        })
    }

    /// The built-in `name` (one of [`NAMES`]) as a script: sysbench's `event()`.
    pub fn script(&self, name: &str) -> Result<Script, String> {
        let mut text = String::new();
        let (reads, ranges, writes) = match name {
            "oltp_point_select" => (1, false, false),
            "oltp_read_only" => (self.point_selects, self.range_selects, false),
            "oltp_read_write" => (self.point_selects, self.range_selects, true),
            "oltp_write_only" => (0, false, true),
            _ => return Err(format!("no sysbench built-in {name:?}")),
        };
        let trx = !self.skip_trx && name != "oltp_point_select";
        if trx {
            text.push_str("BEGIN;\n");
        }
        let id = format!("\\set id {}\n", self.rand.call(self.rand_type));
        let range = "\\set end :id + :range_size - 1\n";
        let k = format!("\\set k {}\n", self.rand.call(self.rand_type));
        let (c, pad) = (
            "\\set c random_digits(10, 11)\n",
            "\\set pad random_digits(5, 11)\n",
        );
        // Each group of queries draws its table, then an id per query (its other values as
        // sysbench draws them, in its order).
        let mut group = |n: u64, before: &str, after: &str, sql: &[&str]| {
            if n == 0 {
                return;
            }
            text.push_str("\\set t random(1, :tables)\n");
            for _ in 0..n {
                text.push_str(before);
                text.push_str(&id);
                text.push_str(after);
                for q in sql {
                    text.push_str(q);
                    text.push_str(";\n");
                }
            }
        };
        group(reads, "", "", &[POINT_SELECT]);
        if ranges {
            group(self.simple_ranges, "", range, &[SIMPLE_RANGE]);
            group(self.sum_ranges, "", range, &[SUM_RANGE]);
            group(self.order_ranges, "", range, &[ORDER_RANGE]);
            group(self.distinct_ranges, "", range, &[DISTINCT_RANGE]);
        }
        if writes {
            group(self.index_updates, "", "", &[INDEX_UPDATE]);
            let (update, insert) = match self.quoted {
                true => (NON_INDEX_UPDATE_QUOTED, INSERT_QUOTED),
                false => (NON_INDEX_UPDATE, INSERT),
            };
            group(self.non_index_updates, c, "", &[update]);
            let values = format!("{k}{c}{pad}");
            group(self.delete_inserts, "", &values, &[DELETE, insert]);
        }
        if trx {
            text.push_str("COMMIT;\n");
        }
        script::parse(name, &text)
            .map(|s| Script {
                source: script::Source::Sysbench,
                ..s
            })
            .map_err(|e| format!("built-in {name}: {}", e.message))
    }
}

/// sysbench's statements (`sbtest:t` is the table drawn), each with sysbench's own name for it.
const POINT_SELECT: &str = "SELECT c FROM sbtest:t WHERE id=:id";
const SIMPLE_RANGE: &str = "SELECT c FROM sbtest:t WHERE id BETWEEN :id AND :end";
const SUM_RANGE: &str = "SELECT SUM(k) FROM sbtest:t WHERE id BETWEEN :id AND :end";
const ORDER_RANGE: &str = "SELECT c FROM sbtest:t WHERE id BETWEEN :id AND :end ORDER BY c";
const DISTINCT_RANGE: &str =
    "SELECT DISTINCT c FROM sbtest:t WHERE id BETWEEN :id AND :end ORDER BY c";
const INDEX_UPDATE: &str = "UPDATE sbtest:t SET k=k+1 WHERE id=:id";
const NON_INDEX_UPDATE: &str = "UPDATE sbtest:t SET c=:c WHERE id=:id";
const DELETE: &str = "DELETE FROM sbtest:t WHERE id=:id";
const INSERT: &str = "INSERT INTO sbtest:t (id, k, c, pad) VALUES (:id, :k, :c, :pad)";
/// The two with text values, as `-M simple` writes them (the values in the text).
const NON_INDEX_UPDATE_QUOTED: &str = "UPDATE sbtest:t SET c=':c' WHERE id=:id";
const INSERT_QUOTED: &str = "INSERT INTO sbtest:t (id, k, c, pad) VALUES (:id, :k, ':c', ':pad')";
const LABELS: [(&str, &str); 11] = [
    (POINT_SELECT, "point_selects"),
    (SIMPLE_RANGE, "simple_ranges"),
    (SUM_RANGE, "sum_ranges"),
    (ORDER_RANGE, "order_ranges"),
    (DISTINCT_RANGE, "distinct_ranges"),
    (INDEX_UPDATE, "index_updates"),
    (NON_INDEX_UPDATE, "non_index_updates"),
    (NON_INDEX_UPDATE_QUOTED, "non_index_updates"),
    (DELETE, "deletes"),
    (INSERT, "inserts"),
    (INSERT_QUOTED, "inserts"),
];

/// sysbench's name for a statement of its built-ins (`text` as the script has it, with its `;`).
pub fn label(text: &str) -> Option<&'static str> {
    let sql = text.strip_suffix(';')?;
    LABELS.iter().find(|(q, _)| *q == sql).map(|(_, l)| *l)
}

/// A new row's k, c and pad, drawn as `sysbench prepare` draws them (c, pad, then k).
pub fn row(p: &mut Prng, o: &Oltp) -> (i64, String, String) {
    let c = digits(p, 10, 11).expect("a valid template");
    let pad = digits(p, 5, 11).expect("a valid template");
    let k = draw(o.rand_type, p, (1, o.table_size as i64), &o.rand).expect("a valid distribution");
    (k, c, pad)
}

/// Rows per `INSERT` while loading (sysbench's bulk insert writes about as many).
const ROWS_PER_INSERT: u64 = 1_000;

/// Makes and loads `sbtest1..N` as `sysbench prepare` does: ids 1..table_size, k drawn by
/// `draw_k` (sysbench's default distribution), c and pad random digits; then the index on k.
pub fn init(
    session: &mut dyn SqlSession,
    o: &Oltp,
    mut row: impl FnMut() -> (i64, String, String),
) -> Result<(), OpError> {
    let dialect = session.dialect();
    for t in 1..=o.tables {
        // As sysbench's `create_table`; PostgreSQL, which has no `KEY` in a table's
        // definition, gets the secondary index as an index of its own.
        let (id, engine) = match (dialect, o.auto_inc) {
            (Dialect::MySql, true) => ("INTEGER NOT NULL AUTO_INCREMENT", " ENGINE=InnoDB"),
            (Dialect::MySql, false) => ("INTEGER NOT NULL", " ENGINE=InnoDB"),
            (Dialect::Postgres, true) => ("SERIAL", ""),
            (Dialect::Postgres, false) => ("INTEGER NOT NULL", ""),
        };
        let key = match (dialect, o.secondary) {
            (_, false) => ", PRIMARY KEY (id)",
            (Dialect::MySql, true) => ", KEY xid (id)",
            (Dialect::Postgres, true) => "",
        };
        session.batch(&format!(
            "CREATE TABLE sbtest{t}(id {id}, k INTEGER DEFAULT '0' NOT NULL, \
             c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL{key}){engine}"
        ))?;
        if dialect == Dialect::Postgres && o.secondary {
            session.batch(&format!("CREATE INDEX xid_{t} ON sbtest{t}(id)"))?;
        }
        let mut first = 1;
        while first <= o.table_size {
            let last = (first + ROWS_PER_INSERT - 1).min(o.table_size);
            let mut sql = match o.auto_inc {
                true => format!("INSERT INTO sbtest{t}(k, c, pad) VALUES"),
                false => format!("INSERT INTO sbtest{t}(id, k, c, pad) VALUES"),
            };
            for i in first..=last {
                let (k, c, pad) = row();
                let sep = if i == first { ' ' } else { ',' };
                match o.auto_inc {
                    true => sql.push_str(&format!("{sep}({k}, '{c}', '{pad}')")),
                    false => sql.push_str(&format!("{sep}({i}, {k}, '{c}', '{pad}')")),
                }
            }
            session.batch(&sql)?;
            first = last + 1;
        }
        if o.create_secondary {
            session.batch(&format!("CREATE INDEX k_{t} ON sbtest{t}(k)"))?;
        }
    }
    // Its own tables only: an `ANALYZE` without names would reach every table of the
    // database the user may analyze, dyno's or not.
    let names: Vec<String> = (1..=o.tables).map(|t| format!("sbtest{t}")).collect();
    match dialect {
        Dialect::Postgres => session.batch(&format!("ANALYZE {}", names.join(", "))),
        Dialect::MySql => session.batch(&format!("ANALYZE TABLE {}", names.join(", "))),
    }
}

#[cfg(test)]
mod tests;
