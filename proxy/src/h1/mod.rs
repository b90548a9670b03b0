//! The HTTP/1 forwarding engine: requests and responses pass through as bytes.
//!
//! hyper parses every head into a map and encodes it again on both legs; for a proxy that
//! forwards most fields unchanged that was most of its user-space work per request. Here a
//! head is read once (`syntax`) into offsets, routing reads fields in place, the other leg
//! gets the same bytes less the hop-by-hop fields plus the forwarding ones, and bodies are
//! copied as framed (the chunked coding is scanned, not decoded). Buffers start at 512 bytes,
//! grow only while a large body passes, and are held only while a request is in flight: an idle
//! connection gives them back to a per-thread stock (`scratch`), as it does the future that
//! serves its requests (`conn`).
//!
//! Every head is held to the strict rules (`strict`) first; a refused one is answered and the
//! connection closed. The engine serves the common shape only: HTTP/1.1, origin-form,
//! Content-Length or chunked, to a route whose endpoints all speak HTTP/1 (with a mirror's
//! bodiless copies, `mirror`). Anything else that is valid — HTTP/1.0, Upgrade, Expect, gRPC,
//! CONNECT, absolute-form, no route, a body a mirror would copy — hands the connection to
//! hyper's server for the rest of its life, with the bytes already read put back in front,
//! behind the `gate` that holds hyper's heads to the same rules.
//!
//! What hyper's server and the HTTP/2 server take still reaches HTTP/1 upstreams through this
//! engine's connections and response parser (`client`): one HTTP/1 client for both paths.

pub(crate) mod client;
mod conn;
mod delivery;
mod encode;
mod exchange;
pub mod gate;
pub mod head;
mod mirror;
mod scratch;
pub mod strict;
pub mod syntax;
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod syntax_reference;
#[cfg(target_arch = "x86_64")]
mod wide;

pub use crate::framing::{BodyCursor, Framing};
pub use conn::{connection, Finished, Limits, ToHyper};
