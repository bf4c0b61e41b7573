//! The `sql` suite: pgbench's workloads, on `postgres://` and `mysql://`. Its tables are made
//! in dyno's own schema or database (pgbench's `-i`, at `--scale`), and `-c` clients run
//! pgbench scripts — the built-ins (`-b tpcb-like`, `simple-update`, `select-only`) or files
//! in pgbench's language (`--script FILE`) — each `NAME@WEIGHT` to mix them, in a closed loop
//! for `--duration` or `-t` transactions per client. Every transaction and every SQL command is
//! timed into full histograms (one row of the record's `by_op` per command); a failed
//! transaction is rolled back and counted by its class. After the run, the TPC-B invariant is
//! checked where the scripts keep it (the sums of the accounts', tellers' and branches'
//! balances equal the history's deltas). The seed of every client's generator is the plan's
//! `--seed`, so two runs issue the same statements.
//!
//! Parts: `expr` and `eval` (pgbench's `\set` expressions), `random` (its generator and random
//! functions), `script` (its script language), `client` (a client running a script on a
//! session), `init` (its tables), `session` (a client's session, opened once or per transaction,
//! and its variables), `run` (a repetition on every client).

pub mod client;
mod confine;
pub mod eval;
pub mod expr;
pub mod init;
pub mod random;
mod run;
pub mod script;
mod session;
mod shell;
pub mod sysbench;
pub(crate) mod table;

use engine::driver::Family;
use engine::plan::setting::shared;
use engine::plan::{Kind, MAX_CLIENTS, Origin, PlanError, PlanTarget, RawPlan, Setting};
use engine::suite::{Clients, Common, Param, Plan, Point, Repeat, Settings, Suite, TargetError};
use script::Script;
use std::sync::atomic::AtomicBool;

/// The suite.
pub struct Sql;

const HEADING: Option<&str> = Some("SQL suite (pgbench)");

pub static BUILTIN: Setting = Setting {
    key: "builtin",
    short: Some('b'),
    aliases: &[],
    kind: Kind::Text,
    value_name: "NAME[@WEIGHT],…",
    help: "SQL: built-in scripts to run, each with an optional weight: pgbench's tpcb-like, simple-update, select-only; sysbench's oltp_point_select, oltp_read_only, oltp_read_write, oltp_write_only (a unique prefix will do) [default: tpcb-like unless --script].",
    heading: HEADING,
};

pub static SCRIPT: Setting = Setting {
    key: "script",
    short: None,
    aliases: &[],
    kind: Kind::Text,
    value_name: "FILE[@WEIGHT],…",
    help: "SQL: script files in pgbench's language (pgbench's -f): SQL with :variables, \\set, \\sleep, \\if … \\endif, \\gset and \\aset, compound commands (\\;), \\shell and \\setshell, \\startpipeline … \\endpipeline; each with an optional weight.",
    heading: HEADING,
};

pub static DEFINE: Setting = Setting {
    key: "define",
    short: Some('D'),
    aliases: &[],
    kind: Kind::Text,
    value_name: "NAME=VALUE,…",
    help: "SQL: variables every client's scripts start with (pgbench's -D; the flag again, or commas, for more), each value text that is read as a number where one is needed; one named scale, client_id, random_seed or default_seed is used instead of dyno's, as in pgbench.",
    heading: HEADING,
};

pub static SCALE: Setting = Setting {
    key: "scale",
    short: None,
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "SQL: pgbench's scale factor: branches, each with 10 tellers and 100,000 accounts, made in dyno's own schema before the run [default: 1].",
    heading: HEADING,
};

pub static TRANSACTIONS: Setting = Setting {
    key: "transactions",
    short: Some('t'),
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "sql, append: transactions per client (sql: instead of a duration, as pgbench's -t).",
    heading: HEADING,
};

pub static DURATION: Setting = Setting {
    key: "duration",
    short: Some('d'),
    aliases: &[],
    kind: Kind::Text,
    value_name: "",
    help: "sql, append: how long each repetition runs (sql: pgbench's -T [default: 10s; 2s with --quick]; append: instead of -t, as Jepsen's time limit).",
    heading: HEADING,
};

pub static RATE: Setting = Setting {
    key: "rate",
    short: Some('R'),
    aliases: &[],
    kind: Kind::Number,
    value_name: "",
    help: "SQL: an open loop at this many transactions/s in all (pgbench's -R): Poisson arrivals, latency from each transaction's intended start, the schedule lag beside it.",
    heading: HEADING,
};

