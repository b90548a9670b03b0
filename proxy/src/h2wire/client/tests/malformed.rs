//! Responses that break a rule, and what they end: the stream (a malformed response,
//! §8.1.1) or the connection (a field block interrupted or too large, HPACK, §4.3, §6.10).

use super::peer::*;
use crate::h2wire::client::{Config, Event};
use crate::h2wire::frame::{flag, ErrorCode, Kind};

#[test]
fn a_frame_inside_a_field_block_is_a_connection_error() {
    type Play = fn(&mut Server, u32);
    let interrupt: [(&str, Play); 4] = [
        ("PING", |s, _| {
            s.ping([0; 8], false);
        }),
        ("DATA on another stream", |s, id| {
            s.data(id + 2, b"x", false);
        }),
        ("CONTINUATION on another stream", |s, id| {
            s.frame(Kind::Continuation, flag::END_HEADERS, id + 2, b"");
        }),
        ("an unknown frame", |s, _| {
            s.frame(Kind::Unknown(0xee), 0, 0, b"");
        }),
    ];
    for (what, between) in interrupt {
        let mut conn = ready(Config::default());
        let id = request(&mut conn, "GET", true);
        request(&mut conn, "GET", true);
        let mut server = Server::new();
        let block = server.block(&[(":status", "200")]);
        server.frame(Kind::Headers, 0, id, &block);
        between(&mut server, id);
        server.frame(Kind::Continuation, flag::END_HEADERS, id, b"");
        let err = server.send(&mut conn).unwrap_err();
        assert_eq!(err.code, ErrorCode::PROTOCOL_ERROR, "{what}");
        assert_eq!(
            goaway(&written(&mut conn)),
            Some((0, ErrorCode::PROTOCOL_ERROR))
        );
    }
    let mut conn = ready(Config::default());
    request(&mut conn, "GET", true);
    let err = Server::new()
        .frame(Kind::Continuation, flag::END_HEADERS, 1, b"")
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PROTOCOL_ERROR, "CONTINUATION alone");
}

#[test]
fn a_field_block_past_the_cap_ends_the_connection() {
    let config = Config {
        max_header_block: 20_000,
        ..Config::default()
    };
    let mut conn = ready(config);
    let id = request(&mut conn, "GET", true);
    let err = Server::new()
        .frame(Kind::Headers, 0, id, &[0x20; 16_000])
        .frame(Kind::Continuation, 0, id, &[0x20; 4_001])
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ENHANCE_YOUR_CALM);
}

#[test]
fn a_malformed_response_resets_its_stream_only() {
    let mut conn = ready(Config::default());
    let bad = request(&mut conn, "GET", true);
    let good = request(&mut conn, "GET", true);
    written(&mut conn);
    let events = Server::new()
        .headers(bad, &[(":status", "200"), ("X-Upper", "1")], false)
        .headers(good, &[(":status", "200")], true)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        reset_events(&events),
        [(bad, ErrorCode::PROTOCOL_ERROR, false, true)]
    );
    assert!(matches!(events[1], Event::Response { id, .. } if id == good));
    assert_eq!(
        resets(&written(&mut conn)),
        [(bad, ErrorCode::PROTOCOL_ERROR)]
    );
    assert_eq!(conn.active_streams(), 0);
    // What the server sent before it saw the reset is dropped, and nothing answers it.
    let events = Server::new()
        .data(bad, b"late", true)
        .headers(bad, &[("grpc-status", "0")], true)
        .rst(bad, ErrorCode::CANCEL)
        .window_update(bad, 10)
        .send(&mut conn)
        .unwrap();
    assert!(events.is_empty());
    assert!(written(&mut conn).is_empty());

    for fields in [
        &[(":status", "200"), ("connection", "close")][..],
        &[("server", "x")],
        &[(":status", "101")],
        &[(":status", "200"), (":path", "/")],
    ] {
        let mut conn = ready(Config::default());
        let id = request(&mut conn, "GET", true);
        let events = Server::new()
            .headers(id, fields, true)
            .send(&mut conn)
            .unwrap();
        assert_eq!(
            reset_events(&events),
            [(id, ErrorCode::PROTOCOL_ERROR, false, true)],
            "{fields:?}"
        );
    }
}

