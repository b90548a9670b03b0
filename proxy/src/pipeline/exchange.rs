//! One request's context through the phases: the route it matched, the side chosen, and the
//! backend and start of the attempt in progress (a failed connect moves both to the other
//! side). Recording reads it, so an outcome always lands on the backend that produced it.

use std::sync::Arc;
use std::time::Instant;

use http::StatusCode;

use crate::stats::{Outcome, UpstreamError};
use crate::table::{Backend, Fields, Route};
use crate::upstream::Endpoint;

pub struct Exchange<'r> {
    pub route: &'r Route,
    /// The backend the split chose (its index in the route).
    pub chosen: usize,
    /// The backend the request is on now: the chosen one, or another after a failed connect.
    pub at: usize,
    pub backend: &'r Backend,
    /// When the current attempt began: the latency recorded is measured from here.
    pub started: Instant,
    /// The endpoint of the current attempt, once one was picked (the access log's `upstream`).
    pub endpoint: Option<&'r Arc<Endpoint>>,
    /// Sends after the first: a stale or refused connection replaced, the connect fallback.
    pub retries: u32,
}

impl<'r> Exchange<'r> {
    /// Phase 2, choose: header route, then the sticky bucket, then the split. None when no
    /// backend of the route has weight: the engine answers [`NO_WEIGHT`].
    pub fn choose<F: Fields + ?Sized>(route: &'r Route, fields: &F) -> Option<Self> {
        let chosen = route.choose(fields)?;
        Some(Exchange {
            route,
            chosen,
            at: chosen,
            backend: route.backend(chosen),
            started: Instant::now(),
            endpoint: None,
            retries: 0,
        })
    }

    /// Moves the request to another backend of the route, for the one retry after a failed
    /// connect; `None` when the route has no other.
    pub(crate) fn fall_back(&mut self) -> Option<()> {
        self.at = self.route.fallback(self.at)?;
        self.backend = self.route.backend(self.at);
        self.started = Instant::now();
        Some(())
    }

    /// Phase 7, record: an outcome of the current attempt.
    pub fn record(&self, outcome: &Outcome) {
        self.backend.stats.record(outcome);
    }

    /// A response head with `status` arrived at `now`.
    pub fn response_outcome(&self, status: u16, now: Instant) -> Outcome {
        Outcome::response_between(status, self.started, now)
    }

    pub(crate) fn record_error(&self, err: UpstreamError) {
        self.record(&Outcome::error(err, self.started.elapsed()));
    }
}

/// What a route whose backends all have weight 0 answers (Gateway API: 500).
pub const NO_WEIGHT: (StatusCode, &str) = (
    StatusCode::INTERNAL_SERVER_ERROR,
    "no backend of this route has weight",
);

/// Why a request got no response from an upstream; recorded already when it is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// On the exchange's current backend.
    Upstream(UpstreamError),
    /// The route's own deadline passed.
    RouteTimeout,
    /// The client went away mid-request: there is no one to answer.
    ClientGone,
}

impl Failure {
    /// Its name in the access log.
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Upstream(err) => err.as_str(),
            Failure::RouteTimeout => "route_timeout",
            Failure::ClientGone => "client_gone",
        }
    }

    /// What the client is told, in the same words by every engine.
    pub fn answer(self, exchange: &Exchange<'_>) -> (StatusCode, String) {
        match self {
            Failure::RouteTimeout => (
                StatusCode::GATEWAY_TIMEOUT,
                "request timed out (route timeout)".to_string(),
            ),
            Failure::Upstream(err) => (
                StatusCode::from_u16(err.status()).unwrap_or(StatusCode::BAD_GATEWAY),
                format!("{} ({} backend)", failure_cause(err), exchange.backend.name),
            ),
            // Nobody reads it; an engine closes the connection instead.
            Failure::ClientGone => (
                StatusCode::BAD_REQUEST,
                "client closed the connection".to_string(),
            ),
        }
    }
}

fn failure_cause(err: UpstreamError) -> &'static str {
    match err {
        UpstreamError::Connect => "could not connect to upstream",
        UpstreamError::Timeout => "upstream timed out",
        UpstreamError::Reset => "upstream closed the connection",
        UpstreamError::Tls => "TLS handshake with upstream failed",
        UpstreamError::Protocol => "upstream sent a malformed response",
        UpstreamError::StreamLimit => {
            "no HTTP/2 stream free: every upstream connection is at its stream limit"
        }
    }
}
