//! The one resolution of a raw plan: values checked against their bounds, defaults filled in,
//! target URLs handed to their drivers, sweeps and topologies expanded.

use crate::driver::{ConfigError, Family, TargetConfig};
use crate::plan::setting::shared;
use crate::plan::*;
use crate::suggest::did_you_mean;
use crate::suite::{Common, Plan, Suite};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

mod check;
pub use check::DEFAULT_BUDGET;
mod faults;

mod targets;
pub use targets::*;
mod processes;
pub use processes::*;

/// What resolution needs from the drivers: their schemes and a pure `configure`.
pub trait Drivers {
    /// Known URL schemes, for "did you mean".
    fn schemes(&self) -> Vec<&'static str>;
    /// Whether a `?query` in this scheme's URLs holds driver options (else it stays in the URL).
    fn query_options(&self, scheme: &str) -> bool {
        let _ = scheme;
        true
    }
    /// URLs used when the plan names no target.
    fn default_urls(&self) -> Vec<&'static str>;
    /// Validates `scheme:rest` with `options` and returns the configured target. Touches nothing.
    fn configure(
        &self,
        scheme: &str,
        rest: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<Box<dyn TargetConfig>, ConfigError>;
}

impl RawPlan {
    /// Checks every value, fills defaults and configures each target through `drivers`; the
    /// plan may name one of `suites` (in the order a run without one tries them).
    pub fn resolve(
        self,
        suites: &[&'static dyn Suite],
        drivers: &dyn Drivers,
    ) -> Result<Plan, PlanError> {
        let named = match &self.suite {
            None => None,
            Some(s) => match suites.iter().find(|x| x.answers_to(&s.value)) {
                Some(x) => Some((*x, s.at.clone())),
                None => {
                    let names: Vec<&str> = suites.iter().map(|s| s.name()).collect();
                    return Err(PlanError::new(
                        s.at.clone(),
                        format!(
                            "unknown suite {:?}; {}suites: {}",
                            s.value,
                            did_you_mean(&s.value, names.iter().copied()),
                            names.join(", ")
                        ),
                    ));
                }
            },
        };
        let out = match &self.out {
            Some(o) if o.value.trim().is_empty() => {
                return Err(PlanError::new(o.at.clone(), "output directory is empty")
                    .hint("name a directory, or leave it out for ./dyno-results/<time>/"));
            }
            o => o.as_ref().map(|o| PathBuf::from(&o.value)),
        };

        // Targets first: their families decide the suite when none is named.
        let (targets, target_at) = self.resolve_targets(drivers, named.as_ref())?;
        let suite: &'static dyn Suite = match named {
            Some((s, _)) => s,
            None => suites
                .iter()
                .find(|s| (targets.iter()).all(|t| t.config.families().contains(&s.family())))
                .or(suites.first())
                .copied()
                .expect("a registry holds at least one suite"),
        };
        check_families(suite, &targets, &target_at)?;
        self.only_settings_of(suite, suites)?;

        let shared = self.shared(suite)?;
        let clients_io = self.clients_io(shared.io, shared.nap)?;
        let sweeps = self.resolve_sweeps(suite)?;
        let settings = suite.resolve(&self, &shared.common(self.quick, &sweeps))?;
        let (watch_pids, watch_names) = self.watched()?;
        let (faults, levels) = self.resolve_faults(&targets)?;
        let (thresholds, abort_after) = self.resolve_gates()?;
        let find_max = self.resolve_search(suite, targets.len())?;
        let check = self.resolve_check(suite, &thresholds)?;
        Ok(Plan {
            check,
            levels,
            thresholds,
            find_max,
            abort_after,
            baseline: None,
            baseline_ref: self.baseline,
            watch_pids,
            watch_names,
            shard: None,
            faults,
            source: self
                .file
                .map_or_else(|| "command line".to_string(), |p| p.display().to_string()),
            suite,
            settings,
            objects: shared.objects,
            clients: shared.clients,
            threads: shared.threads,
            io: shared.io,
            clients_io,
            nap: shared.nap,
            size: shared.size,
            reps: shared.reps,
            warmup: self.warmup.map_or(suite.default_warmup(), |w| w.value),
            seed: shared.seed,
            targets,
            out,
            format: self.format,
            sweeps,
        })
    }

