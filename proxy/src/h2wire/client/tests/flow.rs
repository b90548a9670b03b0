//! Flow control both ways (§5.2, §6.9): the server held to this side's windows, this side to
//! the server's, and the WINDOW_UPDATEs between.

use super::peer::*;
use crate::h2wire::client::{ClientConn, Config, Event};
use crate::h2wire::frame::{flag, ErrorCode, Kind, SETTINGS_INITIAL_WINDOW_SIZE};

/// Windows small enough to fill: 16,384 a stream (acknowledged), 65,535 the connection.
fn small() -> Config {
    Config {
        stream_window: 16_384,
        connection_window: 65_535,
        ..Config::default()
    }
}

#[test]
fn data_beyond_a_stream_s_window_resets_that_stream() {
    let mut conn = ready(small());
    let id = request(&mut conn, "GET", true);
    let other = request(&mut conn, "GET", true);
    written(&mut conn);
    let events = Server::new()
        .headers(id, &[(":status", "200")], false)
        .headers(other, &[(":status", "200")], false)
        .data(id, &[0; 16_384], false)
        .data(other, &[0; 100], false)
        .data(id, &[0; 1], false)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        reset_events(&events),
        [(id, ErrorCode::FLOW_CONTROL_ERROR, false, true)]
    );
    assert_eq!(
        resets(&written(&mut conn)),
        [(id, ErrorCode::FLOW_CONTROL_ERROR)]
    );
    assert_eq!(conn.active_streams(), 1, "the other stream goes on");
}

#[test]
fn data_beyond_the_connection_s_window_ends_the_connection() {
    let config = Config {
        connection_window: 65_535,
        ..Config::default()
    };
    let mut conn = ready(config);
    let id = request(&mut conn, "GET", true);
    let mut server = Server::new();
    server.headers(id, &[(":status", "200")], false);
    for _ in 0..4 {
        server.data(id, &[0; 16_384], false);
    }
    let err = server.send(&mut conn).unwrap_err();
    assert_eq!(err.code, ErrorCode::FLOW_CONTROL_ERROR);
    assert_eq!(
        goaway(&written(&mut conn)),
        Some((0, ErrorCode::FLOW_CONTROL_ERROR))
    );
}

#[test]
fn released_data_is_announced_once_half_a_window_is_free() {
    let mut conn = ready(small());
    let id = request(&mut conn, "GET", true);
    written(&mut conn);
    let events = Server::new()
        .headers(id, &[(":status", "200")], false)
        .data(id, &[0; 10_000], false)
        .send(&mut conn)
        .unwrap();
    assert_eq!(events.len(), 2);
    conn.release(id, 5_000);
    assert!(written(&mut conn).is_empty(), "below half of either window");
    conn.release(id, 5_000);
    assert_eq!(window_updates(&written(&mut conn)), [(id, 10_000)]);
    // The stream's window is whole again: 16,384 more may come, and again once released;
    // by then the connection's has half its window to announce.
    for want in [vec![(id, 16_384)], vec![(0, 42_768), (id, 16_384)]] {
        let events = Server::new()
            .data(id, &[0; 16_384], false)
            .send(&mut conn)
            .unwrap();
        assert!(reset_events(&events).is_empty());
        conn.release(id, 16_384);
        assert_eq!(window_updates(&written(&mut conn)), want);
    }
}

#[test]
fn send_data_takes_what_the_windows_allow_and_capacity_is_reported() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "POST", false);
    written(&mut conn);
    let body = vec![9u8; 100_000];
    assert_eq!(conn.send_capacity(id), 65_535);
    assert_eq!(conn.send_data(id, &body, true), 65_535);
    assert_eq!(conn.send_capacity(id), 0);
    assert_eq!(conn.send_data(id, &body[65_535..], true), 0);
    let frames = written(&mut conn);
    assert!(frames
        .iter()
        .all(|f| f.is(Kind::Data, id) && f.head.flags == 0));
    let sent: u32 = frames.iter().map(|f| f.head.len).sum();
    assert_eq!(sent, 65_535);

    // The stream's window opens first: still blocked on the connection's, but reported.
    let events = Server::new()
        .window_update(id, 50_000)
        .send(&mut conn)
        .unwrap();
    assert_eq!(events, [Event::Capacity { id: Some(id) }]);
    assert_eq!(conn.send_capacity(id), 0);
    let events = Server::new()
        .window_update(0, 40_000)
        .send(&mut conn)
        .unwrap();
    assert_eq!(events, [Event::Capacity { id: None }]);
    assert_eq!(conn.send_capacity(id), 40_000);
    assert_eq!(conn.send_data(id, &body[65_535..], true), 34_465);
    let frames = written(&mut conn);
    assert!(frames.last().unwrap().head.has(flag::END_STREAM));
    // A window that still allowed something reports nothing when it grows.
    let events = Server::new().window_update(0, 1).send(&mut conn).unwrap();
    assert!(events.is_empty());
}

