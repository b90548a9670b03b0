//! Priority fields, as PRIORITY frames (RFC 9113 §6.3) and HEADERS frames with the PRIORITY flag
//! (§6.2) carry them. §5.3.2 deprecates this priority scheme; the fields are still parsed, to
//! find the frame's other parts and to hold the one rule of §5.3.1.

use super::error::{ErrorCode, FrameError};
use super::head::{Head, U31};

/// Exclusive bit, stream dependency and weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    pub exclusive: bool,
    /// The stream depended on, 31 bits.
    pub dependency: u32,
    /// The octet as sent: the weight is this plus one (1..=256).
    pub weight: u8,
}

impl Priority {
    pub(super) fn parse(fields: [u8; 5]) -> Priority {
        let [d0, d1, d2, d3, weight] = fields;
        let word = u32::from_be_bytes([d0, d1, d2, d3]);
        Priority {
            exclusive: word & !U31 != 0,
            dependency: word & U31,
            weight,
        }
    }

    /// §5.3.1: "A stream cannot depend on itself" — a stream PROTOCOL_ERROR.
    pub(super) fn check(self, head: &Head) -> Result<Priority, FrameError> {
        if self.dependency == head.stream {
            let why = "stream depends on itself";
            return Err(FrameError::stream(head, ErrorCode::PROTOCOL_ERROR, why));
        }
        Ok(self)
    }
}

/// Parses a PRIORITY payload. Refuses stream 0 (connection PROTOCOL_ERROR), a length other than
/// 5 (stream FRAME_SIZE_ERROR, §6.3) and a stream depending on itself (stream PROTOCOL_ERROR).
pub fn parse_priority(head: &Head, payload: &[u8]) -> Result<Priority, FrameError> {
    if head.stream == 0 {
        let why = "it must be on a stream other than 0";
        return Err(FrameError::connection(head, ErrorCode::PROTOCOL_ERROR, why));
    }
    let fields = <[u8; 5]>::try_from(payload)
        .map_err(|_| FrameError::stream(head, ErrorCode::FRAME_SIZE_ERROR, "length is not 5"))?;
    Priority::parse(fields).check(head)
}

#[cfg(test)]
mod tests {
    use super::super::error::Scope;
    use super::super::head::Kind;
    use super::super::testing::{head, refusal, CONN_PROTOCOL};
    use super::*;

    fn parse(stream: u32, payload: &[u8]) -> Result<Priority, FrameError> {
        parse_priority(&head(Kind::Priority, 0, stream, payload), payload)
    }

    #[test]
    fn fields_are_exclusive_bit_dependency_and_weight() {
        let p = parse(5, b"\x80\x00\x01\x03\xff").unwrap();
        assert_eq!((p.exclusive, p.dependency, p.weight), (true, 259, 255));
        let p = parse(5, b"\x7f\xff\xff\xff\x00").unwrap();
        assert_eq!(
            (p.exclusive, p.dependency, p.weight),
            (false, 0x7fff_ffff, 0)
        );
    }

    #[test]
    fn stream_zero_is_a_connection_protocol_error() {
        assert_eq!(refusal(parse(0, b"\x00\x00\x00\x03\x00")), CONN_PROTOCOL);
    }

    #[test]
    fn a_length_other_than_5_is_a_stream_frame_size_error() {
        for bad in [&b"\x00\x00\x00\x03"[..], b"\x00\x00\x00\x03\x00\x00", b""] {
            assert_eq!(
                refusal(parse(5, bad)),
                (Scope::Stream(5), ErrorCode::FRAME_SIZE_ERROR)
            );
        }
    }

    #[test]
    fn a_stream_depending_on_itself_is_a_stream_protocol_error() {
        let stream_protocol = (Scope::Stream(5), ErrorCode::PROTOCOL_ERROR);
        assert_eq!(refusal(parse(5, b"\x00\x00\x00\x05\x00")), stream_protocol);
        // The exclusive bit is not part of the dependency.
        assert_eq!(refusal(parse(5, b"\x80\x00\x00\x05\x00")), stream_protocol);
    }
}
