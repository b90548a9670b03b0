//! Phase 5, mirror (`pipeline::mirror`), in the hyper engine: the copy is made of the
//! request's parts as rewritten, its body teed from the client's.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::request::Parts;
use http::Request;
use tokio::sync::mpsc;

use super::body::RequestBody;
use super::shape_for_upstream;
use crate::h1;
use crate::pipeline::mirror::{self, PrimarySide, Sent};
use crate::pipeline::{Proxy, Undelivered};
use crate::stats::UpstreamError;
use crate::table::Route;
use crate::upstream::{Endpoint, SendError};

/// Frames buffered for a mirror before it is dropped for being slow.
const MIRROR_BUFFER_FRAMES: usize = 16;

/// Starts a mirror if the route wants one for this request. Returns the sender to tee the
/// client's body into (None when the body is empty) and the client's side of the pair
/// (`pipeline::mirror::primary` takes its answer; a bodiless copy waits for it).
#[inline]
pub(super) fn start(
    proxy: &Proxy,
    route: &Arc<Route>,
    parts: &Parts,
    body_is_empty: bool,
) -> Option<(Option<mpsc::Sender<Bytes>>, PrimarySide)> {
    match route.mirrors() {
        true => copy(proxy, route, parts, body_is_empty),
        false => None,
    }
}

fn copy(
    proxy: &Proxy,
    route: &Arc<Route>,
    parts: &Parts,
    body_is_empty: bool,
) -> Option<(Option<mpsc::Sender<Bytes>>, PrimarySide)> {
    let admitted = mirror::admit(
        proxy,
        route,
        parts.method.as_str().as_bytes(),
        parts.uri.path().as_bytes(),
        &parts.headers,
    )?;
    let (tx, body) = if body_is_empty {
        (None, RequestBody::Empty)
    } else {
        let (tx, rx) = mpsc::channel(MIRROR_BUFFER_FRAMES);
        (Some(tx), RequestBody::Copied(rx, false))
    };
    let mut copy = Request::new(body);
    *copy.method_mut() = parts.method.clone();
    *copy.uri_mut() = parts.uri.clone();
    *copy.headers_mut() = parts.headers.clone();
    // The version that gets the copy can tell it is one (and not answer it twice over, say).
    copy.headers_mut()
        .insert(admitted.mark.clone(), http::HeaderValue::from_static("1"));
    let to_route = route.clone();
    let primary = mirror::spawn(
        route,
        admitted,
        body_is_empty,
        move |endpoint, started| async move {
            let copy = shape_for_upstream(copy, &endpoint, false);
            send(&to_route, &endpoint, copy, started).await
        },
    );
    Some((tx, primary))
}

async fn send(
    route: &Route,
    endpoint: &Arc<Endpoint>,
    copy: Request<RequestBody>,
    now: Instant,
) -> Sent {
    if endpoint.is_http2() {
        // A mirror never waits for an HTTP/2 stream: with the pool full it is skipped.
        match endpoint.checkout(now, false).await {
            Ok(lease) => match lease.send(copy, now).await {
                Ok((resp, release)) => Sent::Answered(resp, Some(release)),
                Err((SendError::Failed(err), _)) => Sent::Failed(err),
                Err(_) => Sent::Failed(UpstreamError::Reset),
            },
            Err(err) => {
                tracing::debug!(route = %route.name, error = err.as_str(), "mirror connect failed");
                Sent::Failed(err)
            }
        }
    } else {
        let mut copy = copy;
        let resendable = h1::client::resendable(&copy);
        // A pooled connection found closed before it took the copy is weir's, not the
        // canary's: a bodiless copy goes once more on a fresh one.
        for fresh in [false, true] {
            let (conn, lease) = match endpoint.checkout_raw(fresh, resendable, now).await {
                Ok(taken) => taken,
                Err(err) => {
                    tracing::debug!(route = %route.name, error = err.as_str(), "mirror connect failed");
                    return Sent::Failed(err);
                }
            };
            // A mirror's interim heads are nobody's.
            match h1::client::send(conn, lease, copy, now, None).await {
                Ok(resp) => return Sent::Answered(resp, None),
                Err((Undelivered::ClientGone, _)) => return Sent::BodyCut,
                Err((Undelivered::Stale, Some(again))) if !fresh => copy = again,
                Err((Undelivered::Failed(err) | Undelivered::Unanswered(err), _)) => {
                    return Sent::Failed(err)
                }
                Err(_) => return Sent::Failed(UpstreamError::Reset),
            }
        }
        Sent::Failed(UpstreamError::Reset)
    }
}
