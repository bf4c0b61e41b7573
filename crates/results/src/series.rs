//! A time series with a bounded length, however long the run: when it is full, each pair of
//! neighbours becomes one (the first sample stays alone, so a series always starts where the run
//! did) and every later entry stands for twice as many raw samples. A week at one sample a second
//! fits in a few thousand entries at a coarser grain, with its whole span kept.

/// A series of at most `cap` entries.
#[derive(Debug, Clone)]
pub struct Capped<T: Clone> {
    items: Vec<T>,
    /// The entry being filled: its value and how many raw samples it holds.
    pending: Option<(T, u64)>,
    /// Raw samples per entry (after the first).
    stride: u64,
    cap: usize,
    /// Combines an earlier entry of weight `a` with a later one of weight `b`.
    merge: fn(&T, u64, &T, u64) -> T,
}

impl<T: Clone> Capped<T> {
    /// An empty series of at most `cap` (at least 2) entries.
    pub fn new(cap: usize, merge: fn(&T, u64, &T, u64) -> T) -> Capped<T> {
        assert!(cap >= 2, "a capped series holds at least two entries");
        Capped {
            items: Vec::new(),
            pending: None,
            stride: 1,
            cap,
            merge,
        }
    }

    /// How many raw samples each entry after the first stands for.
    pub fn stride(&self) -> u64 {
        self.stride
    }

    pub fn push(&mut self, x: T) {
        let (value, n) = match self.pending.take() {
            None => (x, 1),
            Some((p, n)) => ((self.merge)(&p, n, &x, 1), n + 1),
        };
        if n < self.stride && !self.items.is_empty() {
            self.pending = Some((value, n));
            return;
        }
        self.items.push(value);
        if self.items.len() >= self.cap {
            let (first, rest) = self.items.split_first().expect("a full series");
            let s = self.stride;
            let mut thinned = vec![first.clone()];
            thinned.extend(rest.chunks(2).map(|pair| match pair {
                [a, b] => (self.merge)(a, s, b, s),
                [a] => a.clone(),
                _ => unreachable!("chunks of two"),
            }));
            // An odd entry left at the end becomes the pending half of the next pair.
            if rest.len() % 2 == 1 {
                let last = thinned.pop().expect("the odd entry");
                self.pending = Some((last, s));
            }
            self.items = thinned;
            self.stride *= 2;
        }
    }

    /// The entries, with a partly filled last one.
    pub fn to_vec(&self) -> Vec<T> {
        let mut v = self.items.clone();
        if let Some((p, _)) = &self.pending {
            v.push(p.clone());
        }
        v
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.pending.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (first raw index, last raw index, raw count)
    type Span = (u64, u64, u64);

    fn merge(a: &Span, _: u64, b: &Span, _: u64) -> Span {
        (a.0, b.1, a.2 + b.2)
    }

    #[test]
    fn a_long_series_keeps_its_span_and_every_sample() {
        let mut s = Capped::new(100, merge);
        let n = 12_345;
        for i in 0..n {
            s.push((i, i, 1));
        }
        let v = s.to_vec();
        assert!(v.len() < 100 && v.len() >= 50, "{}", v.len());
        assert_eq!(v[0], (0, 0, 1));
        assert_eq!(v.last().unwrap().1, n - 1);
        // Contiguous, and every raw sample counted once.
        assert!(v.windows(2).all(|w| w[1].0 == w[0].1 + 1), "{v:?}");
        assert_eq!(v.iter().map(|x| x.2).sum::<u64>(), n);
        // Entries after the first each hold `stride` raw samples (the last may hold fewer).
        let stride = s.stride();
        assert!(v[1..v.len() - 1].iter().all(|x| x.2 == stride), "{v:?}");
        // 12,345 / 128 = 96 entries fit in 100; at 64 they would not.
        assert_eq!(stride, 128);
    }

    #[test]
    fn a_short_series_is_kept_as_is() {
        let mut s = Capped::new(10, merge);
        for i in 0..9 {
            s.push((i, i, 1));
        }
        assert_eq!(s.to_vec().len(), 9);
        assert_eq!(s.stride(), 1);
    }
}
