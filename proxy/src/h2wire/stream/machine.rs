//! One stream's state machine (RFC 9113 §5.1), kept as two directions and a reset.

use super::super::frame::ErrorCode;
use super::error::{Misuse, Refused};
use super::half::Half;
use super::state::{ClosedBy, Recv, State};

/// One stream's state, kept as the two directions of §8.1 ([`Half`]) and whether either side
/// reset it, rather than as §5.1's five states: the directions also say what §5.1 does not —
/// whether the head has come, so that a second HEADERS is known for trailers — and the five
/// states follow from them ([`state`](Self::state)). Send methods take this side's frames and
/// answer [`Misuse`] for a frame the state forbids; receive methods take the peer's and answer
/// the [`Refused`] error §5.1 and §8.1 name, after which the engine sends GOAWAY (connection
/// scope) or RST_STREAM and [`send_reset`](Self::send_reset) (stream scope).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream {
    id: u32,
    /// This side opens it (its HEADERS come first), rather than the peer.
    local: bool,
    send: Half,
    recv: Half,
    /// `LocalReset` or `RemoteReset` once either side sent RST_STREAM; never `EndStream`.
    reset: Option<ClosedBy>,
}

impl Stream {
    /// A stream this side will open with its HEADERS (`StreamIds::open_local` gave `id`).
    pub fn local(id: u32) -> Stream {
        Stream::new(id, true)
    }

    /// A stream the peer opens (`StreamIds::accept_remote` took `id`); its HEADERS come next.
    pub fn remote(id: u32) -> Stream {
        Stream::new(id, false)
    }

