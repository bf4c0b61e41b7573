//! Dropping the operating system's page cache for the files of a target, and proving it.
//!
//! The `cold` test needs the storage's own caches gone, including the kernel's cache of the
//! target's files. Each file is flushed (`fdatasync`, so no page stays dirty and pinned), then
//! `posix_fadvise(DONTNEED)` asks the kernel to evict it, then `mincore` counts the pages still
//! resident. The result says how many pages remained, so a "cold" figure can be trusted — or, on a
//! filesystem that keeps everything in memory (tmpfs), be declared unreachable.

use crate::driver::CacheDrop;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Pages of a set of files, and how many are in memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Residency {
    pub files: u64,
    pub pages: u64,
    pub resident: u64,
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

/// Pages of `file` and how many are resident in the page cache.
fn resident(file: &File) -> io::Result<(u64, u64)> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok((0, 0));
    }
    let page = page_size();
    let pages = len.div_ceil(page);
    // SAFETY: mapping a readable file we hold open, read-only and shared; unmapped below.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut vec = vec![0u8; pages as usize];
    // SAFETY: `addr` maps `len` bytes; `vec` has one byte per page of that range.
    let rc = unsafe { libc::mincore(addr, len as usize, vec.as_mut_ptr()) };
    let err = io::Error::last_os_error();
    // SAFETY: unmapping exactly what was mapped.
    unsafe { libc::munmap(addr, len as usize) };
    if rc != 0 {
        return Err(err);
    }
    Ok((pages, vec.iter().filter(|b| **b & 1 == 1).count() as u64))
}

/// Flushes and evicts each file from the page cache; returns the residency measured afterwards.
pub fn drop_files(paths: &[PathBuf]) -> io::Result<Residency> {
    let mut r = Residency::default();
    for p in paths {
        let f = match File::open(p) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", p.display()))),
        };
        f.sync_data()?;
        // SAFETY: a valid descriptor; offset 0 and length 0 mean the whole file.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        let (pages, res) = resident(&f)?;
        r.files += 1;
        r.pages += pages;
        r.resident += res;
    }
    Ok(r)
}

/// Every regular file under `dir`, recursively.
pub fn files_under(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let t = e.file_type()?;
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    Ok(out)
}

/// What a drop achieved, in words for the record: done when the pages are gone, not reachable
/// (with the reason) when the filesystem kept them all.
pub fn describe(r: &Residency, fs: &str, what: &str) -> CacheDrop {
    if r.pages > 0 && r.resident == r.pages {
        return CacheDrop::NotReachable(format!(
            "the {fs} filesystem keeps files in memory: all {} pages of {} stayed resident after \
             posix_fadvise(DONTNEED)",
            r.pages, what
        ));
    }
    CacheDrop::Done(format!(
        "{what}: page cache dropped (fdatasync + posix_fadvise DONTNEED on {} file{}); \
         mincore: {} of {} pages resident after",
        r.files,
        if r.files == 1 { "" } else { "s" },
        r.resident,
        r.pages
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_written_then_read_file_is_evicted_on_disk_filesystems() {
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let p = dir.path().join("data");
        let mut f = File::create(&p).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        drop(f);
        let mut buf = Vec::new();
        File::open(&p).unwrap().read_to_end(&mut buf).unwrap();
        let (pages, before) = resident(&File::open(&p).unwrap()).unwrap();
        assert_eq!(pages, (1u64 << 20).div_ceil(page_size()));
        assert!(before > 0, "just read, so some pages are cached");
        let r = drop_files(&[p.clone(), dir.path().join("missing")]).unwrap();
        assert_eq!(r.files, 1);
        let fs = crate::env::filesystem(&p);
        if fs == "tmpfs" {
            assert!(matches!(describe(&r, &fs, "x"), CacheDrop::NotReachable(_)));
        } else {
            assert_eq!(r.resident, 0, "on {fs} every page is evicted");
            assert!(matches!(describe(&r, &fs, "x"), CacheDrop::Done(w) if w.contains("0 of")));
        }
    }
}
