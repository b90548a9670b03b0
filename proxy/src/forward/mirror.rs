//! Argo's setMirrorRoute and HTTPRoute's RequestMirror: a share of matching requests is also
//! sent to one backend of the route (a rollout's canary), fire-and-forget.
//! The copy runs in its own task, bounded in number; its answer is read and thrown away.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::request::Parts;
use http::Request;
use http_body_util::BodyExt;
use tokio::sync::{mpsc, Semaphore};

use super::body::RequestBody;
use super::shape_for_upstream;
use crate::h1;
use crate::pipeline::Undelivered;
use crate::stats::pairs::{Answer, Excluded, PairSlot};
use crate::stats::UpstreamError;
use crate::table::Route;
use crate::upstream::{Endpoint, Received, Release, SendError};

/// Frames buffered for a mirror before it is dropped for being slow.
const MIRROR_BUFFER_FRAMES: usize = 16;

/// Starts a mirror if the route wants one for this request. Returns the sender to tee the
/// client's body into (None when the body is empty) and the slot the client's answer goes to,
/// beside the copy's (`stats::pairs`).
pub(super) fn start(
    route: &Arc<Route>,
    parts: &Parts,
    in_flight: &Arc<Semaphore>,
    body_is_empty: bool,
) -> Option<(Option<mpsc::Sender<Bytes>>, Arc<PairSlot>)> {
    let (to, mark, pairs) = route.mirror_to(&parts.method, parts.uri.path(), &parts.headers)?;
    let Ok(permit) = in_flight.clone().try_acquire_owned() else {
        tracing::debug!(route = %route.name, "mirror skipped: too many in flight");
        pairs.exclude(Excluded::MirrorsFull);
        return None;
    };
    let slot = PairSlot::new(pairs.clone(), to);
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
        .insert(mark.clone(), http::HeaderValue::from_static("1"));
    let route = route.clone();
    let pair = slot.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let started = Instant::now();
        let endpoint = route.backend(to).pick().clone();
        let copy = shape_for_upstream(copy, &endpoint, false);
        // The copy gets as long as the client's request would: past it, the canary timed out.
        let limit = route.timeout.unwrap_or_else(|| endpoint.response_timeout());
        let sent = tokio::time::timeout(limit, send(&route, &endpoint, copy, started)).await;
        let answer = match sent {
            Ok(Sent::Answered(resp, release)) => {
                let grpc_fault = super::grpc_fault_in_head(resp.headers());
                pair.copy(Answer::status(resp.status().as_u16(), grpc_fault, started));
                Some((resp, release))
            }
            Ok(Sent::Failed(failure)) => {
                pair.copy(Answer::failed(failure, started));
                None
            }
            Ok(Sent::BodyCut) => {
                pair.exclude(Excluded::BodyCut);
                None
            }
            Err(_) => {
                pair.copy(Answer::failed(UpstreamError::Timeout, started));
                None
            }
        };
        drop(pair);
        // Read to its end: a whole HTTP/1 answer gives its connection back to the pool, and an
        // HTTP/2 stream is held (`_release`) until then.
        if let Some((resp, _release)) = answer {
            let mut body = resp.into_body();
            while let Some(frame) = body.frame().await {
                if frame.is_err() {
                    return;
                }
            }
        }
    });
    Some((tx, slot))
}

/// How a copy's send ended.
enum Sent {
    Answered(http::Response<Received>, Option<Release>),
    Failed(UpstreamError),
    /// The copy's own body was cut short: no answer is the canary's to be judged by.
    BodyCut,
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
