//! The hyper engine (named for the HTTP/1 server it began with): HTTP/2 (served by
//! `listen::h2` on weir's own engine), HTTP/1 that the passthrough engine leaves to hyper's
//! server (upgrades, gRPC, mirrors, absolute-form, …), and every response weir writes
//! itself. It runs the request phases of `crate::pipeline` over `http`'s request and
//! response types; what it adds is how bytes move: bodies as frames, the mirror's tee, the
//! upgrade's tunnel, gRPC's outcome read from trailers.

pub mod body;
mod headers;
mod local;
mod logged;
mod mirror;
mod upgrade;
mod url;

use std::sync::Arc;
use std::time::Instant;

use http::header::{CONTENT_TYPE, HOST};
use http::uri::{PathAndQuery, Scheme};
use http::{HeaderValue, Request, Response, StatusCode, Uri, Version};
use http_body::Body as _;
use hyper::upgrade::OnUpgrade;

use body::{PendingGrpc, RequestBody, ResponseBody, UpstreamBody};
pub use headers::ADDED_FIELDS;
pub use local::local_response;
use logged::{Logged, Logging};

use crate::h1;
use crate::interim::Interims;
use crate::pipeline::mirror::{PrimaryBody, PrimarySide};
use crate::pipeline::{self, ClientInfo, ConnState, Exchange, Proxy, Transport, Undelivered};
use crate::stats::{
    grpc_fault_in, grpc_status_in_trailers, grpc_status_is_fault, UpstreamError, GRPC_STATUS,
};
use crate::table::{Backend, RouteTable};
use crate::upstream::{Endpoint, Lease, RawConn, RawLease, Received, Release, SendError, TeeTx};

/// Serves one request through the phases; the answer is the upstream's or weir's own. Takes
/// its connection's state itself rather than a borrow of it, so that no wrapping future is
/// needed to hold it (each would hold the request a second time).
pub async fn handle(state: ConnState, req: Request<Received>) -> Response<ResponseBody> {
    let (proxy, client) = (&*state.0, &state.1);
    let table = proxy.table().load();
    let mut logging = None;
    let (mut exchange, mut leg, client_upgrade) =
        match prepare(proxy, &table, req, client, &mut logging) {
            Prepared::Forward(exchange, leg, client_upgrade) => (exchange, leg, client_upgrade),
            Prepared::Answered(answer) => {
                if let Some(logging) = logging {
                    (*logging).local(proxy, answer.status(), body_len(&answer));
                }
                return answer;
            }
        };

    // Connect, send — within the route's deadline — then record and respond.
    let forwarded = pipeline::forward(&mut exchange, &mut leg).await;
    // The client's answer beside its copy's, if it was copied; its body goes on to be compared
    // with the copy's. A gRPC call's status comes in its trailers: its half of the pair waits
    // for them, with the body.
    let later = leg.pair.take().and_then(|pair| match &forwarded {
        Ok((resp, _)) if grpc_status_in_trailers(resp.headers()) => {
            let status = resp.status().as_u16();
            Some(pipeline::mirror::primary_later(pair, exchange.at, status))
        }
        Ok((resp, _)) => {
            let head = (resp.status().as_u16(), grpc_fault_in(resp.headers()));
            pipeline::mirror::primary(pair, exchange.at, Ok(head))
        }
        Err(failure) => pipeline::mirror::primary(pair, exchange.at, Err(*failure)),
    });
    let mut resp = match forwarded {
        Ok((resp, release)) => {
            let logged = logging.and_then(|logging| {
                (*logging).answered(
                    &exchange,
                    resp.status().as_u16(),
                    Instant::now(),
                    state.clone(),
                )
            });
            respond(resp, release, &exchange, logged, later)
        }
        Err(failure) => {
            let (status, cause) = failure.answer(&exchange);
            let resp = local_response(status, &cause);
            if let Some(logging) = logging {
                (*logging).failed(proxy, &exchange, failure, (status, body_len(&resp)));
            }
            return resp;
        }
    };
    if let Some(client_upgrade) = client_upgrade {
        upgrade::tunnel(client_upgrade, &mut resp);
    }
    resp
}

