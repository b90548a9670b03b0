//! The idle connections of one address, at most `max` of them: last in, first out. The
//! connection handed back most recently is taken first — its socket and buffers still warm —
//! and so a burst's extra connections sink to the bottom, sit unused, and are closed once past
//! the pool's idle timeout. (First in, first out would cycle through every connection a burst
//! ever opened and keep them all open for as long as any traffic flows.) Taking the newest is
//! safe because a connection is checked when taken (`usable`, a read that must find nothing).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::stats::PoolMetrics;

pub(super) struct IdleStack<T> {
    /// Oldest first: the order they were handed back in.
    stack: Mutex<Vec<Idle<T>>>,
    max: usize,
}

struct Idle<T> {
    conn: T,
    since: Instant,
}

impl<T> IdleStack<T> {
    pub fn new(max: usize) -> Self {
        IdleStack {
            stack: Mutex::new(Vec::new()),
            max,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle<T>>> {
        // A panic elsewhere while the lock was held leaves a list that is still valid.
        self.stack.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `conn`, idle since `since`, unless `max` are idle already; then it is dropped
    /// (closed) and counted. (`since` is a time the caller has taken anyway: a clock read
    /// costs as much as the rest of this.)
    pub fn give_back(&self, conn: T, since: Instant, metrics: &PoolMetrics) {
        let mut stack = self.lock();
        if stack.len() < self.max {
            stack.push(Idle { conn, since });
            return;
        }
        drop(stack);
        metrics.idle_full.inc();
    }

    /// The newest idle connection that `usable` accepts; those above it that it rejects are
    /// closed. When the newest is past `idle_timeout` at `now` every one is, and all are
    /// closed.
    pub fn take(
        &self,
        now: Instant,
        idle_timeout: Duration,
        mut usable: impl FnMut(&mut T) -> bool,
    ) -> Option<T> {
        let mut stack = self.lock();
        while let Some(mut idle) = stack.pop() {
            // Saturating: `now` may be a little older than a connection handed back since.
            if now.saturating_duration_since(idle.since) > idle_timeout {
                // Closed once the lock is let go: closing is a system call each.
                let expired = std::mem::take(&mut *stack);
                drop(stack);
                drop(expired);
                return None;
            }
            if usable(&mut idle.conn) {
                return Some(idle.conn);
            }
        }
        None
    }

    /// Closes the connections past `idle_timeout` or that `stale` rejects; returns how many.
    pub fn evict(&self, idle_timeout: Duration, mut stale: impl FnMut(&mut T) -> bool) -> usize {
        let mut stack = self.lock();
        let before = stack.len();
        let mut evicted = Vec::new();
        let mut kept = Vec::with_capacity(before);
        for mut idle in stack.drain(..) {
            if idle.since.elapsed() > idle_timeout || stale(&mut idle.conn) {
                evicted.push(idle);
            } else {
                kept.push(idle);
            }
        }
        *stack = kept;
        drop(stack);
        evicted.len()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> PoolMetrics {
        crate::stats::Metrics::new().upstream_pool("test")
    }

    #[test]
    fn the_newest_is_taken_first_and_the_cap_holds() {
        let pool = IdleStack::new(2);
        let m = metrics();
        pool.give_back(1, Instant::now(), &m);
        pool.give_back(2, Instant::now(), &m);
        pool.give_back(3, Instant::now(), &m);
        assert_eq!(pool.len(), 2, "the third was over the cap");
        assert_eq!(
            pool.take(Instant::now(), Duration::from_secs(60), |_| true),
            Some(2)
        );
        assert_eq!(
            pool.take(Instant::now(), Duration::from_secs(60), |_| true),
            Some(1)
        );
        assert_eq!(
            pool.take(Instant::now(), Duration::from_secs(60), |_| true),
            None
        );
    }

    #[test]
    fn unusable_ones_are_passed_and_closed() {
        let pool = IdleStack::new(10);
        let m = metrics();
        for n in 1..=4 {
            pool.give_back(n, Instant::now(), &m);
        }
        assert_eq!(
            pool.take(Instant::now(), Duration::from_secs(60), |n| *n < 3),
            Some(2)
        );
        assert_eq!(pool.len(), 1, "3 and 4 were closed, 1 stays");
    }

    #[test]
    fn past_the_idle_timeout_all_go() {
        let pool = IdleStack::new(10);
        let m = metrics();
        pool.give_back(1, Instant::now(), &m);
        pool.give_back(2, Instant::now(), &m);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(pool.evict(Duration::from_secs(60), |n| *n == 1), 1);
        assert_eq!(pool.len(), 1);
        assert_eq!(
            pool.take(Instant::now(), Duration::from_millis(10), |_| true),
            None
        );
        assert_eq!(
            pool.len(),
            0,
            "taking found them expired and closed them all"
        );
    }
}
