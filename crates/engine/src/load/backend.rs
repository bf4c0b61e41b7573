//! Which I/O backend a load run's threads use (`--io auto|uring|epoll`), and why: io_uring
//! where the kernel allows it and the protocol runs on it, epoll otherwise. The run's record
//! says which ran and why.

use super::*;

/// What the plan asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Io {
    /// io_uring where it can run, epoll otherwise.
    #[default]
    Auto,
    /// io_uring, or the run fails saying why not.
    Uring,
    Epoll,
}

impl Io {
    pub fn parse(text: &str) -> Option<Io> {
        match text.trim() {
            "auto" => Some(Io::Auto),
            "uring" | "io_uring" | "io-uring" => Some(Io::Uring),
            "epoll" => Some(Io::Epoll),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Io::Auto => "auto",
            Io::Uring => "uring",
            Io::Epoll => "epoll",
        }
    }
}

/// The backend that ran, and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoUsed {
    /// `io_uring` or `epoll`.
    pub backend: &'static str,
    pub reason: String,
}

/// Set (to anything) in dyno's environment, io_uring is taken as refused by the kernel: the
/// fallback's test, and a way out should a kernel misbehave.
pub const REFUSE_URING: &str = "DYNO_IO_URING_REFUSED";

/// The oldest kernel whose io_uring has all the backend uses: multishot receive (6.0), buffer
/// rings (5.19), deferred completion work (6.1).
const OLDEST_KERNEL: (u32, u32) = (6, 1);

/// This kernel's release, major and minor (`None` where it does not say).
fn kernel() -> Option<(u32, u32, String)> {
    // SAFETY: uname fills the struct it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    // SAFETY: the release is a NUL-terminated string within the struct.
    let release = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut n = release
        .split(|c: char| !c.is_ascii_digit())
        .map(str::parse::<u32>);
    match (n.next(), n.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => Some((major, minor, release)),
        _ => None,
    }
}

/// Whether this process may use io_uring as the backend does: a kernel new enough, and a ring
/// made and dropped; why not, if not.
pub fn uring_allowed() -> Result<(), String> {
    if std::env::var_os(REFUSE_URING).is_some() {
        return Err(format!("refused ({REFUSE_URING} is set)"));
    }
    match kernel() {
        Some((major, minor, _)) if (major, minor) >= OLDEST_KERNEL => {}
        Some((.., release)) => {
            return Err(format!(
                "needs Linux {}.{} or later (this is {release})",
                OLDEST_KERNEL.0, OLDEST_KERNEL.1
            ));
        }
        None => return Err("cannot tell this kernel's release".into()),
    }
    match io_uring::IoUring::new(8) {
        Ok(_) => Ok(()),
        Err(e) => Err(match e.raw_os_error() {
            Some(libc::EPERM) => format!(
                "refused by the kernel ({e}: kernel.io_uring_disabled, or a seccomp filter)"
            ),
            Some(libc::ENOSYS) => format!("not in this kernel ({e})"),
            _ => format!("refused ({e})"),
        }),
    }
}

/// The backend for `spec`: an error when io_uring was asked for and cannot run.
pub fn choose(spec: &LoadSpec) -> Result<IoUsed, String> {
    let epoll = |reason: String| IoUsed {
        backend: "epoll",
        reason,
    };
    if spec.io == Io::Epoll {
        return Ok(epoll("asked for (--io epoll)".into()));
    }
    let unsupported = if spec.protocol.session().is_some() {
        Some(
            "a multiplexed protocol (HTTP/2, gRPC) runs on epoll: io_uring carries plain connections only so far",
        )
    } else if spec.protocol.alpn().is_some() || !matches!(spec.protocol.channel(), Ok(None)) {
        Some("TLS runs on epoll: io_uring carries plain connections only so far")
    } else {
        None
    };
    let why_not = match unsupported {
        Some(why) => Err(why.to_string()),
        None => uring_allowed().map_err(|e| format!("io_uring {e}")),
    };
    match (why_not, spec.io) {
        (Ok(()), Io::Uring) => Ok(IoUsed {
            backend: "io_uring",
            reason: "asked for (--io uring)".into(),
        }),
        (Ok(()), _) => Ok(IoUsed {
            backend: "io_uring",
            reason: "the kernel allows it (--io auto)".into(),
        }),
        (Err(why), Io::Uring) => Err(format!(
            "--io uring: {why}; leave --io out (auto falls back to epoll) or give --io epoll"
        )),
        (Err(why), _) => Ok(epoll(format!("{why} (--io auto)"))),
    }
}
