//! Phase 5, mirror, for both engines: a share of a route's requests (`Route::mirror_to`) is also
//! sent to one of its backends (a rollout's canary), in a task of its own, bounded in number,
//! and never delays or changes the client's answer. The copy's answer is read and thrown away;
//! what it was goes beside the client's own in the route's pair log (`stats::pairs`).
//!
//! The engines differ only in how the copy is made and sent: `forward::mirror` from the
//! request's parts (a body is teed), `h1::mirror` from the head the byte engine wrote for the
//! upstream (bodiless requests; one with a body goes to hyper). What a copy is admitted by,
//! how long it may take, how its answer and the client's are paired: here, once.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use http::header::HeaderName;
use http::Response;
use http_body_util::BodyExt;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

use super::{Failure, Proxy};
use crate::stats::pairs::{Answer, Excluded, PairSlot};
use crate::stats::{grpc_fault_in_head, UpstreamError};
use crate::table::{Fields, Route};
use crate::upstream::{Endpoint, Received, Release};

/// A copy let in: where it goes, what marks it, its place in the pair log.
pub(crate) struct Admitted<'r> {
    /// The backend that receives it (its index in the route).
    pub to: usize,
    /// The field set to `1` on the copy.
    pub mark: &'r HeaderName,
    /// The client's answer goes here, beside the copy's.
    pair: Arc<PairSlot>,
    permit: OwnedSemaphorePermit,
}

/// Whether this request is copied: the route's mirror takes it (a turn of its share), and
/// fewer than the process's bound of copies are in flight — past it the pair is excluded,
/// counted as `mirrors_full`, never queued. `path` is without the query.
pub(crate) fn admit<'r, F: Fields + ?Sized>(
    proxy: &Proxy,
    route: &'r Route,
    method: &[u8],
    path: &[u8],
    headers: &F,
) -> Option<Admitted<'r>> {
    let (to, mark, pairs) = route.mirror_to(method, path, headers)?;
    let Ok(permit) = proxy.mirrors().clone().try_acquire_owned() else {
        tracing::debug!(route = %route.name, "mirror skipped: too many in flight");
        pairs.exclude(Excluded::MirrorsFull);
        return None;
    };
    Some(Admitted {
        to,
        mark,
        pair: PairSlot::new(pairs.clone(), to),
        permit,
    })
}

/// How a copy's send ended.
pub(crate) enum Sent {
    Answered(Response<Received>, Option<Release>),
    Failed(UpstreamError),
    /// The copy's own body was cut short: no answer is the canary's to be judged by.
    BodyCut,
}

/// The client's side of a copied request: where its answer goes, and the word the copy of a
/// bodiless request waits for. Boxed: one pointer in every request's leg (none but a copied
/// request's pays for the rest).
pub(crate) struct PrimarySide(Box<Sides>);

struct Sides {
    pair: Arc<PairSlot>,
    go: Option<oneshot::Sender<()>>,
}

/// Runs the copy in a task of its own: `send` sends it to the endpoint picked of the backend
/// it goes to, within as long as the client's request would have (past it, the canary timed
/// out); its answer is paired and then read to its end.
///
/// A copy that carries no body (`after_primary`) is sent once the client's answer head is in:
/// it never competes with the client's own request, at the upstreams' shared dependencies
/// (their database, their node's cores) or anywhere else, and a request that ended with no
/// answer (its client gone), or whose answer came from the copy's own backend, is not
/// copied at all. A pair's two
/// answers are then a request's time apart, which pairing does not mind: each latency is
/// counted from its own send. A copy whose body is teed from the client's goes as it comes.
pub(crate) fn spawn<S, F>(
    route: &Arc<Route>,
    admitted: Admitted<'_>,
    after_primary: bool,
    send: S,
) -> PrimarySide
where
    S: FnOnce(Arc<Endpoint>, Instant) -> F + Send + 'static,
    F: Future<Output = Sent> + Send,
{
    let Admitted {
        to, pair, permit, ..
    } = admitted;
    let (go, wait) = match after_primary {
        true => {
            let (go, wait) = oneshot::channel();
            (Some(go), Some(wait))
        }
        false => (None, None),
    };
    let primary = PrimarySide(Box::new(Sides {
        pair: pair.clone(),
        go,
    }));
    let route = route.clone();
    tokio::spawn(async move {
        let _permit = permit;
        if let Some(wait) = wait {
            if wait.await.is_err() {
                // No answer to pair it with (the pair is counted as such when it drops).
                return;
            }
        }
        let started = Instant::now();
        let endpoint = route.backend(to).pick().clone();
        let limit = route.timeout.unwrap_or_else(|| endpoint.response_timeout());
        let answer = match tokio::time::timeout(limit, send(endpoint, started)).await {
            Ok(Sent::Answered(resp, release)) => {
                let grpc_fault = grpc_fault_in_head(resp.headers());
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
    primary
}

/// The client's own answer to a copied request, beside the copy's: its status and whether
/// its head carried a gRPC server fault, or why there was none. `at`: the backend that
/// answered it. A copy waiting for it goes now, if there is a pair to make.
pub(crate) fn primary(side: PrimarySide, at: usize, answered: Result<(u16, bool), Failure>) {
    let Sides { pair, go } = *side.0;
    if at == pair.copied_to {
        // Both answers would be the same version's.
        pair.exclude(Excluded::SameBackend);
        return;
    }
    let answer = match answered {
        Ok((status, grpc_fault)) => Answer::status(status, grpc_fault, pair.started),
        Err(Failure::Upstream(err)) => Answer::failed(err, pair.started),
        Err(Failure::RouteTimeout) => Answer::failed(UpstreamError::Timeout, pair.started),
        Err(Failure::ClientGone) => {
            pair.exclude(Excluded::Unanswered);
            return;
        }
    };
    pair.primary(answer);
    if let Some(go) = go {
        // The copy's task ends without sending only if it ended already.
        let _ = go.send(());
    }
}
