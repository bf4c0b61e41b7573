//! What the live view is told, as a numbered list of events (JSON, one per server-sent event):
//! the view's own (`run`, `case`, `interval`, `fault`: [`report::live`] makes and draws them,
//! for this page and for the report it becomes), and the page's: `result` (a finished case's
//! summary), `shards` (rank 0 of a sharded run: what each shard said last) and `done` (the
//! final report). A page that connects late is given
//! them all from the start, then each new one as it comes.
//!
//! Bounded: the intervals kept are the last [`MAX_INTERVALS`] (a longer run's page starts from
//! those), the other events at most [`MAX_EVENTS`].

use engine::clock::Clock;
use engine::driver::ErrorClass;
use engine::runner::Progress;
use results::IntervalRecord;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

pub const MAX_INTERVALS: usize = 20_000;
pub const MAX_EVENTS: usize = 50_000;

/// The events, and what the next ones are measured against.
#[derive(Default)]
pub struct Feed {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    events: VecDeque<(u64, String)>,
    intervals: VecDeque<(u64, String)>,
    next: u64,
    follow: crate::follow::Follow,
    /// dyno's CPU time (user + system, ns) when the last interval was told, and when.
    cpu: Option<(u64, Instant)>,
    /// Cases whose results were told, and the cases the last progress report said finished.
    results: usize,
    finished: usize,
    run_told: bool,
    done: bool,
    /// The numbers of the events never let go: the run's, the running repetition's, and the
    /// shards' (only their last is kept).
    pinned: [u64; 3],
    /// Whether the page may stop the run.
    stoppable: bool,
    /// Each case's target, test and fault level (a run with levels), from the record.
    cases: Vec<(String, String, Option<String>)>,
    /// Whether a warm-up repetition comes first.
    warmup: bool,
}

impl State {
    fn push(&mut self, interval: bool, event: Value) {
        self.next += 1;
        let pinned = self.pinned;
        let (list, cap) = match interval {
            true => (&mut self.intervals, MAX_INTERVALS),
            false => (&mut self.events, MAX_EVENTS),
        };
        if list.len() == cap {
            let oldest = list.iter().position(|(n, _)| !pinned.contains(n));
            list.remove(oldest.unwrap_or(0));
        }
        list.push_back((self.next, event.to_string()));
    }

    /// Pushes an event that stays however many follow: slot 0 the run's, 1 the repetition's,
    /// 2 the shards'.
    fn pin(&mut self, slot: usize, event: Value) {
        self.push(false, event);
        self.pinned[slot] = self.next;
    }

    /// The events of a progress report: the repetition when it began, the intervals that
    /// ended; whether there were any.
    fn progress(&mut self, p: &Progress) -> bool {
        self.finished = p.finished;
        let shards = self.shards(p);
        let Some(step) = self.follow.step(p) else {
            return shards;
        };
        let (cases, warmup) = (&self.cases, self.warmup);
        let case = (step.began).map(|r| {
            let (rep, reps) = r.measured(warmup);
            report::live::case(&report::live::RepStart {
                case: r.case,
                cases: r.cases,
                target: &r.target,
                test: &r.test,
                rep,
                reps,
                started_ns: r.started_ns,
                planned_ns: r.planned_ns,
                level: cases.get(r.case).and_then(|c| c.2.as_deref()),
            })
        });
        let live = step.live;
        let classes: serde_json::Map<String, Value> = (ErrorClass::ALL.iter())
            .zip(live.total.errors)
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| (c.as_str().to_string(), n.into()))
            .collect();
        // The requests started so far go with the last of the intervals (those they count to).
        let n = step.intervals.len();
        let intervals: Vec<(IntervalRecord, Option<u64>)> = (step.intervals.iter().enumerate())
            .map(|(i, iv)| (*iv, (i + 1 == n).then_some(live.total.requests)))
            .collect();
        let started_ns = step.rep.started_ns;
        let began = case.is_some();
        if let Some(case) = case {
            self.cpu = None;
            self.pin(1, case);
        }
        let cpu = match intervals.is_empty() {
            true => None,
            false => self.cpu_share(),
        };
        for (iv, requests) in &intervals {
            let e = report::live::interval(started_ns, iv, &classes, cpu, *requests);
            self.push(true, e);
        }
        began || !intervals.is_empty() || shards
    }

    /// Rank 0 of a sharded run: every shard's last word (its own from `p`), in place of the
    /// one before; whether there were any.
    fn shards(&mut self, p: &Progress) -> bool {
        if p.shards.is_empty() {
            return false;
        }
        let own = engine::shard::ShardProgress::of(0, p);
        let rows: Vec<Value> = (std::iter::once(&own).chain(&p.shards))
            .map(|s| {
                let (target, test) =
                    (self.cases.get(s.case)).map_or(("", ""), |c| (c.0.as_str(), c.1.as_str()));
                let rep = crate::follow::measured(s.rep, self.warmup);
                json!({"index": s.index, "target": target, "test": test, "rep": rep,
                    "elapsed_ns": s.elapsed_ns, "rate": s.rate_per_s, "p99_ns": s.p99_ns,
                    "errors": s.errors, "ago_ms": s.heard.elapsed().as_millis() as u64,
                    "state": if s.ended { "ended" } else { "running" }})
            })
            .collect();
        let was = self.pinned[2];
        self.events.retain(|(n, _)| *n != was);
        self.pin(2, json!({"kind": "shards", "shards": rows}));
        true
    }

    /// dyno's CPU time since the last call, as a share of one core.
    fn cpu_share(&mut self) -> Option<f64> {
        let (user, sys) = engine::load::process_cpu_ns();
        let now = Instant::now();
        let share = (self.cpu).map(|(was, at)| {
            (user + sys).saturating_sub(was) as f64
                / now.duration_since(at).as_nanos().max(1) as f64
        });
        self.cpu = Some((user + sys, now));
        share
    }
}

