//! Writing records so that none is ever half-written, and reading a results directory back.
//!
//! A record is written to a temporary file in the same directory, flushed to disk, then renamed
//! over the final name: a reader (or a crash) sees the previous complete version or the new one,
//! never a torn file.

use crate::migrate::RUN_1;
use crate::record::{RunRecord, SCHEMA};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file name of a run's record inside its results directory.
pub const RECORD_FILE: &str = "run.json";

/// Why records could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    // The cause is part of the message and deliberately not a `source`: a chain printed with
    // `{:#}` would say it twice.
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: not a dyno run record: {error}")]
    Json {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error(
        "{path}: record schema is {found:?}, this dyno reads {RUN_1:?} and {SCHEMA:?}; use the dyno that wrote it"
    )]
    Schema { path: PathBuf, found: String },
    #[error(
        "{path}: this directory is not empty and dyno did not make it; dyno writes only where it \
         made its own place, so nothing was written"
    )]
    Foreign { path: PathBuf },
    #[error(
        "{path}: no dyno run records here (looked for {RECORD_FILE} in it and in its subdirectories)"
    )]
    Empty { path: PathBuf },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |error| StoreError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// The file dyno leaves in every results directory it makes: a directory holding it (or a record)
/// is dyno's, and a new run there goes into a subdirectory of its own.
pub const MARKER_FILE: &str = ".dyno-results";

/// Where runs go when no directory is named: `./dyno-results/<UTC time>/`.
pub const DEFAULT_ROOT: &str = "dyno-results";

/// Where a new run's files go, and why there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// A directory that did not exist, or was empty: the run's files go straight into it.
    Fresh(PathBuf),
    /// The asked-for directory is dyno's and holds earlier runs: the run goes into a new
    /// subdirectory named by its start time, and the earlier ones are left as they are.
    Beside { asked: PathBuf, dir: PathBuf },
}

impl Placement {
    /// The directory the run's files go into.
    pub fn dir(&self) -> &Path {
        match self {
            Placement::Fresh(d) | Placement::Beside { dir: d, .. } => d,
        }
    }
}

/// True when `dir` is a results directory dyno made: it holds the marker or a record, or every
/// entry in it is such a directory (a parent of runs, like `dyno-results/`).
fn is_dynos(dir: &Path) -> Result<bool, StoreError> {
    let own = |d: &Path| d.join(MARKER_FILE).is_file() || d.join(RECORD_FILE).is_file();
    if own(dir) {
        return Ok(true);
    }
    let mut any = false;
    for e in fs::read_dir(dir).map_err(io(dir))? {
        let p = e.map_err(io(dir))?.path();
        if !(p.is_dir() && own(&p)) {
            return Ok(false);
        }
        any = true;
    }
    Ok(any)
}

/// `base/<UTC time>` (`2026-11-23T04-10-00Z`), with `-2`, `-3`… if that name is taken.
pub fn stamped_dir(base: &Path, now: std::time::SystemTime) -> PathBuf {
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let stamp = utc_stamp(secs);
    let mut dir = base.join(&stamp);
    let mut k = 2;
    while dir.exists() {
        dir = base.join(format!("{stamp}-{k}"));
        k += 1;
    }
    dir
}

/// Seconds since the epoch as `YYYY-MM-DDTHH-MM-SSZ` (a file name: no colons).
fn utc_stamp(secs: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace(':', "-")
}

/// Claims the directory a new run writes into, creating it with dyno's marker. `asked` is what
/// the user named (`-o DIR`, `out =`), or `None` for `./dyno-results/<UTC time>/`.
///
/// A finished run is never overwritten and a foreign directory never written into: a new or
/// empty directory is used as it is; a directory dyno made that holds earlier runs gets the new
/// run in a subdirectory of its own; any other non-empty directory is refused, with nothing
/// written.
pub fn claim_run_dir(
    asked: Option<&Path>,
    now: std::time::SystemTime,
) -> Result<Placement, StoreError> {
    let mark = |d: &Path| -> Result<(), StoreError> {
        fs::create_dir_all(d).map_err(io(d))?;
        fs::write(d.join(MARKER_FILE), b"made by dyno: a results directory\n").map_err(io(d))
    };
    let Some(asked) = asked else {
        let base = Path::new(DEFAULT_ROOT);
        if !base.exists() {
            mark(base)?;
        }
        let dir = stamped_dir(base, now);
        mark(&dir)?;
        return Ok(Placement::Fresh(dir));
    };
    if !asked.exists() {
        mark(asked)?;
        return Ok(Placement::Fresh(asked.to_path_buf()));
    }
    if !asked.is_dir() {
        return Err(StoreError::Io {
            path: asked.to_path_buf(),
            error: std::io::Error::other("exists and is not a directory"),
        });
    }
    let empty = fs::read_dir(asked).map_err(io(asked))?.next().is_none();
    if empty {
        mark(asked)?;
        return Ok(Placement::Fresh(asked.to_path_buf()));
    }
    if !is_dynos(asked)? {
        return Err(StoreError::Foreign {
            path: asked.to_path_buf(),
        });
    }
    let dir = stamped_dir(asked, now);
    mark(&dir)?;
    Ok(Placement::Beside {
        asked: asked.to_path_buf(),
        dir,
    })
}

