//! Turning a weight into a decision: a deterministic rotation for unsticky traffic, a hash
//! bucket for sticky keys.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::table_spec::MAX_WEIGHT_BP;

/// Visits every bucket of 0..10000 once per 10000 requests, in a well-spread order (the stride
/// is near 10000/φ and coprime with 10000), so the canary share is exact over each cycle and
/// close to exact over any shorter run — a random draw would be off by ±0.4 pp at 10k requests.
pub struct Rotation(AtomicU64);

const STRIDE: u64 = 6181;

impl Rotation {
    pub fn new() -> Self {
        Rotation(AtomicU64::new(0))
    }

    pub fn next_bucket(&self) -> u16 {
        let n = self.0.fetch_add(1, Ordering::Relaxed);
        (n.wrapping_mul(STRIDE) % MAX_WEIGHT_BP as u64) as u16
    }
}

impl Default for Rotation {
    fn default() -> Self {
        Self::new()
    }
}

/// A stable bucket in 0..10000 for a sticky key: canary when bucket < weight, so raising the
/// weight only ever moves keys from stable to canary.
pub fn sticky_bucket(key: &[u8]) -> u16 {
    // FNV-1a, then a finalizer so that similar keys spread over the whole range.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    (h % MAX_WEIGHT_BP as u64) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_is_exact_per_cycle() {
        let r = Rotation::new();
        let mut seen = vec![false; 10_000];
        for _ in 0..10_000 {
            let b = r.next_bucket() as usize;
            assert!(!seen[b], "bucket {b} visited twice in one cycle");
            seen[b] = true;
        }
    }

    #[test]
    fn rotation_spreads_over_short_runs() {
        let r = Rotation::new();
        let canary = (0..1000).filter(|_| r.next_bucket() < 2000).count();
        assert!((190..=210).contains(&canary), "{canary} of 1000 at 20%");
    }

    #[test]
    fn sticky_buckets_spread() {
        let mut counts = [0u32; 10];
        for i in 0..100_000u32 {
            counts[(sticky_bucket(format!("user-{i}").as_bytes()) / 1000) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..=10_500).contains(&c), "{counts:?}");
        }
    }
}
