//! One upstream address: its pool of HTTP/1 connections (FIFO, so a returned connection has
//! time to become ready again before it is taken) or its one shared HTTP/2 connection.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use crossbeam_queue::ArrayQueue;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::client::conn::http2;
use rustls_pki_types::ServerName;

use super::body::RequestBody;
use super::connect::{self, H1Conn, Sender, TlsTarget};
use super::raw::RawConn;
use super::EndpointKey;
use crate::deadline::is_deadline_error;
use crate::stats::UpstreamError;
use crate::table_spec::UpstreamProtocol;

const MAX_IDLE_PER_ENDPOINT: usize = 256;

struct Idle {
    conn: H1Conn,
    since: Instant,
}

struct IdleRaw {
    conn: RawConn,
    since: Instant,
}

pub struct Endpoint {
    key: EndpointKey,
    tls: Option<TlsTarget>,
    idle: ArrayQueue<Idle>,
    /// Connections of the byte-forwarding engine (`crate::h1`): a pool apart from hyper's.
    raw_idle: ArrayQueue<IdleRaw>,
    h2: ArcSwapOption<http2::SendRequest<RequestBody>>,
    h2_connecting: tokio::sync::Mutex<()>,
    outstanding: AtomicUsize,
}

/// Why a send did not produce a response.
pub enum SendError {
    /// The request never left: it may be tried again elsewhere.
    NotSent(Box<Request<RequestBody>>),
    Failed(UpstreamError),
}