pub static LATENCY_LIMIT: Setting = Setting {
    key: "latency_limit",
    short: Some('L'),
    aliases: &[],
    kind: Kind::Text,
    value_name: "DURATION",
    help: "SQL: transactions slower than this are counted late (pgbench's -L); in an open loop, one already this late when due is skipped, not run.",
    heading: HEADING,
};

pub static MAX_TRIES: Setting = Setting {
    key: "max_tries",
    short: None,
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "SQL: how many times a transaction runs when it fails for a serialization failure or a deadlock (pgbench's --max-tries; 0: until it succeeds, the run ends or it is later than --latency-limit), drawing the same values each time — in sysbench's built-ins also for a unique violation or a lock wait timeout, drawing afresh, as sysbench restarts them [default: 1, no retry; in sysbench's built-ins, as in sysbench, until the transaction succeeds or the run ends].",
    heading: HEADING,
};

pub static CONNECT: Setting = Setting {
    key: "connect",
    short: Some('C'),
    aliases: &[],
    kind: Kind::Flag,
    value_name: "",
    help: "SQL: a new connection for each transaction (pgbench's -C), the rate counting it: closing a connection and opening the next are timed as a row of their own, the opening outside the transaction's latency in a closed loop (as pgbench keeps it out), within it in an open loop; preparing the script's statements on the new connection is part of the transaction; a connection refused ends the client, as in pgbench.",
    heading: HEADING,
};

pub static QUERY_MODE: Setting = Setting {
    key: "query_mode",
    short: Some('M'),
    aliases: &[],
    kind: Kind::Text,
    value_name: "simple|extended|prepared",
    help: "SQL: how statements are sent (pgbench's -M): prepared, once per session, then run with the values as parameters; extended, PostgreSQL's extended protocol, each run parsed again; simple, each run's text with the values written in as pgbench writes them (a script quotes its text values), MySQL's text protocol [default: prepared; pgbench's is simple].",
    heading: HEADING,
};

/// [`QUERY_MODE`], as the plan gives it.
pub(crate) fn query_mode(raw: &RawPlan) -> Result<engine::driver::QueryMode, PlanError> {
    use engine::driver::QueryMode;
    let Some(m) = raw.settings.text(&QUERY_MODE) else {
        return Ok(QueryMode::default());
    };
    QueryMode::parse(&m.value).ok_or_else(|| {
        PlanError::new(m.at.clone(), format!("no query mode {:?}", m.value)).hint(format!(
            "write one of {}",
            QueryMode::ALL.map(QueryMode::name).join(", ")
        ))
    })
}

/// The suite's own settings; sysbench's follow them ([`sysbench::SETTINGS`]).
static OWN: &[&Setting] = &[
    &shared::CLIENTS,
    &shared::THREADS,
    &shared::IO,
    &shared::NAP,
    &BUILTIN,
    &SCRIPT,
    &DEFINE,
    &SCALE,
    &TRANSACTIONS,
    &DURATION,
    &RATE,
    &LATENCY_LIMIT,
    &shared::INTERVAL,
    &shared::HLOG,
    &MAX_TRIES,
    &CONNECT,
    &QUERY_MODE,
    &init::FILLFACTOR,
    &init::PARTITIONS,
    &init::PARTITION_METHOD,
    &init::UNLOGGED_TABLES,
    &init::FOREIGN_KEYS,
    &init::VACUUM,
    &init::VACUUM_ALL,
];

static SETTINGS: std::sync::LazyLock<Vec<&Setting>> =
    std::sync::LazyLock::new(|| [OWN, sysbench::SETTINGS].concat());

/// The most scale a run may ask for: 10^10 accounts (pgbench sets no bound; this one catches a
/// slipped digit before the load begins).
const MAX_SCALE: i64 = 100_000;

/// The scripts to run, with their weights, and how long.
#[derive(Debug)]
pub struct SqlSettings {
    pub scripts: Weighted,
    /// Whether pgbench's tables are made (for its built-ins and script files).
    pub pgbench: bool,
    pub scale: u64,
    /// How pgbench's tables are made (`pgbench -i`'s options).
    pub shape: init::Shape,
    /// What is vacuumed before each repetition after the first (pgbench's `-n`, `-v`).
    pub vacuum: init::Vacuum,
    /// sysbench's options, when one of its built-ins runs (its tables are made).
    pub oltp: Option<sysbench::Oltp>,
    /// Transactions per client, or else how long.
    pub transactions: Option<u64>,
    pub duration_ns: u64,
    /// An open loop: transactions per second in all.
    pub rate: Option<f64>,
    /// Slower than this is late; in an open loop, this late when due is skipped.
    pub latency_limit_ns: Option<u64>,
    /// The time series' interval (pgbench's `-P`).
    pub interval_ns: u64,
    /// Where the intervals' HdrHistogram log goes (`--hlog`; a long run's by default).
    pub hlog: Option<std::path::PathBuf>,
    /// Tries per transaction on a serialization failure or a deadlock; unset, the scripts'
    /// own default (run.rs's `tries`).
    pub max_tries: Option<u32>,
    /// `--define`'s variables, in its order.
    pub defines: Vec<(String, String)>,
    /// A new connection for each transaction (`-C`).
    pub connect: bool,
    /// How statements are sent (`-M`).
    pub query_mode: engine::driver::QueryMode,
    pub seed: u64,
    /// The test's name: the script's, or `mix`.
    pub test: &'static str,
}

