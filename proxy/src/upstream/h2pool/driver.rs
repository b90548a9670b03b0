//! One pool connection's task: it owns the socket, writes what the streams queued in the
//! connection's output, reads frames and hands their events to the streams (`dispatch`), and
//! while streams are open checks that the server still answers: after a silence of `interval`
//! a PING, and no answer within `timeout` ends the connection, failing its streams at once
//! instead of at their response timeout. Idle connections are not probed: gRPC servers count
//! PINGs without calls as abuse, and an idle connection costs nothing when dead.
//!
//! It ends when the server closes or breaks the protocol, when a PING goes unanswered, or when
//! the pool let the connection go and its last stream ended (GOAWAY, then close).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant, Sleep};

use super::dispatch::{deliver, Seen};
use super::error::ConnEnd;
use super::link::Link;
use super::signals::Signals;
use crate::h2link::{write_out, Inbound};
use crate::h2wire::client::Event;
use crate::h2wire::frame::ErrorCode;

/// The PING schedule (`Http2PoolSpec::keepalive_interval`, `keepalive_timeout`).
#[derive(Clone, Copy)]
pub struct KeepAlive {
    pub interval: Duration,
    pub timeout: Duration,
}

/// Unwritten output past which the driver stops reading: every frame read may queue an
/// answer (SETTINGS and PING acknowledgements), and a server that does not read must not
/// make them pile up (RFC 9113 §10.5).
const MAX_UNWRITTEN: usize = 1 << 20;
/// Reads and writes in one poll before the driver yields to other tasks.
const TURNS: usize = 32;

pub struct Driver<T> {
    io: T,
    link: Arc<Link>,
    signals: Arc<Signals>,
    /// Bytes read and not yet taken as frames.
    inbound: Inbound,
    /// Output taken from the connection and not yet written.
    write: Vec<u8>,
    flush: bool,
    events: Vec<Event>,
    /// Reads that brought bytes: a PING goes only after a silence.
    reads: u64,
    probe: Option<Probe>,
    /// GOAWAY is queued: close once it is written.
    closing: bool,
}

struct Probe {
    keepalive: KeepAlive,
    timer: Pin<Box<Sleep>>,
    reads_seen: u64,
    /// A PING is out and the timer is its deadline.
    awaiting: bool,
    sent: u64,
}

impl<T: AsyncRead + AsyncWrite + Unpin> Driver<T> {
    pub fn new(
        io: T,
        link: Arc<Link>,
        signals: Arc<Signals>,
        keepalive: Option<KeepAlive>,
    ) -> Self {
        Driver {
            io,
            link,
            signals,
            inbound: Inbound::new(),
            write: Vec::new(),
            flush: false,
            events: Vec::new(),
            reads: 0,
            probe: keepalive.map(|keepalive| Probe {
                keepalive,
                timer: Box::pin(tokio::time::sleep(keepalive.interval)),
                reads_seen: 0,
                awaiting: false,
                sent: 0,
            }),
            closing: false,
        }
    }

    /// Runs the connection until it ends; `Err` says why it ended.
    fn turn(&mut self, cx: &mut Context<'_>) -> Result<Poll<()>, ConnEnd> {
        self.poll_probe(cx)?;
        for _ in 0..TURNS {
            let wrote = self.write_out(cx)?;
            if self.closing && self.write.is_empty() && !self.flush {
                return match Pin::new(&mut self.io).poll_shutdown(cx) {
                    Poll::Pending => Ok(Poll::Pending),
                    Poll::Ready(_) => Ok(Poll::Ready(())),
                };
            }
            let read = self.read_in(cx)?;
            if !wrote && !read {
                return Ok(Poll::Pending);
            }
        }
        // Still busy: let other tasks run, and come back.
        cx.waker().wake_by_ref();
        Ok(Poll::Pending)
    }

