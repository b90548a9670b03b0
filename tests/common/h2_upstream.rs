//! An HTTP/2 (h2c) test upstream that the pool tests can steer: its
//! SETTINGS_MAX_CONCURRENT_STREAMS, a graceful GOAWAY on every open connection on demand, and a
//! relay in front of it that can go silent. Real hyper server, real sockets on 127.0.0.1.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct H2Upstream {
    pub addr: SocketAddr,
    /// Connections accepted.
    pub conns: Arc<AtomicU64>,
    /// Connections open now.
    pub open: Arc<AtomicU64>,
    /// Requests answered.
    pub calls: Arc<AtomicU64>,
    /// The most streams seen in flight at once on one connection.
    pub peak_streams: Arc<AtomicUsize>,
    goaway: tokio::sync::watch::Sender<u64>,
}

impl H2Upstream {
    /// Answers every request 200 after `x-delay-ms` milliseconds (0 when absent), with the
    /// request body's length and the connection's number in `x-conn`.
    pub async fn start(max_streams: u32) -> H2Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let conns = Arc::new(AtomicU64::new(0));
        let open = Arc::new(AtomicU64::new(0));
        let calls = Arc::new(AtomicU64::new(0));
        let peak_streams = Arc::new(AtomicUsize::new(0));
        let (goaway, goaway_rx) = tokio::sync::watch::channel(0u64);
        let (c, k, p, o) = (
            conns.clone(),
            calls.clone(),
            peak_streams.clone(),
            open.clone(),
        );
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                let mut goaway = goaway_rx.clone();
                goaway.mark_unchanged();
                let (calls, peak) = (k.clone(), p.clone());
                let in_flight = Arc::new(AtomicUsize::new(0));
                let open = o.clone();
                open.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    // Counted closed however the task ends.
                    struct Closed(Arc<AtomicU64>);
                    impl Drop for Closed {
                        fn drop(&mut self) {
                            self.0.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                    let _closed = Closed(open);
                    let service = service_fn(move |req| {
                        answer(req, n, calls.clone(), in_flight.clone(), peak.clone())
                    });
                    let conn = http2::Builder::new(TokioExecutor::new())
                        .timer(TokioTimer::new())
                        .max_concurrent_streams(max_streams)
                        .serve_connection(TokioIo::new(tcp), service);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => return,
                        _ = goaway.changed() => conn.as_mut().graceful_shutdown(),
                    }
                    let _ = conn.await;
                });
            }
        });
        H2Upstream {
            addr,
            conns,
            open,
            calls,
            peak_streams,
            goaway,
        }
    }

    /// A graceful GOAWAY on every connection open now; new connections are served as usual.
    pub fn goaway_all(&self) {
        self.goaway.send_modify(|n| *n += 1);
    }
}

async fn answer(
    req: Request<Incoming>,
    conn: u64,
    calls: Arc<AtomicU64>,
    in_flight: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    peak.fetch_max(now, Ordering::SeqCst);
    let delay = req
        .headers()
        .get("x-delay-ms")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .unwrap_or(0);
    let body = req.into_body().collect().await.map(|b| b.to_bytes());
    tokio::time::sleep(Duration::from_millis(delay)).await;
    in_flight.fetch_sub(1, Ordering::SeqCst);
    calls.fetch_add(1, Ordering::SeqCst);
    let len = body.map(|b| b.len()).unwrap_or(0);
    Ok(Response::builder()
        .header("x-conn", conn.to_string())
        .body(Full::new(Bytes::from(len.to_string())))
        .unwrap())
}

/// A TCP relay to `to` whose open connections can be made to go silent: they stay open and
/// forward nothing more, as a host that vanished from the network would.
pub struct Relay {
    pub addr: SocketAddr,
    silent: Arc<AtomicBool>,
}

impl Relay {
    pub async fn start(to: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let silent = Arc::new(AtomicBool::new(false));
        let flag = silent.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(to).await else {
                    continue;
                };
                // Each connection has its own flag, set from the relay's when it goes silent.
                let mine = Arc::new(AtomicBool::new(false));
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(pump(cr, sw, mine.clone(), flag.clone()));
                tokio::spawn(pump(sr, cw, mine, flag.clone()));
            }
        });
        Relay { addr, silent }
    }

    /// Every connection open now goes silent; connections opened after `speak` are normal.
    pub fn go_silent(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    pub fn speak(&self) {
        self.silent.store(false, Ordering::SeqCst);
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mine: Arc<AtomicBool>,
    relay: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            n = from.read(&mut buf) => n,
            // Checked while waiting too, so a connection with nothing to send also goes quiet.
            _ = tokio::time::sleep(Duration::from_millis(20)) => {
                if relay.load(Ordering::SeqCst) { mine.store(true, Ordering::SeqCst); }
                if mine.load(Ordering::SeqCst) { break; }
                continue;
            }
        };
        if relay.load(Ordering::SeqCst) {
            mine.store(true, Ordering::SeqCst);
        }
        match n {
            Ok(n) if n > 0 && !mine.load(Ordering::SeqCst) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
            Ok(n) if n > 0 => break,
            _ => return,
        }
    }
    // Silent: hold both halves open, forward nothing, until the test ends.
    std::future::pending::<()>().await;
    drop((from, to));
}
