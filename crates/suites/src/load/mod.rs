//! The `load` suite: request/response load on services (`http://`, `https://`, `tcp://`), closed
//! or open loop, latency from the intended start. [`plan`] resolves its settings, [`rep`] turns
//! a repetition into the record's figures, [`table`] draws them.

mod flat;
mod merge;
pub mod plan;
pub mod rep;
mod requests;
pub mod settings;
pub mod table;

pub use plan::{Burst, LoadModel, LoadParams, MaxLag, parse_burst};

use engine::driver::Family;
use engine::plan::{Origin, PlanError, PlanTarget, RawPlan, Setting};
use engine::suite::Plan;
use engine::suite::{
    After, Clients, Common, Param, Point, Repeat, Settings, Suite, TargetError, settings,
};
use plan::{DEFAULT_CLIENTS, MAX_CLIENTS, MAX_RATE_PER_S};
use report::grid::Doc;
use report::sweep::Figure;
use report::view::{SweepFigure, rates};
use results::{Case, RunRecord, Status};
use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

/// The suite.
pub struct Load;

impl Settings for LoadParams {
    fn record(&self, plan: &mut results::PlanRecord) {
        plan.load = Some(LoadParams::record(self));
    }

    fn rep_duration_ns(&self) -> Option<u64> {
        self.duration_ns()
    }

    fn stream_into(&mut self, dir: &Path) {
        results::hlog::stream_into(&mut self.hlog, dir);
    }
}

/// Each repetition's p99 from the intended start, in seconds.
fn p99s(c: &Case) -> Vec<f64> {
    (c.reps.iter())
        .filter_map(|r| r.latency_ns.as_ref())
        .map(|l| l.p99 as f64 / 1e9)
        .collect()
}

impl results::Named for Load {
    fn name(&self) -> &'static str {
        "load"
    }
}

impl report::View for Load {
    fn table(&self, r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
        table::render(r, doc)
    }

    fn flat(&self) -> Option<&'static report::Flat> {
        Some(&flat::FLAT)
    }

    fn sweep_figures(&self, _: &str) -> Vec<SweepFigure> {
        vec![
            SweepFigure {
                suffix: "",
                what: "responses per second",
                figure: Figure::Rate,
                values: rates,
            },
            SweepFigure {
                suffix: "-p99",
                what: "p99 latency from the intended start",
                figure: Figure::Time,
                values: p99s,
            },
        ]
    }

    fn latency_from_intended_start(&self) -> bool {
        true
    }
}

