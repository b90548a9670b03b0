//! The latency buckets of live windows: 814 log-scale buckets from 10 µs to 100 s, each 2 %
//! wider than the last, so any quantile read back is within 1 % of the exact value.

use std::sync::OnceLock;
use std::time::Duration;

/// Lower edge of the first latency bucket; faster values land in bucket 0.
const MIN_NANOS: f64 = 10_000.0; // 10 µs
/// Each bucket's upper edge is `RATIO` times its lower edge, so a bucket's geometric midpoint is
/// within sqrt(1.02) - 1 ≈ 0.995 % of any value in it.
const RATIO: f64 = 1.02;
/// 10 µs · 1.02^814 ≈ 100.1 s; slower values land in the last bucket.
pub const LATENCY_BUCKETS: usize = 814;

/// Octaves of nanoseconds the index table covers: from 2^13 (8.2 µs, below the first edge) to
/// 2^37 (137 s, above the last).
const FIRST_OCTAVE: u32 = 13;
const OCTAVES: u32 = 24;
/// Each octave is cut into 64 equal steps. A step spans at most 1/64 (1.6 %) of its lower end,
/// less than a bucket's 2 %, so it holds at most one bucket edge.
const STEP_BITS: u32 = 6;
const STEPS: usize = 1 << STEP_BITS;

struct Layout {
    /// Each bucket's lower edge in whole nanoseconds.
    edges: [u64; LATENCY_BUCKETS],
    /// The bucket of each step's lower end, octave-major.
    step_bucket: [u16; OCTAVES as usize * STEPS],
}

/// Computed once. Indexing a sample is then a leading-zero count, one table read and one edge
/// comparison: no logarithm, no search.
fn layout() -> &'static Layout {
    static LAYOUT: OnceLock<Layout> = OnceLock::new();
    LAYOUT.get_or_init(|| {
        let edges = std::array::from_fn(|i| (MIN_NANOS * RATIO.powi(i as i32)).ceil() as u64);
        let step_bucket = std::array::from_fn(|k| {
            let octave = FIRST_OCTAVE + (k / STEPS) as u32;
            let low = ((STEPS + k % STEPS) as u64) << (octave - STEP_BITS);
            search(&edges, low) as u16
        });
        Layout { edges, step_bucket }
    })
}

/// The bucket whose edges hold `nanos`, by binary search; what the table is built from.
fn search(edges: &[u64; LATENCY_BUCKETS], nanos: u64) -> usize {
    edges
        .partition_point(|&edge| edge <= nanos)
        .saturating_sub(1)
}

/// The latency bucket of a duration, clamped to the edge buckets.
pub(super) fn bucket_index(latency: Duration) -> usize {
    let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
    let octave = 63u32.saturating_sub(nanos.leading_zeros());
    if octave < FIRST_OCTAVE {
        return 0;
    }
    if octave >= FIRST_OCTAVE + OCTAVES {
        return LATENCY_BUCKETS - 1;
    }
    let layout = layout();
    let step = (nanos >> (octave - STEP_BITS)) as usize & (STEPS - 1);
    let at = (octave - FIRST_OCTAVE) as usize * STEPS + step;
    let bucket = usize::from(layout.step_bucket[at]);
    // The one edge the step may hold.
    match layout.edges.get(bucket + 1) {
        Some(&next) if nanos >= next => bucket + 1,
        _ => bucket,
    }
}

/// A bucket's upper edge: every value in it is below this.
fn bucket_upper_edge(index: usize) -> Duration {
    let nanos = MIN_NANOS * RATIO.powi(index as i32 + 1);
    Duration::from_nanos(nanos.ceil() as u64)
}

/// A latency bar for comparing two backends: requests in buckets above it are "slower".
/// Both sides are judged against the same bucket, so the comparison is exact between them,
/// whatever the bucket's width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyThreshold(pub(super) usize);

impl LatencyThreshold {
    /// The upper edge of the bucket: requests counted as slower took at least this long.
    pub fn as_duration(self) -> Duration {
        bucket_upper_edge(self.0)
    }
}

/// A bucket's representative value: the geometric midpoint of its edges.
pub(super) fn bucket_value(index: usize) -> Duration {
    let nanos = MIN_NANOS * RATIO.powf(index as f64 + 0.5);
    Duration::from_nanos(nanos.round() as u64)
}

