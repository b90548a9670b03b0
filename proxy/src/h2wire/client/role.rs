//! The client's side of the shared connection: what a HEADERS frame is for, a response's
//! field block, the server's SETTINGS and GOAWAY, and its resets (REFUSED_STREAM).

use super::super::common::ConnError;
use super::super::conn::{Conn, Decoded, IdHash, Pending, Role, Section, Shared, Step, Target};
use super::super::frame::{ErrorCode, Settings};
use super::super::message::ResponseCheck;
use super::super::stream::Role as Side;
use super::events::Event;

/// The client's side. It holds nothing of its own: what it keeps is the shared state's.
pub struct Client;

impl Role for Client {
    const SIDE: Side = Side::Client;
    const FIRST_NOT_SETTINGS: &'static str = "the server's first frame is not SETTINGS (§3.4)";
    const UNOPENED: &'static str = "a frame on a stream this side has not opened (§5.1)";
    const LENGTH_MISMATCH: &'static str =
        "DATA lengths do not add up to the response's content-length (§8.1.1)";

    type Event = Event;
    /// This side chooses every key (`conn::IdHasher`).
    type Hasher = IdHash;
    type Head = ResponseCheck;

    fn target(conn: &mut Conn<Self>, id: u32) -> Result<Target, ConnError> {
        match conn.streams.get(&id) {
            Some(slot) if slot.stream.recv_half().has_head() => Ok(Target::Trailers),
            Some(_) => Ok(Target::Head),
            None => {
                // §5.1 "idle": a server opens streams only by PUSH_PROMISE, which this side
                // refuses, and cannot open one of this side's. A closed one's block is still
                // decoded (§4.3).
                conn.untracked(id, "HEADERS on a stream this side has not opened (§5.1)")?;
                Ok(Target::Drop)
            }
        }
    }

    fn head_check(_conn: &mut Conn<Self>) -> ResponseCheck {
        ResponseCheck::new()
    }

    fn section(
        conn: &mut Conn<Self>,
        block: Pending,
        decoded: Decoded<ResponseCheck>,
        events: &mut Vec<Event>,
    ) -> Step {
        let (id, end_stream) = (block.stream, block.end_stream);
        if decoded.too_large {
            // Above this side's SETTINGS_MAX_HEADER_LIST_SIZE, decoded to its end: a client
            // may discard a response it cannot process (§10.5.1).
            let why = "response header list above SETTINGS_MAX_HEADER_LIST_SIZE (§10.5.1)";
            return conn.stream_error(id, ErrorCode::CANCEL, why, events);
        }
        if let Some((code, why)) = block.stream_error {
            // Nothing for a stream no longer tracked (`stream_error`).
            return conn.stream_error(id, code, why, events);
        }
        let fields = decoded.fields;
        match decoded.section {
            Section::Head(check) => {
                conn.response_head(id, end_stream, check.finish(), fields, events)
            }
            Section::Trailers(check) => {
                conn.trailers(id, end_stream, check.finish(), fields, events)
            }
            Section::Drop => Ok(()),
        }
    }

    fn settings(conn: &mut Conn<Self>, values: &Settings) -> Result<Event, ConnError> {
        if values.enable_push == Some(true) {
            // §6.5.2: a server must not send 1; a client treats it as a connection error.
            let why = "SETTINGS_ENABLE_PUSH = 1 from a server (§6.5.2)";
            let code = ErrorCode::PROTOCOL_ERROR;
            return Err(ConnError { code, why });
        }
        if let Some(max) = values.max_concurrent_streams {
            // Lowered below the active streams, they finish and no new one opens (§5.1.2).
            conn.concurrency.set_peer_max(max);
        }
        if let Some(size) = values.max_header_list_size {
            conn.peer.max_header_list_size = size;
        }
        Ok(Event::Settings {
            max_concurrent_streams: values.max_concurrent_streams,
        })
    }

    /// No stream opens any more; those above the last stream identifier were not processed
    /// and are forgotten, reported for the owner to send again elsewhere (§6.8).
    fn goaway(
        conn: &mut Conn<Self>,
        last_stream: u32,
        code: ErrorCode,
        events: &mut Vec<Event>,
    ) -> Step {
        let ids = conn.ids;
        let mut unprocessed: Vec<u32> = (conn.streams.keys().copied())
            .filter(|&id| !ids.maybe_processed(id))
            .collect();
        unprocessed.sort_unstable();
        for &id in &unprocessed {
            conn.forget(id);
        }
        events.push(Event::GoAway {
            last_stream,
            code,
            unprocessed,
        });
        Ok(())
    }

    fn peer_reset(
        conn: &mut Conn<Self>,
        id: u32,
        code: ErrorCode,
        _complete: bool,
        events: &mut Vec<Event>,
    ) -> Step {
        conn.forget(id);
        events.push(Event::Reset {
            id,
            code,
            // §8.7: REFUSED_STREAM says the server did nothing with the request.
            refused: code == ErrorCode::REFUSED_STREAM,
            why: None,
        });
        Ok(())
    }
}

impl From<Shared> for Event {
    fn from(shared: Shared) -> Event {
        match shared {
            Shared::Data {
                id,
                data,
                end_stream,
            } => Event::Data {
                id,
                data,
                end_stream,
            },
            Shared::Trailers { id, fields } => Event::Trailers { id, fields },
            Shared::Reset { id, code, why } => Event::Reset {
                id,
                code,
                refused: false,
                why: Some(why),
            },
            Shared::PingAck(opaque) => Event::PingAck(opaque),
            Shared::Capacity { id } => Event::Capacity { id },
        }
    }
}
