//! A client played by hand: frames built with the `frame` writers and an HPACK encoder, fed
//! to the server, whose output is parsed back into frames.

use crate::h2wire::frame::{
    flag, next_frame, write_data, write_goaway, write_headers, write_ping, write_rst_stream,
    write_settings, write_settings_ack, write_window_update, ErrorCode, Head, Kind,
    MAX_ALLOWED_FRAME_SIZE, PREFACE,
};
use crate::h2wire::hpack::{Decoder, Encoder};
use crate::h2wire::server::{Config, ConnError, Event, ServerConn};

/// The client's bytes, appended frame by frame.
#[derive(Default)]
pub struct Client {
    encoder: Encoder,
    pub bytes: Vec<u8>,
}

impl Client {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn preface(&mut self) -> &mut Self {
        self.bytes.extend_from_slice(PREFACE);
        self
    }

    pub fn settings(&mut self, values: &[(u16, u32)]) -> &mut Self {
        write_settings(&mut self.bytes, values);
        self
    }

    pub fn settings_ack(&mut self) -> &mut Self {
        write_settings_ack(&mut self.bytes);
        self
    }

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

    /// A request's head: `method` on `/p`, then `extra` fields.
    pub fn request(
        &mut self,
        id: u32,
        method: &str,
        extra: &[(&str, &str)],
        end_stream: bool,
    ) -> &mut Self {
        let mut fields = vec![
            (":method", method),
            (":scheme", "https"),
            (":path", "/p"),
            (":authority", "weir.example"),
        ];
        fields.extend_from_slice(extra);
        self.headers(id, &fields, end_stream)
    }

    pub fn data(&mut self, id: u32, data: &[u8], end_stream: bool) -> &mut Self {
        write_data(&mut self.bytes, id, data, end_stream, 16_384);
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

    pub fn ping(&mut self, opaque: [u8; 8]) -> &mut Self {
        write_ping(&mut self.bytes, opaque, false);
        self
    }

    pub fn window_update(&mut self, id: u32, increment: u32) -> &mut Self {
        write_window_update(&mut self.bytes, id, increment);
        self
    }

    /// A frame written by hand.
    pub fn frame(&mut self, kind: Kind, flags: u8, id: u32, payload: &[u8]) -> &mut Self {
        let head = Head {
            len: payload.len() as u32,
            kind,
            flags,
            stream: id,
        };
        head.write(&mut self.bytes);
        self.bytes.extend_from_slice(payload);
        self
    }

    /// Feeds every byte so far to `conn` and clears them; all must be consumed unless it
    /// failed.
    pub fn send(&mut self, conn: &mut ServerConn) -> Result<Vec<Event>, ConnError> {
        let (events, _) = self.send_keep(conn)?;
        Ok(events)
    }

    /// As `send`, returning the bytes too, which `Data` ranges index.
    pub fn send_keep(&mut self, conn: &mut ServerConn) -> Result<(Vec<Event>, Vec<u8>), ConnError> {
        let mut events = Vec::new();
        let bytes = std::mem::take(&mut self.bytes);
        let used = conn.receive(&bytes, &mut events)?;
        assert_eq!(used, bytes.len(), "whole frames are consumed");
        Ok((events, bytes))
    }
}

/// A frame the server wrote.
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

/// The frames in the server's output, taken from it.
pub fn written(conn: &mut ServerConn) -> Vec<Sent> {
    let out = std::mem::take(conn.output());
    let mut rest = &out[..];
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

/// The fields of the field block that starts at `frames[at]`.
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

/// A connection past the handshake: the preface, an empty SETTINGS and the ACK of the
/// server's fed, the output drained. Returns the client too, its encoder in step.
pub fn ready(config: Config) -> (ServerConn, Client) {
    let mut conn = ServerConn::new(config);
    let mut client = Client::new();
    let events = client
        .preface()
        .settings(&[])
        .settings_ack()
        .send(&mut conn)
        .unwrap();
    assert_eq!(events, [Event::Settings]);
    conn.output().clear();
    (conn, client)
}

/// The events' `Reset`s, as (stream, code, whether this side reset it).
pub fn reset_events(events: &[Event]) -> Vec<(u32, ErrorCode, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Reset { id, code, why } => Some((*id, *code, why.is_some())),
            _ => None,
        })
        .collect()
}

/// The stream identifiers of the `Request` events.
pub fn requests(events: &[Event]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Request { id, .. } => Some(*id),
            _ => None,
        })
        .collect()
}
