//! Giving the heap back to the system after many client connections close.
//!
//! Why: glibc's allocator keeps freed memory inside the process, so after a burst of clients
//! leaves, weir stays at its peak RSS (8,000 idle clients: 45.6 MiB with them, 45.8 MiB two
//! seconds after they all left — benches/README.md, "Idle keep-alive clients"). `malloc_trim`
//! hands the free pages back. It walks the heap and holds the allocator's locks while it does,
//! so it runs only after a large drop in open connections, not on every close.

use std::sync::Arc;
use std::time::Duration;

use weir_proxy::listen::ConnectionLimit;

/// Open connections must fall this far below their peak before the heap is trimmed.
const CLOSED_BEFORE_TRIM: usize = 1_000;
/// How often the connection counts are read (two atomic operations).
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Runs until dropped: trims the heap once `CLOSED_BEFORE_TRIM` fewer client connections are
/// open than at their peak since the last trim.
pub async fn trim_after_closes(connections: Arc<ConnectionLimit>) {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut peak = 0;
    loop {
        tick.tick().await;
        peak = peak.max(connections.take_peak());
        let open = connections.open();
        if peak - open.min(peak) >= CLOSED_BEFORE_TRIM {
            // Off the runtime's threads: it may take milliseconds on a large heap.
            let trimmed = tokio::task::spawn_blocking(trim).await.unwrap_or(false);
            tracing::debug!(
                peak,
                open,
                trimmed,
                "heap trimmed after client connections closed"
            );
            peak = open;
        }
    }
}

/// Whether any memory went back to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() -> bool {
    // SAFETY: malloc_trim takes the allocator's own locks; any thread may call it.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Other allocators (musl's) give freed pages back by themselves.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}
