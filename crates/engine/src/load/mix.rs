//! A mix: a target's several named requests, one picked by weight at each request's start.
//!
//! The pick is a seeded draw per load thread (k6's, Locust's and Gatling's `randomSwitch`
//! model: requests interleave as users' would, never in a fixed cycle that a closed loop's
//! connections could fall into step with). Each name's share converges on its weight's: over
//! n requests a share w is off by about √(w(1−w)/n) (0.16 percentage points at w = 0.5,
//! n = 10⁵). Each request is recorded under its name beside the total.

/// The named requests of a target and their weights; a target without a mix sends its one
/// request (index 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    names: Vec<String>,
    weights: Vec<u32>,
    /// Running sums of the weights: request `i` is drawn for `r` in
    /// `cumulative[i - 1]..cumulative[i]`.
    cumulative: Vec<u64>,
}

impl Mix {
    /// A mix of `(name, weight)`; `None` unless the weights sum to more than 0 and the names
    /// are distinct (the driver checks both where it reads them, saying where).
    pub fn new(named: Vec<(String, u32)>) -> Option<Mix> {
        let mut cumulative = Vec::with_capacity(named.len());
        let mut sum = 0u64;
        for (_, w) in &named {
            sum += u64::from(*w);
            cumulative.push(sum);
        }
        let distinct =
            (named.iter().enumerate()).all(|(i, (n, _))| named[..i].iter().all(|(m, _)| m != n));
        (sum > 0 && distinct).then(|| Mix {
            names: named.iter().map(|(n, _)| n.clone()).collect(),
            weights: named.iter().map(|(_, w)| *w).collect(),
            cumulative,
        })
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn weights(&self) -> &[u32] {
        &self.weights
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The request a uniform 64-bit draw `r` picks (Lemire's multiply-shift maps it onto the
    /// weights' sum without a division; the bias is below 2⁻³² for any sum dyno accepts).
    #[inline]
    pub fn pick(&self, r: u64) -> usize {
        let total = *self.cumulative.last().expect("a mix has requests");
        let x = ((u128::from(r) * u128::from(total)) >> 64) as u64;
        // A handful of requests: a scan is as fast as a search, and needs no branch table.
        self.cumulative.iter().position(|&c| x < c).unwrap_or(0)
    }
}

/// A scenario: the requests (by their index in the mix) each client sends in turn — an
/// iteration — and how long it thinks between steps. Each step is timed as a request; the
/// iteration from its first step's intended start to its last step's response. A step that
/// fails ends its iteration there: the client starts the next one from the first step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    pub steps: Vec<usize>,
    /// Think time between steps, drawn uniformly from this range (ns; both ends included).
    pub think_ns: (u64, u64),
}

impl Scenario {
    /// The think time before the next step, from a uniform 64-bit draw `r`.
    #[inline]
    pub fn think(&self, r: u64) -> u64 {
        let (lo, hi) = self.think_ns;
        lo + ((u128::from(r) * u128::from(hi - lo + 1)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(w: &[u32]) -> Mix {
        Mix::new(
            w.iter()
                .enumerate()
                .map(|(i, &w)| (format!("r{i}"), w))
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn each_request_is_drawn_in_its_weights_share() {
        let m = mix(&[5, 3, 0, 2]);
        let mut counts = [0u64; 4];
        let mut s = 42;
        let n = 200_000;
        for _ in 0..n {
            counts[m.pick(results::rng::splitmix64(&mut s))] += 1;
        }
        assert_eq!(counts[2], 0, "a weight of 0 is never drawn");
        for (i, w) in [(0, 0.5), (1, 0.3), (3, 0.2)] {
            let share = counts[i] as f64 / n as f64;
            // 4 standard deviations of a binomial share at this n.
            let sd = (w * (1.0 - w) / n as f64).sqrt();
            assert!((share - w).abs() < 4.0 * sd, "{i}: {share} against {w}");
        }
        // The ends of the draw's range land on the first and the last weighted request.
        assert_eq!(m.pick(0), 0);
        assert_eq!(m.pick(u64::MAX), 3);
    }

    #[test]
    fn a_mix_needs_a_weight_and_distinct_names() {
        assert!(Mix::new(vec![("a".into(), 0), ("b".into(), 0)]).is_none());
        assert!(Mix::new(vec![("a".into(), 1), ("a".into(), 2)]).is_none());
        assert!(Mix::new(Vec::new()).is_none());
        assert_eq!(mix(&[1]).pick(12345), 0);
    }
}