#[test]
fn malformed_trailers_and_trailers_without_end_stream_reset_the_stream() {
    for (fields, end) in [
        (&[(":status", "200")][..], true),
        (&[("grpc-status", "0")], false),
    ] {
        let mut conn = ready(Config::default());
        let id = request(&mut conn, "GET", true);
        let events = Server::new()
            .headers(id, &[(":status", "200")], false)
            .headers(id, fields, end)
            .send(&mut conn)
            .unwrap();
        assert_eq!(
            reset_events(&events),
            [(id, ErrorCode::PROTOCOL_ERROR, false, true)]
        );
    }
}

#[test]
fn an_hpack_error_is_a_compression_error() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "GET", true);
    // Index 70: past the end of an empty dynamic table.
    let err = Server::new()
        .frame(Kind::Headers, flag::END_HEADERS, id, &[0xc6])
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::COMPRESSION_ERROR);
}

#[test]
fn a_header_list_above_this_side_s_limit_cancels_the_stream() {
    let config = Config {
        max_header_list_size: 100,
        ..Config::default()
    };
    let mut conn = ready(config);
    let id = request(&mut conn, "GET", true);
    let other = request(&mut conn, "GET", true);
    let events = Server::new()
        .headers(id, &[(":status", "200"), ("x-big", &"b".repeat(100))], true)
        .headers(other, &[(":status", "200")], true)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        reset_events(&events),
        [(id, ErrorCode::CANCEL, false, true)]
    );
    assert!(matches!(events[1], Event::Response { id, .. } if id == other));
}

#[test]
fn data_must_add_up_to_content_length() {
    type Play = fn(&mut Server, u32);
    let cases: [(&str, Play); 4] = [
        ("fewer", |s, id| {
            s.headers(id, &[(":status", "200"), ("content-length", "5")], false)
                .data(id, b"abc", true);
        }),
        ("more, before the end", |s, id| {
            s.headers(id, &[(":status", "200"), ("content-length", "2")], false)
                .data(id, b"abc", false);
        }),
        ("none, the head ending the stream", |s, id| {
            s.headers(id, &[(":status", "200"), ("content-length", "5")], true);
        }),
        ("fewer, trailers ending the stream", |s, id| {
            s.headers(id, &[(":status", "200"), ("content-length", "5")], false)
                .data(id, b"abc", false)
                .headers(id, &[("x-t", "1")], true);
        }),
    ];
    for (what, play) in cases {
        let mut conn = ready(Config::default());
        let id = request(&mut conn, "GET", true);
        let mut server = Server::new();
        play(&mut server, id);
        let events = server.send(&mut conn).unwrap();
        let resets = reset_events(&events);
        assert_eq!(
            resets,
            [(id, ErrorCode::PROTOCOL_ERROR, false, true)],
            "{what}"
        );
        assert!(
            !events.iter().any(|e| matches!(
                e,
                Event::Data {
                    end_stream: true,
                    ..
                }
            )),
            "{what}"
        );
    }
    // Exactly the length, over two frames.
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "GET", true);
    let events = Server::new()
        .headers(id, &[(":status", "200"), ("content-length", "5")], false)
        .data(id, b"ab", false)
        .data(id, b"cde", true)
        .send(&mut conn)
        .unwrap();
    assert!(reset_events(&events).is_empty());
    assert_eq!(events.len(), 3);
}

#[test]
fn responses_without_content_carry_none_whatever_their_length() {
    let mut conn = ready(Config::default());
    let head = request(&mut conn, "HEAD", true);
    let not_modified = request(&mut conn, "GET", true);
    let events = Server::new()
        .headers(head, &[(":status", "200"), ("content-length", "5")], true)
        .headers(
            not_modified,
            &[(":status", "304"), ("content-length", "5")],
            true,
        )
        .send(&mut conn)
        .unwrap();
    assert_eq!(events.len(), 2);
    assert!(reset_events(&events).is_empty());
    // But DATA on one is refused.
    let id = request(&mut conn, "HEAD", true);
    let events = Server::new()
        .headers(id, &[(":status", "200"), ("content-length", "5")], false)
        .data(id, b"abcde", true)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        reset_events(&events),
        [(id, ErrorCode::PROTOCOL_ERROR, false, true)]
    );
}
