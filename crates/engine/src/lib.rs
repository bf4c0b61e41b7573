//! dyno's engine: plans, the drivers' contract, the worker loop, measurement and suites.
//!
//! The engine knows nothing of how results are shown: it produces [`results::RunRecord`]s and
//! hands each to a sink as soon as a case ends.
//!
//! # Layout
//!
//! - [`plan`]: raw plans (TOML or flags), their one validation, resolved plans: the types, then
//!   `file` (reading TOML), `resolve` (the one resolution), `load` (the load suite's settings).
//! - [`driver`]: the traits every target implements (`TargetConfig`, `Store`, `Session`);
//!   [`error`]: a failed operation's class and message, below both the drivers and [`load`].
//! - [`clock`]: the monotonic clock, and a virtual one for exact tests.
//! - [`worker`]: the one worker loop (schedule × stop condition); [`schedule`]: open-loop arrivals.
//! - [`recorder`]: per-worker histograms and counters.
//! - [`load`]: the event-loop engine for request/response targets (closed and open loop).
//! - [`shootout`]: the `shootout` suite (zodbshootout's six tests).
//! - [`magma`]: the `magma` suite (MagmaBenchmarker's tests), on [`graph`] objects.
//! - [`namespace`]: the `namespace` suite (folders: depth, width, clients).
//! - [`load_suite`]: the `load` suite: load runs turned into the record's figures.
//! - [`runner`]: runs a plan, target by target, and builds the run record.
//! - [`monitor`]: samples the watched processes (CPU, RSS, threads, files, I/O) once a second;
//!   [`process`]: starts a target's server from the plan and stops it.
//! - [`env`], [`pagecache`]: the machine's description; dropping and verifying the page cache.
//! - [`units`], [`suggest`]: parsing durations and sizes; "did you mean".

pub mod clock;
pub mod driver;
pub mod env;
pub mod error;
pub mod graph;
pub mod load;
pub mod load_suite;
pub mod magma;
pub mod monitor;
pub mod namespace;
pub mod pagecache;
pub mod plan;
pub mod process;
pub mod recorder;
pub mod runner;
pub mod schedule;
pub mod shootout;
pub mod suggest;
pub mod units;
pub mod worker;
