//! The environment a run happened on, for its record: CPU, cores, memory, OS, kernel, and the
//! filesystem under each target's data. Read from `/proc`, `/etc/os-release` and `statfs`; a
//! value that cannot be read is `unknown`, never a failure.

use std::collections::BTreeMap;
use std::path::Path;

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn field<'a>(text: &'a str, key: &str, sep: char) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(sep)?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// The CPU model name.
pub fn cpu_model() -> String {
    read("/proc/cpuinfo")
        .and_then(|t| field(&t, "model name", ':').map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// Logical CPUs this process may run on.
pub fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// Physical memory in bytes.
pub fn memory_bytes() -> u64 {
    read("/proc/meminfo")
        .and_then(|t| {
            let kb = field(&t, "MemTotal", ':')?;
            kb.trim_end_matches("kB").trim().parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// Distribution name and version.
pub fn os() -> String {
    read("/etc/os-release")
        .and_then(|t| field(&t, "PRETTY_NAME", '=').map(|v| v.trim_matches('"').to_string()))
        .unwrap_or_else(|| std::env::consts::OS.to_string())
}

/// Kernel release.
pub fn kernel() -> String {
    read("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// The machine's host name (the kernel's), `unknown` if unreadable.
pub fn hostname() -> String {
    read("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The filesystem type of the nearest existing ancestor of `path` (e.g. `ext4`, `tmpfs`).
pub fn filesystem(path: &Path) -> String {
    let mut p = path;
    loop {
        if p.exists() {
            break;
        }
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent,
            _ => {
                p = Path::new(".");
                break;
            }
        }
    }
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
        return "unknown".into();
    };
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a valid out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return "unknown".into();
    }
    fs_name(st.f_type as u64)
}

/// Names of common filesystem magic numbers (see statfs(2)).
fn fs_name(magic: u64) -> String {
    match magic {
        0xEF53 => "ext4",
        0x0102_1994 => "tmpfs",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x794C_7630 => "overlayfs",
        0x6969 => "nfs",
        0x2FC1_2FC1 => "zfs",
        0x0100_2994 | 0x2011_BAB0 => "exfat",
        0x6573_5546 => "fuse",
        0x858_458F6 => "ramfs",
        0xF2F5_2010 => "f2fs",
        _ => return format!("unknown (0x{magic:x})"),
    }
    .to_string()
}

/// The environment record, with the filesystem of each named target path.
pub fn environment(paths: &BTreeMap<String, Option<std::path::PathBuf>>) -> results::Environment {
    results::Environment {
        cpu_model: cpu_model(),
        cores: cores(),
        memory_bytes: memory_bytes(),
        os: os(),
        kernel: kernel(),
        filesystems: paths
            .iter()
            .map(|(name, p)| {
                (
                    name.clone(),
                    p.as_deref().map_or_else(|| "none".to_string(), filesystem),
                )
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_is_described() {
        assert!(cores() >= 1);
        assert!(memory_bytes() > 0);
        assert_ne!(kernel(), "unknown");
        let tmp = tempfile::tempdir().unwrap();
        let fs = filesystem(&tmp.path().join("not/yet/there"));
        assert!(!fs.starts_with("unknown"), "{fs}");
    }
}
