//! Exchanges with bodies both ways: echoes larger than the windows, trailers, content-length,
//! and a slow reader of a large response held to its windows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::BodyExt;

use super::harness::{client, pattern, read_all, response_of, start, within, Handler, Made};
use crate::forward::body::ResponseBody;
use crate::listen::spec::LimitsSpec;

const MIB: usize = 1 << 20;

/// `/echo`: the request body and trailers back; anything else: a line naming the path.
fn echo() -> Handler {
    Arc::new(|req| {
        Box::pin(async move {
            let path = req.uri().path().to_string();
            if path != "/echo" {
                let tag = req.headers().get("x-tag").cloned();
                let mut resp = Response::new(ResponseBody::text(format!("hello {path}")));
                if let Some(tag) = tag {
                    resp.headers_mut().insert("x-tag", tag);
                }
                return resp;
            }
            let collected = req.into_body().collect().await.expect("request body");
            let trailers = collected.trailers().cloned();
            let content = collected.to_bytes();
            let made = Arc::new(AtomicUsize::new(0));
            if trailers.is_none() {
                return Response::new(ResponseBody::text(content));
            }
            // Echoed as a body with trailers (no content-length: its size is not exact).
            let echoed = Made {
                size: 0,
                chunks: 0,
                made,
                then_break: false,
                trailers,
            };
            let mut resp = response_of(echoed);
            resp.headers_mut()
                .insert("x-length", HeaderValue::from(content.len()));
            resp
        })
    })
}

#[tokio::test]
async fn requests_and_bodies_larger_than_the_windows_go_both_ways() {
    let server = start(LimitsSpec::default(), echo()).await;
    let (client, conn) = client(server.addr, 1 << 20).await;
    let mut tasks = Vec::new();
    for i in 0..12usize {
        let mut client = client.clone();
        tasks.push(tokio::spawn(async move {
            let body = match i {
                0 => pattern(3 * MIB, 7),
                _ if i % 2 == 1 => pattern(i * 10_007, i as u8),
                _ => Vec::new(),
            };
            let path = if body.is_empty() { "/get" } else { "/echo" };
            let req = Request::post(format!("http://localhost{path}"))
                .header("x-tag", format!("t{i}"))
                .body(())
                .expect("request");
            client = client.ready().await.expect("ready");
            let (resp, mut send) = client.send_request(req, body.is_empty()).expect("send");
            if !body.is_empty() {
                send.send_data(Bytes::from(body.clone()), true)
                    .expect("data");
            }
            let resp = resp.await.expect("response");
            assert_eq!(resp.status(), 200);
            let length = resp.headers().get("content-length").cloned();
            let (content, trailers) = read_all(resp.into_body()).await.expect("body");
            assert!(trailers.is_none());
            if body.is_empty() {
                assert_eq!(content, b"hello /get");
            } else {
                assert!(content == body, "{i}: the echo differs");
            }
            assert_eq!(
                length.as_ref().map(|v| v.to_str().unwrap_or_default()),
                Some(content.len().to_string().as_str()),
                "an exact body says its length"
            );
        }));
    }
    for task in tasks {
        within(60, task).await.expect("exchange");
    }
    drop(client);
    within(10, conn).await.expect("client").expect("clean end");
    within(10, server.done)
        .await
        .expect("task")
        .expect("served");
}

#[tokio::test]
async fn trailers_go_both_ways() {
    let server = start(LimitsSpec::default(), echo()).await;
    let (mut client, _conn) = client(server.addr, 65_535).await;
    let req = Request::post("http://localhost/echo")
        .header("te", "trailers")
        .body(())
        .expect("request");
    let (resp, mut send) = client.send_request(req, false).expect("send");
    send.send_data(Bytes::from_static(b"grpc frame"), false)
        .expect("data");
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    send.send_trailers(trailers).expect("trailers");
    let resp = within(10, resp).await.expect("response");
    assert_eq!(resp.headers()["x-length"], "10");
    let (content, trailers) = within(10, read_all(resp.into_body())).await.expect("body");
    assert!(content.is_empty());
    assert_eq!(trailers.expect("trailers")["grpc-status"], "0");
}

#[tokio::test]
async fn a_slow_reader_gets_a_large_response_no_faster_than_its_window() {
    let made = Arc::new(AtomicUsize::new(0));
    let counter = made.clone();
    let handler: Handler = Arc::new(move |_req| {
        let made = counter.clone();
        Box::pin(async move {
            response_of(Made {
                size: 16 << 10,
                chunks: 512,
                made,
                then_break: false,
                trailers: None,
            })
        })
    });
    let server = start(LimitsSpec::default(), handler).await;
    let window: usize = 256 << 10;
    let (mut client, _conn) = client(server.addr, window as u32).await;
    let req = Request::get("http://localhost/big")
        .body(())
        .expect("request");
    let (resp, _) = client.send_request(req, true).expect("send");
    let resp = within(10, resp).await.expect("response");
    // Not read for a while: the server may make its window's worth and one chunk more.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let early = made.load(Ordering::SeqCst);
    assert!(
        early <= window + (32 << 10),
        "{early} octets made for a window of {window}"
    );
    let (content, _) = within(60, read_all(resp.into_body())).await.expect("body");
    assert_eq!(content.len(), 8 * MIB);
    assert!(content
        .iter()
        .enumerate()
        .all(|(i, &b)| b == (i % 251) as u8));
}

