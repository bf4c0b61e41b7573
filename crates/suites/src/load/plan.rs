//! The load suite's settings: the model (closed or open loop), the rate profile and its bursts,
//! connections, the generator's lag limit, and their resolution from the plan.

use super::settings as set;
use engine::plan::setting::shared;
use engine::plan::{BadValue, Origin, PlanError, RawPlan, Sp};
use engine::schedule::{ArrivalKind, RateProfile};
use engine::suggest::did_you_mean;
use engine::suite::Common;
use engine::worker::Stop;
use std::path::PathBuf;

pub use engine::load::LoadModel;

/// wrk's default of 10 connections (a client is a connection).
pub const DEFAULT_CLIENTS: u32 = 10;
/// Each connection takes a local port, and there are fewer than 65,536.
pub const MAX_CLIENTS: u32 = 60_000;
/// wrk's default run of 10 s, as 5 repetitions of 2 s (a comparison needs repetitions);
/// `--quick` one of 2 s.
pub const DEFAULT_DURATION_NS: u64 = 2_000_000_000;
pub const QUICK_DURATION_NS: u64 = 2_000_000_000;
/// A request unanswered after 10 s is a timeout (the seed's client waited 10 s).
pub const DEFAULT_TIMEOUT_NS: u64 = 10_000_000_000;
/// An event loop per thread; more threads than this only contend.
pub const MAX_THREADS: usize = 256;
/// Above 10 M requests/s the arrival clock itself could not keep time.
pub const MAX_RATE_PER_S: f64 = 10_000_000.0;

/// The load suite's resolved settings.
#[derive(Debug, Clone)]
pub struct LoadParams {
    /// `-c`: a connection each.
    pub clients: u32,
    pub threads: usize,
    pub model: LoadModel,
    pub timeout_ns: u64,
    pub interval_ns: u64,
    pub hlog: Option<PathBuf>,
    /// The periodic burst the stages were built with, if any.
    pub burst: Option<Burst>,
    /// How often responses may wake a load thread.
    pub coalesce: engine::load::Coalesce,
    /// The I/O backend asked for.
    pub io: engine::load::Io,
    /// The open loop's arrivals and connection cap, as given: the model's when it is open, and
    /// each point's of a rate sweep.
    pub arrival: ArrivalKind,
    pub max_connections: u64,
    /// How late dyno may dispatch at p99 before an open-loop run is marked invalid.
    pub max_lag: MaxLag,
    /// The shard this generator is (`--shard I/N`), once [`LoadParams::for_shard`] gave it its
    /// part; `None` alone.
    pub shard: Option<engine::shard::Shard>,
}

/// How late dyno may dispatch due requests, at p99 and beyond its pace, before an open-loop run
/// is marked invalid. Lateness is inside every corrected latency, so it is weighed against the
/// figure it distorts: by default, at most half the corrected p99 the run reports may be dyno's
/// own lateness (the rest is the target's), or at most a stated time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MaxLag {
    /// At most this percentage (1..=100, as written) of the run's corrected latency p99.
    Percent(f64),
    /// At most this long.
    Ns(u64),
}

impl MaxLag {
    pub const DEFAULT: MaxLag = MaxLag::Percent(50.0);

    /// The limit in ns for a run whose corrected latency p99 is `latency_p99_ns`.
    pub fn limit_ns(self, latency_p99_ns: u64) -> u64 {
        match self {
            MaxLag::Percent(p) => (latency_p99_ns as f64 * p / 100.0) as u64,
            MaxLag::Ns(ns) => ns,
        }
    }

    /// As written: `50%` or `2ms`.
    pub fn label(self) -> String {
        match self {
            MaxLag::Percent(p) => format!("{p}%"),
            MaxLag::Ns(ns) => engine::units::duration_label(ns),
        }
    }

