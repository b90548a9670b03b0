//! The heap: kept for reuse while traffic flows, given back to the system after many client
//! connections close or are parked.
//!
//! Kept: glibc by default gives the top of its heap back as soon as 128 KiB there are free
//! (and serves blocks over 128 KiB, until it adapts, with a fresh mapping each), so a body
//! handed on in reads of up to 256 KiB (`weir_proxy::upstream::PooledBody`) took fresh pages
//! from the kernel again and again: 1 MiB downloads over h2c made 93,000 page faults and 2,700
//! `brk` calls per GiB, and ran at 0.8x the rate of the same downloads with the heap kept.
//!
//! Why: glibc's allocator keeps freed memory inside the process, so after a burst of clients
//! leaves, weir stays at its peak RSS (8,000 idle clients: 45.6 MiB with them, 45.8 MiB two
//! seconds after they all left — benches/README.md, "Idle keep-alive clients"). `malloc_trim`
//! hands the free pages back. It walks the heap and holds the allocator's locks while it does,
//! so it runs only after a large drop in open connections, not on every close. A parked
//! connection (`weir_proxy::listen`'s parking, after a second idle) frees its task, timer and
//! registration too, but keeps nothing on the heap between them: many parked at once free whole
//! pages, which stay with the process just the same until trimmed.

use std::sync::Arc;
use std::time::Duration;

use weir_proxy::listen::ConnectionLimit;

/// Open connections must fall this far below their peak (or this many more be parked) before
/// the heap is trimmed.
const CLOSED_BEFORE_TRIM: usize = 1_000;
/// How often the connection counts are read (two atomic operations).
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Runs until dropped: trims the heap once `CLOSED_BEFORE_TRIM` fewer client connections are
/// open than at their peak since the last trim, or as many more are parked than at the fewest
/// since then.
pub async fn trim_after_closes(connections: Arc<ConnectionLimit>) {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let parked_gauge = connections.parked();
    let parked_now = || usize::try_from(parked_gauge.get()).unwrap_or(0);
    let mut peak = 0;
    let mut fewest_parked = parked_now();
    loop {
        tick.tick().await;
        peak = peak.max(connections.take_peak());
        let open = connections.open();
        let parked = parked_now();
        fewest_parked = fewest_parked.min(parked);
        let closed = peak - open.min(peak);
        if closed >= CLOSED_BEFORE_TRIM || parked - fewest_parked >= CLOSED_BEFORE_TRIM {
            // The request buffers and futures kept in stock were taken while the clients were here, from
            // all over the heap: freed first, they no longer hold pages the trim could give.
            weir_proxy::release_stocks();
            // Off the runtime's threads: it may take milliseconds on a large heap.
            let trimmed = tokio::task::spawn_blocking(trim).await.unwrap_or(false);
            tracing::debug!(
                peak,
                open,
                parked,
                trimmed,
                "heap trimmed after client connections closed or were parked"
            );
            peak = open;
            fewest_parked = parked;
        }
    }
}

/// Up to this much free memory at the heap's top is kept for reuse.
const KEEP_FREED: usize = 8 << 20;
/// Blocks up to this size come from the heap, not from a mapping of their own.
const HEAP_BLOCKS_UP_TO: usize = 1 << 20;

/// Keeps freed heap for reuse (`KEEP_FREED`, `HEAP_BLOCKS_UP_TO`); the trim after closes gives
/// it back when the load goes. Call once at start.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn keep_freed_heap() {
    // SAFETY: mallopt takes the allocator's own lock; any thread may call it. Both values are
    // within what glibc accepts (it returns 0 and changes nothing otherwise).
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP_FREED as libc::c_int);
        libc::mallopt(libc::M_MMAP_THRESHOLD, HEAP_BLOCKS_UP_TO as libc::c_int);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_freed_heap() {}

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
