//! Live windows: the last 60 s of outcomes per route×backend, in memory, for the analysis loop.
//!
//! The data path records here on every request, so recording is atomics only: no lock, no
//! allocation. Reading (a snapshot) merges slots into plain integers and is the control path.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::latency::{bucket_index, LatencyDistribution, LatencyThreshold, LATENCY_BUCKETS};
use super::outcome::{Outcome, UpstreamError};
use super::pairs::PairLog;

/// Seconds kept per window, at one slot per second.
pub const WINDOW_SECS: u64 = 60;
const SLOTS: usize = WINDOW_SECS as usize;

/// Seconds since a process-wide origin, shared by all windows so that stable and canary slots
/// cover the same wall-clock seconds. Readers that go second by second count in these.
pub fn now_second() -> u64 {
    second_of(Instant::now())
}

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn second_of(at: Instant) -> u64 {
    // A thread's samples come in time order, so the second it found last mostly holds this one
    // too: two comparisons instead of a subtraction per request.
    thread_local! {
        static LAST: Cell<Option<(Instant, Instant, u64)>> = const { Cell::new(None) };
    }
    LAST.with(|last| {
        if let Some((from, until, second)) = last.get() {
            if from <= at && at < until {
                return second;
            }
        }
        let origin = origin();
        let second = at.saturating_duration_since(origin).as_secs();
        let bound = |s: u64| origin.checked_add(Duration::from_secs(s));
        if let (Some(from), Some(until)) = (bound(second), bound(second.saturating_add(1))) {
            last.set(Some((from, until, second)));
        }
        second
    })
}

/// Whole seconds a window spans: rounded up, at most `WINDOW_SECS`.
fn window_secs(window: Duration) -> u64 {
    let secs = window.as_secs() + u64::from(window.subsec_nanos() > 0);
    secs.min(WINDOW_SECS)
}

/// One second's counters. The latency counts live in `LiveWindow::latency`; they also count the
/// second's requests, so a request costs one counter less.
#[derive(Default)]
struct Slot {
    /// The second this slot currently holds.
    second: AtomicU64,
    failures: AtomicU64,
    connect_failures: AtomicU64,
}

/// A rolling 60 s window of one route×backend at 1 s resolution.
pub struct LiveWindow {
    slots: Box<[Slot]>,
    /// `SLOTS × LATENCY_BUCKETS` counts, slot-major; one allocation for the whole window.
    latency: Box<[AtomicU32]>,
}

impl Default for LiveWindow {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for LiveWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveWindow").finish_non_exhaustive()
    }
}

impl LiveWindow {
    pub fn new() -> Self {
        LiveWindow {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            latency: (0..SLOTS * LATENCY_BUCKETS)
                .map(|_| AtomicU32::new(0))
                .collect(),
        }
    }

    /// Records an outcome in the current second.
    pub fn record(&self, outcome: &Outcome) {
        let second = outcome.ended.map_or_else(now_second, second_of);
        self.record_at(second, outcome);
    }

    /// Records an outcome in the given second (tests drive time through this).
    pub fn record_at(&self, second: u64, outcome: &Outcome) {
        let index = (second % WINDOW_SECS) as usize;
        let slot = &self.slots[index];
        let held = slot.second.load(Relaxed);
        if held > second {
            // The slot already moved on to a later second: this sample is too old to keep.
            return;
        }
        if held < second
            && slot
                .second
                .compare_exchange(held, second, Relaxed, Relaxed)
                .is_ok()
        {
            // We claimed a stale slot, so we clear it. Benign race: another recorder of this
            // second may increment before we finish zeroing and lose that sample; that can
            // only happen in the first microseconds of a second, and a losing claimant simply
            // records into the slot as it finds it.
            self.clear(index);
        }

        // The request first (its latency), then whether it failed; a snapshot reads in the
        // opposite order, so it does not see more failures than requests.
        self.latency[index * LATENCY_BUCKETS + bucket_index(outcome.latency)].fetch_add(1, Relaxed);
        if outcome.is_failure() {
            slot.failures.fetch_add(1, Relaxed);
        }
        if outcome.error == Some(UpstreamError::Connect) {
            slot.connect_failures.fetch_add(1, Relaxed);
        }
    }

    fn clear(&self, index: usize) {
        let slot = &self.slots[index];
        slot.failures.store(0, Relaxed);
        slot.connect_failures.store(0, Relaxed);
        for count in self.slot_latency(index) {
            count.store(0, Relaxed);
        }
    }

    fn slot_latency(&self, index: usize) -> &[AtomicU32] {
        &self.latency[index * LATENCY_BUCKETS..(index + 1) * LATENCY_BUCKETS]
    }

