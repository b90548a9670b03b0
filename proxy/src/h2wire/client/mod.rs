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
//! The rules both sides keep, and frames on streams closed or idle, are `conn`'s; this module
//! is the client's side of it (`role`): opening streams (`open`), the response's rules
//! (`response`), interim heads, the server's GOAWAY and REFUSED_STREAM.

mod config;
mod events;
mod open;
mod response;
mod role;
#[cfg(test)]
mod tests;

use super::conn::{Conn, Limits};
use super::frame::PREFACE;
use super::stream::MAX_STREAM_ID;

/// The hash of the identifiers a client chooses, for an owner's own map of its streams.
pub use super::conn::IdHash;
pub use config::Config;
pub use events::{ConnError, Event, Fields, OpenError};

use role::Client;

/// One HTTP/2 connection to a server, as its client: the shared connection on the client's
/// side.
pub type ClientConn = Conn<Client>;

impl ClientConn {
    /// A connection with the preface, this side's SETTINGS and the connection's WINDOW_UPDATE
    /// queued in the output (§3.4: the preface and SETTINGS come first; the rest may follow
    /// without waiting for the server's).
    pub fn new(config: Config) -> Self {
        let config = config.checked();
        // The client's owner bounds its own output (see `output`), and a server's empty
        // frames cost no more than its others: neither is bounded here.
        let limits = Limits {
            header_table_size: config.header_table_size,
            ..Limits::new(
                config.max_frame_size,
                config.max_header_block,
                config.max_header_list_size,
                config.stream_window,
            )
        };
        let mut out = Vec::with_capacity(16 << 10);
        out.extend_from_slice(PREFACE);
        let settings = config.settings();
        Conn::with(Client, limits, out, &settings, config.connection_window)
    }

    /// Whether `open` would open a stream now: fewer streams are active than the server
    /// allows (§5.1.2), identifiers remain, and neither side sent GOAWAY nor did the
    /// connection fail. Before the server's preface ([`is_settled`](Self::is_settled)) its
    /// SETTINGS_MAX_CONCURRENT_STREAMS is unknown: streams opened then may be refused.
    pub fn can_open(&self) -> bool {
        self.open_refusal().is_none()
    }

    /// What stops a stream opening, if anything does.
    fn open_refusal(&self) -> Option<OpenError> {
        if self.failed.is_some() || self.closing.is_some() {
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
