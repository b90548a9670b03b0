//! Responses: heads, DATA and trailers; field blocks over CONTINUATION; and what a response
//! that breaks a rule ends — its stream, or the connection.

use super::peer::*;
use crate::h2wire::client::{Config, Event};
use crate::h2wire::frame::{flag, ErrorCode, Kind};
use crate::h2wire::hpack::Decoder;

#[test]
fn a_head_data_and_trailers() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "POST", false);
    let frames = written(&mut conn);
    assert!(frames[0].is(Kind::Headers, id) && frames[0].head.has(flag::END_HEADERS));
    assert!(!frames[0].head.has(flag::END_STREAM));
    let fields = decode_block(&mut Decoder::new(4_096), &frames, 0);
    assert_eq!(fields[0], (":method".into(), "POST".into()));
    assert_eq!(fields[2], (":path".into(), "/p".into()));

    let mut server = Server::new();
    server
        .headers(
            id,
            &[
                (":status", "200"),
                ("content-type", "application/grpc"),
                ("x-a", "1"),
            ],
            false,
        )
        .data(id, b"hello ", false)
        .data(id, b"world", false)
        .headers(id, &[("grpc-status", "0"), ("grpc-message", "ok")], true);
    let (events, bytes) = server.send_keep(&mut conn).unwrap();
    let [Event::Response {
        id: rid,
        status: 200,
        fields,
        end_stream: false,
    }, Event::Data {
        data: d1,
        end_stream: false,
        ..
    }, Event::Data { data: d2, .. }, Event::Trailers {
        id: tid,
        fields: trailers,
    }] = &events[..]
    else {
        panic!("{events:?}");
    };
    assert_eq!((*rid, *tid), (id, id));
    assert_eq!(fields.len(), 2, "no pseudo-header among the fields");
    assert_eq!(fields.get(b"content-type"), Some(&b"application/grpc"[..]));
    assert_eq!(fields.get(b"x-a"), Some(&b"1"[..]));
    assert_eq!(&bytes[d1.clone()], b"hello ");
    assert_eq!(&bytes[d2.clone()], b"world");
    assert_eq!(trailers.get(b"grpc-status"), Some(&b"0"[..]));
    assert_eq!(trailers.get(b"grpc-message"), Some(&b"ok"[..]));
    // The response ended; the request has not: the stream is open until it does.
    assert_eq!(conn.active_streams(), 1);
    assert_eq!(conn.send_data(id, b"", true), 0);
    assert_eq!(conn.active_streams(), 0);
    let frames = written(&mut conn);
    assert!(frames[0].is(Kind::Data, id) && frames[0].head.has(flag::END_STREAM));
}

#[test]
fn padded_data_is_handed_over_without_its_padding_which_is_given_back() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "GET", true);
    written(&mut conn);
    let mut payload = vec![200u8];
    payload.extend_from_slice(b"body");
    payload.extend_from_slice(&[0; 200]);
    let mut server = Server::new();
    server
        .headers(id, &[(":status", "200")], false)
        .frame(Kind::Data, flag::PADDED, id, &payload);
    let (events, bytes) = server.send_keep(&mut conn).unwrap();
    let Event::Data { data, .. } = &events[1] else {
        panic!("{events:?}");
    };
    assert_eq!(&bytes[data.clone()], b"body");
    // 201 octets of padding were released; nothing is due yet (half a window is).
    assert!(written(&mut conn).is_empty());
}

/// A field block split over HEADERS and two CONTINUATIONs, with an unrelated frame first.
fn split_response(server: &mut Server, id: u32, first: u8) -> Vec<u8> {
    let long = "x".repeat(300);
    let block = server.block(&[(":status", "200"), ("x-long", &long), ("x-b", "2")]);
    let (a, rest) = block.split_at(10);
    let (b, c) = rest.split_at(100);
    server
        .frame(Kind::Headers, first, id, a)
        .frame(Kind::Continuation, 0, id, b)
        .frame(Kind::Continuation, flag::END_HEADERS, id, c);
    long.into_bytes()
}

