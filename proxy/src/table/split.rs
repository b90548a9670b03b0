//! Turning weights into a decision: a deterministic rotation for unsticky traffic, a hash
//! bucket for sticky keys, and the buckets each backend owns.

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

/// Which backend owns which buckets of 0..10000, from weights relative to their sum.
///
/// The last backend owns the lowest buckets, the first the highest: with a rollout's `[stable,
/// canary]`, canary owns `0..weight`, so raising its weight only ever moves sticky keys from
/// stable to canary, never back. Each backend owns its share rounded to a basis point, so the
/// rotation is exact per 10000 requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// (end of its buckets, backend index), ascending; only backends with buckets.
    ranges: Vec<(u16, usize)>,
}

impl Split {
    pub fn new(weights: &[u32]) -> Self {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut ranges = Vec::new();
        if total == 0 {
            return Split { ranges };
        }
        let mut below: u64 = 0;
        let mut start = 0u16;
        for (i, &w) in weights.iter().enumerate().rev() {
            below += u64::from(w);
            // Rounded to the nearest bucket, so 1:1:1 is 3333/3334/3333.
            let end = ((below * u64::from(MAX_WEIGHT_BP) + total / 2) / total) as u16;
            if end > start {
                ranges.push((end, i));
                start = end;
            }
        }
        Split { ranges }
    }

    /// No backend has weight: the route answers 500.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The one backend that takes everything, when there is one.
    pub fn only(&self) -> Option<usize> {
        match self.ranges.as_slice() {
            [(_, i)] => Some(*i),
            _ => None,
        }
    }

    /// The backend that owns `bucket` (0..10000); None only when no backend has weight.
    pub fn owner(&self, bucket: u16) -> Option<usize> {
        self.ranges
            .iter()
            .find(|(end, _)| bucket < *end)
            .or(self.ranges.last())
            .map(|&(_, i)| i)
    }

    /// Each backend's buckets of 10000, by backend index (for the admin API and tests).
    pub fn shares(&self, backends: usize) -> Vec<u16> {
        let mut shares = vec![0; backends];
        let mut start = 0;
        for &(end, i) in &self.ranges {
            if let Some(s) = shares.get_mut(i) {
                *s = end - start;
            }
            start = end;
        }
        shares
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
    fn split_owns_shares_last_backend_lowest() {
        let two = Split::new(&[8000, 2000]);
        assert_eq!(two.owner(0), Some(1));
        assert_eq!(two.owner(1999), Some(1));
        assert_eq!(two.owner(2000), Some(0));
        assert_eq!(two.owner(9999), Some(0));
        assert_eq!(Split::new(&[70, 30, 0]).shares(3), [7000, 3000, 0]);
        assert_eq!(Split::new(&[1, 1, 1]).shares(3), [3333, 3334, 3333]);
        assert_eq!(Split::new(&[0, 5]).only(), Some(1));
        assert!(Split::new(&[0, 0]).is_empty());
        assert_eq!(Split::new(&[0, 0]).owner(5), None);
        // Heavy weights (HTTPRoute allows up to 1,000,000 each) do not overflow.
        assert_eq!(Split::new(&[1_000_000, 1_000_000]).shares(2), [5000, 5000]);
    }

    /// Raising one backend's share at another's expense moves sticky keys only towards it.
    #[test]
    fn sticky_owners_move_one_way() {
        for w in (0..10_000u32).step_by(500) {
            let before = Split::new(&[10_000 - w, w]);
            let after = Split::new(&[10_000 - (w + 500), w + 500]);
            let mut moved = 0;
            for bucket in 0..10_000u16 {
                match (before.owner(bucket), after.owner(bucket)) {
                    (Some(1), owner) => assert_eq!(owner, Some(1), "bucket {bucket} at {w}"),
                    (Some(0), Some(1)) => moved += 1,
                    _ => {}
                }
            }
            assert_eq!(moved, 500, "at {w}");
        }
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