/// The length of one of weir's own answers.
fn body_len(resp: &Response<ResponseBody>) -> u64 {
    resp.body().size_hint().exact().unwrap_or(0)
}

/// The phases before the first wait — match, redirect, choose, rewrite, mirror — or weir's own
/// answer.
/// A plain function, not part of `handle`'s future: the request's parts, moved from one local
/// to the next here, would each keep room in that future for the request's whole life (it
/// was 3,192 bytes, a quarter of it these locals), and every request's future is copied into
/// its task.
/// `logging`: the access log's line, begun once the request is matched (if it is logged).
fn prepare<'t>(
    proxy: &Proxy,
    table: &'t RouteTable,
    mut req: Request<Received>,
    client: &'t ClientInfo,
    logging: &mut Option<Box<Logging>>,
) -> Prepared<'t> {
    // A clone of the Host value shares its bytes: no copy on the common path.
    let host = host_of(&req);

    // Match.
    let target = req
        .uri()
        .path_and_query()
        .map_or(b"/".as_slice(), |p| p.as_str().as_bytes());
    let host_bytes = host.as_ref().map(HeaderValue::as_bytes);
    let method = req.method().as_str().as_bytes();
    let found = pipeline::match_route(table, host_bytes, client.tls, method, target, req.headers());
    if pipeline::logging::on(proxy) {
        *logging = pipeline::logging::begin(
            proxy,
            client,
            found.map(|r| &**r),
            logged::protocol(req.version()),
            method,
            host_bytes,
            target,
            req.headers(),
        )
        // Boxed: inline it would widen every request's future, logged or not.
        .map(|pending| Box::new(Logging::new(pending, !req.body().is_end_stream())));
    }
    // Before anything is done with the host: it must be one host.
    if let Some(cause) = http2_host_conflict(&req) {
        return Prepared::Answered(local_response(StatusCode::BAD_REQUEST, cause));
    }
    let Some(route) = found else {
        return Prepared::Answered(local_response(
            StatusCode::NOT_FOUND,
            "no route matches this request",
        ));
    };

    // Who may call: a route with identity rules refuses a caller it does not admit (mutual
    // TLS), before anything else of the route is done for it.
    if let Some(rules) = &route.identity {
        if !rules.admits(client.identity.as_deref()) {
            proxy
                .metrics()
                .identity_refused(&client.listener, &route.name);
            let cause = match client.identity {
                None => "this route needs a client certificate",
                Some(_) => "this client's identity is not allowed on this route",
            };
            return Prepared::Answered(local_response(StatusCode::FORBIDDEN, cause));
        }
    }

    // Redirect: answered here, no backend chosen or recorded against.
    if let Some(redirect) = &route.redirect {
        let request = pipeline::url::RequestUrl {
            tls: client.tls,
            host: host.as_ref().and_then(|h| h.to_str().ok()),
            target: std::str::from_utf8(target).unwrap_or("/"),
        };
        return Prepared::Answered(
            url::redirect_response(route, redirect, request)
                .unwrap_or_else(|cause| local_response(StatusCode::BAD_REQUEST, cause)),
        );
    }

    // Choose.
    let Some(exchange) = Exchange::choose(route, req.headers()) else {
        let (status, cause) = pipeline::NO_WEIGHT;
        return Prepared::Answered(local_response(status, cause));
    };

    // Rewrite for the upstream leg.
    let upgrade = req.version() == Version::HTTP_11 && headers::is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (mut parts, incoming) = req.into_parts();
    let wants_trailers = headers::strip_hop_by_hop(&mut parts.headers, upgrade);
    headers::add_forwarded(&mut parts.headers, client, host);
    route.request_edits.apply(&mut parts.headers);
    if let Some(rules) = &route.identity {
        rules.stamp(&mut parts.headers, client.identity.as_deref());
    }
    if let Some(rewrite) = &route.rewrite {
        if let Err(cause) = url::rewrite(&mut parts, rewrite) {
            return Prepared::Answered(local_response(StatusCode::BAD_REQUEST, cause));
        }
    }

    // Mirror: a copy to canary that never delays or changes the client's answer (never for
    // an upgrade: a tunnel cannot be copied).
    let mirror = if upgrade {
        None
    } else {
        mirror::start(proxy, route, &parts, incoming.is_end_stream())
    };
    // A bodiless idempotent request that the upstream drops unanswered may go to the other
    // side (RFC 9110 §9.2.2): its head is kept for that, where there is another side.
    let again = (route.has_fallback()
        && !upgrade
        && parts.method.is_idempotent()
        && incoming.is_end_stream())
    .then(|| {
        Box::new(Again {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
        })
    });
    let counted = logging.as_ref().and_then(|l| l.request_bytes.clone());
    let (tee, pair) = match mirror {
        Some((tee, pair)) => (tee, Some(pair)),
        None => (None, None),
    };
    let body = match (tee, counted) {
        (Some(tx), counted) => RequestBody::Tee(incoming, Some(TeeTx::new(tx)), counted),
        (_, Some(counted)) => RequestBody::Counted(incoming, counted),
        (_, None) => RequestBody::Client(incoming),
    };

    // Interim heads only to an HTTP/1.1 client (none to HTTP/1.0, RFC 9110 §15.2; an HTTP/2
    // client's stream takes none yet).
    let interims = (parts.version == Version::HTTP_11).then_some(&client.interims);
    let leg = HyperLeg {
        req: Some(Request::from_parts(parts, body)),
        again,
        wants_trailers,
        upgrade,
        // A request waiting for an HTTP/2 stream gives up when the route's deadline passes,
        // and a hair before the pipeline's own timer (started later) would: so it is answered
        // as what it is, a 503 for want of a stream, rather than a 504.
        wait_until: route.timeout.map(|limit| Instant::now() + limit),
        edited_for: None,
        interims,
        pair,
    };
    Prepared::Forward(exchange, leg, client_upgrade)
}

