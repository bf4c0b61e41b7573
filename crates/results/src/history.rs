//! The memory of past runs: every run is registered in an SQLite file beside the results
//! directories (`dyno-results/history.sqlite`: embedded, no server), with its time, directory,
//! plan hash, the git commit of the repository it ran in, the host's fingerprint, dyno's version
//! and each case's headline figures. `@last`, `@prev` and `@baseline:NAME` name runs by it.

use crate::RunRecord;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};

/// The history file's name, in the results root.
pub const FILE: &str = "history.sqlite";

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("{path}: {error}")]
    Db {
        path: PathBuf,
        error: rusqlite::Error,
    },
    #[error("{reference}: {why}")]
    Reference { reference: String, why: String },
}

/// A history file, open.
pub struct History {
    db: Connection,
    path: PathBuf,
}

/// One registered run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub started: String,
    pub dir: String,
    pub suite: String,
    pub plan_hash: String,
    pub commit: Option<String>,
    pub host: String,
    pub dyno: String,
    /// Baselines naming it.
    pub baselines: Vec<String>,
}

/// One case's headline figures in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRow {
    pub run: i64,
    pub started: String,
    pub case: String,
    pub rate: Option<f64>,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub errors: u64,
}

/// How a run's directory is stored and looked up: its canonical path, so `./r/x`, `r/x/` and
/// the absolute path name the same run.
fn key(dir: &Path) -> String {
    dir.canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

/// A `cases` row joined with its run's start, as the queries select them.
fn case_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CaseRow> {
    Ok(CaseRow {
        run: r.get(0)?,
        started: r.get(1)?,
        case: r.get(2)?,
        rate: r.get(3)?,
        p50_ns: r.get::<_, Option<i64>>(4)?.map(|v| v as u64),
        p99_ns: r.get::<_, Option<i64>>(5)?.map(|v| v as u64),
        errors: r.get::<_, i64>(6)? as u64,
    })
}

/// FNV-1a over `bytes`, as 16 hex digits: a plan's fingerprint.
fn fnv(bytes: &[u8]) -> String {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}")
}

impl History {
    /// Opens (creating) the history in `root`.
    pub fn open(root: &Path) -> Result<History, HistoryError> {
        let path = root.join(FILE);
        let db_err = |error| HistoryError::Db {
            path: path.clone(),
            error,
        };
        let db = Connection::open(&path).map_err(db_err)?;
        db.execute_batch(
            "PRAGMA busy_timeout = 5000;
             CREATE TABLE IF NOT EXISTS runs (
                 id INTEGER PRIMARY KEY, started TEXT NOT NULL, dir TEXT NOT NULL UNIQUE,
                 suite TEXT NOT NULL, plan_hash TEXT NOT NULL, git_commit TEXT,
                 host TEXT NOT NULL, dyno TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS cases (
                 run INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
                 rate REAL, p50_ns INTEGER, p99_ns INTEGER, errors INTEGER NOT NULL,
                 PRIMARY KEY (run, name));
             CREATE TABLE IF NOT EXISTS baselines (
                 name TEXT PRIMARY KEY, run INTEGER NOT NULL REFERENCES runs(id));",
        )
        .map_err(db_err)?;
        Ok(History { db, path })
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
        |error| HistoryError::Db {
            path: self.path.clone(),
            error,
        }
    }

    /// Registers the run whose record is in `dir` (again: its figures replaced).
    pub fn register(
        &mut self,
        dir: &Path,
        record: &RunRecord,
        commit: Option<&str>,
    ) -> Result<i64, HistoryError> {
        let e = &record.environment;
        let host = format!("{} × {} cores, {}", e.cpu_model, e.cores, e.kernel);
        let plan = serde_json::to_vec(&record.plan).unwrap_or_default();
        let path = self.path.clone();
        let db_err = move |error| HistoryError::Db {
            path: path.clone(),
            error,
        };
        let tx = self.db.transaction().map_err(&db_err)?;
        tx.execute(
            "INSERT INTO runs (started, dir, suite, plan_hash, git_commit, host, dyno)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT(dir) DO UPDATE SET started = ?1, suite = ?3, plan_hash = ?4,
                 git_commit = ?5, host = ?6, dyno = ?7",
            params![
                record.started,
                key(dir),
                record.plan.suite,
                fnv(&plan),
                commit,
                host,
                record.dyno.version,
            ],
        )
        .map_err(&db_err)?;
        let id: i64 = tx
            .query_row("SELECT id FROM runs WHERE dir = ?1", [key(dir)], |r| {
                r.get(0)
            })
            .map_err(&db_err)?;
        tx.execute("DELETE FROM cases WHERE run = ?1", [id])
            .map_err(&db_err)?;
        for c in &record.cases {
            let rate = c.summary.as_ref().map(|s| s.ops_per_s.median);
            let lat = c.summary.as_ref().map(|s| &s.latency_ns);
            let errors: u64 = c.errors.values().sum();
            tx.execute(
                // A point run twice (a capacity search's confirmations) keeps its first run.
                "INSERT OR IGNORE INTO cases (run, name, rate, p50_ns, p99_ns, errors)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    id,
                    c.id().to_string(),
                    rate,
                    lat.map(|l| l.p50 as i64),
                    lat.map(|l| l.p99 as i64),
                    errors as i64
                ],
            )
            .map_err(&db_err)?;
        }
        tx.commit().map_err(&db_err)?;
        Ok(id)
    }

