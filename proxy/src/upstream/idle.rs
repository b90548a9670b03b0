//! The idle connections of one address: first in, first out (a returned connection has time to
//! become ready again before it is taken), at most `max` of them.

use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;

use crate::stats::PoolMetrics;

/// Why unbounded underneath with a count on top, not a fixed ring: a ring of the default 1,024
/// slots would be allocated and touched for every address up front, used or not; this grows
/// with the connections actually idle (a block per 31 of them) and gives the memory back.
pub(super) struct IdleQueue<T> {
    queue: SegQueue<Idle<T>>,
    max: usize,
}

struct Idle<T> {
    conn: T,
    since: Instant,
}

impl<T> IdleQueue<T> {
    pub fn new(max: usize) -> Self {
        IdleQueue {
            queue: SegQueue::new(),
            max,
        }
    }

    /// Keeps `conn` unless `max` are idle already; then it is dropped (closed) and counted.
    /// Two returns racing may both see room and keep one more than `max`: harmless.
    pub fn give_back(&self, conn: T, metrics: &PoolMetrics) {
        if self.queue.len() < self.max {
            self.queue.push(Idle {
                conn,
                since: Instant::now(),
            });
        } else {
            metrics.idle_full.inc();
        }
    }

    /// The oldest idle connection that `usable` accepts and is not past `idle_timeout`; the
    /// ones before it are closed.
    pub fn take(
        &self,
        idle_timeout: Duration,
        mut usable: impl FnMut(&mut T) -> bool,
    ) -> Option<T> {
        while let Some(mut idle) = self.queue.pop() {
            if idle.since.elapsed() <= idle_timeout && usable(&mut idle.conn) {
                return Some(idle.conn);
            }
        }
        None
    }

    /// Closes the connections past `idle_timeout` or that `stale` rejects; returns how many.
    pub fn evict(&self, idle_timeout: Duration, mut stale: impl FnMut(&mut T) -> bool) -> usize {
        let mut evicted = 0;
        for _ in 0..self.queue.len() {
            let Some(mut idle) = self.queue.pop() else {
                break;
            };
            if idle.since.elapsed() > idle_timeout || stale(&mut idle.conn) {
                evicted += 1;
            } else {
                self.queue.push(idle);
            }
        }
        evicted
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }
}