    /// One second's counts so far (it may still be filling); zeros once its slot has moved on
    /// to a later second. A comparison reads second by second through this, so its evidence
    /// is not bounded by the window's 60 s.
    pub fn second_counts(&self, second: u64, slower: Option<LatencyThreshold>) -> SecondCounts {
        let index = (second % WINDOW_SECS) as usize;
        let slot = &self.slots[index];
        if slot.second.load(Relaxed) != second {
            return SecondCounts::default();
        }
        // Failures first, then requests (the opposite of recording), so failures <= requests.
        let failures = slot.failures.load(Relaxed);
        let latency = self.slot_latency(index);
        let requests = latency.iter().map(|c| u64::from(c.load(Relaxed))).sum();
        let slower = slower.map_or(0, |t| {
            latency
                .iter()
                .skip(t.0 + 1)
                .map(|c| u64::from(c.load(Relaxed)))
                .sum()
        });
        let counts = SecondCounts {
            requests,
            failures: failures.min(requests),
            slower,
        };
        // Reclaimed for a later second while we read: what we read may be partly that one's.
        if slot.second.load(Relaxed) != second {
            return SecondCounts::default();
        }
        counts
    }

    /// Adds one second's latency counts to `into`; nothing once its slot has moved on.
    pub fn merge_second_latency(&self, second: u64, into: &mut LatencyDistribution) {
        let index = (second % WINDOW_SECS) as usize;
        if self.slots[index].second.load(Relaxed) != second {
            return;
        }
        for (total, count) in into.counts.iter_mut().zip(self.slot_latency(index)) {
            *total += u64::from(count.load(Relaxed));
        }
    }

    /// Merges the seconds within `(now - window, now]`, the current (partial) second included.
    pub fn snapshot(&self, window: Duration) -> WindowSnapshot {
        self.snapshot_at(now_second(), window_secs(window))
    }

    /// Like `snapshot`, at an explicit second and a window in whole seconds (capped at 60).
    pub fn snapshot_at(&self, now_second: u64, window_secs: u64) -> WindowSnapshot {
        let window_secs = window_secs.min(WINDOW_SECS);
        let mut snapshot = WindowSnapshot::default();
        for (index, slot) in self.slots.iter().enumerate() {
            let second = slot.second.load(Relaxed);
            // Slots never used hold second 0 with all counts zero, so including them is harmless.
            if second > now_second || second.saturating_add(window_secs) <= now_second {
                continue;
            }
            snapshot.failures += slot.failures.load(Relaxed);
            snapshot.connect_failures += slot.connect_failures.load(Relaxed);
            for (total, count) in snapshot
                .latency
                .counts
                .iter_mut()
                .zip(self.slot_latency(index))
            {
                *total += u64::from(count.load(Relaxed));
            }
        }
        snapshot.requests = snapshot.latency.count();
        snapshot
    }
}

/// One second of one backend: requests, failures, and requests slower than a latency bar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SecondCounts {
    pub requests: u64,
    pub failures: u64,
    pub slower: u64,
}

/// The merged counts of a window: plain numbers for the analysis loop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowSnapshot {
    pub requests: u64,
    pub failures: u64,
    pub connect_failures: u64,
    pub latency: LatencyDistribution,
}

impl WindowSnapshot {
    /// Share of requests that did not fail; `None` without traffic.
    pub fn success_rate(&self) -> Option<f64> {
        self.error_ratio().map(|e| 1.0 - e)
    }

    /// Share of requests that failed; `None` without traffic.
    pub fn error_ratio(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.failures as f64 / self.requests as f64)
    }

    pub fn quantile(&self, q: f64) -> Option<Duration> {
        self.latency.quantile(q)
    }

    /// How fast the error budget burns: error ratio / (1 - slo), slo as a fraction (0.999).
    /// `None` without traffic or when the SLO leaves no budget (slo >= 1).
    pub fn burn_rate(&self, slo: f64) -> Option<f64> {
        let budget = 1.0 - slo;
        if budget.is_nan() || budget <= 0.0 {
            return None;
        }
        self.error_ratio().map(|e| e / budget)
    }
}

/// All live windows, keyed by route name and role. Shared as `Arc<LiveStats>`.
#[derive(Debug, Default)]
pub struct LiveStats {
    // Only touched when a table is compiled or the analysis loop reads, never per request.
    windows: Mutex<HashMap<(String, String), Arc<LiveWindow>>>,
    /// Each mirroring route's pairs (`super::pairs`), kept across table swaps as the windows are.
    pairs: Mutex<HashMap<String, Arc<PairLog>>>,
}

