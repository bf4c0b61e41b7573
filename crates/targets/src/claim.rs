//! Claiming the places dyno writes to, and refusing the ones it did not create.
//!
//! A directory is dyno's when it holds the marker file [`MARKER`], written when dyno created the
//! directory (or found it empty and claimed it). A non-empty directory without the marker is
//! refused and left untouched. Temporary namespaces are `dyno_…` directories under the system's
//! temporary directory, marked like any other, and deleted at the end of the run — only if the
//! marker is still there.

use engine::driver::DriverError;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The file that proves a directory is dyno's.
pub const MARKER: &str = ".dyno-namespace";

/// What is at a path dyno was pointed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirState {
    /// Nothing: dyno will create it.
    Absent,
    /// An empty directory: dyno may claim it.
    Empty,
    /// A directory holding dyno's marker.
    Ours,
}

fn refuse(path: &Path, what: &str) -> DriverError {
    DriverError::new(format!(
        "refusing to use {}: {what}; dyno writes only where it created its own namespace \
         (a {MARKER} marker). Point it at a new or empty directory, or leave the path out for a \
         temporary one",
        path.display()
    ))
}

/// Reads (only) what is at `path`; refuses a non-empty directory that is not dyno's.
pub fn check_dir(path: &Path) -> Result<DirState, DriverError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(DirState::Absent),
        Err(e) => return Err(DriverError::new(format!("{}: {e}", path.display()))),
    };
    if !meta.is_dir() {
        return Err(refuse(path, "it exists and is not a directory"));
    }
    if path.join(MARKER).is_file() {
        return Ok(DirState::Ours);
    }
    let mut entries = std::fs::read_dir(path)
        .map_err(|e| DriverError::new(format!("{}: {e}", path.display())))?;
    if entries.next().is_some() {
        return Err(refuse(
            path,
            "the directory is not empty and dyno did not create it",
        ));
    }
    Ok(DirState::Empty)
}

fn write_marker(dir: &Path) -> Result<(), DriverError> {
    let text = format!(
        "This directory was created by dyno {} at {}.\ndyno may delete what it holds.\n",
        env!("CARGO_PKG_VERSION"),
        humantime::format_rfc3339_seconds(std::time::SystemTime::now())
    );
    std::fs::write(dir.join(MARKER), text)
        .map_err(|e| DriverError::new(format!("{}: cannot write marker: {e}", dir.display())))
}

/// Makes `path` dyno's: creates it (with parents), or claims it when empty, or accepts it when
/// marked. Returns what it was.
pub fn claim_dir(path: &Path) -> Result<DirState, DriverError> {
    let state = check_dir(path)?;
    match state {
        DirState::Absent => {
            std::fs::create_dir_all(path)
                .map_err(|e| DriverError::new(format!("{}: cannot create: {e}", path.display())))?;
            write_marker(path)?;
        }
        DirState::Empty => write_marker(path)?,
        DirState::Ours => {}
    }
    Ok(state)
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The name of a run's namespace on a server (a key prefix, a schema, a host's namespace),
/// without its separator: the shards' shared one ([`Share::namespace`]), or else one of this
/// process's own, `dyno_<pid>_<n>_<nanos>`. Also whether this run deletes it at the end (a
/// shard other than rank 0 leaves it to rank 0).
pub fn server_namespace(share: Option<&engine::driver::Share>) -> (String, bool) {
    match share {
        Some(s) => (s.namespace(), s.owner),
        None => (
            format!(
                "dyno_{}_{}_{}",
                std::process::id(),
                SEQ.fetch_add(1, Ordering::Relaxed),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos())
            ),
            true,
        ),
    }
}

/// Creates a fresh, marked `dyno_<scheme>_<pid>_<n>` directory under the temporary directory.
pub fn temp_dir(scheme: &str) -> Result<PathBuf, DriverError> {
    let base = std::env::temp_dir();
    for _ in 0..100 {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!("dyno_{scheme}_{}_{n}_{nanos}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                write_marker(&dir)?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(DriverError::new(format!(
                    "cannot create a temporary namespace in {}: {e}",
                    base.display()
                )));
            }
        }
    }
    Err(DriverError::new(format!(
        "cannot find a free temporary directory name in {}",
        base.display()
    )))
}

/// Deletes a directory dyno created, after checking its marker.
pub fn remove_dir(dir: &Path) -> Result<(), DriverError> {
    if !dir.join(MARKER).is_file() {
        return Err(DriverError::new(format!(
            "not deleting {}: its {MARKER} marker is gone",
            dir.display()
        )));
    }
    std::fs::remove_dir_all(dir)
        .map_err(|e| DriverError::new(format!("cannot delete {}: {e}", dir.display())))
}

/// Where a file-backed store lives: a temporary directory (deleted at close) or a user's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Temporary,
    At(PathBuf),
}

impl Place {
    /// `""` is a fresh temporary namespace; anything else a path.
    pub fn parse(rest: &str) -> Place {
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        if rest.is_empty() {
            Place::Temporary
        } else {
            Place::At(PathBuf::from(rest))
        }
    }

    /// Where the data will live: the user's path, or the temporary directory a temporary
    /// namespace will be created in (for the filesystem type in the record).
    pub fn path(&self) -> Option<PathBuf> {
        match self {
            Place::Temporary => Some(std::env::temp_dir()),
            Place::At(p) => Some(p.clone()),
        }
    }

    /// For stores kept in a directory: checks, reading only, that it may be claimed.
    pub fn check_dir(&self) -> Result<(), DriverError> {
        match self {
            Place::Temporary => Ok(()),
            Place::At(p) => check_dir(p).map(|_| ()),
        }
    }

    /// For stores kept in a directory: a fresh temporary one, or the user's claimed. Returns the
    /// directory and whether it is temporary (deleted at close).
    pub fn claim_dir(&self, scheme: &str) -> Result<(PathBuf, bool), DriverError> {
        match self {
            Place::Temporary => Ok((temp_dir(scheme)?, true)),
            Place::At(p) => {
                claim_dir(p)?;
                Ok((p.clone(), false))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_empty_ours_and_foreign() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("a/b");
        assert_eq!(check_dir(&d).unwrap(), DirState::Absent);
        assert_eq!(claim_dir(&d).unwrap(), DirState::Absent);
        assert_eq!(check_dir(&d).unwrap(), DirState::Ours);

        let empty = t.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert_eq!(claim_dir(&empty).unwrap(), DirState::Empty);
        assert!(empty.join(MARKER).is_file());

        let foreign = t.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("precious"), "data").unwrap();
        let e = claim_dir(&foreign).unwrap_err().message;
        assert!(e.contains("not empty") && e.contains("refusing"), "{e}");
        assert_eq!(
            std::fs::read_dir(&foreign).unwrap().count(),
            1,
            "nothing added"
        );
        assert!(
            remove_dir(&foreign).is_err(),
            "never deletes an unmarked directory"
        );
        assert!(foreign.join("precious").is_file());

        let file = t.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(
            check_dir(&file)
                .unwrap_err()
                .message
                .contains("not a directory")
        );
    }

    #[test]
    fn temporary_namespaces_are_fresh_marked_and_removable() {
        let a = temp_dir("test").unwrap();
        let b = temp_dir("test").unwrap();
        assert_ne!(a, b);
        assert!(
            a.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("dyno_")
        );
        remove_dir(&a).unwrap();
        remove_dir(&b).unwrap();
        assert!(!a.exists());
    }
}
