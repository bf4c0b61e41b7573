//! Faults in the record: what was done to a target and when (on the run's clock), and what each
//! fault did to a case's service: how long until it recovered, and the longest time with no
//! successful operation.
//!
//! **Recovery time** of a fault event, for a case with a time series: its baseline is the median
//! responses per second and the median p99 of the intervals that ended in the
//! [`BASELINE_NS`] before the fault started (after any earlier fault's end). The case has
//! recovered at the start of the first of [`STEADY_INTERVALS`] consecutive intervals, each
//! starting at or after the fault, with at least [`RATE_SHARE`] of the baseline rate and a p99
//! at most [`P99_FACTOR`] × the baseline's (or within 1 ms of it, or no worse than the worst
//! baseline interval's). The recovery time runs from the fault's start to
//! then; `null` when the run ended, or the next fault came, first, or no baseline exists.
//!
//! **Unavailability**: the longest run of consecutive intervals with no successful response,
//! from the fault's start to its recovery (or the end), in whole intervals: it is as fine as the
//! series (`--interval`).

use crate::IntervalRecord;
use serde::{Deserialize, Serialize};

/// How long before a fault its baseline is taken.
pub const BASELINE_NS: u64 = 5_000_000_000;
/// Recovered: at least this share of the baseline rate …
pub const RATE_SHARE: f64 = 0.9;
/// … a p99 within this factor of the baseline's, or within [`P99_SLACK_NS`] of it (a
/// sub-millisecond service's p99 doubles with scheduling noise alone) …
pub const P99_FACTOR: f64 = 2.0;
pub const P99_SLACK_NS: f64 = 1_000_000.0;
/// … for this many intervals in a row.
pub const STEADY_INTERVALS: usize = 3;

/// One fault, as done: on the run's clock (the clock of `resources` and `LoadRep::started_ns`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultEvent {
    /// `kill`, `restart`, `pause`, `partition`, `slow` or `restart-clients`.
    pub action: String,
    /// The target (or `TARGET/MEMBER`) it was done to.
    pub target: String,
    /// When the signal was sent (the link cut or slowed, the clients told).
    pub start_ns: u64,
    /// When the process was serving again (killed or restarted: ready; paused: continued;
    /// partitioned or slowed: its link open again); `null` if the run ended first.
    pub end_ns: Option<u64>,
    /// The process signalled, and the one started in its place (`null` for faults that signal
    /// none).
    pub pid: Option<u32>,
    pub new_pid: Option<u32>,
    /// What went otherwise than planned (a process not signalled because it was not dyno's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What one fault event did to one case.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultEffect {
    /// The event's index in the record's `faults`.
    pub event: usize,
    /// From the fault to the recovery; `null`: not recovered before the run ended, or no
    /// baseline before the fault.
    pub recovery_ns: Option<u64>,
    /// The longest time with no successful response, in whole intervals.
    pub unavailable_ns: u64,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The effect of each event on a repetition whose intervals (relative to its start) began at
