//! What an HTTP/2 client connection and a server connection share (RFC 9113), without I/O:
//! the state both sides hold and the rules both sides keep. `Conn<R>` is one connection;
//! `R` is its side (`client::Client`, `server::Server`), which holds that side's own state and
//! answers the hooks of [`Role`] where the two differ. `ClientConn` and `ServerConn` are
//! `Conn<Client>` and `Conn<Server>`.
//!
//! Shared, and so written once: frames cut from received bytes and dispatched (`receive`),
//! stream and connection errors (§5.4), field blocks joined from HEADERS and CONTINUATION and
//! decoded (`headers`, §4.3, §6.10), DATA against both windows and the message's
//! Content-Length (`data`, §6.9, §8.1.1), SETTINGS, PING, GOAWAY, RST_STREAM, WINDOW_UPDATE and
//! PRIORITY (`control`), the owner's commands that both sides have (`send`), and the stream
//! slots (`streams`). What a side's messages are (a request or a response), how streams open,
//! and the server's bounds against a hostile client stay in `client` and `server`.
//!
//! Frames on a stream this side no longer tracks (closed, §5.1 "closed") are processed
//! minimally: field blocks decoded, DATA counted against the connection's window and given
//! back at once, WINDOW_UPDATE and RST_STREAM ignored. DATA is then a stream error of type
//! STREAM_CLOSED (§6.1) where the side can tell (`Role::refuses_closed_data`): a server
//! remembers the streams it reset (bounded), on which frames crossing its RST_STREAM must be
//! ignored, so every other closed stream — ended both ways, or reset by the client — is
//! answered. A client drops them all. Frames on idle streams (never opened,
//! `StreamIds::is_idle`) are C.
//!
//! An oversized frame (above this side's SETTINGS_MAX_FRAME_SIZE) is always C, including DATA
//! on a stream, which §4.2 would let be S: §5.4.1 lets any stream error end the connection,
//! and skipping up to 16 MiB across reads needs state for a peer that ignores SETTINGS.

mod block;
mod control;
mod data;
mod error;
mod headers;
mod receive;
mod role;
mod send;
mod streams;

use bytes::BytesMut;

use super::common::ConnError;
use super::flow::{RecvWindow, SendWindow, DEFAULT_WINDOW};
use super::frame::{write_settings, write_window_update, DEFAULT_MAX_FRAME_SIZE};
use super::hpack::{Decoder, Encoder};
use super::stream::{Concurrency, Role as Side, StreamIds};

pub use block::{Decoded, Pending, Section, SectionSizes, Target};
pub use error::{calm, Step};
pub use role::{Role, Shared};
pub use streams::{IdHash, Slot, Streams};

/// The most any side collects of one field block, whatever its configuration says: so that
/// every decoded field's length fits the u32 a section records it in (`common::Fields`).
pub const MAX_BLOCK: usize = 1 << 30;

/// SETTINGS_HEADER_TABLE_SIZE until a SETTINGS says otherwise (§6.5.2).
pub const DEFAULT_HEADER_TABLE_SIZE: u32 = 4_096;

/// One HTTP/2 connection, on side `R`. Its fields are the roles' to read and move
/// (`pub(super)`: `h2wire` and below), nobody else's.
pub struct Conn<R: Role> {
    /// The side's own state and configuration.
    pub(super) role: R,
    pub(super) limits: Limits,
    /// Bytes to write, appended to; the owner takes them.
    pub(super) out: Vec<u8>,
    pub(super) encoder: Encoder,
    pub(super) decoder: Decoder,
    pub(super) ids: StreamIds,
    pub(super) concurrency: Concurrency,
    pub(super) streams: Streams<R::Hasher>,
    /// What this side may still send on the connection, and what the peer may (§6.9).
    pub(super) conn_send: SendWindow,
    pub(super) conn_recv: RecvWindow,
    pub(super) peer: PeerSettings,
    /// The peer's 24-octet preface is still to come (§3.4: a server's peer sends one).
    pub(super) preface_due: bool,
    /// The peer's preface SETTINGS (its first frame) has come (§3.4).
    pub(super) settled: bool,
    /// The peer acknowledged this side's SETTINGS: its values that lower a limit now hold
    /// (§6.5.3).
    pub(super) acked: bool,
    /// A field block whose CONTINUATIONs are still to come (§6.10), collected in `block`.
    pub(super) pending: Option<Pending>,
    pub(super) block: Vec<u8>,
    /// What the last head and trailers decoded to: room for the next ones' fields.
    pub(super) sizes: SectionSizes,
    /// The spare room of the buffer received sections' fields are copied into
    /// (`Fields::in_arena`); given back while the connection is quiet (`quiet`).
    pub(super) arena: BytesMut,
    /// The field block of the HEADERS being sent, reused.
    pub(super) encoded: Vec<u8>,
    /// Empty frames received, over the connection (`Limits::max_empty_frames`).
    pub(super) empty_frames: u32,
    /// This side's GOAWAY's last stream identifier, once sent: no new streams.
    pub(super) closing: Option<u32>,
    /// The connection error, once one happened.
    pub(super) failed: Option<ConnError>,
}