    /// Parses `50%` (a share of the corrected p99, 1% to 100%) or a duration such as `2ms`.
    pub fn parse(text: &str) -> Result<MaxLag, BadValue> {
        let t = text.trim();
        if let Some(pct) = t.strip_suffix('%') {
            return match pct.trim().parse::<f64>() {
                Ok(p) if (1.0..=100.0).contains(&p) => Ok(MaxLag::Percent(p)),
                Ok(_) => Err(BadValue(format!(
                    "{t}: a share must be between 1% and 100%"
                ))),
                Err(_) => Err(BadValue(format!("{t:?} is not a percentage"))),
            };
        }
        match engine::units::parse_duration(t) {
            Ok(d) if !d.is_zero() => Ok(MaxLag::Ns(d.as_nanos() as u64)),
            Ok(_) => Err(BadValue("max_lag must be more than 0".to_string())),
            Err(e) => Err(BadValue(e.to_string())),
        }
    }
}

impl LoadParams {
    /// How long the load runs, when a duration ends it (not a count of requests).
    pub fn duration_ns(&self) -> Option<u64> {
        match &self.model {
            LoadModel::Open { profile, .. } => Some(profile.duration_ns()),
            LoadModel::Closed { stop } => match stop {
                Stop::Duration { ns } | Stop::DurationOrCount { ns, .. } => Some(*ns),
                Stop::Count(_) => None,
            },
        }
    }

    /// Shard `shard`'s part of this load: its part of the connections (and of the cap an open
    /// loop may open up to), 1/N of an open loop's rate, no more threads than a closed loop
    /// has connections. The parts of all shards add up to the whole. A count of requests is per
    /// connection, so it needs no split. Refused when a shard would get no connection.
    pub fn for_shard(&self, shard: engine::shard::Shard) -> Result<LoadParams, String> {
        let mut p = self.clone();
        p.shard = Some(shard);
        if shard.count <= 1 {
            return Ok(p);
        }
        if self.clients < shard.count {
            return Err(format!(
                "{} connections cannot be split over {} shards: give -c at least {}",
                self.clients, shard.count, shard.count
            ));
        }
        // A part of a u32 is a u32.
        p.clients = shard.part(u64::from(self.clients)) as u32;
        p.max_connections = shard.part(self.max_connections).max(u64::from(p.clients));
        let n = f64::from(shard.count);
        match &mut p.model {
            LoadModel::Open {
                profile,
                max_connections,
                ..
            } => {
                *profile = profile.scaled(1.0 / n);
                *max_connections = shard.part(*max_connections).max(u64::from(p.clients));
            }
            LoadModel::Closed { .. } => {
                p.threads = p.threads.min(p.clients as usize).max(1);
            }
        }
        if let Some(b) = &mut p.burst {
            // Its stages are in the profile, scaled above; this is what the record says.
            b.rate_per_s /= n;
        }
        Ok(p)
    }

    /// The same load as an open loop at one steady rate for the same duration (a point of a
    /// rate sweep; the plan checked that the duration is known and the rate steady).
    pub fn set_rate(&mut self, per_s: f64) {
        let duration_ns = self.duration_ns().unwrap_or(0);
        self.model = LoadModel::Open {
            profile: RateProfile::constant(per_s, duration_ns),
            arrival: self.arrival,
            max_connections: self.max_connections,
        };
    }
}

impl LoadParams {
    /// The settings as the run record stores them.
    pub fn record(&self) -> results::LoadPlanRecord {
        let (model, max_connections, requests, stages, arrival) = match &self.model {
            // A closed loop keeps its connections; a rate sweep's points may open up to the cap.
            LoadModel::Closed { stop } => (
                "closed",
                self.max_connections,
                match stop {
                    Stop::Count(n) | Stop::DurationOrCount { count: n, .. } => Some(*n),
                    Stop::Duration { .. } => None,
                },
                Vec::new(),
                None,
            ),
            LoadModel::Open {
                profile,
                arrival,
                max_connections,
            } => (
                "open",
                *max_connections,
                None,
                profile
                    .stages
                    .iter()
                    .map(|s| results::RateStage {
                        duration_ns: s.duration_ns,
                        from_per_s: s.from_per_s,
                        to_per_s: s.to_per_s,
                    })
                    .collect(),
                Some(match arrival {
                    ArrivalKind::Constant => "constant".to_string(),
                    ArrivalKind::Poisson => "poisson".to_string(),
                }),
            ),
        };
        results::LoadPlanRecord {
            model: model.to_string(),
            connections: u64::from(self.clients),
            max_connections,
            threads: self.threads as u64,
            duration_ns: self.duration_ns(),
            requests_per_connection: requests,
            stages,
            arrival,
            timeout_ns: self.timeout_ns,
            interval_ns: self.interval_ns,
            hlog: self.hlog.as_ref().map(|p| p.display().to_string()),
            burst: self.burst.map(|b| results::BurstRecord {
                every_ns: b.every_ns,
                for_ns: b.for_ns,
                rate_per_s: b.rate_per_s,
            }),
            coalesce: self.coalesce.label(),
            max_lag: self.max_lag.label(),
            io: self.io.label().into(),
        }
    }
}

