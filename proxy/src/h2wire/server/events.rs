//! What a server connection reports: the events of received frames.

use std::ops::Range;

use super::super::frame::ErrorCode;
use super::super::message::RequestHead;

pub use super::super::common::{ConnError, Fields};

/// What the received frames said, in the order they came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The client's SETTINGS were applied and acknowledged; the first one is its preface
    /// (§3.4).
    Settings,
    /// A new stream's request: its head held to §8 (`message::RequestCheck`) and its regular
    /// fields, in order. `end_stream`: no content follows.
    Request {
        id: u32,
        head: RequestHead,
        fields: Fields,
        end_stream: bool,
    },
    /// Request content: `data` is a range of the buffer given to `receive`, valid until the
    /// owner drops the bytes `receive` consumed. Its length must be given back with
    /// `release` once consumed, even after the stream ended: the connection's window counts it.
    Data {
        id: u32,
        data: Range<usize>,
        end_stream: bool,
    },
    /// The request's trailers; they end its side of the stream.
    Trailers { id: u32, fields: Fields },
    /// The stream ended by RST_STREAM, and is forgotten. `why` is None when the client reset
    /// it; otherwise the rule it broke, for which this side reset it (a malformed request,
    /// §8.1.1; flow control, §6.9; a header list too large; a stream refused, §5.1.2, §6.8).
    /// Reported for streams never reported as `Request` too, for the owner's logs.
    Reset {
        id: u32,
        code: ErrorCode,
        why: Option<&'static str>,
    },
    /// The client sent GOAWAY: it opens no more streams; those open go on (§6.8).
    GoAway { last_stream: u32, code: ErrorCode },
    /// The answer to this side's PING, with its opaque data.
    PingAck([u8; 8]),
    /// A send window that allowed nothing now allows something: of stream `id`, or with None
    /// of the connection (or of every stream, by SETTINGS_INITIAL_WINDOW_SIZE).
    Capacity { id: Option<u32> },
}
