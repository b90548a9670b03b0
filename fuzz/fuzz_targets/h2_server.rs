//! weir's HTTP/2 server connection (`h2wire::server`) fed arbitrary bytes as a client's: the
//! side of weir that faces the internet. The input is an options byte, then the client's bytes,
//! given in pieces of a size the options choose; bit 0 puts the client preface and an empty
//! SETTINGS frame in front. Every request is answered (a head and five bytes; every other one
//! with trailers), every DATA released. Beyond not crashing: every request handed over holds
//! RFC 9113 §8's rules, DATA ranges lie inside the bytes given and on a stream handed over, a
//! connection error is sticky, and what weir writes is whole frames its own parser accepts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_proxy::h2wire::frame;
use weir_proxy::h2wire::server::{Config, Event, ServerConn};

fuzz_target!(|data: &[u8]| {
    let Some((&control, data)) = data.split_first() else { return };
    let mut input = Vec::new();
    if control & 1 != 0 {
        input.extend_from_slice(frame::PREFACE);
        input.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    }
    input.extend_from_slice(data);
    let piece = 1 + (control >> 1) as usize * 7;

    let mut conn = ServerConn::new(Config::default());
    let mut requests = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    let mut failed = None;
    let mut out = Vec::new();
    for chunk in input.chunks(piece) {
        buf.extend_from_slice(chunk);
        let result = conn.receive(&buf, &mut events);
        if let Some(first) = failed {
            assert_eq!(result.map(|_| ()), Err(first), "a connection error is sticky");
        }
        let used = match result {
            Ok(used) => used,
            Err(e) => {
                failed = Some(e);
                buf.len()
            }
        };
        assert!(used <= buf.len());
        for event in events.drain(..) {
            match event {
                Event::Request { id, head, .. } => {
                    assert!(!head.method().is_empty());
                    if head.method() != b"CONNECT" {
                        assert!(head.path().is_some_and(|p| !p.is_empty()) && head.scheme().is_some());
                    }
                    requests.push(id);
                    let len: &[u8] = b"5";
                    conn.respond(id, 200, [(&b"content-length"[..], len)], false);
                    let grpc = requests.len() % 2 == 0;
                    conn.send_data(id, b"hello", !grpc);
                    if grpc {
                        conn.send_trailers(id, [(&b"grpc-status"[..], &b"0"[..])]);
                    }
                }
                Event::Data { id, data, .. } => {
                    assert!(data.end <= used && requests.contains(&id));
                    conn.release(id, data.len());
                }
                _ => {}
            }
        }
        buf.drain(..used);
        // The owner writes what is queued, as a socket would take it.
        out.extend(conn.output().drain(..));
    }
    out.extend(conn.output().drain(..));
    let mut rest = &out[..];
    while !rest.is_empty() {
        let (head, range) = frame::next_frame(rest, frame::MAX_ALLOWED_FRAME_SIZE)
            .expect("a frame weir wrote")
            .expect("whole frames only");
        let payload = &rest[range.clone()];
        match head.kind {
            frame::Kind::Settings => drop(frame::parse_settings(&head, payload).expect("valid SETTINGS")),
            frame::Kind::WindowUpdate => drop(frame::parse_window_update(&head, payload).expect("valid WINDOW_UPDATE")),
            frame::Kind::RstStream => drop(frame::parse_rst_stream(&head, payload).expect("valid RST_STREAM")),
            frame::Kind::GoAway => drop(frame::parse_goaway(&head, payload).expect("valid GOAWAY")),
            frame::Kind::Ping => drop(frame::parse_ping(&head, payload).expect("valid PING")),
            frame::Kind::Data => drop(frame::parse_data(&head, payload).expect("valid DATA")),
            frame::Kind::Headers => drop(frame::parse_headers(&head, payload).expect("valid HEADERS")),
            frame::Kind::Continuation => drop(frame::parse_continuation(&head, payload).expect("valid CONTINUATION")),
            other => panic!("weir wrote a {other} frame"),
        }
        rest = &rest[range.end..];
    }
});
