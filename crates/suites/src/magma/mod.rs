//! The `magma` suite: MagmaBenchmarker's tests on object stores ([`run`]), printed as
//! MagmaBenchmarker prints them ([`table`]); [`list`] names the tests.

pub mod list;
pub mod run;
pub mod table;

pub use list::{MAGMA, MagmaTest, Unit, magma_test};
pub use run::Params;

use engine::driver::Family;
use engine::plan::setting::shared;
use engine::plan::{
    Kind, Origin, PlanError, PlanTarget, RawPlan, Setting, bounded, parse_duration_setting,
};
use engine::suite::Plan;
use engine::suite::{
    Clients, Common, Param, Point, Repeat, Settings, Suite, TargetError, settings,
};
use report::grid::Doc;
use report::sweep::Figure;
use report::view::{SweepFigure, times};
use results::RunRecord;
use std::io;
use std::sync::atomic::AtomicBool;

/// MagmaBenchmarker's `thousands`; `--quick` uses 20.
pub static THOUSANDS: Setting = Setting {
    key: "thousands",
    short: None,
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "Magma: MagmaBenchmarker's `thousands`: elements per array, levels of the deep chain, \
           objects added per collection test [default: 1000; 20 with --quick].",
    heading: Some("Magma suite"),
};

pub static TEST_TIME: Setting = Setting {
    key: "test_time",
    short: None,
    aliases: &[],
    kind: Kind::Text,
    value_name: "",
    help: "Magma: how long each rate test repeats its operation, at least once [default: 1s; \
           100ms with --quick].",
    heading: Some("Magma suite"),
};

pub const DEFAULT_THOUSANDS: u64 = 1000;
pub const QUICK_THOUSANDS: u64 = 20;
/// T² pointers and T arrays of T references come back in one batched read; 2000 keeps it
/// (32 MiB) under the host's frame limit.
pub const MAX_THOUSANDS: u64 = 2000;
/// Each rate test repeats its operation for 1 s (`--quick`: 0.1 s), at least once.
pub const DEFAULT_TEST_NS: u64 = 1_000_000_000;
pub const QUICK_TEST_NS: u64 = 100_000_000;

/// The suite.
pub struct Magma;

impl Settings for Params {
    fn record(&self, plan: &mut results::PlanRecord) {
        plan.magma = Some(results::MagmaPlanRecord {
            thousands: self.thousands,
            test_ns: self.test_ns,
        });
    }
}

impl results::Named for Magma {
    fn name(&self) -> &'static str {
        "magma"
    }
}

impl report::View for Magma {
    fn table(&self, r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
        table::render(r, doc)
    }

    fn sweep_figures(&self, test: &str) -> Vec<SweepFigure> {
        if magma_test(test).is_some_and(|m| m.unit == Unit::Seconds) {
            return vec![SweepFigure {
                suffix: "",
                what: "time of one run",
                figure: Figure::Time,
                values: times,
            }];
        }
        report::view::Generic.sweep_figures(test)
    }
}

/// What the suite reads.
static SETTINGS: &[&Setting] = &[&THOUSANDS, &TEST_TIME, &shared::TOPOLOGY];

impl Suite for Magma {
    fn help(&self) -> &'static str {
        "MagmaBenchmarker's tests (connect, reads, writes, collections) on object stores"
    }

    fn family(&self) -> Family {
        Family::Graph
    }

    fn settings(&self) -> &'static [&'static Setting] {
        SETTINGS
    }

    fn refuse(&self, setting: &str, owner: &dyn Suite, at: &Origin) -> Option<PlanError> {
        Some(
            PlanError::new(
                at.clone(),
                format!(
                    "{setting} is a setting of the {} suite; magma runs one client session",
                    owner.name()
                ),
            )
            .hint(
                "size the magma suite with --thousands (elements per array, levels of the \
                 chain, objects per collection)",
            ),
        )
        .filter(|_| ["objects", "concurrency", "size"].contains(&setting))
    }

    fn targets_hint(&self) -> &'static str {
        "http:// and tcp:// targets run the load suite: give them in a run of their own"
    }

    fn clients(&self) -> Clients {
        crate::shootout::Shootout.clients()
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![Param {
            name: "thousands",
            min: 1,
            max: MAX_THOUSANDS,
        }]
    }

    fn resolve(&self, raw: &RawPlan, c: &Common) -> Result<Box<dyn Settings>, PlanError> {
        let thousands = bounded(
            raw.settings.int(&THOUSANDS),
            "thousands",
            if c.quick {
                QUICK_THOUSANDS
            } else {
                DEFAULT_THOUSANDS
            },
            1,
            MAX_THOUSANDS,
            "T arrays of T references come back in one batched read",
        )?;
        let test_ns = match &raw.settings.text(&TEST_TIME) {
            None if c.quick => QUICK_TEST_NS,
            None => DEFAULT_TEST_NS,
            Some(t) => parse_duration_setting(
                t,
                "test_time",
                3600,
                "each rate test repeats its operation this long, e.g. 1s",
            )?,
        };
        Ok(Box::new(Params {
            thousands,
            test_ns,
            seed: c.seed,
        }))
    }

    fn tests(&self, _: &Plan, _: &Point) -> Vec<&'static str> {
        MAGMA.iter().map(|t| t.name).collect()
    }

    fn run(
        &self,
        plan: &Plan,
        point: &Point,
        target: &PlanTarget,
        interrupt: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        let mut params = *settings::<Params>(plan);
        if let Some(t) = point.swept("thousands") {
            params.thousands = t;
        }
        let virtual_time = target.config.virtual_time();
        super::on_store(target, interrupt, run, &|store, interrupt| {
            Box::new(run::Magma::new(store, params, virtual_time, interrupt))
        })
    }
}
