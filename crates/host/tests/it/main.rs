//! The host crate's integration tests, in one binary (each module a file beside this one). Each
//! starts a server (the benchmark host, or an echo server behind the link emulator), so all sit
//! in `servers`: `./scripts/test --fast` skips them.

mod servers {
    mod link;
    mod store;
}
