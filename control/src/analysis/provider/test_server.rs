//! A fake HTTP server on 127.0.0.1 for provider tests: real sockets, canned answers.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// What the server saw of a request.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

pub struct FakeServer {
    pub base: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

/// Serves `answer(&seen) -> (status, body)` until the test's runtime ends.
pub async fn serve<F>(answer: F) -> FakeServer
where
    F: Fn(&Seen) -> (u16, String) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let answer = Arc::new(answer);
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let answer = Arc::clone(&answer);
            let log = Arc::clone(&log);
            let service = service_fn(move |request: Request<Incoming>| {
                let answer = Arc::clone(&answer);
                let log = Arc::clone(&log);
                async move {
                    let (parts, body) = request.into_parts();
                    let body = body
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    let seen = Seen {
                        method: parts.method.to_string(),
                        target: parts.uri.to_string(),
                        headers: parts
                            .headers
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                            .collect(),
                        body: String::from_utf8_lossy(&body).into_owned(),
                    };
                    let (status, text) = answer(&seen);
                    log.lock().unwrap().push(seen);
                    let response = Response::builder()
                        .status(status)
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from(text)))
                        .unwrap();
                    Ok::<_, Infallible>(response)
                }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    FakeServer { base, seen }
}

impl FakeServer {
    pub fn last(&self) -> Seen {
        self.seen
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }
}
