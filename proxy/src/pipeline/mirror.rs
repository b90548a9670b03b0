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
use crate::stats::pairs::{Answer, BodyHalf, Excluded, PairSlot, Side};
use crate::stats::{grpc_fault_in, grpc_status_in_trailers, UpstreamError};
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
        pair: PairSlot::new(pairs.clone(), to, path),
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
/// out); its answer is paired and then read to its end, its body hashed to be compared with
/// the client's (`stats::differences`).
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
                let grpc_fault = grpc_fault_in(resp.headers());
                let answer = Answer::status(resp.status().as_u16(), grpc_fault, started);
                // A gRPC call's status comes in its trailers: the copy's half waits for them
                // (its latency stays the head's, as the client's does).
                let waiting = match grpc_status_in_trailers(resp.headers()) {
                    true => Some(answer),
                    false => {
                        pair.copy(answer);
                        None
                    }
                };
                Some((resp, release, waiting))
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
        // Read to its end: a whole HTTP/1 answer gives its connection back to the pool, and an
        // HTTP/2 stream is held (`_release`) until then.
        if let Some((resp, _release, mut waiting)) = answer {
            let mut hashed = Some(pair.body(Side::Copy));
            let mut body = resp.into_body();
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(frame) => {
                        if let (Some(data), Some(hashed)) = (frame.data_ref(), &mut hashed) {
                            hashed.add(data);
                        }
                        if let (Some(trailers), Some(answer)) = (frame.trailers_ref(), &mut waiting)
                        {
                            answer.grpc_fault = grpc_fault_in(trailers);
                        }
                    }
                    Err(_) => {
                        if let Some(answer) = &mut waiting {
                            answer.failure = Some(UpstreamError::Reset);
                        }
                        // Not read whole: not compared.
                        hashed = None;
                        break;
                    }
                }
            }
            if let Some(hashed) = hashed {
                hashed.finish();
            }
            if let Some(answer) = waiting {
                pair.copy(answer);
            }
        }
    });
    primary
}

/// The client's own answer to a copied request, beside the copy's: its status and whether
/// its head carried a gRPC server fault, or why there was none. `at`: the backend that
/// answered it. A copy waiting for it goes now, if there is a pair to make. What comes back,
/// if anything, goes with the answer's body to its end (`PrimaryBody`).
pub(crate) fn primary(
    side: PrimarySide,
    at: usize,
    answered: Result<(u16, bool), Failure>,
) -> Option<PrimaryBody> {
    let started = side.0.pair.started;
    let answer = match answered {
        Ok((status, grpc_fault)) => Answer::status(status, grpc_fault, started),
        Err(Failure::Upstream(err)) => Answer::failed(err, started),
        Err(Failure::RouteTimeout) => Answer::failed(UpstreamError::Timeout, started),
        Err(Failure::ClientGone) => {
            side.0.pair.exclude(Excluded::Unanswered);
            return None;
        }
    };
    // Hashed only if it is to be compared: answered, and by the other version.
    let body = (answer.status.is_some() && at != side.0.pair.copied_to)
        .then(|| side.0.pair.body(Side::Primary));
    pair_up(side, at, answer);
    body.map(|body| PrimaryBody(Box::new(Later { body, status: None })))
}

/// The client's half of a pair, carried with the answer's body to its end: the body is
/// hashed as it goes, to be compared with the copy's, and a gRPC call's status, which is in
/// its trailers, is read there. Boxed: one pointer beside every response body (none but a
/// mirrored request pays for the rest).
pub struct PrimaryBody(Box<Later>);

struct Later {
    body: BodyHalf,
    /// A gRPC call's answer, waiting for its status: its side, the backend that answered,
    /// the answer as its head had it (its latency is the head's).
    status: Option<(PrimarySide, usize, Answer)>,
}

/// The client's answer head is in, and its gRPC status is in the trailers to come.
pub(crate) fn primary_later(side: PrimarySide, at: usize, status: u16) -> PrimaryBody {
    let answer = Answer::status(status, false, side.0.pair.started);
    let body = side.0.pair.body(Side::Primary);
    PrimaryBody(Box::new(Later {
        body,
        status: Some((side, at, answer)),
    }))
}

impl PrimaryBody {
    /// Some of the body, as the client gets it. Cold and never inlined, as is `finish`: the
    /// engines' relay loops carry only the test for a pair, not the hashing.
    #[cold]
    #[inline(never)]
    pub(crate) fn add(&mut self, bytes: &[u8]) {
        self.0.body.add(bytes);
    }

    /// The body's first bytes, to the client's half where an engine keeps it (`kept`); `whole`:
    /// they are all of it, and the half ends here.
    #[cold]
    #[inline(never)]
    pub(crate) fn first(kept: &mut Option<Self>, bytes: &[u8], whole: bool) {
        let Some(pair) = kept else {
            return;
        };
        pair.add(bytes);
        if whole {
            if let Some(pair) = kept.take() {
                pair.finish(None, false, false);
            }
        }
    }

    /// The body ended: with `trailers` when it had them; `cut` when it did not end whole —
    /// the upstream reset it (a failure), or the client stopped reading (`client_gone`: what
    /// the call would have ended as is unknown, so a pair still waiting for it is left out).
    /// A body that did not end whole is not compared.
    #[cold]
    #[inline(never)]
    pub(crate) fn finish(self, trailers: Option<&http::HeaderMap>, cut: bool, client_gone: bool) {
        let Later { body, status } = *self.0;
        if !cut && !client_gone {
            body.finish();
        }
        let Some((side, at, mut answer)) = status else {
            return;
        };
        if client_gone {
            side.0.pair.exclude(Excluded::Unanswered);
            return;
        }
        answer.grpc_fault = trailers.is_some_and(grpc_fault_in);
        if cut {
            answer.failure = Some(UpstreamError::Reset);
        }
        pair_up(side, at, answer);
    }
}

fn pair_up(side: PrimarySide, at: usize, answer: Answer) {
    let Sides { pair, go } = *side.0;
    if at == pair.copied_to {
        // Both answers would be the same version's.
        pair.exclude(Excluded::SameBackend);
        return;
    }
    pair.primary(answer);
    if let Some(go) = go {
        // The copy's task ends without sending only if it ended already.
        let _ = go.send(());
    }
}
