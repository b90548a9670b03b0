//! Requests in, responses out: heads, bodies, trailers, and the stream errors of §8 and §6.9.

use super::peer::*;
use crate::h2wire::frame::{flag, ErrorCode, Kind, SETTINGS_INITIAL_WINDOW_SIZE};
use crate::h2wire::hpack::Decoder;
use crate::h2wire::server::{Config, Event};

fn fields(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_get_is_reported_and_answered() {
    let (mut conn, mut client) = ready(Config::default());
    let events = client
        .request(1, "GET", &[("accept", "*/*")], true)
        .send(&mut conn)
        .unwrap();
    let [Event::Request {
        id: 1,
        head,
        fields: got,
        end_stream: true,
    }] = &events[..]
    else {
        panic!("{events:?}");
    };
    assert_eq!(head.method(), b"GET");
    assert_eq!(head.path(), Some(&b"/p"[..]));
    assert_eq!(head.authority(), Some(&b"weir.example"[..]));
    assert_eq!(got.get(b"accept"), Some(&b"*/*"[..]));
    assert_eq!(got.len(), 1, "pseudo-headers are the head's");
    assert_eq!(conn.active_streams(), 1);

    let ct: (&[u8], &[u8]) = (b"content-type", b"text/plain");
    assert!(conn.respond(1, 200, [ct], false));
    assert!(!conn.respond(1, 200, [], false), "answered once");
    assert_eq!(conn.send_data(1, b"hello", true), 5);
    assert_eq!(conn.active_streams(), 0);
    let frames = written(&mut conn);
    assert!(frames[0].is(Kind::Headers, 1) && !frames[0].head.has(flag::END_STREAM));
    let head = decode_block(&mut Decoder::new(4096), &frames, 0);
    assert_eq!(
        head,
        fields(&[(":status", "200"), ("content-type", "text/plain")])
    );
    assert!(frames[1].is(Kind::Data, 1) && frames[1].head.has(flag::END_STREAM));
    assert_eq!(frames[1].payload, b"hello");
}

#[test]
fn a_post_with_body_and_trailers_and_a_response_with_trailers() {
    let (mut conn, mut client) = ready(Config::default());
    let cl = [("content-length", "6"), ("te", "trailers")];
    client
        .request(1, "POST", &cl, false)
        .data(1, b"abc", false)
        .data(1, b"def", false);
    client.headers(1, &[("x-checksum", "1")], true);
    let (events, bytes) = client.send_keep(&mut conn).unwrap();
    let mut body = Vec::new();
    for event in &events {
        if let Event::Data { id: 1, data, .. } = event {
            body.extend_from_slice(&bytes[data.clone()]);
            conn.release(1, data.len());
        }
    }
    assert_eq!(body, b"abcdef");
    let Event::Request { head, .. } = &events[0] else {
        panic!("{events:?}");
    };
    assert_eq!((head.content_length, head.te_trailers), (Some(6), true));
    let Some(Event::Trailers { id: 1, fields: t }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(t.get(b"x-checksum"), Some(&b"1"[..]));

    assert!(conn.respond(1, 200, [], false));
    assert_eq!(conn.send_data(1, b"ok", false), 2);
    let grpc: (&[u8], &[u8]) = (b"grpc-status", b"0");
    assert!(conn.send_trailers(1, [grpc]));
    assert_eq!(conn.active_streams(), 0);
    let frames = written(&mut conn);
    let last = frames.last().unwrap();
    assert!(last.is(Kind::Headers, 1) && last.head.has(flag::END_STREAM));
}

#[test]
fn a_malformed_request_resets_that_stream_only() {
    let (mut conn, mut client) = ready(Config::default());
    client.request(1, "GET", &[], false);
    client.request(3, "GET", &[("connection", "close")], true);
    client.headers(5, &[(":method", "GET"), (":path", "/")], true);
    client.request(7, "GET", &[], true);
    let events = client.send(&mut conn).unwrap();
    assert_eq!(
        reset_events(&events),
        [
            (3, ErrorCode::PROTOCOL_ERROR, true),
            (5, ErrorCode::PROTOCOL_ERROR, true)
        ]
    );
    assert_eq!(requests(&events), [1, 7]);
    let frames = written(&mut conn);
    assert_eq!(
        resets(&frames),
        [
            (3, ErrorCode::PROTOCOL_ERROR),
            (5, ErrorCode::PROTOCOL_ERROR)
        ]
    );
    assert_eq!(goaway(&frames), None);
    // HPACK stayed in step: the next request decodes.
    let events = client
        .request(9, "GET", &[("a", "b")], true)
        .send(&mut conn)
        .unwrap();
    assert_eq!(requests(&events), [9]);
}

#[test]
fn beyond_max_concurrent_streams_a_stream_is_refused() {
    let config = Config {
        max_concurrent_streams: 2,
        ..Config::default()
    };
    let (mut conn, mut client) = ready(config);
    for id in [1, 3, 5] {
        client.request(id, "GET", &[], true);
    }
    let events = client.send(&mut conn).unwrap();
    assert_eq!(requests(&events), [1, 3]);
    assert_eq!(
        reset_events(&events),
        [(5, ErrorCode::REFUSED_STREAM, true)]
    );
    assert_eq!(
        resets(&written(&mut conn)),
        [(5, ErrorCode::REFUSED_STREAM)]
    );
    assert!(conn.respond(1, 204, [], true));
    let events = client.request(7, "GET", &[], true).send(&mut conn).unwrap();
    assert_eq!(requests(&events), [7], "room again once one ended");
}

#[test]
fn data_beyond_the_streams_window_resets_it() {
    let config = Config {
        stream_window: 65_535,
        ..Config::default()
    };
    let (mut conn, mut client) = ready(config);
    client
        .request(1, "POST", &[], false)
        .request(3, "POST", &[], false);
    client.data(1, &vec![0; 65_535], false);
    client.send(&mut conn).unwrap();
    let events = client.data(1, b"x", false).send(&mut conn).unwrap();
    assert_eq!(
        reset_events(&events),
        [(1, ErrorCode::FLOW_CONTROL_ERROR, true)]
    );
    assert_eq!(
        resets(&written(&mut conn)),
        [(1, ErrorCode::FLOW_CONTROL_ERROR)]
    );
    // Trailers crossing the reset are decoded and dropped, stream 3 goes on.
    client.headers(1, &[("x", "y")], true).data(3, b"z", true);
    let (events, _) = client.send_keep(&mut conn).unwrap();
    assert!(
        matches!(events[..], [Event::Data { id: 3, .. }]),
        "{events:?}"
    );
}

#[test]
fn data_beyond_the_connections_window_ends_the_connection() {
    let (mut conn, mut client) = ready(Config::default());
    for id in [1, 3] {
        client.request(id, "POST", &[], false);
    }
    client.data(1, &vec![0; 1 << 20], false);
    client.send(&mut conn).unwrap();
    let e = client.data(3, b"x", false).send(&mut conn).unwrap_err();
    assert_eq!(e.code, ErrorCode::FLOW_CONTROL_ERROR);
}

#[test]
fn content_length_mismatches_reset_the_stream() {
    let (mut conn, mut client) = ready(Config::default());
    let cl = [("content-length", "3")];
    client
        .request(1, "POST", &cl, false)
        .data(1, b"abcd", false);
    client.request(3, "POST", &cl, false).data(3, b"ab", true);
    client.request(5, "POST", &cl, true);
    client.request(7, "POST", &cl, false).data(7, b"abc", true);
    let events = client.send(&mut conn).unwrap();
    let resets = reset_events(&events);
    let p = ErrorCode::PROTOCOL_ERROR;
    assert_eq!(resets, [(1, p, true), (3, p, true), (5, p, true)]);
    assert_eq!(requests(&events), [1, 3, 7]);
}

#[test]
fn a_header_list_too_large_is_answered_431() {
    let config = Config {
        max_header_list_size: 200,
        ..Config::default()
    };
    let (mut conn, mut client) = ready(config);
    let big = "v".repeat(300);
    client.request(1, "GET", &[("x-big", &big)], true);
    client.request(3, "POST", &[("x-big", &big)], false);
    client.request(5, "GET", &[], true);
    let events = client.send(&mut conn).unwrap();
    assert_eq!(requests(&events), [5]);
    let nr = ErrorCode::NO_ERROR;
    assert_eq!(reset_events(&events), [(1, nr, true), (3, nr, true)]);
    let frames = written(&mut conn);
    let mut decoder = Decoder::new(4096);
    for (at, id) in [(0, 1), (1, 3)] {
        assert!(frames[at].is(Kind::Headers, id) && frames[at].head.has(flag::END_STREAM));
        assert_eq!(
            decode_block(&mut decoder, &frames, at),
            fields(&[(":status", "431")])
        );
    }
    assert_eq!(resets(&frames), [(3, ErrorCode::NO_ERROR)]);
    assert_eq!(conn.active_streams(), 1);
}

#[test]
fn the_clients_window_bounds_what_is_sent_and_capacity_is_reported() {
    let (mut conn, mut client) = ready(Config::default());
    client.settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 10)]);
    client.request(1, "GET", &[], true).send(&mut conn).unwrap();
    assert!(conn.respond(1, 200, [], false));
    assert_eq!(conn.send_capacity(1), 10);
    assert_eq!(conn.send_data(1, &[1; 30], true), 10);
    assert_eq!(conn.send_capacity(1), 0);
    let events = client.window_update(1, 100).send(&mut conn).unwrap();
    assert_eq!(events, [Event::Capacity { id: Some(1) }]);
    assert_eq!(conn.send_data(1, &[1; 20], true), 20);
    assert_eq!(conn.active_streams(), 0);
}