impl LiveStats {
    pub fn new() -> Self {
        Self::default()
    }

    fn windows(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Arc<LiveWindow>>> {
        // The map holds only `Arc`s, so it is consistent even if a holder panicked.
        self.windows.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The window of a route×backend, created on first use.
    pub fn window(&self, route: &str, backend: impl AsRef<str>) -> Arc<LiveWindow> {
        let key = (route.to_owned(), backend.as_ref().to_owned());
        Arc::clone(
            self.windows()
                .entry(key)
                .or_insert_with(|| Arc::new(LiveWindow::new())),
        )
    }

    /// The pair log of a route, created on first use.
    pub fn pairs(&self, route: &str) -> Arc<PairLog> {
        let mut pairs = self.pairs.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(pairs.entry(route.to_owned()).or_default())
    }

    /// The pair log of a route if a table ever created it.
    pub fn find_pairs(&self, route: &str) -> Option<Arc<PairLog>> {
        let pairs = self.pairs.lock().unwrap_or_else(PoisonError::into_inner);
        pairs.get(route).cloned()
    }

    /// The window of a route×backend if a table ever created it.
    pub fn find(&self, route: &str, backend: impl AsRef<str>) -> Option<Arc<LiveWindow>> {
        let key = (route.to_owned(), backend.as_ref().to_owned());
        self.windows().get(&key).cloned()
    }

    /// A snapshot of a route×backend's window; `None` if it was never created.
    pub fn snapshot(
        &self,
        route: &str,
        backend: impl AsRef<str>,
        window: Duration,
    ) -> Option<WindowSnapshot> {
        Some(self.find(route, backend)?.snapshot(window))
    }

    /// Every route×backend that has a window, sorted.
    pub fn routes(&self) -> Vec<(String, String)> {
        let mut routes: Vec<_> = self.windows().keys().cloned().collect();
        routes.sort();
        routes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Role;

    fn ok(ms: u64) -> Outcome {
        Outcome::response(200, Duration::from_millis(ms))
    }

    #[test]
    fn quantiles_within_one_percent() {
        // Deterministic xorshift; latencies log-uniform over 50 µs .. 20 s.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut exact = Vec::new();
        let window = LiveWindow::new();
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
            let nanos = (50_000.0 * (400_000.0f64).powf(unit)) as u64;
            let latency = Duration::from_nanos(nanos);
            exact.push(latency);
            window.record_at(3, &Outcome::response(200, latency));
        }
        exact.sort();
        let snapshot = window.snapshot_at(3, 60);
        assert_eq!(snapshot.latency.count(), 100_000);
        for q in [0.5, 0.9, 0.99, 0.999] {
            let want = exact[(q * exact.len() as f64).ceil() as usize - 1].as_secs_f64();
            let got = snapshot.quantile(q).map(|d| d.as_secs_f64()).unwrap_or(0.0);
            let error = (got - want).abs() / want;
            assert!(
                error <= 0.01,
                "q={q}: got {got}, want {want}, error {error}"
            );
        }
        assert_eq!(snapshot.quantile(1.5), None);
        assert_eq!(WindowSnapshot::default().quantile(0.5), None);
    }

    #[test]
    fn four_hundreds_are_not_failures() {
        let window = LiveWindow::new();
        window.record_at(1, &Outcome::response(404, Duration::from_millis(3)));
        window.record_at(1, &Outcome::response(429, Duration::from_millis(3)));
        window.record_at(1, &Outcome::response(503, Duration::from_millis(3)));
        window.record_at(1, &Outcome::error(UpstreamError::Connect, Duration::ZERO));
        let mut grpc = ok(1);
        grpc.grpc_fault = true;
        window.record_at(1, &grpc);
        let s = window.snapshot_at(1, 60);
        assert_eq!((s.requests, s.failures, s.connect_failures), (5, 3, 1));
        assert_eq!(s.error_ratio(), Some(0.6));
        let burn = s.burn_rate(0.999).unwrap_or(0.0);
        assert!((burn - 600.0).abs() < 1e-6, "{burn}");
        assert!((s.success_rate().unwrap_or(0.0) - 0.4).abs() < 1e-12);
    }

    #[test]
    fn empty_window_has_no_rates() {
        let s = LiveWindow::new().snapshot_at(100, 60);
        assert_eq!(s.success_rate(), None);
        assert_eq!(s.error_ratio(), None);
        assert_eq!(s.burn_rate(0.999), None);
    }

    #[test]
    fn slots_expire() {
        let window = LiveWindow::new();
        window.record_at(10, &ok(5));
        assert_eq!(window.snapshot_at(75, 60).requests, 0);
        assert_eq!(window.snapshot_at(69, 60).requests, 1);
        assert_eq!(window.snapshot_at(70, 60).requests, 0);
        assert_eq!(window.snapshot_at(10, 30).requests, 1);
        assert_eq!(window.snapshot_at(40, 30).requests, 0);
        // A snapshot from before the sample's second does not see it.
        assert_eq!(window.snapshot_at(9, 30).requests, 0);
    }

    #[test]
    fn reused_slot_is_cleared() {
        let window = LiveWindow::new();
        window.record_at(10, &Outcome::response(500, Duration::from_millis(5)));
        // Second 70 maps to the same slot as second 10.
        window.record_at(70, &ok(5));
        let s = window.snapshot_at(70, 60);
        assert_eq!((s.requests, s.failures, s.latency.count()), (1, 0, 1));
        // A late sample for the old second is dropped, not mixed into the new one.
        window.record_at(10, &ok(5));
        assert_eq!(window.snapshot_at(70, 60).requests, 1);
    }

    #[test]
    fn concurrent_recording_in_one_second_is_exact() {
        let window = Arc::new(LiveWindow::new());
        // Claim the slot first so no recorder races the zeroing.
        window.record_at(5, &ok(1));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let window = Arc::clone(&window);
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        let status = if i % 10 == 0 { 500 } else { 200 };
                        let latency = Duration::from_micros(100 + t * 1000 + i % 500);
                        window.record_at(5, &Outcome::response(status, latency));
                    }
                })
            })
            .collect();
        for thread in threads {
            assert!(thread.join().is_ok());
        }
        let s = window.snapshot_at(5, 60);
        assert_eq!(s.requests, 80_001);
        assert_eq!(s.failures, 8_000);
        assert_eq!(s.latency.count(), 80_001);
    }

    #[test]
    fn live_stats_reuses_windows() {
        let stats = LiveStats::new();
        let a = stats.window("api", Role::Canary);
        let b = stats.window("api", Role::Canary);
        assert!(Arc::ptr_eq(&a, &b));
        stats.window("api", Role::Stable);
        a.record(&ok(2));
        let s = stats.snapshot("api", Role::Canary, Duration::from_secs(60));
        assert_eq!(s.map(|s| s.requests), Some(1));
        assert!(stats
            .snapshot("web", Role::Canary, Duration::from_secs(60))
            .is_none());
        assert_eq!(
            stats.routes(),
            vec![
                ("api".to_owned(), "canary".to_owned()),
                ("api".to_owned(), "stable".to_owned())
            ]
        );
    }

    #[test]
    fn seconds_from_the_cache_equal_computed_ones() {
        let origin = origin();
        let computed = |at: Instant| at.saturating_duration_since(origin).as_secs();
        let ns = Duration::from_nanos;
        let s = Duration::from_secs;
        // Forwards across second boundaries, then backwards, as another thread's older sample.
        let instants = [
            origin,
            origin + s(1) - ns(1),
            origin + s(1),
            origin + s(1) + ns(1),
            origin + s(7) + ns(500_000_000),
            origin + s(7) - ns(1),
            origin + s(3),
            origin + s(2) + ns(999_999_999),
            origin,
        ];
        for at in instants {
            assert_eq!(second_of(at), computed(at), "{:?}", at - origin);
        }
        // Before the origin: second 0, never cached as if it were.
        if let Some(before) = origin.checked_sub(ns(1)) {
            assert_eq!(second_of(before), 0);
            assert_eq!(second_of(origin + s(1)), 1);
        }
    }

    #[test]
    fn one_second_at_a_time() {
        let window = LiveWindow::new();
        for ms in 1..=10 {
            window.record_at(7, &ok(ms));
        }
        window.record_at(7, &Outcome::response(502, Duration::from_millis(50)));
        window.record_at(8, &ok(1));
        let mut bar = LatencyDistribution::new();
        window.merge_second_latency(7, &mut bar);
        assert_eq!(bar.count(), 11);
        let threshold = bar.threshold(0.5);
        let seven = window.second_counts(7, threshold);
        assert_eq!((seven.requests, seven.failures, seven.slower), (11, 1, 5));
        assert_eq!(window.second_counts(8, None).requests, 1);
        // Second 67 reuses second 7's slot: 7 reads as empty from then on.
        window.record_at(67, &ok(1));
        assert_eq!(window.second_counts(7, threshold), SecondCounts::default());
        let mut after = LatencyDistribution::new();
        window.merge_second_latency(7, &mut after);
        assert_eq!(after.count(), 0);
    }

    #[test]
    fn is_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<LiveStats>();
        check::<LiveWindow>();
    }
}