/// The plan as written, read by the load suite (its settings' resolution, on the engine's type).
pub(super) struct Raw<'a>(pub &'a RawPlan);

impl std::ops::Deref for Raw<'_> {
    type Target = RawPlan;
    fn deref(&self) -> &RawPlan {
        self.0
    }
}

impl Raw<'_> {
    pub(super) fn resolve_coalesce(&self) -> Result<engine::load::Coalesce, PlanError> {
        use engine::load::{Coalesce, coalesce::MAX_WINDOW_NS};
        let Some(c) = self.settings.text(&set::COALESCE) else {
            return Ok(Coalesce::Auto);
        };
        let hint = "write auto, off, or a window such as 20us (at most 1ms)";
        match c.value.trim() {
            "auto" => Ok(Coalesce::Auto),
            "off" | "0" => Ok(Coalesce::Off),
            v => match engine::units::parse_duration(v) {
                Ok(d) if d.as_nanos() as u64 <= MAX_WINDOW_NS => {
                    Ok(Coalesce::Fixed(d.as_nanos() as u64))
                }
                Ok(_) => Err(
                    PlanError::new(c.at.clone(), format!("coalesce {v} is too wide")).hint(hint),
                ),
                Err(e) => Err(PlanError::new(c.at.clone(), format!("coalesce: {e}")).hint(hint)),
            },
        }
    }

    /// The load's event-loop threads: the cores dyno may use, at most one per connection in a
    /// closed loop, unless `threads` says.
    fn load_threads(&self, open: bool, connections: u64) -> Result<usize, PlanError> {
        let cores = engine::env::cores() as u64;
        Ok(match &self.settings.int(&shared::THREADS) {
            None => cores.min(if open { u64::MAX } else { connections }).max(1),
            Some(t) if !(1..=MAX_THREADS as i64).contains(&t.value) => {
                return Err(PlanError::new(
                    t.at.clone(),
                    format!("threads must be between 1 and {MAX_THREADS}"),
                ));
            }
            Some(t) => t.value as u64,
        } as usize)
    }

    pub(super) fn resolve_load(&self, c: &Common) -> Result<LoadParams, PlanError> {
        let (clients, connections) = (c.clients, u64::from(c.clients));
        let duration = positive_duration(&self.settings.text(&set::DURATION), "duration")?;
        let ramp = positive_duration(&self.settings.text(&set::RAMP), "ramp")?;
        let timeout = positive_duration(&self.settings.text(&set::TIMEOUT), "timeout")?
            .map_or(DEFAULT_TIMEOUT_NS, |d| d.0);
        let interval = engine::plan::interval_ns(self.settings.text(&shared::INTERVAL).as_ref())?;
        let requests = match &self.settings.int(&set::REQUESTS) {
            None => None,
            Some(r) if r.value < 1 => {
                return Err(PlanError::new(
                    r.at.clone(),
                    format!("requests must be at least 1, got {}", r.value),
                ));
            }
            Some(r) => Some((r.value as u64, r.at.clone())),
        };
        if let (Some((_, at)), Some(_)) = (&duration, &requests) {
            return Err(PlanError::new(at.clone(), "both a duration and a request count were given")
                .hint("a run ends by --duration (wrk's model) or by --requests per connection (gobench's), not both"));
        }
        let rate = match &self.settings.text(&set::RATE) {
            None => None,
            Some(r) => Some((
                parse_rate(&r.value).map_err(|e| PlanError::new(r.at.clone(), e))?,
                r.at.clone(),
            )),
        };
        if let (Some((_, at)), Some(_)) = (&requests, &rate) {
            return Err(PlanError::new(at.clone(), "--requests counts a closed loop's requests per connection; an open loop (--rate) runs for --duration")
                .hint("drop --requests, and give --duration"));
        }
        if let (Some(s), Some((_, at))) = (self.settings.stages(&set::STAGES).first(), &rate) {
            let _ = s;
            return Err(
                PlanError::new(at.clone(), "both a rate and stages were given")
                    .hint("stages describe the whole profile; drop rate"),
            );
        }
        let quick_or_default = if self.quick {
            QUICK_DURATION_NS
        } else {
            DEFAULT_DURATION_NS
        };
        let (stages, burst) = self.load_stages(
            duration.as_ref().map(|d| d.0),
            ramp,
            rate.as_ref(),
            quick_or_default,
        )?;
        let open = !stages.is_empty();
        // Each point of a rate sweep is an open loop, so the open loop's settings apply to it.
        let rate_sweep = self
            .sweeps
            .iter()
            .any(|s| s.value.trim_start().starts_with("rate"));
        let (arrival, max_connections) = self.open_loop(open || rate_sweep, connections)?;
        let threads = self.load_threads(open, connections)?;
        let max_lag = self.max_lag(open || rate_sweep)?;
        let hlog = (self.settings.text(&shared::HLOG)).map(|h| PathBuf::from(&h.value));
        let stop_duration = duration.map(|d| d.0);
        let model = if open {
            LoadModel::Open {
                profile: engine::schedule::RateProfile { stages },
                arrival,
                max_connections,
            }
        } else {
            LoadModel::Closed {
                stop: match requests {
                    Some((n, _)) => engine::worker::Stop::Count(n),
                    None => engine::worker::Stop::Duration {
                        ns: stop_duration.unwrap_or(quick_or_default),
                    },
                },
            }
        };
        Ok(LoadParams {
            clients,
            threads,
            model,
            timeout_ns: timeout,
            interval_ns: interval,
            hlog,
            burst,
            coalesce: self.resolve_coalesce()?,
            io: c.io,
            arrival,
            max_connections,
            max_lag,
            shard: None,
        })
    }

    /// The open loop's stages: from `stages`, or from `--rate` (and `--ramp`) over the
    /// duration; and the burst riding on them, if any.
    fn load_stages(
        &self,
        duration: Option<u64>,
        ramp: Option<(u64, Origin)>,
        rate: Option<&((f64, f64), Origin)>,
        quick_or_default: u64,
    ) -> Result<(Vec<engine::schedule::Stage>, Option<Burst>), PlanError> {
        let mut stages: Vec<engine::schedule::Stage> = Vec::new();
        for st in self.settings.stages(&set::STAGES) {
            let (from, to) =
                parse_rate(&st.rate.value).map_err(|e| PlanError::new(st.rate.at.clone(), e))?;
            let d = engine::units::parse_duration(&st.duration.value).map_err(|e| {
                PlanError::new(st.duration.at.clone(), format!("stage duration: {e}"))
            })?;
            if d.is_zero() {
                return Err(PlanError::new(
                    st.duration.at.clone(),
                    "a stage lasts more than 0",
                ));
            }
            stages.push(engine::schedule::Stage {
                duration_ns: d.as_nanos() as u64,
                from_per_s: from,
                to_per_s: to,
            });
        }
        let ramped = ramp.is_some();
        if let Some(((from, to), at)) = rate {
            let total = duration;
            match ramp {
                Some((r, rat)) => {
                    if from == to {
                        return Err(
                            PlanError::new(rat, "--ramp needs a rate range to ramp over")
                                .hint("write --rate FROM..TO, e.g. --rate 1000..20000 --ramp 60s"),
                        );
                    }
                    let total = total.unwrap_or(r);
                    if total < r {
                        return Err(PlanError::new(
                            at.clone(),
                            "the ramp is longer than the duration",
                        )
                        .hint("the duration covers the ramp, then holds the top rate"));
                    }
                    stages.push(engine::schedule::Stage {
                        duration_ns: r,
                        from_per_s: *from,
                        to_per_s: *to,
                    });
                    if total > r {
                        stages.push(engine::schedule::Stage {
                            duration_ns: total - r,
                            from_per_s: *to,
                            to_per_s: *to,
                        });
                    }
                }
                None => stages.push(engine::schedule::Stage {
                    duration_ns: total.unwrap_or(quick_or_default),
                    from_per_s: *from,
                    to_per_s: *to,
                }),
            }
        } else if let Some((_, at)) = ramp {
            return Err(PlanError::new(at, "--ramp needs --rate FROM..TO"));
        }
        let mut burst = None;
        if let Some(b) = &self.settings.text(&set::BURST) {
            let Some(((from, to), _)) = rate
                .as_ref()
                .filter(|_| self.settings.stages(&set::STAGES).is_empty())
            else {
                return Err(PlanError::new(
                    b.at.clone(),
                    "a burst rides on a steady open-loop rate: give --rate R and --duration",
                )
                .hint("e.g. --duration 7d --rate 100 --burst every=6h,for=10m,rate=5000"));
            };
            if from != to || ramped {
                return Err(PlanError::new(
                    b.at.clone(),
                    "a burst rides on a steady rate, not a ramp",
                ));
            }
            let parsed = parse_burst(&b.value).map_err(|e| {
                PlanError::new(b.at.clone(), e).hint(
                    "write every=DURATION for=DURATION rate=PER_S, e.g. every=6h for=10m rate=5000",
                )
            })?;
            let total = stages.iter().map(|s| s.duration_ns).sum();
            stages = parsed
                .stages(*from, total)
                .map_err(|e| PlanError::new(b.at.clone(), e))?;
            burst = Some(parsed);
        }
        Ok((stages, burst))
    }

    /// The open loop's arrivals and connection cap; refused in a closed loop (`open` is false).
    fn open_loop(&self, open: bool, connections: u64) -> Result<(ArrivalKind, u64), PlanError> {
        if let Some(a) = self.settings.text(&set::ARRIVAL).as_ref().filter(|_| !open) {
            return Err(PlanError::new(
                a.at.clone(),
                "arrival applies to an open loop (--rate)",
            ));
        }
        let arrival = self.settings.text(&set::ARRIVAL);
        let arrival = match arrival.as_ref().map(|a| (a.value.as_str(), a.at.clone())) {
            None | Some(("constant", _)) => ArrivalKind::Constant,
            Some(("poisson", _)) => ArrivalKind::Poisson,
            Some((other, at)) => {
                return Err(PlanError::new(
                    at,
                    format!(
                        "unknown arrival {other:?}; {}arrivals: constant, poisson",
                        did_you_mean(other, ["constant", "poisson"])
                    ),
                ));
            }
        };
        let max_connections = match &self.settings.int(&set::MAX_CONNECTIONS) {
            None => connections,
            Some(m) if m.value < connections as i64 => {
                return Err(PlanError::new(
                    m.at.clone(),
                    format!("max_connections ({}) is below the connections opened up front ({connections})", m.value),
                )
                .hint("raise max_connections, or lower -c"));
            }
            Some(m) if m.value as u64 > u64::from(MAX_CLIENTS) => {
                return Err(PlanError::new(
                    m.at.clone(),
                    format!("max_connections must be at most {MAX_CLIENTS}"),
                ));
            }
            Some(m) => {
                if !open {
                    return Err(PlanError::new(
                        m.at.clone(),
                        "max_connections applies to an open loop (--rate or --sweep rate=…)",
                    )
                    .hint("a closed loop keeps exactly -c connections"));
                }
                m.value as u64
            }
        };
        Ok((arrival, max_connections))
    }

    /// How late dyno may dispatch before an open loop is invalid; refused in a closed loop.
    fn max_lag(&self, open: bool) -> Result<MaxLag, PlanError> {
        Ok(match &self.settings.text(&set::MAX_LAG) {
            None => MaxLag::DEFAULT,
            Some(m) if !open => {
                return Err(PlanError::new(
                    m.at.clone(),
                    "max_lag applies to an open loop (--rate or --sweep rate=…)",
                )
                .hint("a closed loop has no schedule to fall behind"));
            }
            Some(m) => MaxLag::parse(&m.value).map_err(|e| {
                PlanError::new(m.at.clone(), format!("max_lag: {e}"))
                    .hint("write a share of the corrected p99 such as 50%, or a time such as 2ms")
            })?,
        })
    }
}