    /// Takes the connection's output when what was taken before is written, and writes it.
    /// True if anything went out.
    fn write_out(&mut self, cx: &mut Context<'_>) -> Result<bool, ConnEnd> {
        if self.write.is_empty() {
            let mut inner = self.link.lock();
            std::mem::swap(&mut self.write, inner.conn.output());
            if !self.closing && self.link.is_abandoned() && inner.streams.is_empty() {
                // The pool let it go and its last stream ended.
                inner.conn.go_away(ErrorCode::NO_ERROR);
                self.write.append(inner.conn.output());
                self.closing = true;
            }
            // In the same lock as the look at the output: what a stream adds later wakes us.
            inner.register_driver(cx.waker());
        }
        let wrote = write_out(&mut self.io, &mut self.write, cx).map_err(|e| closed(&e))? > 0;
        self.flush |= wrote;
        if self.flush && self.write.is_empty() {
            match Pin::new(&mut self.io).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.flush = false,
                Poll::Ready(Err(err)) => return Err(closed(&err)),
                Poll::Pending => {}
            }
        }
        Ok(wrote)
    }

    /// Reads what the socket has and hands its frames to the connection. True if anything
    /// was read.
    fn read_in(&mut self, cx: &mut Context<'_>) -> Result<bool, ConnEnd> {
        if self.write.len() > MAX_UNWRITTEN {
            return Ok(false);
        }
        match self.inbound.poll_read(&mut self.io, cx) {
            Poll::Pending => Ok(false),
            Poll::Ready(Err(err)) => Err(closed(&err)),
            Poll::Ready(Ok(0)) => Err(closed(&"the server closed the connection")),
            Poll::Ready(Ok(_)) => {
                self.reads += 1;
                self.frames()?;
                Ok(true)
            }
        }
    }

    /// The whole frames read so far, through the connection to the streams.
    fn frames(&mut self) -> Result<(), ConnEnd> {
        let mut inner = self.link.lock();
        let received = inner.conn.receive(self.inbound.filled(), &mut self.events);
        // The events before an error stand; their ranges index what was read.
        let used = match received {
            Ok(used) => used,
            Err(_) => self.inbound.filled().len(),
        };
        let frames = self.inbound.consume(used);
        let mut answered = false;
        for event in self.events.drain(..) {
            answered |= deliver(&mut inner, event, &frames, &self.signals) == Seen::PingAck;
        }
        if let Err(error) = received {
            tracing::debug!(%error, "upstream h2 connection broke the protocol");
            return Err(ConnEnd::Protocol(error));
        }
        drop(inner);
        if answered {
            if let Some(probe) = self.probe.as_mut() {
                probe.awaiting = false;
                probe.reads_seen = self.reads;
                let next = Instant::now() + probe.keepalive.interval;
                probe.timer.as_mut().reset(next);
            }
        }
        Ok(())
    }

    /// The keep-alive: a PING after a silence while streams are open, and its deadline.
    fn poll_probe(&mut self, cx: &mut Context<'_>) -> Result<(), ConnEnd> {
        let Some(probe) = self.probe.as_mut() else {
            return Ok(());
        };
        while probe.timer.as_mut().poll(cx).is_ready() {
            if probe.awaiting {
                tracing::debug!(
                    timeout = ?probe.keepalive.timeout,
                    "upstream h2 connection did not answer PING: closing it"
                );
                return Err(ConnEnd::Silent);
            }
            let silent = self.reads == probe.reads_seen;
            probe.reads_seen = self.reads;
            let mut inner = self.link.lock();
            let active = inner.conn.active_streams() > 0;
            if !active {
                // Idle: the read buffer and the section buffer go until the next bytes come.
                self.inbound.settle();
                inner.conn.quiet();
            }
            let next = if silent && active {
                probe.sent += 1;
                inner.conn.ping(probe.sent.to_be_bytes());
                probe.awaiting = true;
                probe.keepalive.timeout
            } else {
                probe.keepalive.interval
            };
            drop(inner);
            probe.timer.as_mut().reset(Instant::now() + next);
        }
        Ok(())
    }

    /// The connection ended: its streams fail with `why`, and what is queued (a GOAWAY after
    /// a protocol error) goes out if the socket takes it now.
    fn finish(&mut self, cx: &mut Context<'_>, why: ConnEnd) {
        let mut inner = self.link.lock();
        inner.end(why);
        self.write.append(inner.conn.output());
        drop(inner);
        if !self.write.is_empty() && !matches!(why, ConnEnd::Closed) {
            let _ = Pin::new(&mut self.io).poll_write(cx, &self.write);
        }
    }
}

fn closed(why: &dyn std::fmt::Display) -> ConnEnd {
    tracing::debug!(%why, "upstream h2 connection closed");
    ConnEnd::Closed
}

impl<T: AsyncRead + AsyncWrite + Unpin> Future for Driver<T> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        match this.turn(cx) {
            Ok(polled) => polled,
            Err(why) => {
                this.finish(cx, why);
                Poll::Ready(())
            }
        }
    }
}

impl<T> Drop for Driver<T> {
    fn drop(&mut self) {
        // However it ended (or the runtime dropped it), no stream waits on it any more and
        // the pool opens no stream on it.
        self.link.lock().end(ConnEnd::Closed);
        self.signals.close();
    }
}