impl Suite for Load {
    fn help(&self) -> &'static str {
        "request/response load on services (http://, https://, tcp://), closed or open loop"
    }

    fn family(&self) -> Family {
        Family::Request
    }

    fn settings(&self) -> &'static [&'static Setting] {
        settings::SETTINGS
    }

    /// Each shard offers 1/N of the rate, phased so the shards' arrivals interleave, on its part
    /// of the connections.
    fn shardable(&self) -> bool {
        true
    }

    fn shard_rule(&self, plan: &Plan, shard: engine::shard::Shard, _: bool) -> Result<(), String> {
        super::clients_split(plan, shard)
    }

    fn merge_detail(&self, parts: &results::merge::Parts) -> results::merge::Merged {
        merge::detail(parts)
    }

    fn owner_hint(&self) -> String {
        "load settings apply to http:// and tcp:// targets".into()
    }

    fn refuse(&self, setting: &str, _: &dyn Suite, at: &Origin) -> Option<PlanError> {
        match setting {
            "topology" => Some(
                PlanError::new(at.clone(), "topologies apply to the shootout suite")
                    .hint("a load target's address is its topology"),
            ),
            "nap" => Some(
                PlanError::new(
                    at.clone(),
                    "nap is how the store suites' clients wait; the load suite's event loops \
                     wait their own way",
                )
                .hint("leave out --nap"),
            ),
            _ => None,
        }
    }

    fn targets_hint(&self) -> &'static str {
        "the load suite runs against http:// and tcp:// targets"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: DEFAULT_CLIENTS,
            max: MAX_CLIENTS,
            why: "each connection takes a local port",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![
            Param {
                name: "clients",
                min: 1,
                max: u64::from(MAX_CLIENTS),
            },
            Param {
                max: MAX_RATE_PER_S as u64,
                ..Param::RATE
            },
        ]
    }

    /// wrk's 10 s, as 5 repetitions of 2 s: enough to compare two runs (`dyno compare`).
    fn default_reps(&self, quick: bool) -> u32 {
        match quick {
            true => engine::plan::QUICK_REPS,
            false => engine::plan::DEFAULT_REPS,
        }
    }

    /// wrk, wrk2 and gobench have no warm-up.
    fn default_warmup(&self) -> bool {
        false
    }

    fn resolve(&self, raw: &RawPlan, c: &Common) -> Result<Box<dyn Settings>, PlanError> {
        let l = plan::Raw(raw).resolve_load(c)?;
        let rate_sweep = (raw.sweeps.iter())
            .find(|s| s.value.trim_start().starts_with("rate"))
            .map(|s| s.at.clone());
        if let Some(at) = rate_sweep {
            // Each point of a rate sweep is an open loop at one steady rate for the duration.
            let steady = match &l.model {
                LoadModel::Open { profile, .. } => {
                    l.burst.is_none()
                        && profile.stages.len() == 1
                        && profile.stages[0].from_per_s == profile.stages[0].to_per_s
                }
                LoadModel::Closed { stop } => matches!(stop, engine::worker::Stop::Duration { .. }),
            };
            if !steady {
                return Err(PlanError::new(
                    at,
                    "a rate sweep runs each point at one steady rate for the duration",
                )
                .hint("drop --requests, --ramp, stages and --burst; give --duration"));
            }
        }
        Ok(Box::new(l))
    }

    fn tests(&self, _: &Plan, _: &Point) -> Vec<&'static str> {
        vec!["load"]
    }

    /// A load target is reached over the network.
    fn topology(&self, _: &PlanTarget) -> &'static str {
        "loopback"
    }

    fn run(
        &self,
        plan: &Plan,
        point: &Point,
        target: &PlanTarget,
        _: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        let mut p = settings::<LoadParams>(plan).clone();
        p.clients = point.clients;
        if let Some(rate) = point.swept("rate") {
            p.set_rate(rate as f64);
        }
        // A shard drives its part of the point's load.
        if let Some(s) = &plan.shard {
            p = p
                .for_shard(engine::shard::Shard {
                    index: s.index,
                    count: s.count,
                })
                .map_err(TargetError::Plan)?;
        }
        let ep = target.config.endpoint().map_err(TargetError::Reach)?;
        run.describe(
            results::Namespace {
                location: ep.addr.to_string(),
                created_by_dyno: false,
                temporary: false,
            },
            Default::default(),
        );
        let single = results::hlog::single(plan.targets.len(), plan.reps, plan.warmup);
        let comment = format!(
            "dyno {} load of {} ({}){}",
            env!("CARGO_PKG_VERSION"),
            target.name,
            results::redact_url(&target.url),
            (plan.shard.as_ref())
                .map(|s| format!(", shard {} of {}", s.index, s.count))
                .unwrap_or_default()
        );
        let live = Mutex::new(engine::load::Live::new(p.duration_ns()));
        let partial = |now: &engine::load::Live, cpu| rep::partial_rep(now, &p, cpu);
        run.repeat(Some(&live), Some(&partial), &mut |ctx| {
            let hlog = (p.hlog.as_ref()).map(|h| {
                results::hlog::path_for(h, &target.name, point.sweep.as_ref(), ctx.rep, single)
            });
            let seed = plan.seed.wrapping_add(u64::from(ctx.rep));
            let hlog = hlog.as_deref().map(|h| (h, comment.as_str()));
            let run = match rep::run_rep(
                &ep,
                &p,
                (seed, ctx.clients.clone(), ctx.start_at),
                ctx.interrupt,
                hlog,
                &live,
            ) {
                Ok(run) => run,
                Err(e) => return After::Fail(format!("the load could not run: {e}")),
            };
            let mut rep = run.rep;
            if let results::Detail::Load(l) = &mut rep.detail {
                l.started_ns = Some(ctx.clock.ns_at(run.result.started));
                // A shard's: the agreed start, and its first sends from it on rank 0's clock.
                l.start_unix_ns = ctx.start_unix_ns;
                if let (Some(at), Some(s)) = (ctx.start_unix_ns, &plan.shard) {
                    let zero = i128::from(run.result.zero_unix_ns)
                        - i128::from(s.clock_offset_ns)
                        - i128::from(at);
                    l.sends_ns = (run.result.sends_ns.iter())
                        .map(|&t| (zero + i128::from(t)).max(0) as u64)
                        .collect();
                }
            }
            let l = (rep.load()).expect("a load repetition has load figures");
            let (status, reason) = if run.result.interrupted {
                (Status::Interrupted, None)
            } else if l.responses == 0 && l.requests > 0 {
                let why = format!("no response to any of {} requests", l.requests);
                (Status::Failed, Some(why))
            } else if !l.generator.valid {
                (Status::Invalid, l.generator.reason.clone())
            } else {
                (Status::Ok, None)
            };
            ctx.report(engine::suite::TestOutcome {
                test: "load",
                status,
                reason,
                cache: None,
                rep: Some(rep),
                recorder: run.result.recorder,
                server: Vec::new(),
            });
            After::Next
        });
        Ok(())
    }
}
