//! HTTP/2 frames (RFC 9113 §4, §6): the 9-octet header, a parser for each frame type's payload,
//! the writers for the frames weir sends, and a splitter that finds whole frames in received
//! bytes. Pure functions over byte slices: no I/O, no connection state.
//!
//! Each parser takes a frame's [`Head`] and its payload (the `head.len` octets after the head)
//! and returns views into the payload, or the [`FrameError`] the frame is refused with: the rule
//! broken, the [`ErrorCode`] to send, and the [`Scope`] it ends (§5.4: a connection error means
//! GOAWAY and close, a stream error RST_STREAM on that stream only).
//!
//! Refused here (C: connection error, S: stream error):
//! - any frame above the receiver's SETTINGS_MAX_FRAME_SIZE: FRAME_SIZE_ERROR, C for SETTINGS,
//!   HEADERS, PUSH_PROMISE, CONTINUATION and anything on stream 0, S otherwise (§4.2);
//! - DATA, HEADERS, CONTINUATION, PRIORITY, RST_STREAM on stream 0: PROTOCOL_ERROR, C;
//! - SETTINGS, PING, GOAWAY on a stream other than 0: PROTOCOL_ERROR, C;
//! - padding longer than the rest of a DATA or HEADERS payload: PROTOCOL_ERROR, C (§6.1, §6.2);
//!   a payload too short for the Pad Length octet or HEADERS' priority fields: FRAME_SIZE_ERROR,
//!   S for DATA, C for HEADERS (§4.2);
//! - a stream depending on itself: PROTOCOL_ERROR, S (§5.3.1) — on HEADERS reported beside the
//!   fragment, which must still be decoded to keep HPACK state;
//! - PRIORITY of length other than 5: FRAME_SIZE_ERROR, S (§6.3);
//! - SETTINGS ACK with a payload, SETTINGS length not a multiple of 6, PING length other than 8,
//!   GOAWAY shorter than 8, RST_STREAM or WINDOW_UPDATE length other than 4: FRAME_SIZE_ERROR, C;
//! - SETTINGS values out of range: ENABLE_PUSH or ENABLE_CONNECT_PROTOCOL not 0 or 1, and
//!   MAX_FRAME_SIZE outside 16,384..=16,777,215: PROTOCOL_ERROR, C; INITIAL_WINDOW_SIZE above
//!   2^31−1: FLOW_CONTROL_ERROR, C (§6.5.2);
//! - WINDOW_UPDATE with increment 0: PROTOCOL_ERROR, C on stream 0, S otherwise (§6.9);
//! - every PUSH_PROMISE: PROTOCOL_ERROR, C (weir never accepts server push).
//!
//! Not refused: unknown frame types, flags, settings identifiers and error codes (§4.1, §5.5,
//! §6.5.2, §7). Left to the connection, which keeps the state they need: stream states,
//! CONTINUATION following its HEADERS (§6.10), flow-control windows, SETTINGS timeouts, rules
//! that depend on the endpoint's role, and HPACK (`h2wire::hpack`).

mod control;
mod data;
mod error;
mod head;
mod headers;
mod pad;
mod priority;
mod settings;
mod size;
mod split;
#[cfg(test)]
mod testing;
mod write;

pub use control::{
    parse_goaway, parse_ping, parse_rst_stream, parse_window_update, refuse_push_promise, GoAway,
    Ping,
};
pub use data::{parse_data, Data};
pub use error::{ErrorCode, FrameError, Scope};
pub use head::{flag, Head, Kind, DEFAULT_MAX_FRAME_SIZE, HEAD_LEN, MAX_ALLOWED_FRAME_SIZE};
pub use headers::{parse_continuation, parse_headers, Continuation, Headers};
pub use priority::{parse_priority, Priority};
pub use settings::{
    parse_settings, write_settings, write_settings_ack, Settings, SettingsFrame,
    SETTINGS_ENABLE_CONNECT_PROTOCOL, SETTINGS_ENABLE_PUSH, SETTINGS_HEADER_TABLE_SIZE,
    SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_MAX_FRAME_SIZE,
    SETTINGS_MAX_HEADER_LIST_SIZE,
};
pub use size::check_size;
pub use split::next_frame;
pub use write::{
    write_data, write_goaway, write_headers, write_ping, write_rst_stream, write_window_update,
    PREFACE,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Every parser, on every flag combination it reads and every payload up to 20 octets of a
    /// few patterns, on stream 0 and a stream: no panic, and a refusal names the frame given.
    #[test]
    fn parsers_take_any_short_payload_without_panicking() {
        let flag_sets = [
            0,
            flag::PADDED,
            flag::PRIORITY,
            flag::PADDED | flag::PRIORITY,
            0xff,
        ];
        for kind in (0..=9).map(Kind::from) {
            for flags in flag_sets {
                for stream in [0, 1] {
                    for fill in [0x00, 0x01, 0x7f, 0xff] {
                        for len in 0..=20 {
                            let payload = vec![fill; len];
                            let head = Head {
                                len: len as u32,
                                kind,
                                flags,
                                stream,
                            };
                            if let Err(e) = parse_any(&head, &payload) {
                                assert_eq!(e.head, head);
                            }
                        }
                    }
                }
            }
        }
    }

    fn parse_any(head: &Head, payload: &[u8]) -> Result<(), FrameError> {
        match head.kind {
            Kind::Data => parse_data(head, payload).map(drop),
            Kind::Headers => parse_headers(head, payload).map(drop),
            Kind::Priority => parse_priority(head, payload).map(drop),
            Kind::RstStream => parse_rst_stream(head, payload).map(drop),
            Kind::Settings => parse_settings(head, payload).map(drop),
            Kind::PushPromise => Err(refuse_push_promise(head)),
            Kind::Ping => parse_ping(head, payload).map(drop),
            Kind::GoAway => parse_goaway(head, payload).map(drop),
            Kind::WindowUpdate => parse_window_update(head, payload).map(drop),
            Kind::Continuation => parse_continuation(head, payload).map(drop),
            Kind::Unknown(_) => Ok(()),
        }
    }
}
