//! The capacity search (`--find-max OBJECTIVE`): the highest steady open-loop rate at which
//! every objective holds. Each step is one point of a rate sweep, run and judged by the runner;
//! this is only the choice of the next rate. From a start (the plan's rate, or half the rate a
//! closed-loop probe reached) the rate doubles while the objectives hold (or, while none has
//! held, falls by four), then bisects
//! (geometrically) between the highest rate that held and the lowest that broke until they are
//! within [`PRECISION`] of each other, then runs each of the two again: the edge is reported
//! only as it held and broke both times. A step the generator itself could not offer (its
//! self-check) counts as broken, saying so.

use crate::suite::Point;
use results::thresholds::Threshold;
use results::{Case, SearchRecord, SearchStep, Status, SweepPoint};

/// The bisection stops when the lowest broken rate is within this factor of the highest held.
pub const PRECISION: f64 = 1.05;
/// The most steps a search takes (the probe and the confirmations included).
pub const MAX_STEPS: usize = 16;

/// How a step went: whether the generator offered its rate (`valid`), and, if an objective
/// broke, which and by how much.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub valid: bool,
    pub broke: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Raise,
    Bisect,
    /// Running the edge's two rates again: the held one, then the broken one.
    Confirm(u8),
    Done,
}

#[derive(Debug, Clone)]
pub struct Search {
    next: u64,
    max_rate: u64,
    phase: Phase,
    /// The highest rate that held, and the lowest that broke, so far.
    held: Option<u64>,
    broke: Option<u64>,
    probe: Option<f64>,
    steps: Vec<SearchStep>,
    why: String,
}

impl Search {
    /// A search from `start` per second, never above `max_rate`.
    pub fn new(start: u64, max_rate: u64) -> Search {
        Search {
            next: start.clamp(1, max_rate),
            max_rate,
            phase: Phase::Raise,
            held: None,
            broke: None,
            probe: None,
            steps: Vec::new(),
            why: String::new(),
        }
    }

    /// The rate of the next step; `None` when the search is over.
    pub fn next(&self) -> Option<u64> {
        (self.phase != Phase::Done).then_some(self.next)
    }

    /// The probe reached `rate`: the search starts at half of it (none reached: it ends).
    pub fn probed(&mut self, rate: f64) {
        self.probe = Some(rate);
        if rate < 1.0 {
            return self.finish("the probe (the plan's own load) reached no rate");
        }
        self.next = ((rate / 2.0) as u64).clamp(1, self.max_rate);
    }

    /// What the step at `rate` (the one [`Search::next`] gave) showed.
    pub fn observe(&mut self, rate: u64, v: Verdict) {
        let held = v.valid && v.broke.is_none();
        let why = match (&v.broke, v.valid) {
            (Some(b), _) => Some(b.clone()),
            (None, false) => {
                Some("the generator could not offer this rate (its self-check)".into())
            }
            (None, true) => None,
        };
        self.steps.push(SearchStep {
            rate,
            held,
            valid: v.valid,
            why,
        });
        if let Phase::Confirm(n) = self.phase {
            self.confirmed(n, held);
        } else {
            if held {
                self.held = Some(self.held.map_or(rate, |h| h.max(rate)));
            } else {
                self.broke = Some(self.broke.map_or(rate, |b| b.min(rate)));
            }
            self.step_on();
        }
        if self.steps.len() >= MAX_STEPS && self.phase != Phase::Done {
            self.finish("the search ran out of steps");
        }
    }

    fn step_on(&mut self) {
        match (self.held, self.broke) {
            (Some(h), None) if h >= self.max_rate => {
                self.finish("it held at the highest rate dyno offers")
            }
            (Some(h), None) => self.next = (h.saturating_mul(2)).min(self.max_rate),
            (None, Some(1)) => self.finish("it broke even at 1 per second"),
            // Nothing held yet: down by four at a time, then bisect what is between.
            (None, Some(b)) => {
                self.phase = Phase::Bisect;
                self.next = (b / 4).max(1);
            }
            (Some(h), Some(b)) if b as f64 <= h as f64 * PRECISION || b <= h + 1 => {
                self.phase = Phase::Confirm(0);
                self.next = h;
            }
            (Some(h), Some(b)) => {
                self.phase = Phase::Bisect;
                self.next = ((h as f64 * b as f64).sqrt().round() as u64).clamp(h + 1, b - 1);
            }
            (None, None) => {}
        }
    }

