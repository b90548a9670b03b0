//! The client connections open over all listeners, at most `max`: accepting waits for room.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct ConnectionLimit {
    permits: Arc<Semaphore>,
    max: usize,
    /// The most open at once since `take_peak` last read it.
    peak: AtomicUsize,
}

impl ConnectionLimit {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(ConnectionLimit {
            permits: Arc::new(Semaphore::new(max)),
            max,
            peak: AtomicUsize::new(0),
        })
    }

    /// Room for one more connection, held until the permit drops; waits while `max` are
    /// open. None once the limit is closed.
    pub async fn acquire(&self) -> Option<OwnedSemaphorePermit> {
        let permit = self.permits.clone().acquire_owned().await.ok()?;
        self.peak.fetch_max(self.open(), Ordering::Relaxed);
        Some(permit)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_peak_is_kept_until_read_even_when_every_connection_closed() {
        let limit = ConnectionLimit::new(10);
        let held: Vec<_> = futures_util::future::join_all((0..3).map(|_| limit.acquire()))
            .await
            .into_iter()
            .map(Option::unwrap)
            .collect();
        assert_eq!(limit.open(), 3);
        drop(held);
        assert_eq!(limit.open(), 0);
        assert_eq!(limit.take_peak(), 3, "the burst seen although it is over");
        assert_eq!(limit.take_peak(), 0, "counted again from now");
        let _one = limit.acquire().await.unwrap();
        assert_eq!(limit.take_peak(), 1);
    }
}
