//! The client connections open over all listeners, at most `max`: accepting waits for room
//! (and, with several workers, for the worker's turn: `super::balance`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::balance::{Load, WorkerLoads};

pub struct ConnectionLimit {
    permits: Arc<Semaphore>,
    max: usize,
    /// The most open at once since `take_peak` last read it.
    peak: AtomicUsize,
    /// Connections accepted and not yet closed, for the metrics.
    gauge: Gauge,
    /// Of those, idle ones parked (`listen::park`).
    parked: Gauge,
    /// Of those, each worker's.
    loads: Arc<WorkerLoads>,
}

/// Room for one connection, taken before it is accepted.
pub struct Room {
    _permit: OwnedSemaphorePermit,
}

/// An accepted connection's place: counted open until dropped.
pub struct Admitted {
    _room: Room,
    _load: Load,
    gauge: Gauge,
}

impl ConnectionLimit {
    pub fn new(max: usize) -> Arc<Self> {
        Self::counted(max, Gauge::default(), Gauge::default(), Vec::new())
    }

    /// As `new`, the open connections counted in `gauge`, the parked ones in `parked`, and
    /// each worker's in `per_worker` (one gauge a worker; empty: one worker).
    pub fn counted(max: usize, gauge: Gauge, parked: Gauge, per_worker: Vec<Gauge>) -> Arc<Self> {
        Arc::new(ConnectionLimit {
            permits: Arc::new(Semaphore::new(max)),
            max,
            peak: AtomicUsize::new(0),
            gauge,
            parked,
            loads: WorkerLoads::new(per_worker),
        })
    }

    /// The gauge the parked connections are counted in.
    pub fn parked(&self) -> Gauge {
        self.parked.clone()
    }

    /// Room for one more connection; waits for the calling worker's turn, then while `max` are
    /// open. None once the limit is closed.
    pub async fn room(&self) -> Option<Room> {
        self.loads.turn().await;
        let permit = self.permits.clone().acquire_owned().await.ok()?;
        self.peak.fetch_max(self.open(), Ordering::Relaxed);
        Some(Room { _permit: permit })
    }

    /// A connection accepted into `room`.
    pub fn admit(&self, room: Room) -> Admitted {
        self.gauge.inc();
        Admitted {
            _room: room,
            _load: self.loads.opened(),
            gauge: self.gauge.clone(),
        }
    }

    /// Connections open now (and an accept waiting for its client, if any).
    pub fn open(&self) -> usize {
        self.max.saturating_sub(self.permits.available_permits())
    }

    /// The most connections open at once since the last call; counting starts again from the
    /// number open now. Exact where sampling `open` would miss a burst between two samples.
    pub fn take_peak(&self) -> usize {
        let open = self.open();
        self.peak.swap(open, Ordering::Relaxed).max(open)
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_peak_is_kept_until_read_even_when_every_connection_closed() {
        let limit = ConnectionLimit::new(10);
        let held: Vec<_> = futures_util::future::join_all((0..3).map(|_| limit.room()))
            .await
            .into_iter()
            .map(Option::unwrap)
            .collect();
        assert_eq!(limit.open(), 3);
        drop(held);
        assert_eq!(limit.open(), 0);
        assert_eq!(limit.take_peak(), 3, "the burst seen although it is over");
        assert_eq!(limit.take_peak(), 0, "counted again from now");
        let _one = limit.room().await.unwrap();
        assert_eq!(limit.take_peak(), 1);
    }

    #[tokio::test]
    async fn only_admitted_connections_are_counted_open_in_the_gauge() {
        let gauge = Gauge::default();
        let limit = ConnectionLimit::counted(10, gauge.clone(), Gauge::default(), Vec::new());
        let waiting = limit.room().await.unwrap();
        assert_eq!(
            gauge.get(),
            0,
            "room taken before accept is not a connection"
        );
        let first = limit.admit(waiting);
        let second = limit.admit(limit.room().await.unwrap());
        assert_eq!(gauge.get(), 2);
        drop(first);
        assert_eq!(gauge.get(), 1);
        drop(second);
        assert_eq!(gauge.get(), 0);
    }
}
