//! The `shootout` suite: zodbshootout's six tests on key-value stores (see [`run`]), drawn as
//! tests × targets with the rates as grouped bars.

mod object;
pub mod run;

pub use run::{Params, Test, key};

use engine::driver::Family;
use engine::plan::setting::shared;
use engine::plan::{
    MAX_CACHE_BYTES, MAX_CLIENTS, MAX_OBJECTS, MAX_SIZE, MIN_SIZE, Origin, PlanError, PlanTarget,
    RawPlan, Setting,
};
use engine::suite::Plan;
use engine::suite::{
    Clients, Common, NoSettings, Param, Point, Repeat, Settings, Suite, TargetError,
};
use std::sync::atomic::AtomicBool;

/// The suite.
pub struct Shootout;

impl results::Named for Shootout {
    fn name(&self) -> &'static str {
        "shootout"
    }
}

impl report::View for Shootout {
    fn rate_bars(&self) -> bool {
        true
    }
}

/// What the suite reads.
static SETTINGS: &[&Setting] = &[
    &shared::OBJECTS,
    &shared::SIZE,
    &shared::CLIENTS,
    &shared::THREADS,
    &shared::IO,
    &shared::NAP,
    &shared::TOPOLOGY,
];

impl Suite for Shootout {
    fn help(&self) -> &'static str {
        "zodbshootout's six tests (add, update, warm, cold, hot, steamin) on key-value stores"
    }

    fn family(&self) -> Family {
        Family::Kv
    }

    fn settings(&self) -> &'static [&'static Setting] {
        SETTINGS
    }

    fn targets_hint(&self) -> &'static str {
        "http:// and tcp:// targets run the load suite: give them in a run of their own"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: engine::plan::DEFAULT_CLIENTS,
            max: MAX_CLIENTS,
            why: "each client is an OS thread",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![
            Param::CLIENTS,
            Param {
                name: "objects",
                min: 1,
                max: MAX_OBJECTS,
            },
            Param {
                name: "size",
                min: MIN_SIZE as u64,
                max: MAX_SIZE as u64,
            },
        ]
    }

    fn resolve(&self, raw: &RawPlan, c: &Common) -> Result<Box<dyn Settings>, PlanError> {
        // The client caches are sized for the largest point of any sweep.
        let most = |param: &str, base: u64| {
            (c.sweeps.iter())
                .filter(|s| s.param == param)
                .flat_map(|s| s.values.iter().copied())
                .max()
                .unwrap_or(base)
                .max(base)
        };
        let (objects, concurrency, size) = (
            most("objects", c.objects),
            most("clients", u64::from(c.clients)),
            most("size", c.size as u64),
        );
        let cache_bytes = objects * concurrency * size;
        if cache_bytes > MAX_CACHE_BYTES {
            let at = [&shared::OBJECTS, &shared::CLIENTS, &shared::SIZE]
                .into_iter()
                .find_map(|s| raw.settings.int(s))
                .map(|s| s.at)
                .unwrap_or(Origin::Default);
            return Err(PlanError::new(
                at,
                format!(
                    "objects × concurrency × size = {objects} × {concurrency} × {size} B = {} MiB, \
                     over the {} MiB the client object caches may hold",
                    cache_bytes >> 20,
                    MAX_CACHE_BYTES >> 20
                ),
            )
            .hint("lower one of objects (-n), concurrency (-c) or size"));
        }
        Ok(Box::new(NoSettings))
    }

    fn tests(&self, _: &Plan, _: &Point) -> Vec<&'static str> {
        Test::ALL.iter().map(|t| t.name()).collect()
    }

    fn run(
        &self,
        plan: &Plan,
        point: &Point,
        target: &PlanTarget,
        interrupt: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        let params = Params {
            objects: point.objects,
            clients: point.clients,
            generators: plan.generators(),
            size: point.size,
            seed: plan.seed,
        };
        let virtual_time = target.config.virtual_time();
        super::on_store(target, interrupt, run, &|store, interrupt| {
            Box::new(run::Shootout::new(store, params, virtual_time, interrupt))
        })
    }
}
