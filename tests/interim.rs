//! Interim (1xx) responses, on the wire (issue 49; RFC 9110 §15.2: a proxy MUST forward the
//! 1xx responses it did not ask for). An upstream answers `103 Early Hints` and then holds its
//! final answer until the client has read the 103 — so a 103 passed on only with the final
//! answer, or not at all, fails here — through both HTTP/1 engines: weir's own, and hyper's
//! server (`http1_engine: hyper`, and the passthrough engine's hand-off for
//! `Expect: 100-continue`). An HTTP/1.0 client gets none (§15.2).

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::raw::read_request;
use common::weir::Weir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

const HINTS: &[u8] = b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n";

/// An upstream that answers each request with `HINTS`, then its final `200 ok` once `seen` is
/// notified or `hold` has passed, counting the answers whose 103 was seen in time.
struct Hinting {
    addr: SocketAddr,
    seen: Arc<Notify>,
    in_time: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
}

async fn hinting(hold: Duration) -> Hinting {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Notify::new());
    let in_time = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(AtomicU64::new(0));
    let (s, t, r) = (seen.clone(), in_time.clone(), requests.clone());
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let (seen, in_time, requests) = (s.clone(), t.clone(), r.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while let Some((_, length)) = read_request(&mut tcp, &mut buf).await {
                    requests.fetch_add(1, Ordering::SeqCst);
                    if tcp.write_all(HINTS).await.is_err() {
                        return;
                    }
                    if tokio::time::timeout(hold, seen.notified()).await.is_ok() {
                        in_time.fetch_add(1, Ordering::SeqCst);
                    }
                    let body = format!("ok {length}");
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if tcp.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Hinting {
        addr,
        seen,
        in_time,
        requests,
    }
}

fn config(up: SocketAddr, engine: &str, route: &str) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         limits: {{http1_engine: {engine}}}\n\
         routes:\n\
         - name: web\n\
         \x20 stable: {{addresses: [\"{up}\"]}}\n{route}"
    )
}

/// Reads one response head from `tcp` into `buf`'s front; returns it and drops it from `buf`.
async fn head(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> String {
    let read = async {
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end + 4]).into_owned();
                buf.drain(..end + 4);
                return head;
            }
            let mut chunk = [0u8; 4096];
            let n = tcp.read(&mut chunk).await.unwrap();
            assert!(
                n > 0,
                "closed before a head: {:?}",
                String::from_utf8_lossy(buf)
            );
            buf.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("a response head within 10 s")
}

/// Reads `n` body bytes after a head.
async fn body(tcp: &mut TcpStream, buf: &mut Vec<u8>, n: usize) -> String {
    while buf.len() < n {
        let mut chunk = [0u8; 4096];
        let got = tcp.read(&mut chunk).await.unwrap();
        assert!(got > 0, "closed mid-body");
        buf.extend_from_slice(&chunk[..got]);
    }
    String::from_utf8_lossy(&buf.drain(..n).collect::<Vec<_>>()).into_owned()
}

fn status(head: &str) -> u16 {
    head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// A GET answered 103 then 200 on one keep-alive connection, twice: the 103 reaches the client
/// while the upstream still holds its final answer, with its Link field.
async fn hints_reach_the_client(weir: &Weir, up: &Hinting, extra: &str) {
    let mut tcp = TcpStream::connect(weir.addr).await.unwrap();
    let mut buf = Vec::new();
    for round in 1..=2u64 {
        let req = format!("GET /page HTTP/1.1\r\nHost: a\r\n{extra}\r\n");
        tcp.write_all(req.as_bytes()).await.unwrap();
        let first = head(&mut tcp, &mut buf).await;
        assert_eq!(status(&first), 103, "{first}");
        assert!(
            first
                .to_ascii_lowercase()
                .contains("link: </style.css>; rel=preload"),
            "{first}"
        );
        up.seen.notify_one();
        let last = head(&mut tcp, &mut buf).await;
        assert_eq!(status(&last), 200, "{last}");
        assert_eq!(body(&mut tcp, &mut buf, 4).await, "ok 0");
        assert_eq!(
            up.in_time.load(Ordering::SeqCst),
            round,
            "103 before the final"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_hints_are_passed_on_by_weirs_own_engine() {
    let up = hinting(Duration::from_secs(5)).await;
    let weir = Weir::start(&config(up.addr, "passthrough", ""));
    hints_reach_the_client(&weir, &up, "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_hints_are_passed_on_by_hypers_server() {
    let up = hinting(Duration::from_secs(5)).await;
    let weir = Weir::start(&config(up.addr, "hyper", ""));
    hints_reach_the_client(&weir, &up, "").await;
}

/// A route that rewrites goes through hyper's server from the passthrough engine too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_hints_are_passed_on_for_a_route_hyper_serves() {
    let up = hinting(Duration::from_secs(5)).await;
    let route = "\x20 rewrite: {hostname: api.internal}\n";
    let weir = Weir::start(&config(up.addr, "passthrough", route));
    hints_reach_the_client(&weir, &up, "").await;
}

/// `Expect: 100-continue`: one `100 Continue` (hyper's own, when weir begins to read the
/// body; the upstream's is not sent again), then the upstream's 103, then its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continue_then_early_hints_then_the_answer() {
    let up = hinting(Duration::from_secs(5)).await;
    let weir = Weir::start(&config(up.addr, "passthrough", ""));
    let mut tcp = TcpStream::connect(weir.addr).await.unwrap();
    let mut buf = Vec::new();
    tcp.write_all(
        b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    )
    .await
    .unwrap();
    let go_on = head(&mut tcp, &mut buf).await;
    assert_eq!(status(&go_on), 100, "{go_on}");
    tcp.write_all(b"hello").await.unwrap();
    let hints = head(&mut tcp, &mut buf).await;
    assert_eq!(status(&hints), 103, "one 100, then the hints: {hints}");
    up.seen.notify_one();
    let last = head(&mut tcp, &mut buf).await;
    assert_eq!(status(&last), 200, "{last}");
    assert_eq!(body(&mut tcp, &mut buf, 4).await, "ok 5");
    assert_eq!(up.in_time.load(Ordering::SeqCst), 1);
}

/// An HTTP/1.0 client cannot take a 1xx (RFC 9110 §15.2): it gets the final answer only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_1_0_client_gets_no_interim_response() {
    let up = hinting(Duration::from_millis(300)).await;
    let weir = Weir::start(&config(up.addr, "hyper", ""));
    let mut tcp = TcpStream::connect(weir.addr).await.unwrap();
    let mut buf = Vec::new();
    tcp.write_all(b"GET /old HTTP/1.0\r\nHost: a\r\n\r\n")
        .await
        .unwrap();
    let first = head(&mut tcp, &mut buf).await;
    assert_eq!(status(&first), 200, "{first}");
    assert_eq!(up.requests.load(Ordering::SeqCst), 1);
    assert_eq!(up.in_time.load(Ordering::SeqCst), 0);
}
