//! Requests as sent, and frames on streams: encoding and splitting, the server's header list
//! limit, frames ignored, frames on streams never opened, and frames too large.

use super::peer::*;
use crate::h2wire::client::{Config, OpenError};
use crate::h2wire::frame::{flag, ErrorCode, Kind, SETTINGS_MAX_HEADER_LIST_SIZE};

#[test]
fn a_request_is_encoded_and_split_at_the_server_s_frame_size() {
    let mut conn = ready(Config::default());
    let long = "v".repeat(40_000);
    let fields: [(&[u8], &[u8]); 5] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":path", b"/x"),
        (b":authority", b"a.example"),
        (b"x-long", long.as_bytes()),
    ];
    let id = conn.open(fields, true).unwrap();
    let frames = written(&mut conn);
    let shape: Vec<_> = frames.iter().map(|f| (f.head.kind, f.head.flags)).collect();
    assert_eq!(
        shape,
        [
            (Kind::Headers, flag::END_STREAM),
            (Kind::Continuation, 0),
            (Kind::Continuation, flag::END_HEADERS),
        ]
    );
    assert!(frames
        .iter()
        .all(|f| f.head.stream == id && f.head.len <= 16_384));
    let mut decoder = crate::h2wire::hpack::Decoder::new(4_096);
    let got = decode_block(&mut decoder, &frames, 0);
    let want: Vec<_> = fields
        .iter()
        .map(|(n, v)| {
            (
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_request_above_the_server_s_header_list_limit_is_not_sent() {
    // The request `request` opens counts 176 octets (§6.5.2: 32 a field).
    let mut conn = ready_with(Config::default(), &[(SETTINGS_MAX_HEADER_LIST_SIZE, 176)]);
    let big = [(&b"x-big"[..], &[b'a'; 140][..])];
    assert_eq!(
        conn.open(big, true),
        Err(OpenError::HeaderListTooLarge {
            size: 177,
            limit: 176
        })
    );
    assert!(conn.output().is_empty());
    assert_eq!(request(&mut conn, "GET", true), 1, "no identifier was used");
}

#[test]
fn unknown_frames_and_priority_are_ignored() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "GET", true);
    written(&mut conn);
    let events = Server::new()
        .frame(Kind::Unknown(0xfa), 0xff, 0, b"whatever")
        .frame(Kind::Unknown(0x0b), 0, id, b"")
        .frame(Kind::Priority, 0, id, &[0, 0, 0, 0, 16])
        .frame(Kind::Priority, 0, 9, &[0, 0, 0, 0, 16])
        .send(&mut conn)
        .unwrap();
    assert!(events.is_empty());
    assert!(conn.output().is_empty());
    // A PRIORITY of the wrong length ends only its stream (§6.3).
    Server::new()
        .frame(Kind::Priority, 0, id, &[0, 0, 0])
        .send(&mut conn)
        .unwrap();
    assert_eq!(
        resets(&written(&mut conn)),
        [(id, ErrorCode::FRAME_SIZE_ERROR)]
    );
}

#[test]
fn frames_on_streams_never_opened_end_the_connection() {
    type Play = fn(&mut Server);
    let cases: [(&str, Play); 5] = [
        ("DATA", |s| {
            s.data(5, b"x", false);
        }),
        ("HEADERS", |s| {
            s.headers(5, &[(":status", "200")], true);
        }),
        ("a server's stream", |s| {
            s.headers(2, &[(":status", "200")], true);
        }),
        ("RST_STREAM", |s| {
            s.rst(5, ErrorCode::CANCEL);
        }),
        ("WINDOW_UPDATE", |s| {
            s.window_update(5, 1);
        }),
    ];
    for (what, build) in cases {
        let mut conn = ready(Config::default());
        request(&mut conn, "GET", true);
        let mut server = Server::new();
        build(&mut server);
        let err = server.send(&mut conn).unwrap_err();
        assert_eq!(err.code, ErrorCode::PROTOCOL_ERROR, "{what}");
    }
}

#[test]
fn an_oversized_frame_is_a_frame_size_error() {
    let mut conn = ready(Config::default());
    let id = request(&mut conn, "POST", false);
    let err = Server::new()
        .data(id, &[0; 16_385], false)
        .send(&mut conn)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::FRAME_SIZE_ERROR);
    // A larger SETTINGS_MAX_FRAME_SIZE of this side's lets it through.
    let config = Config {
        max_frame_size: 32_768,
        ..Config::default()
    };
    let mut conn = ready(config);
    let id = request(&mut conn, "POST", false);
    let events = Server::new()
        .headers(id, &[(":status", "200")], false)
        .data(id, &[0; 16_385], false)
        .send(&mut conn)
        .unwrap();
    assert_eq!(events.len(), 2);
}