/// This side's limits that the shared frame handling holds the peer to, taken from the side's
/// `Config`. A side without a bound sets it to the type's maximum.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// SETTINGS_MAX_FRAME_SIZE.
    pub max_frame_size: u32,
    /// The largest field block collected before decoding (§10.5), at most `MAX_BLOCK`.
    pub max_header_block: usize,
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub max_header_list_size: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub stream_window: u32,
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub header_table_size: u32,
    /// Unwritten output past which a frame received ends the connection (§10.5); DATA is
    /// queued only below half of it.
    pub max_queued_output: usize,
    /// Empty frames that carry and end nothing, over the connection (§10.5).
    pub max_empty_frames: u32,
}

impl Limits {
    /// The limits both sides' `Config` set, the HPACK table at its default and nothing else
    /// bounded.
    pub(crate) fn new(
        max_frame_size: u32,
        max_header_block: usize,
        max_header_list_size: u32,
        stream_window: u32,
    ) -> Limits {
        Limits {
            max_frame_size,
            max_header_block: max_header_block.min(MAX_BLOCK),
            max_header_list_size,
            stream_window,
            header_table_size: DEFAULT_HEADER_TABLE_SIZE,
            max_queued_output: usize::MAX,
            max_empty_frames: u32::MAX,
        }
    }
}

/// The peer's SETTINGS that bind what this side sends (§6.5.2).
#[derive(Clone, Copy, Debug)]
pub struct PeerSettings {
    pub initial_window: u32,
    pub max_frame_size: u32,
    pub max_header_list_size: u32,
}

impl<R: Role> Conn<R> {
    /// A connection with `out` (the client's preface, or nothing) followed by this side's
    /// SETTINGS and the connection's WINDOW_UPDATE queued (§3.4: the SETTINGS come first; the
    /// rest may follow without waiting for the peer's).
    pub(crate) fn with(
        role: R,
        limits: Limits,
        mut out: Vec<u8>,
        settings: &[(u16, u32)],
        connection_window: u32,
    ) -> Self {
        write_settings(&mut out, settings);
        let (conn_recv, update) = RecvWindow::connection(connection_window);
        if let Some(increment) = update {
            write_window_update(&mut out, 0, increment);
        }
        // The peer's encoder starts with a table of 4,096 and moves it only by a size update
        // (RFC 7541 §4.2): the limit rises now, a lower one holds once acknowledged (`acked`).
        let mut decoder = Decoder::new(DEFAULT_HEADER_TABLE_SIZE as usize);
        if limits.header_table_size > DEFAULT_HEADER_TABLE_SIZE {
            decoder.set_limit(limits.header_table_size as usize);
        }
        Conn {
            role,
            limits,
            out,
            encoder: Encoder::new(),
            decoder,
            ids: StreamIds::new(R::SIDE),
            concurrency: Concurrency::new(),
            streams: Streams::default(),
            conn_send: SendWindow::new(DEFAULT_WINDOW),
            conn_recv,
            peer: PeerSettings {
                initial_window: DEFAULT_WINDOW,
                max_frame_size: DEFAULT_MAX_FRAME_SIZE,
                max_header_list_size: u32::MAX,
            },
            preface_due: false,
            settled: false,
            acked: false,
            pending: None,
            block: Vec::new(),
            sizes: SectionSizes::default(),
            arena: BytesMut::new(),
            encoded: Vec::new(),
            empty_frames: 0,
            closing: None,
            failed: None,
        }
    }

    /// The bytes to write, in order. The owner removes what it wrote (`drain`, or
    /// `std::mem::take` after writing all). Left unwritten they only grow: an owner that
    /// cannot write should stop sending DATA, and stop reading too, since every PING and
    /// SETTINGS the peer sends queues an acknowledgement here (§10.5); a server ends the
    /// connection past `Config::max_queued_output`.
    pub fn output(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Streams open (not yet closed), counted against the limit that binds them: the
    /// server's for a client's streams, this side's for a server's.
    pub fn active_streams(&self) -> u32 {
        match R::SIDE {
            Side::Client => self.concurrency.active_local(),
            Side::Server => self.concurrency.active_remote(),
        }
    }

    /// The peer's first SETTINGS frame has come (§3.4).
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// The peer acknowledged this side's SETTINGS. The owner may end a connection where it
    /// takes too long with `go_away(ErrorCode::SETTINGS_TIMEOUT)` (§6.5.3).
    pub fn settings_acked(&self) -> bool {
        self.acked
    }

    /// The connection error, once one happened.
    pub fn error(&self) -> Option<ConnError> {
        self.failed
    }

    /// `octets` (a small DATA payload) copied into the section buffer: it shares that buffer as
    /// a received section's fields do (`Fields::in_arena`), so it takes no allocation of its
    /// own, and a clone of it only a count.
    pub fn keep_data(&mut self, octets: &[u8]) -> bytes::Bytes {
        let mut kept = super::common::carve(&mut self.arena, octets.len());
        kept.extend_from_slice(octets);
        kept.freeze()
    }

    /// Gives back the section buffer's spare room, for an owner whose connection has no
    /// streams: an idle connection holds no buffer until its next field block comes (most of
    /// an edge's client connections are idle).
    pub fn quiet(&mut self) {
        self.arena = BytesMut::new();
    }
}
