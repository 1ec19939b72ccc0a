//! Seeded random streams, one per purpose.
//!
//! A run has one seed. Each consumer (a group's Poisson arrivals, hill
//! climbing's random sample interval, the gate thread's phase, work
//! stealing) draws from its own ChaCha8 stream derived from the seed and the
//! stream's name, so adding draws to one never shifts another.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Derives the seed of the stream `name` from the run's seed.
pub fn stream_seed(seed: u64, name: &str) -> u64 {
    // FNV-1a over the name, then SplitMix64 finalisation mixed with the seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = seed ^ h.rotate_left(17);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The random stream `name` of a run seeded with `seed`.
pub fn stream(seed: u64, name: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(stream_seed(seed, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let a1: u64 = stream(7, "arrivals/a").next_u64();
        let a2: u64 = stream(7, "arrivals/a").next_u64();
        let b: u64 = stream(7, "arrivals/b").next_u64();
        let c: u64 = stream(8, "arrivals/a").next_u64();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, c);
    }
}
