//! The suites this dyno runs — the `suites` crate's registry, and in this crate's own tests the
//! suites written there (`tally`, …: [`TEST_ONLY`]) — as the plan, the runner and the renderers
//! see them.

use engine::suite::Suite;
use std::sync::LazyLock;
use suites::Entry;

/// Declares the suites written in this crate's tests: a module (a file or folder beside this
/// one) and its suite, one line each.
#[cfg(test)]
macro_rules! test_suites {
    ($($module:ident :: $suite:ident),* $(,)?) => {
        $(mod $module;)*
        const TEST_ONLY: &[&dyn Entry] = &[$(&$module::$suite),*];
    };
}

// The suites that exist only in this crate's tests: one line each.
#[cfg(test)]
test_suites! {
    tally::Tally,
    census::Census,
}

#[cfg(not(test))]
const TEST_ONLY: &[&dyn Entry] = &[];

/// The `suites` crate's suites, then the tests' own.
static ALL: LazyLock<Vec<&'static dyn Entry>> = LazyLock::new(|| {
    (suites::BUILT_IN.iter())
        .chain(TEST_ONLY)
        .copied()
        .collect()
});

static SUITES: LazyLock<Vec<&'static dyn Suite>> = LazyLock::new(|| suites::suites(&ALL));

/// Every suite `dyno run` may name.
pub fn all() -> &'static [&'static dyn Suite] {
    &SUITES
}

/// `--suite`'s help: every suite with its line, and how a run without one chooses.
pub fn help() -> String {
    let each: Vec<String> = (all().iter())
        .map(|s| format!("{}: {}", s.name(), s.help()))
        .collect();
    format!(
        "Suite to run — {} [default: the first whose operations every target speaks: load for \
         http:// and tcp://, else shootout]",
        each.join("; ")
    )
}

/// `--sweep`'s help: the form, and what each suite sweeps.
pub fn sweep_help() -> String {
    let each: Vec<String> = (all().iter())
        .filter(|s| !s.sweepable().is_empty())
        .map(|s| {
            let params: Vec<&str> = s.sweepable().iter().map(|p| p.name).collect();
            format!("{} ({})", params.join(", "), s.name())
        })
        .collect();
    format!(
        "Sweep a parameter: PARAM=LIST or PARAM=A..B[:STEP], e.g. depth=1..30, width=1,10,100, \
         clients=1..64:8. Repeat for more sweeps (each varies one parameter; the others stay at \
         the plan's). Parameters: {}",
        each.join("; ")
    )
}

/// Every suite's settings: what a plan file and the command line may say.
pub fn catalogue() -> engine::plan::Catalogue {
    engine::suite::catalogue(all())
}

static VIEWS: LazyLock<Vec<&'static dyn report::View>> = LazyLock::new(|| suites::views(&ALL));

/// How each suite's records read, for the renderers.
pub fn views() -> report::Views<'static> {
    report::Views(&VIEWS)
}
