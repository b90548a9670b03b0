//! An HTTP/2 client connection's state (RFC 9113), without I/O: bytes in, events out,
//! commands in, bytes out. No async, no locks, no timers; the owner keeps time and the socket.
//!
//! ```text
//! let mut conn = ClientConn::new(Config::default());   // preface + SETTINGS queued
//! loop {
//!     write conn.output(), drain what was written;
//!     read into buf;
//!     let used = conn.receive(&buf, &mut events)?;     // whole frames only
//!     for event in events.drain(..) { … Data ranges index buf … conn.release(id, n) … }
//!     buf.drain(..used);
//!     conn.open(fields, end_stream)?; conn.send_data(id, bytes, end_stream); …
//! }
//! ```
//!
//! What it holds the server to, and how (C: connection error, GOAWAY queued and `ConnError`
//! returned; S: stream error, RST_STREAM queued and `Event::Reset` with `why`):
//! - the server's preface is a SETTINGS frame (§3.4, C); its SETTINGS are applied in order
//!   and acknowledged (§6.5.3): INITIAL_WINDOW_SIZE moves every stream's send window
//!   (§6.9.2), ENABLE_PUSH = 1 is refused (§6.5.2, C);
//! - every frame's own rules (`frame`), stream states (`stream`, §5.1), flow control (`flow`,
//!   §6.9: the connection's window counts DATA on every stream, known or not);
//! - a field block is HEADERS then CONTINUATIONs with no other frame between (§6.10, C), at
//!   most `Config::max_header_block` octets (§10.5, C), always decoded, for a stream reset or
//!   forgotten too (§4.3); HPACK errors are C (COMPRESSION_ERROR);
//! - a response is held to §8 (`message`), and its DATA to its Content-Length (§8.1.1): a
//!   malformed one is S (PROTOCOL_ERROR), never C;
//! - PUSH_PROMISE is refused (C: this side sent ENABLE_PUSH = 0, §8.4); unknown frame types
//!   are ignored (§5.5).
//!
//! Frames on a stream this side no longer tracks (closed, §5.1 "closed") are processed
//! minimally and dropped: field blocks decoded, DATA counted against the connection's window
//! and given back at once, WINDOW_UPDATE and RST_STREAM ignored. §5.1 allows that for every
//! closed stream; telling a stream closed by END_STREAM (where a frame may be punished) from
//! one this side reset (where it must be ignored) would mean remembering every stream ever
//! closed. Frames on idle streams (never opened, `StreamIds::is_idle`) are C.
//!
//! An oversized frame (above this side's SETTINGS_MAX_FRAME_SIZE) is always C, including DATA
//! on a stream, which §4.2 would let be S: §5.4.1 lets any stream error end the connection,
//! and skipping up to 16 MiB across reads needs state for a server that ignores SETTINGS.

mod config;
mod control;
mod data;
mod events;
mod headers;
mod receive;
mod send;
mod streams;
#[cfg(test)]
mod tests;

use super::flow::{RecvWindow, SendWindow, DEFAULT_WINDOW};
use super::frame::{write_settings, write_window_update, DEFAULT_MAX_FRAME_SIZE, PREFACE};
use super::hpack::{Decoder, Encoder};
use super::stream::{Concurrency, Role, StreamIds, MAX_STREAM_ID};

pub use config::Config;
pub use events::{ConnError, Event, Fields, OpenError};

use config::DEFAULT_HEADER_TABLE_SIZE;
use headers::Pending;
use streams::Streams;

/// One HTTP/2 connection to a server, as its client.
pub struct ClientConn {
    config: Config,
    /// Bytes to write, appended to; the owner takes them.
    out: Vec<u8>,
    encoder: Encoder,
    decoder: Decoder,
    ids: StreamIds,
    concurrency: Concurrency,
    streams: Streams,
    /// What this side may still send on the connection, and what the server may (§6.9).
    conn_send: SendWindow,
    conn_recv: RecvWindow,
    peer: PeerSettings,
    /// The server's preface (its first SETTINGS) has come (§3.4).
    settled: bool,
    /// The server acknowledged this side's SETTINGS: its values that lower a limit now hold
    /// (§6.5.3).
    acked: bool,
    /// A field block whose CONTINUATIONs are still to come (§6.10), collected in `block`.
    pending: Option<Pending>,
    block: Vec<u8>,
    /// The field block of the HEADERS being sent, reused.
    encoded: Vec<u8>,
    /// This side sent GOAWAY: no new streams.
    closing: bool,
    /// The connection error, once one happened.
    failed: Option<ConnError>,
}

