//! An HTTP/2 server connection's state (RFC 9113), without I/O: bytes in, events out,
//! commands in, bytes out. The shared connection (`conn`) on the server's side (`role`); no
//! async, no locks, no timers: the owner keeps time and the socket.
//!
//! ```text
//! let mut conn = ServerConn::new(Config::default());   // SETTINGS + WINDOW_UPDATE queued
//! loop {
//!     write conn.output(), drain what was written;
//!     read into buf;
//!     let used = conn.receive(&buf, &mut events)?;     // preface, then whole frames only
//!     for event in events.drain(..) { … Request, Data ranges index buf … conn.release(id, n) … }
//!     buf.drain(..used);
//!     conn.respond(id, 200, fields, false); conn.send_data(id, bytes, true); …
//! }
//! ```
//!
//! What it holds the client to (C: connection error, GOAWAY queued and `ConnError`
//! returned; S: stream error, RST_STREAM queued and `Event::Reset` with `why`):
//! - the client's preface, 24 octets, then a SETTINGS frame as its first frame (§3.4, C);
//!   its SETTINGS are applied in order and acknowledged (§6.5.3);
//! - stream identifiers odd and increasing (§5.1.1, C); beyond this side's
//!   MAX_CONCURRENT_STREAMS, REFUSED_STREAM (§5.1.2, S); after this side's GOAWAY, new streams
//!   are refused (REFUSED_STREAM, S: not processed, §6.8);
//! - field blocks as both sides take them (`conn`: §6.10, §10.5, always decoded, §4.3); a
//!   request held to §8
//!   (`message::RequestCheck`, malformed: S PROTOCOL_ERROR, §8.1.1); a header list above
//!   MAX_HEADER_LIST_SIZE: decoded, then a 431 response and RST_STREAM (see `request`);
//!   trailers via `TrailerCheck`;
//! - DATA against both windows (§6.9) and the request's Content-Length (§8.1.1);
//! - PUSH_PROMISE from a client: C (§8.4); unknown frame types ignored (§5.5).
//!
//! Frames on a stream no longer tracked are dropped as on both sides (`conn`), with one
//! exception:
//! HEADERS on a stream neither idle nor reset by this side is C (§5.1.1: a new stream below
//! the last; §5.1: HEADERS on a closed stream). The last 1,024 streams this side reset while
//! the client was still sending are remembered, so that their trailers, crossing the
//! RST_STREAM, are decoded and dropped (§5.1 "closed"; `bounds`).
//!
//! Bounds against a hostile client (§10.5), each ending the connection with
//! ENHANCE_YOUR_CALM:
//! - streams this side resets for the client's errors, `Config::max_local_resets` over the
//!   connection ("MadeYouReset": each is work the concurrency limit no longer counts);
//! - streams the client resets before their response is complete (Rapid Reset,
//!   CVE-2023-44487): a budget, `Config::reset_budget`, that each completed response refills
//!   by one: a client that mostly lets its requests finish is never stopped, one that opens
//!   and cancels in a loop is stopped after the budget;
//! - unwritten output past `Config::max_queued_output` when a frame arrives: the client sends
//!   PINGs, SETTINGS or resets but does not read the answers. Ended rather than read no more:
//!   without timers this side cannot tell when to resume, and a client that reads nothing
//!   while it writes is not one to wait for;
//! - empty DATA without END_STREAM and empty HEADERS/CONTINUATION fragments without
//!   END_HEADERS, `Config::max_empty_frames` over the connection.

mod bounds;
mod config;
mod events;
mod request;
mod respond;
mod role;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use super::conn::{Conn, Limits};

pub use super::conn::IdHash;
pub use config::Config;
pub use events::{ConnError, Event, Fields};

use role::Server;

/// One HTTP/2 connection from a client, as its server: the shared connection on the server's
/// side.
pub type ServerConn = Conn<Server>;

impl ServerConn {
    /// A connection with this side's SETTINGS and the connection's WINDOW_UPDATE queued (§3.4:
    /// the server's preface is its SETTINGS, sent without waiting for the client's).
    pub fn new(config: Config) -> Self {
        let config = config.checked();
        // The HPACK table stays at its default: this side never changes it.
        let limits = Limits {
            max_queued_output: config.max_queued_output,
            max_empty_frames: config.max_empty_frames,
            ..Limits::new(
                config.max_frame_size,
                config.max_header_block,
                config.max_header_list_size,
                config.stream_window,
            )
        };
        let server = Server {
            config,
            reset_ids: VecDeque::new(),
            local_resets: 0,
            reset_budget: config.reset_budget,
        };
        let settings = config.settings();
        let out = Vec::with_capacity(16 << 10);
        let mut conn = Conn::with(server, limits, out, &settings, config.connection_window);
        conn.concurrency
            .set_local_max(config.max_concurrent_streams);
        // §3.4: the client's preface comes before its first frame.
        conn.preface_due = true;
        conn
    }

    /// This side sent GOAWAY, and no stream is left: the owner may close once the output is
    /// written (§6.8).
    pub fn is_done(&self) -> bool {
        self.failed.is_some() || (self.closing.is_some() && self.streams.is_empty())
    }
}
