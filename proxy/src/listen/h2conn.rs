//! One HTTP/2 client connection, on the h2 crate directly: its streams are futures polled by
//! the connection's own task, not a task each.
//!
//! Why not hyper's HTTP/2 server: it spawns a task per stream and moves the whole request
//! future into it (callgrind on h2c → HTTP/1: its stream spawns were 6.5 % of weir's
//! instructions per request; serving streams in place took 5.7 % off, and 8–22 % off the CPU
//! per request of bodiless HTTP/2 requests, benches/README.md). Here a stream is pushed into
//! the connection's set once and polled in place; the connection's writes are flushed in the
//! same poll that ran the streams which queued them.
//!
//! What the connection does besides: a PING every `keepalive` and, when no PONG comes back
//! within `PONG_TIMEOUT`, the connection is dropped (a peer gone without a FIN); with no stream
//! for `idle_timeout` (counted in `keepalive` ticks: between one and one and a half times it)
//! it gets GOAWAY and closes; the client's preface and SETTINGS are due within the head
//! timeout from accept, like an HTTP/1 client's first head.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use http::Request;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Interval, MissedTickBehavior, Sleep};

use super::drain::Graceful;
use super::spec::LimitsSpec;

/// Stream and flow-control settings of client connections, and their timers.
pub struct H2Settings {
    max_header_list_size: u32,
    head_timeout: Duration,
    keepalive: Duration,
    idle_timeout: Duration,
}

/// Streams a client may open at once (SETTINGS_MAX_CONCURRENT_STREAMS; hyper's default too).
const MAX_CONCURRENT_STREAMS: u32 = 200;
/// Each stream's receive window, and the connection's: a 1 MiB upload is not held up by
/// WINDOW_UPDATE round trips.
const WINDOW: u32 = 1024 * 1024;
/// What one stream may queue beyond the client's window before its body is read no further.
const MAX_SEND_BUFFER: usize = 400 * 1024;
/// Streams weir may reset for the client's protocol errors before it ends the connection
/// (the "MadeYouReset" bound).
const MAX_LOCAL_ERROR_RESETS: usize = 1024;
/// How long a PING may go unanswered.
const PONG_TIMEOUT: Duration = Duration::from_secs(20);

impl H2Settings {
    pub fn new(limits: &LimitsSpec) -> Self {
        H2Settings {
            max_header_list_size: u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX),
            head_timeout: limits.header_read_timeout,
            keepalive: (limits.idle_timeout / 2).max(Duration::from_millis(10)),
            idle_timeout: limits.idle_timeout,
        }
    }

    fn builder(&self) -> h2::server::Builder {
        let mut builder = h2::server::Builder::new();
        builder
            .initial_window_size(WINDOW)
            .initial_connection_window_size(WINDOW)
            .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
            .max_send_buffer_size(MAX_SEND_BUFFER)
            .max_header_list_size(self.max_header_list_size)
            .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS));
        builder
    }
}

/// A client's HTTP/2 connection: `start` makes each accepted stream's future.
pub struct H2Connection<T, F, S> {
    phase: Phase<T>,
    streams: FuturesUnordered<F>,
    start: S,
    /// Asked to finish before the handshake was done: GOAWAY as soon as it is.
    finish_asked: bool,
    keepalive: Duration,
    /// `keepalive` ticks without a stream after which the connection is closed.
    idle_ticks_limit: u32,
}

enum Phase<T> {
    Handshake {
        handshake: h2::server::Handshake<T, Bytes>,
        due: Pin<Box<Sleep>>,
    },
    Serving(Serving<T>),
}

struct Serving<T> {
    conn: h2::server::Connection<T, Bytes>,
    /// None when h2 has handed it out already (it does once).
    ping: Option<h2::PingPong>,
    tick: Interval,
    /// A PING is out: the PONG is due when this fires.
    pong_due: Option<Pin<Box<Sleep>>>,
    /// A stream came in since the last tick.
    accepted: bool,
    idle_ticks: u32,
}

impl<T, F, S> H2Connection<T, F, S>
where
    T: AsyncRead + AsyncWrite + Unpin,
    F: Future<Output = ()>,
    S: FnMut(Request<h2::RecvStream>, h2::server::SendResponse<Bytes>) -> F,
{
    /// `accepted`: when the TCP connection was accepted (the handshake is due from then).
    pub fn new(io: T, settings: &H2Settings, accepted: Instant, start: S) -> Self {
        let due = tokio::time::Instant::from_std(accepted + settings.head_timeout);
        let ticks = settings.idle_timeout.as_nanos() / settings.keepalive.as_nanos().max(1);
        H2Connection {
            phase: Phase::Handshake {
                handshake: settings.builder().handshake(io),
                due: Box::pin(tokio::time::sleep_until(due)),
            },
            streams: FuturesUnordered::new(),
            start,
            finish_asked: false,
            keepalive: settings.keepalive,
            idle_ticks_limit: u32::try_from(ticks).unwrap_or(u32::MAX).max(1),
        }
    }

    fn serving(&self, mut conn: h2::server::Connection<T, Bytes>) -> Serving<T> {
        if self.finish_asked {
            conn.graceful_shutdown();
        }
        let start = tokio::time::Instant::now() + self.keepalive;
        let mut tick = tokio::time::interval_at(start, self.keepalive);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Serving {
            ping: conn.ping_pong(),
            conn,
            tick,
            pong_due: None,
            accepted: false,
            idle_ticks: 0,
        }
    }
}

