//! The connection's own frames: preface, SETTINGS both ways, PING, GOAWAY, stream identifiers
//! and the errors that end the connection.

use super::peer::*;
use crate::h2wire::frame::{
    flag, parse_settings, ErrorCode, Kind, SettingsFrame, PREFACE,
    SETTINGS_ENABLE_CONNECT_PROTOCOL, SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_MAX_HEADER_LIST_SIZE,
};
use crate::h2wire::server::{Config, Event, ServerConn};

#[test]
fn settings_and_connection_window_go_first_then_the_clients_are_acknowledged() {
    let mut conn = ServerConn::new(Config::default());
    let frames = written(&mut conn);
    assert_eq!(frames.len(), 2);
    assert!(frames[0].is(Kind::Settings, 0));
    let SettingsFrame::Values(ours) = parse_settings(&frames[0].head, &frames[0].payload).unwrap()
    else {
        panic!("not an ACK");
    };
    assert_eq!(ours.max_concurrent_streams, Some(200));
    assert_eq!(ours.initial_window_size, Some(1 << 20));
    assert_eq!(ours.max_header_list_size, Some(64 << 10));
    assert_eq!(ours.enable_connect_protocol, None);
    assert!(frames[1].is(Kind::WindowUpdate, 0));

    // The preface may come in pieces; nothing is consumed until it is whole.
    let mut events = Vec::new();
    assert_eq!(conn.receive(&PREFACE[..10], &mut events), Ok(0));
    let mut client = Client::new();
    client
        .preface()
        .settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 100)]);
    let events = client.send(&mut conn).unwrap();
    assert_eq!(events, [Event::Settings]);
    assert!(conn.is_settled() && !conn.settings_acked());
    let frames = written(&mut conn);
    assert_eq!(frames.len(), 1);
    assert!(frames[0].is(Kind::Settings, 0) && frames[0].head.has(flag::ACK));
    client.settings_ack().send(&mut conn).unwrap();
    assert!(conn.settings_acked());

    let on = Config {
        enable_connect_protocol: true,
        ..Config::default()
    };
    let frames = written(&mut ServerConn::new(on));
    let SettingsFrame::Values(ours) = parse_settings(&frames[0].head, &frames[0].payload).unwrap()
    else {
        panic!("not an ACK");
    };
    assert_eq!(ours.enable_connect_protocol, Some(true));
    let _ = (
        SETTINGS_ENABLE_CONNECT_PROTOCOL,
        SETTINGS_MAX_CONCURRENT_STREAMS,
    );
    let _ = SETTINGS_MAX_HEADER_LIST_SIZE;
}

#[test]
fn a_wrong_preface_or_a_first_frame_other_than_settings_ends_the_connection() {
    let mut conn = ServerConn::new(Config::default());
    conn.output().clear();
    let mut events = Vec::new();
    let e = conn
        .receive(b"GET / HTTP/1.1\r\n", &mut events)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);
    assert_eq!(
        goaway(&written(&mut conn)),
        Some((0, ErrorCode::PROTOCOL_ERROR))
    );
    assert_eq!(
        conn.receive(PREFACE, &mut events),
        Err(e),
        "the error sticks"
    );

    let mut conn = ServerConn::new(Config::default());
    let e = Client::new()
        .preface()
        .ping([1; 8])
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn a_ping_is_answered_and_an_answer_reported() {
    let (mut conn, mut client) = ready(Config::default());
    client.ping([7; 8]).send(&mut conn).unwrap();
    let frames = written(&mut conn);
    assert!(frames[0].is(Kind::Ping, 0) && frames[0].head.has(flag::ACK));
    assert_eq!(frames[0].payload, [7; 8]);
    conn.ping([9; 8]);
    assert!(!written(&mut conn)[0].head.has(flag::ACK));
    let events = client
        .frame(Kind::Ping, flag::ACK, 0, &[9; 8])
        .send(&mut conn)
        .unwrap();
    assert_eq!(events, [Event::PingAck([9; 8])]);
}

#[test]
fn stream_ids_out_of_order_or_even_end_the_connection() {
    let (mut conn, mut client) = ready(Config::default());
    client.request(5, "GET", &[], true).send(&mut conn).unwrap();
    let e = client
        .request(3, "GET", &[], true)
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);
    assert_eq!(
        goaway(&written(&mut conn)),
        Some((5, ErrorCode::PROTOCOL_ERROR))
    );

    let (mut conn, mut client) = ready(Config::default());
    let e = client
        .request(2, "GET", &[], true)
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);

    let (mut conn, mut client) = ready(Config::default());
    let e = client.data(1, b"x", true).send(&mut conn).unwrap_err();
    assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR, "DATA on an idle stream");
}

#[test]
fn graceful_goaway_names_the_last_stream_and_refuses_later_ones() {
    let (mut conn, mut client) = ready(Config::default());
    client.request(1, "GET", &[], true).send(&mut conn).unwrap();
    conn.go_away(ErrorCode::NO_ERROR);
    assert_eq!(goaway(&written(&mut conn)), Some((1, ErrorCode::NO_ERROR)));
    assert!(!conn.is_done(), "stream 1 goes on");
    let events = client.request(3, "GET", &[], true).send(&mut conn).unwrap();
    assert_eq!(
        reset_events(&events),
        [(3, ErrorCode::REFUSED_STREAM, true)]
    );
    assert_eq!(
        resets(&written(&mut conn)),
        [(3, ErrorCode::REFUSED_STREAM)]
    );
    assert!(conn.respond(1, 204, [], true));
    assert!(conn.is_done());
    conn.go_away(ErrorCode::NO_ERROR);
    assert_eq!(goaway(&written(&mut conn)), None, "sent once");
}

#[test]
fn the_clients_goaway_is_reported() {
    let (mut conn, mut client) = ready(Config::default());
    let events = client
        .goaway(0, ErrorCode::NO_ERROR)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        events,
        [Event::GoAway {
            last_stream: 0,
            code: ErrorCode::NO_ERROR
        }]
    );
}
