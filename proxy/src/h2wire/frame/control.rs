//! The frames that carry no field block and no data: PING (RFC 9113 §6.7), GOAWAY (§6.8),
//! RST_STREAM (§6.4), WINDOW_UPDATE (§6.9); and PUSH_PROMISE (§6.6), which weir refuses.

use super::error::{ErrorCode, FrameError};
use super::head::{flag, Head, U31};

/// A PING frame's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ping {
    /// Echoed back unchanged in the acknowledgement.
    pub opaque: [u8; 8],
    pub ack: bool,
}

/// Parses a PING payload. Refuses a stream other than 0 (connection PROTOCOL_ERROR) and a
/// length other than 8 (connection FRAME_SIZE_ERROR).
pub fn parse_ping(head: &Head, payload: &[u8]) -> Result<Ping, FrameError> {
    if head.stream != 0 {
        let why = "it must be on stream 0";
        return Err(FrameError::connection(head, ErrorCode::PROTOCOL_ERROR, why));
    }
    let opaque = <[u8; 8]>::try_from(payload).map_err(|_| {
        FrameError::connection(head, ErrorCode::FRAME_SIZE_ERROR, "length is not 8")
    })?;
    Ok(Ping {
        opaque,
        ack: head.has(flag::ACK),
    })
}

/// A GOAWAY frame's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoAway<'a> {
    /// The highest stream the sender may have processed, 31 bits (reserved bit cleared).
    pub last_stream: u32,
    pub code: ErrorCode,
    /// Opaque diagnostic data: for logs, never for behaviour.
    pub debug: &'a [u8],
}

/// Parses a GOAWAY payload. Refuses a stream other than 0 (connection PROTOCOL_ERROR) and a
/// payload shorter than its 8 octets of fields (connection FRAME_SIZE_ERROR, §4.2).
pub fn parse_goaway<'a>(head: &Head, payload: &'a [u8]) -> Result<GoAway<'a>, FrameError> {
    if head.stream != 0 {
        let why = "it must be on stream 0";
        return Err(FrameError::connection(head, ErrorCode::PROTOCOL_ERROR, why));
    }
    let (&[s0, s1, s2, s3, c0, c1, c2, c3], debug) =
        payload.split_first_chunk::<8>().ok_or_else(|| {
            FrameError::connection(head, ErrorCode::FRAME_SIZE_ERROR, "length is below 8")
        })?;
    Ok(GoAway {
        last_stream: u32::from_be_bytes([s0, s1, s2, s3]) & U31,
        code: ErrorCode(u32::from_be_bytes([c0, c1, c2, c3])),
        debug,
    })
}

/// Parses a RST_STREAM payload into its error code. Refuses stream 0 (connection
/// PROTOCOL_ERROR) and a length other than 4 (connection FRAME_SIZE_ERROR, as §6.4 says).
pub fn parse_rst_stream(head: &Head, payload: &[u8]) -> Result<ErrorCode, FrameError> {
    if head.stream == 0 {
        let why = "it must be on a stream other than 0";
        return Err(FrameError::connection(head, ErrorCode::PROTOCOL_ERROR, why));
    }
    let code = <[u8; 4]>::try_from(payload).map_err(|_| {
        FrameError::connection(head, ErrorCode::FRAME_SIZE_ERROR, "length is not 4")
    })?;
    Ok(ErrorCode(u32::from_be_bytes(code)))
}

/// Parses a WINDOW_UPDATE payload into its increment (1..=2^31−1; the reserved bit is ignored).
/// Refuses a length other than 4 (connection FRAME_SIZE_ERROR, on any stream: §6.9) and an
/// increment of 0 (PROTOCOL_ERROR: of the connection on stream 0, of the stream otherwise).
/// Whether the increment overflows a window is the connection's to check.
pub fn parse_window_update(head: &Head, payload: &[u8]) -> Result<u32, FrameError> {
    let bytes = <[u8; 4]>::try_from(payload).map_err(|_| {
        FrameError::connection(head, ErrorCode::FRAME_SIZE_ERROR, "length is not 4")
    })?;
    let increment = u32::from_be_bytes(bytes) & U31;
    if increment == 0 {
        let why = "window increment is 0";
        return Err(match head.stream {
            0 => FrameError::connection(head, ErrorCode::PROTOCOL_ERROR, why),
            _ => FrameError::stream(head, ErrorCode::PROTOCOL_ERROR, why),
        });
    }
    Ok(increment)
}

