//! A request's life, phase by phase: match → choose → (mirror) → rewrite → connect → send →
//! respond → record. The only shared state touched is one load of the routing table.

pub mod body;
mod headers;
mod local;
mod mirror;
mod upgrade;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use http::header::{CONTENT_TYPE, HOST};
use http::uri::{PathAndQuery, Scheme};
use http::{HeaderValue, Request, Response, StatusCode, Uri, Version};
use hyper::body::Incoming;
use tokio::sync::Semaphore;

use body::{PendingGrpc, RequestBody, ResponseBody, UpstreamBody};
pub use local::local_response;

use crate::stats::{grpc_status_is_fault, Outcome, Role, UpstreamError};
use crate::table::{Backend, Route, TableHandle};
use crate::upstream::{Endpoint, Lease, SendError};

/// Mirrors in flight at once; past this a mirror is skipped rather than queued.
const MAX_MIRRORS_IN_FLIGHT: usize = 256;
/// A pooled connection may turn out closed; this many fresh tries before giving up.
const STALE_RETRIES: usize = 2;

static GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");

/// Who is on the other end of a client connection; built once per connection.
#[derive(Clone, Debug)]
pub struct ClientInfo {
    pub ip: IpAddr,
    pub tls: bool,
    /// The peer address as a header value, rendered once for every request's X-Forwarded-For.
    pub ip_header: HeaderValue,
}

impl ClientInfo {
    pub fn new(ip: IpAddr, tls: bool) -> Self {
        let ip_header =
            HeaderValue::from_str(&ip.to_string()).unwrap_or(HeaderValue::from_static("unknown"));
        ClientInfo { ip, tls, ip_header }
    }
}

pub struct Proxy {
    table: Arc<TableHandle>,
    mirrors: Arc<Semaphore>,
}

impl Proxy {
    pub fn new(table: Arc<TableHandle>) -> Self {
        Proxy {
            table,
            mirrors: Arc::new(Semaphore::new(MAX_MIRRORS_IN_FLIGHT)),
        }
    }

    pub(crate) fn table(&self) -> &TableHandle {
        &self.table
    }

    pub async fn handle(
        &self,
        mut req: Request<Incoming>,
        client: &ClientInfo,
    ) -> Response<ResponseBody> {
        let table = self.table.load();
        // A clone of the Host value shares its bytes: no copy on the common path.
        let host = host_of(&req);

        // Match.
        let path = req.uri().path().as_bytes();
        let Some(route) = table.find(host.as_ref().map(|h| h.as_bytes()), path, req.headers())
        else {
            return local_response(StatusCode::NOT_FOUND, "no route matches this request");
        };

        // Choose.
        let role = route.choose(req.headers());

        // Rewrite for the upstream leg.
        let upgrade = req.version() == Version::HTTP_11 && headers::is_upgrade(req.headers());
        let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
        let (mut parts, incoming) = req.into_parts();
        let wants_trailers = headers::strip_hop_by_hop(&mut parts.headers, upgrade);
        headers::add_forwarded(&mut parts.headers, client, host.as_ref());

        // Mirror: a copy to canary that never delays or changes the client's answer (never for
        // an upgrade: a tunnel cannot be copied).
        let mirror = if upgrade {
            None
        } else {
            mirror::start(route, &parts, &self.mirrors, incoming.is_end_stream_hint())
        };
        let body = match mirror {
            Some(Some(tx)) => RequestBody::Tee(incoming, Some(tx)),
            _ => RequestBody::Incoming(incoming),
        };
        let req = Request::from_parts(parts, body);

        // Connect, send, respond — within the route's deadline.
        let started = Instant::now();
        let mut resp = match route.timeout {
            None => forward(route, role, req, wants_trailers, upgrade).await,
            Some(limit) => match tokio::time::timeout(
                limit,
                forward(route, role, req, wants_trailers, upgrade),
            )
            .await
            {
                Ok(resp) => resp,
                Err(_) => {
                    let outcome = Outcome::error(UpstreamError::Timeout, started.elapsed());
                    route.backend(role).stats.record(&outcome);
                    return local_response(
                        StatusCode::GATEWAY_TIMEOUT,
                        "request timed out (route timeout)",
                    );
                }
            },
        };
        if let Some(client_upgrade) = client_upgrade {
            upgrade::tunnel(client_upgrade, &mut resp);
        }
        resp
    }
}

trait EndStreamHint {
    fn is_end_stream_hint(&self) -> bool;
}

impl EndStreamHint for Incoming {
    fn is_end_stream_hint(&self) -> bool {
        http_body::Body::is_end_stream(self)
    }
}

/// The request's host: the URI's authority (HTTP/2, absolute-form) or else the Host header.
fn host_of<B>(req: &Request<B>) -> Option<HeaderValue> {
    match req.uri().authority() {
        Some(a) => HeaderValue::from_str(a.as_str()).ok(),
        None => req.headers().get(HOST).cloned(),
    }
}

