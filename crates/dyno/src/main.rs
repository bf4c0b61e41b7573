//! `dyno`: parse the command line, run the command, print one error and exit non-zero on failure.

mod adapter_check;
mod baseline;
mod cli;
mod cmd;
mod exit;
mod live;
mod profile;
mod serve;
mod suites;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::from(1)
        }
    }
}
