//! The suites this dyno runs — the engine's registry, and in this crate's own tests one more
//! (`tally`, a suite written in a test module) — as the plan, the runner and the renderers see
//! them.

use engine::driver::{ConfigError, TargetConfig};
use engine::resolve::Resolver;
use engine::suite::Suite;
use std::collections::BTreeMap;

const BUILT_IN: usize = engine::suites::BUILT_IN.len();

#[cfg(not(test))]
static ALL: [&dyn Suite; BUILT_IN] = engine::suites::BUILT_IN;

#[cfg(test)]
static ALL: [&dyn Suite; BUILT_IN + 1] = {
    let b = engine::suites::BUILT_IN;
    let mut all: [&dyn Suite; BUILT_IN + 1] = [&crate::tally::Tally; BUILT_IN + 1];
    let mut i = 0;
    while i < BUILT_IN {
        all[i] = b[i];
        i += 1;
    }
    all
};

/// Every suite `dyno run` may name.
pub fn all() -> &'static [&'static dyn Suite] {
    &ALL
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

/// How each suite's records read, for the renderers.
pub fn views() -> Vec<&'static dyn report::View> {
    engine::suite::views(all())
}

/// The drivers' resolver, with this build's suites.
pub struct Plans;

impl Resolver for Plans {
    fn suites(&self) -> &[&'static dyn Suite] {
        all()
    }

    fn schemes(&self) -> Vec<&'static str> {
        targets::Registry.schemes()
    }

    fn query_options(&self, scheme: &str) -> bool {
        targets::Registry.query_options(scheme)
    }

    fn default_urls(&self) -> Vec<&'static str> {
        targets::Registry.default_urls()
    }

    fn configure(
        &self,
        scheme: &str,
        rest: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<Box<dyn TargetConfig>, ConfigError> {
        targets::Registry.configure(scheme, rest, options)
    }
}
