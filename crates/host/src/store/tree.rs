//! Folders (the `namespace` family): valid paths, and a namespace's tree of folders in memory.

use super::*;

/// Folders one namespace holds at most.
pub const MAX_FOLDERS: usize = 1 << 20;
/// The longest folder path.
pub const MAX_PATH: usize = 2048;

/// Whether `path` is a folder path of the `namespace` family: names joined by `/`, each of ASCII
/// letters, digits, `_`, `-` or `.` (but not `.` or `..`), at most [`MAX_PATH`] bytes in all.
/// The empty path is the root.
pub fn valid_path(path: &str) -> bool {
    path.len() <= MAX_PATH
        && (path.is_empty()
            || path.split('/').all(|n| {
                !n.is_empty()
                    && n != "."
                    && n != ".."
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            }))
}

/// Why a folder operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeError {
    NotFound,
    Exists,
    NotEmpty,
    Invalid,
    Full,
}

impl TreeError {
    pub fn message(&self, path: &str) -> String {
        match self {
            TreeError::NotFound => format!("{path:?}: no such folder (or parent)"),
            TreeError::Exists => format!("{path:?} exists already"),
            TreeError::NotEmpty => format!("{path:?} is not empty"),
            TreeError::Invalid => format!(
                "{path:?} is not a folder path (names of letters, digits, _ - . joined by /; at most {MAX_PATH} bytes; not the root)"
            ),
            TreeError::Full => format!("the namespace holds {MAX_FOLDERS} folders, the limit"),
        }
    }
}

/// A namespace's folders: each folder's path, with its entries' names. The root ("") always is.
pub(super) struct Tree {
    pub(super) dirs: HashMap<String, std::collections::BTreeSet<String>>,
}

impl Default for Tree {
    fn default() -> Tree {
        Tree {
            dirs: HashMap::from([(String::new(), Default::default())]),
        }
    }
}

/// A path's parent and last name; `None` for the root or an invalid path.
pub(super) fn split_path(path: &str) -> Option<(&str, &str)> {
    if path.is_empty() || !valid_path(path) {
        return None;
    }
    Some(path.rsplit_once('/').unwrap_or(("", path)))
}

impl Tree {
    pub(super) fn mkdir(&mut self, path: &str) -> Result<(), TreeError> {
        let (parent, name) = split_path(path).ok_or(TreeError::Invalid)?;
        if self.dirs.contains_key(path) {
            return Err(TreeError::Exists);
        }
        if self.dirs.len() >= MAX_FOLDERS {
            return Err(TreeError::Full);
        }
        self.dirs
            .get_mut(parent)
            .ok_or(TreeError::NotFound)?
            .insert(name.to_string());
        self.dirs.insert(path.to_string(), Default::default());
        Ok(())
    }

    pub(super) fn rmdir(&mut self, path: &str) -> Result<(), TreeError> {
        let (parent, name) = split_path(path).ok_or(TreeError::Invalid)?;
        match self.dirs.get(path) {
            None => return Err(TreeError::NotFound),
            Some(entries) if !entries.is_empty() => return Err(TreeError::NotEmpty),
            Some(_) => {}
        }
        self.dirs.remove(path);
        if let Some(p) = self.dirs.get_mut(parent) {
            p.remove(name);
        }
        Ok(())
    }
}
