//! What a client connection reports: the events of received frames, a response's fields, and
//! its errors.

use std::fmt;
use std::ops::Range;

use super::super::frame::ErrorCode;

pub use super::super::common::{ConnError, Fields};

/// What the received frames said, in the order they came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The server's SETTINGS were applied and acknowledged. The first one settles the
    /// connection (§3.4: the server's preface); `max_concurrent_streams` is the value the frame
    /// carried, if it carried one.
    Settings { max_concurrent_streams: Option<u32> },
    /// A stream's final response head. Interim (1xx) heads are consumed, not reported.
    Response {
        id: u32,
        status: u16,
        fields: Fields,
        end_stream: bool,
    },
    /// Response content: `data` is a range of the buffer given to `receive`, valid until the
    /// owner drops the bytes `receive` consumed. Its length must be given back with
    /// `release` once consumed, even after the stream ended: the connection's window counts it.
    Data {
        id: u32,
        data: Range<usize>,
        end_stream: bool,
    },
    /// The response's trailers; they end the stream.
    Trailers { id: u32, fields: Fields },
    /// The stream ended by RST_STREAM, and is forgotten. `why` is None when the server reset
    /// it, and then `refused` says whether with REFUSED_STREAM: the request was not processed
    /// and may be sent again, whatever its method (§8.7). `why` is the rule the response broke
    /// when this side reset it (a malformed response, §8.1.1; flow control, §6.9). After a
    /// complete response, a server's NO_ERROR only asks that the request's body stop (§8.1).
    Reset {
        id: u32,
        code: ErrorCode,
        refused: bool,
        why: Option<&'static str>,
    },
    /// The server sent GOAWAY: no stream opens on this connection any more. `unprocessed` are
    /// the streams this side opened above `last_stream`, now forgotten: the server did not and
    /// will not process them, and they may be sent again on another connection (§6.8, §8.7).
    /// The others go on to their end unless `code` is an error, after which the server closes.
    GoAway {
        last_stream: u32,
        code: ErrorCode,
        unprocessed: Vec<u32>,
    },
    /// The answer to this side's PING, with its opaque data.
    PingAck([u8; 8]),
    /// A send window that allowed nothing now allows something: of stream `id`, or with None
    /// of the connection (or of every stream, by SETTINGS_INITIAL_WINDOW_SIZE). Blocked DATA
    /// may go on.
    Capacity { id: Option<u32> },
}

/// Why `open` opened no stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The connection ended (a connection error) or this side sent GOAWAY.
    Closed,
    /// The server sent GOAWAY (§6.8).
    GoingAway,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS streams are active (§5.1.2): wait for one
    /// to end, or use another connection.
    AtLimit,
    /// Every odd stream identifier was used (§5.1.1): the connection must be replaced.
    IdsExhausted,
    /// The request's fields exceed the server's SETTINGS_MAX_HEADER_LIST_SIZE (§6.5.2), which
    /// it would likely refuse.
    HeaderListTooLarge { size: usize, limit: u32 },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Closed => f.write_str("the HTTP/2 connection is closed or closing"),
            OpenError::GoingAway => f.write_str("the HTTP/2 server sent GOAWAY"),
            OpenError::AtLimit => f.write_str("SETTINGS_MAX_CONCURRENT_STREAMS reached"),
            OpenError::IdsExhausted => f.write_str("no stream identifier left"),
            OpenError::HeaderListTooLarge { size, limit } => write!(
                f,
                "request header list of {size} octets, above the server's limit of {limit}"
            ),
        }
    }
}

impl std::error::Error for OpenError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_happened() {
        let e = ConnError {
            code: ErrorCode::PROTOCOL_ERROR,
            why: "a frame between HEADERS and CONTINUATION",
        };
        assert_eq!(
            e.to_string(),
            "HTTP/2 connection error PROTOCOL_ERROR: a frame between HEADERS and CONTINUATION"
        );
        let o = OpenError::HeaderListTooLarge {
            size: 20,
            limit: 10,
        };
        assert!(o.to_string().contains("20 octets"), "{o}");
    }
}
