//! dyno's integration tests, in one binary: each module is a file beside this one, run against
//! the real `dyno` binary. One binary links the dependency tree once, not once per file.
//!
//! Tests that need a server or a browser sit in a `servers` module (this folder's `servers/`, or a
//! `servers` module inside a file): `./scripts/test --fast` skips every test whose path holds
//! `servers::`. A server is anything a test starts that listens on a port — nginx, Redis,
//! PostgreSQL, etcd, a Slurm cluster, ZEO, or dyno's own (`dyno serve`, the benchmark host of
//! `host:` and `--topology`, a process a plan starts) — and such tests are the ones that measure
//! time against it.

mod common;

mod aa;
mod adapters;
mod book;
mod checks;
mod compare;
mod consistency;
mod faults;
mod fixtures;
mod history;
mod input;
mod interrupt;
mod k8s;
mod link;
mod live;
mod load;
mod magma;
mod mix;
mod monitor;
mod output;
mod run;
mod search;
mod shard;
mod snapshots;
mod soak;
mod suites;
mod sweep;
mod templates;
mod thresholds;
mod ycsb;

mod servers {
    mod append;
    mod book;
    mod grpc;
    mod html;
    mod levels;
    mod mysql;
    mod nginx;
    mod partition;
    mod postgres;
    mod push;
    mod redis;
    mod sentinel;
    mod slurm;
    mod sql;
    mod sql_ends;
    mod sql_session;
    mod sql_tables;
    mod ui;
    mod zodb;
}