/// Writes `record` to `path` atomically (temporary file, fsync, rename).
pub fn write_atomic(path: &Path, record: &RunRecord) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec_pretty(record).expect("a run record always serializes");
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("record")
    ));
    let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(&bytes).map_err(io(&tmp))?;
    f.write_all(b"\n").map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    drop(f);
    fs::rename(&tmp, path).map_err(io(path))
}

/// Reads one record file and checks its schema.
pub fn read_record(path: &Path) -> Result<RunRecord, StoreError> {
    let bytes = fs::read(path).map_err(io(path))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|error| StoreError::Json {
            path: path.to_path_buf(),
            error,
        })?;
    let found = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    let found = found.to_string();
    let value = crate::migrate::to_current(value).map_err(|_| StoreError::Schema {
        path: path.to_path_buf(),
        found,
    })?;
    serde_json::from_value(value).map_err(|error| StoreError::Json {
        path: path.to_path_buf(),
        error,
    })
}

/// Reads every record under `dir`: `dir/run.json` itself, or `*/run.json` one level down (a
/// directory of runs), in name order. A path to a record file is read as that one record.
pub fn load(dir: &Path) -> Result<Vec<RunRecord>, StoreError> {
    if dir.is_file() {
        return Ok(vec![read_record(dir)?]);
    }
    (record_dirs(dir)?.iter())
        .map(|d| read_record(&d.join(RECORD_FILE)))
        .collect()
}

/// The run directories [`load`] reads under `dir`: `dir` itself when it holds a record, else
/// its subdirectories that do, in name order.
pub fn record_dirs(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    if dir.join(RECORD_FILE).is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let mut subdirs: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(RECORD_FILE).is_file())
        .collect();
    subdirs.sort();
    if subdirs.is_empty() {
        return Err(StoreError::Empty {
            path: dir.to_path_buf(),
        });
    }
    Ok(subdirs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(secs: u64) -> std::time::SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn stamps_are_utc_file_names() {
        assert_eq!(utc_stamp(0), "1970-01-01T00-00-00Z");
        // 2026-11-23 04:10:05 UTC; and a leap day.
        assert_eq!(utc_stamp(1_795_407_005), "2026-11-23T04-10-05Z");
        assert_eq!(utc_stamp(951_782_400), "2000-02-29T00-00-00Z");
    }

    #[test]
    fn a_new_or_empty_directory_is_used_as_it_is() {
        let t = tempfile::tempdir().unwrap();
        let new = t.path().join("a/b");
        assert_eq!(
            claim_run_dir(Some(&new), at(0)).unwrap(),
            Placement::Fresh(new.clone())
        );
        assert!(new.join(MARKER_FILE).is_file());
        let empty = t.path().join("empty");
        fs::create_dir(&empty).unwrap();
        assert_eq!(
            claim_run_dir(Some(&empty), at(0)).unwrap(),
            Placement::Fresh(empty.clone())
        );
    }

    #[test]
    fn an_earlier_run_is_kept_and_the_new_one_goes_beside_it() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("nightly");
        fs::create_dir(&d).unwrap();
        fs::write(d.join(RECORD_FILE), b"{}").unwrap();
        let p = claim_run_dir(Some(&d), at(60)).unwrap();
        assert_eq!(p.dir(), d.join("1970-01-01T00-01-00Z"));
        assert!(matches!(p, Placement::Beside { .. }));
        // The same second again: a different directory.
        let q = claim_run_dir(Some(&d), at(60)).unwrap();
        assert_eq!(q.dir(), d.join("1970-01-01T00-01-00Z-2"));
        assert_eq!(fs::read(d.join(RECORD_FILE)).unwrap(), b"{}");
    }

    #[test]
    fn a_foreign_directory_is_refused_and_left_alone() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join("notes.txt"), b"mine").unwrap();
        let e = claim_run_dir(Some(t.path()), at(0)).unwrap_err();
        assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
        let names: Vec<_> = fs::read_dir(t.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        // A parent of runs (every entry a run directory) is dyno's.
        let runs = t.path().join("runs");
        fs::create_dir_all(runs.join("r1")).unwrap();
        fs::write(runs.join("r1").join(RECORD_FILE), b"{}").unwrap();
        assert!(matches!(
            claim_run_dir(Some(&runs), at(0)).unwrap(),
            Placement::Beside { .. }
        ));
    }
}