/// `started_ns` on the run's clock.
pub fn effects(
    events: &[FaultEvent],
    intervals: &[IntervalRecord],
    started_ns: u64,
) -> Vec<FaultEffect> {
    let at = |iv: &IntervalRecord| (started_ns + iv.start_ns, started_ns + iv.end_ns);
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let (first, last) = match (intervals.first(), intervals.last()) {
            (Some(f), Some(l)) => (at(f).0, at(l).1),
            _ => continue,
        };
        if e.start_ns < first || e.start_ns >= last {
            continue;
        }
        // The baseline ends at this fault and starts after the previous one's end.
        let calm_from = (events[..i].iter())
            .filter_map(|p| p.end_ns.or(Some(p.start_ns)))
            .filter(|&t| t <= e.start_ns)
            .max()
            .unwrap_or(0)
            .max(e.start_ns.saturating_sub(BASELINE_NS));
        let before: Vec<&IntervalRecord> = (intervals.iter())
            .filter(|iv| at(iv).0 >= calm_from && at(iv).1 <= e.start_ns && iv.end_ns > iv.start_ns)
            .collect();
        let rate = median(before.iter().map(|iv| iv.responses_per_s()).collect());
        let p99 = median(before.iter().map(|iv| iv.p99_ns as f64).collect());
        let worst = before.iter().map(|iv| iv.p99_ns as f64).fold(0.0, f64::max);
        // Up to the next fault: a service that had not recovered by then did not recover from
        // this one.
        let next = (events.get(i + 1)).map_or(u64::MAX, |n| n.start_ns);
        let after: Vec<&IntervalRecord> = (intervals.iter())
            .filter(|iv| at(iv).0 >= e.start_ns && at(iv).1 <= next && iv.end_ns > iv.start_ns)
            .collect();
        let healthy = |iv: &IntervalRecord| match (rate, p99) {
            (Some(r), Some(p)) => {
                iv.responses_per_s() >= RATE_SHARE * r
                    && (p == 0.0
                        || iv.p99_ns as f64 <= (P99_FACTOR * p).max(p + P99_SLACK_NS).max(worst))
            }
            _ => false,
        };
        let recovered = (0..after.len()).find(|&k| {
            after.len() - k >= STEADY_INTERVALS
                && after[k..k + STEADY_INTERVALS].iter().all(|iv| healthy(iv))
        });
        let window = &after[..recovered.unwrap_or(after.len())];
        let mut longest = 0;
        let mut gap = 0;
        for iv in window {
            if iv.ok == 0 {
                gap += iv.end_ns - iv.start_ns;
                longest = longest.max(gap);
            } else {
                gap = 0;
            }
        }
        out.push(FaultEffect {
            event: i,
            recovery_ns: recovered.map(|k| at(after[k]).0 - e.start_ns),
            unavailable_ns: longest,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 ms intervals: 1,000 responses each (10,000/s, p99 1 ms), except `down` (none) and
    /// `slow` (half the rate).
    fn series(
        n: u64,
        down: std::ops::Range<u64>,
        slow: std::ops::Range<u64>,
    ) -> Vec<IntervalRecord> {
        (0..n)
            .map(|i| {
                let responses = if down.contains(&i) {
                    0
                } else if slow.contains(&i) {
                    500
                } else {
                    1000
                };
                IntervalRecord {
                    start_ns: i * 100_000_000,
                    end_ns: (i + 1) * 100_000_000,
                    responses,
                    ok: responses,
                    errors: 0,
                    connects: 0,
                    p50_ns: 500_000,
                    p99_ns: if responses == 0 { 0 } else { 1_000_000 },
                    max_ns: 2_000_000,
                    ..IntervalRecord::default()
                }
            })
            .collect()
    }

    fn event(start_ns: u64) -> FaultEvent {
        FaultEvent {
            action: "kill".into(),
            target: "t".into(),
            start_ns,
            end_ns: Some(start_ns + 300_000_000),
            pid: Some(1),
            new_pid: Some(2),
            note: None,
        }
    }

    #[test]
    fn recovery_is_the_first_of_three_healthy_intervals_after_the_fault() {
        // The repetition started 1 s into the run; the fault at 3 s (interval 20 of the
        // repetition); 5 intervals down, 2 at half rate, then healthy.
        let s = series(60, 20..25, 25..27);
        let e = effects(&[event(3_000_000_000)], &s, 1_000_000_000);
        assert_eq!(
            e,
            [FaultEffect {
                event: 0,
                recovery_ns: Some(700_000_000),
                unavailable_ns: 500_000_000,
            }]
        );
    }

    #[test]
    fn no_recovery_before_the_end_and_faults_outside_the_series_are_left_out() {
        let s = series(30, 25..30, 0..0);
        let e = effects(&[event(2_500_000_000), event(9_000_000_000)], &s, 0);
        assert_eq!(e.len(), 1, "the second fault is after the series");
        assert_eq!(e[0].recovery_ns, None);
        assert_eq!(e[0].unavailable_ns, 500_000_000);
    }
}
