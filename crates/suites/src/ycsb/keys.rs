//! YCSB's key generators, as YCSB computes them (`core/src/main/java/site/ycsb/generator/` in
//! brianfrankcooper/YCSB), quirks included, so a `ycsb-*` workload draws the keys YCSB would:
//!
//! - [`Zipfian`]: Gray et al.'s method ("Quickly Generating Billion-Record Synthetic Databases",
//!   SIGMOD 1994), θ = 0.99. Like YCSB's, its constructor spends one draw, it grows its ζ(n)
//!   incrementally when asked for more items but recomputes η with the item count it was built
//!   with, and the two most popular items skip the power formula.
//! - [`ScrambledZipfian`]: a zipfian over 10^10 (+1) items with the precomputed ζ, hashed with
//!   FNV-1a 64 and taken modulo the item count: the popular keys are scattered over the key space.
//! - [`SkewedLatest`]: recent inserts favoured, `last − zipfian(last)` on an acknowledged-insert
//!   counter ([`Acknowledged`]).
//! - [`Uniform`]: `|nextLong| mod interval + lb`.
//!
//! The workloads re-draw a key beyond the last acknowledged insert, as YCSB's `nextKeynum` does.
//! Every generator reads its randomness from a [`Draws`] stream, so a fixed stream gives a fixed
//! key sequence: `tests/vectors/ycsb-keys.txt` holds sequences YCSB's own Java classes produced
//! from the same stream (`scripts/ycsb-vectors`), which the tests compare against.
//!
//! [`ExactZipf`] is the alternative to YCSB's approximation: a true Zipf(θ) over exactly the
//! record count, by inverting the cumulative distribution (a binary search over precomputed
//! partial sums), for any θ > 0.

/// A stream of random 64-bit words; doubles are made from the top 53 bits, as Java's
/// `nextDouble` does.
pub trait Draws {
    fn next_u64(&mut self) -> u64;

    /// Uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Java's `nextLong`: the word as a signed value.
    fn next_i64(&mut self) -> i64 {
        self.next_u64() as i64
    }
}

/// SplitMix64 as a [`Draws`] stream: the workloads' generator (one per client, seeded from the
/// plan's seed) and the golden vectors' fixed stream.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl Draws for SplitMix {
    fn next_u64(&mut self) -> u64 {
        results::rng::splitmix64(&mut self.0)
    }
}

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// The scrambled zipfian's item space and its precomputed ζ(10^10, 0.99).
pub const SCRAMBLED_ITEM_COUNT: i64 = 10_000_000_000;
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the value's 8 bytes, low first, then `Math.abs` (which
/// leaves `i64::MIN` negative).
pub fn fnvhash64(mut val: i64) -> i64 {
    let mut h = 0xCBF2_9CE4_8422_2325_u64 as i64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        h ^= octet;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    h.wrapping_abs()
}

/// ζ from item `st` to `n` (exclusive), added to `initial`: Σ 1 / (i+1)^θ.
pub fn zeta(st: i64, n: i64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in st..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// YCSB's `ZipfianGenerator`.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: i64,
    base: i64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    countforzeta: i64,
}

impl Zipfian {
    /// Items `min..=max`; `zetan` precomputed or computed here. Spends one draw, as YCSB's
    /// constructor does.
    pub fn new(min: i64, max: i64, theta: f64, zetan: Option<f64>, d: &mut dyn Draws) -> Zipfian {
        let items = max - min + 1;
        let zetan = zetan.unwrap_or_else(|| zeta(0, items, theta, 0.0));
        let zeta2theta = zeta(0, 2, theta, 0.0);
        let mut z = Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan),
            countforzeta: items,
        };
        z.next(d);
        z
    }

    /// Items `0..items`, θ 0.99.
    pub fn with_items(items: i64, d: &mut dyn Draws) -> Zipfian {
        Zipfian::new(0, items - 1, ZIPFIAN_CONSTANT, None, d)
    }

    /// The next item of `itemcount` (YCSB's `nextLong(itemcount)`): more items than before grow
    /// ζ incrementally; fewer are drawn with the larger ζ (YCSB does not recompute by default).
    pub fn next_of(&mut self, itemcount: i64, d: &mut dyn Draws) -> i64 {
        if itemcount > self.countforzeta {
            self.zetan = zeta(self.countforzeta, itemcount, self.theta, self.zetan);
            self.countforzeta = itemcount;
            // YCSB's own quirk: η is recomputed with the item count it was built with.
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u = d.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as i64
    }

    pub fn next(&mut self, d: &mut dyn Draws) -> i64 {
        self.next_of(self.items, d)
    }
}

/// YCSB's `ScrambledZipfianGenerator` over `min..=max`.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    zipf: Zipfian,
    min: i64,
    itemcount: i64,
}

impl ScrambledZipfian {
    pub fn new(min: i64, max: i64, d: &mut dyn Draws) -> ScrambledZipfian {
        ScrambledZipfian {
            zipf: Zipfian::new(
                0,
                SCRAMBLED_ITEM_COUNT,
                ZIPFIAN_CONSTANT,
                Some(SCRAMBLED_ZETAN),
                d,
            ),
            min,
            itemcount: max - min + 1,
        }
    }

    pub fn next(&mut self, d: &mut dyn Draws) -> i64 {
        self.min + fnvhash64(self.zipf.next(d)) % self.itemcount
    }
}

/// YCSB's `AcknowledgedCounterGenerator`, single-threaded: the next insert's number, and the
/// highest number below which every insert was acknowledged (`last`).
#[derive(Debug, Clone)]
pub struct Acknowledged {
    next: i64,
    limit: i64,
    /// Acknowledged above the limit, not yet contiguous with it.
    pending: std::collections::BTreeSet<i64>,
}

impl Acknowledged {
    /// Counting from `start` (the record count: keys `0..start` are loaded).
    pub fn new(start: i64) -> Acknowledged {
        Acknowledged {
            next: start,
            limit: start - 1,
            pending: Default::default(),
        }
    }

    /// The next insert's key number.
    pub fn issue(&mut self) -> i64 {
        self.next += 1;
        self.next - 1
    }

    /// `value`'s insert was acknowledged.
    pub fn acknowledge(&mut self, value: i64) {
        self.pending.insert(value);
        while self.pending.remove(&(self.limit + 1)) {
            self.limit += 1;
        }
    }

    /// The highest key number acknowledged with every one below it.
    pub fn last(&self) -> i64 {
        self.limit
    }
}

/// YCSB's `SkewedLatestGenerator`: `last − zipfian(last)`, over the acknowledged inserts.
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// Spends two draws, as YCSB's constructor does (the zipfian's, then its own first value).
    pub fn new(last: i64, d: &mut dyn Draws) -> SkewedLatest {
        let mut s = SkewedLatest {
            zipfian: Zipfian::with_items(last, d),
        };
        s.next(last, d);
        s
    }

    pub fn next(&mut self, last: i64, d: &mut dyn Draws) -> i64 {
        last - self.zipfian.next_of(last, d)
    }
}

/// YCSB's `UniformLongGenerator` over `lb..=ub`.
#[derive(Debug, Clone)]
pub struct Uniform {
    lb: i64,
    interval: i64,
}

impl Uniform {
    pub const fn new(lb: i64, ub: i64) -> Uniform {
        Uniform {
            lb,
            interval: ub - lb + 1,
        }
    }

    pub fn next(&self, d: &mut dyn Draws) -> i64 {
        d.next_i64().wrapping_abs() % self.interval + self.lb
    }
}

pub use engine::zipf::ExactZipf;
