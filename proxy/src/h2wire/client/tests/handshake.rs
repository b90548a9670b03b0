//! The connection's own frames: preface, SETTINGS both ways, PING, GOAWAY, and the errors
//! that end the connection.

use super::peer::*;
use crate::h2wire::client::{ClientConn, Config, Event, OpenError};
use crate::h2wire::frame::{
    flag, parse_settings, ErrorCode, Kind, SettingsFrame, PREFACE, SETTINGS_ENABLE_PUSH,
    SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_MAX_FRAME_SIZE,
};

#[test]
fn preface_settings_and_connection_window_go_first() {
    let mut conn = ClientConn::new(Config::default());
    assert!(conn.output().starts_with(PREFACE));
    let frames = written(&mut conn);
    assert_eq!(frames.len(), 2);
    assert!(frames[0].is(Kind::Settings, 0));
    let SettingsFrame::Values(ours) = parse_settings(&frames[0].head, &frames[0].payload).unwrap()
    else {
        panic!("not an ACK");
    };
    assert_eq!(ours.enable_push, Some(false));
    assert_eq!(ours.initial_window_size, Some(1 << 20));
    assert_eq!(ours.max_header_list_size, Some(64 << 10));
    assert_eq!(window_updates(&frames), [(0, (1 << 20) - 65_535)]);
}

#[test]
fn server_settings_are_applied_and_acknowledged() {
    let mut conn = ClientConn::new(Config::default());
    conn.output().clear();
    assert!(!conn.is_settled());
    let values = [
        (SETTINGS_MAX_CONCURRENT_STREAMS, 2),
        (SETTINGS_MAX_FRAME_SIZE, 20_000),
    ];
    let events = Server::new().settings(&values).send(&mut conn).unwrap();
    assert_eq!(
        events,
        [Event::Settings {
            max_concurrent_streams: Some(2)
        }]
    );
    assert!(conn.is_settled() && !conn.settings_acked());
    let frames = written(&mut conn);
    assert_eq!(frames.len(), 1);
    assert!(frames[0].is(Kind::Settings, 0) && frames[0].head.has(flag::ACK));
    assert_eq!(frames[0].head.len, 0);

    Server::new().settings_ack().send(&mut conn).unwrap();
    assert!(conn.settings_acked());

    // MAX_CONCURRENT_STREAMS: two streams, then no more until one ends.
    let a = request(&mut conn, "GET", true);
    assert!(conn.can_open());
    request(&mut conn, "GET", true);
    assert!(!conn.can_open());
    assert_eq!(conn.open([], true), Err(OpenError::AtLimit));
    Server::new()
        .headers(a, &[(":status", "204")], true)
        .send(&mut conn)
        .unwrap();
    assert!(conn.can_open());
    assert_eq!(conn.active_streams(), 1);

    // MAX_FRAME_SIZE: DATA goes in frames of up to 20,000 octets.
    Server::new()
        .window_update(0, 1 << 20)
        .send(&mut conn)
        .unwrap();
    written(&mut conn);
    let id = request(&mut conn, "POST", false);
    assert_eq!(conn.send_data(id, &[7; 30_000], true), 30_000);
    let lens: Vec<_> = written(&mut conn)
        .iter()
        .filter(|f| f.head.kind == Kind::Data)
        .map(|f| (f.head.len, f.head.flags))
        .collect();
    assert_eq!(lens, [(20_000, 0), (10_000, flag::END_STREAM)]);
}

#[test]
fn the_server_must_open_with_settings() {
    let mut conn = ClientConn::new(Config::default());
    conn.output().clear();
    let err = Server::new()
        .ping(*b"12345678", false)
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PROTOCOL_ERROR);
    assert_eq!(
        goaway(&written(&mut conn)),
        Some((0, ErrorCode::PROTOCOL_ERROR))
    );
    // The error stays, and nothing more is written.
    let again = Server::new().settings(&[]).send(&mut conn).unwrap_err();
    assert_eq!(again, err);
    assert!(conn.output().is_empty());
    assert_eq!(conn.open([], true), Err(OpenError::Closed));
}

#[test]
fn enable_push_from_a_server_is_a_connection_error() {
    let mut conn = ClientConn::new(Config::default());
    let err = Server::new()
        .settings(&[(SETTINGS_ENABLE_PUSH, 1)])
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PROTOCOL_ERROR);
    assert!(!conn.can_open());
    assert_eq!(
        goaway(&written(&mut conn)),
        Some((0, ErrorCode::PROTOCOL_ERROR))
    );
    // ENABLE_PUSH = 0 is fine.
    let mut conn = ClientConn::new(Config::default());
    Server::new()
        .settings(&[(SETTINGS_ENABLE_PUSH, 0)])
        .send(&mut conn)
        .unwrap();
}

#[test]
fn push_promise_is_refused() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "GET", true);
    let mut payload = 2u32.to_be_bytes().to_vec();
    payload.extend_from_slice(b"\x82");
    let err = Server::new()
        .frame(Kind::PushPromise, flag::END_HEADERS, id, &payload)
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PROTOCOL_ERROR);
    assert_eq!(conn.active_streams(), 0, "every stream is gone");
}