#[test]
fn the_client_resets_a_stream_and_it_is_forgotten() {
    let (mut conn, mut client) = ready(Config::default());
    client.request(1, "POST", &[], false);
    let events = client.rst(1, ErrorCode::CANCEL).send(&mut conn).unwrap();
    assert_eq!(reset_events(&events), [(1, ErrorCode::CANCEL, false)]);
    assert_eq!(conn.active_streams(), 0);
    assert!(!conn.respond(1, 200, [], true));
    // DATA crossing the reset is dropped; the connection's window counted it.
    client.data(1, b"late", false).send(&mut conn).unwrap();
}

#[test]
fn trailers_without_end_stream_or_with_pseudo_headers_reset_the_stream() {
    let (mut conn, mut client) = ready(Config::default());
    client
        .request(1, "POST", &[], false)
        .headers(1, &[("x", "y")], false);
    client
        .request(3, "POST", &[], false)
        .headers(3, &[(":path", "/")], true);
    let events = client.send(&mut conn).unwrap();
    let p = ErrorCode::PROTOCOL_ERROR;
    assert_eq!(reset_events(&events), [(1, p, true), (3, p, true)]);
    assert_eq!(conn.active_streams(), 0);
}

/// Appends a literal field with incremental indexing and a new name (RFC 7541 §6.2.1): it
/// enters the dynamic table as index 62, the others moving up one.
fn literal_indexed(block: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    block.push(0x40);
    for s in [name, value] {
        block.push(u8::try_from(s.len()).expect("a short string"));
        block.extend_from_slice(s);
    }
}