#[tokio::test]
async fn a_reset_mid_response_drops_the_response_body_and_the_connection_serves_on() {
    let made = Arc::new(AtomicUsize::new(0));
    let counter = made.clone();
    let handler: Handler = Arc::new(move |_req| {
        let made = counter.clone();
        Box::pin(async move {
            response_of(Made {
                size: 16 << 10,
                chunks: 512,
                made,
                then_break: false,
                trailers: None,
            })
        })
    });
    let server = start(LimitsSpec::default(), handler).await;
    let (mut client, _conn) = client(server.addr, 256 << 10).await;
    let req = Request::get("http://localhost/big")
        .body(())
        .expect("request");
    let (resp, _) = client.send_request(req, true).expect("send");
    let resp = within(10, resp).await.expect("response");
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Dropping the body unread resets the stream (CANCEL).
    drop(resp);
    within(5, async {
        // The test's counter and the handler's: the body's own is gone with its stream.
        while Arc::strong_count(&made) > 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let stopped = made.load(Ordering::SeqCst);
    assert!(
        stopped < MIB,
        "{stopped} octets made before the reset stopped it"
    );
    // The connection's window did not stay taken by the stream reset: another 8 MiB pass.
    let req = Request::get("http://localhost/big")
        .body(())
        .expect("request");
    let (resp, _) = client.send_request(req, true).expect("send");
    let resp = within(10, resp).await.expect("response");
    let (content, _) = within(60, read_all(resp.into_body())).await.expect("body");
    assert_eq!(content.len(), 8 * MIB);
}

/// `/whole`: the body taken whole once it has all come (`Received::take_whole`), retried every
/// few milliseconds until it has; the answer says how it was taken and echoes it. `/partial`:
/// `take_whole` is asked while the client still sends, then the body is read as it comes.
fn whole() -> Handler {
    Arc::new(|req| {
        Box::pin(async move {
            let partial = req.uri().path() == "/partial";
            let mut body = req.into_body();
            if partial {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let taken = body.take_whole();
                let content = body.collect().await.expect("request body").to_bytes();
                let mut resp = Response::new(ResponseBody::text(content));
                let said = if taken.is_none() { "no" } else { "yes" };
                resp.headers_mut()
                    .insert("x-whole", HeaderValue::from_static(said));
                return resp;
            }
            for _ in 0..500 {
                if let Some(content) = body.take_whole() {
                    use http_body::Body as _;
                    assert!(body.is_end_stream(), "a body taken whole is at its end");
                    let mut resp = Response::new(ResponseBody::text(content));
                    resp.headers_mut()
                        .insert("x-whole", HeaderValue::from_static("yes"));
                    return resp;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Response::new(ResponseBody::text("never whole"))
        })
    })
}

#[tokio::test]
async fn a_body_taken_whole_gives_its_window_back_and_one_still_coming_is_not_taken() {
    let server = start(LimitsSpec::default(), whole()).await;
    let (client, conn) = client(server.addr, 1 << 20).await;
    // 200 bodies of 8 KiB, each one DATA frame: 1.6 MiB through a connection window of 1 MiB,
    // so the later ones come only if the whole bodies taken gave their window back.
    for i in 0..200usize {
        let body = Bytes::from(pattern(8 << 10, i as u8));
        let req = Request::post("http://localhost/whole")
            .body(())
            .expect("request");
        let mut ready = client.clone().ready().await.expect("ready");
        let (resp, mut send) = ready.send_request(req, false).expect("send");
        send.send_data(body.clone(), true).expect("data");
        let resp = within(10, resp).await.expect("response");
        assert_eq!(resp.headers()["x-whole"], "yes", "request {i}");
        let (content, _) = read_all(resp.into_body()).await.expect("body");
        assert!(content == body, "request {i}: the echo differs");
    }
    // A body still coming: not taken, and read whole afterwards.
    let req = Request::post("http://localhost/partial")
        .body(())
        .expect("request");
    let mut ready = client.clone().ready().await.expect("ready");
    let (resp, mut send) = ready.send_request(req, false).expect("send");
    send.send_data(Bytes::from_static(b"first "), false)
        .expect("data");
    tokio::time::sleep(Duration::from_millis(150)).await;
    send.send_data(Bytes::from_static(b"second"), true)
        .expect("data");
    let resp = within(10, resp).await.expect("response");
    assert_eq!(resp.headers()["x-whole"], "no");
    let (content, _) = read_all(resp.into_body()).await.expect("body");
    assert_eq!(content, b"first second");
    drop((send, ready, client));
    within(10, conn).await.expect("client").expect("clean end");
    within(10, server.done)
        .await
        .expect("task")
        .expect("served");
}
