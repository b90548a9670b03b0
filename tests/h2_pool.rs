//! HTTP/2 upstreams as a pool of connections (issue 18), end to end: the weir binary, a real
//! hyper h2c upstream on 127.0.0.1 with a stream limit, graceful GOAWAYs and a relay that can
//! go silent, a real nginx that ends connections at its request cap, and real HTTP/2 clients.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2;

use common::client::h2c;
use common::h2_upstream::{H2Upstream, Relay};
use common::nginx::Nginx;
use common::weir::{sample, Weir};

fn config(upstream: &str, pool: &str, route_extra: &str) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: grpc\n{route_extra}  stable:\n    addresses: [\"{upstream}\"]\n    \
         protocol: http2\n    http2: {{{pool}}}\n"
    )
}

/// A unary call: POST with a small body, as gRPC sends one.
async fn call(
    h2: &mut http2::SendRequest<Full<Bytes>>,
    delay_ms: u64,
) -> Result<(u16, String), String> {
    let req = Request::post("http://test.local/pkg.Svc/Call")
        .header("x-delay-ms", delay_ms.to_string())
        .body(Full::new(Bytes::from_static(b"\0\0\0\0\x05hello")))
        .unwrap();
    let resp = h2.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok((
        status,
        String::from_utf8_lossy(&body.to_bytes()).into_owned(),
    ))
}