impl Settings for SqlSettings {
    fn record(&self, plan: &mut results::PlanRecord) {
        let scripts: Vec<serde_json::Value> = (self.scripts.iter())
            .map(|(s, w)| serde_json::json!({"name": s.name, "weight": w}))
            .collect();
        plan.custom.insert(
            "sql".into(),
            serde_json::json!({
                "scripts": scripts,
                "scale": self.pgbench.then_some(self.scale),
                "tables": self.pgbench.then(|| self.shape.record()),
                "vacuum": self.pgbench.then(|| self.vacuum.name()),
                "sysbench": self.oltp.as_ref().map(sysbench::Oltp::record),
                "transactions_per_client": self.transactions,
                "duration_ns": self.duration_ns,
                "rate_per_s": self.rate,
                "latency_limit_ns": self.latency_limit_ns,
                "interval_ns": self.interval_ns,
                "hlog": self.hlog.as_ref().map(|p| p.display().to_string()),
                "max_tries": self.max_tries,
                "connect": self.connect,
                "query_mode": self.query_mode.name(),
                "defines": self.defines.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
                "random_seed": self.seed,
            }),
        );
    }
    fn rep_duration_ns(&self) -> Option<u64> {
        self.transactions.is_none().then_some(self.duration_ns)
    }

    fn stream_into(&mut self, dir: &std::path::Path) {
        results::hlog::stream_into(&mut self.hlog, dir);
    }
}

/// [`DURATION`], when the plan gives it (the sql and append suites').
pub(crate) fn duration_ns(raw: &RawPlan) -> Result<Option<u64>, PlanError> {
    (raw.settings.text(&DURATION))
        .map(|d| {
            engine::plan::parse_duration_setting(
                &d,
                "duration",
                24 * 3600,
                "write how long each repetition runs, e.g. 10s or 2m",
            )
        })
        .transpose()
}

/// `NAME@WEIGHT` (a weight of 1 without `@`).
fn weighted(item: &str, at: &Origin) -> Result<(String, u64), PlanError> {
    let Some((name, w)) = item.rsplit_once('@') else {
        return Ok((item.to_string(), 1));
    };
    match w.parse::<u64>() {
        Ok(w) if w > 0 => Ok((name.to_string(), w)),
        _ => Err(PlanError::new(
            at.clone(),
            format!("{item:?}: a weight is a whole number above 0"),
        )
        .hint("write NAME@2, or leave the weight out for 1")),
    }
}

/// The built-in `name` (a unique prefix of one): pgbench's, or sysbench's written from the
/// plan's options; `true` for sysbench's.
fn built_in(name: &str, at: &Origin, raw: &RawPlan) -> Result<(Script, bool), PlanError> {
    let names = (script::BUILT_IN.iter().map(|(n, _)| *n)).chain(sysbench::NAMES);
    let found: Vec<&str> = names.filter(|n| n.starts_with(name)).collect();
    let refused = |e: String| PlanError::new(at.clone(), e);
    match found.as_slice() {
        [n] if sysbench::NAMES.contains(n) => {
            let oltp = sysbench::Oltp::resolve(raw)?;
            Ok((oltp.script(n).map_err(refused)?, true))
        }
        [n] => Ok((script::built_in(n).map_err(refused)?, false)),
        _ => Err(refused(format!(
            "no built-in script {name:?}; the built-ins: {}, {}",
            script::BUILT_IN.map(|(n, _)| n).join(", "),
            sysbench::NAMES.join(", ")
        ))),
    }
}

