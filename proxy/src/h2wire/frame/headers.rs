//! HEADERS (RFC 9113 §6.2) and CONTINUATION (§6.10) frames: the frames a field block comes in.
//!
//! Only each frame's own rules are held here. That a field block's CONTINUATION frames follow
//! its HEADERS on the same stream with nothing in between (§6.10) is connection state.

use super::error::{ErrorCode, FrameError, Scope};
use super::head::{flag, Head};
use super::pad::unpad;
use super::priority::Priority;

/// A HEADERS frame's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headers<'a> {
    /// The field block fragment, without padding and priority fields.
    pub fragment: &'a [u8],
    pub end_stream: bool,
    pub end_headers: bool,
    pub priority: Option<Priority>,
    /// A stream error found in a frame otherwise well formed (a stream depending on itself,
    /// §5.3.1). The fragment must still be decoded, since HPACK state belongs to the connection
    /// and a field block left undecoded is a connection COMPRESSION_ERROR (§4.3); then the
    /// stream is reset with this error.
    pub stream_error: Option<FrameError>,
}

/// Parses a HEADERS payload. Refuses, all as connection errors (§4.2: a frame carrying a field
/// block can change the connection's state): stream 0 (PROTOCOL_ERROR); a payload too short for
/// the Pad Length octet or priority fields its flags announce (FRAME_SIZE_ERROR); padding
/// longer than the rest (PROTOCOL_ERROR).
pub fn parse_headers<'a>(head: &Head, payload: &'a [u8]) -> Result<Headers<'a>, FrameError> {
    if head.stream == 0 {
        let why = "it must be on a stream other than 0";
        return Err(FrameError::connection(head, ErrorCode::PROTOCOL_ERROR, why));
    }
    let fixed = if head.has(flag::PRIORITY) { 5 } else { 0 };
    let (fields, fragment) = unpad(head, payload, fixed, Scope::Connection)?;
    let priority = <[u8; 5]>::try_from(fields).ok().map(Priority::parse);
    Ok(Headers {
        fragment,
        end_stream: head.has(flag::END_STREAM),
        end_headers: head.has(flag::END_HEADERS),
        priority,
        stream_error: priority.and_then(|p| p.check(head).err()),
    })
}

/// A CONTINUATION frame's payload: all of it is field block fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Continuation<'a> {
    pub fragment: &'a [u8],
    pub end_headers: bool,
}

/// Parses a CONTINUATION payload. Refuses stream 0 (connection PROTOCOL_ERROR).
pub fn parse_continuation<'a>(
    head: &Head,
    payload: &'a [u8],
) -> Result<Continuation<'a>, FrameError> {
    if head.stream == 0 {
        let why = "it must be on a stream other than 0";
        return Err(FrameError::connection(head, ErrorCode::PROTOCOL_ERROR, why));
    }
    Ok(Continuation {
        fragment: payload,
        end_headers: head.has(flag::END_HEADERS),
    })
}

#[cfg(test)]
mod tests {
    use super::super::head::Kind;
    use super::super::testing::{head, refusal, CONN_PROTOCOL, CONN_SIZE};
    use super::*;

    fn parse(flags: u8, stream: u32, payload: &[u8]) -> Result<Headers<'_>, FrameError> {
        parse_headers(&head(Kind::Headers, flags, stream, payload), payload)
    }

    #[test]
    fn plain_headers_are_all_fragment() {
        let h = parse(flag::END_STREAM | flag::END_HEADERS, 1, b"\x82\x86").unwrap();
        assert_eq!(h.fragment, b"\x82\x86");
        assert!(h.end_stream && h.end_headers);
        assert_eq!((h.priority, h.stream_error), (None, None));
        let h = parse(0, 1, b"").unwrap();
        assert!(!h.end_stream && !h.end_headers && h.fragment.is_empty());
    }

    #[test]
    fn priority_and_padding_together() {
        // Pad Length 2, exclusive bit with dependency 3, weight octet 15, fragment, padding.
        let payload = b"\x02\x80\x00\x00\x03\x0f\x82\x84\0\0";
        let h = parse(
            flag::PADDED | flag::PRIORITY | flag::END_HEADERS,
            5,
            payload,
        )
        .unwrap();
        assert_eq!(h.fragment, b"\x82\x84");
        let p = h.priority.unwrap();
        assert_eq!((p.exclusive, p.dependency, p.weight), (true, 3, 15));
        assert!(h.end_headers && !h.end_stream);
        assert_eq!(h.stream_error, None);
    }

    #[test]
    fn padding_edges() {
        // Pad Length 0: all after the Pad Length octet is fragment.
        assert_eq!(
            parse(flag::PADDED, 1, b"\x00\x82\x84").unwrap().fragment,
            b"\x82\x84"
        );
        // Padding of payload − 1: an empty fragment.
        assert_eq!(parse(flag::PADDED, 1, b"\x02\0\0").unwrap().fragment, b"");
        // Padding of the payload's length: more than is left.
        assert_eq!(refusal(parse(flag::PADDED, 1, b"\x03\0\0")), CONN_PROTOCOL);
    }

    #[test]
    fn priority_and_padding_edges() {
        let flags = flag::PADDED | flag::PRIORITY;
        // Padding filling all after the priority fields: allowed, empty fragment.
        assert_eq!(
            parse(flags, 5, b"\x02\x00\x00\x00\x01\x00\0\0")
                .unwrap()
                .fragment,
            b""
        );
        // One octet more: more padding than is left.
        assert_eq!(
            refusal(parse(flags, 5, b"\x03\x00\x00\x00\x01\x00\0\0")),
            CONN_PROTOCOL
        );
        // No room for the priority fields or the Pad Length: a size error, on the connection.
        assert_eq!(refusal(parse(flags, 5, b"\x00\x00\x00\x00\x01")), CONN_SIZE);
        assert_eq!(
            refusal(parse(flag::PRIORITY, 5, b"\x00\x00\x00\x01")),
            CONN_SIZE
        );
        assert_eq!(refusal(parse(flag::PADDED, 5, b"")), CONN_SIZE);
    }

    #[test]
    fn headers_depending_on_their_own_stream_still_give_the_fragment() {
        let h = parse(
            flag::PRIORITY | flag::END_HEADERS,
            7,
            b"\x00\x00\x00\x07\x10\x82",
        )
        .unwrap();
        assert_eq!(h.fragment, b"\x82");
        let e = h.stream_error.unwrap();
        assert_eq!(
            (e.scope, e.code),
            (Scope::Stream(7), ErrorCode::PROTOCOL_ERROR)
        );
    }

    #[test]
    fn headers_on_stream_zero_are_a_connection_protocol_error() {
        assert_eq!(refusal(parse(flag::END_HEADERS, 0, b"\x82")), CONN_PROTOCOL);
    }

    #[test]
    fn continuation_is_all_fragment_and_refuses_stream_zero() {
        let parse = |flags, stream, payload| {
            parse_continuation(&head(Kind::Continuation, flags, stream, payload), payload)
        };
        // PADDED means nothing on CONTINUATION: the first octet is fragment.
        let c = parse(flag::END_HEADERS | flag::PADDED, 3, b"\x08\x01\x02").unwrap();
        assert_eq!((c.fragment, c.end_headers), (&b"\x08\x01\x02"[..], true));
        let c = parse(0, 3, b"").unwrap();
        assert_eq!((c.fragment, c.end_headers), (&b""[..], false));
        assert_eq!(refusal(parse(flag::END_HEADERS, 0, b"\x82")), CONN_PROTOCOL);
    }
}