#[test]
fn ping_is_answered_and_answers_are_reported() {
    let mut conn = ready(Config::default());
    let events = Server::new()
        .ping(*b"pingpong", false)
        .send(&mut conn)
        .unwrap();
    assert!(events.is_empty());
    let frames = written(&mut conn);
    assert_eq!(frames.len(), 1);
    assert!(frames[0].is(Kind::Ping, 0) && frames[0].head.has(flag::ACK));
    assert_eq!(frames[0].payload, b"pingpong");

    conn.ping(*b"\x00\x01\x02\x03\x04\x05\x06\x07");
    let frames = written(&mut conn);
    assert!(frames[0].is(Kind::Ping, 0) && !frames[0].head.has(flag::ACK));
    let events = Server::new()
        .ping(*b"\x00\x01\x02\x03\x04\x05\x06\x07", true)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        events,
        [Event::PingAck(*b"\x00\x01\x02\x03\x04\x05\x06\x07")]
    );
    assert!(conn.output().is_empty(), "an ACK is not answered");
}

#[test]
fn goaway_reports_the_streams_above_its_last_as_unprocessed() {
    let mut conn = ready(Config::default());
    let ids: Vec<u32> = (0..4).map(|_| request(&mut conn, "GET", true)).collect();
    assert_eq!(ids, [1, 3, 5, 7]);
    written(&mut conn);
    let events = Server::new()
        .goaway(3, ErrorCode::NO_ERROR)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        events,
        [Event::GoAway {
            last_stream: 3,
            code: ErrorCode::NO_ERROR,
            unprocessed: vec![5, 7],
        }]
    );
    assert!(!conn.can_open());
    assert_eq!(conn.open([], true), Err(OpenError::GoingAway));
    assert_eq!(conn.active_streams(), 2);
    // Streams 1 and 3 go on to their end; frames on 5 and 7 are dropped.
    let events = Server::new()
        .headers(3, &[(":status", "200")], true)
        .headers(5, &[(":status", "200")], true)
        .send(&mut conn)
        .unwrap();
    assert!(
        matches!(events[..], [Event::Response { id: 3, .. }]),
        "{events:?}"
    );
    // A later GOAWAY may lower the last stream, not raise it.
    let events = Server::new()
        .goaway(0, ErrorCode::NO_ERROR)
        .send(&mut conn)
        .unwrap();
    assert!(
        matches!(&events[..], [Event::GoAway { unprocessed, .. }] if unprocessed == &[1]),
        "{events:?}"
    );
    assert!(written(&mut conn).is_empty(), "no RST_STREAM for them");
}

#[test]
fn this_side_s_goaway_stops_new_streams_and_is_sent_once() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "GET", true);
    written(&mut conn);
    conn.go_away(ErrorCode::NO_ERROR);
    conn.go_away(ErrorCode::NO_ERROR);
    let frames = written(&mut conn);
    assert_eq!(frames.len(), 1);
    assert_eq!(goaway(&frames), Some((0, ErrorCode::NO_ERROR)));
    assert_eq!(conn.open([], true), Err(OpenError::Closed));
    let events = Server::new()
        .headers(id, &[(":status", "200")], true)
        .send(&mut conn)
        .unwrap();
    assert!(matches!(events[..], [Event::Response { .. }]));
}

#[test]
fn a_smaller_header_table_of_this_side_s_holds_once_acknowledged() {
    let config = Config {
        header_table_size: 0,
        ..Config::default()
    };
    // :status 200, and x: y inserted into the server's table (RFC 7541 §6.2.1).
    let insert = [0x88, 0x40, 0x01, b'x', 0x01, b'y'];
    let after_ack = |block: &[u8]| {
        let mut conn = ClientConn::new(config);
        Server::new().settings(&[]).send(&mut conn).unwrap();
        // Before the ACK the server may still fill the 4,096 octets it started with.
        let id = request(&mut conn, "GET", true);
        let events = Server::new()
            .frame(
                Kind::Headers,
                flag::END_HEADERS | flag::END_STREAM,
                id,
                &insert,
            )
            .send(&mut conn)
            .unwrap();
        assert!(matches!(&events[..], [Event::Response { fields, .. }] if fields.len() == 1));
        Server::new().settings_ack().send(&mut conn).unwrap();
        let id = request(&mut conn, "GET", true);
        Server::new()
            .frame(
                Kind::Headers,
                flag::END_HEADERS | flag::END_STREAM,
                id,
                block,
            )
            .send(&mut conn)
    };
    // After it, the next block must first take the table to 0 (RFC 7541 §4.2).
    let err = after_ack(&[0x88]).unwrap_err();
    assert_eq!(err.code, ErrorCode::COMPRESSION_ERROR);
    let events = after_ack(&[0x20, 0x88]).unwrap();
    assert!(matches!(&events[..], [Event::Response { status: 200, .. }]));
}