/// What the phases before the first wait came to.
enum Prepared<'t> {
    /// To an upstream: the request's context, its leg, and the client's side of an upgrade.
    Forward(Exchange<'t>, HyperLeg<'t>, Option<OnUpgrade>),
    /// Weir's own answer (no route, no weight, a malformed host, a redirect).
    Answered(Response<ResponseBody>),
}

/// The request on its way through hyper's client: taken by a send, given back when the
/// connection turned out closed before it left.
struct HyperLeg<'c> {
    req: Option<Request<RequestBody>>,
    /// Boxed: only a route with two sides has one, and inline it would widen every request's
    /// future (moved into a task, and copied, once per request).
    again: Option<Box<Again>>,
    wants_trailers: bool,
    upgrade: bool,
    /// How long a request may wait for an HTTP/2 stream: the route's deadline, or else the
    /// backend's response timeout from when it starts waiting.
    wait_until: Option<Instant>,
    /// The backend whose own request edits the request carries (`edit_for`).
    edited_for: Option<Arc<str>>,
    /// Where an HTTP/1 upstream's interim (1xx) heads go: the client's connection, when it is
    /// HTTP/1.1 (none to an HTTP/1.0 client, RFC 9110 §15.2).
    interims: Option<&'c Interims>,
    /// A mirrored request's place beside its copy: the client's answer goes there.
    pair: Option<PrimarySide>,
}

/// What it takes to send a bodiless request once more.
struct Again {
    method: http::Method,
    uri: Uri,
    headers: http::HeaderMap,
}

/// A connection taken for the request: hyper's client for HTTP/2 upstreams and upgrades, the
/// byte engine's pool for every other HTTP/1 request (`crate::h1::client`).
enum Taken {
    Hyper(Lease),
    Pooled(RawConn, RawLease),
}