/// Latency counts over the fixed log-scale buckets (10 µs .. 100 s, ratio 1.02).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencyDistribution {
    /// Indexed by bucket; live windows merge their slots straight into it.
    pub(super) counts: Vec<u64>,
}

impl Default for LatencyDistribution {
    fn default() -> Self {
        LatencyDistribution {
            counts: vec![0; LATENCY_BUCKETS],
        }
    }
}

impl LatencyDistribution {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&mut self, latency: Duration) {
        self.counts[bucket_index(latency)] += 1;
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn merge(&mut self, other: &LatencyDistribution) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
    }

    /// The bucket of the nearest-rank quantile `q`, as a bar to count slower requests against;
    /// `None` when empty or `q` is out of range.
    pub fn threshold(&self, q: f64) -> Option<LatencyThreshold> {
        self.quantile_index(q).map(LatencyThreshold)
    }

    /// Requests slower than the threshold (in buckets above its bucket).
    pub fn slower_than(&self, threshold: LatencyThreshold) -> u64 {
        self.counts.iter().skip(threshold.0 + 1).sum()
    }

    /// The nearest-rank quantile (`q` in 0..=1), as its bucket's representative value: within
    /// 1 % of the exact value. `None` when empty or `q` is out of range.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        self.quantile_index(q).map(bucket_value)
    }

    fn quantile_index(&self, q: f64) -> Option<usize> {
        if !(0.0..=1.0).contains(&q) {
            return None;
        }
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(index);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_layout_covers_10us_to_100s() {
        // Every value lands in the bucket the logarithm names (away from float ties at edges).
        for micros in [
            11, 37, 420, 999, 1_000, 5_321, 77_777, 1_000_000, 42_000_000,
        ] {
            let nanos = micros as f64 * 1_000.0;
            let by_log = ((nanos / MIN_NANOS).ln() / RATIO.ln()) as usize;
            assert_eq!(
                bucket_index(Duration::from_micros(micros)),
                by_log,
                "{micros} µs"
            );
        }
        assert_eq!(bucket_index(Duration::from_nanos(1)), 0);
        assert_eq!(bucket_index(Duration::from_micros(10)), 0);
        // 100 s still lands in a bucket whose value is within 1 %; only slower values clamp.
        let top = bucket_value(bucket_index(Duration::from_secs(100))).as_secs_f64();
        assert!((top - 100.0).abs() / 100.0 <= 0.01, "{top}");
        assert!(bucket_index(Duration::from_secs(97)) < LATENCY_BUCKETS - 1);
        assert_eq!(bucket_index(Duration::from_secs(101)), LATENCY_BUCKETS - 1);
        assert_eq!(bucket_index(Duration::MAX), LATENCY_BUCKETS - 1);
    }

    #[test]
    fn table_index_equals_the_search_at_every_edge() {
        let edges = &layout().edges;
        let check = |nanos: u64| {
            assert_eq!(
                bucket_index(Duration::from_nanos(nanos)),
                search(edges, nanos),
                "{nanos} ns"
            );
        };
        for &edge in edges {
            for nanos in [edge - 1, edge, edge + 1] {
                check(nanos);
            }
        }
        // And between them: a deterministic spread over 1 ns .. 2^40 ns.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            check(state >> (24 + state % 40));
        }
        for octave in 0..64 {
            check(1 << octave);
            check((1 << octave) - 1);
        }
    }

    #[test]
    fn threshold_counts_the_slower_buckets() {
        let mut d = LatencyDistribution::new();
        for ms in 1..=100 {
            d.record(Duration::from_millis(ms));
        }
        let Some(p90) = d.threshold(0.9) else {
            panic!("no threshold");
        };
        // 90 ms is in the p90 bucket; 91..=100 ms are above it.
        assert_eq!(d.slower_than(p90), 10);
        let edge = p90.as_duration();
        assert!(
            edge > Duration::from_millis(90) && edge < Duration::from_millis(92),
            "{edge:?}"
        );
        assert_eq!(LatencyDistribution::new().threshold(0.9), None);
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = LatencyDistribution::new();
        let mut b = LatencyDistribution::new();
        a.record(Duration::from_millis(1));
        b.record(Duration::from_millis(100));
        b.record(Duration::from_millis(100));
        a.merge(&b);
        assert_eq!(a.count(), 3);
        let p99 = a.quantile(0.99).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        assert!((p99 - 0.1).abs() / 0.1 < 0.01, "{p99}");
    }
}
