//! Phase 9, log: the access-log line of a request, begun when it is matched and ended when its
//! response is done, in the same words for every engine. What an engine gathers on the way is
//! a [`Tally`]; the line's fields are read from it and from the [`Exchange`].

use std::time::Instant;

use http::HeaderName;

use super::{ClientInfo, Exchange, Failure, Proxy};
use crate::access_log::{Answer, Pending, RequestSide, RoutePolicy, Totals};
use crate::table::{Fields, Route};

static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The request's side of a line, if its route logs (`route` None: it matched none).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn begin<F: Fields + ?Sized>(
    proxy: &Proxy,
    client: &ClientInfo,
    route: Option<&Route>,
    protocol: &'static str,
    method: &[u8],
    authority: Option<&[u8]>,
    target: &[u8],
    fields: &F,
) -> Option<Pending> {
    let policy = route.map_or(RoutePolicy::Inherit, |r| r.spec.access_log);
    let log = proxy.access_log();
    if !log.wants(policy) {
        return None;
    }
    let mut side = RequestSide {
        listener: &client.listener,
        client: client.peer,
        protocol,
        method,
        authority,
        target,
        query: false,
        route: route.map(|r| &*r.name),
        traceparent: fields.first(&TRACEPARENT),
        request_id: fields.first(&REQUEST_ID),
    };
    Some(log.begin(policy, Instant::now(), &mut side))
}

/// What an engine learns of an exchange as it goes.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// The status the client was sent; None if it was sent nothing.
    pub status: Option<u16>,
    pub failure: Option<Failure>,
    /// When the upstream's response head arrived.
    pub answered: Option<Instant>,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Relaying the response body failed: the upstream (`reset`) or the client
    /// (`client_gone`) went away.
    pub body_failure: Option<&'static str>,
}

/// What came back: the tally's status and failure, and where the exchange (if any) went.
/// None when the line is not written after all (sampled out, and not a failure).
pub(crate) fn answered(
    pending: Pending,
    exchange: Option<&Exchange<'_>>,
    tally: &Tally,
) -> Option<Pending> {
    let answer = Answer {
        backend: exchange.map(|e| &*e.backend.name),
        upstream: exchange.and_then(|e| e.endpoint).map(|e| e.address()),
        status: tally.status,
        failure: tally.failure.map(Failure::as_str),
        first_byte: tally
            .answered
            .map(|at| at.saturating_duration_since(pending.started())),
        retries: exchange.map_or(0, |e| e.retries),
        fallback: exchange.is_some_and(|e| e.at != e.chosen),
    };
    pending.answered(&answer)
}

/// The line's end, now: bytes each way and the whole duration.
pub(crate) fn end(proxy: &Proxy, pending: Pending, tally: &Tally) {
    let totals = Totals {
        request_bytes: tally.request_bytes,
        response_bytes: tally.response_bytes,
        duration: pending.started().elapsed(),
        failure: tally.body_failure,
    };
    pending.end(proxy.access_log(), &totals);
}

/// A whole exchange at once (the byte engine's, or an answer of weir's own).
pub(crate) fn finish(
    proxy: &Proxy,
    pending: Option<Pending>,
    exchange: Option<&Exchange<'_>>,
    tally: &Tally,
) {
    if let Some(pending) = pending.and_then(|p| answered(p, exchange, tally)) {
        end(proxy, pending, tally);
    }
}
