//! Writing records so that none is ever half-written, and reading a results directory back.
//!
//! A record is written to a temporary file in the same directory, flushed to disk, then renamed
//! over the final name: a reader (or a crash) sees the previous complete version or the new one,
//! never a torn file.

use crate::record::{RunRecord, SCHEMA};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file name of a run's record inside its results directory.
pub const RECORD_FILE: &str = "run.json";

/// Why records could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a dyno run record: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{path}: record schema is {found:?}, this dyno reads {SCHEMA:?}; use the dyno that wrote it"
    )]
    Schema { path: PathBuf, found: String },
    #[error(
        "{path}: no dyno run records here (looked for {RECORD_FILE} in it and in its subdirectories)"
    )]
    Empty { path: PathBuf },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
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
        serde_json::from_slice(&bytes).map_err(|source| StoreError::Json {
            path: path.to_path_buf(),
            source,
        })?;
    let found = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if found != SCHEMA {
        return Err(StoreError::Schema {
            path: path.to_path_buf(),
            found: found.to_string(),
        });
    }
    serde_json::from_value(value).map_err(|source| StoreError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads every record under `dir`: `dir/run.json` itself, or `*/run.json` one level down (a
/// directory of runs), in name order. A path to a record file is read as that one record.
pub fn load(dir: &Path) -> Result<Vec<RunRecord>, StoreError> {
    if dir.is_file() {
        return Ok(vec![read_record(dir)?]);
    }
    let direct = dir.join(RECORD_FILE);
    if direct.is_file() {
        return Ok(vec![read_record(&direct)?]);
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
    subdirs
        .iter()
        .map(|d| read_record(&d.join(RECORD_FILE)))
        .collect()
}
