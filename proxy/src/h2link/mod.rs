//! What both legs' HTTP/2 connections share around weir's engine (`h2wire`): the socket's read
//! buffer and writes (`Inbound`, `chunk`, `write_out`), and what the pipeline gets in `http`'s
//! types — a section's fields as a header map (`header_map`, from a per-thread stock of maps
//! given back once sent: `maps`), and a client's request body
//! (`H2RequestBody`) with what it reads from, the connection that received it (`listen::h2`),
//! through `RequestSource`.
//!
//! Why a trait object: `upstream::Received` names the body, and the connection (`listen::h2`)
//! sits above the pipeline in the module graph; the body knows only this leaf's trait, the
//! connection implements it. One virtual call per frame taken.

mod body;
mod chunks;
mod fields;
mod io;
pub mod maps;
mod names;

use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;

pub use body::{H2RequestBody, StreamGone};
pub use chunks::Chunks;
pub use fields::{header_map, wire_fields};
pub use io::{chunk, write_out, Inbound};

/// The connection a request body reads from, by stream identifier.
pub trait RequestSource: Send + Sync {
    /// The next frame of stream `id`'s request body: taking a chunk gives its window back to
    /// the client.
    fn poll_frame(
        &self,
        id: u32,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamGone>>>;

    /// Whether stream `id`'s request body has nothing more to give.
    fn is_end_stream(&self, id: u32) -> bool;

    /// Stream `id`'s body is done with: at its end, or dropped before it.
    fn finished(&self, id: u32);

    /// Stream `id`'s whole body, taken at once (its window given back), when all of it came
    /// already as one chunk and no trailers; else None and nothing taken.
    fn take_whole(&self, id: u32) -> Option<Bytes>;
}
