//! Requests as the suite makes them and judges them (`utils_http_http.go`:
//! `ExpectedResponse`, `MakeRequest`, `CompareRoundTrip`, `AwaitConvergence`;
//! `utils_roundtripper_roundtripper.go`: `CaptureRoundTrip`).
//!
//! One connection per request (the suite's transport disables keep-alive), `X-Echo-Set-Header`
//! always sent, the body read as a captured request only when it is `application/json`, a
//! redirect's `Location` resolved against the request URL. The request URL is the Gateway's
//! address with its listener's port (80 implied for `http`, so no port in Host); the socket is
//! weir's, which listens on an ephemeral loopback port where a cluster's would be on 80.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::net::TcpStream;

/// The suite's consistency rule, bounded: this many successes in a row (the suite's
/// `RequiredConsecutiveSuccesses`), within this time (its `MaxTimeToConsistency`), waiting
/// this long after a failure (its `DefaultPollInterval`). The suite's config.go is not among
/// the fixtures; these are its defaults as far as this harness knows them, the poll shortened.
pub const CONSECUTIVE_SUCCESSES: usize = 3;
pub const MAX_TIME_TO_CONSISTENCY: Duration = Duration::from_secs(30);
pub const POLL: Duration = Duration::from_millis(100);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Where requests go: the URL's host (the Gateway's address) and weir's socket.
#[derive(Clone, Debug)]
pub struct GwAddr {
    pub url_host: String,
    pub socket: SocketAddr,
}

#[derive(Clone, Debug, Default)]
pub struct Req {
    pub host: String,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// HTTP/2 with prior knowledge (the suite's `H2CPriorKnowledgeProtocol`), else HTTP/1.1.
    pub h2c: bool,
    /// Over TLS (`MakeTLSRequestAndExpectEventuallyConsistentResponse`): the server name sent
    /// (SNI) and the certificate the server's must be (the Secret's, as the suite trusts it).
    pub tls: Option<(String, Vec<u8>)>,
}

#[derive(Clone, Debug, Default)]
pub struct Redirect {
    pub scheme: String,
    pub host: String,
    pub port: String,
    pub path: String,
}

/// One `http.ExpectedResponse`, built with the methods below.
#[derive(Clone, Debug, Default)]
pub struct Expected {
    pub request: Req,
    /// `ExpectedRequest`: the request the backend must see (the request made, when None).
    pub expected_request: Option<Req>,
    pub expected_absent: Vec<String>,
    pub redirect: Option<Redirect>,
    pub backend_set_response_headers: Vec<(String, String)>,
    pub status_codes: Vec<u16>,
    pub response_headers: Vec<(String, String)>,
    pub response_absent: Vec<String>,
    pub backend: String,
    pub namespace: String,
    /// `MirroredTo`: (Deployment, namespace, percent).
    pub mirrored_to: Vec<(String, String, Option<u32>)>,
    /// The protocol the backend must have been spoken to in (`HTTP/2.0`), when it matters.
    pub backend_proto: Option<String>,
}

/// A request for `path` (GET unless `method` says otherwise).
pub fn request(path: &str) -> Expected {
    Expected {
        request: Req {
            path: path.into(),
            ..Req::default()
        },
        ..Expected::default()
    }
}