#[test]
fn a_field_sent_by_table_index_is_judged_each_time_it_is_refused() {
    let (mut conn, mut client) = ready(Config::default());
    let pseudo = [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/p"),
        (":authority", "weir.example"),
    ];
    let end = flag::END_HEADERS | flag::END_STREAM;
    // The client's encoder opens its first block by setting its table to 0; that block is
    // not sent, so the server's table keeps its 4,096 octets.
    let _ = client.block(&[]);
    // 1: `x-fine: yes` enters the table (62); 3: sent by its index, judged from the entry.
    let mut block = client.block(&pseudo);
    literal_indexed(&mut block, b"x-fine", b"yes");
    client.frame(Kind::Headers, end, 1, &block);
    let mut block = client.block(&pseudo);
    block.push(0x80 | 62);
    client.frame(Kind::Headers, end, 3, &block);
    // 5: `connection: close` enters the table (62; x-fine is 63) and is refused; 7 sends it by
    // index and is refused again: a refusal is not what an entry remembers.
    let mut block = client.block(&pseudo);
    literal_indexed(&mut block, b"connection", b"close");
    client.frame(Kind::Headers, end, 5, &block);
    let mut block = client.block(&pseudo);
    block.push(0x80 | 62);
    client.frame(Kind::Headers, end, 7, &block);
    // 9: x-fine by its new index, still good.
    let mut block = client.block(&pseudo);
    block.push(0x80 | 63);
    client.frame(Kind::Headers, end, 9, &block);
    let events = client.send(&mut conn).unwrap();
    assert_eq!(requests(&events), [1, 3, 9]);
    let p = ErrorCode::PROTOCOL_ERROR;
    assert_eq!(reset_events(&events), [(5, p, true), (7, p, true)]);
    for event in &events {
        if let Event::Request { fields, .. } = event {
            assert_eq!(fields.get(b"x-fine"), Some(&b"yes"[..]));
            assert_eq!(fields.len(), 1);
        }
    }
}

