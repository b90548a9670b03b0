//! Argo's setMirrorRoute and HTTPRoute's RequestMirror: a share of matching requests is also
//! sent to one backend of the route (a rollout's canary), fire-and-forget.
//! The copy runs in its own task, bounded in number; its answer is read and thrown away.

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::Request;
use http_body_util::BodyExt;
use tokio::sync::{mpsc, Semaphore};

use super::body::RequestBody;
use super::shape_for_upstream;
use crate::h1;
use crate::table::Route;

/// Frames buffered for a mirror before it is dropped for being slow.
const MIRROR_BUFFER_FRAMES: usize = 16;

/// Starts a mirror if the route wants one for this request. Returns the sender to tee the
/// client's body into (None when there is no mirror, Some(None) when the body is empty).
pub(super) fn start(
    route: &Arc<Route>,
    parts: &Parts,
    in_flight: &Arc<Semaphore>,
    body_is_empty: bool,
) -> Option<Option<mpsc::Sender<Bytes>>> {
    let (to, mark) = route.mirror_to(&parts.method, parts.uri.path(), &parts.headers)?;
    let Ok(permit) = in_flight.clone().try_acquire_owned() else {
        tracing::debug!(route = %route.name, "mirror skipped: too many in flight");
        return None;
    };
    let (tx, body) = if body_is_empty {
        (None, RequestBody::Empty)
    } else {
        let (tx, rx) = mpsc::channel(MIRROR_BUFFER_FRAMES);
        (Some(tx), RequestBody::Mirror(rx))
    };
    let mut copy = Request::new(body);
    *copy.method_mut() = parts.method.clone();
    *copy.uri_mut() = parts.uri.clone();
    *copy.headers_mut() = parts.headers.clone();
    // The version that gets the copy can tell it is one (and not answer it twice over, say).
    copy.headers_mut()
        .insert(mark.clone(), http::HeaderValue::from_static("1"));
    let route = route.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let endpoint = route.backend(to).pick().clone();
        let copy = shape_for_upstream(copy, &endpoint, false);
        let now = std::time::Instant::now();
        let answer = if endpoint.is_http2() {
            // A mirror never waits for an HTTP/2 stream: with the pool full it is skipped.
            match endpoint.checkout(now, false).await {
                Ok(lease) => lease
                    .send(copy, now)
                    .await
                    .ok()
                    .map(|(r, rel)| (r, Some(rel))),
                Err(err) => {
                    tracing::debug!(route = %route.name, error = err.as_str(), "mirror connect failed");
                    return;
                }
            }
        } else {
            match endpoint.checkout_raw(false, now).await {
                // A mirror's interim heads are nobody's.
                Ok((conn, lease)) => h1::client::send(conn, lease, copy, now, None)
                    .await
                    .ok()
                    .map(|r| (r, None)),
                Err(err) => {
                    tracing::debug!(route = %route.name, error = err.as_str(), "mirror connect failed");
                    return;
                }
            }
        };
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
    Some(tx)
}