    /// Every run, oldest first; `suite` keeps one suite's.
    pub fn runs(&self, suite: Option<&str>) -> Result<Vec<RunRow>, HistoryError> {
        let mut q = self
            .db
            .prepare(
                "SELECT id, started, dir, suite, plan_hash, git_commit, host, dyno,
                        (SELECT group_concat(name, ',') FROM baselines b WHERE b.run = runs.id)
                 FROM runs WHERE ?1 IS NULL OR suite = ?1 ORDER BY started, id",
            )
            .map_err(self.err())?;
        let rows = q
            .query_map([suite], |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    started: r.get(1)?,
                    dir: r.get(2)?,
                    suite: r.get(3)?,
                    plan_hash: r.get(4)?,
                    commit: r.get(5)?,
                    host: r.get(6)?,
                    dyno: r.get(7)?,
                    baselines: (r.get::<_, Option<String>>(8)?)
                        .map(|b| b.split(',').map(str::to_string).collect())
                        .unwrap_or_default(),
                })
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// Each run's figures of the cases whose identity contains `case`, oldest first.
    pub fn cases(&self, case: &str) -> Result<Vec<CaseRow>, HistoryError> {
        let mut q = self
            .db
            .prepare(
                "SELECT c.run, r.started, c.name, c.rate, c.p50_ns, c.p99_ns, c.errors
                 FROM cases c JOIN runs r ON r.id = c.run
                 WHERE instr(c.name, ?1) > 0 ORDER BY r.started, r.id, c.name",
            )
            .map_err(self.err())?;
        let rows = q.query_map([case], case_row).map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// The figures of exactly the cases `names`, in the runs up to the one in `dir` (all runs
    /// when it is not registered), oldest first, at most the `last` runs of each: a trend.
    pub fn trend(
        &self,
        names: &[String],
        dir: &Path,
        last: usize,
    ) -> Result<Vec<CaseRow>, HistoryError> {
        let upto: Option<i64> = self
            .db
            .query_row("SELECT id FROM runs WHERE dir = ?1", [key(dir)], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())?;
        let mut q = self
            .db
            .prepare(
                "SELECT * FROM (
                     SELECT c.run, r.started, c.name, c.rate, c.p50_ns, c.p99_ns, c.errors
                     FROM cases c JOIN runs r ON r.id = c.run
                     WHERE c.name = ?1 AND (?2 IS NULL OR r.id <= ?2)
                     ORDER BY r.started DESC, r.id DESC LIMIT ?3)
                 ORDER BY started, run",
            )
            .map_err(self.err())?;
        let mut out = Vec::new();
        for name in names {
            let rows = q
                .query_map(params![name, upto, last as i64], case_row)
                .map_err(self.err())?;
            for row in rows {
                out.push(row.map_err(self.err())?);
            }
        }
        Ok(out)
    }

    /// Names the run in `dir` (registered) baseline `name`.
    pub fn set_baseline(&self, name: &str, dir: &Path) -> Result<(), HistoryError> {
        let id: Option<i64> = self
            .db
            .query_row("SELECT id FROM runs WHERE dir = ?1", [key(dir)], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())?;
        let id = id.ok_or_else(|| HistoryError::Reference {
            reference: key(dir),
            why: format!("no run of {} was made there", self.path.display()),
        })?;
        self.db
            .execute(
                "INSERT INTO baselines (name, run) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET run = ?2",
                params![name, id],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// The directory `reference` names: `@last` (the newest run), `@prev` (the one before it),
    /// `@baseline:NAME`.
    pub fn resolve(&self, reference: &str) -> Result<PathBuf, HistoryError> {
        let bad = |why: String| HistoryError::Reference {
            reference: reference.to_string(),
            why,
        };
        let dir: Option<String> = match reference {
            "@last" | "@prev" => {
                let skip = i64::from(reference == "@prev");
                self.db
                    .query_row(
                        "SELECT dir FROM runs ORDER BY started DESC, id DESC LIMIT 1 OFFSET ?1",
                        [skip],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(self.err())?
            }
            other => match other.strip_prefix("@baseline:") {
                Some(name) => self
                    .db
                    .query_row(
                        "SELECT r.dir FROM baselines b JOIN runs r ON r.id = b.run WHERE b.name = ?1",
                        [name],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(self.err())?,
                None => {
                    return Err(bad(
                        "write @last, @prev or @baseline:NAME, or a results directory".into(),
                    ));
                }
            },
        };
        dir.map(PathBuf::from).ok_or_else(|| {
            bad(format!(
                "{} holds no such run (runs are registered as they finish; `dyno baseline set NAME DIR` names one)",
                self.path.display()
            ))
        })
    }
}
