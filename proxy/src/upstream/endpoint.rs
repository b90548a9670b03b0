//! One upstream address: its pool of idle HTTP/1 connections (newest first, `super::idle`) or
//! its pool of HTTP/2 connections (`super::h2pool`), each kept one per worker (a connection is
//! used only on the worker that opened it: `crate::worker`). HTTP/1 connections are bytes
//! (`RawConn`) that both engines write to; hyper's client is only opened for an upgrade, never
//! pooled.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Request, Response};
use rustls_pki_types::ServerName;

use super::body::RequestBody;
use super::connect::{self, Sender, TlsTarget};
use super::h2pool::{self, Failed, H2Conn, H2Pool, Resend, Signals, Slot};
use super::idle::IdleStack;
use super::raw::RawConn;
use super::received::Received;
use super::EndpointKey;
use crate::deadline::is_deadline_error;
use crate::stats::{PoolMetrics, UpstreamError};
use crate::table_spec::{Http2PoolSpec, UpstreamProtocol};
use crate::worker::{share, PerWorker};

pub struct Endpoint {
    key: EndpointKey,
    tls: Option<TlsTarget>,
    /// Idle HTTP/1 connections, each worker's own.
    raw_idle: PerWorker<IdleStack<RawConn>>,
    /// Each worker's HTTP/2 connections.
    h2: PerWorker<H2Pool>,
    /// This address's pool metrics (the HTTP/2 pool holds the same handles).
    metrics: PoolMetrics,
    outstanding: AtomicUsize,
}

/// Why a send did not produce a response.
pub enum SendError {
    /// The request never left: it may be tried again elsewhere.
    NotSent(Box<Request<RequestBody>>),
    /// The HTTP/2 upstream refused it unprocessed (RFC 9113 §8.7): here again, its body from
    /// the start, to be sent on another stream.
    Refused(Box<Request<RequestBody>>),
    Failed(UpstreamError),
}

impl Endpoint {
    pub(super) fn new(
        key: EndpointKey,
        http2: Http2PoolSpec,
        metrics: PoolMetrics,
        workers: usize,
    ) -> Result<Self, String> {
        let tls = match &key.tls {
            None => None,
            Some(tls) => {
                let config = super::tls::client_config(tls, key.protocol)?;
                let name = &tls.server_name;
                let name = ServerName::try_from(name.clone())
                    .map_err(|e| format!("`{name}` is not a valid TLS server name: {e}"))?;
                Some(TlsTarget { config, name })
            }
        };
        Ok(Endpoint {
            // Idle HTTP/1 connections are a cache: each worker keeps its share of them.
            raw_idle: PerWorker::new(workers, |i| IdleStack::new(share(key.max_idle, workers, i))),
            // The HTTP/2 caps are counted over every worker's pool (`h2pool::Shared`).
            h2: {
                let shared = Arc::new(h2pool::Shared::new(
                    http2.max_connections,
                    http2.max_pending,
                ));
                PerWorker::new(workers, |_| {
                    H2Pool::new(
                        http2.clone(),
                        shared.clone(),
                        metrics.clone(),
                        key.address.clone(),
                    )
                })
            },
            key,
            tls,
            metrics,
            outstanding: AtomicUsize::new(0),
        })
    }

    pub fn address(&self) -> &str {
        &self.key.address
    }

