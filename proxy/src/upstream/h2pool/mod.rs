//! One worker's HTTP/2 connections to one upstream address (what the address's pools on every
//! worker share, the caps' counts among it: `shared`). A stream goes to the oldest connection below
//! its limit (weir's cap or the server's SETTINGS_MAX_CONCURRENT_STREAMS, the lower);
//! when all are full another opens, up to a cap; past that a request waits, in a bounded
//! queue, until a stream frees or its deadline passes. A connection whose server sent GOAWAY,
//! or that reached its maximum age or request count (configured, or the server's own as its
//! connections' ends showed it: `learned_cap`), takes no new stream and closes once its
//! streams end. Streams the server refused are sent again (`resend`).
//!
//! Each connection is weir's own sans-I/O HTTP/2 client (`crate::h2wire::client`) behind one
//! lock (`link`), driven by a task of its own that owns the socket (`driver`); requests go out
//! from their own futures (`exchange`, `send_body`) and their responses are read from the
//! connection's buffers (`response`), with no task or channel per request.
//!
//! Why a pool and not one connection: one connection inherits every per-connection limit of
//! the server, stalls every call on one lost packet, and caps a server that reads each
//! connection on one thread at one core.

mod dispatch;
mod driver;
mod error;
mod exchange;
mod fields;
mod learned_cap;
mod link;
mod pick;
mod resend;
pub(super) mod response;
mod send_body;
mod shared;
mod signals;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

pub use driver::{Driver, KeepAlive};
pub use exchange::{exchange, Failed};
pub use link::Link;
pub use resend::Resend;
pub use shared::Shared;
pub use signals::Signals;

use crate::stats::{PoolMetrics, UpstreamError};
use crate::table_spec::Http2PoolSpec;
pub use pick::Prefer;
use pick::{pick, Limits, Load};

pub struct H2Pool {
    spec: Http2PoolSpec,
    state: Mutex<State>,
    /// The counts and knowledge this address's pools on the other workers share with this one.
    shared: Arc<Shared>,
    /// Requests waiting for a stream of this pool. Outside the lock: a stream's end reads it to
    /// know whether to wake anyone, and most ends find no one.
    waiting: AtomicU32,
    /// A stream ended or a connection opened (or failed to): waiters look again.
    changed: Notify,
    metrics: PoolMetrics,
    /// The address, for what the pool logs.
    upstream: String,
}

#[derive(Default)]
struct State {
    conns: Vec<Arc<H2Conn>>,
    opening: u32,
}

impl State {
    /// Connections that take no new streams leave the pool (their streams hold them open);
    /// how the server ended them teaches its cap. `keep` decides the others.
    fn leave(&mut self, pool: &H2Pool, keep: impl Fn(&H2Conn) -> bool) {
        let (spec, upstream) = (&pool.spec, pool.upstream.as_str());
        self.conns.retain(|c| {
            if c.takes_streams(spec) {
                if keep(c) {
                    return true;
                }
                pool.shared.closed();
                return false;
            }
            pool.shared.closed();
            if let Some(cap) = c.signals.ended_at().and_then(|n| pool.shared.ended_at(n)) {
                pool.metrics.learned_cap.set(i64::from(cap));
                tracing::info!(
                    upstream,
                    cap,
                    "the HTTP/2 upstream {upstream} ends its connections after {cap} streams: \
                     weir's are retired at that count from now on"
                );
            }
            false
        });
    }
}

/// One connection of the pool.
pub struct H2Conn {
    link: Arc<Link>,
    signals: Arc<Signals>,
    /// Streams taken and not yet ended.
    in_flight: AtomicU32,
    served: AtomicU64,
    /// Past its age or request count: no new streams.
    retired: AtomicBool,
    opened: Instant,
    /// Milliseconds after `opened` when its last stream ended.
    idle_since_ms: AtomicU64,
    metrics: PoolMetrics,
}

impl H2Conn {
    pub fn new(link: Arc<Link>, signals: Arc<Signals>, metrics: PoolMetrics) -> Self {
        metrics.connections.inc();
        H2Conn {
            link,
            signals,
            in_flight: AtomicU32::new(0),
            served: AtomicU64::new(0),
            retired: AtomicBool::new(false),
            opened: Instant::now(),
            idle_since_ms: AtomicU64::new(0),
            metrics,
        }
    }

    /// The connection, for one request.
    pub fn link(&self) -> &Arc<Link> {
        &self.link
    }

    fn takes_streams(&self, spec: &Http2PoolSpec) -> bool {
        !self.retired.load(Ordering::Relaxed)
            && !self.signals.going_away()
            && !self.signals.closed()
            && spec
                .max_connection_age
                .is_none_or(|age| self.opened.elapsed() < age)
    }

    fn load(&self, spec: &Http2PoolSpec) -> Load {
        Load {
            in_flight: self.in_flight.load(Ordering::Relaxed),
            served: self.served.load(Ordering::Relaxed),
            limit: spec
                .max_streams_per_connection
                .min(self.signals.max_streams()),
        }
    }

    fn idle_for(&self) -> Option<Duration> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let since = Duration::from_millis(self.idle_since_ms.load(Ordering::Relaxed));
        Some(self.opened.elapsed().saturating_sub(since))
    }
}

impl Drop for H2Conn {
    fn drop(&mut self) {
        // No slot holds it and the pool left it: it closes once its streams end.
        self.link.abandon();
        self.metrics.connections.dec();
    }
}

/// A stream taken on a connection, given back (with `H2Pool::end`) when the exchange ends.
pub struct Slot {
    pub conn: Arc<H2Conn>,
}

