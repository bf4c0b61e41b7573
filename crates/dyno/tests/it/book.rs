//! The book (`docs/`): its reference pages are made from the code's own lists and must match
//! them, and its examples run as a user would type them, their output compared with the text
//! the book shows. Building the book with mdBook and opening it in a browser are in
//! `servers::book`.
//!
//! `DYNO_BLESS=1 cargo test -p dyno --test it book::` rewrites the reference pages from the code;
//! an example's output is never rewritten: a reader's text changes by hand.

use crate::common::*;
use std::path::{Path, PathBuf};

mod examples;
mod reference;

/// `docs/src` in this source tree.
fn book_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src")
}

/// The book's Markdown pages, sorted.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension() == Some("md".as_ref()) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&book_src(), &mut out);
    out.sort();
    out
}

/// The page's path inside the book, for messages.
fn name(page: &Path) -> String {
    page.strip_prefix(book_src())
        .unwrap_or(page)
        .display()
        .to_string()
}

/// What `dyno ARGS` prints on standard output (it must succeed).
fn dyno_stdout(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dyno(dir.path()).args(args).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}