#[test]
fn a_lower_initial_window_can_take_a_send_window_below_zero() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "POST", false);
    Server::new()
        .window_update(0, 1 << 20)
        .send(&mut conn)
        .unwrap();
    assert_eq!(conn.send_data(id, &[1; 60_000], false), 60_000);
    written(&mut conn);
    // 65,535 -> 16,384: 5,535 left becomes -43,616 (§6.9.2).
    let events = Server::new()
        .settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 16_384)])
        .send(&mut conn)
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(conn.send_capacity(id), 0);
    assert_eq!(conn.send_data(id, b"more", false), 0);
    let events = Server::new()
        .window_update(id, 43_616)
        .send(&mut conn)
        .unwrap();
    assert!(events.is_empty(), "back to 0: still nothing to send");
    assert_eq!(conn.send_capacity(id), 0);
    let events = Server::new()
        .window_update(id, 1_000)
        .send(&mut conn)
        .unwrap();
    assert_eq!(events, [Event::Capacity { id: Some(id) }]);
    assert_eq!(conn.send_capacity(id), 1_000);
    // A stream opened now starts at the new initial window.
    let fresh = request(&mut conn, "POST", false);
    assert_eq!(conn.send_capacity(fresh), 16_384);
    // Raising it again reopens every stream at once.
    assert_eq!(conn.send_data(id, &[1; 1_000], false), 1_000);
    let events = Server::new()
        .settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 65_535)])
        .send(&mut conn)
        .unwrap();
    let settings = Event::Settings {
        max_concurrent_streams: None,
    };
    assert_eq!(events, [settings, Event::Capacity { id: None }]);
    assert_eq!(conn.send_capacity(id), 49_151);
    assert_eq!(conn.send_capacity(fresh), 65_535);
}

#[test]
fn send_windows_past_2_31_minus_1_are_flow_control_errors() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "POST", false);
    let other = request(&mut conn, "POST", false);
    written(&mut conn);
    let events = Server::new()
        .window_update(id, 0x7fff_ffff)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        reset_events(&events),
        [(id, ErrorCode::FLOW_CONTROL_ERROR, false, true)]
    );
    assert_eq!(conn.send_capacity(other), 65_535);
    // Increment 0 on a stream: that stream's PROTOCOL_ERROR (§6.9).
    Server::new()
        .frame(Kind::WindowUpdate, 0, other, &[0; 4])
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        resets(&written(&mut conn)),
        [
            (id, ErrorCode::FLOW_CONTROL_ERROR),
            (other, ErrorCode::PROTOCOL_ERROR)
        ]
    );
    let err = Server::new()
        .window_update(0, 0x7fff_ffff)
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::FLOW_CONTROL_ERROR);

    // SETTINGS_INITIAL_WINDOW_SIZE taking an open stream's window past it: the connection's.
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "POST", false);
    Server::new()
        .window_update(id, 1_000)
        .send(&mut conn)
        .unwrap();
    let err = Server::new()
        .settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 0x7fff_ffff)])
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::FLOW_CONTROL_ERROR);
}

#[test]
fn a_lower_initial_window_of_this_side_s_holds_once_acknowledged() {
    let config = Config {
        stream_window: 16_384,
        ..Config::default()
    };
    let mut conn = ClientConn::new(config);
    Server::new().settings(&[]).send(&mut conn).unwrap();
    written(&mut conn);
    let id = request(&mut conn, "GET", true);
    // Before the ACK the server may count the default 65,535.
    let events = Server::new()
        .headers(id, &[(":status", "200")], false)
        .data(id, &[1; 16_384], false)
        .data(id, &[1; 16_384], false)
        .send(&mut conn)
        .unwrap();
    assert_eq!(events.len(), 3);
    conn.release(id, 32_768);
    written(&mut conn);
    // After it, 16,384: the stream's window update already went with the release above.
    Server::new().settings_ack().send(&mut conn).unwrap();
    let id = request(&mut conn, "GET", true);
    let events = Server::new()
        .headers(id, &[(":status", "200")], false)
        .data(id, &[1; 16_384], false)
        .data(id, &[1; 1], false)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        reset_events(&events),
        [(id, ErrorCode::FLOW_CONTROL_ERROR, false, true)]
    );
}