/// `--define`'s `NAME=VALUE` pairs: a name as pgbench's variables have (a letter or `_`, then
/// letters, digits, `_`), each once; with sysbench's built-ins, not one of the variables its
/// statements are prepared for (`tables`, `table_size`, `range_size`: its own options).
fn defines(raw: &RawPlan, sysbench: bool) -> Result<Vec<(String, String)>, PlanError> {
    let Some(d) = raw.settings.text(&DEFINE) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for item in d.value.split(',').map(str::trim) {
        let refused = |why: String| {
            PlanError::new(d.at.clone(), format!("{item:?}: {why}")).hint(
                "write NAME=VALUE, several separated by commas, e.g. -D nbranches=10,mode=fast",
            )
        };
        let Some((name, value)) = item.split_once('=') else {
            return Err(refused("no \"=\" between a name and its value".into()));
        };
        let name = name.trim();
        if !script::is_variable(name) {
            return Err(refused(format!(
                "{name:?} is not a variable's name (letters, digits and _, not first a digit)"
            )));
        }
        let own = ["scale", "client_id", "random_seed", "default_seed"];
        if own.contains(&name) && value.trim().parse::<i64>().is_err() {
            return Err(refused(format!(
                "\"{name}\" takes the place of dyno's own, a whole number"
            )));
        }
        let options = [
            &sysbench::TABLES,
            &sysbench::TABLE_SIZE,
            &sysbench::RANGE_SIZE,
        ];
        if let Some(o) = options.iter().find(|o| sysbench && o.key == name) {
            return Err(refused(format!(
                "\"{name}\" is sysbench's option here: give it as --{}",
                o.long()
            )));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(refused(format!("\"{name}\" is defined twice")));
        }
        out.push((name.to_string(), value.to_string()));
    }
    Ok(out)
}

/// The scripts to run, each with its weight.
type Weighted = Vec<(Script, u64)>;

/// Whether every compound command of `s` can be sent under `mode`: one with variables or a
/// `\gset` or `\aset` needs `-M simple` (a prepared or unnamed statement holds one
/// statement); one without is sent as written under any mode. `Err` holds the line.
fn compound_sent_whole(s: &script::Script, mode: engine::driver::QueryMode) -> Result<(), usize> {
    let needs_simple = |k: &script::Kind| k.is_compound() && k.exchanges_values();
    match s.commands.iter().find(|c| needs_simple(&c.kind)) {
        Some(c) if mode != engine::driver::QueryMode::Simple => Err(c.line),
        _ => Ok(()),
    }
}

/// The scripts `--builtin` and `--script` name, read and checked, and whether sysbench's
/// and pgbench's tables are needed.
fn scripts(raw: &RawPlan) -> Result<(Weighted, bool, bool), PlanError> {
    let (builtin, files) = (raw.settings.text(&BUILTIN), raw.settings.text(&SCRIPT));
    let (mut out, mut oltp, mut pgbench) = (Vec::new(), false, files.is_some());
    if let Some(b) = &builtin {
        for item in b.value.split(',').map(str::trim) {
            let (name, w) = weighted(item, &b.at)?;
            let (s, sysbench) = built_in(&name, &b.at, raw)?;
            oltp |= sysbench;
            pgbench |= !sysbench;
            out.push((s, w));
        }
    }
    let files = files.as_ref();
    if let Some(f) = files {
        for item in f.value.split(',').map(str::trim) {
            let (path, w) = weighted(item, &f.at)?;
            let text = std::fs::read_to_string(&path).map_err(|e| {
                PlanError::new(f.at.clone(), format!("{path}: {e}"))
                    .hint("give the path of a script in pgbench's language")
            })?;
            let s = script::parse(&path, &text).map_err(|e| {
                PlanError::new(
                    f.at.clone(),
                    format!("{path}:{}:{}: {}", e.line, e.column, e.message),
                )
            })?;
            compound_sent_whole(&s, query_mode(raw)?).map_err(|line| {
                PlanError::new(
                    f.at.clone(),
                    format!("{path}:{line}: a compound command (\\;) with variables, \\gset or \\aset is sent as one query with its values written in, which only -M simple does"),
                )
                .hint("give -M simple, as pgbench runs such commands only so")
            })?;
            out.push((s, w));
        }
    }
    if out.is_empty() {
        out.push((script::built_in("tpcb-like").expect("a built-in"), 1));
        pgbench = true;
    }
    Ok((out, oltp, pgbench))
}

