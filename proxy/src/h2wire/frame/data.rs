//! DATA frames (RFC 9113 §6.1).

use super::error::{ErrorCode, FrameError, Scope};
use super::head::{flag, Head};
use super::pad::unpad;

/// A DATA frame's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Data<'a> {
    /// The data, without Pad Length octet and padding.
    pub data: &'a [u8],
    pub end_stream: bool,
    /// What the frame counts against the stream's and the connection's flow-control windows:
    /// the whole payload, Pad Length octet and padding included (§6.1, §6.9.1).
    pub flow_len: u32,
}

/// Parses a DATA payload (`payload` is the frame's `head.len` octets).
///
/// Refuses: stream 0 (connection PROTOCOL_ERROR); PADDED on an empty payload (stream
/// FRAME_SIZE_ERROR, §4.2); padding longer than the rest (connection PROTOCOL_ERROR). After a
/// stream error the frame still counts against the connection's window (§6.9): `head.len`.
pub fn parse_data<'a>(head: &Head, payload: &'a [u8]) -> Result<Data<'a>, FrameError> {
    if head.stream == 0 {
        return Err(FrameError::connection(
            head,
            ErrorCode::PROTOCOL_ERROR,
            "it must be on a stream other than 0",
        ));
    }
    // §4.2: a size error on a frame that cannot change the connection's state is a stream
    // error; a DATA frame on a stream is one.
    let (_, data) = unpad(head, payload, 0, Scope::Stream(head.stream))?;
    Ok(Data {
        data,
        end_stream: head.has(flag::END_STREAM),
        flow_len: u32::try_from(payload.len()).unwrap_or(u32::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::super::head::Kind;
    use super::super::testing::{head, refusal, CONN_PROTOCOL};
    use super::*;

    /// Data, end_stream and flow_len, or the refusal.
    fn parse(flags: u8, stream: u32, payload: &[u8]) -> Result<(&[u8], bool, u32), FrameError> {
        let d = parse_data(&head(Kind::Data, flags, stream, payload), payload)?;
        Ok((d.data, d.end_stream, d.flow_len))
    }

    #[test]
    fn plain_data_is_the_whole_payload() {
        assert_eq!(parse(0, 1, b"hello"), Ok((&b"hello"[..], false, 5)));
        assert_eq!(parse(flag::END_STREAM, 1, b""), Ok((&b""[..], true, 0)));
    }

    #[test]
    fn flags_data_does_not_define_are_ignored() {
        assert_eq!(parse(!flag::PADDED, 7, b"xy"), Ok((&b"xy"[..], true, 2)));
    }

    #[test]
    fn stream_zero_is_a_connection_protocol_error() {
        assert_eq!(refusal(parse(0, 0, b"x")), CONN_PROTOCOL);
    }

    #[test]
    fn pad_length_zero_leaves_all_but_the_pad_length_octet() {
        assert_eq!(
            parse(flag::PADDED, 3, b"\x00abc"),
            Ok((&b"abc"[..], false, 4))
        );
    }

    #[test]
    fn padding_counts_against_flow_control() {
        let got = parse(flag::PADDED | flag::END_STREAM, 3, b"\x03ab\0\0\0");
        assert_eq!(got, Ok((&b"ab"[..], true, 6)));
    }

    #[test]
    fn pad_of_payload_minus_one_leaves_no_data() {
        assert_eq!(
            parse(flag::PADDED, 3, b"\x04\0\0\0\0"),
            Ok((&b""[..], false, 5))
        );
        assert_eq!(parse(flag::PADDED, 3, b"\x00"), Ok((&b""[..], false, 1)));
    }

    #[test]
    fn pad_of_payload_length_or_more_is_a_connection_protocol_error() {
        for payload in [&b"\x05\0\0\0\0"[..], b"\x06\0\0\0\0", b"\x01", b"\xff"] {
            assert_eq!(refusal(parse(flag::PADDED, 3, payload)), CONN_PROTOCOL);
        }
    }

    #[test]
    fn padded_empty_payload_is_a_stream_frame_size_error() {
        let stream_size = (Scope::Stream(5), ErrorCode::FRAME_SIZE_ERROR);
        assert_eq!(refusal(parse(flag::PADDED, 5, b"")), stream_size);
    }
}
