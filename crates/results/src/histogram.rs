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
