//! Where a client and a server connection differ inside the shared frame handling: a side's
//! constants and hooks, and the events both sides report alike.

use std::hash::BuildHasher;
use std::ops::Range;

use super::super::common::{ConnError, Fields};
use super::super::frame::{ErrorCode, Settings};
use super::super::stream::Role as Side;
use super::block::{Decoded, HeadCheck, Pending, Target};
use super::error::Step;
use super::Conn;

/// Events the shared frame handling reports; each side's `Event` has them all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shared {
    /// Content: a range of the buffer given to `receive`.
    Data {
        id: u32,
        data: Range<usize>,
        end_stream: bool,
    },
    /// The message's trailers; they end the peer's side of the stream.
    Trailers { id: u32, fields: Fields },
    /// This side reset the stream for the rule `why` the peer broke (§5.4.2).
    Reset {
        id: u32,
        code: ErrorCode,
        why: &'static str,
    },
    /// The answer to this side's PING.
    PingAck([u8; 8]),
    /// A send window that allowed nothing now allows something.
    Capacity { id: Option<u32> },
}

/// A connection's side: its own state (`Conn::role`), and what it does where the sides
/// differ. Hooks take the whole connection, since what differs is mostly what a side does
/// with the shared state.
pub trait Role: Sized {
    /// Which identifiers are this side's (§5.1.1), and whose limit counts its streams.
    const SIDE: Side;
    /// The connection error for a first frame other than SETTINGS (§3.4).
    const FIRST_NOT_SETTINGS: &'static str;
    /// The connection error for a stream error on a stream never opened (§5.1 "idle").
    const UNOPENED: &'static str;
    /// The stream error for DATA that does not add up to the message's Content-Length.
    const LENGTH_MISMATCH: &'static str;

    type Event: From<Shared>;
    /// How the stream map hashes identifiers.
    type Hasher: BuildHasher + Default;
    /// The check a message's head is held to (§8).
    type Head: HeadCheck;

    /// What a HEADERS frame on stream `id` is for; a connection error if it may not come.
    fn target(conn: &mut Conn<Self>, id: u32) -> Result<Target, ConnError>;

    /// A new check for a message's head (given room in the connection's section buffer where
    /// it keeps values of its own).
    fn head_check(conn: &mut Conn<Self>) -> Self::Head;

    /// A whole field block decoded: taken as a head or trailers, or dropped.
    fn section(
        conn: &mut Conn<Self>,
        block: Pending,
        decoded: Decoded<Self::Head>,
        events: &mut Vec<Self::Event>,
    ) -> Step;

    /// The peer's SETTINGS values only this side reads, applied before the shared ones;
    /// returns the event reporting them.
    fn settings(conn: &mut Conn<Self>, values: &Settings) -> Result<Self::Event, ConnError>;

    /// The peer's GOAWAY, after the shared identifiers took it (§6.8).
    fn goaway(
        conn: &mut Conn<Self>,
        last_stream: u32,
        code: ErrorCode,
        events: &mut Vec<Self::Event>,
    ) -> Step;

    /// The peer's RST_STREAM on tracked stream `id`, which the stream's state accepted;
    /// `complete`: this side's message had ended.
    fn peer_reset(
        conn: &mut Conn<Self>,
        id: u32,
        code: ErrorCode,
        complete: bool,
        events: &mut Vec<Self::Event>,
    ) -> Step;

    /// One more stream this side resets for the peer's error (§5.4.2), before its
    /// RST_STREAM: an error ends the connection instead.
    fn count_reset(_conn: &mut Conn<Self>) -> Step {
        Ok(())
    }

    /// RST_STREAM was queued on stream `id`; `peer_open`: the peer may still send on it.
    fn reset_sent(_conn: &mut Conn<Self>, _id: u32, _peer_open: bool) {}

    /// DATA came on stream `id`, which is neither idle nor tracked: true if it is to be
    /// answered with a stream error of type STREAM_CLOSED (§6.1) — it was closed by END_STREAM
    /// both ways or by the peer's RST_STREAM — and false if dropped (§5.1: a stream this side
    /// reset, on which frames sent before the peer saw the RST_STREAM may still come). A side
    /// that does not remember its resets drops them all.
    fn refuses_closed_data(_conn: &Conn<Self>, _id: u32) -> bool {
        false
    }

    /// A stream was forgotten, closed both ways; `complete`: this side's message ended.
    fn forgot(_conn: &mut Conn<Self>, _complete: bool) {}
}
