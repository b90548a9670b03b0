//! The HTTP/1 passthrough engine (`limits.http1_engine: passthrough`, the default) on the wire:
//! pipelining, both body framings, response shapes hyper's own server never produces, stale
//! pooled connections, and the hand-over of a connection to hyper for what it does not serve.
//! Real sockets on 127.0.0.1; the odd upstreams are scripted byte for byte.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::backend::{self, Behaviour};
use common::weir::{sample, Weir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const LIMIT: Duration = Duration::from_secs(5);

fn config(upstream: SocketAddr) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{upstream}\"]}}\n"
    )
}

/// One client connection that writes raw bytes and reads whole responses back.
struct Client {
    tcp: TcpStream,
    buf: Vec<u8>,
}

/// A response as read off the wire: the head as text, the body decoded from its framing.
#[derive(Debug)]
struct Answer {
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn status(&self) -> u16 {
        self.head[9..12].parse().unwrap()
    }

    fn field(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        Client {
            tcp: TcpStream::connect(addr).await.unwrap(),
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.tcp.write_all(bytes).await.unwrap();
    }

    /// Reads until `buf` holds `n` bytes; false if the peer closed first.
    async fn fill(&mut self, n: usize) -> bool {
        while self.buf.len() < n {
            let mut chunk = [0u8; 8192];
            let read = tokio::time::timeout(LIMIT, self.tcp.read(&mut chunk))
                .await
                .expect("weir answers in time")
                .unwrap_or(0);
            if read == 0 {
                return false;
            }
            self.buf.extend_from_slice(&chunk[..read]);
        }
        true
    }

    async fn line(&mut self) -> String {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..end + 2).collect();
                return String::from_utf8(line).unwrap();
            }
            let have = self.buf.len();
            assert!(self.fill(have + 1).await, "closed mid-line: {:?}", self.buf);
        }
    }

    async fn take(&mut self, n: usize) -> Vec<u8> {
        assert!(self.fill(n).await, "closed mid-body");
        self.buf.drain(..n).collect()
    }

    /// The next response; `head_request` says no body follows whatever the head says.
    async fn answer(&mut self, head_request: bool) -> Answer {
        let mut head = String::new();
        loop {
            let line = self.line().await;
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let mut answer = Answer {
            head,
            body: Vec::new(),
        };
        let status = answer.status();
        if head_request || status < 200 || status == 204 || status == 304 {
            return answer;
        }
        if answer
            .field("transfer-encoding")
            .is_some_and(|te| te.ends_with("chunked"))
        {
            loop {
                let size = self.line().await;
                let size = usize::from_str_radix(size.trim_end().split(';').next().unwrap(), 16)
                    .unwrap_or_else(|_| panic!("bad chunk size {size:?}"));
                if size == 0 {
                    // Trailers, then the empty line.
                    while self.line().await != "\r\n" {}
                    break;
                }
                let data = self.take(size).await;
                answer.body.extend_from_slice(&data);
                assert_eq!(self.take(2).await, b"\r\n");
            }
        } else if let Some(n) = answer.field("content-length") {
            let n: usize = n.parse().unwrap();
            answer.body = self.take(n).await;
        } else {
            // Until the connection closes.
            while self.fill(self.buf.len() + 1).await {}
            answer.body = std::mem::take(&mut self.buf);
        }
        answer
    }

    async fn get(&mut self, path: &str) -> Answer {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: test.local\r\n\r\n").as_bytes())
            .await;
        self.answer(false).await
    }

    /// Whether weir closed this connection (EOF before any further byte).
    async fn is_closed(&mut self) -> bool {
        !self.fill(self.buf.len() + 1).await
    }
}

/// An upstream that answers each request with the bytes `script` gives for its head and its
/// number on the connection (0, 1, …), exactly as given: for response shapes a real HTTP
/// library would not produce. After the bytes, the connection closes if the script says so.
/// Counts connections accepted.
/// A scripted upstream: its address, the connections it accepted and those it has closed.
struct Scripted {
    addr: SocketAddr,
    conns: Arc<AtomicU64>,
    closed: Arc<AtomicU64>,
}

