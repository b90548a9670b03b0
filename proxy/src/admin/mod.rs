//! The admin listener: /metrics for scrapers, /live and /ready for probes, /routes for people;
//! the control plane's endpoints behind them. Every request passes `guard` first.

pub mod guard;

use std::convert::Infallible;
use std::sync::Arc;

use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::json;
use tokio::net::TcpListener;

use crate::forward::body::ResponseBody;
use crate::listen::Shutdown;
use crate::plane::DataPlane;
use crate::table::RouteTable;
use crate::table_spec::{
    BackendSpec, PathMatch, PortMatch, RouteSpec, StickySpec, ValueMatch, STABLE,
};

/// A request the data plane's admin does not know, handed to the control plane.
pub struct AdminRequest {
    pub method: Method,
    /// Path and query, e.g. `/rollout/promote?full=true`.
    pub target: String,
    pub headers: http::HeaderMap,
    pub peer: std::net::SocketAddr,
}

/// An answer: status and a JSON (or text) body.
pub struct AdminResponse {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub body: String,
}

pub type AdminFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<AdminResponse>> + Send>>;

/// Extra admin endpoints (the rollout API lives in the control plane). None = 404.
pub trait AdminExtension: Send + Sync + 'static {
    fn handle(&self, request: AdminRequest) -> AdminFuture;

    /// Extra facts for `/ready` (e.g. how stale a Kubernetes source is). They never make weir
    /// unready: a good table keeps serving whatever its source is doing.
    fn ready_detail(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Largest admin request head.
const MAX_HEAD: usize = 16 * 1024;

pub async fn serve_admin(
    listener: TcpListener,
    plane: Arc<DataPlane>,
    extension: Option<Arc<dyn AdminExtension>>,
    mut shutdown: Shutdown,
) {
    let loopback = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Admin requests are small: a head past this is refused by hyper (431).
    builder.http1().max_buf_size(MAX_HEAD);
    builder
        .http2()
        .max_header_list_size(MAX_HEAD as u32)
        .max_concurrent_streams(64);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    tracing::warn!(error = %err, "admin accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.wait() => return,
        };
        let plane = plane.clone();
        let extension = extension.clone();
        let conn = builder
            .serve_connection(
                TokioIo::new(tcp),
                service_fn(move |req| {
                    let plane = plane.clone();
                    let extension = extension.clone();
                    async move {
                        let resp = match guard::check(req.method(), req.headers(), loopback) {
                            Ok(()) => route(&plane, extension.as_deref(), peer, req).await,
                            Err(refused) => {
                                tracing::warn!(
                                    %peer,
                                    method = %req.method(),
                                    path = req.uri().path(),
                                    reason = refused.reason,
                                    "admin request refused"
                                );
                                let body = json!({"error": refused.reason});
                                reply(refused.status, "application/json", format!("{body}\n"))
                            }
                        };
                        Ok::<_, Infallible>(resp)
                    }
                }),
            )
            .into_owned();
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}

async fn route(
    plane: &DataPlane,
    extension: Option<&dyn AdminExtension>,
    peer: std::net::SocketAddr,
    req: Request<Incoming>,
) -> Response<ResponseBody> {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => {
            let accept = req.headers().get(ACCEPT).and_then(|v| v.to_str().ok());
            let format = crate::stats::negotiate(accept);
            // The split carried out, as of this scrape.
            for route in plane.table.load().routes() {
                let observed = route.observed(OBSERVED_WINDOW);
                let total: u64 = observed.iter().sum();
                for (backend, n) in route.backends.iter().zip(&observed) {
                    let share = if total == 0 {
                        0.0
                    } else {
                        *n as f64 / total as f64
                    };
                    plane
                        .metrics
                        .set_observed_share(&route.name, &backend.name, share);
                }
            }
            let text = plane.metrics.encode(format);
            reply(StatusCode::OK, crate::stats::content_type(format), text)
        }
        (&Method::GET, "/live") => reply(StatusCode::OK, "text/plain", "live\n".into()),
        (&Method::GET, "/ready") => {
            let table = plane.table.load();
            let detail = extension.and_then(|e| e.ready_detail());
            if table.generation() > 0 {
                let mut body = json!({"ready": true, "generation": table.generation()});
                if let Some(detail) = detail {
                    body["detail"] = detail;
                }
                reply(StatusCode::OK, "application/json", body.to_string())
            } else {
                let body = json!({"ready": false, "reason": "no routing table loaded yet"});
                reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "application/json",
                    body.to_string(),
                )
            }
        }
        (&Method::GET, "/routes") => {
            let body = routes_json(&plane.table.load());
            reply(StatusCode::OK, "application/json", format!("{body:#}\n"))
        }
        (_, "/metrics" | "/live" | "/ready" | "/routes") => reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "only GET here\n".into(),
        ),
        _ => {
            let request = AdminRequest {
                method: req.method().clone(),
                target: req
                    .uri()
                    .path_and_query()
                    .map_or_else(|| req.uri().path().to_string(), |pq| pq.to_string()),
                headers: req.headers().clone(),
                peer,
            };
            let answer = match extension {
                Some(ext) => ext.handle(request).await,
                None => None,
            };
            match answer {
                Some(a) => reply(a.status, a.content_type, a.body),
                None => reply(
                    StatusCode::NOT_FOUND,
                    "text/plain",
                    "not found: try /metrics /live /ready /routes\n".into(),
                ),
            }
        }
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::text(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// How far back the observed split looks (the live windows keep 60 s).
const OBSERVED_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

/// The table in force, in user-facing units (percent, durations in seconds), with the split
/// observed over the last 60 s beside the weights — so that a weight a controller wrote can be
/// checked as carried out.
pub fn routes_json(table: &RouteTable) -> serde_json::Value {
    let routes: Vec<_> = table
        .routes()
        .iter()
        .map(|route| {
            let mut v = route_json(&route.spec);
            let observed = route.observed(OBSERVED_WINDOW);
            let total: u64 = observed.iter().sum();
            let share = |n: u64| {
                if total == 0 {
                    serde_json::Value::Null
                } else {
                    json!(n as f64 * 100.0 / total as f64)
                }
            };
            if let Some(backends) = v["backends"].as_array_mut() {
                for (b, n) in backends.iter_mut().zip(&observed) {
                    b["observed_requests"] = json!(n);
                    b["observed_share"] = share(*n);
                }
            }
            v["observed"] = json!({"window_seconds": OBSERVED_WINDOW.as_secs(), "requests": total});
            v
        })
        .collect();
    json!({"generation": table.generation(), "routes": routes})
}

fn route_json(r: &RouteSpec) -> serde_json::Value {
    let rules = |ms: &[crate::table_spec::HeaderMatchSpec]| -> Vec<serde_json::Value> {
        ms.iter()
            .map(|m| match &m.value {
                ValueMatch::Exact(v) => json!({"name": m.name, "exact": v}),
                ValueMatch::Prefix(v) => json!({"name": m.name, "prefix": v}),
                ValueMatch::Regex(v) => json!({"name": m.name, "regex": v}),
            })
            .collect()
    };
    let first = r.matches.first();
    let total: u64 = r.backends.iter().map(|b| u64::from(b.weight)).sum();
    json!({
        "name": r.name,
        // The first match, in the config file's shape; every match is under `matches`.
        "match": {
            "hosts": r.hosts,
            "path_prefix": first.and_then(|m| match &m.path {
                PathMatch::Prefix(p) => Some(p),
                _ => None,
            }),
            "headers": first.map(|m| rules(&m.headers)),
        },
        "matches": r.matches.iter().map(|m| json!({
            "path": match &m.path {
                PathMatch::Prefix(p) => json!({"prefix": p}),
                PathMatch::Exact(p) => json!({"exact": p}),
                PathMatch::Regex(p) => json!({"regex": p}),
            },
            "method": m.method,
            "headers": rules(&m.headers),
            "query": m.query.iter().map(|q| {
                let mut v = value_json(&q.value);
                v["name"] = json!(q.name);
                v
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "stable": r.backend(STABLE).map(backend_json),
        "canary": r.canary().map(backend_json),
        "canary_weight": r.canary_weight_bp() as f64 / 100.0,
        "backends": r.backends.iter().map(|b| {
            let mut v = backend_json(&b.spec);
            v["name"] = json!(b.name);
            v["weight"] = json!(b.weight);
            // The share of requests it is given, in percent of the route's.
            v["share"] = json!(if total == 0 { 0.0 } else { b.weight as f64 * 100.0 / total as f64 });
            v
        }).collect::<Vec<_>>(),
        "header_routes": r.header_routes.iter().map(|h| json!({
            "name": h.name,
            "match": rules(&h.matches),
            "backend": h.target.backend(),
        })).collect::<Vec<_>>(),
        "sticky": r.sticky.as_ref().map(|s| match s {
            StickySpec::Cookie(c) => json!({"cookie": c}),
            StickySpec::Header(h) => json!({"header": h}),
        }),
        "mirror": r.mirror.as_ref().map(|m| json!({
            "name": m.name, "to": m.to, "percent": m.percent_bp as f64 / 100.0,
            "match": rules(&m.matches),
            "rules": m.rules.iter().map(|rule| json!({
                "method": rule.method.as_ref().map(value_json),
                "path": rule.path.as_ref().map(value_json),
                "headers": rules(&rule.headers),
            })).collect::<Vec<_>>(),
        })),
        "timeout_seconds": r.timeout.map(|t| t.as_secs_f64()),
        "redirect": r.redirect.as_ref().map(|d| json!({
            "scheme": d.scheme, "hostname": d.hostname, "port": d.port,
            "path": d.path.as_ref().map(path_json), "status": d.status,
            "listener_port": d.listener_port,
        })),
        "rewrite": r.rewrite.as_ref().map(|w| json!({
            "hostname": w.hostname, "path": w.path.as_ref().map(path_json),
        })),
        "origin": r.origin.as_ref().map(|o| json!({
            "kind": o.kind, "namespace": o.namespace, "name": o.name, "generation": o.generation,
        })),
        // The request ports a GAMMA route serves: null for any (every other route).
        "ports": match &r.ports {
            PortMatch::Any => json!(null),
            PortMatch::Only(p) => json!({"only": p}),
            PortMatch::Except(p) => json!({"except": p}),
        },
    })
}

fn path_json(p: &crate::table_spec::PathModifier) -> serde_json::Value {
    match p {
        crate::table_spec::PathModifier::ReplaceFullPath(v) => json!({"replace_full_path": v}),
        crate::table_spec::PathModifier::ReplacePrefixMatch(v) => {
            json!({"replace_prefix_match": v})
        }
    }
}

fn value_json(v: &ValueMatch) -> serde_json::Value {
    match v {
        ValueMatch::Exact(v) => json!({"exact": v}),
        ValueMatch::Prefix(v) => json!({"prefix": v}),
        ValueMatch::Regex(v) => json!({"regex": v}),
    }
}

fn backend_json(b: &BackendSpec) -> serde_json::Value {
    json!({
        "addresses": b.addresses,
        "balance": match b.balance {
            crate::table_spec::Balance::RoundRobin => "round_robin",
            crate::table_spec::Balance::LeastRequest => "least_request",
        },
        "protocol": match b.protocol {
            crate::table_spec::UpstreamProtocol::Http1 => "http1",
            crate::table_spec::UpstreamProtocol::Http2 => "http2",
        },
        "tls": b.tls.is_some(),
    })
}