impl<T, F, S> Future for H2Connection<T, F, S>
where
    T: AsyncRead + AsyncWrite + Unpin,
    F: Future<Output = ()>,
    S: FnMut(Request<h2::RecvStream>, h2::server::SendResponse<Bytes>) -> F + Unpin,
{
    type Output = Result<(), h2::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Phase::Handshake { handshake, due } = &mut this.phase {
            match Pin::new(handshake).poll(cx) {
                Poll::Ready(Ok(conn)) => this.phase = Phase::Serving(this.serving(conn)),
                Poll::Ready(Err(err)) => return Poll::Ready(Err(err)),
                Poll::Pending => {
                    if due.as_mut().poll(cx).is_ready() {
                        tracing::debug!("HTTP/2 client sent no preface in time");
                        return Poll::Ready(Ok(()));
                    }
                    return Poll::Pending;
                }
            }
        }
        let Phase::Serving(serving) = &mut this.phase else {
            return Poll::Pending;
        };
        loop {
            // The streams first: the frames they queue are written by the connection's poll
            // just below, in this same turn of the task.
            while let Poll::Ready(Some(())) = this.streams.poll_next_unpin(cx) {}
            match serving.conn.poll_accept(cx) {
                Poll::Ready(Some(Ok((req, respond)))) => {
                    serving.accepted = true;
                    this.streams.push((this.start)(req, respond));
                }
                Poll::Ready(Some(Err(err))) => return Poll::Ready(Err(err)),
                // GOAWAY sent or received and every stream done, or the client closed.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => break,
            }
        }
        let open = !this.streams.is_empty();
        match serving.poll_timers(cx, open) {
            Timers::Quiet => {}
            Timers::Idle => {
                serving.idle_ticks += 1;
                if serving.idle_ticks >= this.idle_ticks_limit {
                    tracing::debug!("HTTP/2 client connection idle: GOAWAY");
                    serving.conn.graceful_shutdown();
                    // Let h2 write the GOAWAY and see that no stream is left.
                    cx.waker().wake_by_ref();
                }
            }
            Timers::Busy => serving.idle_ticks = 0,
            Timers::Dead => {
                tracing::debug!("HTTP/2 client did not answer PING: closing its connection");
                return Poll::Ready(Ok(()));
            }
        }
        Poll::Pending
    }
}

/// What the connection's timers found.
enum Timers {
    Quiet,
    /// A tick passed with no stream open or opened.
    Idle,
    /// A tick passed with streams.
    Busy,
    /// The PONG did not come in time.
    Dead,
}

impl<T> Serving<T>
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    /// `open`: streams are in progress.
    fn poll_timers(&mut self, cx: &mut Context<'_>, open: bool) -> Timers {
        let mut found = Timers::Quiet;
        if let (Some(ping), Some(due)) = (self.ping.as_mut(), self.pong_due.as_mut()) {
            match ping.poll_pong(cx) {
                Poll::Ready(_) => self.pong_due = None,
                Poll::Pending => {
                    if due.as_mut().poll(cx).is_ready() {
                        return Timers::Dead;
                    }
                }
            }
        }
        while self.tick.poll_tick(cx).is_ready() {
            found = if open || std::mem::take(&mut self.accepted) {
                Timers::Busy
            } else {
                Timers::Idle
            };
            if self.pong_due.is_none() {
                if let Some(ping) = self.ping.as_mut() {
                    if ping.send_ping(h2::Ping::opaque()).is_ok() {
                        let mut due = Box::pin(tokio::time::sleep(PONG_TIMEOUT));
                        // Polled once so that the timer and the PONG wake this task.
                        let _ = due.as_mut().poll(cx);
                        let _ = ping.poll_pong(cx);
                        self.pong_due = Some(due);
                    }
                }
            }
        }
        found
    }
}

impl<T, F, S> Graceful for H2Connection<T, F, S>
where
    T: AsyncRead + AsyncWrite + Unpin,
    F: Future<Output = ()>,
    S: FnMut(Request<h2::RecvStream>, h2::server::SendResponse<Bytes>) -> F + Unpin,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        let this = self.get_mut();
        match &mut this.phase {
            Phase::Serving(serving) => serving.conn.graceful_shutdown(),
            Phase::Handshake { .. } => this.finish_asked = true,
        }
    }
}