    /// A confirmation (`n`: 0 the held rate, 1 the broken one) came out `held`. When it
    /// disagrees with the first run, the edge is taken again from every step so far (a rate
    /// holds only if it held every time) and the search goes on from there.
    fn confirmed(&mut self, n: u8, held: bool) {
        match (n, held) {
            (0, true) => {
                self.phase = Phase::Confirm(1);
                self.next = self.broke.unwrap_or(self.max_rate);
            }
            (1, false) => self.finish("the edge held and broke again when run twice"),
            // The rate that broke held when run again: running the same two again would only
            // toss the same coin. The edge is as narrow as the run-to-run noise lets it be.
            (1, true) => self.finish(
                "the lowest rate that broke held when run again: the edge lies within the run-to-run noise",
            ),
            _ => {
                (self.held, self.broke) = self.edge();
                self.phase = Phase::Bisect;
                // The rate that held once and broke on its rerun is the edge's neighbour: the
                // next try is just below it, not halfway down to the last rate that held.
                let below = self.broke.map(|b| (b as f64 / PRECISION) as u64);
                match (n, below, self.held) {
                    (0, Some(r), Some(h)) if r > h => self.next = r,
                    _ => self.step_on(),
                }
            }
        }
    }

    fn finish(&mut self, why: &str) {
        self.phase = Phase::Done;
        self.why = why.to_string();
    }

    /// The edge from every step so far: the highest rate that held every time it ran, and the
    /// lowest above it that ever broke.
    fn edge(&self) -> (Option<u64>, Option<u64>) {
        let always = |r: u64| self.steps.iter().filter(|s| s.rate == r).all(|s| s.held);
        let held = (self.steps.iter())
            .filter(|s| s.held && always(s.rate))
            .map(|s| s.rate)
            .max();
        let broke = (self.steps.iter())
            .filter(|s| !s.held && held.is_none_or(|h| s.rate > h))
            .map(|s| s.rate)
            .min();
        (held, broke)
    }

    /// What the record keeps: every step, the edge, and why the search ended.
    pub fn record(&self, objectives: Vec<String>) -> SearchRecord {
        let (max_held, min_broke) = self.edge();
        SearchRecord {
            objectives,
            probe_per_s: self.probe,
            steps: self.steps.clone(),
            max_held,
            min_broke,
            why: self.why.clone(),
        }
    }
}

/// The runner's side of a search: the plan's own load runs first (the probe), then each step
/// is a point of a rate sweep, judged by the objectives once its cases ran.
#[derive(Debug, Clone)]
pub struct Steps {
    pub search: Search,
    probed: bool,
}

impl Steps {
    pub fn new(max_rate: u64) -> Steps {
        Steps {
            search: Search::new(1, max_rate),
            probed: false,
        }
    }

    /// After the point whose cases are `cases`: the next point, if the search goes on.
    pub fn after(
        &mut self,
        objectives: &[Threshold],
        base: &Point,
        cases: &[Case],
    ) -> Option<Point> {
        if self.probed {
            let rate = (cases.first())
                .and_then(|c| c.sweep.as_ref())
                .map_or(0, |s| s.value);
            self.search.observe(rate, verdict(objectives, cases));
        } else {
            self.probed = true;
            let rates: Vec<f64> = (cases.iter())
                .filter_map(|c| c.summary.as_ref())
                .map(|s| s.ops_per_s.median)
                .collect();
            self.search
                .probed(rates.iter().sum::<f64>() / rates.len().max(1) as f64);
        }
        let rate = self.search.next()?;
        Some(Point {
            sweep: Some(SweepPoint {
                param: "rate".into(),
                value: rate,
            }),
            ..base.clone()
        })
    }
}

