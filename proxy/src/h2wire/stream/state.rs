//! The states of RFC 9113 §5.1, as a [`Stream`](super::Stream) reports them, and what a
//! received frame's answer tells the engine to do.

/// The states of §5.1's diagram, less the two reserved ones (weir never pushes and refuses
/// PUSH_PROMISE, so no stream is ever reserved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Idle,
    Open,
    /// This side sent END_STREAM; the peer may still send.
    HalfClosedLocal,
    /// The peer sent END_STREAM; this side may still send.
    HalfClosedRemote,
    Closed(ClosedBy),
}

impl State {
    /// Whether the stream counts against SETTINGS_MAX_CONCURRENT_STREAMS: open or half-closed
    /// (§5.1.2).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            State::Open | State::HalfClosedLocal | State::HalfClosedRemote
        )
    }
}

/// How a stream closed. The engine needs it for frames that arrive afterwards (§5.1 "closed"):
/// after this side's RST_STREAM the peer may have sent frames before it saw the reset, and
/// they must be processed minimally and dropped, not punished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClosedBy {
    /// Both sides sent END_STREAM.
    EndStream,
    /// This side sent RST_STREAM.
    LocalReset,
    /// The peer sent RST_STREAM.
    RemoteReset,
}

/// What the engine does with a received frame the state allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recv {
    /// Deliver it: the stream's state has moved.
    Process,
    /// Process it minimally and drop it (§5.1 "closed"): decode a field block to keep HPACK in
    /// step, count DATA against the connection's window and release it at once. The state has
    /// not moved.
    Ignore,
}