/// The error any PUSH_PROMISE weir receives is refused with: a connection PROTOCOL_ERROR. A
/// server must not receive one (§8.4: a client cannot push), and a client that advertised
/// SETTINGS_ENABLE_PUSH = 0, as weir's do in their first SETTINGS, must refuse one (§6.6).
/// Its field block need not be decoded: the connection ends.
pub fn refuse_push_promise(head: &Head) -> FrameError {
    FrameError::connection(
        head,
        ErrorCode::PROTOCOL_ERROR,
        "server push is refused: clients cannot push (§8.4) and weir advertises ENABLE_PUSH = 0",
    )
}

#[cfg(test)]
mod tests {
    use super::super::error::Scope;
    use super::super::head::Kind;
    use super::super::testing::{head, refusal, CONN_PROTOCOL, CONN_SIZE};
    use super::*;

    #[test]
    fn ping_rules() {
        let ping = |flags, stream, payload: &[u8]| {
            let p = parse_ping(&head(Kind::Ping, flags, stream, payload), payload)?;
            Ok((p.opaque, p.ack))
        };
        assert_eq!(ping(0, 0, b"12345678"), Ok((*b"12345678", false)));
        assert_eq!(ping(flag::ACK, 0, b"abcdefgh"), Ok((*b"abcdefgh", true)));
        assert_eq!(refusal(ping(0, 1, b"12345678")), CONN_PROTOCOL);
        for bad in [&b"1234567"[..], b"123456789", b""] {
            assert_eq!(refusal(ping(0, 0, bad)), CONN_SIZE);
        }
    }

    #[test]
    fn goaway_rules() {
        let goaway = |stream, payload| {
            let g = parse_goaway(&head(Kind::GoAway, 0, stream, payload), payload)?;
            Ok((g.last_stream, g.code, g.debug))
        };
        // The reserved bit of the last stream is cleared; debug data is the rest.
        let payload = b"\x80\x00\x01\x01\x00\x00\x00\x0bcalm down";
        let want = (257, ErrorCode::ENHANCE_YOUR_CALM, &b"calm down"[..]);
        assert_eq!(goaway(0, payload), Ok(want));
        let want = (0, ErrorCode(0x100), &b""[..]);
        assert_eq!(goaway(0, b"\x00\x00\x00\x00\x00\x00\x01\x00"), Ok(want));
        assert_eq!(refusal(goaway(3, payload)), CONN_PROTOCOL);
        assert_eq!(
            refusal(goaway(0, b"\x00\x00\x00\x00\x00\x00\x00")),
            CONN_SIZE
        );
    }

    #[test]
    fn rst_stream_rules() {
        let rst =
            |stream, payload| parse_rst_stream(&head(Kind::RstStream, 0, stream, payload), payload);
        assert_eq!(rst(1, b"\x00\x00\x00\x08"), Ok(ErrorCode::CANCEL));
        assert_eq!(rst(1, b"\xff\xff\xff\xff"), Ok(ErrorCode(u32::MAX)));
        assert_eq!(refusal(rst(0, b"\x00\x00\x00\x08")), CONN_PROTOCOL);
        assert_eq!(refusal(rst(1, b"\x00\x00\x08")), CONN_SIZE);
        assert_eq!(refusal(rst(1, b"\x00\x00\x00\x00\x08")), CONN_SIZE);
    }

    #[test]
    fn window_update_rules() {
        let wu = |stream, payload| {
            parse_window_update(&head(Kind::WindowUpdate, 0, stream, payload), payload)
        };
        assert_eq!(wu(0, b"\x00\x00\xff\xff"), Ok(65_535));
        assert_eq!(wu(9, b"\xff\xff\xff\xff"), Ok(0x7fff_ffff));
        assert_eq!(refusal(wu(0, b"\x00\x00\x00\x00")), CONN_PROTOCOL);
        // The reserved bit is ignored: this is still an increment of 0.
        let stream_protocol = (Scope::Stream(9), ErrorCode::PROTOCOL_ERROR);
        assert_eq!(refusal(wu(9, b"\x80\x00\x00\x00")), stream_protocol);
        assert_eq!(refusal(wu(9, b"\x00\x00\x01")), CONN_SIZE);
        assert_eq!(refusal(wu(0, b"\x00\x00\x00\x00\x01")), CONN_SIZE);
    }

    #[test]
    fn push_promise_is_always_a_connection_protocol_error() {
        for stream in [0, 1, 2] {
            let head = head(Kind::PushPromise, flag::END_HEADERS, stream, b"\0\0\0\x02");
            let e = refuse_push_promise(&head);
            assert_eq!((e.scope, e.code), CONN_PROTOCOL);
            assert!(e.to_string().starts_with("PUSH_PROMISE frame"), "{e}");
        }
    }
}
