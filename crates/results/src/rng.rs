//! SplitMix64 (Steele, Lea and Flood; Vigna's constants): the one small deterministic generator
//! dyno uses wherever a seeded stream must repeat exactly — object contents, the reference
//! server's payloads, the mock target's jitter, the comparison's bootstrap.

/// The next value of the stream whose state is `state`.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in [0, 1) from the stream (53 random bits).
pub fn unit(state: &mut u64) -> f64 {
    (splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_splitmix64() {
        // The first outputs for seed 0, as the reference implementation gives them.
        let mut s = 0;
        assert_eq!(splitmix64(&mut s), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut s), 0x6E78_9E6A_A1B9_65F4);
        let u = unit(&mut s);
        assert!((0.0..1.0).contains(&u));
    }
}
