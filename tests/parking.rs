//! Idle keep-alive client connections parked after a second without a request
//! (`proxy/src/listen/park.rs`), over real sockets: served again on the same connection, closed
//! at their header timeout, counted out when the client leaves, closed by a drain.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour, TestBackend};
use common::weir::{sample, Weir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

fn config(upstream: SocketAddr, header_read_timeout: &str) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         limits: {{header_read_timeout: {header_read_timeout}}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{upstream}\"]}}\n"
    )
}

/// Reads one response (head and Content-Length body) and returns its status line.
async fn response(tcp: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            let n = tcp.read(&mut buf).await.expect("read");
            assert!(n > 0, "closed before a whole response: {got:?}");
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).into_owned();
            let Some(end) = text.find("\r\n\r\n") else {
                continue;
            };
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .expect("a Content-Length");
            if got.len() >= end + 4 + length {
                return text.lines().next().unwrap_or_default().to_string();
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("a response within 10 s")
}

async fn get(tcp: &mut TcpStream) -> String {
    tcp.write_all(GET).await.expect("write");
    response(tcp).await
}

async fn gauge(weir: &Weir, name: &str) -> f64 {
    sample(&weir.metrics().await, name, &[])
}

/// Waits (at most 5 s) until `name` reads `value`.
async fn wait_gauge(weir: &Weir, name: &str, value: f64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = gauge(weir, name).await;
        if now == value {
            return;
        }
        assert!(Instant::now() < deadline, "{name} is {now}, not {value}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Reads until the peer closes (or 10 s pass); returns when it did, and what came.
async fn closed(tcp: &mut TcpStream) -> (Instant, Vec<u8>) {
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "not closed within 10 s");
    (Instant::now(), out)
}

const PARKED: &str = "weir_client_connections_parked";
const OPEN: &str = "weir_client_connections";

/// weir with `header_read_timeout` in front of one backend, and a client connection that made
/// one request and has been parked since; with when its answer came.
async fn parked_client(header_read_timeout: &str) -> (TestBackend, Weir, TcpStream, Instant) {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(up.addr, header_read_timeout));
    let mut tcp = TcpStream::connect(weir.addr).await.expect("connect");
    assert!(get(&mut tcp).await.starts_with("HTTP/1.1 200"));
    let answered = Instant::now();
    wait_gauge(&weir, PARKED, 1.0).await;
    (up, weir, tcp, answered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_parked_and_served_again_on_the_same_socket() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(up.addr, "10s"));
    let mut tcp = TcpStream::connect(weir.addr).await.expect("connect");
    assert!(get(&mut tcp).await.starts_with("HTTP/1.1 200"));
    let answered = Instant::now();
    assert_eq!(gauge(&weir, PARKED).await, 0.0, "not parked while fresh");

    wait_gauge(&weir, PARKED, 1.0).await;
    assert!(
        answered.elapsed() >= Duration::from_millis(900),
        "parked after {:?}, before its second idle",
        answered.elapsed()
    );
    assert_eq!(gauge(&weir, OPEN).await, 1.0, "still counted open");

    // Served again on the same connection, then as a busy one.
    for _ in 0..3 {
        assert!(get(&mut tcp).await.starts_with("HTTP/1.1 200"));
    }
    assert_eq!(gauge(&weir, PARKED).await, 0.0, "resumed");
    // And parked again once idle again, and served again.
    wait_gauge(&weir, PARKED, 1.0).await;
    assert!(get(&mut tcp).await.starts_with("HTTP/1.1 200"));
    assert_eq!(up.hits(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_connection_is_closed_at_its_header_timeout() {
    let (_up, weir, mut tcp, answered) = parked_client("2s").await;
    let (at, rest) = closed(&mut tcp).await;
    let took = at - answered;
    assert!(rest.is_empty(), "nothing more was written: {rest:?}");
    assert!(
        took >= Duration::from_millis(1_900) && took < Duration::from_millis(3_500),
        "closed {took:?} after its last response, with a 2 s header timeout"
    );
    wait_gauge(&weir, PARKED, 0.0).await;
    wait_gauge(&weir, OPEN, 0.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_has_its_time_from_when_the_connection_went_idle_parked_or_not() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(up.addr, "3s"));
    let (half, rest) = GET.split_at(16);

    // Begun before the connection is parked (0.5 s), finished after the second it would have
    // been parked at (1.6 s): served, the head had its 3 s.
    let mut tcp = TcpStream::connect(weir.addr).await.expect("connect");
    assert!(get(&mut tcp).await.starts_with("HTTP/1.1 200"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    tcp.write_all(half).await.expect("write");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    tcp.write_all(rest).await.expect("write");
    assert!(response(&mut tcp).await.starts_with("HTTP/1.1 200"));
    drop(tcp);

    // Begun after it was parked (2 s) and never finished: closed 3 s after it went idle, not
    // 3 s after it was resumed.
    let mut slow = TcpStream::connect(weir.addr).await.expect("connect");
    assert!(get(&mut slow).await.starts_with("HTTP/1.1 200"));
    let answered = Instant::now();
    wait_gauge(&weir, PARKED, 1.0).await;
    tokio::time::sleep(Duration::from_millis(2_000).saturating_sub(answered.elapsed())).await;
    slow.write_all(half).await.expect("write");
    let (at, answer) = closed(&mut slow).await;
    let took = at - answered;
    assert!(
        took >= Duration::from_millis(2_900) && took < Duration::from_millis(4_500),
        "closed {took:?} after going idle, with a 3 s header timeout: {:?}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(up.hits(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_while_parked_is_counted_out() {
    let (_up, weir, tcp, _) = parked_client("10s").await;
    drop(tcp);
    wait_gauge(&weir, PARKED, 0.0).await;
    wait_gauge(&weir, OPEN, 0.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_closes_parked_connections_and_weir_exits() {
    let (_up, mut weir, mut tcp, _) = parked_client("10s").await;
    let signalled = Instant::now();
    weir.signal("TERM");
    let (at, rest) = closed(&mut tcp).await;
    assert!(
        rest.is_empty(),
        "nothing written to an idle connection: {rest:?}"
    );
    assert!(
        at - signalled < Duration::from_secs(5),
        "closed by the drain"
    );
    let status = weir.wait_exit(Duration::from_secs(10)).expect("exited");
    assert!(status.success(), "{status:?}\n{}", weir.log());
}