impl Feed {
    /// Events after number `seq`, in order, waiting up to `wait` for one; and whether the run
    /// is over (its `done` told).
    pub fn since(&self, seq: u64, wait: Duration) -> (Vec<(u64, String)>, bool) {
        let Ok(mut s) = self.state.lock() else {
            return (Vec::new(), true);
        };
        if s.next <= seq && !s.done {
            s = match self.changed.wait_timeout(s, wait) {
                Ok((s, _)) => s,
                Err(_) => return (Vec::new(), true),
            };
        }
        let newer = |l: &VecDeque<(u64, String)>| -> Vec<(u64, String)> {
            let from = l.partition_point(|(n, _)| *n <= seq);
            l.range(from..).cloned().collect()
        };
        let mut out = newer(&s.events);
        out.extend(newer(&s.intervals));
        out.sort_unstable_by_key(|(n, _)| *n);
        (out, s.done)
    }

    fn tell(&self, interval: bool, event: Value) {
        if let Ok(mut s) = self.state.lock() {
            s.push(interval, event);
        }
        self.changed.notify_all();
    }

    /// Whether the page may stop the run (told with the run's first event).
    pub fn stoppable(&self, yes: bool) {
        if let Ok(mut s) = self.state.lock() {
            s.stoppable = yes;
        }
    }

    pub fn clock(&self, clock: &Clock) {
        if let Ok(mut s) = self.state.lock() {
            s.follow.clock(clock);
        }
    }

    pub fn fault(&self, e: &results::faults::FaultEvent) {
        self.tell(false, report::live::fault(e));
    }

    /// A progress report: a repetition that began, and the intervals that ended since the last.
    pub fn progress(&self, p: &Progress) {
        let told = self.state.lock().is_ok_and(|mut s| s.progress(p));
        if told {
            self.changed.notify_all();
        }
    }

    /// The record as the run writes it: the plan once, then each finished case's summary.
    pub fn record(&self, r: &results::RunRecord, all: bool) {
        let Ok(mut s) = self.state.lock() else { return };
        if !s.run_told {
            s.run_told = true;
            let mut run = report::live::run(r);
            run["dyno"] = json!(r.dyno);
            run["stoppable"] = s.stoppable.into();
            s.pin(0, run);
            s.warmup = r.plan.warmup;
        }
        s.cases = (r.cases.iter())
            .map(|c| (c.target.clone(), c.test.clone(), c.level.clone()))
            .collect();
        let upto = if all {
            r.cases.len()
        } else {
            s.finished.min(r.cases.len())
        };
        for i in s.results..upto {
            let c = &r.cases[i];
            s.push(
                false,
                json!({"kind": "result", "n": i, "target": c.target, "test": c.test,
                    "status": c.status.as_str(), "reason": c.reason, "summary": c.summary}),
            );
        }
        s.results = s.results.max(upto);
        drop(s);
        self.changed.notify_all();
    }

    /// The run is over: `report` is the final report's page.
    pub fn done(&self, report: Option<&str>) {
        if let Ok(mut s) = self.state.lock() {
            s.push(false, json!({"kind": "done", "report": report}));
            s.done = true;
        }
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_page_is_told_everything_in_order_and_the_intervals_stay_bounded() {
        let f = Feed::default();
        f.tell(false, json!({"kind": "run"}));
        for i in 0..MAX_INTERVALS + 5 {
            f.tell(true, json!({"kind": "interval", "i": i}));
        }
        f.tell(false, json!({"kind": "fault"}));
        let (all, done) = f.since(0, Duration::ZERO);
        assert!(!done);
        assert_eq!(all.len(), 1 + MAX_INTERVALS + 1);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "in order");
        assert!(
            all[0].1.contains("run") && all[1].1.contains("\"i\":5"),
            "the oldest intervals went"
        );
        let last = all.last().unwrap().0;
        assert_eq!(f.since(last, Duration::from_millis(1)).0, Vec::new());
        f.done(Some("<p>report</p>"));
        let (tail, done) = f.since(last, Duration::ZERO);
        assert!(
            done && tail.len() == 1 && tail[0].1.contains("<p>report</p>"),
            "{tail:?}"
        );
    }
}
