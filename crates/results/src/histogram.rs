//! The latency histogram and its portable encoding.
//!
//! Every latency dyno records is in nanoseconds, in an HdrHistogram with three significant digits
//! spanning 1 ns to one hour. The range is fixed so that recording never allocates: a value above
//! the top is clamped to it (and an hour-long operation is reported as one).
//!
//! The encoding is the one HdrHistogram's own tools read: the V2 format, deflate-compressed, then
//! base64 — the same bytes a `.hlog` line carries.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// A latency histogram in nanoseconds.
pub type Histogram = hdrhistogram::Histogram<u64>;

/// The highest latency a histogram holds without clamping: one hour, in nanoseconds.
pub const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;

/// Significant decimal digits kept: values are exact to 0.1 %.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A new, empty histogram with dyno's fixed range (1 ns ..= one hour, 3 significant digits).
pub fn new_histogram() -> Histogram {
    Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid")
}

/// A new, empty histogram of the same precision and range that starts small and grows to the
/// values it is given. Its counts take memory for the range it has seen: about 64 KiB up to a
/// millisecond, where one made by [`new_histogram`] writes all of its ~270 KiB at once — a
/// recorder per client keeps one, so at `-c 50` that is most of dyno's memory. It merges with
/// any other (and they into it). Record into it with [`record`]: `saturating_record` would clamp
/// to the small range it has so far.
pub fn new_growing_histogram() -> Histogram {
    let mut h = Histogram::new_with_bounds(1, 2, SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid");
    h.auto(true);
    h
}

/// Records `ns` (at least 1, at most [`HIGHEST_NS`]) into any of dyno's histograms, growing
/// one made by [`new_growing_histogram`] to hold it.
#[inline]
pub fn record(h: &mut Histogram, ns: u64) {
    let v = ns.clamp(1, HIGHEST_NS);
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

/// Why a stored histogram could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    // Not a `source` (no `#[from]`): the message holds the cause, printed once.
    #[error("histogram is not valid base64: {0}")]
    Base64(base64::DecodeError),
    #[error("histogram bytes are not HdrHistogram V2: {0:?}")]
    Format(hdrhistogram::serialization::DeserializeError),
}

/// Encodes a histogram as base64 of its V2 deflate serialization.
pub fn encode(h: &Histogram) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing a histogram into memory cannot fail");
    STANDARD.encode(bytes)
}

/// Decodes what [`encode`] produced (or any V2 / V2-deflate histogram in base64).
pub fn decode(text: &str) -> Result<Histogram, DecodeError> {
    let bytes = STANDARD.decode(text.trim()).map_err(DecodeError::Base64)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(DecodeError::Format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip_keeps_every_count() {
        let mut h = new_histogram();
        for v in [1u64, 25, 3_400, 1_000_000, 7_000_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.max(), h.max());
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
    }

    #[test]
    fn values_above_the_range_are_clamped_not_lost() {
        let mut h = new_histogram();
        h.saturating_record(HIGHEST_NS * 10);
        assert_eq!(h.len(), 1);
        assert!(h.max() >= HIGHEST_NS);
    }

    #[test]
    fn garbage_is_a_clear_error() {
        assert!(matches!(decode("%%%"), Err(DecodeError::Base64(_))));
        assert!(matches!(decode("AAAA"), Err(DecodeError::Format(_))));
    }
}
#[cfg(test)]
mod growing {
    use super::*;

    #[test]
    fn a_growing_histogram_holds_what_a_full_one_does_and_merges_both_ways() {
        let mut g = new_growing_histogram();
        let mut full = new_histogram();
        for v in [1u64, 100_000, 2_000_000, 50_000_000, HIGHEST_NS * 10] {
            record(&mut g, v);
            record(&mut full, v);
        }
        assert_eq!(g.len(), 5);
        assert_eq!(g.max(), full.max(), "clamped at an hour, as the full one");
        for q in [0.0, 0.5, 0.75, 1.0] {
            assert_eq!(g.value_at_quantile(q), full.value_at_quantile(q), "{q}");
        }
        assert_eq!(g.count_between(1_000_001, u64::MAX), 3);
        let mut into_full = new_histogram();
        into_full.add(&g).unwrap();
        let mut into_growing = new_growing_histogram();
        into_growing.add(&full).unwrap();
        assert_eq!(into_full.len(), 5);
        assert_eq!(into_growing.len(), 5);
        assert_eq!(into_growing.max(), full.max());
        // A small range costs less memory: a millisecond's worth, a third of an hour's.
        let mut small = new_growing_histogram();
        record(&mut small, 1_000_000);
        assert!(small.distinct_values() < new_histogram().distinct_values() / 2);
    }
}