/// `total` calls from `clients` HTTP/2 connections, all in flight at once (bounded by time).
async fn burst(weir: &Weir, clients: usize, total: usize, delay_ms: u64) -> Vec<(u16, String)> {
    let mut tasks = Vec::new();
    for c in 0..clients {
        let mut h2 = h2c(weir.addr).await;
        let mine = total / clients + usize::from(c < total % clients);
        for _ in 0..mine {
            let mut h2 = h2.clone();
            tasks.push(tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(20), call(&mut h2, delay_ms))
                    .await
                    .unwrap_or_else(|_| Err("client gave up after 20 s".into()))
                    .unwrap_or_else(|e| (0, e))
            }));
        }
        h2.ready().await.unwrap();
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_stream_limit_of_10_200_concurrent_calls_open_several_connections_and_none_fails() {
    let up = H2Upstream::start(10).await;
    let weir = Weir::start(&config(&up.addr.to_string(), "", ""));
    let answers = burst(&weir, 4, 200, 100).await;
    let failed: Vec<_> = answers.iter().filter(|(s, _)| *s != 200).collect();
    assert!(
        failed.is_empty(),
        "{} of 200 failed: {failed:?}",
        failed.len()
    );
    assert!(
        answers.iter().all(|(_, body)| body == "10"),
        "every body arrived whole"
    );
    let conns = up.conns.load(std::sync::atomic::Ordering::SeqCst);
    // 200 in flight at 10 a connection: the pool's cap of 16 connections is reached.
    assert!(
        (2..=16).contains(&conns),
        "{conns} upstream connections for 200 calls at 10 streams each (cap 16)"
    );
    let peak = up.peak_streams.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        peak <= 10,
        "the server's limit was kept: {peak} streams at once"
    );
    let text = weir.metrics().await;
    let upstream = up.addr.to_string();
    let labels = [("upstream", upstream.as_str())];
    assert_eq!(sample(&text, "weir_upstream_h2_streams", &labels), 0.0);
    assert!(
        sample(&text, "weir_upstream_h2_stream_waits_total", &labels) > 0.0,
        "40 calls past 16 × 10 streams waited\n{text}"
    );
    assert_eq!(
        sample(&text, "weir_upstream_h2_connections", &labels),
        conns as f64,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaways_in_the_middle_of_the_load_make_no_client_error() {
    let up = H2Upstream::start(20).await;
    let weir = Weir::start(&config(&up.addr.to_string(), "", ""));
    // 8 clients, 60 calls each, one after another: a steady stream of calls.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let mut h2 = h2c(weir.addr).await;
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            for _ in 0..60 {
                let answer = tokio::time::timeout(Duration::from_secs(20), call(&mut h2, 5))
                    .await
                    .unwrap_or_else(|_| Err("client gave up after 20 s".into()));
                answers.push(answer.unwrap_or_else(|e| (0, e)));
            }
            answers
        }));
    }
    // Three rounds of GOAWAY on every open connection while the calls run.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        up.goaway_all();
    }
    let mut failed = Vec::new();
    for t in tasks {
        failed.extend(t.await.unwrap().into_iter().filter(|(s, _)| *s != 200));
    }
    assert!(
        failed.is_empty(),
        "{} calls failed: {failed:?}",
        failed.len()
    );
    let calls = up.calls.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(calls, 480, "each call processed once");
    let text = weir.metrics().await;
    let upstream = up.addr.to_string();
    let labels = [("upstream", upstream.as_str())];
    assert!(
        sample(&text, "weir_upstream_h2_goaways_total", &labels) >= 3.0,
        "{text}"
    );
    assert!(up.conns.load(std::sync::atomic::Ordering::SeqCst) >= 4);
    assert_eq!(
        sample(&text, "weir_requests_total", &[("class", "5xx")]),
        0.0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_gone_silent_is_found_by_ping_and_its_connection_replaced() {
    let up = H2Upstream::start(100).await;
    let relay = Relay::start(up.addr).await;
    let weir = Weir::start(&config(
        &relay.addr.to_string(),
        "keepalive_interval: 200ms, keepalive_timeout: 300ms",
        "",
    ));
    let mut h2 = h2c(weir.addr).await;
    assert_eq!(call(&mut h2, 0).await.unwrap().0, 200);
    // A long call in flight, then the network path goes quiet: nothing more arrives.
    let mut slow = h2.clone();
    let started = Instant::now();
    let pending = tokio::spawn(async move { call(&mut slow, 10_000).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    relay.go_silent();
    let answer = tokio::time::timeout(Duration::from_secs(8), pending)
        .await
        .expect("answered before the upstream's 10 s, well before the 30 s response timeout")
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    assert!(
        answer.0 == 502 || answer.0 == 504,
        "the call failed as the connection was found dead: {answer:?}"
    );
    // PING after 200 ms of silence, unanswered for 300 ms: about 0.6 s, bounded here by 3 s.
    assert!(took < Duration::from_secs(3), "found dead after {took:?}");
    // New connections pass again; the dead one is gone from the pool.
    relay.speak();
    assert_eq!(call(&mut h2, 0).await.unwrap().0, 200);
    let (open, text) = h2_connections(&weir, relay.addr).await;
    assert_eq!(open, 1.0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_both_caps_one_call_waits_for_a_stream_and_one_past_the_queue_gets_a_503_at_once() {
    let up = H2Upstream::start(100).await;
    let weir = Weir::start(&config(
        &up.addr.to_string(),
        "max_connections: 1, max_streams_per_connection: 2, max_pending: 1",
        "  timeout: 800ms\n",
    ));
    let h2 = h2c(weir.addr).await;
    // Two calls hold both streams for 200 ms; a third waits; a fourth finds the queue full.
    let mut tasks = Vec::new();
    for (i, delay) in [200, 200, 0, 0].into_iter().enumerate() {
        let mut h2 = h2.clone();
        tasks.push(tokio::spawn(async move {
            let started = Instant::now();
            let answer = call(&mut h2, delay).await.unwrap();
            (i, answer, started.elapsed())
        }));
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    assert_eq!(answers[0].1 .0, 200, "{answers:?}");
    assert_eq!(answers[1].1 .0, 200, "{answers:?}");
    // The third got a stream when the first two ended (200 ms < its 800 ms deadline)…
    assert_eq!(answers[2].1 .0, 200, "{answers:?}");
    // …the fourth was refused at once: one may wait, and one was waiting.
    let (_, (status, body), took) = &answers[3];
    assert_eq!(*status, 503, "{answers:?}");
    assert!(body.contains("stream limit"), "{body}");
    assert!(
        *took < Duration::from_millis(200),
        "refused at once: {took:?}"
    );

    let text = weir.metrics().await;
    assert_eq!(
        sample(
            &text,
            "weir_upstream_errors_total",
            &[("backend", "stable"), ("kind", "stream_limit")]
        ),
        1.0,
        "{text}"
    );
}

/// With two workers each has its own pool (`h2pool::Shared`), but the queue is the address's:
/// `max_pending: 1` lets one call wait in the whole process, not one on each worker; and the
/// connection cap gives way only so that each worker may hold one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_workers_the_caps_hold_for_the_process_and_each_worker_may_hold_one_connection() {
    let up = H2Upstream::start(100).await;
    let dir = common::temp_dir("weir");
    std::fs::write(
        dir.join("weir.yaml"),
        config(
            &up.addr.to_string(),
            "max_connections: 1, max_streams_per_connection: 1, max_pending: 1",
            "  timeout: 2s\n",
        ),
    )
    .unwrap();
    let weir = Weir::start_with(dir.clone(), dir.join("weir.yaml"), &["--workers", "2"]);
    // Three client connections: the workers take turns (`listen/balance.rs`), so each
    // worker serves at least one of them.
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(h2c(weir.addr).await);
    }
    // Six calls holding their stream 400 ms, 30 ms apart: each worker's first opens that
    // worker's connection, one stream each (2 in flight); one call waits; the other three
    // find the queue full and get a 503 at once.
    let mut tasks = Vec::new();
    for i in 0..6 {
        let mut h2 = clients[i % 3].clone();
        tasks.push(tokio::spawn(async move {
            tokio::time::timeout(Duration::from_secs(10), call(&mut h2, 400))
                .await
                .unwrap_or_else(|_| Err("client gave up after 10 s".into()))
                .unwrap_or_else(|e| (0, e))
        }));
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let ok = answers.iter().filter(|(s, _)| *s == 200).count();
    let refused = answers
        .iter()
        .filter(|(s, body)| *s == 503 && body.contains("stream limit"))
        .count();
    assert_eq!(
        (ok, refused),
        (3, 3),
        "two streams (one a worker) and one waiting over both workers: {answers:?}"
    );
    let conns = up.conns.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        conns, 2,
        "max_connections 1, and a second only because the other worker had none"
    );
    let peak = up.peak_streams.load(std::sync::atomic::Ordering::SeqCst);
    assert!(peak <= 2, "{peak} streams at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_waits_for_a_stream_past_its_route_timeout_gets_a_503_not_a_504() {
    let up = H2Upstream::start(100).await;
    // Two routes to one address share its pool: `/hold` without a timeout holds both streams,
    // the other route's call waits for one until its 400 ms timeout.
    let pool = "{max_connections: 1, max_streams_per_connection: 2}";
    let weir = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n\
         - name: hold\n  match: {{path_prefix: /hold}}\n  stable: {{addresses: [\"{up}\"], protocol: http2, http2: {pool}}}\n\
         - name: grpc\n  timeout: 400ms\n  stable: {{addresses: [\"{up}\"], protocol: http2, http2: {pool}}}\n",
        up = up.addr
    ));
    let mut h2 = h2c(weir.addr).await;
    let mut holders = Vec::new();
    for _ in 0..2 {
        let mut h2 = h2.clone();
        holders.push(tokio::spawn(async move {
            let req = Request::post("http://test.local/hold")
                .header("x-delay-ms", "1500")
                .body(Full::new(Bytes::new()))
                .unwrap();
            h2.send_request(req).await.map(|r| r.status().as_u16())
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let (status, body) = call(&mut h2, 0).await.unwrap();
    let took = started.elapsed();
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("stream limit"), "{body}");
    assert!(
        took >= Duration::from_millis(350) && took < Duration::from_millis(1200),
        "waited to its route timeout: {took:?}"
    );
    for h in holders {
        assert_eq!(
            h.await.unwrap().unwrap(),
            200,
            "the holders were not disturbed"
        );
    }
    let text = weir.metrics().await;
    assert_eq!(
        sample(
            &text,
            "weir_upstream_errors_total",
            &[("route", "grpc"), ("kind", "stream_limit")]
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "weir_upstream_errors_total",
            &[("route", "grpc"), ("kind", "timeout")]
        ),
        0.0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_retire_after_their_request_count_and_no_call_is_lost() {
    let up = H2Upstream::start(100).await;
    let weir = Weir::start(&config(
        &up.addr.to_string(),
        "max_requests_per_connection: 5",
        "",
    ));
    let mut h2 = h2c(weir.addr).await;
    for _ in 0..20 {
        assert_eq!(call(&mut h2, 0).await.unwrap().0, 200);
    }
    assert_eq!(up.conns.load(std::sync::atomic::Ordering::SeqCst), 4);
}

/// An h2 server on 127.0.0.1 that resets the first `refuse` streams of every connection with
/// REFUSED_STREAM without reading them, and answers the others with their body's length; with
/// the count of streams it saw.
async fn refusing_upstream(
    refuse: usize,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(tcp).await else {
                    return;
                };
                let mut refuse = refuse;
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if refuse > 0 {
                        refuse -= 1;
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                        continue;
                    }
                    tokio::spawn(async move {
                        let mut body = req.into_body();
                        let mut len = 0;
                        while let Some(Ok(chunk)) = body.data().await {
                            len += chunk.len();
                            let _ = body.flow_control().release_capacity(chunk.len());
                        }
                        let resp = http::Response::new(());
                        if let Ok(mut send) = respond.send_response(resp, false) {
                            let _ = send.send_data(Bytes::from(len.to_string()), true);
                        }
                    });
                }
            });
        }
    });
    (addr, seen)
}

/// One call through weir to an upstream that refuses the first `refuse` streams of each
/// connection: answered whole, the upstream saw every try, weir counted each refusal and
/// answered no 5xx.
async fn call_through_refusals(refuse: usize) {
    let (addr, seen) = refusing_upstream(refuse).await;
    let weir = Weir::start(&config(&addr.to_string(), "", ""));
    let mut h2 = h2c(weir.addr).await;
    // A POST (not idempotent) with a body: refused, then sent again whole.
    let (status, body) = call(&mut h2, 0).await.unwrap();
    assert_eq!((status, body.as_str()), (200, "10"));
    let tries = u64::try_from(refuse).unwrap() + 1;
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), tries);
    let text = weir.metrics().await;
    let upstream = addr.to_string();
    assert_eq!(
        sample(
            &text,
            "weir_upstream_h2_refused_streams_total",
            &[("upstream", upstream.as_str())]
        ),
        refuse as f64,
        "{text}"
    );
    assert_eq!(
        sample(&text, "weir_requests_total", &[("class", "5xx")]),
        0.0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_stream_is_sent_again_with_its_body_whatever_its_method() {
    call_through_refusals(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_by_several_streams_in_a_row_is_still_answered() {
    // As a server at its cap on requests a connection refuses what comes past it: connections
    // opened together reach such a cap together, so one request can be refused several times
    // running — more than the two tries a stale HTTP/1 connection gets, and each refusal says
    // the server did nothing.
    call_through_refusals(4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_nginx_ending_connections_at_its_request_cap_loses_no_call_and_its_cap_is_learnt() {
    // nginx ends each HTTP/2 connection after `keepalive_requests` streams with one GOAWAY;
    // the streams weir had sent past it are unprocessed. Every call must still be answered,
    // and once two connections have ended at the same count weir retires its connections at
    // that count itself, so nothing more is refused.
    let nginx = Nginx::h2c("capped", 20);
    let weir = Weir::start(&config(&nginx.addr.to_string(), "", ""));
    let upstream = nginx.addr.to_string();
    let labels = [("upstream", upstream.as_str())];
    let mut refused = Vec::new();
    for _ in 0..6 {
        // 60 calls at once on one client connection: they reach the pool together and go
        // out together, past a cap of 20.
        let answers = burst(&weir, 1, 60, 0).await;
        let failed: Vec<_> = answers.iter().filter(|(s, _)| *s != 200).collect();
        assert!(failed.is_empty(), "{} failed: {failed:?}", failed.len());
        assert!(answers.iter().all(|(_, body)| body == "capped\n"));
        let text = weir.metrics().await;
        refused.push(sample(
            &text,
            "weir_upstream_h2_refused_streams_total",
            &labels,
        ));
    }
    assert!(
        refused[0] > 0.0,
        "nginx refused nothing: the case this test is about did not arise ({refused:?})"
    );
    assert_eq!(
        refused[2], refused[5],
        "refusals went on after the cap could be learnt: {refused:?}"
    );
    let text = weir.metrics().await;
    assert_eq!(
        sample(&text, "weir_requests_total", &[("class", "5xx")]),
        0.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, "weir_upstream_h2_learned_stream_cap", &labels),
        20.0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_idle_past_the_pool_idle_timeout_are_closed() {
    let up = H2Upstream::start(10).await;
    let weir = Weir::start(&config(&up.addr.to_string(), "", "").replace(
        "protocol: http2\n",
        "protocol: http2\n    pool_idle_timeout: 1s\n",
    ));
    // 40 calls at once at 10 streams a connection: several connections, then all idle.
    let answers = burst(&weir, 2, 40, 200).await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let opened = up.conns.load(std::sync::atomic::Ordering::SeqCst);
    assert!(opened >= 4, "{opened} connections for 40 calls at 10 each");
    // Housekeeping runs every 5 s: within 8 s every idle connection has been closed.
    let deadline = Instant::now() + Duration::from_secs(8);
    while up.open.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        assert!(
            Instant::now() < deadline,
            "{} upstream connections still open",
            up.open.load(std::sync::atomic::Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (open, text) = h2_connections(&weir, up.addr).await;
    assert_eq!(open, 0.0, "{text}");
    // And the next call opens a new one.
    let mut h2 = h2c(weir.addr).await;
    assert_eq!(call(&mut h2, 0).await.unwrap().0, 200);
}

/// weir's gauge of open HTTP/2 connections to `upstream`, with the exposition it was read from.
async fn h2_connections(weir: &Weir, upstream: std::net::SocketAddr) -> (f64, String) {
    let text = weir.metrics().await;
    let upstream = upstream.to_string();
    let open = sample(
        &text,
        "weir_upstream_h2_connections",
        &[("upstream", upstream.as_str())],
    );
    (open, text)
}
