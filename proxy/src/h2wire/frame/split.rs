//! Finding whole frames in a stream of received bytes.

use std::ops::Range;

use super::error::FrameError;
use super::head::{Head, HEAD_LEN};
use super::size::check_size;

/// The first frame in `buf`: its head and the range of `buf` its payload occupies (the frame
/// ends at `range.end`). `Ok(None)`: fewer bytes than a whole frame; read more and call again.
///
/// A frame longer than `max_frame_size` (what this endpoint advertised) is refused as soon as its
/// 9-octet head is in, without waiting for a payload that may be 16 MiB. After a stream-scoped
/// refusal the connection goes on: the caller resets the stream and discards the next
/// `9 + error.head.len` octets (for DATA, still counting `head.len` against the connection's
/// flow-control window, §6.9).
pub fn next_frame(
    buf: &[u8],
    max_frame_size: u32,
) -> Result<Option<(Head, Range<usize>)>, FrameError> {
    let Some(head) = Head::read(buf) else {
        return Ok(None);
    };
    check_size(&head, max_frame_size)?;
    // `len` is 24 bits: no overflow.
    let end = HEAD_LEN + head.len as usize;
    if buf.len() < end {
        return Ok(None);
    }
    Ok(Some((head, HEAD_LEN..end)))
}

#[cfg(test)]
mod tests {
    use super::super::error::{ErrorCode, Scope};
    use super::super::head::{flag, Kind, DEFAULT_MAX_FRAME_SIZE};
    use super::*;

    /// A HEADERS frame on stream 1 (3-octet payload), then a PING (8 octets).
    fn two_frames() -> Vec<u8> {
        let mut buf = Vec::new();
        Head {
            len: 3,
            kind: Kind::Headers,
            flags: flag::END_HEADERS,
            stream: 1,
        }
        .write(&mut buf);
        buf.extend_from_slice(b"\x82\x86\x84");
        Head {
            len: 8,
            kind: Kind::Ping,
            flags: 0,
            stream: 0,
        }
        .write(&mut buf);
        buf.extend_from_slice(b"pingpong");
        buf
    }

    #[test]
    fn every_cut_of_two_frames_yields_whole_frames_only() {
        let buf = two_frames();
        let first_end = HEAD_LEN + 3;
        assert_eq!(buf.len(), first_end + HEAD_LEN + 8);
        for cut in 0..=buf.len() {
            let got = next_frame(&buf[..cut], DEFAULT_MAX_FRAME_SIZE).unwrap();
            if cut < first_end {
                assert_eq!(got, None, "cut at {cut}");
                continue;
            }
            let (head, range) = got.unwrap();
            assert_eq!(
                (head.kind, head.stream, range.clone()),
                (Kind::Headers, 1, 9..12)
            );
            assert_eq!(&buf[range.clone()], b"\x82\x86\x84");
            // What follows the first frame, cut at the same place.
            let rest = &buf[range.end..cut];
            match next_frame(rest, DEFAULT_MAX_FRAME_SIZE).unwrap() {
                None => assert!(cut < buf.len(), "cut at {cut}"),
                Some((head, range)) => {
                    assert_eq!(cut, buf.len());
                    assert_eq!((head.kind, head.len), (Kind::Ping, 8));
                    assert_eq!(
                        (&rest[range.clone()], range.end),
                        (&b"pingpong"[..], rest.len())
                    );
                }
            }
        }
    }

    #[test]
    fn an_empty_payload_is_a_whole_frame_at_nine_octets() {
        let mut buf = Vec::new();
        Head {
            len: 0,
            kind: Kind::Settings,
            flags: flag::ACK,
            stream: 0,
        }
        .write(&mut buf);
        assert_eq!(next_frame(&buf[..8], DEFAULT_MAX_FRAME_SIZE), Ok(None));
        let (head, range) = next_frame(&buf, DEFAULT_MAX_FRAME_SIZE).unwrap().unwrap();
        assert_eq!((head.kind, range), (Kind::Settings, 9..9));
    }

    #[test]
    fn an_oversized_frame_is_refused_from_its_head_alone() {
        let mut buf = Vec::new();
        let head = Head {
            len: 20_000,
            kind: Kind::Data,
            flags: 0,
            stream: 3,
        };
        head.write(&mut buf);
        let e = next_frame(&buf, DEFAULT_MAX_FRAME_SIZE).unwrap_err();
        assert_eq!(
            (e.scope, e.code, e.head),
            (Scope::Stream(3), ErrorCode::FRAME_SIZE_ERROR, head)
        );
        // Under a larger advertised limit the same head just waits for its payload.
        assert_eq!(next_frame(&buf, 20_000), Ok(None));
        let e = next_frame(&buf[..9], 16_384).unwrap_err();
        assert_eq!(e.head.len, 20_000);
        let settings = Head {
            kind: Kind::Settings,
            stream: 0,
            ..head
        };
        buf.clear();
        settings.write(&mut buf);
        let e = next_frame(&buf, DEFAULT_MAX_FRAME_SIZE).unwrap_err();
        assert_eq!(e.scope, Scope::Connection);
    }
}
