//! A pod of the conformance suite's `echo-basic` image: an HTTP/1 and h2c server on the pod's own
//! loopback IP and target port, answering every request with a JSON description of it — the
//! fields the suite's round tripper reads (`utils_roundtripper_roundtripper.go`,
//! `CapturedRequest`): `path` (the request target as sent, query included), `host`, `method`,
//! `proto`, `headers` (Go's canonical names, each name's values in order, Host not among them),
//! `namespace` and `pod`. Like the image it sets the response fields listed in
//! `X-Echo-Set-Header` (`name:value,name:value`) and waits `?delay=DURATION` before answering.
//! Every request target it receives is logged, as the image's log lines are, for the mirror
//! tests to look for.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;

/// What a pod tells about itself, as the Deployment's downward API gives it to the image.
#[derive(Clone)]
pub struct Identity {
    pub pod: String,
    pub namespace: String,
}

/// A running pod: its servers stop when it is dropped.
pub struct EchoPod {
    pub identity: Identity,
    pub ip: Ipv4Addr,
    /// Every request target received, in order.
    pub log: Arc<Mutex<Vec<String>>>,
    servers: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for EchoPod {
    fn drop(&mut self) {
        for s in &self.servers {
            s.abort();
        }
    }
}

/// Binds every port first, so a taken address fails the whole pod (and the caller can pick
/// another block of addresses) before anything serves.
pub async fn start(identity: Identity, ip: Ipv4Addr, ports: &[u16]) -> std::io::Result<EchoPod> {
    let mut listeners = Vec::new();
    for &port in ports {
        listeners.push(TcpListener::bind(SocketAddr::from((ip, port))).await?);
    }
    let log = Arc::new(Mutex::new(Vec::new()));
    let servers = listeners
        .into_iter()
        .map(|listener| tokio::spawn(serve(listener, identity.clone(), log.clone())))
        .collect();
    Ok(EchoPod {
        identity,
        ip,
        log,
        servers,
    })
}

async fn serve(listener: TcpListener, identity: Identity, log: Arc<Mutex<Vec<String>>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (identity, log) = (identity.clone(), log.clone());
        tokio::spawn(async move {
            let svc = service_fn(move |req| answer(req, identity.clone(), log.clone()));
            // HTTP/1, or HTTP/2 with prior knowledge (h2c), as the image serves both.
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

async fn answer(
    req: Request<Incoming>,
    identity: Identity,
    log: Arc<Mutex<Vec<String>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    log.lock().unwrap().push(target.clone());
    if let Some(delay) = query_value(&target, "delay").and_then(|d| go_duration(&d)) {
        tokio::time::sleep(delay).await;
    }
    let mut headers = Map::new();
    for name in req.headers().keys() {
        if name == http::header::HOST {
            continue;
        }
        let values: Vec<Value> = req
            .headers()
            .get_all(name)
            .iter()
            .map(|v| json!(String::from_utf8_lossy(v.as_bytes())))
            .collect();
        headers.insert(canonical(name.as_str()), Value::Array(values));
    }
    let host = req
        .headers()
        .get(http::header::HOST)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
        .unwrap_or_default();
    let body = json!({
        "path": target,
        "host": host,
        "method": req.method().as_str(),
        "proto": format!("{:?}", req.version()),
        "headers": headers,
        "namespace": identity.namespace,
        "ingress": "",
        "service": "",
        "pod": identity.pod,
    });
    let mut resp = Response::new(Full::new(Bytes::from(body.to_string())));
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    if let Some(set) = req.headers().get("x-echo-set-header") {
        for pair in String::from_utf8_lossy(set.as_bytes()).split(',') {
            let Some((name, value)) = pair.split_once(':') else {
                continue;
            };
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.trim().as_bytes()),
                HeaderValue::from_str(value.trim()),
            ) {
                resp.headers_mut().append(n, v);
            }
        }
    }
    Ok(resp)
}

/// Go's `textproto.CanonicalMIMEHeaderKey`: each dash-separated word capitalised.
pub fn canonical(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

fn query_value(target: &str, key: &str) -> Option<String> {
    let (_, query) = target.split_once('?')?;
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_string())
}

/// The forms of Go's `time.ParseDuration` the tests use: `500ms`, `1s`, `2m`.
fn go_duration(s: &str) -> Option<Duration> {
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}
