//! Phase 9, log: the access-log line of a request, begun when it is matched and ended when its
//! response is done, in the same words for every engine. What an engine gathers on the way is
//! a [`Tally`]; the line's fields are read from its [`Counts`] and from the [`Exchange`].

use std::time::Instant;

use http::HeaderName;

use super::{ClientInfo, Exchange, Failure, Proxy};
use crate::access_log::{Answer, Pending, RequestSide, RoutePolicy, Totals};
use crate::table::{Fields, Route};

static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Whether any request may be logged: checked by an engine before it gathers what [`begin`]
/// takes, so a weir without an access log pays one load a request.
#[inline]
pub(crate) fn on(proxy: &Proxy) -> bool {
    proxy.access_log().is_on()
}

/// The request's side of a line, if its route logs (`route` None: it matched none).
#[allow(clippy::too_many_arguments)]
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
        identity: client.identity.as_deref(),
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

/// What an engine learns of an exchange as it goes, told to a [`Tally`]: the access log's
/// [`Counts`] when the request is logged, [`Untallied`] (nothing kept, nothing done) when it
/// is not — so a request that is not logged pays for none of it, once the engine's exchange is
/// made for each.
pub(crate) trait Tally {
    /// The status the client was sent.
    fn status(&mut self, _status: u16) {}
    fn failure(&mut self, _failure: Failure) {}
    /// The upstream's response head arrived.
    fn answered(&mut self, _at: Instant) {}
    /// Body bytes sent on to the upstream.
    fn request_bytes(&mut self, _n: u64) {}
    /// Body bytes sent on to the client.
    fn response_bytes(&mut self, _n: u64) {}
    /// Relaying the response body failed: the upstream (`reset`) or the client (`client_gone`)
    /// went away.
    fn body_failure(&mut self, _why: &'static str) {}
}

/// A request that is not logged.
pub(crate) struct Untallied;

impl Tally for Untallied {}

/// What the access log's line is made of.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    /// The status the client was sent; None if it was sent nothing.
    pub status: Option<u16>,
    pub failure: Option<Failure>,
    pub answered: Option<Instant>,
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub body_failure: Option<&'static str>,
}

impl Tally for Counts {
    fn status(&mut self, status: u16) {
        self.status = Some(status);
    }
    fn failure(&mut self, failure: Failure) {
        self.failure = Some(failure);
    }
    fn answered(&mut self, at: Instant) {
        self.answered = Some(at);
    }
    fn request_bytes(&mut self, n: u64) {
        self.request_bytes += n;
    }
    fn response_bytes(&mut self, n: u64) {
        self.response_bytes += n;
    }
    fn body_failure(&mut self, why: &'static str) {
        self.body_failure = Some(why);
    }
}

/// What came back: the counts' status and failure, and where the exchange (if any) went.
/// None when the line is not written after all (sampled out, and not a failure).
pub(crate) fn answered(
    pending: Pending,
    exchange: Option<&Exchange<'_>>,
    tally: &Counts,
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
pub(crate) fn end(proxy: &Proxy, pending: Pending, tally: &Counts) {
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
    tally: &Counts,
) {
    if let Some(pending) = pending.and_then(|p| answered(p, exchange, tally)) {
        end(proxy, pending, tally);
    }
}