/// Parses `5000` or `1000..20000` (requests per second).
/// A periodic burst: every `every`, the last `for` of the period runs at `rate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    pub every_ns: u64,
    pub for_ns: u64,
    pub rate_per_s: f64,
}

/// The most periods a burst may repeat over: each is two stages of the rate profile, which is
/// read stage by stage as arrivals are drawn.
pub const MAX_BURST_PERIODS: u64 = 200;

impl Burst {
    /// The stages of `base` per second for `total_ns`, with this burst at the end of each period.
    pub(super) fn stages(
        &self,
        base: f64,
        total_ns: u64,
    ) -> Result<Vec<engine::schedule::Stage>, BadValue> {
        let periods = total_ns.div_ceil(self.every_ns);
        if periods > MAX_BURST_PERIODS {
            return Err(BadValue(format!(
                "the burst repeats {periods} times over the run; at most {MAX_BURST_PERIODS}: \
                 lengthen every="
            )));
        }
        let mut out = Vec::new();
        let mut t = 0;
        while t < total_ns {
            for (len, rate) in [
                (self.every_ns - self.for_ns, base),
                (self.for_ns, self.rate_per_s),
            ] {
                let len = len.min(total_ns - t);
                if len > 0 {
                    out.push(engine::schedule::Stage {
                        duration_ns: len,
                        from_per_s: rate,
                        to_per_s: rate,
                    });
                    t += len;
                }
            }
        }
        Ok(out)
    }
}

