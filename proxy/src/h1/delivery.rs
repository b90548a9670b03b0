//! From a request written to an HTTP/1 upstream connection to its final response head, for
//! both ways this engine sends one — bytes passed through (`exchange`) and a request in
//! `http`'s types (`client`): reading up to the next head, and what a failure on the way means
//! for sending the request again.

use std::io;

use bytes::Buf;

use super::head::{ParsedResponse, ResponseHead, MAX_RESPONSE_HEAD};
use crate::buffer::read_more;
use crate::pipeline::Undelivered;
use crate::stats::UpstreamError;
use crate::upstream::RawConn;

/// Why no final response head came.
pub(super) enum Delivery {
    /// The connection failed before a byte of response: it was closed when taken, or the
    /// upstream went away.
    Stale,
    Upstream(UpstreamError),
    ClientGone,
}

impl Delivery {
    /// An upstream connection's I/O error; `nothing_read`: no byte of response had come.
    pub fn upstream_io(err: &io::Error, nothing_read: bool) -> Delivery {
        match err.kind() {
            io::ErrorKind::TimedOut => Delivery::Upstream(UpstreamError::Timeout),
            _ if nothing_read => Delivery::Stale,
            _ => Delivery::Upstream(UpstreamError::Reset),
        }
    }

    /// What the pipeline does about it. `resendable`: the whole request can be written again
    /// and its method is idempotent (RFC 9110 §9.2.2); `reused`: the connection came from the
    /// pool.
    pub fn undelivered(self, reused: bool, resendable: bool) -> Undelivered {
        match self {
            Delivery::ClientGone => Undelivered::ClientGone,
            // A pooled connection the upstream had closed: the request never reached it.
            Delivery::Stale if reused && resendable => Undelivered::Stale,
            // A fresh connection that failed before any answer: the upstream went away.
            Delivery::Stale if resendable => Undelivered::Unanswered(UpstreamError::Reset),
            Delivery::Stale => Undelivered::Failed(UpstreamError::Reset),
            Delivery::Upstream(err) => Undelivered::Failed(err),
        }
    }
}

/// Reads until `head` holds the next complete response head at the front of `conn.buf`:
/// `Ok(true)` for the final one, `Ok(false)` for an interim (1xx) one, which the caller passes
/// on or over and then advances past (`head.len` bytes). A 101 nobody asked for is an error.
pub(super) async fn next_head(
    conn: &mut RawConn,
    head: &mut ResponseHead,
    is_head: bool,
) -> Result<bool, Delivery> {
    loop {
        match head.parse(&conn.buf, is_head) {
            // Nobody asked to switch protocols.
            ParsedResponse::Complete if head.status == 101 => {
                return Err(Delivery::Upstream(UpstreamError::Protocol))
            }
            ParsedResponse::Complete => return Ok(head.status >= 200),
            ParsedResponse::Malformed => return Err(Delivery::Upstream(UpstreamError::Protocol)),
            ParsedResponse::Partial if conn.buf.len() >= MAX_RESPONSE_HEAD => {
                return Err(Delivery::Upstream(UpstreamError::Protocol))
            }
            ParsedResponse::Partial => match read_more(&mut conn.io, &mut conn.buf).await {
                Ok(0) if conn.buf.is_empty() => return Err(Delivery::Stale),
                Ok(0) => return Err(Delivery::Upstream(UpstreamError::Reset)),
                Ok(_) => {}
                Err(err) => return Err(Delivery::upstream_io(&err, conn.buf.is_empty())),
            },
        }
    }
}

/// Reads up to the final response head, passing over interim ones.
pub(super) async fn final_head(
    conn: &mut RawConn,
    head: &mut ResponseHead,
    is_head: bool,
) -> Result<(), Delivery> {
    while !next_head(conn, head, is_head).await? {
        conn.buf.advance(head.len);
    }
    Ok(())
}
