//! The command line, as clap parses it. Values stay raw here; `commands::resolve` checks them
//! (the same code that checks a plan file), so a bad `--objects` and a bad `objects =` get the
//! same message with their own place.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "dyno",
    version,
    about = "A dynamometer for storage systems and network services",
    long_about = "A dynamometer for storage systems and network services: put a system on it, run \
                  standard or custom workloads, get rates and full latency distributions you can trust.\n\n\
                  `dyno run` with no target runs the shootout suite on the embedded targets \
                  (mem, sqlite, fs, lmdb), each in a fresh temporary namespace."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a suite on targets (URLs) or a plan file.
    Run(RunArgs),
    /// Check a plan file without running anything (the checks `run` makes).
    Validate {
        /// The plan file (TOML).
        plan: PathBuf,
    },
    /// Render saved run records again, running nothing.
    Report {
        /// A results directory (holding run.json), a directory of them, or a run.json file.
        dir: PathBuf,
        /// Output format: table, markdown, csv or json.
        #[arg(long, short = 'f', default_value = "table")]
        format: String,
    },
    /// List the drivers: URL forms, operation families and options.
    Targets,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Target URLs (mem:, sqlite:PATH, fs:DIR, lmdb:DIR, mock:?latency=1ms …), or one plan
    /// file ending in .toml. Without any: mem, sqlite, fs and lmdb in temporary namespaces.
    pub targets: Vec<String>,
    /// Suite to run.
    #[arg(long)]
    pub suite: Option<String>,
    /// Objects per client per test (zodbshootout's -n) [default: 1000; 100 with --quick].
    #[arg(long, short = 'n', allow_negative_numbers = true)]
    pub objects: Option<i64>,
    /// Concurrent clients (zodbshootout's -c) [default: 2].
    #[arg(long, short = 'c', allow_negative_numbers = true)]
    pub concurrency: Option<i64>,
    /// Measured repetitions; the table shows the best [default: 3; 1 with --quick].
    #[arg(long, short = 'r', allow_negative_numbers = true)]
    pub reps: Option<i64>,
    /// Bytes per object [default: 300].
    #[arg(long, short = 's', allow_negative_numbers = true)]
    pub size: Option<i64>,
    /// Seed of the object contents [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// Skip the unmeasured warm-up repetition.
    #[arg(long)]
    pub no_warmup: bool,
    /// A fast look: 100 objects per client, one repetition (explicit values still win).
    #[arg(long, short = 'q')]
    pub quick: bool,
    /// Where to write the run record [default: ./dyno-results/<UTC time>/].
    #[arg(long, short = 'o')]
    pub out: Option<String>,
    /// Output format: table, markdown, csv or json (json prints the record).
    #[arg(long, short = 'f')]
    pub format: Option<String>,
}