    /// The backend the clients' generator threads run on: `--io uring` that cannot run is an
    /// error here, before anything starts, as is a nap on the ring (it naps on epoll only).
    fn clients_io(
        &self,
        io: crate::ring::Io,
        nap: Duration,
    ) -> Result<crate::ring::IoUsed, PlanError> {
        let used = crate::ring::choose_for_clients(io).map_err(|why| {
            let at =
                (self.settings.text(&shared::IO)).map_or(Origin::Flag("--io"), |s| s.at.clone());
            PlanError::new(at, why)
        })?;
        if let Some(n) = self.settings.text(&shared::NAP)
            && !nap.is_zero()
            && used.backend == "io_uring"
        {
            return Err(PlanError::new(
                n.at.clone(),
                "nap is how a generator thread waits on epoll, and its clients run on io_uring",
            )
            .hint(
                "leave out --io uring (these suites' clients run on epoll by default), or the nap",
            ));
        }
        Ok(used)
    }

    /// The settings every suite has, checked against their bounds (`-c`'s are the suite's).
    fn shared(&self, suite: &dyn Suite) -> Result<Shared, PlanError> {
        let clients = suite.clients();
        let clients = bounded(
            self.settings.int(&shared::CLIENTS),
            "concurrency",
            u64::from(clients.default),
            1,
            u64::from(clients.max),
            clients.why,
        )? as u32;
        let objects = bounded(
            self.settings.int(&shared::OBJECTS),
            "objects",
            if self.quick {
                QUICK_OBJECTS
            } else {
                DEFAULT_OBJECTS
            },
            1,
            MAX_OBJECTS,
            "objects are numbered in 24 bits per client",
        )?;
        let size = bounded(
            self.settings.int(&shared::SIZE),
            "size",
            DEFAULT_SIZE as u64,
            MIN_SIZE as u64,
            MAX_SIZE as u64,
            "each object carries a 16-byte header that reads are verified against",
        )? as usize;
        if let (Some(r), Some(_)) = (&self.reps, &self.samples) {
            return Err(PlanError::new(
                r.at.clone(),
                "reps and samples are the same setting (the repetitions of each point); give one",
            )
            .hint("keep --samples in a sweep, --reps otherwise"));
        }
        let reps = bounded(
            self.reps.clone().or(self.samples.clone()),
            "reps",
            suite.default_reps(self.quick) as u64,
            1,
            MAX_REPS as u64,
            "each repetition runs the whole suite again",
        )? as u32;
        let seed = match &self.seed {
            None => DEFAULT_SEED,
            Some(s) if s.value >= 0 => s.value as u64,
            Some(s) => {
                return Err(PlanError::new(s.at.clone(), "seed must not be negative")
                    .hint("use any integer from 0 to 2^63-1"));
            }
        };
        let threads = match &self.settings.int(&shared::THREADS) {
            None => crate::fiber::default_threads(),
            Some(t) if !(1..=MAX_GENERATOR_THREADS as i64).contains(&t.value) => {
                return Err(PlanError::new(
                    t.at.clone(),
                    format!("threads must be between 1 and {MAX_GENERATOR_THREADS}"),
                )
                .hint("one per core dyno may use is the default; more only contend"));
            }
            Some(t) => t.value as usize,
        };
        let io = match self.settings.text(&shared::IO) {
            None => crate::ring::Io::Auto,
            Some(io) => crate::ring::Io::parse(&io.value).ok_or_else(|| {
                PlanError::new(io.at.clone(), format!("io {:?} is not a backend", io.value))
                    .hint("write auto, uring or epoll")
            })?,
        };
        let nap = match self.settings.text(&shared::NAP) {
            None => Duration::ZERO,
            Some(n) => nap(&n)?,
        };
        Ok(Shared {
            objects,
            clients,
            threads,
            io,
            nap,
            size,
            reps,
            seed,
        })
    }

