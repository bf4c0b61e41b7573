//! dyno's engine: plans, the drivers' contract, the worker loop, measurement — the mechanisms
//! every suite runs on. It names no suite: the suites (the `suites` crate) implement
//! [`suite::Suite`] and are handed to the resolution and the runner.
//!
//! The engine produces [`results::RunRecord`]s and hands each to a sink as soon as a case ends.
//! How a record is shown is the `report` crate's.
//!
//! # Layout
//!
//! - [`plan`]: raw plans (TOML or flags), their one validation, resolved plans: the types, then
//!   `file` (reading TOML), `resolve` (the one resolution; each suite resolves its own part).
//! - [`suite`]: what a suite is (the `Suite` trait) and what the runner offers it (`Repeat`).
//! - [`driver`]: the traits every target implements (`TargetConfig`, `Store`, `Session`);
//!   [`error`]: a failed operation's class and message, below both the drivers and [`load`].
//! - [`clock`]: the monotonic clock, and a virtual one for exact tests.
//! - [`worker`]: the one worker loop (schedule × stop condition); [`schedule`]: open-loop arrivals.
//! - [`recorder`]: per-worker histograms and counters.
//! - [`fiber`]: clients as fibers, many per generator thread, each thread an event loop; the
//!   socket drivers wait on ([`fiber::Stream`]), sleeps and barriers that yield.
//! - [`load`]: the event-loop engine for request/response targets (closed and open loop).
//! - [`fault`]: fault plans (kill, restart, pause a target's process; partition or slow a
//!   member through its link; restart dyno's clients — on a schedule), levels, and the nemesis
//!   thread that does them on the run's clock, healing when the run ends; [`links`]: the links
//!   in front of a cluster's members and who made a connection.
//! - [`runner`]: runs a plan, target by target, and builds the run record: the one loop of
//!   repetitions (warm-up, progress, checkpoints, interruption, the sink) for every suite.
//! - [`monitor`]: samples the watched processes (CPU, RSS, threads, files, I/O) once a second;
//!   [`process`]: starts a target's server from the plan and stops it.
//! - [`shard`]: one of N generators running its part of a plan (`--shard I/N`), and the
//!   rendezvous that starts every shard's repetitions at one agreed instant.
//! - [`env`], [`pagecache`]: the machine's description; dropping and verifying the page cache.
//! - [`units`], [`suggest`]: parsing durations and sizes; "did you mean".

pub mod clock;
pub mod driver;
pub mod env;
pub mod error;
pub mod fault;
pub mod fiber;
pub mod graph;
pub mod links;
pub mod load;
pub mod monitor;
pub mod pagecache;
pub mod plan;
pub mod process;
pub mod recorder;
pub mod resolve;
pub mod ring;
pub mod runner;
pub mod schedule;
pub mod search;
pub mod shard;
pub mod suggest;
pub mod suite;
pub mod template;
pub mod timer;
pub mod units;
pub mod worker;
pub mod zipf;