/// Parses `every=6h for=10m rate=5000` (spaces or commas between the parts).
/// A duration setting that must be more than 0, with where it was written.
fn positive_duration(
    v: &Option<Sp<String>>,
    name: &str,
) -> Result<Option<(u64, Origin)>, PlanError> {
    match v {
        None => Ok(None),
        Some(s) => {
            let d = engine::units::parse_duration(&s.value)
                .map_err(|e| PlanError::new(s.at.clone(), format!("{name}: {e}")))?;
            if d.is_zero() {
                return Err(PlanError::new(
                    s.at.clone(),
                    format!("{name} must be more than 0"),
                ));
            }
            Ok(Some((d.as_nanos() as u64, s.at.clone())))
        }
    }
}

pub fn parse_burst(text: &str) -> Result<Burst, BadValue> {
    let (mut every, mut dur, mut rate) = (None, None, None);
    for part in text.split([' ', ',']).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| BadValue(format!("burst part {part:?} is not KEY=VALUE")))?;
        let d = || {
            engine::units::parse_duration(v)
                .ok()
                .filter(|d| !d.is_zero())
                .map(|d| d.as_nanos() as u64)
                .ok_or_else(|| BadValue(format!("burst {k}={v:?} is not a duration")))
        };
        match k {
            "every" => every = Some(d()?),
            "for" => dur = Some(d()?),
            "rate" => {
                let (a, b) = parse_rate(v)?;
                if a != b {
                    return Err(BadValue("a burst's rate is one number, not a range".into()));
                }
                rate = Some(a);
            }
            other => {
                return Err(BadValue(format!(
                    "unknown burst part {other:?}; {}parts: every, for, rate",
                    did_you_mean(other, ["every", "for", "rate"])
                )));
            }
        }
    }
    let (Some(every_ns), Some(for_ns), Some(rate_per_s)) = (every, dur, rate) else {
        return Err(BadValue(format!(
            "burst {text:?} needs every=, for= and rate="
        )));
    };
    if for_ns >= every_ns {
        return Err(BadValue(
            "a burst's for= must be shorter than its every=".into(),
        ));
    }
    Ok(Burst {
        every_ns,
        for_ns,
        rate_per_s,
    })
}

pub(super) fn parse_rate(text: &str) -> Result<(f64, f64), BadValue> {
    let one = |t: &str| -> Result<f64, BadValue> {
        let v: f64 = t.trim().parse().map_err(|_| BadValue(format!("rate {text:?} is not a number of requests per second; write e.g. 5000 or 1000..20000")))?;
        if !(v > 0.0 && v <= MAX_RATE_PER_S) {
            return Err(BadValue(format!(
                "rate {text:?} must be above 0 and at most {MAX_RATE_PER_S} per second"
            )));
        }
        Ok(v)
    };
    match text.split_once("..") {
        Some((a, b)) => Ok((one(a)?, one(b)?)),
        None => one(text).map(|v| (v, v)),
    }
}
