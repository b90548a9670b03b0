//! Writing the frames weir sends (SETTINGS' writers are in `settings`), and the client
//! connection preface.

use super::error::ErrorCode;
use super::head::{flag, Head, Kind, HEAD_LEN, U31};
use super::head::{DEFAULT_MAX_FRAME_SIZE, MAX_ALLOWED_FRAME_SIZE};

/// What a client sends first, before its SETTINGS frame (§3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Appends DATA frames carrying `data` on `stream`, split into frames of at most
/// `max_frame_size` octets (the peer's SETTINGS_MAX_FRAME_SIZE, taken within 16,384..=16,777,215);
/// END_STREAM, if asked for, only on the last. Empty `data` gives one empty frame. Never padded.
/// Flow control is the caller's: `data` must fit the stream's and the connection's windows.
pub fn write_data(
    out: &mut Vec<u8>,
    stream: u32,
    data: &[u8],
    end_stream: bool,
    max_frame_size: u32,
) {
    let last = if end_stream { flag::END_STREAM } else { 0 };
    let mut chunks = data.chunks(chunk_len(max_frame_size)).peekable();
    if chunks.peek().is_none() {
        frame(out, Kind::Data, last, stream, &[]);
    }
    while let Some(chunk) = chunks.next() {
        let flags = if chunks.peek().is_none() { last } else { 0 };
        frame(out, Kind::Data, flags, stream, chunk);
    }
}

/// Appends a field block (HPACK-encoded) as a HEADERS frame of at most `max_frame_size` octets
/// (taken as for DATA) and as many CONTINUATION frames as the rest needs (§4.3). END_HEADERS
/// only on the last of them; END_STREAM, if asked for, on the HEADERS frame, since CONTINUATION
/// does not define it (§6.10). The frames must reach the peer with no other frame between them
/// (§4.3): the caller queues them as one piece.
pub fn write_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame_size: u32,
) {
    let mut chunks = block.chunks(chunk_len(max_frame_size)).peekable();
    let first = chunks.next().unwrap_or_default();
    let end_headers = |more: bool| if more { 0 } else { flag::END_HEADERS };
    let end_stream = if end_stream { flag::END_STREAM } else { 0 };
    let flags = end_stream | end_headers(chunks.peek().is_some());
    frame(out, Kind::Headers, flags, stream, first);
    while let Some(chunk) = chunks.next() {
        let flags = end_headers(chunks.peek().is_some());
        frame(out, Kind::Continuation, flags, stream, chunk);
    }
}

/// Appends a RST_STREAM frame ending `stream` with `code`.
pub fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    frame(out, Kind::RstStream, 0, stream, &code.0.to_be_bytes());
}

/// Appends a PING frame, or with `ack` the answer to the peer's PING carrying `opaque`.
pub fn write_ping(out: &mut Vec<u8>, opaque: [u8; 8], ack: bool) {
    frame(out, Kind::Ping, if ack { flag::ACK } else { 0 }, 0, &opaque);
}

/// Appends a GOAWAY frame. `debug` is cut to 16,376 octets, so that the frame fits the smallest
/// SETTINGS_MAX_FRAME_SIZE a peer can have.
pub fn write_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode, debug: &[u8]) {
    let debug = debug
        .get(..DEFAULT_MAX_FRAME_SIZE as usize - 8)
        .unwrap_or(debug);
    begin(out, Kind::GoAway, 0, 0, 8 + debug.len());
    out.extend_from_slice(&(last_stream & U31).to_be_bytes());
    out.extend_from_slice(&code.0.to_be_bytes());
    out.extend_from_slice(debug);
}

/// Appends a WINDOW_UPDATE frame for `stream` (0: the connection). `increment` must be in
/// 1..=2^31−1: the peer refuses 0 (§6.9), and only the low 31 bits are sent.
pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    let increment = (increment & U31).to_be_bytes();
    frame(out, Kind::WindowUpdate, 0, stream, &increment);
}

/// The payload octets per frame for a peer's SETTINGS_MAX_FRAME_SIZE, held to the range a
/// validated SETTINGS allows, so that a 0 could never split a block forever.
fn chunk_len(max_frame_size: u32) -> usize {
    max_frame_size.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_ALLOWED_FRAME_SIZE) as usize
}

/// Appends one frame.
fn frame(out: &mut Vec<u8>, kind: Kind, flags: u8, stream: u32, payload: &[u8]) {
    begin(out, kind, flags, stream, payload.len());
    out.extend_from_slice(payload);
}

/// Appends the head of a frame whose `len` octets of payload the caller appends next. Every
/// caller's `len` is within `MAX_ALLOWED_FRAME_SIZE`.
pub(super) fn begin(out: &mut Vec<u8>, kind: Kind, flags: u8, stream: u32, len: usize) {
    out.reserve(HEAD_LEN + len);
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    Head {
        len,
        kind,
        flags,
        stream,
    }
    .write(out);
}

#[cfg(test)]
mod tests {
    use super::super::control::{parse_goaway, parse_ping, parse_rst_stream, parse_window_update};
    use super::super::data::parse_data;
    use super::super::headers::{parse_continuation, parse_headers};
    use super::super::split::next_frame;
    use super::*;

    /// Every frame in `buf` (all whole), with its payload.
    fn frames(buf: &[u8]) -> Vec<(Head, &[u8])> {
        let mut rest = buf;
        let mut all = Vec::new();
        while !rest.is_empty() {
            let (head, range) = next_frame(rest, MAX_ALLOWED_FRAME_SIZE).unwrap().unwrap();
            all.push((head, &rest[range.clone()]));
            rest = &rest[range.end..];
        }
        all
    }