/// A step's verdict: the generator's self-check (an `invalid` case), and the first objective
/// that broke (or had no figure) with its figure against its limit.
fn verdict(objectives: &[Threshold], cases: &[Case]) -> Verdict {
    let valid = cases.iter().all(|c| c.status != Status::Invalid);
    let broke = cases.iter().find_map(|c| {
        objectives.iter().find_map(|o| match o.judge(c) {
            Some((true, _)) => None,
            Some((false, shown)) => Some(format!("{}: {shown}", o.text)),
            None => Some(format!("{}: no figure ({})", o.text, c.status.as_str())),
        })
    });
    Verdict { valid, broke }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a system whose objectives hold up to `capacity` per second.
    fn against(capacity: u64, start: u64) -> SearchRecord {
        let mut s = Search::new(start, 10_000_000);
        while let Some(rate) = s.next() {
            let broke = (rate > capacity).then(|| format!("p99 over at {rate}"));
            s.observe(rate, Verdict { valid: true, broke });
        }
        s.record(vec!["p99 < 10ms".into()])
    }

    #[test]
    fn the_edge_is_found_within_the_precision_and_confirmed() {
        for (capacity, start) in [(10_000, 100), (777, 5_000), (1, 1), (123_456, 60_000)] {
            let r = against(capacity, start);
            let (h, b) = (r.max_held, r.min_broke);
            assert!(h.is_none_or(|h| h <= capacity), "{capacity}: {r:?}");
            assert!(b.is_some_and(|b| b > capacity), "{capacity}: {r:?}");
            if let (Some(h), Some(b)) = (h, b) {
                assert!(
                    b as f64 <= h as f64 * PRECISION || b == h + 1,
                    "{capacity}: {r:?}"
                );
            }
            assert!(
                r.steps.len() <= MAX_STEPS,
                "{capacity}: {} steps",
                r.steps.len()
            );
            assert_eq!(
                r.why, "the edge held and broke again when run twice",
                "{r:?}"
            );
        }
    }

    #[test]
    fn a_probe_halves_into_the_start_and_the_steps_stay_few() {
        let mut s = Search::new(1, 10_000_000);
        s.probed(10_000.0);
        assert_eq!(s.next(), Some(5_000));
        let mut steps = 0;
        while let Some(rate) = s.next() {
            let broke = (rate > 9_000).then(|| "broke".to_string());
            s.observe(rate, Verdict { valid: true, broke });
            steps += 1;
        }
        assert!(steps <= 11, "{steps} steps: {:?}", s.record(vec![]));
    }

    #[test]
    fn a_generator_that_cannot_keep_up_breaks_the_step_and_says_so() {
        let mut s = Search::new(1000, 10_000_000);
        s.observe(
            1000,
            Verdict {
                valid: true,
                broke: None,
            },
        );
        s.observe(
            2000,
            Verdict {
                valid: false,
                broke: None,
            },
        );
        let r = s.record(vec![]);
        assert_eq!(r.min_broke, Some(2000));
        assert!(r.steps[1].why.as_deref().unwrap().contains("self-check"));
        assert_eq!(s.next(), Some(1414));
    }

    #[test]
    fn a_broken_rate_that_holds_when_run_again_ends_the_search_instead_of_running_it_again() {
        let mut s = Search::new(1000, 10_000_000);
        let mut tries = std::collections::BTreeMap::<u64, u32>::new();
        while let Some(rate) = s.next() {
            // Holds up to 3000; above, breaks the first time a rate runs and holds after
            // (the noise at the edge of this machine's capacity).
            let n = tries.entry(rate).or_default();
            *n += 1;
            let broke = (rate > 3000 && *n == 1).then(|| "broke".to_string());
            s.observe(rate, Verdict { valid: true, broke });
        }
        let r = s.record(vec![]);
        assert!(r.why.contains("within the run-to-run noise"), "{r:?}");
        assert!(r.steps.len() < MAX_STEPS, "{} steps: {r:?}", r.steps.len());
        let (h, b) = (r.max_held.unwrap(), r.min_broke.unwrap());
        assert!(h <= 3000 && b > h, "{r:?}");
    }

    #[test]
    fn an_edge_that_does_not_hold_again_is_searched_on_below_it() {
        let mut s = Search::new(1000, 10_000_000);
        let mut flaky = None;
        while let Some(rate) = s.next() {
            // Holds up to 3000, except that the first rerun of the edge breaks.
            let confirm = s.phase == Phase::Confirm(0) && flaky.is_none();
            if confirm {
                flaky = Some(rate);
            }
            let broke = (rate > 3000 || confirm).then(|| "broke".to_string());
            s.observe(rate, Verdict { valid: true, broke });
        }
        let r = s.record(vec![]);
        let (h, flaky) = (r.max_held.unwrap(), flaky.unwrap());
        // The rate that broke on its rerun is not reported as held; the edge below it is.
        assert!(h < flaky, "{r:?}");
        assert!(
            r.steps.iter().filter(|s| s.rate == h).all(|s| s.held),
            "{r:?}"
        );
        assert!(r.steps.len() <= MAX_STEPS, "{r:?}");
    }
}
