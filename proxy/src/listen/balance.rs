//! Keeps the workers' shares of client connections even. Every worker accepts from the same
//! listening sockets (`crate::worker`), and whichever gets to a new connection first takes it:
//! when a client opens its connections all at once (a load balancer's pool, a benchmark's 64),
//! one worker could take most of them while another is off its core, and then it is saturated
//! while the other idles, for as long as those connections last. So a worker holding more than
//! its share leaves new connections to the others until the shares are even again (nginx
//! stops accepting in a worker past 7/8 of its connections for the same reason).

use std::sync::Arc;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;

/// The client connections each worker holds.
pub struct WorkerLoads {
    /// One a worker: `weir_worker_client_connections{worker}`.
    open: Box<[Gauge]>,
    /// Woken when any worker's count falls or the least loaded one's rises.
    changed: Notify,
}

/// One connection counted against its worker until dropped.
pub struct Load {
    loads: Arc<WorkerLoads>,
    worker: usize,
}

impl WorkerLoads {
    /// `workers` counted in gauges of their own (none: one worker, uncounted).
    pub fn new(open: Vec<Gauge>) -> Arc<Self> {
        let open = if open.is_empty() {
            vec![Gauge::default()]
        } else {
            open
        };
        Arc::new(WorkerLoads {
            open: open.into_boxed_slice(),
            changed: Notify::new(),
        })
    }

    fn worker(&self) -> usize {
        crate::worker::index() % self.open.len()
    }

    /// Waits until the calling worker may take another connection (`may_accept`).
    pub async fn turn(&self) {
        if self.open.len() == 1 {
            return;
        }
        let me = self.worker();
        loop {
            // Registered before looking: a change after the look wakes it.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.may_accept(me) {
                return;
            }
            changed.await;
        }
    }

    fn may_accept(&self, me: usize) -> bool {
        let counts = self.open.iter().map(Gauge::get);
        let (fewest, total) = counts.fold((i64::MAX, 0), |(f, t), c| (f.min(c), t + c));
        may_accept(self.open[me].get(), fewest, total)
    }

    /// Counts a connection the calling worker accepted.
    pub fn opened(self: &Arc<Self>) -> Load {
        let worker = self.worker();
        self.open[worker].inc();
        // Only the least loaded worker rising can let a waiting one accept again; rare enough
        // (and `notify_waiters` with none waiting is one atomic load) to signal every time.
        self.changed.notify_waiters();
        Load {
            loads: self.clone(),
            worker,
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.loads.open[self.worker].dec();
        self.loads.changed.notify_waiters();
    }
}

/// Whether a worker holding `mine` connections may take another, when the least loaded holds
/// `fewest` and all together `total`. The slack — 1, and a sixty-fourth of the total — lets
/// workers take connections in turn without waiting for each other at every one, while a
/// thousand connections stay within a few percent of even.
fn may_accept(mine: i64, fewest: i64, total: i64) -> bool {
    mine <= fewest + 1 + total / 64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_worker_past_its_share_waits_its_turn() {
        assert!(may_accept(0, 0, 0), "nothing open: anyone takes the first");
        assert!(may_accept(1, 0, 1), "one ahead is within the slack");
        assert!(!may_accept(2, 0, 2), "two ahead of an empty worker waits");
        assert!(may_accept(33, 31, 64), "64 split 33/31 is even enough");
        assert!(!may_accept(34, 30, 64));
        assert!(may_accept(515, 500, 1020), "slack grows with the load");
        assert!(!may_accept(600, 420, 1020));
    }

    #[tokio::test]
    async fn the_busier_worker_accepts_again_once_the_other_caught_up() {
        let loads = WorkerLoads::new(vec![Gauge::default(), Gauge::default()]);
        // This thread is worker 0 (it never entered another); it holds two, worker 1 none.
        let mine: Vec<Load> = (0..2).map(|_| loads.opened()).collect();
        let waiting = tokio::spawn({
            let loads = loads.clone();
            async move { loads.turn().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !waiting.is_finished(),
            "two ahead of worker 1: worker 0 waits"
        );
        let other = loads.clone();
        let theirs = std::thread::spawn(move || {
            crate::worker::enter(1);
            other.opened()
        })
        .join();
        let turn = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        assert!(
            turn.is_ok_and(|t| t.is_ok()),
            "worker 1 took one: worker 0's turn again"
        );
        drop((mine, theirs));
        assert_eq!(loads.open[0].get(), 0);
        assert_eq!(loads.open[1].get(), 0);
    }
}
