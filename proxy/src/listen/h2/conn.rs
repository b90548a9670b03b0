//! One HTTP/2 client connection: a future that owns the socket and, through the shared state,
//! the engine; its streams are futures in a set polled in place (no task per stream).
//!
//! Each poll: the clocks; then rounds of one read (handed to the engine, its events applied,
//! new streams started), the streams polled (they queue frames), and the output written —
//! small output once held back a turn while other streams run, so that answers completed
//! by the same turn's upstream reads share a write (`held`); one flush once nothing moves.
//! Reading goes on while output waits to be written (a client that writes while it reads
//! must not deadlock against this side), but stops once the unwritten output passes
//! `READ_PAUSE`: a client that sends but does not read is not read either. Request content is
//! bounded by flow control: a body's window goes back only when the pipeline takes its chunks
//! (`h2link`).

use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use http::Request;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Sleep;

use super::events::{self, After};
use super::link::Link;
use super::state::Core;
use super::stream::StreamHandle;
use super::timers::{Due, Timers};
use super::H2Settings;
use crate::graceful::Graceful;
use crate::h2link::{write_out, Inbound};
use crate::h2wire::frame::ErrorCode;
use crate::h2wire::server::{ConnError, Event, ServerConn};
use crate::upstream::Received;

/// Unwritten output past which the socket is no longer read. Above the half of the engine's
/// 1 MiB bound that DATA may fill, so a slow reader of a large response is still read (its
/// WINDOW_UPDATEs, its other requests); below the bound itself, past which the engine ends
/// the connection.
const READ_PAUSE: usize = 768 << 10;
/// Rounds of read, streams and write in one poll before the task yields to others.
const MAX_ROUNDS: usize = 16;
/// How long a closing connection may take to write its last frames (GOAWAY).
const LINGER: Duration = Duration::from_secs(2);
/// The output's capacity kept by a connection without streams.
const OUTPUT_KEEP: usize = 16 << 10;
/// Finished streams' boxes kept for the next streams (`Slot`): a client's usual concurrency.
const SPARE_SLOTS: usize = 64;
/// Output below this waits one turn of the scheduler before it is written (`held`): a TLS
/// record's worth of plaintext. More is written at once (a download keeps the socket full).
const HOLD_BELOW: usize = 16 << 10;

/// The box a stream's future lives in, emptied when the stream ends and filled again by a
/// later stream. Why: the future is about 3 KiB (the pipeline's state, the upstream exchange's),
/// above the 1,032 octets glibc serves from its per-thread cache; a fresh box for each stream
/// went through malloc's slow path and free's consolidation, about 2,700 instructions a
/// request (callgrind, benches/README "session 23"). `Pin::set` replaces the future in place,
/// so the box is reused without moving a pinned value.
type Slot<F> = Pin<Box<Option<F>>>;

/// What the stream set polls: one stream in its slot; its output is the emptied slot, for
/// `spare`. Small itself, so the set's own allocation a stream stays in the fast path.
struct Running<F> {
    slot: Option<Slot<F>>,
}

