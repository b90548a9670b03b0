//! HTTP/2 clients to HTTP/1 upstreams through weir's own HTTP/1 client (`h1::client`,
//! `upstream::PooledBody`): what crosses the protocol line on the wire, checked against a
//! scripted upstream on a real socket that records every byte it is sent.

mod common;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Frame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use common::client::h2c;
use common::weir::Weir;

/// What the upstream does with the next request it reads: answer these bytes, or close the
/// connection without a word.
#[derive(Clone)]
enum Answer {
    Bytes(&'static [u8]),
    Close,
}

/// An HTTP/1 upstream that reads whole requests (Content-Length or chunked bodies) and answers
/// each with the next of its script; it records every connection's bytes.
struct Scripted {
    addr: SocketAddr,
    /// Each connection's received bytes, in the order they were accepted.
    received: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Scripted {
    async fn start(script: Vec<Answer>) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let record = received.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let index = {
                    let mut all = record.lock().unwrap();
                    all.push(Vec::new());
                    all.len() - 1
                };
                tokio::spawn(serve(tcp, index, record.clone(), script.clone()));
            }
        });
        Scripted { addr, received }
    }

    fn connections(&self) -> Vec<String> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }
}

async fn serve(
    mut tcp: TcpStream,
    index: usize,
    record: Arc<Mutex<Vec<Vec<u8>>>>,
    script: Arc<Mutex<VecDeque<Answer>>>,
) {
    let mut buf = Vec::new();
    loop {
        // One whole request: its head, then its body by its framing.
        let end = loop {
            if let Some(end) = request_end(&buf) {
                break end;
            }
            let mut chunk = [0u8; 4096];
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    record.lock().unwrap()[index].extend_from_slice(&chunk[..n]);
                }
            }
        };
        buf.drain(..end);
        let next = script.lock().unwrap().pop_front();
        match next {
            Some(Answer::Bytes(bytes)) => {
                if tcp.write_all(bytes).await.is_err() {
                    return;
                }
            }
            Some(Answer::Close) | None => return,
        }
    }
}

/// Where the first whole request in `buf` ends, if it is all there.
fn request_end(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = String::from_utf8_lossy(&buf[..head]).to_ascii_lowercase();
    if text.contains("transfer-encoding: chunked") {
        // The last chunk, then the trailer section up to its empty line. (The tests' chunk
        // data never holds "\r\n0\r\n".)
        let rest = &buf[head..];
        let last = if rest.starts_with(b"0\r\n") {
            0
        } else {
            rest.windows(5).position(|w| w == b"\r\n0\r\n")? + 2
        };
        let end = rest[last + 1..].windows(4).position(|w| w == b"\r\n\r\n")? + 4;
        return Some(head + last + 1 + end);
    }
    let length = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
    (buf.len() >= head + length).then_some(head + length)
}

fn route_to(upstream: SocketAddr) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{upstream}\"]}}\n"
    )
}

/// A request body of data frames then trailers, its length unknown (so no Content-Length).
struct Frames(VecDeque<Frame<Bytes>>);

impl hyper::body::Body for Frames {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.get_mut().0.pop_front().map(Ok))
    }
}

