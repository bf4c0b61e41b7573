//! What the runner's progress reports say happened since the last one: a load repetition that
//! began (its case, and when on the run's clock) and the intervals that ended. The live view
//! ([`crate::ui`]) and the pushed series ([`crate::push`]) both follow a run through this.

use engine::clock::Clock;
use engine::runner::Progress;
use results::IntervalRecord;

/// The repetition running: its case's place, target, test and repetition, and when its load
/// began on the run's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rep {
    pub case: usize,
    pub cases: usize,
    pub target: String,
    pub test: String,
    pub rep: u32,
    pub reps: u32,
    pub started_ns: u64,
    pub planned_ns: Option<u64>,
}

impl Rep {
    /// Its number as the record counts them (the measured ones from 1, the warm-up 0), and how
    /// many are measured; `warmup` whether one ran first (progress counts it as repetition 0).
    pub fn measured(&self, warmup: bool) -> (u32, u32) {
        let reps = self.reps.saturating_sub(u32::from(warmup));
        (measured(self.rep, warmup), reps)
    }
}

/// Repetition `rep` as the runner counts (the warm-up, when there is one, is 0) as the record
/// counts: the measured ones from 1, the warm-up 0.
pub fn measured(rep: u32, warmup: bool) -> u32 {
    rep + u32::from(!warmup)
}

/// What a progress report brought.
pub struct Step<'a> {
    /// The repetition, when it began with this report.
    pub began: Option<&'a Rep>,
    pub rep: &'a Rep,
    /// The intervals that ended since the last report, in order.
    pub intervals: Vec<IntervalRecord>,
    pub live: &'a engine::load::Live,
}

/// Follows one run's progress reports.
#[derive(Default)]
pub struct Follow {
    clock: Option<Clock>,
    at: Option<Rep>,
    /// The end of the last interval told, within the running repetition.
    told_end_ns: u64,
}

impl Follow {
    /// The run's clock, which the repetitions' starts are read on.
    pub fn clock(&mut self, clock: &Clock) {
        self.clock = Some(clock.clone());
    }

    /// What `p` brings: nothing until a load repetition runs and the clock is known.
    pub fn step<'a>(&'a mut self, p: &Progress<'a>) -> Option<Step<'a>> {
        let (live, clock) = (p.live?, self.clock.as_ref()?);
        let started_ns = clock.ns_at(live.started?);
        let rep = Rep {
            case: p.done,
            cases: p.cases,
            target: p.target.to_string(),
            test: p.test.to_string(),
            rep: p.rep,
            reps: p.reps,
            started_ns,
            planned_ns: live.planned_ns,
        };
        // A repetition is its target, test, number and start: not where the runner says the
        // plan stands, which moves within a repetition as its tests report.
        let same = |a: &Rep| {
            (a.target == rep.target && a.test == rep.test)
                && (a.rep, a.started_ns) == (rep.rep, rep.started_ns)
        };
        let began = !self.at.as_ref().is_some_and(same);
        if began {
            (self.at, self.told_end_ns) = (Some(rep), 0);
        }
        // The intervals that began after the last one told, as they ended (never thinned);
        // an empty one (a repetition ending on an interval's edge) says nothing.
        let told = self.told_end_ns;
        let intervals: Vec<IntervalRecord> = (live.recent.iter())
            .filter(|iv| iv.start_ns >= told && iv.end_ns > iv.start_ns)
            .copied()
            .collect();
        if let Some(last) = intervals.last() {
            self.told_end_ns = last.end_ns;
        }
        let rep = self.at.as_ref().expect("set above");
        Some(Step {
            began: began.then_some(rep),
            rep,
            intervals,
            live,
        })
    }
}

/// Several watches told as one.
pub struct Fan(pub Vec<std::sync::Arc<dyn engine::runner::Watch>>);

impl engine::runner::Watch for Fan {
    fn clock(&self, clock: &Clock) {
        self.0.iter().for_each(|w| w.clock(clock));
    }
    fn fault(&self, event: &results::faults::FaultEvent) {
        self.0.iter().for_each(|w| w.fault(event));
    }
}