impl Expected {
    pub fn host(mut self, host: &str) -> Self {
        self.request.host = host.into();
        self
    }
    pub fn method(mut self, method: &str) -> Self {
        self.request.method = method.into();
        self
    }
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.request.headers.push((name.into(), value.into()));
        self
    }
    /// `Backend` and `Namespace`.
    pub fn backend(mut self, backend: &str, namespace: &str) -> Self {
        self.backend = backend.into();
        self.namespace = namespace.into();
        self
    }
    /// `Namespace` alone.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = namespace.into();
        self
    }
    pub fn status(mut self, code: u16) -> Self {
        self.status_codes.push(code);
        self
    }
    fn expected_request_mut(&mut self) -> &mut Req {
        self.expected_request.get_or_insert_with(Req::default)
    }
    pub fn expect_path(mut self, path: &str) -> Self {
        self.expected_request_mut().path = path.into();
        self
    }
    pub fn expect_host(mut self, host: &str) -> Self {
        self.expected_request_mut().host = host.into();
        self
    }
    pub fn expect_header(mut self, name: &str, value: &str) -> Self {
        self.expected_request_mut()
            .headers
            .push((name.into(), value.into()));
        self
    }
    pub fn expect_absent(mut self, name: &str) -> Self {
        self.expected_request_mut();
        self.expected_absent.push(name.into());
        self
    }
    pub fn backend_sets(mut self, name: &str, value: &str) -> Self {
        self.backend_set_response_headers
            .push((name.into(), value.into()));
        self
    }
    pub fn response_header(mut self, name: &str, value: &str) -> Self {
        self.response_headers.push((name.into(), value.into()));
        self
    }
    pub fn response_absent(mut self, name: &str) -> Self {
        self.response_absent.push(name.into());
        self
    }
    /// Sent over TLS with `server_name` (SNI), trusting only `cert_pem`.
    pub fn tls(mut self, server_name: &str, cert_pem: &[u8]) -> Self {
        self.request.tls = Some((server_name.into(), cert_pem.to_vec()));
        self
    }

    /// Sent as HTTP/2 with prior knowledge.
    pub fn h2c_prior_knowledge(mut self) -> Self {
        self.request.h2c = true;
        self
    }

    /// The backend must say it was spoken to in `proto` (the echo's `proto`, Go's spelling).
    pub fn backend_proto(mut self, proto: &str) -> Self {
        self.backend_proto = Some(proto.into());
        self
    }

    pub fn redirect(mut self, r: Redirect) -> Self {
        self.redirect = Some(r);
        self
    }
    pub fn mirrored_to(mut self, deployment: &str, namespace: &str, percent: Option<u32>) -> Self {
        self.mirrored_to
            .push((deployment.into(), namespace.into(), percent));
        self
    }

    /// `AddRequestIDQueryParam`: a unique query parameter on the request and expected path,
    /// so that an echo server's log entry is this request's.
    pub fn with_request_id(mut self, id: &str) -> Self {
        let add = |p: &str| {
            let sep = if p.contains('?') { '&' } else { '?' };
            format!("{p}{sep}gateway-api-conformance-request-id={id}")
        };
        if let Some(e) = self.expected_request.as_mut() {
            e.path = if e.path.is_empty() {
                add(&self.request.path)
            } else {
                add(&e.path)
            };
        }
        self.request.path = add(&self.request.path);
        self
    }

    /// `MakeRequest`'s defaults: GET, status 200.
    fn normalised(mut self) -> Self {
        if self.request.method.is_empty() {
            self.request.method = "GET".into();
        }
        if self.status_codes.is_empty() {
            self.status_codes.push(200);
        }
        self
    }
}

/// `CapturedRequest`: what the echo server said it received (empty unless JSON came back).
#[derive(Debug, Default)]
pub struct Captured {
    pub path: String,
    pub host: String,
    pub method: String,
    pub headers: Vec<(String, Vec<String>)>,
    pub namespace: String,
    pub pod: String,
    pub proto: String,
}

#[derive(Debug)]
pub struct CapturedResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub redirect: Option<Redirect>,
}

