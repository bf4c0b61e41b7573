//! An open loop's schedule (pgbench's `-R`): one for every client, as pgbench's with `-j 1`
//! (it keeps one per thread) — arrivals at the run's rate, Poisson, and each client, once free,
//! takes the next. A slow client thus leaves the arrivals to the others rather than queueing
//! its share behind itself, and the schedule lag is the server's, not one client's turn.

use super::Prng;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

pub(super) struct Schedule(Mutex<Arrivals>);

struct Arrivals {
    /// The last arrival taken; none before the first.
    last: Option<Instant>,
    prng: Prng,
    mean_gap_ns: f64,
}

impl Schedule {
    /// Arrivals at `rate` a second, drawn from `seed`.
    pub(super) fn new(rate: f64, seed: u64) -> Schedule {
        Schedule(Mutex::new(Arrivals {
            last: None,
            prng: Prng::new(seed),
            mean_gap_ns: 1e9 / rate,
        }))
    }

    /// The next arrival, for the client taking it: an exponential gap after the last one
    /// taken, or after `start` for the first. (One lock a transaction, held for a draw.)
    pub(super) fn take(&self, start: Instant) -> Instant {
        let mut a = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let gap = -(1.0 - a.prng.double()).ln() * a.mean_gap_ns;
        let due = *a.last.get_or_insert(start) + Duration::from_nanos(gap as u64);
        a.last = Some(due);
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arrivals come in order, at the rate asked for, whoever takes them.
    #[test]
    fn arrivals_come_at_the_rate_in_order() {
        let s = Schedule::new(1000.0, 7);
        let start = Instant::now();
        let mut last = start;
        let n = 100_000;
        for _ in 0..n {
            let due = s.take(start);
            assert!(due >= last);
            last = due;
        }
        let rate = n as f64 / last.duration_since(start).as_secs_f64();
        assert!((990.0..1010.0).contains(&rate), "{rate}");
    }
}
