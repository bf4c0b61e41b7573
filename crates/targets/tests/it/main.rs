//! The drivers' integration tests, in one binary (each module a file beside this one). The
//! tests that need a server (PostgreSQL, or dyno's reference servers for the load engine) sit in
//! `servers` modules: `./scripts/test --fast` skips them.

mod conformance;
mod render;

mod servers {
    mod load;
}