    pub fn is_http2(&self) -> bool {
        self.key.protocol == UpstreamProtocol::Http2
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    pub fn response_timeout(&self) -> Duration {
        self.key.response_timeout
    }

    /// Requests sent and not yet finished: the least-request balancer reads it.
    pub fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::Relaxed)
    }

    /// A stream of the HTTP/2 pool, waiting for one until `wait_until` at most when every
    /// connection is at its limit. `fresh`: the request was refused on a connection of the
    /// pool, and goes to the one that has carried fewest streams (`h2pool::Prefer`). Failing
    /// here means nothing was sent. (HTTP/1 requests take `checkout_raw`.)
    pub async fn checkout(
        self: &Arc<Self>,
        wait_until: Instant,
        fresh: bool,
    ) -> Result<Lease, UpstreamError> {
        let prefer = if fresh {
            h2pool::Prefer::Youngest
        } else {
            h2pool::Prefer::Oldest
        };
        let (part, pool) = self.h2.here();
        let slot = pool
            .checkout(wait_until, prefer, || self.open_h2(pool))
            .await?;
        let sender = Sender::H2(slot.conn.link().clone());
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        Ok(Lease {
            sender,
            release: Release {
                endpoint: self.clone(),
                slot: Some((part, slot)),
            },
        })
    }

    /// A fresh HTTP/1 connection that may be taken over by an `Upgrade`; never pooled.
    pub async fn checkout_for_upgrade(self: &Arc<Self>) -> Result<Lease, UpstreamError> {
        // Boxed: a TLS handshake's state is kilobytes; inline it would widen the future.
        let opening = Box::pin(connect::open_for_upgrade(
            &self.key.address,
            self.tls.as_ref(),
        ));
        let sender = Sender::H1(self.opened(opening).await?);
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        Ok(Lease {
            sender,
            release: Release {
                endpoint: self.clone(),
                slot: None,
            },
        })
    }

    /// A byte-stream HTTP/1 connection, pooled (unless `fresh`) or new, for the passthrough
    /// engine; pooled ones are judged idle as of `now`. A request that is not `resendable`
    /// takes a pooled connection only once its socket says the upstream has not closed it.
    /// Failing here means nothing was sent.
    pub async fn checkout_raw(
        self: &Arc<Self>,
        fresh: bool,
        resendable: bool,
        now: Instant,
    ) -> Result<(RawConn, RawLease), UpstreamError> {
        let pooled = if fresh {
            None
        } else {
            self.pooled_raw(now, resendable)
        };
        let conn = match pooled {
            Some(conn) => conn,
            None => self.open_raw().await?,
        };
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        Ok((
            conn,
            RawLease {
                endpoint: self.clone(),
            },
        ))
    }

    async fn open_raw(&self) -> Result<RawConn, UpstreamError> {
        // Boxed: a TLS handshake's state is kilobytes, and inline it would be part of (and be
        // copied with) every request's future, though most requests take a pooled connection.
        let opening = Box::pin(connect::open_raw(&self.key.address, self.tls.as_ref()));
        self.opened(opening).await
    }

    // Always inline, as it was before it took `resendable`: called, it cost every checkout 12
    // instructions.
    #[inline(always)]
    fn pooled_raw(&self, now: Instant, resendable: bool) -> Option<RawConn> {
        let (_, idle) = self.raw_idle.here();
        let mut conn = idle.take(now, self.key.idle_timeout, RawConn::is_usable)?;
        if !resendable && !conn.is_open() {
            // Closed after all: a fresh connection takes the request.
            return None;
        }
        conn.reused = true;
        Some(conn)
    }

    /// Back to the pool after an exchange that ended cleanly with the connection open, idle
    /// since `since`.
    pub fn give_back_raw(&self, conn: RawConn, since: Instant) {
        let (_, idle) = self.raw_idle.here();
        idle.give_back(conn, since, &self.metrics);
    }

    /// A connection attempt within the connect timeout, counted when it opened.
    async fn opened<C>(
        &self,
        opening: impl std::future::Future<Output = Result<C, UpstreamError>>,
    ) -> Result<C, UpstreamError> {
        let attempt = tokio::time::timeout(self.key.connect_timeout, opening).await;
        let conn = attempt.map_err(|_| UpstreamError::Timeout)??;
        self.metrics.opened.inc();
        Ok(conn)
    }

    async fn open_h2(&self, pool: &H2Pool) -> Result<H2Conn, UpstreamError> {
        let metrics = self.metrics.clone();
        let signals = Arc::new(Signals::new(metrics.goaways.clone()));
        let opening = Box::pin(connect::open_h2(
            &self.key.address,
            self.tls.as_ref(),
            pool.spec(),
            signals.clone(),
        ));
        let link = self.opened(opening).await?;
        Ok(H2Conn::new(link, signals, metrics))
    }

    /// Closes pooled connections idle for longer than the pool's idle timeout. Checkout skips
    /// them anyway; this frees their sockets when no traffic comes to do it.
    pub fn evict_idle(&self) -> usize {
        let timeout = self.key.idle_timeout;
        let raw = self.raw_idle.iter();
        let raw: usize = raw
            .map(|idle| idle.evict(timeout, |c| !c.is_usable()))
            .sum();
        let h2: usize = self.h2.iter().map(|h2| h2.evict_idle(timeout)).sum();
        raw + h2
    }

    /// Connections idle in the pool now, over every worker's.
    pub fn idle_count(&self) -> usize {
        self.raw_idle.iter().map(IdleStack::len).sum()
    }
}