impl Transport for HyperLeg<'_> {
    type Conn = Taken;
    type Answer = (Response<Received>, Option<Release>);

    async fn connect(
        &mut self,
        endpoint: &Arc<Endpoint>,
        fresh: bool,
        now: Instant,
    ) -> Result<Taken, UpstreamError> {
        if self.upgrade {
            endpoint.checkout_for_upgrade().await.map(Taken::Hyper)
        } else if !endpoint.is_http2() {
            let resendable = self.req.as_ref().is_some_and(h1::client::resendable);
            let (conn, lease) = endpoint.checkout_raw(fresh, resendable, now).await?;
            Ok(Taken::Pooled(conn, lease))
        } else {
            let wait_until = self
                .wait_until
                .unwrap_or_else(|| Instant::now() + endpoint.response_timeout());
            // `fresh`: refused on a pooled connection (a closed or going-away one has left the
            // pool): the connection that has carried fewest streams takes it.
            endpoint.checkout(wait_until, fresh).await.map(Taken::Hyper)
        }
    }

    async fn send(
        &mut self,
        taken: Taken,
        backend: &Backend,
        started: Instant,
    ) -> Result<Self::Answer, Undelivered> {
        let Some(mut req) = self.req.take() else {
            // Sent already, and its body is gone with it: nothing to send again.
            return Err(Undelivered::Failed(UpstreamError::Reset));
        };
        self.edit_for(&mut req, backend);
        let lease = match taken {
            Taken::Hyper(lease) => lease,
            Taken::Pooled(conn, raw) => {
                let req = shape_for_upstream(req, raw.endpoint(), self.wants_trailers);
                return match h1::client::send(conn, raw, req, started, self.interims).await {
                    Ok(resp) => Ok((resp, None)),
                    Err((why, back)) => {
                        // Bodiless and idempotent: it may go again as it is.
                        self.req = back;
                        Err(why)
                    }
                };
            }
        };
        let req = shape_for_upstream(req, lease.endpoint(), self.wants_trailers);
        match lease.send(req, started).await {
            Ok((resp, release)) => Ok((resp, Some(release))),
            Err((SendError::NotSent(back), _release)) => {
                // Never written: it may go again as it is, whatever its method.
                self.req = Some(*back);
                Err(Undelivered::Stale)
            }
            Err((SendError::Refused(back), _release)) => {
                self.req = Some(*back);
                Err(Undelivered::Refused)
            }
            Err((SendError::Failed(err @ UpstreamError::Reset), _release)) => {
                match self.again.take() {
                    Some(again) => {
                        let mut req = Request::new(RequestBody::Empty);
                        *req.method_mut() = again.method;
                        *req.uri_mut() = again.uri;
                        *req.headers_mut() = again.headers;
                        self.req = Some(req);
                        Err(Undelivered::Unanswered(err))
                    }
                    None => Err(Undelivered::Failed(err)),
                }
            }
            Err((SendError::Failed(err), _release)) => Err(Undelivered::Failed(err)),
        }
    }
}

impl HyperLeg<'_> {
    /// The backend's own request edits, once per backend the request goes to. Applied at
    /// send, not when the route's are: a failed connect moves the request to another backend
    /// before anything is sent. A request re-sent to another backend after the first
    /// answered nothing starts again from the head as the route left it (`again`).
    fn edit_for(&mut self, req: &mut Request<RequestBody>, backend: &Backend) {
        match &self.edited_for {
            None if backend.request_edits.is_empty() => return,
            Some(done) if **done == *backend.name => return,
            Some(_) => {
                if let Some(again) = &self.again {
                    *req.headers_mut() = again.headers.clone();
                }
            }
            None => {}
        }
        backend.request_edits.apply(req.headers_mut());
        self.edited_for = Some(backend.name.clone());
    }
}

/// HTTP/1 heads are checked before hyper parses them (`h1::gate`); for HTTP/2 the one rule
/// about the host: a Host field must name what :authority names (RFC 9113 §8.3.1), and only
/// once, or routing and the upstream could see two different hosts.
fn http2_host_conflict<B>(req: &Request<B>) -> Option<&'static str> {
    if req.version() != Version::HTTP_2 {
        return None;
    }
    let mut hosts = req.headers().get_all(HOST).iter();
    let host = hosts.next()?;
    if hosts.next().is_some() {
        return Some("more than one Host field");
    }
    match req.uri().authority() {
        Some(a) if !a.as_str().as_bytes().eq_ignore_ascii_case(host.as_bytes()) => {
            Some("Host disagrees with :authority")
        }
        _ => None,
    }
}

