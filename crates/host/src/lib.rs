//! What dyno serves itself: the object-store benchmark host (`dyno serve`), the payload and HTTP
//! reference servers, and the link emulator.
//!
//! Empty for now: the benchmark host, remote targets and link emulation come with the `magma`
//! suite (issue 3), the reference servers with request/response load (issue 4). The crate exists so
//! the workspace has its final shape and dependencies keep pointing one way.
