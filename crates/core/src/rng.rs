//! A deterministic random source, handed to algorithms by their caller.
//!
//! Wraps `rand_xoshiro::Xoshiro256PlusPlus` (small state, fast, good statistical quality,
//! and its output is fixed by the algorithm, so results stay byte-identical across builds).

use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Seeded pseudo-random generator. Never seeded from the clock.
#[derive(Clone, Debug)]
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// A generator whose whole output is fixed by `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }
    /// An independent stream derived from this seed and a label (for per-object RNGs).
    pub fn derive(seed: u64, stream: u64) -> Rng {
        // SplitMix-style mixing so that nearby (seed, stream) pairs give unrelated streams.
        let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng::new(z ^ (z >> 31))
    }
    pub fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// True with probability `p` (clamped to [0, 1]).
    pub fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }
    /// Uniform integer in [0, n) (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn deterministic_and_uniform() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut r = Rng::new(1);
        let n = 100_000;
        let hits = (0..n).filter(|_| r.chance(0.3)).count() as f64 / n as f64;
        assert!((hits - 0.3).abs() < 0.01, "{hits}");
        assert_ne!(Rng::derive(1, 1).next_u64(), Rng::derive(1, 2).next_u64());
    }
}
