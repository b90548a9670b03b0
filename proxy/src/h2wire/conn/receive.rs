//! Received bytes to frames, each to its handler; and how a refusal found on the way becomes
//! a stream error or a connection error (§5.4).

use super::super::common::ConnError;
use super::super::frame::{
    flag, next_frame, refuse_push_promise, write_goaway, write_rst_stream, ErrorCode, FrameError,
    Head, Kind, Scope, PREFACE,
};
use super::super::stream::{Half, Refused};
use super::error::{calm, conn, conn_of, Step};
use super::role::{Role, Shared};
use super::streams::Slot;
use super::Conn;

impl<R: Role> Conn<R> {
    /// Takes the peer's preface if one is due (a client's 24 octets, §3.4), then the whole
    /// frames at the start of `buf`, appending what they say to `events` and queuing what they
    /// call for (SETTINGS and PING acknowledgements, WINDOW_UPDATE, RST_STREAM) in the output.
    /// Returns the octets consumed: the owner keeps the rest, an incomplete frame, for the next
    /// call. `Event::Data` ranges index `buf`.
    ///
    /// A connection error queues GOAWAY and is returned, now and on every later call; the
    /// events before it stand. `buf` must have room for a frame of `Config::max_frame_size`
    /// plus its 9-octet head, or the connection cannot progress.
    pub fn receive(&mut self, buf: &[u8], events: &mut Vec<R::Event>) -> Result<usize, ConnError> {
        if let Some(failed) = self.failed {
            return Err(failed);
        }
        let mut used = 0;
        if self.preface_due {
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
            self.preface_due = false;
            used = n;
        }
        while let Some(rest) = buf.get(used..) {
            let (head, range) = match next_frame(rest, self.limits.max_frame_size) {
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
    fn frame(
        &mut self,
        head: &Head,
        payload: &[u8],
        at: usize,
        events: &mut Vec<R::Event>,
    ) -> Step {
        if self.out.len() > self.limits.max_queued_output {
            // §10.5: the peer keeps sending but reads nothing of what it is owed.
            return Err(calm("the client does not read this side's output (§10.5)"));
        }
        if self.pending.is_some() && head.kind != Kind::Continuation {
            // §6.10: a field block is one HEADERS and its CONTINUATIONs, nothing between.
            let why = "a frame other than CONTINUATION inside a field block (§6.10)";
            return Err(conn(ErrorCode::PROTOCOL_ERROR, why));
        }
        if !self.settled && (head.kind != Kind::Settings || head.has(flag::ACK)) {
            // §3.4: the peer's preface is a SETTINGS frame, its first frame.
            return Err(conn(ErrorCode::PROTOCOL_ERROR, R::FIRST_NOT_SETTINGS));
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
            // A client sent ENABLE_PUSH = 0, and a client cannot push (§8.4).
            Kind::PushPromise => Err(conn_of(refuse_push_promise(head))),
            // §5.5: unknown types are ignored (between field block frames they were refused).
            Kind::Unknown(_) => Ok(()),
        }
    }

    /// One more empty frame; past `Limits::max_empty_frames`, the connection ends.
    pub(crate) fn empty_frame(&mut self) -> Step {
        self.empty_frames = self.empty_frames.saturating_add(1);
        if self.empty_frames > self.limits.max_empty_frames {
            return Err(calm("too many empty frames (§10.5)"));
        }
        Ok(())
    }

    /// A frame parser's refusal, by its scope.
    pub(crate) fn frame_error(&mut self, e: FrameError, events: &mut Vec<R::Event>) -> Step {
        self.scoped(e.scope, e.code, e.why, events)
    }

    /// A stream state's refusal, by its scope.
    pub(crate) fn refused(&mut self, r: Refused, events: &mut Vec<R::Event>) -> Step {
        self.scoped(r.scope, r.code, r.why, events)
    }

    fn scoped(
        &mut self,
        scope: Scope,
        code: ErrorCode,
        why: &'static str,
        events: &mut Vec<R::Event>,
    ) -> Step {
        match scope {
            Scope::Connection => Err(conn(code, why)),
            Scope::Stream(id) => self.stream_error(id, code, why, events),
        }
    }

    /// A stream error on stream `id`: reset if open; on a stream never opened a connection
    /// error (§5.1 "idle": no RST_STREAM may go there, §6.4); on a closed one, nothing (§5.1
    /// "closed": none may go there either, and the frame is dropped).
    pub(crate) fn stream_error(
        &mut self,
        id: u32,
        code: ErrorCode,
        why: &'static str,
        events: &mut Vec<R::Event>,
    ) -> Step {
        if self.streams.contains_key(&id) {
            self.reset_stream(id, code, why, events)
        } else {
            self.untracked(id, R::UNOPENED)
        }
    }

    /// A frame on a stream no longer in the map: on one never opened, the connection error
    /// `why` (§5.1 "idle"); on one closed, nothing, and the frame is dropped (§5.1 "closed": it
    /// crossed this side's END_STREAM or RST_STREAM).
    pub(crate) fn untracked(&self, id: u32, why: &'static str) -> Step {
        if self.ids.is_idle(id) {
            return Err(conn(ErrorCode::PROTOCOL_ERROR, why));
        }
        Ok(())
    }

    /// A stream error (§5.4.2) for the peer's error: RST_STREAM with `code`, the stream
    /// forgotten, the owner told why. Nothing for a stream no longer tracked: none may be
    /// sent on a closed one (§5.1).
    pub(crate) fn reset_stream(
        &mut self,
        id: u32,
        code: ErrorCode,
        why: &'static str,
        events: &mut Vec<R::Event>,
    ) -> Step {
        let Some(slot) = self.remove(id) else {
            return Ok(());
        };
        R::count_reset(self)?;
        self.send_reset(id, slot, code);
        events.push(Shared::Reset { id, code, why }.into());
        Ok(())
    }

    /// RST_STREAM with `code` on stream `id`, just taken out of the map.
    pub(crate) fn send_reset(&mut self, id: u32, mut slot: Slot, code: ErrorCode) {
        let peer_open = slot.stream.recv_half() != Half::Ended;
        if slot.stream.send_reset().is_ok() {
            write_rst_stream(&mut self.out, id, code);
            R::reset_sent(self, id, peer_open);
        }
    }

    /// A connection error (§5.4.1): GOAWAY with `code` and the last stream the peer opened
    /// (0 for a client: a server opens none), and every stream forgotten. The first error is
    /// kept and returned from then on.
    pub(crate) fn fail(&mut self, error: ConnError) -> ConnError {
        if let Some(first) = self.failed {
            return first;
        }
        let last = self.ids.highest_remote();
        write_goaway(&mut self.out, last, error.code, error.why.as_bytes());
        self.failed = Some(error);
        self.pending = None;
        let open = self.streams.len();
        self.streams.clear();
        for _ in 0..open {
            self.count_closed();
        }
        error
    }
}