/// One request's hold on a connection.
pub struct Lease {
    sender: Sender,
    release: Release,
}

impl Lease {
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.release.endpoint
    }

    /// Sends the request and waits for the response head until `deadline` (the response
    /// timeout from when the caller started the exchange).
    pub async fn send(
        self,
        req: Request<RequestBody>,
        started: Instant,
    ) -> Result<(Response<Received>, Release), (SendError, Release)> {
        let mut conn = match self.sender {
            Sender::H1(conn) => conn,
            Sender::H2(link) => {
                // Streams share the connection: each has its own timer.
                let deadline = started + self.release.endpoint.response_timeout();
                let (req, resend) = Resend::keep(req);
                let sending = h2pool::exchange(&link, req);
                return match tokio::time::timeout_at(deadline.into(), sending).await {
                    Ok(Ok(resp)) => Ok((resp.map(Received::H2Response), self.release)),
                    Ok(Err(Failed::NotSent(req))) => Err((SendError::NotSent(req), self.release)),
                    Ok(Err(Failed::Refused(head))) => {
                        // The server did not process it (RFC 9113 §8.7): it may go again on
                        // another stream, whatever its method, if its body was kept.
                        self.release.endpoint.metrics.refused.inc();
                        let failed = match resend.again(*head) {
                            Some(req) => SendError::Refused(Box::new(req)),
                            None => SendError::Failed(UpstreamError::Reset),
                        };
                        Err((failed, self.release))
                    }
                    Ok(Err(Failed::Error(err))) => {
                        tracing::debug!(error = %err, "h2 upstream stream failed");
                        Err((SendError::Failed(err.classify()), self.release))
                    }
                    Err(_) => Err((SendError::Failed(UpstreamError::Timeout), self.release)),
                };
            }
        };
        // The connection's IO enforces it: no timer of this request's own.
        let limit = self.release.endpoint.response_timeout();
        conn.deadline.set(started, limit);
        let result = conn.sender.try_send_request(req).await;
        conn.deadline.clear();
        match result {
            // An upgrade's connection: the tunnel takes it over, it is never pooled.
            Ok(resp) => Ok((resp.map(Received::Http1), self.release)),
            Err(mut err) => match err.take_message() {
                Some(req) => Err((SendError::NotSent(Box::new(req)), self.release)),
                None => Err((SendError::Failed(classify(err.error())), self.release)),
            },
        }
    }
}

fn classify(err: &hyper::Error) -> UpstreamError {
    if err.is_timeout() || is_deadline_error(err) {
        UpstreamError::Timeout
    } else if err.is_parse() || err.is_parse_status() || err.is_user() {
        UpstreamError::Protocol
    } else {
        UpstreamError::Reset
    }
}

/// Counts a byte-forwarded exchange as outstanding (least-request balancing) while it lasts.
pub struct RawLease {
    endpoint: Arc<Endpoint>,
}

impl RawLease {
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }
}

impl Drop for RawLease {
    fn drop(&mut self) {
        self.endpoint.outstanding.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Held until the response body ends: counts the request as outstanding, and holds its
/// HTTP/2 stream.
pub struct Release {
    endpoint: Arc<Endpoint>,
    /// The HTTP/2 stream taken for this request, and the worker whose pool it is from: freed
    /// when the exchange ends.
    slot: Option<(usize, Slot)>,
}

impl Drop for Release {
    fn drop(&mut self) {
        self.endpoint.outstanding.fetch_sub(1, Ordering::Relaxed);
        if let Some((part, slot)) = self.slot.take() {
            self.endpoint.h2.part(part).end(slot);
        }
    }
}