    fn new(id: u32, local: bool) -> Stream {
        Stream {
            id,
            local,
            send: Half::Idle,
            recv: Half::Idle,
            reset: None,
        }
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    /// §5.1's state.
    pub fn state(&self) -> State {
        match (self.reset, self.send, self.recv) {
            (Some(by), _, _) => State::Closed(by),
            (None, Half::Ended, Half::Ended) => State::Closed(ClosedBy::EndStream),
            (None, Half::Idle, Half::Idle) => State::Idle,
            (None, Half::Ended, _) => State::HalfClosedLocal,
            (None, _, Half::Ended) => State::HalfClosedRemote,
            (None, _, _) => State::Open,
        }
    }

    /// How far this side's message has gone.
    pub fn send_half(&self) -> Half {
        self.send
    }

    /// How far the peer's message has come.
    pub fn recv_half(&self) -> Half {
        self.recv
    }

    /// This side sends HEADERS: its head, or trailers (which must carry END_STREAM).
    pub fn send_headers(&mut self, end_stream: bool) -> Result<(), Misuse> {
        self.send_step(|half| half.headers(end_stream))
    }

    /// This side sends an informational (1xx) head, which never carries END_STREAM.
    pub fn send_informational(&mut self) -> Result<(), Misuse> {
        self.send_step(Half::informational)
    }

    pub fn send_data(&mut self, end_stream: bool) -> Result<(), Misuse> {
        self.send_step(|half| half.data(end_stream))
    }

    fn send_step(
        &mut self,
        step: impl FnOnce(Half) -> Result<Half, &'static str>,
    ) -> Result<(), Misuse> {
        if self.reset.is_some() {
            return Err(Misuse {
                why: "sending on a reset stream",
            });
        }
        if !self.local && self.state() == State::Idle {
            return Err(Misuse {
                why: "sending on a stream the peer has not opened",
            });
        }
        self.send = step(self.send).map_err(|why| Misuse { why })?;
        Ok(())
    }

    /// This side sends RST_STREAM. Not on an idle stream (§6.4) nor a closed one (§5.1: only
    /// PRIORITY may be sent there).
    pub fn send_reset(&mut self) -> Result<(), Misuse> {
        match self.state() {
            State::Idle => Err(Misuse {
                why: "RST_STREAM on an idle stream",
            }),
            State::Closed(_) => Err(Misuse {
                why: "RST_STREAM on a closed stream",
            }),
            _ => {
                self.reset = Some(ClosedBy::LocalReset);
                Ok(())
            }
        }
    }

    /// The peer's HEADERS, head or trailers. Decode its field block whatever this answers:
    /// HPACK state is the connection's (§4.3).
    pub fn recv_headers(&mut self, end_stream: bool) -> Result<Recv, Refused> {
        self.recv_step(false, |half| half.headers(end_stream))
    }

    /// The peer's informational (1xx) head. END_STREAM on one makes the response malformed
    /// (§8.1): a stream PROTOCOL_ERROR, though the direction has ended.
    pub fn recv_informational(&mut self, end_stream: bool) -> Result<Recv, Refused> {
        let got = self.recv_step(false, Half::informational)?;
        if end_stream && got == Recv::Process {
            self.recv = Half::Ended;
            let why = "an informational (1xx) head with END_STREAM (§8.1)";
            return Err(Refused::stream(self.id, ErrorCode::PROTOCOL_ERROR, why));
        }
        Ok(got)
    }

    /// The peer's DATA. Whatever this answers, the frame counts against the connection's
    /// window (§6.9).
    pub fn recv_data(&mut self, end_stream: bool) -> Result<Recv, Refused> {
        self.recv_step(true, |half| half.data(end_stream))
    }

    fn recv_step(
        &mut self,
        data: bool,
        step: impl FnOnce(Half) -> Result<Half, &'static str>,
    ) -> Result<Recv, Refused> {
        let state = self.state();
        if state == State::Idle {
            // §5.1 "idle": only HEADERS (and PRIORITY) may arrive, and not on a stream this
            // side initiates — the peer cannot open it.
            if self.local {
                let why = "a frame on a stream this side has not opened yet (§5.1)";
                return Err(Refused::connection(ErrorCode::PROTOCOL_ERROR, why));
            }
            if data {
                let why = "DATA on an idle stream (§5.1)";
                return Err(Refused::connection(ErrorCode::PROTOCOL_ERROR, why));
            }
        }
        if self.recv == Half::Ended {
            // The peer sends after its own END_STREAM. Half-closed (remote): a stream error
            // STREAM_CLOSED (§5.1). Closed: a connection error, since RST_STREAM may not be
            // sent on a closed stream (§5.1 "closed").
            let why = "a frame after the peer's END_STREAM (§5.1)";
            return Err(match state {
                State::Closed(_) => Refused::connection(ErrorCode::STREAM_CLOSED, why),
                _ => Refused::stream(self.id, ErrorCode::STREAM_CLOSED, why),
            });
        }
        match self.reset {
            // Sent before the peer saw this side's RST_STREAM: §5.1 "closed" says to process
            // minimally and drop. An engine that forgets reset streams after a while may treat
            // later frames on them as errors (§5.1 allows limiting the time).
            Some(ClosedBy::LocalReset) => return Ok(Recv::Ignore),
            Some(_) => {
                let why = "a frame after the peer's RST_STREAM (§5.1)";
                return Err(Refused::connection(ErrorCode::STREAM_CLOSED, why));
            }
            None => {}
        }
        // The state allows the frame; the message's order may not (§8.1.1: malformed).
        self.recv = step(self.recv)
            .map_err(|why| Refused::stream(self.id, ErrorCode::PROTOCOL_ERROR, why))?;
        Ok(Recv::Process)
    }

    /// The peer's WINDOW_UPDATE, which moves no state: a connection PROTOCOL_ERROR on an idle
    /// stream (§5.1 "idle"), ignored on a closed one (it may have crossed this side's
    /// END_STREAM or RST_STREAM, §5.1 "closed"), to apply to the send window otherwise —
    /// half-closed (remote) included, since this side still sends there.
    pub fn recv_window_update(&self) -> Result<Recv, Refused> {
        match self.state() {
            State::Idle => {
                let why = "WINDOW_UPDATE on an idle stream (§5.1)";
                Err(Refused::connection(ErrorCode::PROTOCOL_ERROR, why))
            }
            State::Closed(_) => Ok(Recv::Ignore),
            _ => Ok(Recv::Process),
        }
    }

    /// The peer's RST_STREAM. On an idle stream a connection PROTOCOL_ERROR (§6.4); on a
    /// closed one ignored: it crossed this side's END_STREAM or RST_STREAM (§5.1 "closed").
    pub fn recv_reset(&mut self) -> Result<Recv, Refused> {
        match self.state() {
            State::Idle => {
                let why = "RST_STREAM on an idle stream (§6.4)";
                Err(Refused::connection(ErrorCode::PROTOCOL_ERROR, why))
            }
            State::Closed(_) => Ok(Recv::Ignore),
            _ => {
                self.reset = Some(ClosedBy::RemoteReset);
                Ok(Recv::Process)
            }
        }
    }
}
