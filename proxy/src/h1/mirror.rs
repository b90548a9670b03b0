//! Phase 5, mirror (`pipeline::mirror`), in the byte engine: the copy is the head this engine
//! writes for the upstream, with the mark added, sent on a connection of the byte engine's own
//! pool. Only a bodiless request is copied here: a request with a body that the route would
//! copy goes to hyper (`takes_body`), which tees the body.
//!
//! A route that mirrors thus keeps the byte engine for what it mostly copies (GET, HEAD,
//! OPTIONS): handing its connections to hyper cost every request of such a route, mirrored or
//! not, about a fifth more CPU.

use std::sync::Arc;
use std::time::Instant;

use super::client::{self, Encoded};
use super::encode;
use super::exchange::is_idempotent;
use super::head::{HeadFields, RequestHead};
use crate::framing::{BodyCursor, Framing};
use crate::pipeline::mirror::{self, PrimarySide, Sent};
use crate::pipeline::{ClientInfo, Proxy, Undelivered};
use crate::stats::UpstreamError;
use crate::table::Route;
use crate::upstream::{Endpoint, RequestBody};

/// The path a mirror's rules match: the target without its query.
fn path(target: &[u8]) -> &[u8] {
    let end = target.iter().position(|&b| b == b'?');
    &target[..end.unwrap_or(target.len())]
}

/// Whether the request has a body the route's mirror would copy: only hyper tees a body, so
/// the connection goes to it. Takes no turn of the mirror's share. The caller asks
/// `Route::mirrors` first: most routes do not mirror, and for them that is the one test (a
/// call here cost every request 18 instructions).
pub(super) fn takes_body(
    route: &Route,
    buf: &[u8],
    head: &RequestHead,
    fields: &HeadFields,
) -> bool {
    !BodyCursor::new(head.framing).is_done()
        && route.may_mirror(head.method(buf), path(head.target(buf)), fields)
}

/// Starts the copy of a bodiless request, if the route takes it; it goes once the client's
/// answer is in (`pipeline::mirror::primary`, given the side returned).
/// The caller asks `Route::mirrors` first, as for `takes_body`.
pub(super) fn start(
    proxy: &Proxy,
    route: &Arc<Route>,
    buf: &[u8],
    head: &RequestHead,
    fields: &HeadFields,
    info: &ClientInfo,
) -> Option<PrimarySide> {
    let method = head.method(buf);
    let admitted = mirror::admit(proxy, route, method, path(head.target(buf)), fields)?;
    // The head, less hop-by-hop fields, plus the forwarding fields and the mark: the client's
    // buffer may hold far more (pipelined requests, a large read).
    let mut out = Vec::with_capacity(head.len + 128);
    encode::mirror_head(&mut out, buf, head, info, admitted.mark);
    let bodiless = Bodiless {
        out,
        is_head: method == b"HEAD",
        resendable: is_idempotent(method),
    };
    Some(mirror::spawn(
        route,
        admitted,
        true,
        move |endpoint, started| send(endpoint, bodiless, started),
    ))
}

/// A bodiless request's head, as the copy goes.
struct Bodiless {
    out: Vec<u8>,
    is_head: bool,
    resendable: bool,
}

async fn send(endpoint: Arc<Endpoint>, mut copy: Bodiless, started: Instant) -> Sent {
    // A pooled connection found closed before it took the copy is weir's, not the canary's:
    // a copy that may go again goes once more on a fresh one.
    for fresh in [false, true] {
        let (conn, lease) = match endpoint.checkout_raw(fresh, copy.resendable, started).await {
            Ok(taken) => taken,
            Err(err) => {
                tracing::debug!(endpoint = %endpoint.address(), error = err.as_str(), "mirror connect failed");
                return Sent::Failed(err);
            }
        };
        let last = fresh || !copy.resendable;
        let out = if last {
            std::mem::take(&mut copy.out)
        } else {
            copy.out.clone()
        };
        let encoded = Encoded {
            out,
            framing: Framing::Empty,
            is_head: copy.is_head,
            resendable: copy.resendable,
        };
        // A mirror's interim heads are nobody's.
        let sent =
            client::send_encoded(conn, lease, encoded, &mut RequestBody::Empty, started, None)
                .await;
        match sent {
            Ok(resp) => return Sent::Answered(resp, None),
            Err(Undelivered::Stale) if !last => {}
            Err(Undelivered::Failed(err) | Undelivered::Unanswered(err)) => {
                return Sent::Failed(err)
            }
            Err(_) => return Sent::Failed(UpstreamError::Reset),
        }
    }
    Sent::Failed(UpstreamError::Reset)
}
