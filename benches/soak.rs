//! The soak (issue 12): weir (release build, one process, default runtime) under a fixed mix of
//! traffic for DURATION seconds (default 600), with RSS, open fds and threads sampled every
//! 10 s; then whether each stayed flat after the warm-up. Loopback only, every loop bounded by
//! the duration. Run by `benches/soak.sh`.
//!
//! The mix, per second unless said: 100 GETs over 4 keep-alive HTTP/1.1 clients; 20 GETs on
//! a new connection each; 50 GETs over one h2c connection; 1 WebSocket-style upgrade that
//! echoes 1 KiB and closes; a 4 MiB POST streamed every 2 s; a slow client every 5 s (its head
//! one byte per 20 ms); 10 % of the route mirrored to canary; a config reload (SIGHUP) every
//! 10 s; and every 60 s a swap storm, 100 reloads a second for 5 s.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Frame, Incoming};
use hyper::client::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod support;
use support::{env_or, free_port, signal};

/// Counts of what the clients saw.
#[derive(Default)]
struct Seen {
    ok: AtomicU64,
    failed: AtomicU64,
}

impl Seen {
    fn count(&self, ok: bool) {
        if ok {
            self.ok.fetch_add(1, Ordering::Relaxed);
        } else {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// An upstream: 200 "ok" to a GET, the body's length to a POST, and an echo after `101` to
/// `Upgrade: echo`. HTTP/1.1 and h2c.
async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an upstream");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = service_fn(|mut req: Request<Incoming>| async move {
                    if req.headers().get("upgrade").is_some_and(|v| v == "echo") {
                        let on = hyper::upgrade::on(&mut req);
                        tokio::spawn(async move {
                            if let Ok(up) = on.await {
                                let mut io = TokioIo::new(up);
                                let (mut r, mut w) = tokio::io::split(&mut io);
                                let _ = tokio::io::copy(&mut r, &mut w).await;
                            }
                        });
                        let resp = Response::builder()
                            .status(101)
                            .header("upgrade", "echo")
                            .header("connection", "upgrade")
                            .body(Full::new(Bytes::new()))
                            .unwrap_or_default();
                        return Ok::<_, Infallible>(resp);
                    }
                    let mut len = 0usize;
                    let mut body = req.into_body();
                    while let Some(Ok(frame)) = body.frame().await {
                        len += frame.data_ref().map_or(0, Bytes::len);
                    }
                    let text = if len > 0 {
                        len.to_string()
                    } else {
                        "ok".into()
                    };
                    Ok(Response::new(Full::new(Bytes::from(text))))
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection_with_upgrades(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    addr
}

fn config(port: u16, admin: u16, stable: SocketAddr, canary: SocketAddr, weight: u32) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:{port}\"}}]\nadmin: {{address: \"127.0.0.1:{admin}\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{stable}\"]}}\n  canary: {{addresses: [\"{canary}\"]}}\n\
         \x20 canary_weight: {weight}\n  timeout: 30s\n  mirror: {{name: shadow, percent: 10}}\n"
    )
}

struct Weir {
    child: Child,
}

impl Drop for Weir {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (RSS KiB, threads) from /proc/PID/status, and open fds from /proc/PID/fd.
fn sample(pid: u32) -> (u64, u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    (field("VmRSS:"), fds, field("Threads:"))
}

/// Runs `every` until `end`, each run on its own task (so a slow one never delays the next).
fn every<F, Fut>(period: Duration, end: Instant, f: F)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        while Instant::now() < end {
            tick.tick().await;
            tokio::spawn(f());
        }
    });
}

async fn get_on_new_connection(addr: SocketAddr) -> bool {
    let Ok(tcp) = TcpStream::connect(addr).await else {
        return false;
    };
    let Ok((mut sender, conn)) = http1::handshake::<_, Empty<Bytes>>(TokioIo::new(tcp)).await
    else {
        return false;
    };
    tokio::spawn(conn);
    let req = Request::get("/new")
        .header("host", "soak")
        .body(Empty::new());
    match req {
        Ok(req) => matches!(sender.send_request(req).await, Ok(r) if r.status() == 200),
        Err(_) => false,
    }
}

async fn upgrade_echo(addr: SocketAddr) -> bool {
    let Ok(mut tcp) = TcpStream::connect(addr).await else {
        return false;
    };
    let head = b"GET /ws HTTP/1.1\r\nHost: soak\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n";
    if tcp.write_all(head).await.is_err() {
        return false;
    }
    let mut buf = Vec::new();
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut chunk = [0u8; 512];
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    if !buf.starts_with(b"HTTP/1.1 101") {
        return false;
    }
    let payload = vec![b'x'; 1024];
    if tcp.write_all(&payload).await.is_err() {
        return false;
    }
    let mut back = vec![0u8; payload.len()];
    tcp.read_exact(&mut back).await.is_ok() && back == payload
}

