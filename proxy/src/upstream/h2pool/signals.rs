//! What one connection's server has said, and whether the connection still stands, kept where
//! the pool reads it without taking the connection's lock. The driver feeds it from the
//! connection's events.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use prometheus_client::metrics::counter::Counter;
use tokio::sync::Notify;

use super::learned_cap;
use crate::h2wire::frame::ErrorCode;

pub struct Signals {
    /// SETTINGS_MAX_CONCURRENT_STREAMS; `u32::MAX` until the server says (RFC 9113: no limit
    /// until then, and weir's own cap applies anyway).
    max_streams: AtomicU32,
    /// The server's first SETTINGS frame has been read.
    settled: AtomicBool,
    /// Settled, or closed before that.
    settling: Notify,
    going_away: AtomicBool,
    /// Streams the server processed before a GOAWAY that refused later ones (`learned_cap`);
    /// 0 when none did.
    ended_at: AtomicU32,
    goaways: Counter,
    /// The connection's driver ended (closed, failed, or found dead): no new streams.
    closed: AtomicBool,
}

impl Signals {
    pub fn new(goaways: Counter) -> Self {
        Signals {
            max_streams: AtomicU32::new(u32::MAX),
            settled: AtomicBool::new(false),
            settling: Notify::new(),
            going_away: AtomicBool::new(false),
            ended_at: AtomicU32::new(0),
            goaways,
            closed: AtomicBool::new(false),
        }
    }

    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.settling.notify_waiters();
    }

    pub fn max_streams(&self) -> u32 {
        self.max_streams.load(Ordering::Relaxed)
    }

    /// Waits for the server's first SETTINGS frame: a connection used before it would carry
    /// streams past a limit it has not said yet, and have them refused. False when the
    /// connection closed first.
    pub async fn settled(&self) -> bool {
        let notified = self.settling.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !self.settled.load(Ordering::SeqCst) && !self.closed() {
            notified.await;
        }
        self.settled.load(Ordering::SeqCst)
    }

    pub fn going_away(&self) -> bool {
        self.going_away.load(Ordering::SeqCst)
    }

    /// Streams the server processed before its GOAWAY refused later ones, if it did.
    pub fn ended_at(&self) -> Option<u32> {
        Some(self.ended_at.load(Ordering::SeqCst)).filter(|&n| n > 0)
    }

    /// A SETTINGS frame was applied; `max_streams` if it said SETTINGS_MAX_CONCURRENT_STREAMS.
    pub(super) fn settings(&self, max_streams: Option<u32>) {
        if let Some(n) = max_streams {
            self.max_streams.store(n, Ordering::Relaxed);
        }
        if !self.settled.swap(true, Ordering::SeqCst) {
            self.settling.notify_waiters();
        }
    }

    /// The server sent GOAWAY; `refused`: streams this side had sent past `last_stream_id`.
    pub(super) fn go_away(&self, last_stream_id: u32, code: ErrorCode, refused: bool) {
        if refused && code == ErrorCode::NO_ERROR {
            // Before `going_away`: the pool reads it once the connection takes no streams.
            self.ended_at
                .store(learned_cap::processed(last_stream_id), Ordering::SeqCst);
        }
        // A graceful shutdown sends two (RFC 9113 §6.8): one connection, one count.
        if !self.going_away.swap(true, Ordering::SeqCst) {
            self.goaways.inc();
        }
        tracing::debug!(last_stream_id, error_code = %code, "upstream sent GOAWAY");
    }
}
