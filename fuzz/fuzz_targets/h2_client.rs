//! weir's HTTP/2 client connection (`h2wire::client`) fed arbitrary bytes as a server's, with
//! three requests open (a GET, a HEAD and a POST whose body waits on the windows). The input is
//! an options byte, then the server's bytes, given in pieces of a size the options choose; bit
//! 0 puts an empty SETTINGS frame (a server's preface) in front. Beyond not crashing: every
//! DATA range lies inside the bytes given and on a stream this side opened, a status is a
//! final one (200–599), a connection error is sticky, and what the connection writes is whole
//! frames that weir's own frame parser accepts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_proxy::h2wire::client::{ClientConn, Config, Event};
use weir_proxy::h2wire::frame;

const PREFACE_SETTINGS: [u8; 9] = [0, 0, 0, 4, 0, 0, 0, 0, 0];

fuzz_target!(|data: &[u8]| {
    let Some((&control, data)) = data.split_first() else { return };
    let mut input = Vec::new();
    if control & 1 != 0 {
        input.extend_from_slice(&PREFACE_SETTINGS);
    }
    input.extend_from_slice(data);
    let piece = 1 + (control >> 1) as usize * 7;

    let mut conn = ClientConn::new(Config::default());
    let mut opened = Vec::new();
    let get: [(&[u8], &[u8]); 4] = [(b":method", b"GET"), (b":scheme", b"http"), (b":path", b"/"), (b":authority", b"a")];
    let head: [(&[u8], &[u8]); 4] = [(b":method", b"HEAD"), (b":scheme", b"http"), (b":path", b"/h"), (b":authority", b"a")];
    let post: [(&[u8], &[u8]); 5] =
        [(b":method", b"POST"), (b":scheme", b"http"), (b":path", b"/p"), (b":authority", b"a"), (b"content-length", b"100000")];
    opened.extend(conn.open(get, true).ok());
    opened.extend(conn.open(head, true).ok());
    let post_id = conn.open(post, false).ok();
    opened.extend(post_id);
    let body = vec![b'x'; 100_000];
    let mut sent = 0;

    let mut buf: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    let mut failed = None;
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
                Event::Data { id, data, .. } => {
                    assert!(data.end <= used && opened.contains(&id));
                    conn.release(id, data.len());
                }
                Event::Response { id, status, .. } => {
                    assert!((200..=599).contains(&status) && opened.contains(&id));
                }
                Event::Capacity { .. } => {
                    if let Some(id) = post_id {
                        sent += conn.send_data(id, &body[sent..], true);
                        assert!(sent <= body.len());
                    }
                }
                _ => {}
            }
        }
        buf.drain(..used);
    }
    // What weir wrote: the preface, then whole frames its own parser accepts.
    let out = std::mem::take(conn.output());
    let mut rest = out.strip_prefix(&frame::PREFACE[..]).expect("the preface first");
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