    /// The only frame in `buf`.
    fn only(buf: &[u8]) -> (Head, &[u8]) {
        let all = frames(buf);
        assert_eq!(all.len(), 1);
        all[0]
    }

    #[test]
    fn preface_is_the_rfc_octets() {
        assert_eq!(PREFACE.len(), 24);
        assert_eq!(&PREFACE[..], b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    }

    #[test]
    fn a_40000_octet_block_is_headers_and_two_continuations() {
        let block: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        let mut out = Vec::new();
        write_headers(&mut out, 5, &block, true, 16_384);
        let all = frames(&out);
        let shape: Vec<_> = all
            .iter()
            .map(|(h, _)| (h.kind, h.len, h.stream, h.flags))
            .collect();
        assert_eq!(
            shape,
            [
                (Kind::Headers, 16_384, 5, flag::END_STREAM),
                (Kind::Continuation, 16_384, 5, 0),
                (Kind::Continuation, 7_232, 5, flag::END_HEADERS),
            ]
        );
        let h = parse_headers(&all[0].0, all[0].1).unwrap();
        assert!(h.end_stream && !h.end_headers);
        let mut joined = h.fragment.to_vec();
        for (head, payload) in &all[1..] {
            joined.extend_from_slice(parse_continuation(head, payload).unwrap().fragment);
        }
        assert_eq!(joined, block);
    }

    #[test]
    fn a_block_that_fits_is_one_headers_frame_even_empty() {
        for block in [&b"\x82\x86\x84"[..], b"", &[7; 16_384]] {
            let mut out = Vec::new();
            write_headers(&mut out, 1, block, false, 16_384);
            let (head, payload) = only(&out);
            let h = parse_headers(&head, payload).unwrap();
            assert_eq!(
                (h.fragment, h.end_headers, h.end_stream),
                (block, true, false)
            );
        }
    }

    #[test]
    fn a_max_frame_size_below_the_minimum_is_taken_as_the_minimum() {
        let mut out = Vec::new();
        write_headers(&mut out, 1, &[0; 16_385], false, 0);
        let lens: Vec<_> = frames(&out).iter().map(|(h, _)| h.len).collect();
        assert_eq!(lens, [16_384, 1]);
    }

    #[test]
    fn data_round_trips_split_with_end_stream_on_the_last() {
        let data: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
        let mut out = Vec::new();
        write_data(&mut out, 3, &data, true, 16_384);
        let parsed: Vec<_> = frames(&out)
            .iter()
            .map(|(h, p)| parse_data(h, p).unwrap())
            .collect();
        let shape: Vec<_> = parsed
            .iter()
            .map(|d| (d.data.len(), d.end_stream))
            .collect();
        assert_eq!(shape, [(16_384, false), (3_616, true)]);
        assert_eq!(
            parsed
                .iter()
                .flat_map(|d| d.data)
                .copied()
                .collect::<Vec<_>>(),
            data
        );
    }

    #[test]
    fn short_and_empty_data_are_one_frame() {
        for (data, end_stream) in [(&b""[..], true), (b"abc", false), (b"abc", true)] {
            let mut out = Vec::new();
            write_data(&mut out, 3, data, end_stream, 16_384);
            let (head, payload) = only(&out);
            let d = parse_data(&head, payload).unwrap();
            assert_eq!((head.stream, d.data, d.end_stream), (3, data, end_stream));
        }
    }

    #[test]
    fn control_frames_round_trip() {
        let mut out = Vec::new();
        write_rst_stream(&mut out, 7, ErrorCode::REFUSED_STREAM);
        let (head, payload) = only(&out);
        assert_eq!(head.stream, 7);
        assert_eq!(
            parse_rst_stream(&head, payload),
            Ok(ErrorCode::REFUSED_STREAM)
        );

        for ack in [false, true] {
            out.clear();
            write_ping(&mut out, *b"\x01\x02\x03\x04\x05\x06\x07\x08", ack);
            let (head, payload) = only(&out);
            let ping = parse_ping(&head, payload).unwrap();
            assert_eq!(
                (ping.opaque, ping.ack),
                (*b"\x01\x02\x03\x04\x05\x06\x07\x08", ack)
            );
        }

        out.clear();
        write_goaway(&mut out, 0x8000_0009, ErrorCode(0x77), b"bye");
        let (head, payload) = only(&out);
        let g = parse_goaway(&head, payload).unwrap();
        assert_eq!(
            (g.last_stream, g.code, g.debug),
            (9, ErrorCode(0x77), &b"bye"[..])
        );

        for (stream, increment) in [(0, 1), (9, 0x7fff_ffff)] {
            out.clear();
            write_window_update(&mut out, stream, increment);
            let (head, payload) = only(&out);
            assert_eq!(head.stream, stream);
            assert_eq!(parse_window_update(&head, payload), Ok(increment));
        }
    }

    #[test]
    fn goaway_debug_data_is_cut_to_fit_the_smallest_frame_limit() {
        let mut out = Vec::new();
        write_goaway(&mut out, 1, ErrorCode::NO_ERROR, &[b'x'; 20_000]);
        let (head, payload) = only(&out);
        assert_eq!(head.len, DEFAULT_MAX_FRAME_SIZE);
        assert_eq!(parse_goaway(&head, payload).unwrap().debug.len(), 16_376);
    }
}
