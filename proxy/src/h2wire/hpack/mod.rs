//! HPACK (RFC 7541): header compression for HTTP/2.
//!
//! The decoder is complete — every representation, Huffman-coded strings, the dynamic table and
//! its size updates — and strict: whatever the RFC calls a decoding error is refused, and
//! integers, strings and the decoded list are bounded. A header list larger than the caller's
//! limit is still decoded to its end without being handed over, so that the dynamic table stays
//! the encoder's; the caller refuses the one stream, not the connection.
//!
//! The encoder is deliberately simple: fields the static table holds whole are indexed, names
//! it holds are indexed, every string goes as it is, and nothing enters the dynamic table (its
//! size is set to 0 once, at the start of the first block). A proxy's header lists differ per
//! request in the values that matter (path, authority, ids), and the peers it talks to are
//! mostly near: the CPU that Huffman coding and table upkeep cost on every message buys a few
//! bytes it does not need. A field the peer sent never-indexed goes on never-indexed (§7.1.3).

mod decode;
mod encode;
pub mod huffman;
mod integer;
mod static_table;
mod table;

use std::fmt;

pub use decode::{Decoder, Field};
pub use encode::Encoder;
pub use table::Memo;

/// Why a header block was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The block ends inside a representation (of what is named).
    Truncated(&'static str),
    /// The block breaks a rule of RFC 7541 (which is named).
    Compression(&'static str),
    /// The decoded list is larger than the limit (RFC 9113 §6.5.2: names, values and 32 bytes
    /// a field). The block was decoded to its end, so the connection can go on.
    ListTooLarge { limit: usize },
}

impl Error {
    /// Whether the connection must end (COMPRESSION_ERROR, RFC 9113 §4.3): its two dynamic
    /// tables can no longer be trusted to agree.
    pub fn ends_connection(&self) -> bool {
        !matches!(self, Error::ListTooLarge { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated(what) => write!(f, "header block ends inside {what}"),
            Error::Compression(why) => write!(f, "header block refused: {why}"),
            Error::ListTooLarge { limit } => {
                write!(
                    f,
                    "header list larger than {limit} bytes (names, values and 32 a field)"
                )
            }
        }
    }
}

impl std::error::Error for Error {}
