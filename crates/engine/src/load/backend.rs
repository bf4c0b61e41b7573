//! Which I/O backend a load run's threads use (`--io auto|uring|epoll`), and why: io_uring
//! where the kernel allows it and the protocol runs on it, epoll otherwise. The run's record
//! says which ran and why.

use super::*;
pub use crate::ring::{Io, IoUsed, REFUSE_URING, uring_allowed};

/// The backend for `spec`: an error when io_uring was asked for and cannot run.
pub fn choose(spec: &LoadSpec) -> Result<IoUsed, String> {
    crate::ring::choose(spec.io)
}
