//! When operations are meant to start: the arrival process of an open loop.
//!
//! A [`RateProfile`] is a list of stages, each holding a rate or ramping linearly from one rate to
//! another over its duration (`--rate 1000..20000 --ramp 60s`, or several stages). [`Arrivals`]
//! turns a profile into intended start times, evenly spaced at the current rate (`constant`) or
//! drawn from an exponential distribution with that mean (`poisson`, seeded: the same seed gives
//! the same times). Times are nanoseconds from the start of the schedule.

/// One stage of a rate profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration_ns: u64,
    /// Rate at the start of the stage, per second.
    pub from_per_s: f64,
    /// Rate at the end of the stage, per second (equal to `from_per_s` for a steady stage).
    pub to_per_s: f64,
}

/// Piecewise-linear offered rate over time.
#[derive(Debug, Clone, PartialEq)]
pub struct RateProfile {
    pub stages: Vec<Stage>,
}

impl RateProfile {
    /// A steady rate for `duration_ns`.
    pub fn constant(per_s: f64, duration_ns: u64) -> RateProfile {
        RateProfile {
            stages: vec![Stage {
                duration_ns,
                from_per_s: per_s,
                to_per_s: per_s,
            }],
        }
    }

    /// Total duration.
    pub fn duration_ns(&self) -> u64 {
        self.stages.iter().map(|s| s.duration_ns).sum()
    }

    /// The rate at time `t_ns`, or `None` past the end.
    pub fn rate_at(&self, t_ns: u64) -> Option<f64> {
        let mut start = 0;
        for s in &self.stages {
            if t_ns < start + s.duration_ns {
                let f = (t_ns - start) as f64 / s.duration_ns as f64;
                return Some(s.from_per_s + (s.to_per_s - s.from_per_s) * f);
            }
            start += s.duration_ns;
        }
        None
    }

    /// The expected number of arrivals over the whole profile.
    pub fn expected_count(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| (s.from_per_s + s.to_per_s) / 2.0 * s.duration_ns as f64 / 1e9)
            .sum()
    }

    /// The mean rate over the profile, per second (`None` for an empty profile).
    pub fn mean_per_s(&self) -> Option<f64> {
        let ns = self.duration_ns();
        (ns > 0).then(|| results::stats::per_s(self.expected_count(), ns))
    }

    /// The same profile with every rate multiplied by `f` (to split it among threads).
    pub fn scaled(&self, f: f64) -> RateProfile {
        RateProfile {
            stages: self
                .stages
                .iter()
                .map(|s| Stage {
                    from_per_s: s.from_per_s * f,
                    to_per_s: s.to_per_s * f,
                    ..*s
                })
                .collect(),
        }
    }
}

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrivalKind {
    /// Evenly, 1 / rate apart.
    Constant,
    /// Exponentially distributed gaps with mean 1 / rate (a Poisson process).
    Poisson,
}

/// Intended start times from a profile.
#[derive(Debug, Clone)]
pub struct Arrivals {
    profile: RateProfile,
    kind: ArrivalKind,
    t_ns: f64,
    rng: u64,
    started: bool,
    /// Evenly spaced arrivals: where in its first gap the first one falls (0..1), so that
    /// several schedules of one rate split (threads, shards) interleave evenly.
    phase: f64,
}

/// Below this rate a gap is taken as "nothing arrives here": the clock moves on 1 ms at a time.
const MIN_RATE_PER_S: f64 = 1e-3;

impl Arrivals {
    pub fn new(profile: RateProfile, kind: ArrivalKind, seed: u64) -> Arrivals {
        Arrivals {
            profile,
            kind,
            t_ns: 0.0,
            rng: seed ^ 0x2545_F491_4F6C_DD1D,
            started: false,
            phase: 0.0,
        }
    }

