//! Which worker runs the caller, and values kept one per worker.
//!
//! weir serves on one single-threaded runtime per worker thread: a connection's task never
//! leaves the thread that accepted it (as an nginx worker process keeps its connections). A
//! socket is registered with the reactor of the runtime that opened it, so an upstream
//! connection opened on one worker and reused on another would have its readiness delivered by
//! the first worker's thread, a cross-thread wake-up each way. What holds upstream connections
//! (the idle HTTP/1 connections, the HTTP/2 pool) therefore keeps one part per worker
//! (`PerWorker`), and each worker takes from and gives back to its own.
//!
//! A thread that never called `enter` (tests, tools, tokio's blocking pool) counts as worker 0.

use std::cell::Cell;

thread_local! {
    static INDEX: Cell<usize> = const { Cell::new(0) };
}

/// Marks the calling thread as worker `index`; called once, when the worker's thread starts.
pub fn enter(index: usize) {
    INDEX.set(index);
}

/// The calling thread's worker index (0 unless it `enter`ed another).
pub fn index() -> usize {
    INDEX.get()
}

/// Worker `index`'s share of a process-wide cap `total` over `workers` workers: even, with the
/// remainder to the first ones, so that the shares add up to `total`. A zero cap stays zero
/// (`pool_max_idle: 0` keeps no idle connection on any worker).
pub fn share(total: usize, workers: usize, index: usize) -> usize {
    let workers = workers.max(1);
    total / workers + usize::from(index < total % workers)
}

/// One `T` per worker; each worker uses its own (`here`).
pub struct PerWorker<T> {
    parts: Box<[T]>,
}

impl<T> PerWorker<T> {
    /// `count` parts (at least one), the i-th made by `make(i)`.
    pub fn new(count: usize, make: impl FnMut(usize) -> T) -> Self {
        PerWorker {
            parts: (0..count.max(1)).map(make).collect(),
        }
    }

    /// The calling worker's part, and its index (to find the same part again from another
    /// thread). A thread whose index is past the parts (a plane made for fewer workers than
    /// run, as in tests) shares them round.
    pub fn here(&self) -> (usize, &T) {
        let i = index() % self.parts.len();
        (i, &self.parts[i])
    }

    /// Part `i`, as `here` gave its index.
    pub fn part(&self, i: usize) -> &T {
        &self.parts[i % self.parts.len()]
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.parts.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_worker_thread_finds_its_own_part() {
        let parts = PerWorker::new(2, |i| i * 10);
        assert_eq!(
            parts.here(),
            (0, &0),
            "a thread that never entered is worker 0"
        );
        let seen = std::thread::scope(|s| {
            s.spawn(|| {
                enter(1);
                *parts.here().1
            })
            .join()
        });
        assert_eq!(seen.ok(), Some(10));
        assert_eq!(parts.iter().count(), 2);
    }

    #[test]
    fn a_cap_is_shared_out_whole() {
        let shares = |total, workers| {
            (0..workers)
                .map(|i| share(total, workers, i))
                .collect::<Vec<_>>()
        };
        assert_eq!(shares(16, 2), [8, 8]);
        assert_eq!(shares(10, 3), [4, 3, 3]);
        assert_eq!(shares(16, 1), [16]);
        assert_eq!(shares(1, 3), [1, 0, 0]);
        assert_eq!(shares(0, 2), [0, 0], "none kept stays none kept");
        assert_eq!(share(5, 0, 0), 5, "no workers counts as one");
    }

    #[test]
    fn more_workers_than_parts_share_them_round() {
        let parts = PerWorker::new(0, |i| i);
        assert_eq!(parts.iter().count(), 1, "never fewer than one part");
        let seen = std::thread::scope(|s| {
            s.spawn(|| {
                enter(3);
                parts.here()
            })
            .join()
            .map(|(i, v)| (i, *v))
        });
        assert_eq!(seen.ok(), Some((0, 0)));
        assert_eq!(*parts.part(5), 0);
    }
}
