//! A server played by hand: frames built with the `frame` writers and an HPACK encoder, fed
//! to the client, whose output is parsed back into frames.

use crate::h2wire::client::{ClientConn, Config, ConnError, Event};
use crate::h2wire::frame::{
    flag, next_frame, write_data, write_goaway, write_headers, write_ping, write_rst_stream,
    write_settings, write_settings_ack, write_window_update, ErrorCode, Head, Kind,
    MAX_ALLOWED_FRAME_SIZE, PREFACE,
};
use crate::h2wire::hpack::{Decoder, Encoder};

/// The server's bytes, appended frame by frame.
#[derive(Default)]
pub struct Server {
    encoder: Encoder,
    pub bytes: Vec<u8>,
}

impl Server {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn settings(&mut self, values: &[(u16, u32)]) -> &mut Self {
        write_settings(&mut self.bytes, values);
        self
    }

    pub fn settings_ack(&mut self) -> &mut Self {
        write_settings_ack(&mut self.bytes);
        self
    }

    /// A field block of `fields`, encoded by this server's encoder.
    pub fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        self.encoder.begin(&mut block);
        for (name, value) in fields {
            self.encoder
                .field(name.as_bytes(), value.as_bytes(), false, &mut block);
        }
        block
    }

    pub fn headers(&mut self, id: u32, fields: &[(&str, &str)], end_stream: bool) -> &mut Self {
        let block = self.block(fields);
        write_headers(&mut self.bytes, id, &block, end_stream, 16_384);
        self
    }

    pub fn data(&mut self, id: u32, data: &[u8], end_stream: bool) -> &mut Self {
        write_data(
            &mut self.bytes,
            id,
            data,
            end_stream,
            MAX_ALLOWED_FRAME_SIZE,
        );
        self
    }

    pub fn rst(&mut self, id: u32, code: ErrorCode) -> &mut Self {
        write_rst_stream(&mut self.bytes, id, code);
        self
    }

    pub fn goaway(&mut self, last: u32, code: ErrorCode) -> &mut Self {
        write_goaway(&mut self.bytes, last, code, b"");
        self
    }

    pub fn ping(&mut self, opaque: [u8; 8], ack: bool) -> &mut Self {
        write_ping(&mut self.bytes, opaque, ack);
        self
    }

    pub fn window_update(&mut self, id: u32, increment: u32) -> &mut Self {
        write_window_update(&mut self.bytes, id, increment);
        self
    }

    /// Any frame, as given.
    pub fn frame(&mut self, kind: Kind, flags: u8, id: u32, payload: &[u8]) -> &mut Self {
        let len = u32::try_from(payload.len()).unwrap();
        Head {
            len,
            kind,
            flags,
            stream: id,
        }
        .write(&mut self.bytes);
        self.bytes.extend_from_slice(payload);
        self
    }

    /// Feeds every byte so far to `conn` and clears them; all must be consumed unless it
    /// failed.
    pub fn send(&mut self, conn: &mut ClientConn) -> Result<Vec<Event>, ConnError> {
        let (events, _) = self.send_keep(conn)?;
        self.bytes.clear();
        Ok(events)
    }

    /// Feeds every byte so far to `conn` and returns them with the events, whose `Data`
    /// ranges index them.
    pub fn send_keep(&mut self, conn: &mut ClientConn) -> Result<(Vec<Event>, Vec<u8>), ConnError> {
        let mut events = Vec::new();
        let used = conn.receive(&self.bytes, &mut events)?;
        assert_eq!(used, self.bytes.len(), "whole frames are consumed");
        Ok((events, std::mem::take(&mut self.bytes)))
    }
}

/// A frame the client wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub head: Head,
    pub payload: Vec<u8>,
}

impl Sent {
    pub fn is(&self, kind: Kind, stream: u32) -> bool {
        self.head.kind == kind && self.head.stream == stream
    }
}

/// The frames in the client's output, taken from it (the preface skipped).
pub fn written(conn: &mut ClientConn) -> Vec<Sent> {
    let out = std::mem::take(conn.output());
    let mut rest = out.strip_prefix(&PREFACE[..]).unwrap_or(&out);
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let (head, range) = next_frame(rest, MAX_ALLOWED_FRAME_SIZE)
            .unwrap()
            .expect("whole frames");
        frames.push(Sent {
            head,
            payload: rest[range.clone()].to_vec(),
        });
        rest = &rest[range.end..];
    }
    frames
}

/// The RST_STREAM frames written, as (stream, code).
pub fn resets(frames: &[Sent]) -> Vec<(u32, ErrorCode)> {
    frames
        .iter()
        .filter(|f| f.head.kind == Kind::RstStream)
        .map(|f| {
            let code = u32::from_be_bytes(f.payload[..4].try_into().unwrap());
            (f.head.stream, ErrorCode(code))
        })
        .collect()
}

/// The GOAWAY written, as (last stream, code), if one was.
pub fn goaway(frames: &[Sent]) -> Option<(u32, ErrorCode)> {
    let f = frames.iter().find(|f| f.head.kind == Kind::GoAway)?;
    let last = u32::from_be_bytes(f.payload[..4].try_into().unwrap());
    let code = u32::from_be_bytes(f.payload[4..8].try_into().unwrap());
    Some((last, ErrorCode(code)))
}

/// The WINDOW_UPDATE frames written, as (stream, increment).
pub fn window_updates(frames: &[Sent]) -> Vec<(u32, u32)> {
    frames
        .iter()
        .filter(|f| f.head.kind == Kind::WindowUpdate)
        .map(|f| {
            let n = u32::from_be_bytes(f.payload[..4].try_into().unwrap());
            (f.head.stream, n)
        })
        .collect()
}

/// The fields of the field block that starts at `frames[at]` (HEADERS, then CONTINUATIONs).
pub fn decode_block(decoder: &mut Decoder, frames: &[Sent], at: usize) -> Vec<(String, String)> {
    let mut block = Vec::new();
    for f in &frames[at..] {
        block.extend_from_slice(&f.payload);
        if f.head.has(flag::END_HEADERS) {
            break;
        }
    }
    let mut fields = Vec::new();
    decoder
        .decode(&block, 1 << 20, |f| {
            let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            fields.push((text(f.name), text(f.value)));
        })
        .unwrap();
    fields
}

/// A connection past the handshake: the server's empty SETTINGS and its ACK of the client's
/// fed, the output drained.
pub fn ready(config: Config) -> ClientConn {
    ready_with(config, &[])
}

/// As `ready`, the server's SETTINGS carrying `values`.
pub fn ready_with(config: Config, values: &[(u16, u32)]) -> ClientConn {
    let mut conn = ClientConn::new(config);
    let events = Server::new()
        .settings(values)
        .settings_ack()
        .send(&mut conn)
        .unwrap();
    assert!(matches!(events[..], [Event::Settings { .. }]));
    conn.output().clear();
    conn
}

/// Opens a request stream: `method` on `/p`, with `end_stream`.
pub fn request(conn: &mut ClientConn, method: &str, end_stream: bool) -> u32 {
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", method.as_bytes()),
        (b":scheme", b"http"),
        (b":path", b"/p"),
        (b":authority", b"up.example"),
    ];
    conn.open(fields, end_stream).unwrap()
}

/// The events' `Reset`s, as (stream, code, refused, whether this side reset it).
pub fn reset_events(events: &[Event]) -> Vec<(u32, ErrorCode, bool, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Reset {
                id,
                code,
                refused,
                why,
            } => Some((*id, *code, *refused, why.is_some())),
            _ => None,
        })
        .collect()
}
