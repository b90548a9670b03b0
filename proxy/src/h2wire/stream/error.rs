//! What a stream's state machine answers when a frame or an event does not fit it.

use std::fmt;

use super::super::frame::{ErrorCode, FrameError, Head, Scope};

/// A received frame refused by the stream's state or by the stream identifier rules: the code
/// to send and what it ends (§5.4: GOAWAY for the connection, RST_STREAM for a stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    pub scope: Scope,
    pub code: ErrorCode,
    /// The rule broken.
    pub why: &'static str,
}

impl Refused {
    pub(super) fn connection(code: ErrorCode, why: &'static str) -> Refused {
        Refused {
            scope: Scope::Connection,
            code,
            why,
        }
    }

    pub(super) fn stream(id: u32, code: ErrorCode, why: &'static str) -> Refused {
        Refused {
            scope: Scope::Stream(id),
            code,
            why,
        }
    }

    /// The refusal as the error of the frame that caused it, for logs that name the frame.
    pub fn on(self, head: &Head) -> FrameError {
        FrameError {
            head: *head,
            scope: self.scope,
            code: self.code,
            why: self.why,
        }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scope {
            Scope::Connection => write!(f, "{} (connection error {})", self.why, self.code),
            Scope::Stream(id) => write!(f, "{} (stream {id} error {})", self.why, self.code),
        }
    }
}

impl std::error::Error for Refused {}

/// Something this side tried to send that the stream's state does not allow: a bug in the
/// engine, never the peer's doing. Nothing is changed; the frame must not be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Misuse {
    pub why: &'static str,
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/2 engine bug: {}", self.why)
    }
}

impl std::error::Error for Misuse {}

#[cfg(test)]
mod tests {
    use super::super::super::frame::Kind;
    use super::*;

    #[test]
    fn display_says_why_and_what_ends() {
        let r = Refused::stream(5, ErrorCode::STREAM_CLOSED, "DATA after END_STREAM");
        assert_eq!(
            r.to_string(),
            "DATA after END_STREAM (stream 5 error STREAM_CLOSED)"
        );
        let r = Refused::connection(ErrorCode::PROTOCOL_ERROR, "DATA on an idle stream");
        assert_eq!(
            r.to_string(),
            "DATA on an idle stream (connection error PROTOCOL_ERROR)"
        );
        let m = Misuse {
            why: "DATA before HEADERS",
        };
        assert_eq!(m.to_string(), "HTTP/2 engine bug: DATA before HEADERS");
    }

    #[test]
    fn on_gives_the_frame_error_of_the_frame() {
        let head = Head {
            len: 3,
            kind: Kind::Data,
            flags: 0,
            stream: 7,
        };
        let e = Refused::stream(7, ErrorCode::STREAM_CLOSED, "why").on(&head);
        assert_eq!(e.head, head);
        assert_eq!(
            (e.scope, e.code, e.why),
            (Scope::Stream(7), ErrorCode::STREAM_CLOSED, "why")
        );
    }
}