/// Each request's authority and fields, in order, as the bytes the owner slices values from
/// (taken, not cloned: a clone would be a copy of its own).
fn request_bytes(events: Vec<Event>) -> Vec<(bytes::Bytes, bytes::Bytes)> {
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::Request { head, fields, .. } => {
                Some((head.authority_shared()?, fields.into_bytes()))
            }
            _ => None,
        })
        .collect()
}

/// The one field of a section's bytes.
fn field_of(section: &bytes::Bytes) -> (&[u8], &[u8]) {
    let (name, value, _) = crate::h2wire::common::spans(section)
        .next()
        .expect("a field");
    (&section[name], &section[value])
}

#[test]
fn a_connection_s_heads_and_sections_share_one_buffer_until_it_goes_quiet() {
    use crate::h2wire::message::HEAD_ROOM;
    let (mut conn, mut client) = ready(Config::default());
    let events = client
        .request(1, "GET", &[("accept", "*/*")], true)
        .request(3, "GET", &[("x-second", "2")], true)
        .send(&mut conn)
        .unwrap();
    let [(authority, first), (_, second)] = &request_bytes(events)[..] else {
        panic!("two requests");
    };
    assert_eq!(&authority[..], b"weir.example");
    assert_eq!(field_of(first), (&b"accept"[..], &b"*/*"[..]));
    assert_eq!(field_of(second), (&b"x-second"[..], &b"2"[..]));
    // Each head's values take `HEAD_ROOM` of the buffer, its fields what follows.
    let start = authority.as_ptr() as usize;
    let first_at = first.as_ptr() as usize;
    assert!(
        (first_at - HEAD_ROOM..first_at).contains(&start),
        "the authority lies in the room just before the fields"
    );
    assert_eq!(
        second.as_ptr() as usize,
        first_at + first.len() + HEAD_ROOM,
        "one buffer"
    );

    conn.quiet();
    let events = client
        .request(5, "GET", &[("x-third", "3")], true)
        .send(&mut conn)
        .unwrap();
    let [(_, third)] = &request_bytes(events)[..] else {
        panic!("one request");
    };
    assert_eq!(field_of(third), (&b"x-third"[..], &b"3"[..]));
    let third_at = third.as_ptr() as usize;
    assert!(
        !(start..start + crate::h2wire::common::ARENA).contains(&third_at),
        "after `quiet` a new buffer, the old one left to the sections that hold it"
    );
}

/// RFC 9113 §6.1 and §5.1: DATA on a closed stream is a stream error of type STREAM_CLOSED —
/// after both sides ended it, and after the client's own RST_STREAM — but DATA crossing a
/// RST_STREAM this side sent is dropped.
#[test]
fn data_on_a_closed_stream_is_answered_stream_closed_unless_this_side_reset_it() {
    let (mut conn, mut client) = ready(Config::default());
    // Stream 1 closed both ways: a bodiless request, a whole response.
    client.request(1, "GET", &[], true).send(&mut conn).unwrap();
    assert!(conn.respond(1, 204, [], true));
    written(&mut conn);
    client.data(1, b"late", false).send(&mut conn).unwrap();
    assert_eq!(resets(&written(&mut conn)), [(1, ErrorCode::STREAM_CLOSED)]);

    // Stream 3 reset by the client, then DATA on it.
    client
        .request(3, "POST", &[], false)
        .rst(3, ErrorCode::CANCEL)
        .send(&mut conn)
        .unwrap();
    written(&mut conn);
    client
        .data(3, b"after my reset", false)
        .send(&mut conn)
        .unwrap();
    assert_eq!(resets(&written(&mut conn)), [(3, ErrorCode::STREAM_CLOSED)]);

    // Stream 5 reset by the server (DATA past its content-length): what crosses is dropped.
    client
        .request(5, "POST", &[("content-length", "1")], false)
        .data(5, b"ab", false)
        .send(&mut conn)
        .unwrap();
    assert_eq!(resets(&written(&mut conn)).len(), 1);
    client.data(5, b"crossing", false).send(&mut conn).unwrap();
    assert!(resets(&written(&mut conn)).is_empty());
    // The connection serves on.
    client.request(7, "GET", &[], true).send(&mut conn).unwrap();
    assert!(conn.respond(7, 204, [], true));
}
