//! Small HTTP clients for the tests: keep-alive HTTP/1.1, h2c, and raw sockets.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Response {
    pub fn backend(&self) -> &str {
        self.headers
            .get("x-backend")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One keep-alive HTTP/1.1 connection.
pub struct H1 {
    sender: http1::SendRequest<Full<Bytes>>,
}

impl H1 {
    pub async fn connect(addr: SocketAddr) -> H1 {
        Self::try_connect(addr).await.unwrap()
    }

    pub async fn try_connect(addr: SocketAddr) -> std::io::Result<H1> {
        let tcp = TcpStream::connect(addr).await?;
        let (sender, conn) = http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(conn);
        Ok(H1 { sender })
    }

    pub async fn send(&mut self, req: Request<Full<Bytes>>) -> Response {
        self.try_send(req).await.unwrap()
    }

    pub async fn try_send(&mut self, req: Request<Full<Bytes>>) -> Result<Response, hyper::Error> {
        self.sender.ready().await?;
        let resp = self.sender.send_request(req).await?;
        collect(resp).await
    }

    pub async fn get(&mut self, path: &str, headers: &[(&str, &str)]) -> Response {
        let mut b = Request::get(path).header("host", "test.local");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        self.send(b.body(Full::new(Bytes::new())).unwrap()).await
    }
}

pub async fn collect(
    resp: http::Response<hyper::body::Incoming>,
) -> Result<Response, hyper::Error> {
    let (parts, body) = resp.into_parts();
    let body = body.collect().await?.to_bytes();
    Ok(Response {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

/// One request on a fresh connection; returns status and body text.
pub async fn get_text(addr: SocketAddr, path: &str) -> (StatusCode, String) {
    let r = H1::connect(addr).await.get(path, &[]).await;
    (r.status, r.text())
}

/// An h2c connection (HTTP/2 with prior knowledge), sending bodies of type `B`.
pub async fn h2c<B>(addr: SocketAddr) -> http2::SendRequest<B>
where
    B: hyper::body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    h2c_watched(addr).await.0
}

/// As `h2c`, with the connection's task: it ends when the connection does (GOAWAY, close).
pub async fn h2c_watched<B>(
    addr: SocketAddr,
) -> (
    http2::SendRequest<B>,
    tokio::task::JoinHandle<hyper::Result<()>>,
)
where
    B: hyper::body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
        .await
        .unwrap();
    (sender, tokio::spawn(conn))
}

/// Writes raw bytes and reads until the peer closes or `limit` passes.
pub async fn raw(addr: SocketAddr, bytes: &[u8], limit: std::time::Duration) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(limit, tcp.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}
