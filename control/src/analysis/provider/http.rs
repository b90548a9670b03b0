//! A one-shot HTTP/1.1 client for the providers: one connection per measurement.
//!
//! Measurements are seconds apart, so pooling would buy nothing; a fresh connection also means
//! a restarted Prometheus or a changed DNS answer is picked up without any bookkeeping.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, HOST, USER_AGENT};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Answers larger than this are refused: a metric is a few numbers, not a dump.
const MAX_BODY: usize = 16 * 1024 * 1024;

pub struct Call<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub body: Option<&'a str>,
    pub timeout: Duration,
}

#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Bytes,
}

/// Sends one request and reads the whole answer, all within `call.timeout`.
pub async fn send(call: &Call<'_>) -> Result<Answer, String> {
    let what = format!("{} {}", call.method, call.url);
    match tokio::time::timeout(call.timeout, exchange(call)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {:?}", call.timeout)),
    }
}

async fn exchange(call: &Call<'_>) -> Result<Answer, String> {
    let uri: Uri = call.url.parse().map_err(|e| format!("invalid URL: {e}"))?;
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err("URL must start with http:// or https://".into()),
    };
    let authority = uri.authority().ok_or("URL has no host")?.clone();
    // `host()` keeps an IPv6 literal's brackets; connecting wants it bare.
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });

    let request = build_request(call, &uri, authority.as_str())?;
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
    // Small requests: do not wait for Nagle.
    let _ = tcp.set_nodelay(true);
    if https {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| format!("invalid TLS server name {host:?}: {e}"))?;
        let tls = TlsConnector::from(tls_config()?)
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS handshake with {authority} failed: {e}"))?;
        over(tls, request).await
    } else {
        over(tcp, request).await
    }
}

fn build_request(
    call: &Call<'_>,
    uri: &Uri,
    authority: &str,
) -> Result<Request<Full<Bytes>>, String> {
    let method = Method::from_bytes(call.method.to_ascii_uppercase().as_bytes())
        .map_err(|_| format!("invalid method {:?}", call.method))?;
    let target = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = Request::builder()
        .method(method)
        .uri(target)
        .header(HOST, authority)
        .header(USER_AGENT, concat!("weir/", env!("CARGO_PKG_VERSION")))
        .body(Full::new(Bytes::from(
            call.body.unwrap_or_default().to_owned(),
        )))
        .map_err(|e| format!("cannot build request: {e}"))?;
    for (name, value) in call.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid header name {name:?}"))?;
        // The value may be a secret: name the header, never echo the value.
        let value =
            HeaderValue::from_str(value).map_err(|_| format!("invalid value for header {name}"))?;
        request.headers_mut().insert(name, value);
    }
    Ok(request)
}

async fn over<IO>(io: IO, request: Request<Full<Bytes>>) -> Result<Answer, String>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    // The connection task ends by itself once the answer is read and `sender` is dropped.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    let status = response.status();
    let body = Limited::new(response.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| format!("reading the answer failed: {e}"))?
        .to_bytes();
    Ok(Answer { status, body })
}

/// Verifies servers against the system's roots, read once (reading them costs milliseconds).
fn tls_config() -> Result<Arc<ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            for err in &found.errors {
                tracing::warn!(error = %err, "could not read some system CA certificates");
            }
            roots.add_parsable_certificates(found.certs);
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("TLS setup: {e}"))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        })
        .clone()
}

/// Percent-encodes a query parameter value (RFC 3986 unreserved characters stay as they are).
pub fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3 / 2);
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The start of a body for an error message: bodies can be whole HTML pages.
pub fn snippet(body: &[u8]) -> String {
    const LIMIT: usize = 200;
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.chars().count() > LIMIT {
        format!("{}…", text.chars().take(LIMIT).collect::<String>())
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_promql() {
        assert_eq!(
            encode_query_value("sum(rate(x{a=\"b\"}[5m])) / 2"),
            "sum%28rate%28x%7Ba%3D%22b%22%7D%5B5m%5D%29%29%20%2F%202"
        );
    }

    #[tokio::test]
    async fn refuses_other_schemes_and_names_the_url() {
        let call = Call {
            method: "GET",
            url: "ftp://example.com/x",
            headers: &[],
            body: None,
            timeout: Duration::from_secs(1),
        };
        let err = send(&call).await.unwrap_err();
        assert!(err.starts_with("GET ftp://example.com/x: "), "{err}");
    }

    #[tokio::test]
    async fn connection_refused_is_an_error() {
        // Bind then drop to find a port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let url = format!("http://127.0.0.1:{port}/");
        let call = Call {
            method: "GET",
            url: &url,
            headers: &[],
            body: None,
            timeout: Duration::from_secs(5),
        };
        let err = send(&call).await.unwrap_err();
        assert!(err.contains("cannot connect"), "{err}");
    }
}
