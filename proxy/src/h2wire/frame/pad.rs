//! Padding, as DATA and HEADERS carry it (RFC 9113 §6.1, §6.2): with the PADDED flag, a Pad
//! Length octet leads the payload and that many octets of padding end it.

use super::error::{ErrorCode, FrameError, Scope};
use super::head::{flag, Head};

/// Splits a payload into the `fixed` octets of fields after the Pad Length octet (HEADERS'
/// priority fields) and the content between them and the padding.
///
/// A payload too short for the Pad Length octet or the fixed fields is a FRAME_SIZE_ERROR
/// (§4.2: too small to contain mandatory frame data) of the scope given, which depends on the
/// frame type. Padding longer than what is left is a connection PROTOCOL_ERROR for both types.
pub(super) fn unpad<'a>(
    head: &Head,
    payload: &'a [u8],
    fixed: usize,
    short: Scope,
) -> Result<(&'a [u8], &'a [u8]), FrameError> {
    let too_short = |why| FrameError {
        head: *head,
        scope: short,
        code: ErrorCode::FRAME_SIZE_ERROR,
        why,
    };
    let (pad, rest) = if head.has(flag::PADDED) {
        let (&pad, rest) = payload
            .split_first()
            .ok_or_else(|| too_short("PADDED flag set on an empty payload"))?;
        (usize::from(pad), rest)
    } else {
        (0, payload)
    };
    let (fields, rest) = rest
        .split_at_checked(fixed)
        .ok_or_else(|| too_short("payload too short for the priority fields its flags announce"))?;
    // §6.1: "If the length of the padding is the length of the frame payload or greater" (the
    // payload counting the Pad Length octet); §6.2: "Padding that exceeds the size remaining for
    // the field block fragment". Both mean: more padding than octets left. Equal is allowed.
    let content_len = rest.len().checked_sub(pad).ok_or_else(|| {
        FrameError::connection(
            head,
            ErrorCode::PROTOCOL_ERROR,
            "Pad Length is longer than the rest of the payload",
        )
    })?;
    let (content, _padding) = rest.split_at(content_len);
    Ok((fields, content))
}

#[cfg(test)]
mod tests {
    use super::super::head::Kind;
    use super::super::testing::{head, refusal, CONN_PROTOCOL, CONN_SIZE};
    use super::*;

    type Parts<'a> = Result<(&'a [u8], &'a [u8]), FrameError>;

    fn split(flags: u8, payload: &[u8], fixed: usize) -> Parts<'_> {
        unpad(
            &head(Kind::Headers, flags, 1, payload),
            payload,
            fixed,
            Scope::Connection,
        )
    }

    #[test]
    fn without_the_flag_the_payload_is_fixed_fields_then_content() {
        assert_eq!(split(0, b"\x05abcde", 0), Ok((&b""[..], &b"\x05abcde"[..])));
        assert_eq!(split(0, b"\x05abcde", 2), Ok((&b"\x05a"[..], &b"bcde"[..])));
    }

    #[test]
    fn fixed_fields_sit_between_pad_length_and_content() {
        let got = split(flag::PADDED, b"\x02FFFFFabcXY", 5);
        assert_eq!(got, Ok((&b"FFFFF"[..], &b"abc"[..])));
    }

    #[test]
    fn padding_may_fill_all_that_is_left_but_not_more() {
        assert_eq!(
            split(flag::PADDED, b"\x03FFFFFXYZ", 5),
            Ok((&b"FFFFF"[..], &b""[..]))
        );
        assert_eq!(
            refusal(split(flag::PADDED, b"\x04FFFFFXYZ", 5)),
            CONN_PROTOCOL
        );
        // Even when a short payload would be a stream error, too much padding is not.
        let payload = b"\x01";
        let head = head(Kind::Data, flag::PADDED, 3, payload);
        assert_eq!(
            refusal(unpad(&head, payload, 0, Scope::Stream(3))),
            CONN_PROTOCOL
        );
    }

    #[test]
    fn too_short_for_mandatory_fields_is_a_frame_size_error_of_the_given_scope() {
        let head = head(Kind::Data, flag::PADDED, 3, b"");
        let stream_size = (Scope::Stream(3), ErrorCode::FRAME_SIZE_ERROR);
        assert_eq!(refusal(unpad(&head, b"", 0, Scope::Stream(3))), stream_size);
        assert_eq!(refusal(split(flag::PADDED, b"\x00FFFF", 5)), CONN_SIZE);
        assert_eq!(refusal(split(0, b"FFFF", 5)), CONN_SIZE);
    }
}
