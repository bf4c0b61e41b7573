//! What a shard tells rank 0 while it runs, so rank 0 (its live view) can show every shard's
//! progress: a line `progress CASE REP ELAPSED_NS RESPONSES ERRORS RATE P99_NS` after each of
//! its progress reports (`-` where a figure is unknown: a suite without a live time series).
//! A shard sends it only when the rendezvous is not busy with a start and the socket takes it
//! at once (it never waits: a line cut short by a full socket is ended by the next one, and
//! rank 0 skips what it cannot read); rank 0 takes what has arrived whenever it reports its own
//! progress, without waiting either. Every shard runs the same dyno: a rank 0 older than
//! these lines would take one for a broken protocol.

use super::{Rendezvous, Role};
use std::time::Instant;

/// One shard's last word.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardProgress {
    /// Its rank.
    pub index: u32,
    /// The case it runs (its place among the plan's, the same on every shard).
    pub case: usize,
    /// Its repetition (0 = warm-up when there is one), as the runner counts.
    pub rep: u32,
    /// The running repetition's load so far: how long, responses, failures, the last
    /// interval's rate and p99.
    pub elapsed_ns: Option<u64>,
    pub responses: Option<u64>,
    pub errors: Option<u64>,
    pub rate_per_s: Option<f64>,
    pub p99_ns: Option<u64>,
    /// When rank 0 heard it (rank 0's own: now).
    pub heard: Instant,
    /// Its connection closed: it finished, or failed (its own output says which).
    pub ended: bool,
}

impl ShardProgress {
    /// What `p` says of the shard `index` that made it.
    pub fn of(index: u32, p: &crate::runner::Progress) -> ShardProgress {
        let live = p.live;
        ShardProgress {
            index,
            case: p.done,
            rep: p.rep,
            elapsed_ns: live.map(|l| l.elapsed_ns),
            responses: live.map(|l| l.total.responses),
            errors: live.map(|l| l.total.error_count()),
            rate_per_s: live.and_then(|l| l.last).map(|iv| iv.responses_per_s()),
            p99_ns: live.and_then(|l| l.last).map(|iv| iv.p99_ns),
            heard: Instant::now(),
            ended: false,
        }
    }

    /// A shard not heard from yet.
    fn silent(rank: usize) -> ShardProgress {
        ShardProgress {
            index: rank as u32,
            case: 0,
            rep: 0,
            elapsed_ns: None,
            responses: None,
            errors: None,
            rate_per_s: None,
            p99_ns: None,
            heard: Instant::now(),
            ended: false,
        }
    }

    fn line(&self) -> String {
        fn or_dash<T: ToString>(v: Option<T>) -> String {
            v.map_or_else(|| "-".into(), |v| v.to_string())
        }
        format!(
            "progress {} {} {} {} {} {} {}",
            self.case,
            self.rep,
            or_dash(self.elapsed_ns),
            or_dash(self.responses),
            or_dash(self.errors),
            or_dash(self.rate_per_s.map(|r| format!("{r:.1}"))),
            or_dash(self.p99_ns)
        )
    }

    /// A progress line from shard `index`; `None` if it is not one (ignored: a shard's word
    /// on its progress is only shown, never acted on).
    fn parse(index: u32, line: &str) -> Option<ShardProgress> {
        let mut w = line.strip_prefix("progress ")?.split(' ');
        fn opt<T: std::str::FromStr>(w: Option<&str>) -> Option<Option<T>> {
            match w? {
                "-" => Some(None),
                v => v.parse().ok().map(Some),
            }
        }
        let p = ShardProgress {
            index,
            case: w.next()?.parse().ok()?,
            rep: w.next()?.parse().ok()?,
            elapsed_ns: opt(w.next())?,
            responses: opt(w.next())?,
            errors: opt(w.next())?,
            rate_per_s: opt::<f64>(w.next())?.filter(|r| r.is_finite() && *r >= 0.0),
            p99_ns: opt(w.next())?,
            heard: Instant::now(),
            ended: false,
        };
        w.next().is_none().then_some(p)
    }
}

/// Whether `line` is a progress line, whole or cut short (a line cut short ends where the next
/// one begins, so what is left of it is a beginning of one).
pub(super) fn is_progress(line: &str) -> bool {
    line.starts_with("progress ") || "progress ".starts_with(line)
}

impl Rendezvous {
    /// A shard other than rank 0 tells it `p` (nothing if the rendezvous is busy with a start,
    /// or on rank 0).
    pub fn tell(&self, p: &ShardProgress) {
        if let Ok(mut guard) = self.role.try_lock()
            && let (Role::Follower(l), _, None) = &mut *guard
        {
            l.offer(&p.line());
        }
    }

    /// Rank 0: what each other shard said last, by rank (those heard from), with what has
    /// arrived since the last call; empty on another shard.
    pub fn shards(&self) -> Vec<ShardProgress> {
        if let Ok(mut guard) = self.role.try_lock()
            && let (Role::Leader(peers), ..) = &mut *guard
        {
            for (k, p) in peers.iter_mut().enumerate() {
                let (lines, closed) = p.arrived().unwrap_or((Vec::new(), true));
                for l in lines {
                    if !self.heard_from(k + 1, &l) {
                        p.keep(l);
                    }
                }
                if closed && let Ok(mut h) = self.heard.lock() {
                    if h.len() <= k + 1 {
                        h.resize(k + 2, None);
                    }
                    let s = h[k + 1].get_or_insert_with(|| ShardProgress::silent(k + 1));
                    s.ended = true;
                }
            }
        }
        let heard = self.heard.lock().map(|h| h.clone()).unwrap_or_default();
        heard.into_iter().flatten().collect()
    }

    /// Keeps `line` as shard `rank`'s progress if it is one; whether it was one (or what is
    /// left of one cut short).
    pub(super) fn heard_from(&self, rank: usize, line: &str) -> bool {
        let Some(p) = ShardProgress::parse(rank as u32, line) else {
            return is_progress(line);
        };
        if let Ok(mut h) = self.heard.lock() {
            if h.len() <= rank {
                h.resize(rank + 1, None);
            }
            h[rank] = Some(p);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_line_reads_back_as_written() {
        let p = ShardProgress {
            index: 3,
            case: 2,
            rep: 1,
            elapsed_ns: Some(1_500_000_000),
            responses: Some(12_000),
            errors: Some(0),
            rate_per_s: Some(8000.5),
            p99_ns: Some(420_000),
            heard: Instant::now(),
            ended: false,
        };
        let back = ShardProgress::parse(3, &p.line()).unwrap();
        assert_eq!(
            ShardProgress {
                heard: p.heard,
                ..back
            },
            p
        );
        let none = ShardProgress {
            elapsed_ns: None,
            responses: None,
            errors: None,
            rate_per_s: None,
            p99_ns: None,
            ..p.clone()
        };
        assert_eq!(none.line(), "progress 2 1 - - - - -");
        let back = ShardProgress::parse(3, &none.line()).unwrap();
        assert_eq!(
            ShardProgress {
                heard: none.heard,
                ..back
            },
            none
        );
    }

    proptest::proptest! {
        #[test]
        fn any_line_is_a_progress_or_nothing(s in "progress[ 0-9a-z.-]{0,80}") {
            if let Some(p) = ShardProgress::parse(1, &s) {
                proptest::prop_assert_eq!(ShardProgress::parse(1, &p.line()).map(|q| q.case), Some(p.case));
            }
        }
    }
}
