//! The server's side of the shared connection: its own state, what a HEADERS frame is for
//! (a new stream, trailers, or a stream it reset), and the hooks its bounds hang on.

use std::collections::VecDeque;

use super::super::common::{carve, ConnError};
use super::super::conn::{Conn, Decoded, IdHash, Pending, Role, Shared, Step, Target};
use super::super::frame::{ErrorCode, Settings};
use super::super::message::{RequestCheck, HEAD_ROOM};
use super::super::stream::Role as Side;
use super::config::Config;
use super::events::Event;

/// What the server keeps besides the shared state.
pub struct Server {
    pub(super) config: Config,
    /// Streams this side reset while the client's side was open, the latest last: their late
    /// frames are dropped, not refused (§5.1 "closed"). Bounded (`bounds::RESET_MEMORY`).
    pub(super) reset_ids: VecDeque<u32>,
    /// Streams this side reset for the client's errors, over the connection.
    pub(super) local_resets: u32,
    /// Rapid Reset budget left (`Config::reset_budget`).
    pub(super) reset_budget: u32,
}

impl Role for Server {
    const SIDE: Side = Side::Server;
    const FIRST_NOT_SETTINGS: &'static str = "the client's first frame is not SETTINGS (§3.4)";
    const UNOPENED: &'static str = "a frame on an idle stream (§5.1)";
    const LENGTH_MISMATCH: &'static str =
        "DATA lengths do not add up to the request's content-length (§8.1.1)";

    type Event = Event;
    /// The client's multiplicative hash (`conn::IdHasher`) here too, although the client
    /// chooses the keys: the map holds at most MAX_CONCURRENT_STREAMS of them at once, so
    /// identifiers chosen to collide cost a lookup a scan of that many (one group load per 16)
    /// and nothing grows with them. SipHash was 3 % of the instructions of a gRPC call
    /// (benches/README.md, session 21), paid on every frame.
    type Hasher = IdHash;
    type Head = RequestCheck;

    /// A new stream's identifier is taken now (§5.1.1: odd, above every earlier one, else a
    /// connection PROTOCOL_ERROR).
    fn target(conn: &mut Conn<Self>, id: u32) -> Result<Target, ConnError> {
        if conn.streams.contains_key(&id) {
            return Ok(Target::Trailers);
        }
        if conn.ids.is_idle(id) {
            conn.ids.accept_remote(id).map_err(|r| ConnError {
                code: r.code,
                why: r.why,
            })?;
            return Ok(Target::Head);
        }
        if conn.role.reset_ids.contains(&id) {
            return Ok(Target::Drop);
        }
        // Not idle, not open, not reset by this side: a stream closed by END_STREAM both ways
        // or by the client's RST_STREAM (§5.1 "closed": STREAM_CLOSED), or one skipped by a
        // higher identifier (§5.1.1: PROTOCOL_ERROR). The two cannot be told apart without
        // remembering every stream; either is a connection error.
        let why = "HEADERS on a closed stream, or a new stream not above every earlier one \
                   (§5.1, §5.1.1)";
        Err(ConnError {
            code: ErrorCode::PROTOCOL_ERROR,
            why,
        })
    }

    fn head_check(conn: &mut Conn<Self>) -> RequestCheck {
        // The pseudo-headers' values share the buffer the section's fields go to: the
        // listener slices the request's authority and path from them without a copy.
        let room = carve(&mut conn.arena, HEAD_ROOM);
        RequestCheck::with_room(conn.role.config.enable_connect_protocol, room)
    }

    fn section(
        conn: &mut Conn<Self>,
        block: Pending,
        decoded: Decoded<RequestCheck>,
        events: &mut Vec<Event>,
    ) -> Step {
        conn.section(block, decoded, events)
    }

    /// ENABLE_PUSH, the client's MAX_CONCURRENT_STREAMS and ENABLE_CONNECT_PROTOCOL bind only
    /// streams a server opens, and weir opens none; MAX_HEADER_LIST_SIZE is advisory
    /// (§6.5.2), responses being the owner's.
    fn settings(_conn: &mut Conn<Self>, _values: &Settings) -> Result<Event, ConnError> {
        Ok(Event::Settings)
    }

    /// The client opens no more streams (§6.8); those open go on.
    fn goaway(
        _conn: &mut Conn<Self>,
        last_stream: u32,
        code: ErrorCode,
        events: &mut Vec<Event>,
    ) -> Step {
        events.push(Event::GoAway { last_stream, code });
        Ok(())
    }

    fn peer_reset(
        conn: &mut Conn<Self>,
        id: u32,
        code: ErrorCode,
        complete: bool,
        events: &mut Vec<Event>,
    ) -> Step {
        conn.client_reset(id, code, complete, events)
    }

    fn count_reset(conn: &mut Conn<Self>) -> Step {
        conn.count_local_reset()
    }

    fn refuses_closed_data(conn: &Conn<Self>, id: u32) -> bool {
        !conn.role.reset_ids.contains(&id)
    }

    fn reset_sent(conn: &mut Conn<Self>, id: u32, client_open: bool) {
        if client_open {
            conn.remember_reset(id);
        }
    }

    fn forgot(conn: &mut Conn<Self>, complete: bool) {
        conn.refill(complete);
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
                why: Some(why),
            },
            Shared::PingAck(opaque) => Event::PingAck(opaque),
            Shared::Capacity { id } => Event::Capacity { id },
        }
    }
}