impl Suite for Sql {
    fn help(&self) -> &'static str {
        "pgbench's workloads on PostgreSQL and MySQL/MariaDB: its tables at --scale in dyno's own schema, its built-in scripts (-b) or script files (--script), every transaction and statement timed, the TPC-B invariant checked"
    }

    fn family(&self) -> Family {
        Family::Sql
    }

    fn settings(&self) -> &'static [&'static Setting] {
        &SETTINGS
    }

    fn targets_hint(&self) -> &'static str {
        "the sql suite runs on postgres:// and mysql:// targets"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: 1,
            max: MAX_CLIENTS,
            why: "each client is a session of its own, many per generator thread",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![Param::CLIENTS, Param::RATE]
    }

    fn default_reps(&self, _: bool) -> u32 {
        1
    }

    fn default_warmup(&self) -> bool {
        false
    }

    fn resolve(&self, raw: &RawPlan, c: &Common) -> Result<Box<dyn Settings>, PlanError> {
        let (scripts, oltp, pgbench) = scripts(raw)?;
        let oltp = if oltp {
            Some(sysbench::Oltp::resolve(raw)?)
        } else {
            sysbench::unused(raw)?;
            None
        };
        let scale = match raw.settings.int(&SCALE) {
            Some(s) if !(1..=MAX_SCALE).contains(&s.value) => {
                return Err(PlanError::new(
                    s.at,
                    format!("scale must be 1 to {MAX_SCALE}, got {}", s.value),
                ));
            }
            Some(s) => s.value as u64,
            None => 1,
        };
        let transactions = match raw.settings.int(&TRANSACTIONS) {
            Some(t) if t.value < 1 => {
                return Err(PlanError::new(t.at, "transactions must be at least 1"));
            }
            t => t.map(|t| t.value as u64),
        };
        let duration_ns = match duration_ns(raw)? {
            Some(d) => d,
            None if c.quick => 2_000_000_000,
            None => 10_000_000_000,
        };
        let rate = match raw.settings.text(&RATE) {
            None => None,
            Some(r) => Some(
                (r.value.trim().parse::<f64>().ok())
                    .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1e7)
                    .ok_or_else(|| {
                        PlanError::new(r.at.clone(), format!("{:?} is not a rate", r.value))
                            .hint("write the transactions per second in all, e.g. --rate 500")
                    })?,
            ),
        };
        let latency_limit_ns = match raw.settings.text(&LATENCY_LIMIT) {
            None => None,
            Some(l) => Some(engine::plan::parse_duration_setting(
                &l,
                "latency_limit",
                3600,
                "write how slow a transaction may be, e.g. 50ms",
            )?),
        };
        let max_tries = match raw.settings.int(&MAX_TRIES) {
            Some(t) if !(0..=i64::from(run::MOST_TRIES)).contains(&t.value) => {
                let what = format!("max_tries must be 0 to {}", run::MOST_TRIES);
                return Err(PlanError::new(t.at, what).hint(
                    "1 runs each transaction once; more retry its conflicts; 0 until it passes",
                ));
            }
            // As pgbench refuses it: with neither, nothing would end the retrying.
            Some(t) if t.value == 0 && transactions.is_some() && latency_limit_ns.is_none() => {
                return Err(PlanError::new(t.at, "max_tries 0 (no limit) needs a duration or a latency limit to end the retrying")
                    .hint("give --duration in place of -t, or --latency-limit"));
            }
            t => t.map(|t| t.value as u32),
        };
        let defines = defines(raw, oltp.is_some())?;
        let test: &'static str = match scripts.as_slice() {
            [(s, _)] => Box::leak(s.name.clone().into_boxed_str()),
            _ => "mix",
        };
        Ok(Box::new(SqlSettings {
            scripts,
            pgbench,
            scale,
            shape: init::Shape::resolve(raw, pgbench)?,
            vacuum: init::Vacuum::resolve(raw, pgbench)?,
            oltp,
            transactions,
            duration_ns,
            rate,
            latency_limit_ns,
            interval_ns: engine::plan::interval_ns(raw.settings.text(&shared::INTERVAL).as_ref())?,
            hlog: (raw.settings.text(&shared::HLOG)).map(|h| h.value.into()),
            max_tries,
            defines,
            connect: raw.settings.flag(&CONNECT).is_some_and(|c| c.value),
            query_mode: query_mode(raw)?,
            seed: c.seed,
            test,
        }))
    }

    fn tests(&self, plan: &Plan, _: &Point) -> Vec<&'static str> {
        vec![engine::suite::settings::<SqlSettings>(plan).test]
    }

    fn run(
        &self,
        plan: &Plan,
        point: &Point,
        target: &PlanTarget,
        interrupt: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        run::run(plan, point, target, interrupt, run)
    }
}

impl report::View for Sql {
    fn table(&self, r: &results::RunRecord, doc: &mut report::grid::Doc) -> std::io::Result<()> {
        table::render(r, doc)
    }
}

impl results::Named for Sql {
    fn name(&self) -> &'static str {
        "sql"
    }
}