    /// The same, the first of its evenly spaced arrivals `phase` (0..1) into its first gap:
    /// part `i` of `n` schedules at 1/n of a rate each, at phase i/n, together arrive evenly.
    /// Poisson arrivals have no phase (a sum of Poisson processes is one).
    pub fn with_phase(mut self, phase: f64) -> Arrivals {
        self.phase = phase.clamp(0.0, 1.0);
        self
    }

    fn uniform(&mut self) -> f64 {
        // xorshift64*, mapped to (0, 1].
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let x = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        (x as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// The next intended start (ns from the schedule's start), or `None` when the profile ends.
    #[inline]
    pub fn next_ns(&mut self) -> Option<u64> {
        loop {
            let rate = self.profile.rate_at(self.t_ns as u64)?;
            if rate < MIN_RATE_PER_S {
                self.t_ns += 1e6;
                continue;
            }
            if !self.started && self.kind == ArrivalKind::Constant {
                self.started = true;
                self.t_ns += self.phase * 1e9 / rate;
                self.profile.rate_at(self.t_ns as u64)?;
                return Some(self.t_ns as u64);
            }
            self.started = true;
            let gap = match self.kind {
                ArrivalKind::Constant => 1e9 / rate,
                ArrivalKind::Poisson => -self.uniform().ln() * 1e9 / rate,
            };
            self.t_ns += gap;
            self.profile.rate_at(self.t_ns as u64)?;
            return Some(self.t_ns as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_arrivals_are_evenly_spaced_and_end_with_the_profile() {
        let mut a = Arrivals::new(
            RateProfile::constant(1000.0, 10_000_000),
            ArrivalKind::Constant,
            1,
        );
        let times: Vec<u64> = std::iter::from_fn(|| a.next_ns()).collect();
        assert_eq!(times.len(), 10);
        assert_eq!(times[0], 0);
        assert!(times.windows(2).all(|w| w[1] - w[0] == 1_000_000));
    }

    #[test]
    fn phased_schedules_of_a_split_rate_interleave_evenly() {
        // Four parts of 4,000/s, each at 1,000/s and phase i/4: together one every 250 µs.
        let mut all: Vec<u64> = (0..4)
            .flat_map(|i| {
                let mut a = Arrivals::new(
                    RateProfile::constant(1000.0, 10_000_000),
                    ArrivalKind::Constant,
                    1,
                )
                .with_phase(f64::from(i) / 4.0);
                std::iter::from_fn(move || a.next_ns()).collect::<Vec<_>>()
            })
            .collect();
        all.sort_unstable();
        assert_eq!(all.len(), 40);
        assert!(all.windows(2).all(|w| w[1] - w[0] == 250_000), "{all:?}");
    }

    #[test]
    fn poisson_arrivals_have_the_stated_mean_and_are_repeatable() {
        let p = RateProfile::constant(10_000.0, 10_000_000_000);
        let count = |seed| {
            let mut a = Arrivals::new(p.clone(), ArrivalKind::Poisson, seed);
            std::iter::from_fn(|| a.next_ns()).count()
        };
        let n = count(7);
        assert!(
            (99_000..101_000).contains(&n),
            "{n} arrivals for an expected 100,000"
        );
        assert_eq!(n, count(7), "the same seed gives the same arrivals");
        assert_ne!(n, count(8));
    }

    #[test]
    fn a_ramp_offers_the_average_of_its_ends() {
        let p = RateProfile {
            stages: vec![Stage {
                duration_ns: 2_000_000_000,
                from_per_s: 1_000.0,
                to_per_s: 3_000.0,
            }],
        };
        assert_eq!(p.expected_count(), 4_000.0);
        let mut a = Arrivals::new(p.clone(), ArrivalKind::Constant, 1);
        let n = std::iter::from_fn(|| a.next_ns()).count();
        assert!((3_990..=4_010).contains(&n), "{n}");
        assert_eq!(p.rate_at(1_000_000_000), Some(2_000.0));
        assert_eq!(p.rate_at(2_000_000_000), None);
        assert_eq!(p.scaled(0.5).rate_at(0), Some(500.0));
    }
}
