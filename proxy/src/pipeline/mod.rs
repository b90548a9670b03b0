//! A request's life, written once for every engine: ordered phases over one per-request
//! context (`Exchange`). The engines differ only in how bytes move — `crate::h1` forwards
//! HTTP/1 as bytes, `crate::forward` goes through hyper (HTTP/2, upgrades, gRPC, bodies a
//! mirror copies) — and each calls these phases in this order:
//!
//! 1. **match** — [`match_route`]: host, method, target and fields to a route of the table in
//!    force, by Gateway API precedence;
//! 2. **redirect** — a route with a redirect (Gateway API RequestRedirect) answers here with
//!    its status and the `Location` of [`url::location`]: no backend is chosen, contacted or
//!    recorded against. The hyper engine's alone: such a route is never forwarded as bytes
//!    (`Route::h1_passthrough`);
//! 3. **choose** — [`Exchange::choose`]: header route, then sticky bucket, then the weighted
//!    split over the route's backends (none with weight: [`NO_WEIGHT`], 500);
//! 4. **rewrite headers** — by the one classification in `crate::field`: hop-by-hop fields
//!    go, X-Forwarded-For is appended to, X-Forwarded-Proto and -Host state what weir saw;
//!    a route's header edits (request, response, per backend) are the hyper engine's, for
//!    the same reason as redirects; so is its URL rewrite (URLRewrite: the path by
//!    [`url::edited`], the Host or `:authority` replaced after X-Forwarded-Host took the
//!    client's);
//! 5. **mirror** — [`mirror`]: a copy of the request as rewritten (`Route::mirror_to`
//!    decides), admitted, timed, and paired with the client's answer alike for both engines;
//!    the byte engine copies bodiless requests, and hands one with a body to copy to hyper;
//! 6. **connect with the fallback**, 7. **send with the timeout** — [`forward`], over the
//!    engine's [`Transport`]: a connect failure goes to another backend once, a stale pooled
//!    connection is replaced, the route's deadline covers it all;
//! 8. **record** — every attempt against the backend it went to ([`Exchange::record`]);
//!    a failure answered in the same words by both engines ([`Failure`]);
//! 9. **log** — the access log's line ([`logging`]): begun at match (when the route logs),
//!    answered with the response head or the failure, ended with the response's last byte.
//!
//! The only shared state a request touches is one load of the routing table.

mod exchange;
pub(crate) mod logging;
pub(crate) mod mirror;
mod transport;
pub mod url;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http::HeaderValue;
use tokio::sync::Semaphore;

pub use exchange::{Exchange, Failure, NO_WEIGHT};
pub(crate) use logging::{Counts, Tally, Untallied};
pub(crate) use transport::{forward, Transport, Undelivered};

use crate::access_log::AccessLog;
use crate::interim::{HoldsInterims, Interims};
use crate::stats::Metrics;
use crate::table::{Fields, Route, RouteTable, TableHandle};

/// Mirrors in flight at once; past this a mirror is skipped rather than queued.
const MAX_MIRRORS_IN_FLIGHT: usize = 256;

/// What every request of every engine shares: the routing table in force, the bound on
/// mirrors in flight, and the access log.
pub struct Proxy {
    table: Arc<TableHandle>,
    mirrors: Arc<Semaphore>,
    access_log: Arc<AccessLog>,
    metrics: Arc<Metrics>,
}

impl Proxy {
    pub fn new(table: Arc<TableHandle>, access_log: Arc<AccessLog>, metrics: Arc<Metrics>) -> Self {
        Proxy {
            table,
            mirrors: Arc::new(Semaphore::new(MAX_MIRRORS_IN_FLIGHT)),
            access_log,
            metrics,
        }
    }

    /// The process's metrics: what the listeners count (TLS refusals, identity refusals).
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub(crate) fn access_log(&self) -> &AccessLog {
        &self.access_log
    }

    pub(crate) fn table(&self) -> &TableHandle {
        &self.table
    }

    pub(crate) fn mirrors(&self) -> &Arc<Semaphore> {
        &self.mirrors
    }
}

/// Who is on the other end of a client connection, and on which listener; built once per
/// connection.
#[derive(Debug)]
pub struct ClientInfo {
    pub ip: IpAddr,
    pub tls: bool,
    /// The peer address as a header value, rendered once for every request's X-Forwarded-For.
    pub ip_header: HeaderValue,
    /// The peer's address and port (the access log's `client`).
    pub peer: SocketAddr,
    /// The listener's name.
    pub listener: Arc<str>,
    /// Who the client is, from the certificate it presented (mutual TLS); None without one.
    pub identity: Option<Arc<str>>,
    /// Interim (1xx) heads from upstreams, for an HTTP/1 connection hyper's server writes to
    /// (`crate::interim`). Inline, so a connection that never has one allocates nothing.
    pub interims: Interims,
}

impl ClientInfo {
    pub fn new(peer: SocketAddr, tls: bool, listener: Arc<str>) -> Self {
        let ip = peer.ip();
        let ip_header =
            HeaderValue::from_str(&ip.to_string()).unwrap_or(HeaderValue::from_static("unknown"));
        ClientInfo {
            ip,
            tls,
            ip_header,
            peer,
            listener,
            identity: None,
            interims: Interims::default(),
        }
    }

    /// With the identity the client's certificate gave.
    pub fn with_identity(mut self, identity: Option<Arc<str>>) -> Self {
        self.identity = identity;
        self
    }
}

impl HoldsInterims for ConnState {
    fn interims(&self) -> &Interims {
        &self.1.interims
    }
}

/// What every request on a client connection shares: the proxy, and who the client is (one
/// value per connection: each request costs one reference count, not two).
pub type ConnState = Arc<(Arc<Proxy>, ClientInfo)>;

/// Phase 1, match: the route for a request's host (authority or Host, port and all) and
/// target (the path, a query may follow), with its fields for header rules; `tls` is the
/// listener's (a Host without a port was addressed to 443, else 80).
pub fn match_route<'t, F: Fields + ?Sized>(
    table: &'t RouteTable,
    host: Option<&[u8]>,
    tls: bool,
    method: &[u8],
    target: &[u8],
    fields: &F,
) -> Option<&'t Arc<Route>> {
    table.find(host, tls, method, target, fields)
}

#[cfg(test)]
mod tests;