/// Status, body and trailers of one response.
async fn whole(
    resp: http::Response<hyper::body::Incoming>,
) -> (u16, Bytes, Option<HeaderMap>, HeaderMap) {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let collected = resp.into_body().collect().await.expect("a whole body");
    let trailers = collected.trailers().cloned();
    (status, collected.to_bytes(), trailers, headers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunked_answer_reaches_an_h2_client_decoded_with_its_trailers_and_the_connection_is_reused(
) {
    let chunked: &'static [u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\
        transfer-encoding: chunked\r\nx-up: 1\r\n\r\n\
        5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\ngrpc-status: 0\r\nx-trailer: done\r\n\r\n";
    let up = Scripted::start(vec![Answer::Bytes(chunked), Answer::Bytes(chunked)]).await;
    let weir = Weir::start(&route_to(up.addr));
    let mut h2 = h2c(weir.addr).await;
    for _ in 0..2 {
        let req = Request::get("http://app.test/c")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let (status, body, trailers, headers) = whole(h2.send_request(req).await.unwrap()).await;
        assert_eq!(status, 200);
        assert_eq!(body, "hello world!", "the chunks' data, decoded and joined");
        assert_eq!(headers["x-up"], "1");
        assert!(headers.get("transfer-encoding").is_none(), "{headers:?}");
        let trailers = trailers.expect("the upstream's trailers");
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(trailers["x-trailer"], "done");
    }
    let connections = up.connections();
    assert_eq!(
        connections.len(),
        1,
        "the second request reused the connection"
    );
    let first = &connections[0];
    assert!(
        first.starts_with("GET /c HTTP/1.1\r\n"),
        "origin-form, HTTP/1.1: {first}"
    );
    assert!(
        first.contains("host: app.test\r\n"),
        ":authority became Host: {first}"
    );
    assert!(
        !first.contains("content-length"),
        "a bodiless GET says nothing of length"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_unknown_length_goes_chunked_with_its_trailers_and_a_known_one_with_its_length() {
    let ok: &'static [u8] = b"HTTP/1.1 204 No Content\r\n\r\n";
    let up = Scripted::start(vec![
        Answer::Bytes(ok),
        Answer::Bytes(ok),
        Answer::Bytes(ok),
    ])
    .await;
    let weir = Weir::start(&route_to(up.addr));

    let mut trailers = HeaderMap::new();
    trailers.insert("x-checksum", "abc".parse().unwrap());
    let frames = Frames(VecDeque::from(vec![
        Frame::data(Bytes::from_static(b"first ")),
        Frame::data(Bytes::from_static(b"second")),
        Frame::trailers(trailers),
    ]));
    let mut h2 = h2c(weir.addr).await;
    let req = Request::post("http://app.test/up").body(frames).unwrap();
    let (status, ..) = whole(h2.send_request(req).await.unwrap()).await;
    assert_eq!(status, 204);

    let mut sized = h2c(weir.addr).await;
    let req = Request::put("http://app.test/sized")
        .body(Full::new(Bytes::from_static(b"0123456789")))
        .unwrap();
    let (status, ..) = whole(sized.send_request(req).await.unwrap()).await;
    assert_eq!(status, 204);

    let mut empty = h2c(weir.addr).await;
    let req = Request::post("http://app.test/empty")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let (status, ..) = whole(empty.send_request(req).await.unwrap()).await;
    assert_eq!(status, 204);

    let wire = up.connections().concat();
    let streamed = wire
        .find("POST /up HTTP/1.1\r\n")
        .expect("the streamed request");
    let streamed = &wire[streamed..];
    assert!(
        streamed.contains("transfer-encoding: chunked\r\n"),
        "{streamed}"
    );
    assert!(
        streamed.contains("\r\n\r\n6\r\nfirst \r\n6\r\nsecond\r\n0\r\nx-checksum: abc\r\n\r\n")
            || streamed.contains("\r\n\r\nc\r\nfirst second\r\n0\r\nx-checksum: abc\r\n\r\n"),
        "each data frame a chunk, the trailers after the last: {streamed}"
    );
    let sized = &wire[wire
        .find("PUT /sized HTTP/1.1\r\n")
        .expect("the sized request")..];
    assert!(sized.contains("content-length: 10\r\n"), "{sized}");
    assert!(sized.contains("\r\n\r\n0123456789"), "{sized}");
    assert!(!sized.contains("transfer-encoding"), "{sized}");
    let empty = &wire[wire
        .find("POST /empty HTTP/1.1\r\n")
        .expect("the empty POST")..];
    assert!(
        empty.contains("content-length: 0\r\n"),
        "a POST with no content says so (RFC 9110 §8.6): {empty}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interim_answers_are_passed_over_and_a_head_answer_keeps_the_connection() {
    let up = Scripted::start(vec![
        Answer::Bytes(
            b"HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n\
              HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
        ),
        // HEAD: a length, and no body after it.
        Answer::Bytes(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n"),
        Answer::Bytes(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nagain"),
    ])
    .await;
    let weir = Weir::start(&route_to(up.addr));
    let mut h2 = h2c(weir.addr).await;
    let req = Request::get("http://app.test/hints")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let (status, body, ..) = whole(h2.send_request(req).await.unwrap()).await;
    assert_eq!((status, &body[..]), (200, &b"ok"[..]));

    let req = Request::head("http://app.test/h")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let (status, body, _, headers) = whole(h2.send_request(req).await.unwrap()).await;
    assert_eq!(status, 200);
    assert!(body.is_empty());
    assert_eq!(headers["content-length"], "1000");

    let req = Request::get("http://app.test/after")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let (status, body, ..) = whole(h2.send_request(req).await.unwrap()).await;
    assert_eq!((status, &body[..]), (200, &b"again"[..]));
    assert_eq!(
        up.connections().len(),
        1,
        "one connection carried all three"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_connection_closed_unanswered_sends_a_get_again_but_never_a_post() {
    let ok: &'static [u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    // Connection 1 answers once, then closes on the next request without a word; connection 2
    // answers the GET sent again; then the same for a POST.
    let up = Scripted::start(vec![
        Answer::Bytes(ok),
        Answer::Close,
        Answer::Bytes(ok),
        Answer::Close,
    ])
    .await;
    let weir = Weir::start(&route_to(up.addr));
    let mut h2 = h2c(weir.addr).await;
    let get = || {
        Request::get("http://app.test/g")
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    let (status, ..) = whole(h2.send_request(get()).await.unwrap()).await;
    assert_eq!(status, 200);
    let (status, body, ..) = whole(h2.send_request(get()).await.unwrap()).await;
    assert_eq!(
        (status, &body[..]),
        (200, &b"ok"[..]),
        "the GET went again on a fresh connection"
    );
    assert_eq!(up.connections().len(), 2);

    // The POST may have been acted on: it is answered 502, not sent twice.
    let post = Request::post("http://app.test/p")
        .body(Full::new(Bytes::from_static(b"once")))
        .unwrap();
    let (status, ..) = whole(h2.send_request(post).await.unwrap()).await;
    assert_eq!(status, 502);
    let posts = up.connections().concat().matches("POST /p").count();
    assert_eq!(posts, 1, "the POST reached the upstream once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_chunked_answer_resets_the_stream_after_what_came_and_the_connection_is_not_reused(
) {
    let up = Scripted::start(vec![
        Answer::Bytes(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n"),
        Answer::Bytes(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nnext"),
    ])
    .await;
    let weir = Weir::start(&route_to(up.addr));
    let mut h2 = h2c(weir.addr).await;
    let req = Request::get("http://app.test/broken")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = h2.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200, "the head had come");
    let body = tokio::time::timeout(Duration::from_secs(5), resp.into_body().collect()).await;
    assert!(
        matches!(body, Ok(Err(_))),
        "the client sees the stream broken, not a whole answer"
    );
    let req = Request::get("http://app.test/next")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let (status, body, ..) = whole(h2.send_request(req).await.unwrap()).await;
    assert_eq!((status, &body[..]), (200, &b"next"[..]));
    assert_eq!(
        up.connections().len(),
        2,
        "the broken connection was closed, not pooled"
    );
}
