//! The exit statuses of `dyno run`, each with what it means: the code uses the constants, and
//! `dyno run --help` ends with the list (the book's reference is made from that).

/// The exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// The exit code of a run that completed with one or more failed cases (the target erred, or a
/// check failed). Bad input is 1, a malformed command line 2; a failed case is data, recorded
/// and rendered, and this code tells a script about it.
pub const EXIT_FAILED_CASES: u8 = 3;

/// The exit code of a run whose cases all ran but that broke one of its thresholds.
pub const EXIT_THRESHOLDS: u8 = 4;

/// The exit code of a run that held its thresholds but that `--compare` found regressed.
pub const EXIT_REGRESSED: u8 = 5;

/// Every exit status of `dyno run`, with what it means: `dyno run --help` lists them from here
/// (and the book's reference from that).
const EXIT_STATUSES: [(u8, &str); 7] = [
    (
        0,
        "the run completed and no case failed (`n/a` and `invalid` cases are reported, not failures)",
    ),
    (
        1,
        "bad input, a refused target or results directory (nothing was run); or --compare refused runs whose settings differ (the run is kept)",
    ),
    (2, "a malformed command line"),
    (
        EXIT_FAILED_CASES,
        "the run completed and one or more cases failed (errors, a failed check); every case is still in the record and the report, and the notes say why",
    ),
    (
        EXIT_THRESHOLDS,
        "the run completed, no case failed, and a threshold failed (stderr names it)",
    ),
    (
        EXIT_REGRESSED,
        "the run completed, no case failed, every threshold held, and --compare found a figure regressed (stderr names each; compare.json holds the comparison)",
    ),
    (
        EXIT_INTERRUPTED,
        "stopped by Ctrl-C; finished cases are kept",
    ),
];

/// The exit statuses, as `dyno run --help` ends.
pub fn exit_help() -> String {
    let mut out = String::from("Exit status:\n");
    for (code, meaning) in EXIT_STATUSES {
        out.push_str(&format!("  {code:>3}  {meaning}\n"));
    }
    out
}