/// The server's SETTINGS that bind what this side sends (§6.5.2).
#[derive(Clone, Copy, Debug)]
struct PeerSettings {
    initial_window: u32,
    max_frame_size: u32,
    max_header_list_size: u32,
}

impl ClientConn {
    /// A connection with the preface, this side's SETTINGS and the connection's WINDOW_UPDATE
    /// queued in the output (§3.4: the preface and SETTINGS come first; the rest may follow
    /// without waiting for the server's).
    pub fn new(config: Config) -> Self {
        let config = config.checked();
        let mut out = Vec::with_capacity(16 << 10);
        out.extend_from_slice(PREFACE);
        write_settings(&mut out, &config.settings());
        let (conn_recv, update) = RecvWindow::connection(config.connection_window);
        if let Some(increment) = update {
            write_window_update(&mut out, 0, increment);
        }
        // The server's encoder starts with a table of 4,096 and moves it only by a size update
        // (RFC 7541 §4.2): the limit rises now, a lower one holds once acknowledged (`acked`).
        let mut decoder = Decoder::new(DEFAULT_HEADER_TABLE_SIZE as usize);
        if config.header_table_size > DEFAULT_HEADER_TABLE_SIZE {
            decoder.set_limit(config.header_table_size as usize);
        }
        ClientConn {
            config,
            out,
            encoder: Encoder::new(),
            decoder,
            ids: StreamIds::new(Role::Client),
            concurrency: Concurrency::new(),
            streams: Streams::default(),
            conn_send: SendWindow::new(DEFAULT_WINDOW),
            conn_recv,
            peer: PeerSettings {
                initial_window: DEFAULT_WINDOW,
                max_frame_size: DEFAULT_MAX_FRAME_SIZE,
                max_header_list_size: u32::MAX,
            },
            settled: false,
            acked: false,
            pending: None,
            block: Vec::new(),
            encoded: Vec::new(),
            closing: false,
            failed: None,
        }
    }

    /// The bytes to write, in order. The owner removes what it wrote (`drain`, or
    /// `std::mem::take` after writing all). Left unwritten they only grow: an owner that
    /// cannot write should stop sending DATA, and stop reading too, since every PING and
    /// SETTINGS the server sends queues an acknowledgement here (§10.5).
    pub fn output(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Whether `open` would open a stream now: fewer streams are active than the server
    /// allows (§5.1.2), identifiers remain, and neither side sent GOAWAY nor did the
    /// connection fail. Before the server's preface ([`is_settled`](Self::is_settled)) its
    /// SETTINGS_MAX_CONCURRENT_STREAMS is unknown: streams opened then may be refused.
    pub fn can_open(&self) -> bool {
        self.open_refusal().is_none()
    }

    /// Streams open (not yet closed), counted against the server's limit.
    pub fn active_streams(&self) -> u32 {
        self.concurrency.active_local()
    }

    /// The server's first SETTINGS frame has come (§3.4).
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// The server acknowledged this side's SETTINGS. The owner may end a connection where it
    /// takes too long with `go_away(ErrorCode::SETTINGS_TIMEOUT)` (§6.5.3).
    pub fn settings_acked(&self) -> bool {
        self.acked
    }

    /// The connection error, once one happened.
    pub fn error(&self) -> Option<ConnError> {
        self.failed
    }

    /// What stops a stream opening, if anything does.
    fn open_refusal(&self) -> Option<OpenError> {
        if self.failed.is_some() || self.closing {
            Some(OpenError::Closed)
        } else if self.ids.peer_last().is_some() {
            Some(OpenError::GoingAway)
        } else if !self.ids.is_idle(MAX_STREAM_ID) {
            // The last identifier was used: §5.1.1, none can be used twice.
            Some(OpenError::IdsExhausted)
        } else if self.concurrency.active_local() >= self.concurrency.peer_max() {
            Some(OpenError::AtLimit)
        } else {
            None
        }
    }
}
