//! Error codes (RFC 9113 §7) and the error a frame that breaks a rule of §4–6 is refused with.

use std::fmt;

use super::head::Head;

/// An error code as RST_STREAM and GOAWAY carry it. A newtype, not an enum: codes this codec
/// does not know are kept as they came, since §7 says they must not trigger special behaviour
/// (an implementation may treat them as INTERNAL_ERROR) — never refused.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    pub const NO_ERROR: ErrorCode = ErrorCode(0x0);
    pub const PROTOCOL_ERROR: ErrorCode = ErrorCode(0x1);
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(0x2);
    pub const FLOW_CONTROL_ERROR: ErrorCode = ErrorCode(0x3);
    pub const SETTINGS_TIMEOUT: ErrorCode = ErrorCode(0x4);
    pub const STREAM_CLOSED: ErrorCode = ErrorCode(0x5);
    pub const FRAME_SIZE_ERROR: ErrorCode = ErrorCode(0x6);
    pub const REFUSED_STREAM: ErrorCode = ErrorCode(0x7);
    pub const CANCEL: ErrorCode = ErrorCode(0x8);
    pub const COMPRESSION_ERROR: ErrorCode = ErrorCode(0x9);
    pub const CONNECT_ERROR: ErrorCode = ErrorCode(0xa);
    pub const ENHANCE_YOUR_CALM: ErrorCode = ErrorCode(0xb);
    pub const INADEQUATE_SECURITY: ErrorCode = ErrorCode(0xc);
    pub const HTTP_1_1_REQUIRED: ErrorCode = ErrorCode(0xd);

    /// The RFC's name for a code it defines.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x0 => "NO_ERROR",
            0x1 => "PROTOCOL_ERROR",
            0x2 => "INTERNAL_ERROR",
            0x3 => "FLOW_CONTROL_ERROR",
            0x4 => "SETTINGS_TIMEOUT",
            0x5 => "STREAM_CLOSED",
            0x6 => "FRAME_SIZE_ERROR",
            0x7 => "REFUSED_STREAM",
            0x8 => "CANCEL",
            0x9 => "COMPRESSION_ERROR",
            0xa => "CONNECT_ERROR",
            0xb => "ENHANCE_YOUR_CALM",
            0xc => "INADEQUATE_SECURITY",
            0xd => "HTTP_1_1_REQUIRED",
            _ => return None,
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "unknown error code {:#x}", self.0),
        }
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ErrorCode({self})")
    }
}

/// What an error ends (§5.4): the whole connection (GOAWAY, then close) or one stream
/// (RST_STREAM, and the connection goes on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Connection,
    Stream(u32),
}

/// A frame refused: the rule it broke, the code to send, and whether a stream or the connection
/// ends. `head` is kept so the message can name the frame, and so that after a stream error the
/// caller knows how many payload octets to skip to reach the next frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameError {
    pub head: Head,
    pub scope: Scope,
    pub code: ErrorCode,
    /// The rule broken, phrased to follow "<TYPE> frame …: ".
    pub why: &'static str,
}

impl FrameError {
    pub(super) fn connection(head: &Head, code: ErrorCode, why: &'static str) -> FrameError {
        FrameError {
            head: *head,
            scope: Scope::Connection,
            code,
            why,
        }
    }

    /// A stream error on the frame's own stream. Callers refuse stream 0 first: an error there
    /// is always a connection error.
    pub(super) fn stream(head: &Head, code: ErrorCode, why: &'static str) -> FrameError {
        FrameError {
            head: *head,
            scope: Scope::Stream(head.stream),
            code,
            why,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Head {
            kind, len, stream, ..
        } = self.head;
        let scope = match self.scope {
            Scope::Connection => "connection",
            Scope::Stream(_) => "stream",
        };
        write!(
            f,
            "{kind} frame on stream {stream}, length {len}: {} ({scope} error {})",
            self.why, self.code
        )
    }
}

impl std::error::Error for FrameError {}

#[cfg(test)]
mod tests {
    use super::super::head::Kind;
    use super::*;

    #[test]
    fn known_codes_have_their_rfc_names_and_unknown_ones_are_kept() {
        assert_eq!(ErrorCode::NO_ERROR.to_string(), "NO_ERROR");
        assert_eq!(
            ErrorCode::HTTP_1_1_REQUIRED.to_string(),
            "HTTP_1_1_REQUIRED"
        );
        assert_eq!(ErrorCode(0xd).name(), Some("HTTP_1_1_REQUIRED"));
        assert_eq!(ErrorCode(0xe).name(), None);
        assert_eq!(ErrorCode(0xdead).to_string(), "unknown error code 0xdead");
        assert_eq!(format!("{:?}", ErrorCode::CANCEL), "ErrorCode(CANCEL)");
        assert!((0..=0xd).all(|c| ErrorCode(c).name().is_some()));
    }

    #[test]
    fn display_names_the_frame_the_rule_and_the_outcome() {
        let head = Head {
            len: 7,
            kind: Kind::Settings,
            flags: 0,
            stream: 0,
        };
        let why = "length is not a multiple of 6";
        let e = FrameError::connection(&head, ErrorCode::FRAME_SIZE_ERROR, why);
        assert_eq!(
            e.to_string(),
            "SETTINGS frame on stream 0, length 7: length is not a multiple of 6 \
             (connection error FRAME_SIZE_ERROR)"
        );
        let head = Head {
            len: 5,
            kind: Kind::Priority,
            flags: 0,
            stream: 3,
        };
        let e = FrameError::stream(&head, ErrorCode::PROTOCOL_ERROR, "stream depends on itself");
        assert_eq!(e.scope, Scope::Stream(3));
        assert!(
            e.to_string().ends_with("(stream error PROTOCOL_ERROR)"),
            "{e}"
        );
    }
}