/// A TLS client connection naming `server_name` (SNI), trusting only the certificate
/// `cert_pem`, as the suite's TLS round tripper trusts the Secret's.
async fn tls_connect(
    tcp: TcpStream,
    server_name: &str,
    cert_pem: &[u8],
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::CertificateDer::pem_slice_iter(cert_pem) {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from(server_name.to_string())
        .map_err(|e| e.to_string())?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake for {server_name}: {e}"))
}

/// One request on a new connection, as `CaptureRoundTrip` makes it.
pub async fn capture(gw: GwAddr, e: &Expected) -> Result<(Captured, CapturedResponse), String> {
    let e = e.clone().normalised();
    let host = if e.request.host.is_empty() {
        gw.url_host.clone()
    } else {
        e.request.host.clone()
    };
    // HTTP/2 carries the host as :authority, from an absolute URI.
    let mut b = if e.request.h2c {
        Request::builder()
            .method(e.request.method.as_str())
            .uri(format!("http://{host}{}", e.request.path))
    } else {
        Request::builder()
            .method(e.request.method.as_str())
            .uri(e.request.path.as_str())
            .header("host", host)
    };
    for (k, v) in &e.request.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    let set: Vec<String> = e
        .backend_set_response_headers
        .iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect();
    b = b.header("x-echo-set-header", set.join(","));
    let req = b.body(Full::new(Bytes::new())).map_err(|e| e.to_string())?;
    let exchange = async {
        let tcp = TcpStream::connect(gw.socket)
            .await
            .map_err(|e| e.to_string())?;
        let resp = if e.request.h2c {
            let (mut sender, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                    .await
                    .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            sender.send_request(req).await.map_err(|e| e.to_string())?
        } else if let Some((name, cert_pem)) = &e.request.tls {
            let tls = tls_connect(tcp, name, cert_pem).await?;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            sender.send_request(req).await.map_err(|e| e.to_string())?
        } else {
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            sender.send_request(req).await.map_err(|e| e.to_string())?
        };
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok::<_, String>((parts, body))
    };
    let (parts, body) = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
        .await
        .map_err(|_| "request timed out".to_string())??;
    let mut captured = Captured::default();
    if parts
        .headers
        .get("content-type")
        .is_some_and(|v| v == "application/json")
    {
        let v: Value =
            serde_json::from_slice(&body).map_err(|err| format!("reading response: {err}"))?;
        let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
        captured = Captured {
            path: s("path"),
            host: s("host"),
            method: s("method"),
            namespace: s("namespace"),
            pod: s("pod"),
            proto: s("proto"),
            headers: v["headers"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, vs)| {
                            let vs = vs.as_array().cloned().unwrap_or_default();
                            let vs = vs.iter().filter_map(|x| x.as_str().map(String::from));
                            (k.clone(), vs.collect())
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
    } else {
        // As the suite: "assume it made the right request if the service isn't echoing".
        captured.method = e.request.method.clone();
    }
    let status = parts.status.as_u16();
    let redirect = if is_redirect(status) {
        let location = parts
            .headers
            .get("location")
            .ok_or("a redirect without Location")?
            .to_str()
            .map_err(|e| e.to_string())?
            .to_string();
        Some(resolve_location(&location, &gw))
    } else {
        None
    };
    Ok((
        captured,
        CapturedResponse {
            status,
            headers: parts.headers,
            redirect,
        },
    ))
}

fn is_redirect(code: u16) -> bool {
    matches!(code, 300 | 301 | 302 | 303 | 304 | 305 | 307 | 308)
}

fn is_timeout(code: u16) -> bool {
    matches!(code, 408 | 504)
}

/// Go's `resp.Location()` split as the round tripper splits it: an absolute URL's parts, or
/// a reference resolved against the request URL (`http://GATEWAY`, port 80 implied).
fn resolve_location(location: &str, gw: &GwAddr) -> Redirect {
    let Some((scheme, rest)) = location.split_once("://") else {
        let path = location.split(['?', '#']).next().unwrap_or("").to_string();
        return Redirect {
            scheme: "http".into(),
            host: gw.url_host.clone(),
            port: String::new(),
            path,
        };
    };
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let path = path.split(['?', '#']).next().unwrap_or("").to_string();
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => (h, p),
        _ => (authority, ""),
    };
    Redirect {
        scheme: scheme.into(),
        host: host.trim_start_matches('[').trim_end_matches(']').into(),
        port: port.into(),
        path,
    }
}

fn header_values(headers: &HeaderMap, name: &str) -> Option<String> {
    let all: Vec<String> = headers
        .get_all(name.to_ascii_lowercase().as_str())
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    (!all.is_empty()).then(|| all.join(","))
}

fn captured_values(c: &Captured, name: &str) -> Option<String> {
    c.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.join(","))
}

/// `CompareRoundTrip`, check for check.
pub fn compare(e: &Expected, c: &Captured, r: &CapturedResponse) -> Result<(), String> {
    let e = e.clone().normalised();
    if is_timeout(r.status) && e.status_codes.iter().any(|&s| is_timeout(s)) {
        return Ok(());
    }
    if !e.status_codes.contains(&r.status) {
        return Err(format!(
            "expected status code to be one of {:?}, got {}",
            e.status_codes, r.status
        ));
    }
    if r.status == 200 || r.status == 204 {
        let mut want = e.expected_request.clone().unwrap_or(e.request.clone());
        if want.method.is_empty() {
            want.method = "GET".into();
        }
        if !want.host.is_empty() && want.host != c.host {
            return Err(format!("expected host {}, got {}", want.host, c.host));
        }
        if want.path != c.path {
            return Err(format!("expected path {}, got {}", want.path, c.path));
        }
        if want.method != c.method {
            return Err(format!("expected method {}, got {}", want.method, c.method));
        }
        if let Some(proto) = e.backend_proto.as_ref().filter(|p| **p != c.proto) {
            return Err(format!(
                "expected the backend spoken to in {proto}, got {}",
                c.proto
            ));
        }
        if e.namespace != c.namespace {
            return Err(format!(
                "expected namespace {}, got {}",
                e.namespace, c.namespace
            ));
        }
        for (name, value) in &want.headers {
            match captured_values(c, name) {
                None => return Err(format!("expected {name} header to be set: {:?}", c.headers)),
                Some(got) if got != *value => {
                    return Err(format!("expected {name} header {value}, got {got}"))
                }
                _ => {}
            }
        }
        for (name, value) in &e.response_headers {
            match header_values(&r.headers, name) {
                None => return Err(format!("expected response {name}: {:?}", r.headers)),
                Some(got) if got != *value => {
                    return Err(format!("expected response {name} {value}, got {got}"))
                }
                _ => {}
            }
        }
        for name in &e.response_absent {
            if let Some(got) = header_values(&r.headers, name) {
                return Err(format!("expected response {name} absent, got {got}"));
            }
        }
        for name in &e.expected_absent {
            if let Some(got) = captured_values(c, name) {
                return Err(format!("expected {name} absent upstream, got {got}"));
            }
        }
        if !c.pod.starts_with(&e.backend) {
            return Err(format!(
                "expected pod name to start with {}, got {}",
                e.backend, c.pod
            ));
        }
    } else if let (Some(want), Some(got)) = (&e.redirect, &r.redirect) {
        let path = e.request.path.split('?').next().unwrap_or("");
        let want_host = if want.host.is_empty() {
            &got.host
        } else {
            &want.host
        };
        let want_scheme = if want.scheme.is_empty() {
            "http"
        } else {
            &want.scheme
        };
        let want_path = if want.path.is_empty() {
            path
        } else {
            &want.path
        };
        if *want_host != got.host {
            return Err(format!(
                "expected redirected host {want_host:?}, got {:?}",
                got.host
            ));
        }
        if want.port.is_empty() {
            let scheme = got.scheme.to_ascii_lowercase();
            if scheme == "http" && !["80", ""].contains(&got.port.as_str()) {
                return Err(format!("http redirect to port {:?}", got.port));
            }
            if scheme == "https" && !["443", ""].contains(&got.port.as_str()) {
                return Err(format!("https redirect to port {:?}", got.port));
            }
        } else if want.port != got.port {
            return Err(format!(
                "expected redirected port {:?}, got {:?}",
                want.port, got.port
            ));
        }
        if want_scheme != got.scheme {
            return Err(format!(
                "expected redirected scheme {want_scheme:?}, got {:?}",
                got.scheme
            ));
        }
        if want_path != got.path {
            return Err(format!(
                "expected redirected path {want_path:?}, got {:?}",
                got.path
            ));
        }
    }
    Ok(())
}

/// `AwaitConvergence`: `check` must succeed `successes` times in a row before the deadline.
pub async fn await_convergence<F, Fut>(what: &str, successes: usize, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let start = Instant::now();
    let (mut in_a_row, mut attempts, mut last) = (0, 0, String::new());
    while start.elapsed() < MAX_TIME_TO_CONSISTENCY {
        attempts += 1;
        match check().await {
            Ok(()) => {
                in_a_row += 1;
                if in_a_row >= successes {
                    return;
                }
                continue;
            }
            Err(e) => {
                in_a_row = 0;
                last = e;
            }
        }
        tokio::time::sleep(POLL).await;
    }
    panic!("{what}: not consistent within {MAX_TIME_TO_CONSISTENCY:?} ({attempts} attempts); last: {last}");
}

/// `MakeRequestAndExpectEventuallyConsistentResponse`.
pub async fn eventually(gw: &GwAddr, e: &Expected, successes: usize) {
    let what = format!(
        "{} {} (Host {:?}, headers {:?})",
        e.request.method, e.request.path, e.request.host, e.request.headers
    );
    await_convergence(&what, successes, || async {
        let (c, r) = capture(gw.clone(), e).await?;
        compare(e, &c, &r)
    })
    .await;
}
