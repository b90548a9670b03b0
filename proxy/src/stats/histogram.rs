//! A Prometheus histogram that observes with atomics only.
//!
//! prometheus-client's own `Histogram` takes a lock on every observe; this one is recorded on
//! every request, so it takes two atomic adds: the bucket and the sum.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Upper bounds in seconds; `+Inf` is implied.
pub const BOUNDS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// `BOUNDS` in nanoseconds, so observing compares integers.
const BOUNDS_NANOS: [u64; 15] = [
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
];

const BUCKETS: usize = BOUNDS.len() + 1;

#[derive(Debug, Default)]
struct Inner {
    /// Per-bucket (not cumulative) counts; the last one is `+Inf`.
    buckets: [AtomicU64; BUCKETS],
    /// Sum of observations in whole microseconds, each rounded to the nearest. Integer so that
    /// one add records it (a float sum needs a compare-and-swap loop); microseconds, not
    /// nanoseconds, so that it cannot wrap: 2^64 µs is 584,000 years of summed latency.
    sum_micros: AtomicU64,
}

/// A cloneable handle to a lock-free latency histogram with fixed bounds (`BOUNDS`).
#[derive(Clone, Debug, Default)]
pub struct AtomicHistogram {
    inner: Arc<Inner>,
}

impl AtomicHistogram {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn observe(&self, value: Duration) {
        let nanos = u64::try_from(value.as_nanos()).unwrap_or(u64::MAX);
        // `le` is inclusive: the first bound >= the value.
        let index = BOUNDS_NANOS.partition_point(|&bound| bound < nanos);
        self.inner.buckets[index].fetch_add(1, Relaxed);

        self.inner
            .sum_micros
            .fetch_add(nanos.saturating_add(500) / 1_000, Relaxed);
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.inner.buckets.iter().map(|b| b.load(Relaxed)).sum()
    }

    /// Sum of observations, in seconds.
    pub fn sum(&self) -> f64 {
        self.inner.sum_micros.load(Relaxed) as f64 / 1e6
    }
}

impl TypedMetric for AtomicHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for AtomicHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        // `encode_histogram` takes per-bucket counts and accumulates them itself; an upper
        // bound of `f64::MAX` is written as `le="+Inf"`.
        let mut buckets = [(f64::MAX, 0u64); BUCKETS];
        for ((bucket, bound), count) in buckets
            .iter_mut()
            .zip(BOUNDS.iter().chain(Some(&f64::MAX)))
            .zip(&self.inner.buckets)
        {
            *bucket = (*bound, count.load(Relaxed));
        }
        // Count from the same loads as the buckets, so `+Inf` always equals `_count`.
        let count = buckets.iter().map(|(_, c)| c).sum();
        encoder.encode_histogram::<NoLabelSet>(self.sum(), count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use prometheus_client::registry::Registry;

    #[test]
    fn bounds_match() {
        for (seconds, nanos) in BOUNDS.iter().zip(BOUNDS_NANOS) {
            assert_eq!(
                Duration::from_secs_f64(*seconds).as_nanos(),
                u128::from(nanos)
            );
        }
    }

    #[test]
    fn buckets_are_cumulative_and_inf_equals_count() {
        let histogram = AtomicHistogram::new();
        histogram.observe(Duration::from_micros(500)); // exactly on a bound: le is inclusive
        histogram.observe(Duration::from_millis(7));
        histogram.observe(Duration::from_millis(7));
        histogram.observe(Duration::from_secs(60));
        // Sub-microsecond parts round to the nearest microsecond in the sum.
        histogram.observe(Duration::from_nanos(400));
        histogram.observe(Duration::from_nanos(1_600));
        let mut registry = Registry::default();
        registry.register("latency_seconds", "Latency", histogram.clone());
        let mut text = String::new();
        assert!(encode(&mut text, &registry).is_ok());

        assert!(text.contains("latency_seconds_count 6\n"), "{text}");
        assert!(text.contains("latency_seconds_sum 60.014502\n"), "{text}");
        assert!(
            text.contains("latency_seconds_bucket{le=\"0.0005\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("latency_seconds_bucket{le=\"0.005\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("latency_seconds_bucket{le=\"0.01\"} 5\n"),
            "{text}"
        );
        assert!(
            text.contains("latency_seconds_bucket{le=\"30.0\"} 5\n"),
            "{text}"
        );
        assert!(
            text.contains("latency_seconds_bucket{le=\"+Inf\"} 6\n"),
            "{text}"
        );
        assert_eq!(histogram.count(), 6);
    }

    #[test]
    fn concurrent_observations_are_exact() {
        let histogram = AtomicHistogram::new();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let histogram = histogram.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        histogram.observe(Duration::from_millis(1));
                    }
                })
            })
            .collect();
        for thread in threads {
            assert!(thread.join().is_ok());
        }
        assert_eq!(histogram.count(), 40_000);
        assert!((histogram.sum() - 40.0).abs() < 1e-6, "{}", histogram.sum());
    }
}