#[test]
fn continuations_are_joined_into_one_block() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "GET", true);
    let mut server = Server::new();
    let long = split_response(&mut server, id, flag::END_STREAM);
    let events = server.send(&mut conn).unwrap();
    let [Event::Response {
        fields,
        end_stream: true,
        ..
    }] = &events[..]
    else {
        panic!("{events:?}");
    };
    assert_eq!(fields.get(b"x-long"), Some(&long[..]));
    assert_eq!(fields.get(b"x-b"), Some(&b"2"[..]));
    assert_eq!(conn.active_streams(), 0);
    // Fed a byte at a time, the same block gives the same response.
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "GET", true);
    let mut server = Server::new();
    split_response(&mut server, id, flag::END_STREAM);
    let (mut buf, mut events) = (Vec::new(), Vec::new());
    for &byte in &server.bytes {
        buf.push(byte);
        let used = conn.receive(&buf, &mut events).unwrap();
        buf.drain(..used);
    }
    assert!(buf.is_empty());
    assert!(matches!(&events[..], [Event::Response { fields: f, .. }] if f == fields));
}

#[test]
fn a_field_block_on_a_dropped_stream_is_still_decoded() {
    let mut conn = ready(Config::default());
    let dropped = request(&mut conn, "GET", true);
    let kept = request(&mut conn, "GET", true);
    conn.reset(dropped, ErrorCode::CANCEL);
    assert_eq!(resets(&written(&mut conn)), [(dropped, ErrorCode::CANCEL)]);
    // :status 200, then x-new: v with incremental indexing (RFC 7541 §6.2.1): a new entry
    // at index 62 of the server's table, which the next block refers to.
    let first = [0x88, 0x40, 0x05, b'x', b'-', b'n', b'e', b'w', 0x01, b'v'];
    let second = [0x88, 0xbe];
    let events = Server::new()
        .frame(Kind::Headers, flag::END_HEADERS, dropped, &first)
        .frame(
            Kind::Headers,
            flag::END_HEADERS | flag::END_STREAM,
            kept,
            &second,
        )
        .send(&mut conn)
        .unwrap();
    let [Event::Response { id, fields, .. }] = &events[..] else {
        panic!("{events:?}");
    };
    assert_eq!(*id, kept);
    assert_eq!(fields.get(b"x-new"), Some(&b"v"[..]));
}

#[test]
fn interim_heads_are_consumed() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "POST", false);
    let events = Server::new()
        .headers(id, &[(":status", "100")], false)
        .headers(
            id,
            &[(":status", "103"), ("link", "</a>; rel=preload")],
            false,
        )
        .headers(id, &[(":status", "200")], true)
        .send(&mut conn)
        .unwrap();
    assert!(
        matches!(&events[..], [Event::Response { status: 200, .. }]),
        "{events:?}"
    );
    // An interim head may not end the stream (§8.1).
    let id = request(&mut conn, "GET", true);
    let events = Server::new()
        .headers(id, &[(":status", "100")], true)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        reset_events(&events),
        [(id, ErrorCode::PROTOCOL_ERROR, false, true)]
    );
}

#[test]
fn refused_stream_is_reported_as_refused_and_the_stream_forgotten() {
    let mut conn = ready(Config::default());
    let refused = request(&mut conn, "POST", false);
    let cancelled = request(&mut conn, "GET", true);
    written(&mut conn);
    let events = Server::new()
        .rst(refused, ErrorCode::REFUSED_STREAM)
        .rst(cancelled, ErrorCode::CANCEL)
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        reset_events(&events),
        [
            (refused, ErrorCode::REFUSED_STREAM, true, false),
            (cancelled, ErrorCode::CANCEL, false, false),
        ]
    );
    assert_eq!(conn.active_streams(), 0);
    assert_eq!(conn.send_data(refused, b"body", true), 0);
    assert!(written(&mut conn).is_empty(), "no RST_STREAM answers one");
}

#[test]
fn a_reset_by_this_side_drops_later_frames_but_counts_their_data() {
    let config = Config {
        connection_window: 65_535,
        ..Config::default()
    };
    let mut conn = ready(config);
    let id = request(&mut conn, "GET", true);
    conn.reset(id, ErrorCode::CANCEL);
    written(&mut conn);
    let mut server = Server::new();
    server.headers(id, &[(":status", "200")], false);
    for _ in 0..3 {
        server.data(id, &[0; 16_000], false);
    }
    let events = server.send(&mut conn).unwrap();
    assert!(events.is_empty());
    // The connection's window was given back as the frames were dropped: half of it at once.
    assert_eq!(window_updates(&written(&mut conn)), [(0, 48_000)]);
}
