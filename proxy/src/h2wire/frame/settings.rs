//! SETTINGS frames (RFC 9113 §6.5): parsing with each defined value's range checked, and writing.
//!
//! What depends on the endpoint's role or on earlier frames is the connection's to check: a
//! client must also refuse SETTINGS_ENABLE_PUSH = 1 from a server (§6.5.2), and a peer must not
//! turn SETTINGS_ENABLE_CONNECT_PROTOCOL from 1 back to 0 (RFC 8441 §3).

use super::error::{ErrorCode, FrameError};
use super::head::{flag, Head, Kind, DEFAULT_MAX_FRAME_SIZE, MAX_ALLOWED_FRAME_SIZE, U31};
use super::write::begin;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;
/// RFC 8441 §3 (extended CONNECT, for WebSockets over HTTP/2).
pub const SETTINGS_ENABLE_CONNECT_PROTOCOL: u16 = 0x8;

/// The values a SETTINGS frame carries, each `None` when absent. When one appears twice the
/// last wins: settings are processed in order (§6.5.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub header_table_size: Option<u32>,
    pub enable_push: Option<bool>,
    pub max_concurrent_streams: Option<u32>,
    /// At most 2^31−1.
    pub initial_window_size: Option<u32>,
    /// Within 16,384..=16,777,215.
    pub max_frame_size: Option<u32>,
    pub max_header_list_size: Option<u32>,
    pub enable_connect_protocol: Option<bool>,
}

/// A SETTINGS frame: the peer's values, or its acknowledgement of ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingsFrame {
    Ack,
    Values(Settings),
}

/// Parses a SETTINGS payload. Refuses, all as connection errors: a stream other than 0
/// (PROTOCOL_ERROR); an ACK with a payload, or a length not a multiple of 6 (FRAME_SIZE_ERROR);
/// ENABLE_PUSH or ENABLE_CONNECT_PROTOCOL other than 0 or 1, MAX_FRAME_SIZE out of its range
/// (PROTOCOL_ERROR); INITIAL_WINDOW_SIZE above 2^31−1 (FLOW_CONTROL_ERROR). Identifiers not
/// known here are ignored (§6.5.2).
pub fn parse_settings(head: &Head, payload: &[u8]) -> Result<SettingsFrame, FrameError> {
    let refuse = |code, why| Err(FrameError::connection(head, code, why));
    if head.stream != 0 {
        return refuse(ErrorCode::PROTOCOL_ERROR, "it must be on stream 0");
    }
    if head.has(flag::ACK) {
        if !payload.is_empty() {
            return refuse(ErrorCode::FRAME_SIZE_ERROR, "ACK carries a payload");
        }
        return Ok(SettingsFrame::Ack);
    }
    let (entries, rest) = payload.as_chunks::<6>();
    if !rest.is_empty() {
        return refuse(ErrorCode::FRAME_SIZE_ERROR, "length is not a multiple of 6");
    }
    let mut s = Settings::default();
    for &[i0, i1, v0, v1, v2, v3] in entries {
        let (id, value) = (
            u16::from_be_bytes([i0, i1]),
            u32::from_be_bytes([v0, v1, v2, v3]),
        );
        if let Some((code, why)) = out_of_range(id, value) {
            return refuse(code, why);
        }
        let flag = value == 1;
        match id {
            SETTINGS_HEADER_TABLE_SIZE => s.header_table_size = Some(value),
            SETTINGS_ENABLE_PUSH => s.enable_push = Some(flag),
            SETTINGS_MAX_CONCURRENT_STREAMS => s.max_concurrent_streams = Some(value),
            SETTINGS_INITIAL_WINDOW_SIZE => s.initial_window_size = Some(value),
            SETTINGS_MAX_FRAME_SIZE => s.max_frame_size = Some(value),
            SETTINGS_MAX_HEADER_LIST_SIZE => s.max_header_list_size = Some(value),
            SETTINGS_ENABLE_CONNECT_PROTOCOL => s.enable_connect_protocol = Some(flag),
            _ => {}
        }
    }
    Ok(SettingsFrame::Values(s))
}

/// The code and rule a value outside its setting's range breaks (§6.5.2, RFC 8441 §3).
fn out_of_range(id: u16, value: u32) -> Option<(ErrorCode, &'static str)> {
    Some(match id {
        SETTINGS_ENABLE_PUSH if value > 1 => (
            ErrorCode::PROTOCOL_ERROR,
            "SETTINGS_ENABLE_PUSH is not 0 or 1",
        ),
        SETTINGS_ENABLE_CONNECT_PROTOCOL if value > 1 => (
            ErrorCode::PROTOCOL_ERROR,
            "SETTINGS_ENABLE_CONNECT_PROTOCOL is not 0 or 1",
        ),
        // A flow-control window can be at most 2^31−1 (§6.9.1), and this is the window every
        // stream starts with: a larger one is a flow-control error, not a protocol error.
        SETTINGS_INITIAL_WINDOW_SIZE if value > U31 => (
            ErrorCode::FLOW_CONTROL_ERROR,
            "SETTINGS_INITIAL_WINDOW_SIZE is above 2^31-1",
        ),
        SETTINGS_MAX_FRAME_SIZE
            if !(DEFAULT_MAX_FRAME_SIZE..=MAX_ALLOWED_FRAME_SIZE).contains(&value) =>
        {
            (
                ErrorCode::PROTOCOL_ERROR,
                "SETTINGS_MAX_FRAME_SIZE is outside 16,384..=16,777,215",
            )
        }
        _ => return None,
    })
}

