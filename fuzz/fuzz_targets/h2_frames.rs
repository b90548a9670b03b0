//! The HTTP/2 frame codec: arbitrary bytes read as a peer's frames, one after the other, with
//! the splitter and each type's parser, as a connection would. Beyond not crashing: a frame's
//! payload lies inside the input, a refusal names the frame it refuses, a DATA frame counts its
//! whole payload against flow control, and a frame rewritten by weir's own writers parses again
//! to the same values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_proxy::h2wire::frame::{self, Head, Kind, Scope, SettingsFrame};

fuzz_target!(|data: &[u8]| {
    let Some((&control, mut rest)) = data.split_first() else { return };
    // The limit this side advertised: the smallest, or the largest allowed.
    let max = if control & 1 == 0 { frame::DEFAULT_MAX_FRAME_SIZE } else { frame::MAX_ALLOWED_FRAME_SIZE };
    loop {
        let (head, payload) = match frame::next_frame(rest, max) {
            Ok(Some((head, range))) => {
                assert!(range.end <= rest.len() && range.len() == head.len as usize);
                let payload = &rest[range.clone()];
                rest = &rest[range.end..];
                (head, payload)
            }
            Ok(None) => return,
            Err(e) => {
                assert!(e.head.len > max);
                return;
            }
        };
        if let Err(e) = parse(&head, payload) {
            assert_eq!(e.head, head);
            if let Scope::Stream(id) = e.scope {
                assert!(id != 0 && id == head.stream);
            }
        }
    }
});

fn parse(head: &Head, payload: &[u8]) -> Result<(), frame::FrameError> {
    let mut out = Vec::new();
    match head.kind {
        Kind::Data => {
            let d = frame::parse_data(head, payload)?;
            assert_eq!(d.flow_len, head.len);
            frame::write_data(&mut out, head.stream, d.data, d.end_stream, frame::MAX_ALLOWED_FRAME_SIZE);
            let (again, range) = frame::next_frame(&out, frame::MAX_ALLOWED_FRAME_SIZE)?.expect("whole");
            let e = frame::parse_data(&again, &out[range])?;
            assert_eq!((e.data, e.end_stream), (d.data, d.end_stream));
        }
        Kind::Headers => {
            let h = frame::parse_headers(head, payload)?;
            assert!(h.fragment.len() <= payload.len());
        }
        Kind::Continuation => {
            frame::parse_continuation(head, payload)?;
        }
        Kind::Priority => {
            frame::parse_priority(head, payload)?;
        }
        Kind::RstStream => {
            let code = frame::parse_rst_stream(head, payload)?;
            frame::write_rst_stream(&mut out, head.stream, code);
            let (again, range) = frame::next_frame(&out, max_frame())?.expect("whole");
            assert_eq!(frame::parse_rst_stream(&again, &out[range])?, code);
        }
        Kind::Settings => {
            if let SettingsFrame::Values(s) = frame::parse_settings(head, payload)? {
                let mut values = Vec::new();
                let pairs = [
                    (frame::SETTINGS_HEADER_TABLE_SIZE, s.header_table_size),
                    (frame::SETTINGS_ENABLE_PUSH, s.enable_push.map(u32::from)),
                    (frame::SETTINGS_MAX_CONCURRENT_STREAMS, s.max_concurrent_streams),
                    (frame::SETTINGS_INITIAL_WINDOW_SIZE, s.initial_window_size),
                    (frame::SETTINGS_MAX_FRAME_SIZE, s.max_frame_size),
                    (frame::SETTINGS_MAX_HEADER_LIST_SIZE, s.max_header_list_size),
                    (frame::SETTINGS_ENABLE_CONNECT_PROTOCOL, s.enable_connect_protocol.map(u32::from)),
                ];
                for (id, value) in pairs {
                    if let Some(v) = value {
                        values.push((id, v));
                    }
                }
                frame::write_settings(&mut out, &values);
                let (again, range) = frame::next_frame(&out, max_frame())?.expect("whole");
                assert_eq!(frame::parse_settings(&again, &out[range])?, SettingsFrame::Values(s));
            }
        }
        Kind::Ping => {
            let p = frame::parse_ping(head, payload)?;
            frame::write_ping(&mut out, p.opaque, p.ack);
            let (again, range) = frame::next_frame(&out, max_frame())?.expect("whole");
            assert_eq!(frame::parse_ping(&again, &out[range])?, p);
        }
        Kind::GoAway => {
            let g = frame::parse_goaway(head, payload)?;
            assert!(g.last_stream <= 0x7fff_ffff);
        }
        Kind::WindowUpdate => {
            let n = frame::parse_window_update(head, payload)?;
            assert!(n > 0 && n <= 0x7fff_ffff);
            frame::write_window_update(&mut out, head.stream, n);
            let (again, range) = frame::next_frame(&out, max_frame())?.expect("whole");
            assert_eq!(frame::parse_window_update(&again, &out[range])?, n);
        }
        Kind::PushPromise => return Err(frame::refuse_push_promise(head)),
        Kind::Unknown(_) => {}
    }
    Ok(())
}

fn max_frame() -> u32 {
    frame::DEFAULT_MAX_FRAME_SIZE
}
