//! The demo's load generator: a few keep-alive clients at a steady total rate.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

const CLIENTS: u32 = 8;

/// Runs until aborted, each request for `host`; a client that loses its connection opens a
/// new one.
pub async fn generate(proxy: SocketAddr, rate: u32, host: &'static str) {
    let per_client = (rate / CLIENTS).max(1);
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(tokio::spawn(client(proxy, per_client, host)));
    }
    for c in clients {
        let _ = c.await;
    }
}

async fn client(proxy: SocketAddr, rate: u32, host: &'static str) {
    let mut tick = tokio::time::interval(Duration::from_secs(1) / rate);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let Ok(tcp) = tokio::net::TcpStream::connect(proxy).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let Ok((mut sender, conn)) = http1::handshake::<_, Empty<Bytes>>(TokioIo::new(tcp)).await
        else {
            continue;
        };
        tokio::spawn(conn);
        loop {
            tick.tick().await;
            if sender.ready().await.is_err() {
                break;
            }
            let Ok(req) = http::Request::get("/")
                .header("host", host)
                .body(Empty::new())
            else {
                return;
            };
            match sender.send_request(req).await {
                Ok(resp) => {
                    let _ = resp.into_body().collect().await;
                }
                Err(_) => break,
            }
        }
    }
}
