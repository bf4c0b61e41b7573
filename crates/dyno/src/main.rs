//! `dyno`: parse the command line, run the command, print one error and exit non-zero on failure.

/// `eprintln!`, the line written in one piece: std's stderr is unbuffered and `eprintln!` writes
/// each part of its format apart, so a line could be cut by what another process writes to the
/// same terminal or pipe (seen in the book's example of `dyno merge … | head`).
macro_rules! eprintln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let mut line = format!($($t)*);
        line.push('\n');
        let _ = std::io::stderr().write_all(line.as_bytes());
    }};
}

mod adapter_check;
mod baseline;
mod cli;
mod cmd;
mod exit;
mod follow;
mod live;
mod profile;
mod push;
mod serve;
mod suites;
mod ui;

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