impl<F: Future<Output = ()>> Future for Running<F> {
    type Output = Option<Slot<F>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Slot<F>>> {
        let this = self.get_mut();
        if let Some(slot) = this.slot.as_mut() {
            if let Some(stream) = slot.as_mut().as_pin_mut() {
                if stream.poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
            // The stream's state goes now, not when the box is next filled.
            slot.set(None);
        }
        Poll::Ready(this.slot.take())
    }
}

/// A client's HTTP/2 connection: `start` makes each request's stream future.
pub struct H2Connection<T, S, F> {
    io: T,
    link: Link,
    inbound: Inbound,
    events: Vec<Event>,
    /// What the last events left to do, kept for its lists' room: a batch of new requests
    /// grew a list of them from nothing, a reallocation of whole requests each time.
    after: After,
    streams: FuturesUnordered<Running<F>>,
    /// Emptied slots of finished streams, at most `SPARE_SLOTS`; given back while quiet.
    spare: Vec<Slot<F>>,
    start: S,
    timers: Timers,
    /// Writes since the last flush.
    unflushed: bool,
    /// Output was held back at the last poll, to be written at this one. Why: the answers to
    /// a client's streams complete one upstream read at a time, and written as each completes
    /// they go out as many small writes (TLS records, segments), each a wake-up and a read for
    /// the client. Held until the runtime has run every task already ready and polled for
    /// readiness again (tokio's `yield_now` defers the wake-up to then), the answers the
    /// other upstream reads of that turn complete go out in the same write. Held only while
    /// other streams are running, and below `HOLD_BELOW`: a lone answer goes at once.
    held: bool,
    /// The client sent GOAWAY: once no stream is left, the connection closes.
    client_going: bool,
    /// The client's SETTINGS came (kept here once true: asked of the engine until then).
    settled: bool,
    /// Set when the connection ends: the last output is written, then the socket shut.
    closing: Option<Closing>,
}

struct Closing {
    error: Option<ConnError>,
    linger: Pin<Box<Sleep>>,
}

impl<T, S, F> H2Connection<T, S, F>
where
    T: AsyncRead + AsyncWrite + Unpin,
    S: FnMut(Request<Received>, StreamHandle) -> F + Unpin,
    F: Future<Output = ()>,
{
    /// `accepted`: when the TCP connection was accepted (the preface is due from then).
    pub fn new(io: T, settings: &H2Settings, accepted: Instant, start: S) -> Self {
        H2Connection {
            io,
            link: Link::new(Core::new(ServerConn::new(settings.config))),
            inbound: Inbound::new(),
            events: Vec::new(),
            after: After::default(),
            streams: FuturesUnordered::new(),
            spare: Vec::new(),
            start,
            timers: Timers::new(settings, accepted),
            unflushed: false,
            held: false,
            client_going: false,
            settled: false,
            closing: None,
        }
    }

    /// Hands what was read to the engine and applies its events; false once the connection
    /// failed (the engine queued GOAWAY).
    fn receive(&mut self) -> bool {
        let (link, inbound, events) = (&self.link, &mut self.inbound, &mut self.events);
        let after = &mut self.after;
        let failed = link.update(|core| {
            let used = match core.conn.receive(inbound.filled(), events) {
                Ok(used) => used,
                Err(error) => {
                    // The events before the error are of a connection about to end.
                    events.clear();
                    return Some(error);
                }
            };
            let frames = inbound.consume(used);
            for event in events.drain(..) {
                events::apply(core, link, &frames, event, after);
            }
            None
        });
        if let Some(error) = failed {
            self.close(Some(error));
            return false;
        }
        for opaque in self.after.pongs.drain(..) {
            self.timers.pong(opaque);
        }
        self.client_going |= self.after.client_going;
        let mut started = std::mem::take(&mut self.after.started);
        for (req, handle) in started.drain(..) {
            self.timers.opened();
            let stream = (self.start)(req, handle);
            let slot = match self.spare.pop() {
                Some(mut slot) => {
                    slot.set(Some(stream));
                    slot
                }
                None => Box::pin(Some(stream)),
            };
            self.streams.push(Running { slot: Some(slot) });
        }
        self.after.started = started;
        true
    }

    /// Ends the connection: every stream gone, then the last output written (`poll_closing`).
    fn close(&mut self, error: Option<ConnError>) {
        if let Some(error) = &error {
            tracing::debug!(%error, "HTTP/2 client connection failed");
        }
        self.link
            .update(|core| core.close("the HTTP/2 connection ended"));
        // Dropped outside the lock: a stream's handle takes it to say it ended.
        self.streams.clear();
        self.closing = Some(Closing {
            error,
            linger: Box::pin(tokio::time::sleep(LINGER)),
        });
    }

    /// Reads, runs the streams and writes until nothing moves.
    fn poll_serving(&mut self, cx: &mut Context<'_>) -> io::Result<Option<()>> {
        for _ in 0..MAX_ROUNDS {
            let mut moved = false;
            let pending = self.link.update(|core| {
                core.set_task(cx.waker());
                core.conn.output().len()
            });
            if pending < READ_PAUSE {
                match self.inbound.poll_read(&mut self.io, cx) {
                    Poll::Ready(Ok(0)) => {
                        tracing::debug!("HTTP/2 client closed its connection");
                        return Ok(Some(()));
                    }
                    Poll::Ready(Ok(_)) => {
                        if !self.receive() {
                            return Ok(None);
                        }
                        moved = true;
                    }
                    Poll::Ready(Err(e)) => return Err(e),
                    Poll::Pending => {}
                }
            }
            // The streams' frames are written just below, in this same round.
            while let Poll::Ready(Some(ended)) = self.streams.poll_next_unpin(cx) {
                if let Some(slot) = ended {
                    if self.spare.len() < SPARE_SLOTS {
                        self.spare.push(slot);
                    }
                }
            }
            let io = &mut self.io;
            // Only while other streams run: with none, no answer is coming to share the write.
            let may_hold = !std::mem::take(&mut self.held) && !self.streams.is_empty();
            let wrote = self.link.update(|core| {
                let waiting = core.conn.output().len();
                if may_hold && waiting > 0 && waiting < HOLD_BELOW {
                    return Ok(None);
                }
                let wrote = write_out(io, core.conn.output(), cx)?;
                if wrote > 0 {
                    // Room in the output for DATA again.
                    core.capacity(None);
                }
                io::Result::Ok(Some(wrote))
            })?;
            let Some(wrote) = wrote else {
                self.held = true;
                // Pending, and woken once the runtime has polled for readiness again (or at
                // once outside a tokio runtime): the next poll writes.
                let _ = pin!(tokio::task::yield_now()).poll(cx);
                return Ok(None);
            };
            if wrote > 0 {
                self.unflushed = true;
                moved = true;
            }
            if !moved {
                return Ok(None);
            }
        }
        cx.waker().wake_by_ref();
        Ok(None)
    }

    /// The last output written, then the socket shut; within `LINGER`.
    fn poll_closing(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(closing) = self.closing.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let result = match closing.error {
            Some(error) => Err(io::Error::other(error)),
            None => Ok(()),
        };
        if closing.linger.as_mut().poll(cx).is_ready() {
            return Poll::Ready(result);
        }
        let io = &mut self.io;
        let left = self
            .link
            .update(|core| write_out(io, core.conn.output(), cx).map(|_| core.conn.output().len()));
        match left {
            Ok(0) => {}
            Ok(_) => return Poll::Pending,
            Err(_) => return Poll::Ready(result),
        }
        match Pin::new(&mut self.io).poll_shutdown(cx) {
            Poll::Ready(_) => Poll::Ready(result),
            Poll::Pending => Poll::Pending,
        }
    }

    /// The clocks: false when they end the connection.
    fn poll_timers(&mut self, cx: &mut Context<'_>) -> bool {
        let busy = !self.streams.is_empty();
        if !self.settled {
            self.settled = self.link.lock().conn.is_settled();
        }
        match self.timers.poll(cx, self.settled, busy) {
            Due::Head => {
                tracing::debug!("HTTP/2 client sent no preface in time");
                false
            }
            Due::Dead => {
                tracing::debug!("HTTP/2 client did not answer PING: closing its connection");
                false
            }
            Due::Tick { ping, quiet, idle } => {
                if quiet {
                    self.inbound.settle();
                    // The room for a batch of requests, given back while none comes.
                    self.after.started = Vec::new();
                    self.spare = Vec::new();
                }
                if ping.is_some() || quiet || idle {
                    self.link.update(|core| {
                        if quiet {
                            core.conn.quiet();
                        }
                        if quiet && core.conn.output().is_empty() {
                            // What a large download grew it to is given back while the
                            // connection waits (its engine starts at this size).
                            core.conn.output().shrink_to(OUTPUT_KEEP);
                        }
                        if let Some(opaque) = ping {
                            core.conn.ping(opaque);
                        }
                        if idle {
                            tracing::debug!("HTTP/2 client connection idle: GOAWAY");
                            core.conn.go_away(ErrorCode::NO_ERROR);
                        }
                    });
                }
                true
            }
        }
    }
}

impl<T, S, F> Future for H2Connection<T, S, F>
where
    T: AsyncRead + AsyncWrite + Unpin,
    S: FnMut(Request<Received>, StreamHandle) -> F + Unpin,
    F: Future<Output = ()>,
{
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.closing.is_some() {
            return this.poll_closing(cx);
        }
        if !this.poll_timers(cx) {
            this.link
                .update(|core| core.close("the HTTP/2 connection ended"));
            return Poll::Ready(Ok(()));
        }
        match this.poll_serving(cx) {
            Ok(None) => {}
            // The client closed: nothing more can be written to it.
            Ok(Some(())) => {
                this.link
                    .update(|core| core.close("the HTTP/2 client closed"));
                return Poll::Ready(Ok(()));
            }
            Err(e) => {
                this.link
                    .update(|core| core.close("the HTTP/2 connection failed"));
                return Poll::Ready(Err(e));
            }
        }
        if this.closing.is_none() {
            let idle = this.streams.is_empty();
            let client_going = this.client_going;
            let done = this.link.update(|core| {
                if client_going && idle {
                    // The client opens no more streams and none is left.
                    core.conn.go_away(ErrorCode::NO_ERROR);
                }
                core.conn.is_done()
            });
            if done && idle {
                this.close(None);
            }
        }
        if this.closing.is_some() {
            return this.poll_closing(cx);
        }
        if this.unflushed {
            match Pin::new(&mut this.io).poll_flush(cx) {
                Poll::Ready(Ok(())) => this.unflushed = false,
                Poll::Ready(Err(e)) => {
                    this.link
                        .update(|core| core.close("the HTTP/2 connection failed"));
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => {}
            }
        }
        Poll::Pending
    }
}

impl<T, S, F> Graceful for H2Connection<T, S, F>
where
    T: AsyncRead + AsyncWrite + Unpin,
    S: FnMut(Request<Received>, StreamHandle) -> F + Unpin,
    F: Future<Output = ()>,
{
    /// GOAWAY: the streams open go on to their end, later ones are refused (REFUSED_STREAM:
    /// the client may retry them elsewhere); the connection closes once none is left.
    fn graceful_shutdown(self: Pin<&mut Self>) {
        self.link
            .update(|core| core.conn.go_away(ErrorCode::NO_ERROR));
    }
}

impl<T, S, F> Drop for H2Connection<T, S, F> {
    fn drop(&mut self) {
        // Bodies still held elsewhere end with an error rather than wait.
        self.link
            .update(|core| core.close("the HTTP/2 connection ended"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A stream that holds `state` and ends at its second poll.
    fn stream(state: Arc<()>) -> impl Future<Output = ()> {
        let mut yielded = false;
        std::future::poll_fn(move |cx| {
            let _ = &state;
            if std::mem::replace(&mut yielded, true) {
                Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        })
    }

    #[test]
    fn a_finished_stream_gives_back_its_box_empty_and_a_later_stream_fills_it_in_place() {
        let held = Arc::new(());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut running = Running {
            slot: Some(Box::pin(Some(stream(held.clone())))),
        };
        assert!(Pin::new(&mut running).poll(&mut cx).is_pending());
        assert_eq!(Arc::strong_count(&held), 2, "the stream holds its state");
        let Poll::Ready(Some(mut slot)) = Pin::new(&mut running).poll(&mut cx) else {
            panic!("a finished stream gives back its slot");
        };
        assert!(slot.is_none(), "emptied");
        assert_eq!(Arc::strong_count(&held), 1, "its state dropped at its end");
        let at = std::ptr::from_ref(&*slot);
        slot.set(Some(stream(held.clone())));
        assert_eq!(
            std::ptr::from_ref(&*slot),
            at,
            "the next stream in the same box"
        );
        let mut running = Running { slot: Some(slot) };
        assert!(Pin::new(&mut running).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut running).poll(&mut cx).is_ready());
        assert_eq!(Arc::strong_count(&held), 1);
    }
}