/// Connect (with the one retry on the other backend), send, and turn the answer into the
/// client's response; every attempt is recorded against the backend it went to.
async fn forward(
    route: &Route,
    role: Role,
    req: Request<RequestBody>,
    wants_trailers: bool,
    upgrade: bool,
) -> Response<ResponseBody> {
    let mut backend = route.backend(role);
    let mut endpoint = backend.pick().clone();
    let mut started = Instant::now();
    let mut lease = checkout(&endpoint, upgrade).await;
    if let Err(err) = lease {
        backend
            .stats
            .record(&Outcome::error(err, started.elapsed()));
        // Nothing was sent: the other side of the route may take it.
        let Some(other) = route.fallback(backend.role) else {
            return upstream_failure(err, backend);
        };
        backend = other;
        endpoint = backend.pick().clone();
        started = Instant::now();
        lease = checkout(&endpoint, upgrade).await;
        if let Err(err) = lease {
            backend
                .stats
                .record(&Outcome::error(err, started.elapsed()));
            return upstream_failure(err, backend);
        }
    }
    let Ok(mut lease) = lease else {
        return local_response(StatusCode::BAD_GATEWAY, "upstream unavailable");
    };

    let mut req = req;
    for attempt in 0..=STALE_RETRIES {
        let target = shape_for_upstream(req, &endpoint, wants_trailers);
        let sent = lease.send(target, started).await;
        let err = match sent {
            Ok((resp, release)) => return respond(resp, release, backend, started),
            Err((SendError::NotSent(back), _release)) if attempt < STALE_RETRIES => {
                // A pooled connection closed under us before the request left: try a fresh one.
                req = *back;
                match checkout(&endpoint, upgrade).await {
                    Ok(l) => {
                        lease = l;
                        continue;
                    }
                    Err(err) => err,
                }
            }
            Err((SendError::NotSent(_), _)) => UpstreamError::Reset,
            Err((SendError::Failed(err), _)) => err,
        };
        backend
            .stats
            .record(&Outcome::error(err, started.elapsed()));
        return upstream_failure(err, backend);
    }
    local_response(StatusCode::BAD_GATEWAY, "upstream unavailable")
}

async fn checkout(endpoint: &Arc<Endpoint>, upgrade: bool) -> Result<Lease, UpstreamError> {
    if upgrade {
        endpoint.checkout_for_upgrade().await
    } else {
        endpoint.checkout().await
    }
}

/// HTTP/1 upstreams get origin-form; HTTP/2 upstreams need scheme and authority.
pub(super) fn shape_for_upstream(
    mut req: Request<RequestBody>,
    endpoint: &Endpoint,
    wants_trailers: bool,
) -> Request<RequestBody> {
    let path = req
        .uri()
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    if endpoint.is_http2() {
        let authority = req
            .uri()
            .authority()
            .map(|a| a.as_str().to_owned())
            .or_else(|| {
                req.headers()
                    .get(HOST)
                    .and_then(|h| h.to_str().ok())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| endpoint.address().to_owned());
        let scheme = if endpoint.is_tls() {
            Scheme::HTTPS
        } else {
            Scheme::HTTP
        };
        if let Ok(uri) = Uri::builder()
            .scheme(scheme)
            .authority(authority)
            .path_and_query(path)
            .build()
        {
            *req.uri_mut() = uri;
        }
        req.headers_mut().remove(HOST);
        if wants_trailers {
            // gRPC needs it, and HTTP/2 allows exactly this value.
            req.headers_mut()
                .insert(http::header::TE, http::HeaderValue::from_static("trailers"));
        }
        *req.version_mut() = Version::HTTP_2;
    } else {
        if req.uri().authority().is_some() {
            *req.uri_mut() = Uri::from(path);
        }
        *req.version_mut() = Version::HTTP_11;
    }
    req
}

fn respond(
    resp: Response<Incoming>,
    release: crate::upstream::Release,
    backend: &Backend,
    started: Instant,
) -> Response<ResponseBody> {
    let (mut parts, incoming) = resp.into_parts();
    let mut outcome = Outcome::response_between(parts.status.as_u16(), started, Instant::now());
    let switching = parts.status == StatusCode::SWITCHING_PROTOCOLS;
    headers::strip_hop_by_hop(&mut parts.headers, switching);

    let grpc = parts
        .headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    let pending = if !grpc {
        backend.stats.record(&outcome);
        None
    } else if let Some(code) = parts.headers.get(&GRPC_STATUS) {
        // Trailers-only gRPC answer: the status is already here.
        outcome.grpc_fault = grpc_status_is_fault(code.as_bytes());
        backend.stats.record(&outcome);
        None
    } else {
        Some(PendingGrpc {
            stats: backend.stats.clone(),
            outcome,
        })
    };
    let body = UpstreamBody::new(incoming, release, pending);
    Response::from_parts(parts, ResponseBody::Upstream(body))
}

/// What the client is told when its request got no response from the upstream.
pub(crate) fn failure_cause(err: UpstreamError) -> &'static str {
    match err {
        UpstreamError::Connect => "could not connect to upstream",
        UpstreamError::Timeout => "upstream timed out",
        UpstreamError::Reset => "upstream closed the connection",
        UpstreamError::Tls => "TLS handshake with upstream failed",
        UpstreamError::Protocol => "upstream sent a malformed response",
    }
}

fn upstream_failure(err: UpstreamError, backend: &Backend) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::BAD_GATEWAY);
    local_response(
        status,
        &format!("{} ({} backend)", failure_cause(err), backend.role.as_str()),
    )
}
