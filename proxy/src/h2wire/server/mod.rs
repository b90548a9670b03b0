//! An HTTP/2 server connection's state (RFC 9113), without I/O: bytes in, events out,
//! commands in, bytes out. The mirror of `client` for the server role; no async, no locks, no
//! timers: the owner keeps time and the socket.
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
//! - field blocks as in `client` (§6.10, §10.5, always decoded, §4.3); a request held to §8
//!   (`message::RequestCheck`, malformed: S PROTOCOL_ERROR, §8.1.1); a header list above
//!   MAX_HEADER_LIST_SIZE: decoded, then a 431 response and RST_STREAM (see `headers`);
//!   trailers via `TrailerCheck`;
//! - DATA against both windows (§6.9) and the request's Content-Length (§8.1.1);
//! - PUSH_PROMISE from a client: C (§8.4); unknown frame types ignored (§5.5).
//!
//! Frames on a stream no longer tracked are dropped as in `client`, with one exception:
//! HEADERS on a stream neither idle nor reset by this side is C (§5.1.1: a new stream below
//! the last; §5.1: HEADERS on a closed stream). The last 1,024 streams this side reset while
//! the client was still sending are remembered, so that their trailers, crossing the
//! RST_STREAM, are decoded and dropped (§5.1 "closed").
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

mod config;
mod control;
mod data;
mod events;
mod headers;
mod receive;
mod request;
mod send;
mod streams;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use super::flow::{RecvWindow, SendWindow, DEFAULT_WINDOW};
use super::frame::{write_settings, write_window_update, DEFAULT_MAX_FRAME_SIZE};
use super::hpack::{Decoder, Encoder};
use super::stream::{Concurrency, Role, StreamIds};

pub use config::Config;
pub use events::{ConnError, Event, Fields};

use headers::Pending;
use streams::Streams;

/// The HPACK table size until SETTINGS say otherwise (§6.5.2); this side never changes it.
const DEFAULT_HEADER_TABLE_SIZE: usize = 4_096;

/// One HTTP/2 connection from a client, as its server.
pub struct ServerConn {
    config: Config,
    /// Bytes to write, appended to; the owner takes them.
    out: Vec<u8>,
    encoder: Encoder,
    decoder: Decoder,
    ids: StreamIds,
    concurrency: Concurrency,
    streams: Streams,
    conn_send: SendWindow,
    conn_recv: RecvWindow,
    peer: PeerSettings,
    /// The client's 24-octet preface has come (§3.4).
    preface: bool,
    /// The client's first SETTINGS has come (§3.4).
    settled: bool,
    /// The client acknowledged this side's SETTINGS (§6.5.3).
    acked: bool,
    pending: Option<Pending>,
    block: Vec<u8>,
    encoded: Vec<u8>,
    /// Streams this side reset while the client's side was open, the latest last: their late
    /// frames are dropped, not refused (§5.1 "closed"). Bounded (`receive::RESET_MEMORY`).
    reset_ids: VecDeque<u32>,
    /// Streams this side reset for the client's errors, over the connection.
    local_resets: u32,
    /// Rapid Reset budget left (`Config::reset_budget`).
    reset_budget: u32,
    /// Empty frames received, over the connection (`Config::max_empty_frames`).
    empty_frames: u32,
    /// This side's GOAWAY's last stream identifier, once sent: streams above are refused.
    closing: Option<u32>,
    failed: Option<ConnError>,
}

/// The client's SETTINGS that bind what this side sends (§6.5.2).
#[derive(Clone, Copy, Debug)]
struct PeerSettings {
    initial_window: u32,
    max_frame_size: u32,
}

impl ServerConn {
    /// A connection with this side's SETTINGS and the connection's WINDOW_UPDATE queued (§3.4:
    /// the server's preface is its SETTINGS, sent without waiting for the client's).
    pub fn new(config: Config) -> Self {
        let config = config.checked();
        let mut out = Vec::with_capacity(16 << 10);
        write_settings(&mut out, &config.settings());
        let (conn_recv, update) = RecvWindow::connection(config.connection_window);
        if let Some(increment) = update {
            write_window_update(&mut out, 0, increment);
        }
        let mut concurrency = Concurrency::new();
        concurrency.set_local_max(config.max_concurrent_streams);
        ServerConn {
            config,
            out,
            encoder: Encoder::new(),
            decoder: Decoder::new(DEFAULT_HEADER_TABLE_SIZE),
            ids: StreamIds::new(Role::Server),
            concurrency,
            streams: Streams::default(),
            conn_send: SendWindow::new(DEFAULT_WINDOW),
            conn_recv,
            peer: PeerSettings {
                initial_window: DEFAULT_WINDOW,
                max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            },
            preface: false,
            settled: false,
            acked: false,
            pending: None,
            block: Vec::new(),
            encoded: Vec::new(),
            reset_ids: VecDeque::new(),
            local_resets: 0,
            reset_budget: config.reset_budget,
            empty_frames: 0,
            closing: None,
            failed: None,
        }
    }

    /// The bytes to write, in order. The owner removes what it wrote. Left unwritten while
    /// the client keeps sending, they end the connection (`Config::max_queued_output`).
    pub fn output(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Streams open (not yet closed), counted against this side's limit.
    pub fn active_streams(&self) -> u32 {
        self.concurrency.active_remote()
    }

    /// The client's first SETTINGS frame has come (§3.4).
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// The client acknowledged this side's SETTINGS; the owner may end a connection where it
    /// takes too long with `go_away(ErrorCode::SETTINGS_TIMEOUT)` (§6.5.3).
    pub fn settings_acked(&self) -> bool {
        self.acked
    }

    /// This side sent GOAWAY, and no stream is left: the owner may close once the output is
    /// written (§6.8).
    pub fn is_done(&self) -> bool {
        self.failed.is_some() || (self.closing.is_some() && self.streams.is_empty())
    }

    /// The connection error, once one happened.
    pub fn error(&self) -> Option<ConnError> {
        self.failed
    }
}