async fn large_post(addr: SocketAddr) -> bool {
    let Ok(tcp) = TcpStream::connect(addr).await else {
        return false;
    };
    let Ok((mut sender, conn)) = http1::handshake::<_, Frames>(TokioIo::new(tcp)).await else {
        return false;
    };
    tokio::spawn(conn);
    // 4 MiB in 64 KiB frames, streamed (chunked).
    let body = Frames {
        left: 64,
        chunk: Bytes::from(vec![b'a'; 64 * 1024]),
    };
    let Ok(req) = Request::post("/upload").header("host", "soak").body(body) else {
        return false;
    };
    match sender.send_request(req).await {
        Ok(r) if r.status() == 200 => match r.into_body().collect().await {
            Ok(b) => b.to_bytes() == (64 * 64 * 1024).to_string().as_bytes(),
            Err(_) => false,
        },
        _ => false,
    }
}

/// A request body of `n` data frames of `size` bytes, streamed (no length: chunked).
struct Frames {
    left: usize,
    chunk: Bytes,
}

impl hyper::body::Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return std::task::Poll::Ready(None);
        }
        self.left -= 1;
        std::task::Poll::Ready(Some(Ok(Frame::data(self.chunk.clone()))))
    }
}

async fn slow_client(addr: SocketAddr) -> bool {
    let Ok(mut tcp) = TcpStream::connect(addr).await else {
        return false;
    };
    let head = b"GET /slow HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n";
    for b in head {
        if tcp.write_all(&[*b]).await.is_err() {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut out)).await;
    out.starts_with(b"HTTP/1.1 200")
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return; // `cargo test --benches`: nothing to do
    }
    let secs = env_or("DURATION", 600);
    let warmup = env_or("WARMUP", 120).min(secs / 2);
    let weir_bin =
        PathBuf::from(std::env::var("WEIR_BIN").unwrap_or_else(|_| "target/release/weir".into()));
    assert!(
        weir_bin.exists(),
        "{} missing: run benches/soak.sh",
        weir_bin.display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(soak(weir_bin, secs, warmup));
}

