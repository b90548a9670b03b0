//! Test upstreams: real hyper servers on 127.0.0.1 with the behaviours the tests need.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

#[derive(Clone, Default)]
pub struct Behaviour {
    /// Wait this long before answering.
    pub delay: Duration,
    /// Answer with this status (200 when None).
    pub status: Option<u16>,
    /// Put these hop-by-hop fields on every response (to check they are stripped).
    pub hop_by_hop_response: bool,
    /// Terminate TLS with this config.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// When set to N > 0, every Nth request is answered 500 (changeable while running).
    pub error_every: Option<Arc<AtomicU64>>,
    /// A gRPC call's status, in its trailers, whatever `x-grpc-status` asks.
    pub grpc_status: Option<&'static str>,
    /// Answer this status to requests for this path.
    pub status_on: Option<(&'static str, u16)>,
}

pub struct TestBackend {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicU64>,
    /// Request body bytes received, over all requests.
    pub body_bytes: Arc<AtomicU64>,
    /// Connections accepted.
    pub conns: Arc<AtomicU64>,
    kill: tokio::sync::watch::Sender<bool>,
}

impl TestBackend {
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::SeqCst)
    }

    /// As if the process died: every connection drops mid-whatever, the port refuses.
    pub fn kill(&self) {
        let _ = self.kill.send(true);
    }
}

/// Every answer carries `x-backend: NAME`; the body is a JSON echo of the request:
/// `{"backend", "method", "path", "headers": {name: [values]}, "body_len", "version"}`.
/// Special requests: `upgrade: echo` switches protocols and echoes bytes;
/// `content-type: application/grpc` answers with trailers, grpc-status from `x-grpc-status`.
pub async fn start(name: &'static str, behaviour: Behaviour) -> TestBackend {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicU64::new(0));
    let counter = hits.clone();
    let body_bytes = Arc::new(AtomicU64::new(0));
    let bytes_counter = body_bytes.clone();
    let conns = Arc::new(AtomicU64::new(0));
    let conns_counter = conns.clone();
    let (kill, killed) = tokio::sync::watch::channel(false);
    let mut accept_killed = killed.clone();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = accept_killed.wait_for(|k| *k) => return, // the listener closes
            };
            let Ok((tcp, _)) = accepted else {
                continue;
            };
            let mut conn_killed = killed.clone();
            conns_counter.fetch_add(1, Ordering::SeqCst);
            let behaviour = behaviour.clone();
            let counter = counter.clone();
            let bytes_counter = bytes_counter.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = serve_one(tcp, name, behaviour, counter, bytes_counter) => {}
                    _ = conn_killed.wait_for(|k| *k) => {} // dropped, connection and all
                }
            });
        }
    });
    TestBackend {
        addr,
        hits,
        body_bytes,
        conns,
        kill,
    }
}

async fn serve_one(
    tcp: tokio::net::TcpStream,
    name: &'static str,
    behaviour: Behaviour,
    counter: Arc<AtomicU64>,
    bytes_counter: Arc<AtomicU64>,
) {
    let tls = behaviour.tls.clone();
    let service = service_fn(move |req| {
        let nth = counter.fetch_add(1, Ordering::SeqCst) + 1;
        answer(name, behaviour.clone(), bytes_counter.clone(), nth, req)
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    match tls {
        None => {
            let _ = builder
                .serve_connection_with_upgrades(TokioIo::new(tcp), service)
                .await;
        }
        Some(config) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(config);
            if let Ok(stream) = acceptor.accept(tcp).await {
                let _ = builder
                    .serve_connection_with_upgrades(TokioIo::new(stream), service)
                    .await;
            }
        }
    }
}

type AnswerBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn answer(
    name: &'static str,
    b: Behaviour,
    bytes: Arc<AtomicU64>,
    nth: u64,
    mut req: Request<Incoming>,
) -> Result<Response<AnswerBody>, Infallible> {
    if !b.delay.is_zero() {
        tokio::time::sleep(b.delay).await;
    }
    // A per-request delay, for timeouts on one exchange of a pooled connection.
    if let Some(ms) = req
        .headers()
        .get("x-delay-ms")
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if req.headers().get("upgrade").is_some_and(|v| v == "echo") {
        let on_upgrade = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            if let Ok(upgraded) = on_upgrade.await {
                let mut io = TokioIo::new(upgraded);
                let (mut r, mut w) = tokio::io::split(&mut io);
                let _ = tokio::io::copy(&mut r, &mut w).await;
            }
        });
        let mut resp = Response::new(Full::new(Bytes::new()).boxed());
        *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        resp.headers_mut()
            .insert("upgrade", HeaderValue::from_static("echo"));
        resp.headers_mut()
            .insert("connection", HeaderValue::from_static("upgrade"));
        return Ok(resp);
    }
    let grpc = req
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    let grpc_status = match b.grpc_status {
        Some(code) => HeaderValue::from_static(code),
        None => req
            .headers()
            .get("x-grpc-status")
            .cloned()
            .unwrap_or(HeaderValue::from_static("0")),
    };
    // A response body of this many bytes instead of the echo (flow-control tests).
    let body_bytes = req
        .headers()
        .get("x-body-bytes")
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let status_here = b
        .status_on
        .and_then(|(path, status)| (req.uri().path() == path).then_some(status));
    let echo = echo_json(name, &req);
    let body_len = req
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes().len())
        .unwrap_or(0);
    bytes.fetch_add(body_len as u64, Ordering::SeqCst);
    let mut echo = echo;
    echo["body_len"] = body_len.into();
    let text = match body_bytes {
        Some(n) => Bytes::from(vec![b'z'; n]),
        None => Bytes::from(echo.to_string()),
    };
    let body = if grpc {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", grpc_status);
        Full::new(text)
            .with_trailers(async move { Some(Ok(trailers)) })
            .boxed()
    } else {
        Full::new(text).boxed()
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(status_here.or(b.status).unwrap_or(200)).unwrap();
    if let Some(every) = &b.error_every {
        let n = every.load(Ordering::SeqCst);
        if n > 0 && nth.is_multiple_of(n) {
            *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        }
    }
    resp.headers_mut()
        .insert("x-backend", HeaderValue::from_static(name));
    if grpc {
        resp.headers_mut()
            .insert("content-type", HeaderValue::from_static("application/grpc"));
    }
    if b.hop_by_hop_response {
        let h = resp.headers_mut();
        h.insert("connection", HeaderValue::from_static("x-upstream-private"));
        h.insert("x-upstream-private", HeaderValue::from_static("secret"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert("proxy-connection", HeaderValue::from_static("keep-alive"));
    }
    Ok(resp)
}

fn echo_json(name: &str, req: &Request<Incoming>) -> serde_json::Value {
    let mut headers = serde_json::Map::new();
    for (k, v) in req.headers() {
        let entry = headers
            .entry(k.as_str().to_string())
            .or_insert_with(|| serde_json::Value::Array(vec![]));
        if let serde_json::Value::Array(list) = entry {
            list.push(String::from_utf8_lossy(v.as_bytes()).into_owned().into());
        }
    }
    serde_json::json!({
        "backend": name,
        "method": req.method().as_str(),
        "path": req.uri().path(),
        "version": format!("{:?}", req.version()),
        "headers": headers,
    })
}

/// An address where nothing listens (bound, then released).
pub async fn dead_address() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    addr
}
