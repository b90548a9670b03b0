//! The demo's built-in upstreams: tiny HTTP servers that answer with their own name.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::Response;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

/// Binds 127.0.0.1 on a free port and answers every request with `name`.
pub async fn start(name: &'static str) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let service = service_fn(move |_req| async move {
                    let mut resp =
                        Response::new(Full::new(Bytes::from(format!("hello from {name}\n"))));
                    resp.headers_mut()
                        .insert("x-backend", http::HeaderValue::from_static(name));
                    Ok::<_, Infallible>(resp)
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    Ok(address)
}
