//! What one address's pools on every worker share (`crate::worker`: a pool per worker, so a
//! stream's wake-ups stay on the worker's thread): the counts the caps are checked against, so
//! that `max_pending` and `max_connections` are the process's, and what was learnt of the
//! server. Each pool keeps its own connections and its own queue.
//!
//! The one exception to the caps, as in Envoy: a worker whose pool has no connection may open
//! one past `max_connections`, or its requests could only fail. So the process holds at most
//! `max_connections + workers - 1` connections to an address.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use super::learned_cap::LearnedCap;

pub struct Shared {
    max_connections: u32,
    max_pending: u32,
    /// Connections in the pools (not yet leaving) and being opened, over every worker.
    connections: AtomicU32,
    /// Requests waiting for a stream, over every worker.
    waiting: AtomicU32,
    /// What the ends of connections taught, over every worker's.
    learned: Mutex<LearnedCap>,
    /// `learned`'s cap, read by every request without the lock (0: none learnt).
    cap: AtomicU32,
}

impl Shared {
    pub fn new(max_connections: u32, max_pending: u32) -> Self {
        Shared {
            max_connections,
            max_pending,
            connections: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            learned: Mutex::new(LearnedCap::default()),
            cap: AtomicU32::new(0),
        }
    }

    /// A place in the queue for one more request, if fewer than `max_pending` wait; give it
    /// back with `stop_waiting`.
    pub fn start_waiting(&self) -> bool {
        below(&self.waiting, self.max_pending)
    }

    pub fn stop_waiting(&self) {
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    /// The right to open one more connection: below `max_connections`, or `first` (the
    /// asking pool has none). Give it back with `closed` when the connection fails to open or
    /// leaves its pool.
    pub fn open(&self, first: bool) -> bool {
        if first {
            self.connections.fetch_add(1, Ordering::SeqCst);
            return true;
        }
        below(&self.connections, self.max_connections)
    }

    pub fn closed(&self) {
        self.connections.fetch_sub(1, Ordering::SeqCst);
    }

    /// A connection the server ended with GOAWAY after `processed` streams, refusing later
    /// ones (`LearnedCap::ended_at`). Returns the cap when this learnt a new one.
    pub fn ended_at(&self, processed: u32) -> Option<u32> {
        let mut learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
        let new = learned.ended_at(processed);
        self.cap
            .store(learned.cap().unwrap_or(0), Ordering::Relaxed);
        new
    }

    /// Streams a connection carries before it is retired, by what was learnt.
    pub fn learned_cap(&self) -> Option<u32> {
        Some(self.cap.load(Ordering::Relaxed)).filter(|&cap| cap > 0)
    }
}

/// Adds one to `count` if it is below `max`.
fn below(count: &AtomicU32, max: u32) -> bool {
    count
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_is_the_address_s_over_every_worker() {
        let shared = Shared::new(4, 2);
        assert!(shared.start_waiting());
        assert!(shared.start_waiting());
        assert!(!shared.start_waiting(), "two wait, on whichever workers");
        shared.stop_waiting();
        assert!(shared.start_waiting(), "one left: room for one");
    }

    #[test]
    fn past_the_cap_only_a_pool_without_a_connection_opens_one() {
        let shared = Shared::new(1, 0);
        assert!(shared.open(false));
        assert!(!shared.open(false), "one open: the cap");
        assert!(shared.open(true), "another worker's first");
        assert!(!shared.open(false));
        shared.closed();
        shared.closed();
        assert!(shared.open(false), "both gone: room again");
    }

    #[test]
    fn a_cap_learnt_on_one_worker_s_connections_holds_for_all() {
        let shared = Shared::new(1, 0);
        assert_eq!(shared.learned_cap(), None);
        assert_eq!(shared.ended_at(1000), None);
        assert_eq!(shared.ended_at(1000), Some(1000));
        assert_eq!(shared.learned_cap(), Some(1000));
    }
}
