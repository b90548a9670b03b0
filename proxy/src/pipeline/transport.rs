//! Phases 5 and 6, connect with the fallback and send with the timeout, written once over what
//! an engine does with bytes (`Transport`). The rules:
//! - a connect failure sent nothing, so the other side of the route may take the request —
//!   once, whether it was the first connect or one replacing a stale connection;
//! - an idempotent request that got no byte of answer may go to the other side too (the
//!   same once);
//! - a pooled connection the upstream had closed (`Undelivered::Stale`) is replaced by a fresh
//!   one, up to `STALE_RETRIES` times; the engine says when a request may go again;
//! - a request the upstream refused unprocessed (`Undelivered::Refused`) goes again, as fresh,
//!   up to `REFUSED_RETRIES` times;
//! - the route's timeout covers all of it;
//! - a request that waited for an HTTP/2 stream in vain is answered 503 at once;
//! - every failure is recorded against the backend it happened on.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use super::{Exchange, Failure};
use crate::stats::{Outcome, UpstreamError};
use crate::table::Backend;
use crate::upstream::Endpoint;

/// A pooled connection may turn out closed; this many fresh tries before giving up.
pub const STALE_RETRIES: usize = 2;

/// A request the upstream refused unprocessed may go again this many times. More than
/// `STALE_RETRIES`: a server that closes each connection at a cap on requests (nginx's
/// `keepalive_requests`, 1,000 by default) refuses what that connection had in flight past the
/// cap, and connections opened together reach it together, so one request can be refused by
/// several in a row. Each try is a stream on an open connection; the route's timeout bounds
/// them all.
pub const REFUSED_RETRIES: usize = 6;
const _: () = assert!(REFUSED_RETRIES > STALE_RETRIES);

/// Why a send produced no response head.
pub(crate) enum Undelivered {
    /// The connection was closed before it took the request, and the request can go again as
    /// it is (the engine decides: hyper knows it never left; the byte engine needs a reused
    /// connection and a whole, idempotent request).
    Stale,
    /// The upstream said it did not process it (HTTP/2: REFUSED_STREAM, or above a GOAWAY's
    /// last stream, RFC 9113 §8.7), and the engine kept what it needs to send it again.
    Refused,
    /// Sent, and the connection failed before a byte of answer; the engine can send the
    /// request again as it is and the method is idempotent. It goes to the other side once.
    Unanswered(UpstreamError),
    Failed(UpstreamError),
    ClientGone,
}

/// How one engine moves a request to an upstream: the pipeline decides where and when.
pub(crate) trait Transport {
    /// A connection taken for this request.
    type Conn;
    /// What the engine needs to answer once the response head is in.
    type Answer;

    /// A connection to `endpoint`: a pooled one unless `fresh`. Failing here sent nothing.
    /// `now`: when the attempt began, a time taken already (pooled connections are judged
    /// idle against it).
    fn connect(
        &mut self,
        endpoint: &Arc<Endpoint>,
        fresh: bool,
        now: Instant,
    ) -> impl Future<Output = Result<Self::Conn, UpstreamError>> + Send;

    /// Sends the request on `conn` to `backend` (the one the request is on now: its own
    /// request edits apply) and waits for the final response head, within the endpoint's
    /// response timeout counted from `started`.
    fn send(
        &mut self,
        conn: Self::Conn,
        backend: &Backend,
        started: Instant,
    ) -> impl Future<Output = Result<Self::Answer, Undelivered>> + Send;
}

/// Connects (falling back once), sends (replacing stale connections), within the route's
/// timeout. On `Err` the failure is recorded already; on `Ok` the engine records the response.
pub(crate) async fn forward<T: Transport>(
    exchange: &mut Exchange<'_>,
    transport: &mut T,
) -> Result<T::Answer, Failure> {
    let Some(limit) = exchange.route.timeout else {
        return attempt(exchange, transport).await;
    };
    let started = Instant::now();
    // Boxed: its timer adds 112 bytes, and inline it would be part of every request's future,
    // on routes without a timeout too.
    match Box::pin(tokio::time::timeout(limit, attempt(exchange, transport))).await {
        Ok(answered) => answered,
        Err(_) => {
            exchange.record(&Outcome::error(UpstreamError::Timeout, started.elapsed()));
            Err(Failure::RouteTimeout)
        }
    }
}

async fn attempt<T: Transport>(
    exchange: &mut Exchange<'_>,
    transport: &mut T,
) -> Result<T::Answer, Failure> {
    let backend = exchange.backend;
    let mut endpoint = backend.pick();
    let mut fresh = false;
    let mut fell_back = false;
    let mut stale = 0;
    let mut refused = 0;
    loop {
        exchange.endpoint = Some(endpoint);
        let err = match transport.connect(endpoint, fresh, exchange.started).await {
            // The backend's HTTP/2 streams are all taken and the wait for one ended: the
            // deadline it waited to has passed, or its queue is full. Either way this is the
            // answer (the route's deadline leaves no time for the other side).
            Err(err @ UpstreamError::StreamLimit) => {
                exchange.record_error(err);
                return Err(Failure::Upstream(err));
            }
            // Nothing was sent: the other side of the route may take it, once.
            Err(err) => err,
            Ok(conn) => match transport
                .send(conn, exchange.backend, exchange.started)
                .await
            {
                Ok(answer) => return Ok(answer),
                Err(Undelivered::ClientGone) => return Err(Failure::ClientGone),
                Err(Undelivered::Stale) if stale < STALE_RETRIES => {
                    stale += 1;
                    exchange.retries += 1;
                    fresh = true;
                    continue;
                }
                Err(Undelivered::Refused) if refused < REFUSED_RETRIES => {
                    refused += 1;
                    exchange.retries += 1;
                    fresh = true;
                    continue;
                }
                Err(Undelivered::Stale | Undelivered::Refused) => {
                    exchange.record_error(UpstreamError::Reset);
                    return Err(Failure::Upstream(UpstreamError::Reset));
                }
                // An idempotent request, whole, that got no byte of answer: RFC 9110 §9.2.2
                // lets it be sent again, and the other side may answer it.
                Err(Undelivered::Unanswered(err)) => err,
                Err(Undelivered::Failed(err)) => {
                    exchange.record_error(err);
                    return Err(Failure::Upstream(err));
                }
            },
        };
        exchange.record_error(err);
        if fell_back || exchange.fall_back().is_none() {
            return Err(Failure::Upstream(err));
        }
        fell_back = true;
        exchange.retries += 1;
        let backend = exchange.backend;
        endpoint = backend.pick();
        fresh = false;
    }
}
