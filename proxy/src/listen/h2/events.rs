//! What the engine's events mean for the connection's streams: a new request made into the
//! pipeline's request, DATA and trailers handed to its body, a reset that ends its stream.
//! Runs with the shared state locked: nothing here polls, drops a body or a stream's handle,
//! or runs the pipeline (the connection starts new streams once the lock is released).

use bytes::Bytes;
use http::Request;

use super::link::Link;
use super::request;
use super::state::Core;
use super::stream::StreamHandle;
use crate::h2link::{header_map, H2RequestBody};
use crate::h2wire::frame::ErrorCode;
use crate::h2wire::server::Event;
use crate::upstream::Received;

/// What the connection does after the events, outside the lock.
#[derive(Default)]
pub struct After {
    /// Requests to start, each with its stream's handle.
    pub started: Vec<(Request<Received>, StreamHandle)>,
    /// PONGs' opaque data.
    pub pongs: Vec<[u8; 8]>,
    /// The client sent GOAWAY: it opens no more streams.
    pub client_going: bool,
}

/// Applies `event`; `frames` is the buffer its DATA ranges index.
pub fn apply(core: &mut Core, link: &Link, frames: &Bytes, event: Event, after: &mut After) {
    match event {
        Event::Request {
            id,
            head,
            fields,
            end_stream,
        } => {
            core.open(id, !end_stream);
            match request::build(&head, fields) {
                Ok(req) => {
                    let body = if end_stream {
                        H2RequestBody::empty()
                    } else {
                        H2RequestBody::new(link.source(), id, head.content_length)
                    };
                    let req = req.map(|()| Received::H2Request(body));
                    after
                        .started
                        .push((req, StreamHandle::new(link.clone(), id)));
                }
                Err(why) => {
                    // §8.1.1: a request `http` cannot hold is malformed for this side.
                    tracing::debug!(id, why, "HTTP/2 request refused");
                    core.conn.reset(id, ErrorCode::PROTOCOL_ERROR);
                    core.gone(id, why);
                    core.body_dropped(id);
                    core.stream_ended(id);
                }
            }
        }
        Event::Data {
            id,
            data,
            end_stream,
        } => core.data(id, frames, data, end_stream),
        Event::Trailers { id, fields } => match header_map(fields, 0) {
            Ok(trailers) => core.trailers(id, trailers),
            Err(why) => {
                core.conn.reset(id, ErrorCode::PROTOCOL_ERROR);
                core.gone(id, why);
            }
        },
        Event::Reset { id, code, why } => {
            tracing::debug!(id, %code, why, "HTTP/2 stream reset");
            core.gone(id, why.unwrap_or("the client reset the stream"));
        }
        Event::GoAway { .. } => after.client_going = true,
        Event::PingAck(opaque) => after.pongs.push(opaque),
        Event::Capacity { id } => core.capacity(id),
        Event::Settings => {}
    }
}