    /// The targets as written (or the default ones), each configured by its driver, with where
    /// each was written.
    fn resolve_targets(
        &self,
        drivers: &dyn Drivers,
        named: Option<&(&'static dyn Suite, Origin)>,
    ) -> Result<(Vec<PlanTarget>, Vec<Origin>), PlanError> {
        let raw_targets = if let Some(t) = &self.settings.text(&shared::TOPOLOGY) {
            expand_topologies(&self.targets, t)?
        } else if self.targets.is_empty() {
            if let Some((s, at)) = named.filter(|(s, _)| s.family() == Family::Request) {
                return Err(PlanError::new(
                    at.clone(),
                    format!("the {} suite needs a target", s.name()),
                )
                .hint("name one, e.g. dyno run http://127.0.0.1:8080/ or tcp://127.0.0.1:7000"));
            }
            drivers
                .default_urls()
                .into_iter()
                .map(|u| RawTarget {
                    name: None,
                    url: Sp::new(u.to_string(), Origin::Default),
                    options: Vec::new(),
                    process: None,
                    requests: Vec::new(),
                })
                .collect()
        } else {
            self.targets.clone()
        };
        let mut targets: Vec<PlanTarget> = Vec::new();
        let mut target_at: Vec<Origin> = Vec::new();
        for raw in raw_targets {
            target_at.push(raw.url.at.clone());
            let t = resolve_target(raw, drivers, &targets)?;
            targets.push(t);
        }
        Ok((targets, target_at))
    }

    /// Refuses a setting of another suite: each suite reads only its own.
    fn only_settings_of(
        &self,
        suite: &dyn Suite,
        suites: &[&'static dyn Suite],
    ) -> Result<(), PlanError> {
        let has = |s: &dyn Suite, key: &str| s.settings().iter().any(|x| x.key == key);
        for (name, value) in self.settings.entries() {
            let at = &value.at;
            if has(suite, name) {
                continue;
            }
            let Some(owner) = suites.iter().find(|s| has(**s, name)) else {
                continue;
            };
            let at = at.clone();
            return Err(suite.refuse(name, *owner, &at).unwrap_or_else(|| {
                PlanError::new(
                    at,
                    format!(
                        "{name} is a setting of the {} suite, and this run is {}",
                        owner.name(),
                        suite.name()
                    ),
                )
                .hint(owner.owner_hint())
            }));
        }
        Ok(())
    }

    /// `--pid` and `--process-name`, checked.
    fn watched(&self) -> Result<(Vec<u32>, Vec<String>), PlanError> {
        let mut watch_pids = Vec::new();
        for p in &self.pids {
            match u32::try_from(p.value) {
                Ok(v) if v > 0 => watch_pids.push(v),
                _ => {
                    return Err(PlanError::new(
                        p.at.clone(),
                        format!("{} is not a process id", p.value),
                    )
                    .hint("give a positive PID, as `pgrep NAME` prints it"));
                }
            }
        }
        let mut watch_names = Vec::new();
        for n in &self.process_names {
            if n.value.is_empty() || n.value.contains('/') {
                return Err(PlanError::new(
                    n.at.clone(),
                    format!("{:?} is not a process name", n.value),
                )
                .hint("the name as `ps -e` shows it, e.g. redis-server"));
            }
            watch_names.push(n.value.clone());
        }
        Ok((watch_pids, watch_names))
    }

    /// Parses and checks every `PARAM=VALUES`: a parameter the suite has, each value within the
    /// parameter's bounds, at most [`MAX_SWEEP_POINTS`] values, one sweep per parameter.
    pub fn resolve_sweeps(&self, suite: &dyn Suite) -> Result<Vec<Sweep>, PlanError> {
        let params = suite.sweepable();
        let names: Vec<&str> = params.iter().map(|p| p.name).collect();
        let mut sweeps: Vec<Sweep> = Vec::new();
        for raw in &self.sweeps {
            let bad = |msg: String| {
                PlanError::new(raw.at.clone(), msg).hint(format!(
                    "write PARAM=LIST or PARAM=A..B[:STEP], e.g. {}=1..30 or {}=1,10,100; the {} suite sweeps {}",
                    names[0],
                    names[0],
                    suite.name(),
                    names.join(", ")
                ))
            };
            let Some((name, spec)) = raw.value.split_once('=') else {
                return Err(bad(format!("sweep {:?} has no `=`", raw.value)));
            };
            let name = match name.trim() {
                "concurrency" | "c" => "clients",
                other => other,
            };
            let Some(param) = params.iter().find(|p| p.name == name) else {
                return Err(bad(format!(
                    "the {} suite has no parameter {name:?} to sweep; {}",
                    suite.name(),
                    did_you_mean(name, names.iter().copied())
                )));
            };
            let values =
                parse_values(spec.trim()).map_err(|e| bad(format!("sweep {name}: {e}")))?;
            let (min, max) = (param.min, param.max);
            if let Some(v) = values.iter().find(|v| !(min..=max).contains(*v)) {
                return Err(bad(format!(
                    "sweep {name}: {v} is outside {min}..={max}, the bounds of {name}"
                )));
            }
            if sweeps.iter().any(|s| s.param == param.name) {
                return Err(bad(format!("{name} is swept twice")));
            }
            sweeps.push(Sweep {
                param: param.name,
                values,
            });
        }
        Ok(sweeps)
    }
}

/// The settings every suite has.
struct Shared {
    objects: u64,
    clients: u32,
    threads: usize,
    io: crate::ring::Io,
    nap: Duration,
    size: usize,
    reps: u32,
    seed: u64,
}

impl Shared {
    /// What a suite's own resolution is given of them.
    fn common<'a>(&self, quick: bool, sweeps: &'a [Sweep]) -> Common<'a> {
        Common {
            objects: self.objects,
            clients: self.clients,
            size: self.size,
            seed: self.seed,
            quick,
            sweeps,
            io: self.io,
        }
    }
}

/// `--nap`'s value: 0 (no nap) up to a millisecond.
fn nap(n: &Sp<String>) -> Result<Duration, PlanError> {
    let d = crate::units::parse_duration(&n.value)
        .map_err(|e| PlanError::new(n.at.clone(), format!("nap: {e}")))?;
    if d > Duration::from_millis(1) {
        return Err(
            PlanError::new(n.at.clone(), "nap must be at most 1ms").hint(
                "a reply that comes during a nap is taken up to the nap late; 20us to 80us \
                   spares the wake-ups at a server's pace",
            ),
        );
    }
    Ok(d)
}

/// Refuses a target that cannot run `suite`. A store that lacks a store suite's family, beside
/// others that have it, runs as `n/a` cases with the reason ([`na_reason`]); a run where none
/// has it is refused.
fn check_families(
    suite: &dyn Suite,
    targets: &[PlanTarget],
    target_at: &[Origin],
) -> Result<(), PlanError> {
    let family = suite.family();
    let some_fit = (targets.iter()).any(|t| t.config.families().contains(&family));
    for (t, at) in targets.iter().zip(target_at) {
        let store = t.config.families().contains(&Family::Kv);
        if some_fit && store && family != Family::Kv && family != Family::Request {
            continue;
        }
        if let Some(why) = mismatch(suite, t) {
            return Err(
                PlanError::new(at.clone(), format!("target {why}")).hint(suite.targets_hint())
            );
        }
    }
    Ok(())
}

/// Why `target` cannot run `suite`, when it cannot: the reason of its `n/a` cases.
pub fn na_reason(suite: &dyn Suite, target: &PlanTarget) -> Option<String> {
    let why = mismatch(suite, target)?;
    Some(if suite.family() == Family::Namespace {
        format!("{why} (fs:, dyno://, host:)")
    } else {
        why
    })
}

/// `NAME speaks kv, graph; the SUITE suite needs FAMILY targets`, when it does not speak it.
fn mismatch(suite: &dyn Suite, target: &PlanTarget) -> Option<String> {
    let family = suite.family();
    let families = target.config.families();
    if families.contains(&family) {
        return None;
    }
    let speaks: Vec<&str> = families.iter().map(|f| f.as_str()).collect();
    Some(format!(
        "{} speaks {}; the {} suite needs {} targets",
        target.name,
        speaks.join(", "),
        suite.name(),
        family.as_str()
    ))
}
