//! Received bytes to frames, each to its handler; and how a refusal found on the way becomes
//! a stream error or a connection error (§5.4).

use super::super::frame::{
    flag, next_frame, refuse_push_promise, write_goaway, ErrorCode, FrameError, Head, Kind, Scope,
};
use super::super::stream::Refused;
use super::events::{ConnError, Event};
use super::ClientConn;

/// What handling one frame came to: `Err` is a connection error, not yet sent.
pub(super) type Step = Result<(), ConnError>;

/// A connection error of `code`.
pub(super) fn conn(code: ErrorCode, why: &'static str) -> ConnError {
    ConnError { code, why }
}

/// A frame parser's refusal of connection scope.
pub(super) fn conn_of(e: FrameError) -> ConnError {
    conn(e.code, e.why)
}

impl ClientConn {
    /// Takes the whole frames at the start of `buf`, appending what they say to `events` and
    /// queuing what they call for (SETTINGS and PING acknowledgements, WINDOW_UPDATE,
    /// RST_STREAM) in the output. Returns the octets consumed: the owner keeps the rest, an
    /// incomplete frame, for the next call. `Event::Data` ranges index `buf`.
    ///
    /// A connection error queues GOAWAY and is returned, now and on every later call; the
    /// events before it stand. `buf` must have room for a frame of `Config::max_frame_size`
    /// plus its 9-octet head, or the connection cannot progress.
    pub fn receive(&mut self, buf: &[u8], events: &mut Vec<Event>) -> Result<usize, ConnError> {
        if let Some(failed) = self.failed {
            return Err(failed);
        }
        let mut used = 0;
        while let Some(rest) = buf.get(used..) {
            let (head, range) = match next_frame(rest, self.config.max_frame_size) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                // Above this side's SETTINGS_MAX_FRAME_SIZE: a connection error even where
                // §4.2 would allow a stream error (see the module's comment).
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
        if self.pending.is_some() && head.kind != Kind::Continuation {
            // §6.10: a field block is one HEADERS and its CONTINUATIONs, nothing between.
            let why = "a frame other than CONTINUATION inside a field block (§6.10)";
            return Err(conn(ErrorCode::PROTOCOL_ERROR, why));
        }
        if !self.settled && (head.kind != Kind::Settings || head.has(flag::ACK)) {
            // §3.4: the server's preface is a SETTINGS frame, its first frame.
            let why = "the server's first frame is not SETTINGS (§3.4)";
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
            // This side sent ENABLE_PUSH = 0 (§8.4).
            Kind::PushPromise => Err(conn_of(refuse_push_promise(head))),
            // §5.5: unknown types are ignored (between field block frames they were refused).
            Kind::Unknown(_) => Ok(()),
        }
    }

    /// A frame parser's refusal, by its scope.
    pub(super) fn frame_error(&mut self, e: FrameError, events: &mut Vec<Event>) -> Step {
        self.scoped(e.scope, e.code, e.why, events)
    }

    /// A stream state's refusal, by its scope.
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
            Scope::Stream(id) => self.stream_error(id, code, why, events),
        }
    }

    /// A stream error on stream `id`: reset if open; on a stream never opened a connection
    /// error (§5.1 "idle": no RST_STREAM may go there, §6.4); on a closed one, nothing (§5.1
    /// "closed": none may go there either, and the frame is dropped).
    pub(super) fn stream_error(
        &mut self,
        id: u32,
        code: ErrorCode,
        why: &'static str,
        events: &mut Vec<Event>,
    ) -> Step {
        if self.streams.contains_key(&id) {
            self.reset_stream(id, code, why, events);
            Ok(())
        } else {
            self.untracked(id, "a frame on a stream this side has not opened (§5.1)")
        }
    }

    /// A frame on a stream no longer in the map: on one never opened, the connection error
    /// `why` (§5.1 "idle"); on one closed, nothing, and the frame is dropped (§5.1 "closed": it
    /// crossed this side's END_STREAM or RST_STREAM).
    pub(super) fn untracked(&self, id: u32, why: &'static str) -> Step {
        if self.ids.is_idle(id) {
            return Err(conn(ErrorCode::PROTOCOL_ERROR, why));
        }
        Ok(())
    }

    /// A stream error (§5.4.2): RST_STREAM with `code`, the stream forgotten, the owner told
    /// why. Nothing for a stream no longer tracked: none may be sent on a closed one (§5.1).
    pub(super) fn reset_stream(
        &mut self,
        id: u32,
        code: ErrorCode,
        why: &'static str,
        events: &mut Vec<Event>,
    ) {
        if self.streams.contains_key(&id) {
            self.reset(id, code);
            let why = Some(why);
            let refused = false;
            events.push(Event::Reset {
                id,
                code,
                refused,
                why,
            });
        }
    }

    /// A connection error (§5.4.1): GOAWAY with `code`, and every stream forgotten. The first
    /// error is kept and returned from then on.
    pub(super) fn fail(&mut self, error: ConnError) -> ConnError {
        if let Some(first) = self.failed {
            return first;
        }
        write_goaway(&mut self.out, 0, error.code, error.why.as_bytes());
        self.failed = Some(error);
        self.pending = None;
        for _ in self.streams.drain() {
            self.concurrency.close_local();
        }
        error
    }
}
