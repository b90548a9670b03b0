//! Streams (RFC 9113 §5.1): each stream's state, the connection's stream identifiers, and the
//! concurrency limits. State only, no I/O and no frames: the engine calls an event method for
//! each frame it sends or receives, and acts on the answer.
//!
//! - [`Stream`]: a stream's state as two directions ([`Half`]) and a reset, from which §5.1's
//!   [`State`] follows. A received frame the state forbids is [`Refused`] with §5.1's code and
//!   scope; one this side must not send is a [`Misuse`], an engine bug.
//! - [`StreamIds`]: which identifier to open next, which the peer may open (§5.1.1), and which
//!   streams a GOAWAY left unprocessed (§6.8).
//! - [`Concurrency`]: SETTINGS_MAX_CONCURRENT_STREAMS each way (§5.1.2).
//!
//! Refused here (C: connection error, S: stream error):
//! - DATA, RST_STREAM, WINDOW_UPDATE on an idle stream, or HEADERS on an idle stream this
//!   side would open: PROTOCOL_ERROR, C (§5.1, §6.4);
//! - DATA or HEADERS after the peer's END_STREAM: STREAM_CLOSED, S while this side may still
//!   send (half-closed remote), C once the stream is closed (no RST_STREAM may go there);
//! - DATA or HEADERS after the peer's RST_STREAM: STREAM_CLOSED, C;
//! - DATA before the head, HEADERS without END_STREAM after the head, an informational head
//!   after the final one or with END_STREAM: PROTOCOL_ERROR, S (malformed, §8.1);
//! - a stream identifier of the wrong parity, not above the peer's last, or above 2^31−1, and
//!   any stream a server opens: PROTOCOL_ERROR, C (§5.1.1, §5.1);
//! - a stream beyond this side's SETTINGS_MAX_CONCURRENT_STREAMS: REFUSED_STREAM, S (§5.1.2).
//!
//! Ignored, not refused: frames after this side's RST_STREAM, and RST_STREAM or WINDOW_UPDATE
//! on a closed stream (§5.1 "closed"). PRIORITY is allowed in every state and changes none, so
//! it has no method here.

mod error;
mod half;
mod ids;
mod limit;
mod machine;
mod state;
#[cfg(test)]
mod tests;

pub use error::{Misuse, Refused};
pub use half::Half;
pub use ids::{Role, StreamIds, MAX_STREAM_ID};
pub use limit::Concurrency;
pub use machine::Stream;
pub use state::{ClosedBy, Recv, State};