/// Appends a SETTINGS frame carrying `values` as (identifier, value) pairs, in order.
pub fn write_settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    begin(out, Kind::Settings, 0, 0, values.len().saturating_mul(6));
    for &(id, value) in values {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends a SETTINGS frame acknowledging the peer's (§6.5.3).
pub fn write_settings_ack(out: &mut Vec<u8>) {
    begin(out, Kind::Settings, flag::ACK, 0, 0);
}

#[cfg(test)]
mod tests {
    use super::super::error::Scope;
    use super::super::testing::{head, refusal, CONN_PROTOCOL, CONN_SIZE};
    use super::*;

    fn parse_written(out: &[u8]) -> Result<SettingsFrame, FrameError> {
        let (head, payload) = out.split_at(9);
        let head = Head::read(head).unwrap();
        assert_eq!(payload.len(), head.len as usize);
        parse_settings(&head, payload)
    }

    fn parse_values(values: &[(u16, u32)]) -> Result<SettingsFrame, FrameError> {
        let mut out = Vec::new();
        write_settings(&mut out, values);
        parse_written(&out)
    }

    #[test]
    fn every_known_setting_round_trips() {
        let values = [
            (SETTINGS_HEADER_TABLE_SIZE, 4096),
            (SETTINGS_ENABLE_PUSH, 0),
            (SETTINGS_MAX_CONCURRENT_STREAMS, 100),
            (SETTINGS_INITIAL_WINDOW_SIZE, 0x7fff_ffff),
            (SETTINGS_MAX_FRAME_SIZE, 16_777_215),
            (SETTINGS_MAX_HEADER_LIST_SIZE, 65_536),
            (SETTINGS_ENABLE_CONNECT_PROTOCOL, 1),
        ];
        let want = Settings {
            header_table_size: Some(4096),
            enable_push: Some(false),
            max_concurrent_streams: Some(100),
            initial_window_size: Some(0x7fff_ffff),
            max_frame_size: Some(16_777_215),
            max_header_list_size: Some(65_536),
            enable_connect_protocol: Some(true),
        };
        assert_eq!(parse_values(&values), Ok(SettingsFrame::Values(want)));
        assert_eq!(
            parse_values(&[]),
            Ok(SettingsFrame::Values(Settings::default()))
        );
    }

    #[test]
    fn unknown_identifiers_are_ignored_and_the_last_repeat_wins() {
        let values = [
            (SETTINGS_MAX_FRAME_SIZE, 20_000),
            (0x9, 1),
            (0xffff, 7),
            (SETTINGS_MAX_FRAME_SIZE, 16_384),
        ];
        let want = Settings {
            max_frame_size: Some(16_384),
            ..Settings::default()
        };
        assert_eq!(parse_values(&values), Ok(SettingsFrame::Values(want)));
    }

    #[test]
    fn ack_round_trips_and_must_be_empty() {
        let mut out = Vec::new();
        write_settings_ack(&mut out);
        assert_eq!(out, [0, 0, 0, 0x4, 0x1, 0, 0, 0, 0]);
        assert_eq!(parse_written(&out), Ok(SettingsFrame::Ack));
        let payload = [0, 1, 0, 0, 0, 0];
        let head = head(Kind::Settings, flag::ACK, 0, &payload);
        assert_eq!(refusal(parse_settings(&head, &payload)), CONN_SIZE);
    }

    #[test]
    fn a_stream_other_than_0_is_a_connection_protocol_error() {
        let head = head(Kind::Settings, 0, 1, b"");
        assert_eq!(refusal(parse_settings(&head, b"")), CONN_PROTOCOL);
    }

    #[test]
    fn a_length_not_a_multiple_of_6_is_a_connection_frame_size_error() {
        for len in [1, 5, 7, 11] {
            let payload = vec![0; len];
            let head = head(Kind::Settings, 0, 0, &payload);
            assert_eq!(refusal(parse_settings(&head, &payload)), CONN_SIZE);
        }
    }

    #[test]
    fn values_out_of_range_are_connection_errors() {
        let conn_flow = (Scope::Connection, ErrorCode::FLOW_CONTROL_ERROR);
        let refused = |id, value| refusal(parse_values(&[(id, value)]));
        assert_eq!(refused(SETTINGS_ENABLE_PUSH, 2), CONN_PROTOCOL);
        assert_eq!(refused(SETTINGS_ENABLE_CONNECT_PROTOCOL, 2), CONN_PROTOCOL);
        assert_eq!(refused(SETTINGS_INITIAL_WINDOW_SIZE, 1 << 31), conn_flow);
        assert_eq!(refused(SETTINGS_MAX_FRAME_SIZE, 16_383), CONN_PROTOCOL);
        assert_eq!(refused(SETTINGS_MAX_FRAME_SIZE, 16_777_216), CONN_PROTOCOL);
        assert_eq!(refused(SETTINGS_MAX_FRAME_SIZE, 0), CONN_PROTOCOL);
        // A bad value after good ones still refuses the frame.
        let values = [(SETTINGS_HEADER_TABLE_SIZE, 0), (SETTINGS_ENABLE_PUSH, 9)];
        assert_eq!(refusal(parse_values(&values)), CONN_PROTOCOL);
    }

    #[test]
    fn written_bytes_are_big_endian_pairs() {
        let mut out = Vec::new();
        write_settings(&mut out, &[(SETTINGS_INITIAL_WINDOW_SIZE, 0x0102_0304)]);
        assert_eq!(out, [0, 0, 6, 0x4, 0, 0, 0, 0, 0, 0, 0x4, 1, 2, 3, 4]);
    }
}