impl H2Pool {
    /// One worker's pool of connections to `upstream`; `shared` with the address's pools on
    /// the other workers (made from the same `spec`).
    pub fn new(
        spec: Http2PoolSpec,
        shared: Arc<Shared>,
        metrics: PoolMetrics,
        upstream: String,
    ) -> Self {
        H2Pool {
            spec,
            state: Mutex::new(State::default()),
            shared,
            waiting: AtomicU32::new(0),
            changed: Notify::new(),
            metrics,
            upstream,
        }
    }

    pub fn spec(&self) -> &Http2PoolSpec {
        &self.spec
    }

    /// A stream for one request, on the connection it `prefer`s, waiting until `deadline` at
    /// most when every connection is full. `open` makes a new connection. Errors: `open`'s, or
    /// `StreamLimit` when the queue is full or the deadline passed.
    pub async fn checkout<F, Fut>(
        &self,
        deadline: Instant,
        prefer: Prefer,
        open: F,
    ) -> Result<Slot, UpstreamError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<H2Conn, UpstreamError>>,
    {
        let mut waited: Option<Instant> = None;
        let result = loop {
            // The common case: a stream is free, or a connection may open.
            match self.choose(waited.is_some(), prefer) {
                Choice::Use(slot) => break Ok(slot),
                Choice::Open => break self.open_and_take(&open).await,
                Choice::Wait => {}
            }
            if waited.is_none() {
                if !self.shared.start_waiting() {
                    tracing::debug!("HTTP/2 upstream pool full and its queue too");
                    break Err(UpstreamError::StreamLimit);
                }
                self.waiting.fetch_add(1, Ordering::SeqCst);
                self.metrics.waits.inc();
                waited = Some(Instant::now());
            }
            // Registered before looking again (and counted as waiting before that): a stream
            // that ends after this look wakes this waiter, one that ended before it is seen.
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.choose(true, prefer) {
                Choice::Use(slot) => break Ok(slot),
                Choice::Open => break self.open_and_take(&open).await,
                Choice::Wait => {}
            }
            if tokio::time::timeout_at(deadline.into(), notified)
                .await
                .is_err()
            {
                break Err(UpstreamError::StreamLimit);
            }
        };
        if let Some(since) = waited {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            self.shared.stop_waiting();
            self.metrics.wait_time.observe(since.elapsed());
        }
        result
    }

    /// Looks at the connections under the lock and takes a stream or a right to open one.
    fn choose(&self, waiting_already: bool, prefer: Prefer) -> Choice<Slot> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.leave(self, |_| true);
        let waiting = self.waiting.load(Ordering::SeqCst) + u32::from(!waiting_already);
        let limits = Limits {
            max_connections: self.spec.max_connections,
            streams_per_connection: self.spec.max_streams_per_connection,
        };
        let loads = state.conns.iter().map(|c| c.load(&self.spec));
        match pick(loads, state.opening, waiting, limits, prefer) {
            pick::Pick::Use(i) => Choice::Use(self.take(&state.conns[i])),
            // This pool may open one; the other workers' may have taken the room already.
            pick::Pick::Open
                if self
                    .shared
                    .open(state.conns.is_empty() && state.opening == 0) =>
            {
                state.opening += 1;
                Choice::Open
            }
            pick::Pick::Open | pick::Pick::Wait => Choice::Wait,
        }
    }

    async fn open_and_take<F, Fut>(&self, open: &F) -> Result<Slot, UpstreamError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<H2Conn, UpstreamError>>,
    {
        // Whatever happens, the opening is over and waiters look again (for this connection's
        // other streams, or to try opening one themselves after a failure, its room given
        // back).
        struct Opening<'a> {
            pool: &'a H2Pool,
            opened: bool,
        }
        impl Drop for Opening<'_> {
            fn drop(&mut self) {
                let mut state = self.pool.state.lock().unwrap_or_else(|p| p.into_inner());
                state.opening = state.opening.saturating_sub(1);
                drop(state);
                if !self.opened {
                    self.pool.shared.closed();
                }
                self.pool.changed.notify_waiters();
            }
        }
        let mut opening = Opening {
            pool: self,
            opened: false,
        };
        let conn = Arc::new(open().await?);
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let slot = self.take(&conn);
        state.conns.push(conn);
        opening.opened = true;
        drop(state);
        drop(opening);
        Ok(slot)
    }

    /// A stream on `conn`; past the configured or learnt cap on streams it is retired.
    fn take(&self, conn: &Arc<H2Conn>) -> Slot {
        conn.in_flight.fetch_add(1, Ordering::SeqCst);
        let served = conn.served.fetch_add(1, Ordering::Relaxed) + 1;
        // The lower of the two, where there is one.
        let cap = [
            self.spec.max_requests_per_connection,
            self.shared.learned_cap().map(u64::from),
        ]
        .into_iter()
        .flatten()
        .min();
        if cap.is_some_and(|max| served >= max) {
            conn.retired.store(true, Ordering::Relaxed);
        }
        self.metrics.streams.inc();
        Slot { conn: conn.clone() }
    }

    /// The exchange on `slot` is over (its response ended, or it failed).
    pub fn end(&self, slot: Slot) {
        let conn = slot.conn;
        let ms = u64::try_from(conn.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        conn.idle_since_ms.store(ms, Ordering::Relaxed);
        conn.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.metrics.streams.dec();
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.changed.notify_one();
        }
    }

    /// Drops connections without streams for longer than `idle`; returns how many.
    pub fn evict_idle(&self, idle: Duration) -> usize {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let before = state.conns.len();
        state.leave(self, |c| c.idle_for().is_none_or(|d| d <= idle));
        before - state.conns.len()
    }
}

/// `pick::Pick` with the stream already taken.
enum Choice<S> {
    Use(S),
    Open,
    Wait,
}
#[cfg(test)]
mod tests;