/// The request's host: the URI's authority (HTTP/2, absolute-form) or else the Host header.
fn host_of<B>(req: &Request<B>) -> Option<HeaderValue> {
    match req.uri().authority() {
        Some(a) => HeaderValue::from_str(a.as_str()).ok(),
        None => req.headers().get(HOST).cloned(),
    }
}

/// HTTP/1 upstreams get origin-form and a Host; HTTP/2 upstreams need scheme and authority
/// (and no Host: :authority says it).
pub(super) fn shape_for_upstream(
    mut req: Request<RequestBody>,
    endpoint: &Endpoint,
    wants_trailers: bool,
) -> Request<RequestBody> {
    if endpoint.is_http2() {
        let scheme = if endpoint.is_tls() {
            Scheme::HTTPS
        } else {
            Scheme::HTTP
        };
        // An HTTP/2 client's URI has both already: kept as it is, not built again.
        let has_both = req.uri().scheme() == Some(&scheme) && req.uri().authority().is_some();
        if !has_both {
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
            if let Ok(uri) = Uri::builder()
                .scheme(scheme)
                .authority(authority)
                .path_and_query(path_of(req.uri()))
                .build()
            {
                *req.uri_mut() = uri;
            }
        }
        req.headers_mut().remove(HOST);
        if wants_trailers {
            // gRPC needs it, and HTTP/2 allows exactly this value.
            req.headers_mut()
                .insert(http::header::TE, http::HeaderValue::from_static("trailers"));
        }
        *req.version_mut() = Version::HTTP_2;
    } else {
        if let Some(authority) = req.uri().authority() {
            // An HTTP/2 client's :authority (or an absolute-form target's) is the Host an
            // HTTP/1 upstream needs, unless the request has one.
            if !req.headers().contains_key(HOST) {
                if let Ok(host) = HeaderValue::from_str(authority.as_str()) {
                    req.headers_mut().insert(HOST, host);
                }
            }
            *req.uri_mut() = Uri::from(path_of(req.uri()));
        }
        *req.version_mut() = Version::HTTP_11;
    }
    req
}

fn path_of(uri: &Uri) -> PathAndQuery {
    uri.path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"))
}

/// Record, then respond: the response head is in. A gRPC call's outcome waits for its
/// trailers, where grpc-status travels.
fn respond(
    resp: Response<Received>,
    release: Option<Release>,
    exchange: &Exchange<'_>,
    logged: Option<Box<Logged>>,
    pair: Option<PrimaryBody>,
) -> Response<ResponseBody> {
    let (mut parts, incoming) = resp.into_parts();
    let mut outcome = exchange.response_outcome(parts.status.as_u16(), Instant::now());
    let switching = parts.status == StatusCode::SWITCHING_PROTOCOLS;
    headers::strip_hop_by_hop(&mut parts.headers, switching);
    // The route's edits, then those of the backend that answered.
    exchange.route.response_edits.apply(&mut parts.headers);
    exchange.backend.response_edits.apply(&mut parts.headers);

    let grpc = parts
        .headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    let pending = if !grpc {
        exchange.record(&outcome);
        None
    } else if let Some(code) = parts.headers.get(&GRPC_STATUS) {
        // Trailers-only gRPC answer: the status is already here.
        outcome.grpc_fault = grpc_status_is_fault(code.as_bytes());
        exchange.record(&outcome);
        None
    } else {
        Some(PendingGrpc {
            stats: exchange.backend.stats.clone(),
            outcome,
        })
    };
    let body = UpstreamBody::new(incoming, release, pending, logged, pair);
    Response::from_parts(parts, ResponseBody::Upstream(body))
}
