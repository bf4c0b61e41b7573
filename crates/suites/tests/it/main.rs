//! The suites crate's integration tests, one binary.

mod resolve;
mod ycsb_generators;
