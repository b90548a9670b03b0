//! Received bytes to the preface and frames, each to its handler; how a refusal found on the
//! way becomes a stream error or a connection error (§5.4); and the connection-wide bounds.

use super::super::frame::{
    flag, next_frame, refuse_push_promise, write_goaway, write_rst_stream, ErrorCode, FrameError,
    Head, Kind, Scope, PREFACE,
};
use super::super::stream::{Half, Refused};
use super::events::{ConnError, Event};
use super::ServerConn;

/// What handling one frame came to: `Err` is a connection error, not yet sent.
pub(super) type Step = Result<(), ConnError>;

/// How many streams reset by this side are remembered (`remember_reset`): five times
/// weir's default MAX_CONCURRENT_STREAMS.
const RESET_MEMORY: usize = 1_024;

/// A connection error of `code`.
pub(super) fn conn(code: ErrorCode, why: &'static str) -> ConnError {
    ConnError { code, why }
}

/// A frame parser's refusal of connection scope.
pub(super) fn conn_of(e: FrameError) -> ConnError {
    conn(e.code, e.why)
}

/// A bound of §10.5 passed.
pub(super) fn calm(why: &'static str) -> ConnError {
    conn(ErrorCode::ENHANCE_YOUR_CALM, why)
}

impl ServerConn {
    /// Takes the client's preface, then the whole frames at the start of `buf`, appending what
    /// they say to `events` and queuing what they call for in the output. Returns the octets
    /// consumed: the owner keeps the rest for the next call. `Event::Data` ranges index `buf`.
    ///
    /// A connection error queues GOAWAY and is returned, now and on every later call; the
    /// events before it stand. `buf` must have room for a frame of `Config::max_frame_size`
    /// plus its 9-octet head.
    pub fn receive(&mut self, buf: &[u8], events: &mut Vec<Event>) -> Result<usize, ConnError> {
        if let Some(failed) = self.failed {
            return Err(failed);
        }
        let mut used = 0;
        if !self.preface {
            // §3.4: the client's preface; anything else is a connection PROTOCOL_ERROR, found
            // as soon as an octet differs.
            let n = buf.len().min(PREFACE.len());
            if buf.get(..n) != PREFACE.get(..n) {
                let why = "the client's preface is not PRI * HTTP/2.0 (§3.4)";
                return Err(self.fail(conn(ErrorCode::PROTOCOL_ERROR, why)));
            }
            if n < PREFACE.len() {
                return Ok(0);
            }
            self.preface = true;
            used = n;
        }
        while let Some(rest) = buf.get(used..) {
            let (head, range) = match next_frame(rest, self.config.max_frame_size) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => return Err(self.fail(conn_of(e))),
            };
            let (start, end) = (used + range.start, used + range.end);
            let payload = buf.get(start..end).unwrap_or_default();
            if let Err(e) = self.frame(&head, payload, start, events) {
                return Err(self.fail(e));
            }
            used = end;
        }
        Ok(used)
    }

    /// One frame; `at` is where its payload starts in the buffer given to `receive`.
    fn frame(&mut self, head: &Head, payload: &[u8], at: usize, events: &mut Vec<Event>) -> Step {
        if self.out.len() > self.config.max_queued_output {
            // §10.5: the client keeps sending but reads nothing of what it is owed.
            return Err(calm("the client does not read this side's output (§10.5)"));
        }
        if self.pending.is_some() && head.kind != Kind::Continuation {
            let why = "a frame other than CONTINUATION inside a field block (§6.10)";
            return Err(conn(ErrorCode::PROTOCOL_ERROR, why));
        }
        if !self.settled && (head.kind != Kind::Settings || head.has(flag::ACK)) {
            let why = "the client's first frame is not SETTINGS (§3.4)";
            return Err(conn(ErrorCode::PROTOCOL_ERROR, why));
        }
        match head.kind {
            Kind::Data => self.data(head, payload, at, events),
            Kind::Headers => self.headers(head, payload, events),
            Kind::Continuation => self.continuation(head, payload, events),
            Kind::Settings => self.settings(head, payload, events),
            Kind::Ping => self.ping_frame(head, payload, events),
            Kind::GoAway => self.goaway(head, payload, events),
            Kind::RstStream => self.rst_stream(head, payload, events),
            Kind::WindowUpdate => self.window_update(head, payload, events),
            Kind::Priority => self.priority(head, payload, events),
            // §8.4: a client cannot push.
            Kind::PushPromise => Err(conn_of(refuse_push_promise(head))),
            Kind::Unknown(_) => Ok(()),
        }
    }

    /// One more empty frame; past `Config::max_empty_frames`, the connection ends.
    pub(super) fn empty_frame(&mut self) -> Step {
        self.empty_frames = self.empty_frames.saturating_add(1);
        if self.empty_frames > self.config.max_empty_frames {
            return Err(calm("too many empty frames (§10.5)"));
        }
        Ok(())
    }

    pub(super) fn frame_error(&mut self, e: FrameError, events: &mut Vec<Event>) -> Step {
        self.scoped(e.scope, e.code, e.why, events)
    }

    pub(super) fn refused(&mut self, r: Refused, events: &mut Vec<Event>) -> Step {
        self.scoped(r.scope, r.code, r.why, events)
    }

    fn scoped(
        &mut self,
        scope: Scope,
        code: ErrorCode,
        why: &'static str,
        events: &mut Vec<Event>,
    ) -> Step {
        match scope {
            Scope::Connection => Err(conn(code, why)),
            Scope::Stream(id) if self.streams.contains_key(&id) => {
                self.reset_stream(id, code, why, events)
            }
            Scope::Stream(id) => self.untracked(id, "a frame on an idle stream (§5.1)"),
        }
    }

    /// A frame other than HEADERS on a stream not in the map: on one never opened, the
    /// connection error `why` (§5.1 "idle"); on one closed, nothing (§5.1 "closed").
    pub(super) fn untracked(&self, id: u32, why: &'static str) -> Step {
        if self.ids.is_idle(id) {
            return Err(conn(ErrorCode::PROTOCOL_ERROR, why));
        }
        Ok(())
    }

    /// A stream error (§5.4.2) on a tracked stream for the client's error: RST_STREAM, the
    /// stream forgotten, the owner told why.
    pub(super) fn reset_stream(
        &mut self,
        id: u32,
        code: ErrorCode,
        why: &'static str,
        events: &mut Vec<Event>,
    ) -> Step {
        let client_open = match self.streams.remove(&id) {
            Some(slot) => {
                self.concurrency.close_remote();
                slot.stream.recv_half() != Half::Ended
            }
            None => return Ok(()),
        };
        self.refuse(id, client_open, code, why, events)
    }

    /// RST_STREAM on stream `id` for the client's error, tracked or not (a stream refused
    /// before it was opened): counted against `Config::max_local_resets`, and remembered while
    /// the client may still send on it.
    pub(super) fn refuse(
        &mut self,
        id: u32,
        client_open: bool,
        code: ErrorCode,
        why: &'static str,
        events: &mut Vec<Event>,
    ) -> Step {
        self.count_local_reset()?;
        write_rst_stream(&mut self.out, id, code);
        if client_open {
            self.remember_reset(id);
        }
        let why = Some(why);
        events.push(Event::Reset { id, code, why });
        Ok(())
    }

    /// One more stream this side refused for the client's error; past
    /// `Config::max_local_resets`, the connection ends. "MadeYouReset": each reset frees a slot
    /// of MAX_CONCURRENT_STREAMS while the work the stream started may go on, so the limit
    /// alone bounds nothing; past the bound the client is not a mistaken one.
    pub(super) fn count_local_reset(&mut self) -> Step {
        self.local_resets = self.local_resets.saturating_add(1);
        if self.local_resets > self.config.max_local_resets {
            return Err(calm(
                "too many streams reset for the client's errors (§10.5)",
            ));
        }
        Ok(())
    }

    /// Remembers a stream this side reset while the client could still send on it, so that
    /// frames crossing the RST_STREAM are dropped, not refused (§5.1 "closed"). The oldest
    /// is forgotten past `RESET_MEMORY`: §5.1 lets an endpoint limit how long it does this.
    pub(super) fn remember_reset(&mut self, id: u32) {
        if self.reset_ids.len() >= RESET_MEMORY {
            self.reset_ids.pop_front();
        }
        self.reset_ids.push_back(id);
    }

    /// A connection error (§5.4.1): GOAWAY with `code` and the last stream accepted, every
    /// stream forgotten. The first error is kept and returned from then on.
    pub(super) fn fail(&mut self, error: ConnError) -> ConnError {
        if let Some(first) = self.failed {
            return first;
        }
        let last = self.ids.highest_remote();
        write_goaway(&mut self.out, last, error.code, error.why.as_bytes());
        self.failed = Some(error);
        self.pending = None;
        for _ in self.streams.drain() {
            self.concurrency.close_remote();
        }
        error
    }
}
