//! The demo's built-in upstreams: tiny HTTP servers with a failure rate and a latency tail,
//! so that a regression is something the analysis can see.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

#[derive(Clone, Copy, Debug)]
pub struct Behaviour {
    /// Share of requests answered 500.
    pub error_rate: f64,
    /// Every request takes this long…
    pub base_latency: Duration,
    /// …and this share of them `tail_latency` more.
    pub tail_rate: f64,
    pub tail_latency: Duration,
}

/// A small, fast generator: the demo needs noise, not cryptography.
struct Noise(AtomicU64);

impl Noise {
    fn next(&self) -> f64 {
        let mut x = self.0.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (x ^ (x >> 31)) as f64 / u64::MAX as f64
    }
}

/// What a backend answered: users' requests, and mirrored copies (`x-weir-mirror: 1`).
#[derive(Debug, Default)]
pub struct Served {
    pub clients: AtomicU64,
    pub copies: AtomicU64,
}

/// Binds 127.0.0.1 on a free port and answers as `name` with `behaviour`.
pub async fn start(
    name: &'static str,
    behaviour: Behaviour,
    seed: u64,
) -> anyhow::Result<(SocketAddr, Arc<Served>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let noise = Arc::new(Noise(AtomicU64::new(seed)));
    let served = Arc::new(Served::default());
    let counts = served.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let noise = noise.clone();
            let counts = counts.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let noise = noise.clone();
                    let copy = req.headers().contains_key("x-weir-mirror");
                    let counter = match copy {
                        true => &counts.copies,
                        false => &counts.clients,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    async move {
                        let mut delay = behaviour.base_latency;
                        if noise.next() < behaviour.tail_rate {
                            delay += behaviour.tail_latency;
                        }
                        tokio::time::sleep(delay).await;
                        let failed = noise.next() < behaviour.error_rate;
                        let mut resp =
                            Response::new(Full::new(Bytes::from(format!("hello from {name}\n"))));
                        if failed {
                            *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                        }
                        resp.headers_mut()
                            .insert("x-backend", http::HeaderValue::from_static(name));
                        Ok::<_, Infallible>(resp)
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    Ok((address, served))
}