impl Endpoint {
    pub(super) fn new(key: EndpointKey) -> Result<Self, String> {
        let tls = match &key.tls {
            None => None,
            Some((name, ca_file)) => {
                let config = super::tls::client_config(ca_file.as_deref(), key.protocol)?;
                let name = ServerName::try_from(name.clone())
                    .map_err(|e| format!("`{name}` is not a valid TLS server name: {e}"))?;
                Some(TlsTarget { config, name })
            }
        };
        Ok(Endpoint {
            key,
            tls,
            idle: ArrayQueue::new(MAX_IDLE_PER_ENDPOINT),
            raw_idle: ArrayQueue::new(MAX_IDLE_PER_ENDPOINT),
            h2: ArcSwapOption::empty(),
            h2_connecting: tokio::sync::Mutex::new(()),
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

    /// A connection ready for one request: pooled (unless `fresh`) or new. Failing here
    /// means nothing was sent. (HTTP/2 shares one connection, replaced once it closes.)
    pub async fn checkout(self: &Arc<Self>, fresh: bool) -> Result<Lease, UpstreamError> {
        let sender = match self.key.protocol {
            UpstreamProtocol::Http1 => {
                let pooled = if fresh { None } else { self.pooled_h1().await };
                match pooled {
                    Some(s) => Sender::H1(s),
                    None => self.open(false).await?,
                }
            }
            UpstreamProtocol::Http2 => Sender::H2(self.shared_h2().await?),
        };
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        Ok(Lease {
            sender,
            poolable: true,
            release: Release {
                endpoint: self.clone(),
                conn: None,
            },
        })
    }

    /// A fresh HTTP/1 connection that may be taken over by an `Upgrade`; never pooled.
    pub async fn checkout_for_upgrade(self: &Arc<Self>) -> Result<Lease, UpstreamError> {
        let sender = self.open(true).await?;
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        Ok(Lease {
            sender,
            poolable: false,
            release: Release {
                endpoint: self.clone(),
                conn: None,
            },
        })
    }

    /// A byte-stream HTTP/1 connection, pooled (unless `fresh`) or new, for the passthrough
    /// engine. Failing here means nothing was sent.
    pub async fn checkout_raw(
        self: &Arc<Self>,
        fresh: bool,
    ) -> Result<(RawConn, RawLease), UpstreamError> {
        let pooled = if fresh { None } else { self.pooled_raw() };
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
        let opening = Box::pin(connect::open_raw(&self.key.address, self.tls.as_ref()));
        match tokio::time::timeout(self.key.connect_timeout, opening).await {
            Ok(result) => result,
            Err(_) => Err(UpstreamError::Timeout),
        }
    }

    fn pooled_raw(&self) -> Option<RawConn> {
        while let Some(mut idle) = self.raw_idle.pop() {
            if idle.since.elapsed() <= self.key.idle_timeout && idle.conn.is_usable() {
                idle.conn.reused = true;
                return Some(idle.conn);
            }
        }
        None
    }

    /// Back to the pool after an exchange that ended cleanly with the connection open.
    pub fn give_back_raw(&self, conn: RawConn) {
        // A full pool drops the connection: enough are idle already.
        let _ = self.raw_idle.push(IdleRaw {
            conn,
            since: Instant::now(),
        });
    }

    async fn pooled_h1(&self) -> Option<H1Conn> {
        while let Some(mut idle) = self.idle.pop() {
            if idle.conn.sender.is_closed() || idle.since.elapsed() > self.key.idle_timeout {
                continue;
            }
            if idle.conn.sender.is_ready() {
                return Some(idle.conn);
            }
            // Returned at the end of its last body; its task may not have run since.
            let ready =
                tokio::time::timeout(self.key.connect_timeout, idle.conn.sender.ready()).await;
            if matches!(ready, Ok(Ok(()))) {
                return Some(idle.conn);
            }
        }
        None
    }

    async fn shared_h2(&self) -> Result<http2::SendRequest<RequestBody>, UpstreamError> {
        if let Some(s) = self.h2.load().as_deref() {
            if !s.is_closed() {
                return Ok(s.clone());
            }
        }
        // One connect at a time; the others wait for it and share it.
        let _connecting = self.h2_connecting.lock().await;
        if let Some(s) = self.h2.load().as_deref() {
            if !s.is_closed() {
                return Ok(s.clone());
            }
        }
        match self.open(false).await? {
            Sender::H2(s) => {
                self.h2.store(Some(Arc::new(s.clone())));
                Ok(s)
            }
            Sender::H1(_) => Err(UpstreamError::Protocol),
        }
    }

    async fn open(&self, upgrades: bool) -> Result<Sender, UpstreamError> {
        let protocol = if upgrades {
            UpstreamProtocol::Http1
        } else {
            self.key.protocol
        };
        // Boxed: a TLS handshake's state is kilobytes, and inline it would be part of (and be
        // copied with) every request's future, though most requests take a pooled connection.
        let opening = Box::pin(connect::open(
            &self.key.address,
            protocol,
            self.tls.as_ref(),
            upgrades,
        ));
        match tokio::time::timeout(self.key.connect_timeout, opening).await {
            Ok(result) => result,
            Err(_) => Err(UpstreamError::Timeout),
        }
    }

    /// Closes pooled connections idle for longer than the pool's idle timeout. Checkout skips
    /// them anyway; this frees their sockets when no traffic comes to do it.
    pub fn evict_idle(&self) -> usize {
        let mut evicted = 0;
        for _ in 0..self.raw_idle.len() {
            let Some(mut idle) = self.raw_idle.pop() else {
                break;
            };
            let stale = idle.since.elapsed() > self.key.idle_timeout || !idle.conn.is_usable();
            if stale || self.raw_idle.push(idle).is_err() {
                evicted += 1;
            }
        }
        for _ in 0..self.idle.len() {
            let Some(idle) = self.idle.pop() else { break };
            let stale =
                idle.conn.sender.is_closed() || idle.since.elapsed() > self.key.idle_timeout;
            // A push can only fail if checkouts raced in returns meanwhile; dropping is fine.
            if stale || self.idle.push(idle).is_err() {
                evicted += 1;
            }
        }
        evicted
    }

    /// Connections idle in the pool now.
    pub fn idle_count(&self) -> usize {
        self.idle.len() + self.raw_idle.len()
    }

    fn give_back(&self, conn: H1Conn) {
        if !conn.sender.is_closed() {
            // A full pool drops the connection: enough are idle already.
            let _ = self.idle.push(Idle {
                conn,
                since: Instant::now(),
            });
        }
    }
}

/// One request's hold on a connection.
pub struct Lease {
    sender: Sender,
    /// False for a connection that an upgrade may take over.
    poolable: bool,
    release: Release,
}

impl Lease {
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.release.endpoint
    }

    /// Sends the request and waits for the response head until `deadline` (the response
    /// timeout from when the caller started the exchange).
    pub async fn send(
        mut self,
        req: Request<RequestBody>,
        started: Instant,
    ) -> Result<(Response<Incoming>, Release), (SendError, Release)> {
        let result = match &mut self.sender {
            Sender::H1(conn) => {
                // The connection's IO enforces it: no timer of this request's own.
                let limit = self.release.endpoint.response_timeout();
                conn.deadline.set(started, limit);
                let result = conn.sender.try_send_request(req).await;
                conn.deadline.clear();
                result
            }
            Sender::H2(s) => {
                // Streams share the connection: each has its own timer.
                let deadline = started + self.release.endpoint.response_timeout();
                match tokio::time::timeout_at(deadline.into(), s.try_send_request(req)).await {
                    Ok(result) => result,
                    Err(_) => {
                        return Err((SendError::Failed(UpstreamError::Timeout), self.release))
                    }
                }
            }
        };
        match result {
            Ok(resp) => {
                if let (Sender::H1(conn), true) = (self.sender, self.poolable) {
                    self.release.conn = Some(conn);
                }
                Ok((resp, self.release))
            }
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

/// Held until the response body ends: counts the request as outstanding, and hands the
/// HTTP/1 connection back to the pool when the exchange finished cleanly.
pub struct Release {
    endpoint: Arc<Endpoint>,
    conn: Option<H1Conn>,
}

impl Release {
    pub fn reuse(mut self) {
        if let Some(conn) = self.conn.take() {
            self.endpoint.give_back(conn);
        }
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        self.endpoint.outstanding.fetch_sub(1, Ordering::Relaxed);
    }
}