async fn soak(weir_bin: PathBuf, secs: u64, warmup: u64) {
    let (stable, canary) = (upstream().await, upstream().await);
    let dir = std::env::temp_dir().join(format!("weir-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let (port, admin) = (free_port(), free_port());
    let conf = dir.join("weir.yaml");
    std::fs::write(&conf, config(port, admin, stable, canary, 20)).expect("write the config");
    let child = Command::new("taskset")
        .args(["-c", "0"])
        .arg(&weir_bin)
        .args(["run", "--config"])
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("weir starts");
    let weir = Weir { child };
    let pid = weir.child.id();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let begun = Instant::now();
    let end = begun + Duration::from_secs(secs);
    let seen = Arc::new(Seen::default());

    // Keep-alive clients: 4 × 25/s.
    for _ in 0..4 {
        let seen = seen.clone();
        tokio::spawn(async move {
            let mut sender: Option<http1::SendRequest<Empty<Bytes>>> = None;
            let mut tick = tokio::time::interval(Duration::from_millis(40));
            while Instant::now() < end {
                tick.tick().await;
                if sender.as_ref().is_none_or(|s| s.is_closed()) {
                    sender = match TcpStream::connect(addr).await {
                        Ok(tcp) => match http1::handshake(TokioIo::new(tcp)).await {
                            Ok((s, conn)) => {
                                tokio::spawn(conn);
                                Some(s)
                            }
                            Err(_) => None,
                        },
                        Err(_) => None,
                    };
                }
                let Some(s) = sender.as_mut() else {
                    seen.count(false);
                    continue;
                };
                let req = Request::get("/ka")
                    .header("host", "soak")
                    .body(Empty::new());
                let ok = match req {
                    Ok(req) => match s.send_request(req).await {
                        Ok(r) => r.status() == 200 && r.into_body().collect().await.is_ok(),
                        Err(_) => false,
                    },
                    Err(_) => false,
                };
                seen.count(ok);
            }
        });
    }
    // h2c: one connection, 50/s.
    {
        let seen = seen.clone();
        tokio::spawn(async move {
            let Ok(tcp) = TcpStream::connect(addr).await else {
                return;
            };
            let Ok((sender, conn)) =
                http2::handshake::<_, _, Empty<Bytes>>(TokioExecutor::new(), TokioIo::new(tcp))
                    .await
            else {
                return;
            };
            tokio::spawn(conn);
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            while Instant::now() < end {
                tick.tick().await;
                let mut s = sender.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let req = Request::get("http://soak/h2").body(Empty::new());
                    let ok = match req {
                        Ok(req) => matches!(s.send_request(req).await, Ok(r) if r.status() == 200),
                        Err(_) => false,
                    };
                    seen.count(ok);
                });
            }
        });
    }
    let s = seen.clone();
    every(Duration::from_millis(50), end, move || {
        let s = s.clone();
        async move { s.count(get_on_new_connection(addr).await) }
    });
    let s = seen.clone();
    every(Duration::from_secs(1), end, move || {
        let s = s.clone();
        async move { s.count(upgrade_echo(addr).await) }
    });
    let s = seen.clone();
    every(Duration::from_secs(2), end, move || {
        let s = s.clone();
        async move { s.count(large_post(addr).await) }
    });
    let s = seen.clone();
    every(Duration::from_secs(5), end, move || {
        let s = s.clone();
        async move { s.count(slow_client(addr).await) }
    });
    // Reloads: every 10 s; every 60 s a storm of 100/s for 5 s. The weight alternates 20/21.
    let reloads = Arc::new(AtomicU64::new(0));
    {
        let (conf, reloads) = (conf.clone(), reloads.clone());
        let stop = Arc::new(AtomicBool::new(false));
        std::thread::spawn(move || {
            let mut n = 0u64;
            let mut tick = 0u64;
            while Instant::now() < end && !stop.load(Ordering::Relaxed) {
                let t = begun.elapsed().as_millis() as u64;
                let in_storm = t % 60_000 >= 30_000 && t % 60_000 < 35_000;
                if in_storm || tick.is_multiple_of(1000) {
                    let weight = if n.is_multiple_of(2) { 21 } else { 20 };
                    let _ = std::fs::write(&conf, config(port, admin, stable, canary, weight));
                    signal(pid, libc::SIGHUP);
                    n += 1;
                    reloads.store(n, Ordering::Relaxed);
                }
                tick += 1;
                let next = begun + Duration::from_millis(10) * tick as u32;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        });
    }

    println!("| t s | RSS MiB | open fds | threads | client ok | client failed | reloads |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut samples: Vec<(u64, [f64; 3])> = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    tick.tick().await;
    while Instant::now() < end {
        tick.tick().await;
        let t = begun.elapsed().as_secs();
        let (rss, fds, threads) = sample(pid);
        println!(
            "| {t} | {:.1} | {fds} | {threads} | {} | {} | {} |",
            rss as f64 / 1024.0,
            seen.ok.load(Ordering::Relaxed),
            seen.failed.load(Ordering::Relaxed),
            reloads.load(Ordering::Relaxed),
        );
        samples.push((t, [rss as f64, fds as f64, threads as f64]));
    }
    // Let the last slow clients and posts finish before judging the counts.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after: Vec<&(u64, [f64; 3])> = samples.iter().filter(|(t, _)| *t > warmup).collect();
    println!(
        "\nAfter the {warmup} s warm-up ({} samples): each series' spread around its median, and its least-squares trend over the rest of the run (both as % of the median). Target: within ±5 %, no upward trend.\n",
        after.len()
    );
    println!("| series | median | min | max | max deviation % | trend over the run % |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (i, name) in ["RSS KiB", "open fds", "threads"].iter().enumerate() {
        let mut v: Vec<f64> = after.iter().map(|(_, s)| s[i]).collect();
        if v.is_empty() {
            break;
        }
        let xs: Vec<f64> = after.iter().map(|(t, _)| *t as f64).collect();
        let n = v.len() as f64;
        let (mx, my) = (xs.iter().sum::<f64>() / n, v.iter().sum::<f64>() / n);
        let cov: f64 = xs.iter().zip(&v).map(|(x, y)| (x - mx) * (y - my)).sum();
        let var: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let slope = if var > 0.0 { cov / var } else { 0.0 };
        let span = xs.last().unwrap_or(&0.0) - xs.first().unwrap_or(&0.0);
        v.sort_by(f64::total_cmp);
        let median = v[v.len() / 2];
        let (min, max) = (v[0], v[v.len() - 1]);
        let dev = ((max - median).abs().max((median - min).abs()) / median.max(1.0)) * 100.0;
        let trend = slope * span / median.max(1.0) * 100.0;
        println!("| {name} | {median:.0} | {min:.0} | {max:.0} | {dev:.1} | {trend:+.1} |");
    }
    println!(
        "\nclients: {} answered, {} failed; {} reloads",
        seen.ok.load(Ordering::Relaxed),
        seen.failed.load(Ordering::Relaxed),
        reloads.load(Ordering::Relaxed)
    );
    drop(weir);
    let _ = std::fs::remove_dir_all(&dir);
}
