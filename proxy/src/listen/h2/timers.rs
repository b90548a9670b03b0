//! A client connection's clocks: its preface and SETTINGS are due within the head timeout from
//! accept (like an HTTP/1 client's first head); then a PING every `keepalive`, the connection
//! dropped when no PONG comes within `PONG_TIMEOUT` (a peer gone without a FIN); and with no
//! stream for `idle_timeout` (counted in `keepalive` ticks: between one and one and a half
//! times it), GOAWAY.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::time::{Interval, MissedTickBehavior, Sleep};

use super::H2Settings;

/// How long a PING may go unanswered.
const PONG_TIMEOUT: Duration = Duration::from_secs(20);

/// What the clocks found.
#[derive(Debug, PartialEq, Eq)]
pub enum Due {
    /// `ping`: a PING to send with this opaque data; `quiet`: a tick passed with no stream;
    /// `idle`: no stream for the idle timeout, GOAWAY.
    Tick {
        ping: Option<[u8; 8]>,
        quiet: bool,
        idle: bool,
    },
    /// The preface or the first SETTINGS did not come in time.
    Head,
    /// The PONG did not come in time.
    Dead,
}

const NOTHING: Due = Due::Tick {
    ping: None,
    quiet: false,
    idle: false,
};

pub struct Timers {
    /// Until the client's SETTINGS came.
    head: Option<Pin<Box<Sleep>>>,
    keepalive: Duration,
    /// Made when the client's SETTINGS came.
    tick: Option<Interval>,
    /// A PING is out with this opaque data; its PONG is due when the sleep fires.
    pong: Option<([u8; 8], Pin<Box<Sleep>>)>,
    pings: u64,
    idle_ticks: u32,
    idle_ticks_limit: u32,
    /// A stream was opened since the last tick.
    opened: bool,
}

impl Timers {
    /// `accepted`: when the TCP connection was accepted (the preface is due from then).
    pub fn new(settings: &H2Settings, accepted: Instant) -> Self {
        let due = tokio::time::Instant::from_std(accepted + settings.head_timeout);
        let ticks = settings.idle_timeout.as_nanos() / settings.keepalive.as_nanos().max(1);
        Timers {
            head: Some(Box::pin(tokio::time::sleep_until(due))),
            keepalive: settings.keepalive,
            tick: None,
            pong: None,
            pings: 0,
            idle_ticks: 0,
            idle_ticks_limit: u32::try_from(ticks).unwrap_or(u32::MAX).max(1),
            opened: false,
        }
    }

    /// The client's SETTINGS came: the head timeout is over, the keepalive starts.
    fn settled(&mut self) {
        self.head = None;
        let start = tokio::time::Instant::now() + self.keepalive;
        let mut tick = tokio::time::interval_at(start, self.keepalive);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        self.tick = Some(tick);
    }

    /// A stream was opened.
    pub fn opened(&mut self) {
        self.opened = true;
    }

    /// A PONG came: the one awaited, if its data matches.
    pub fn pong(&mut self, opaque: [u8; 8]) {
        if self.pong.as_ref().is_some_and(|(sent, _)| *sent == opaque) {
            self.pong = None;
        }
    }

    /// `settled`: the client's SETTINGS came; `busy`: streams are open.
    pub fn poll(&mut self, cx: &mut Context<'_>, settled: bool, busy: bool) -> Due {
        if let Some(head) = self.head.as_mut() {
            if !settled {
                return match head.as_mut().poll(cx) {
                    Poll::Ready(()) => Due::Head,
                    Poll::Pending => NOTHING,
                };
            }
            self.settled();
        }
        if let Some((_, due)) = self.pong.as_mut() {
            if due.as_mut().poll(cx).is_ready() {
                return Due::Dead;
            }
        }
        let Some(tick) = self.tick.as_mut() else {
            return NOTHING;
        };
        let (mut ping, mut quiet, mut idle) = (None, false, false);
        while tick.poll_tick(cx).is_ready() {
            if busy || std::mem::take(&mut self.opened) {
                self.idle_ticks = 0;
            } else {
                self.idle_ticks += 1;
                quiet = true;
                idle |= self.idle_ticks >= self.idle_ticks_limit;
            }
            if self.pong.is_none() {
                self.pings += 1;
                let opaque = self.pings.to_be_bytes();
                let mut due = Box::pin(tokio::time::sleep(PONG_TIMEOUT));
                // Polled once so that it wakes this task.
                let _ = due.as_mut().poll(cx);
                self.pong = Some((opaque, due));
                ping = Some(opaque);
            }
        }
        Due::Tick { ping, quiet, idle }
    }
}