async fn scripted(script: fn(&str, usize) -> (Vec<u8>, bool)) -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let conns = Arc::new(AtomicU64::new(0));
    let closed = Arc::new(AtomicU64::new(0));
    let (counter, closes) = (conns.clone(), closed.clone());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let closes = closes.clone();
            tokio::spawn(async move {
                // Counted when the connection is dropped, however the task ends.
                struct Close(Arc<AtomicU64>);
                impl Drop for Close {
                    fn drop(&mut self) {
                        self.0.fetch_add(1, Ordering::SeqCst);
                    }
                }
                let _close = Close(closes);
                // Declared after the guard, so dropped (closed) before it counts.
                let mut tcp = tcp;
                let mut buf = Vec::new();
                let mut nth = 0;
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        let mut chunk = [0u8; 4096];
                        match tcp.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    buf.drain(..end + 4);
                    let (bytes, close) = script(&head, nth);
                    nth += 1;
                    if tcp.write_all(&bytes).await.is_err() || close {
                        return;
                    }
                }
            });
        }
    });
    Scripted {
        addr,
        conns,
        closed,
    }
}

fn path_of(head: &str) -> &str {
    head.split(' ').nth(1).unwrap_or("/")
}

/// Answers with the request head it received, as the body.
fn echo_head(head: &str, _: usize) -> (Vec<u8>, bool) {
    let mut bytes =
        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", head.len()).into_bytes();
    bytes.extend_from_slice(head.as_bytes());
    (bytes, false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_in_order() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(up.addr));
    let mut client = Client::connect(weir.addr).await;
    client
        .send(
            b"GET /one HTTP/1.1\r\nHost: a\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\n\r\n\
              GET /three HTTP/1.1\r\nHost: a\r\n\r\n",
        )
        .await;
    for path in ["/one", "/two", "/three"] {
        let answer = client.answer(false).await;
        assert_eq!(answer.status(), 200, "{answer:?}");
        assert_eq!(answer.json()["path"], path);
    }
    assert_eq!(up.hits(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_larger_than_the_starting_buffer_pass_whole() {
    // A browser's head with its cookies: several times the 512 bytes a connection's buffer
    // starts with, so the buffer grows, and stays usable for the next, smaller and larger ones.
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(up.addr));
    let mut client = Client::connect(weir.addr).await;
    for size in [3000, 100, 6000] {
        let cookie = "c".repeat(size);
        let head = format!("GET /h{size} HTTP/1.1\r\nHost: a\r\nCookie: {cookie}\r\n\r\n");
        // The biggest arrives in pieces, as a slow client sends it.
        if size == 6000 {
            for piece in head.as_bytes().chunks(700) {
                client.send(piece).await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        } else {
            client.send(head.as_bytes()).await;
        }
        let answer = client.answer(false).await;
        assert_eq!(answer.status(), 200, "{answer:?}");
        assert_eq!(answer.json()["path"], format!("/h{size}"));
        assert_eq!(answer.json()["headers"]["cookie"][0], cookie.as_str());
    }
    assert_eq!(up.hits(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_pass_whole_in_either_framing() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(up.addr));
    let mut client = Client::connect(weir.addr).await;

    // Chunked, arriving in pieces.
    client
        .send(b"POST /chunked HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")
        .await;
    for piece in [&b"lo\r\n"[..], b"6;ext=1\r\n world\r\n", b"0\r\n\r\n"] {
        tokio::time::sleep(Duration::from_millis(30)).await;
        client.send(piece).await;
    }
    let answer = client.answer(false).await;
    assert_eq!(answer.status(), 200, "{answer:?}");
    assert_eq!(answer.json()["body_len"], 11);
    assert_eq!(answer.json()["headers"]["transfer-encoding"][0], "chunked");

    // A megabyte by Content-Length, on the same connection.
    let body = vec![b'x'; 1 << 20];
    client
        .send(
            format!(
                "PUT /big HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await;
    client.send(&body).await;
    let answer = client.answer(false).await;
    assert_eq!(answer.json()["body_len"], 1 << 20);
    assert_eq!(up.body_bytes.load(Ordering::SeqCst), 11 + (1 << 20));

    // And the connection still serves.
    assert_eq!(client.get("/after").await.json()["path"], "/after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_shapes_pass_through_and_the_connection_lives_on() {
    let up = scripted(|head, _| {
        let bytes: &[u8] = match path_of(head) {
            "/chunked" => {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: x-t\r\n\r\n\
                  5\r\nhello\r\n6\r\n world\r\n0\r\nx-t: 1\r\n\r\n"
            }
            "/http10" => b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "/head" => b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
            "/empty" => b"HTTP/1.1 204 No Content\r\nX-Up: 1\r\n\r\n",
            "/early" => {
                b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n\
                  HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal"
            }
            "/hop" => {
                b"HTTP/1.1 200 OK\r\nConnection: x-private\r\nX-Private: secret\r\n\
                  Keep-Alive: timeout=5\r\nX-Kept: Yes\r\nContent-Length: 0\r\n\r\n"
            }
            _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
        };
        (bytes.to_vec(), false)
    })
    .await
    .addr;
    let weir = Weir::start(&config(up));
    let mut client = Client::connect(weir.addr).await;

    let answer = client.get("/chunked").await;
    assert_eq!(answer.body, b"hello world");
    assert!(answer.head.contains("Trailer: x-t\r\n"), "{answer:?}");

    let answer = client.get("/http10").await;
    assert_eq!(answer.status(), 200);
    assert!(answer.head.starts_with("HTTP/1.1 "), "{answer:?}");
    assert_eq!(answer.body, b"ok");

    client.send(b"HEAD /head HTTP/1.1\r\nHost: a\r\n\r\n").await;
    let answer = client.answer(true).await;
    assert_eq!(answer.field("content-length"), Some("1000"), "{answer:?}");

    let answer = client.get("/empty").await;
    assert_eq!(answer.status(), 204);
    assert_eq!(answer.field("x-up"), Some("1"));

    client.send(b"GET /early HTTP/1.1\r\nHost: a\r\n\r\n").await;
    let hints = client.answer(false).await;
    assert_eq!(hints.status(), 103, "{hints:?}");
    assert!(hints.head.contains("Link: </a.css>; rel=preload"));
    let answer = client.answer(false).await;
    assert_eq!(answer.body, b"final");

    let answer = client.get("/hop").await;
    assert_eq!(answer.field("x-kept"), Some("Yes"), "{answer:?}");
    for gone in ["connection", "x-private", "keep-alive"] {
        assert_eq!(answer.field(gone), None, "{gone} is hop-by-hop: {answer:?}");
    }

    // Everything above went over one client connection, HEAD's unsent body included.
    assert_eq!(client.get("/other").await.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_heads_larger_than_the_upstream_buffer_pass_whole() {
    // An upstream connection's read buffer starts at 512 bytes, like a client's: heads of 700
    // (just past it) and 5,000 bytes grow it, a small one after them still passes, and all of
    // it goes over one pooled upstream connection.
    let up = scripted(|head, _| {
        let size: usize = path_of(head).trim_start_matches("/r").parse().unwrap_or(0);
        let bytes = format!(
            "HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 2\r\n\r\nok",
            "b".repeat(size)
        );
        (bytes.into_bytes(), false)
    })
    .await;
    let weir = Weir::start(&config(up.addr));
    let mut client = Client::connect(weir.addr).await;
    for size in [700, 5000, 10, 700] {
        let answer = client.get(&format!("/r{size}")).await;
        assert_eq!(answer.status(), 200, "{size}: {answer:?}");
        assert_eq!(answer.field("x-big").map(str::len), Some(size), "{size}");
        assert_eq!(answer.body, b"ok", "{size}");
    }
    assert_eq!(up.conns.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_delimited_by_close_closes_the_client_connection_too() {
    let up = scripted(|_, _| (b"HTTP/1.1 200 OK\r\n\r\nuntil the end".to_vec(), true))
        .await
        .addr;
    let weir = Weir::start(&config(up));
    let mut client = Client::connect(weir.addr).await;
    let answer = client.get("/").await;
    assert_eq!(answer.field("connection"), Some("close"), "{answer:?}");
    assert_eq!(answer.body, b"until the end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_connection_the_upstream_dropped_is_replaced_unseen() {
    // Keep-alive by the message, closed right after by the upstream: weir pools a dead
    // connection every time.
    let up = scripted(|_, _| {
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
            true,
        )
    })
    .await;
    let conns = up.conns.clone();
    let weir = Weir::start(&config(up.addr));
    let mut client = Client::connect(weir.addr).await;
    for i in 0..5 {
        let answer = client.get("/").await;
        assert_eq!(answer.status(), 200, "request {i}: {answer:?}");
        // The upstream has closed it (on a loaded machine its close can trail its answer): the
        // connection weir pooled is dead now, which is the case under test.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while up.closed.load(Ordering::SeqCst) < up.conns.load(Ordering::SeqCst) {
            assert!(
                std::time::Instant::now() < deadline,
                "the upstream never closed"
            );
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        // A POST is never sent twice; it must not meet the dead connection either.
        client
            .send(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
            .await;
        let answer = client.answer(false).await;
        assert_eq!(answer.status(), 200, "POST {i}: {answer:?}");
    }
    assert_eq!(
        conns.load(Ordering::SeqCst),
        10,
        "a fresh connection each time"
    );
    let text = weir.metrics().await;
    assert_eq!(
        sample(&text, "weir_upstream_errors_total", &[("kind", "reset")]),
        0.0,
        "no exchange failed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_idempotent_request_is_sent_again_when_a_pooled_connection_fails() {
    // The second request on each upstream connection is read and then dropped unanswered, as
    // by an upstream closing an idle connection just as the request arrived.
    let Scripted {
        addr: up, conns, ..
    } = scripted(|_, nth| match nth {
        0 => (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
            false,
        ),
        _ => (Vec::new(), true),
    })
    .await;
    let weir = Weir::start(&config(up));
    let mut client = Client::connect(weir.addr).await;
    assert_eq!(client.get("/").await.status(), 200);
    // Pooled connection, dropped: a GET goes again on a fresh one and the client never knows.
    let answer = client.get("/").await;
    assert_eq!(answer.status(), 200, "{answer:?}");
    assert_eq!(conns.load(Ordering::SeqCst), 2);
    // A POST may have been acted on: it is not sent twice, the client hears of the failure.
    client
        .send(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
        .await;
    let answer = client.answer(false).await;
    assert_eq!(answer.status(), 502, "{answer:?}");
    assert_eq!(
        conns.load(Ordering::SeqCst),
        2,
        "no second connection for the POST"
    );
    let text = weir.metrics().await;
    assert_eq!(
        sample(&text, "weir_upstream_errors_total", &[("kind", "reset")]),
        1.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_speaking_garbage_gets_the_client_a_502() {
    let up = scripted(|_, _| (b"SSH-2.0-OpenSSH_9.2\r\n\r\n".to_vec(), true))
        .await
        .addr;
    let weir = Weir::start(&config(up));
    let mut client = Client::connect(weir.addr).await;
    let answer = client.get("/").await;
    assert_eq!(answer.status(), 502, "{answer:?}");
    assert_eq!(
        String::from_utf8_lossy(&answer.body),
        "weir: upstream sent a malformed response (stable backend)\n"
    );
    // Nothing of the request body was left unread: the client connection stays.
    assert_eq!(client.get("/").await.status(), 502);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_goes_to_hyper_for_what_passthrough_does_not_serve() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(up.addr));
    let mut client = Client::connect(weir.addr).await;
    client.send(b"GET /first HTTP/1.1\r\nHost: a\r\n\r\n").await;
    assert_eq!(client.answer(false).await.json()["path"], "/first");

    // Expect: 100-continue is hyper's to answer: the connection changes hands, and the
    // bytes weir had read already go with it.
    client
        .send(b"POST /second HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        .await;
    let go_on = client.answer(false).await;
    assert_eq!(go_on.status(), 100, "{go_on:?}");
    client.send(b"body").await;
    let answer = client.answer(false).await;
    assert_eq!(answer.json()["body_len"], 4, "{answer:?}");

    // Then an upgrade on the same connection: a tunnel to the upstream's echo.
    client
        .send(b"GET /tunnel HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n")
        .await;
    let switched = client.answer(false).await;
    assert_eq!(switched.status(), 101, "{switched:?}");
    client.send(b"ping").await;
    assert_eq!(client.take(4).await, b"ping");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_1_0_and_no_route_are_answered_as_before() {
    let up = backend::start("stable", Behaviour::default()).await;
    let yaml = config(up.addr).replace("- name: web\n", "- name: web\n  match: {hosts: [a]}\n");
    let weir = Weir::start(&yaml);
    let mut client = Client::connect(weir.addr).await;
    client.send(b"GET /old HTTP/1.0\r\nHost: a\r\n\r\n").await;
    let answer = client.answer(false).await;
    assert_eq!(answer.status(), 200, "{answer:?}");
    assert_eq!(answer.json()["path"], "/old");

    let mut client = Client::connect(weir.addr).await;
    client
        .send(b"GET / HTTP/1.1\r\nHost: elsewhere\r\n\r\n")
        .await;
    let answer = client.answer(false).await;
    assert_eq!(answer.status(), 404, "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_close_from_the_client_is_honoured() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(up.addr));
    let mut client = Client::connect(weir.addr).await;
    client
        .send(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        .await;
    let answer = client.answer(false).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.field("connection"), Some("close"), "{answer:?}");
    assert!(client.is_closed().await, "weir closes after answering");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_sees_the_clients_head_as_sent_or_as_hyper_rewrites_it() {
    let up = scripted(echo_head).await.addr;
    let request = b"GET /seen?q=1 HTTP/1.1\r\nHost: a\r\nX-Mixed-Case: Value\r\nX-Forwarded-For: 192.0.2.1\r\n\r\n";

    let weir = Weir::start(&config(up));
    let mut client = Client::connect(weir.addr).await;
    client.send(request).await;
    let seen = String::from_utf8(client.answer(false).await.body).unwrap();
    assert_eq!(
        seen,
        "GET /seen?q=1 HTTP/1.1\r\nHost: a\r\nX-Mixed-Case: Value\r\n\
         x-forwarded-for: 192.0.2.1, 127.0.0.1\r\nx-forwarded-proto: http\r\nx-forwarded-host: a"
    );

    // The reference engine: the same fields, re-encoded by hyper (names lower-cased).
    let yaml = config(up).replace("routes:", "limits: {http1_engine: hyper}\nroutes:");
    let weir = Weir::start(&yaml);
    let mut client = Client::connect(weir.addr).await;
    client.send(request).await;
    let seen = String::from_utf8(client.answer(false).await.body).unwrap();
    assert!(seen.starts_with("GET /seen?q=1 HTTP/1.1\r\n"), "{seen}");
    for field in [
        "host: a",
        "x-mixed-case: Value",
        "x-forwarded-for: 192.0.2.1, 127.0.0.1",
    ] {
        assert!(seen.lines().any(|l| l == field), "{field} in {seen}");
    }
}
