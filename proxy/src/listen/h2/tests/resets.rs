//! Streams that end early: the client resets one mid-body or before its answer, a request body
//! nobody reads, a response body that breaks.

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;
use tokio::sync::Notify;

use super::harness::{client, read_all, response_of, start, within, Handler, Made};
use crate::forward::body::ResponseBody;
use crate::listen::spec::LimitsSpec;

/// Set when dropped: the request's future was given up.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// `/hold`: takes one chunk of the body, says so, then waits for ever; `/early`: answers
/// without reading; `/broken`: a body that breaks after two chunks; `/slow`: answers late.
fn handler(dropped: Arc<AtomicBool>, first_chunk: Arc<Notify>) -> Handler {
    Arc::new(move |req| {
        let guard = Dropped(dropped.clone());
        let first_chunk = first_chunk.clone();
        Box::pin(async move {
            let _guard = guard;
            match req.uri().path() {
                "/hold" => {
                    let mut body = req.into_body();
                    let _ = body.frame().await;
                    first_chunk.notify_one();
                    std::future::pending::<()>().await;
                    unreachable!()
                }
                "/early" => Response::new(ResponseBody::text("early")),
                "/broken" => response_of(Made {
                    size: 1000,
                    chunks: 2,
                    made: Arc::new(AtomicUsize::new(0)),
                    then_break: true,
                    trailers: None,
                }),
                _ => {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Response::new(ResponseBody::Empty)
                }
            }
        })
    })
}

#[tokio::test]
async fn a_reset_mid_body_drops_the_request_and_gives_its_window_back() {
    let dropped = Arc::new(AtomicBool::new(false));
    let first_chunk = Arc::new(Notify::new());
    let server = start(
        LimitsSpec::default(),
        handler(dropped.clone(), first_chunk.clone()),
    )
    .await;
    let (mut client, _conn) = client(server.addr, 65_535).await;
    let req = Request::post("http://localhost/hold")
        .body(())
        .expect("request");
    let (_resp, mut send) = client.send_request(req, false).expect("send");
    // 900 KiB into a 1 MiB window: all of it is sent, one chunk read, the rest held.
    send.send_data(Bytes::from(vec![1u8; 900 << 10]), false)
        .expect("data");
    within(10, first_chunk.notified()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    send.send_reset(h2::Reason::CANCEL);
    within(5, async {
        while !dropped.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // Had the held octets not gone back, the connection's window would stay below 1 MiB.
    let req = Request::post("http://localhost/hold")
        .body(())
        .expect("request");
    let (_resp, mut send) = client.send_request(req, false).expect("send");
    send.reserve_capacity(1 << 20);
    within(5, async {
        while send.capacity() < (1 << 20) - (64 << 10) {
            poll_fn(|cx| send.poll_capacity(cx))
                .await
                .expect("capacity")
                .expect("capacity");
        }
    })
    .await;
}

#[tokio::test]
async fn a_reset_before_the_answer_drops_the_request_and_the_connection_serves_on() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = start(
        LimitsSpec::default(),
        handler(dropped.clone(), Arc::new(Notify::new())),
    )
    .await;
    let (mut client, _conn) = client(server.addr, 65_535).await;
    let req = Request::get("http://localhost/slow")
        .body(())
        .expect("request");
    let (resp, _) = client.send_request(req, true).expect("send");
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Dropping the response future resets the stream (CANCEL).
    drop(resp);
    within(5, async {
        while !dropped.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let req = Request::get("http://localhost/early")
        .body(())
        .expect("request");
    let (resp, _) = client.send_request(req, true).expect("send");
    let resp = within(5, resp).await.expect("response");
    let (content, _) = within(5, read_all(resp.into_body())).await.expect("body");
    assert_eq!(content, b"early");
}

#[tokio::test]
async fn a_request_body_nobody_reads_is_stopped_once_answered() {
    let server = start(
        LimitsSpec::default(),
        handler(Arc::default(), Arc::new(Notify::new())),
    )
    .await;
    let (mut client, _conn) = client(server.addr, 65_535).await;
    let req = Request::post("http://localhost/early")
        .body(())
        .expect("request");
    let (resp, mut send) = client.send_request(req, false).expect("send");
    send.send_data(Bytes::from(vec![2u8; 64 << 10]), false)
        .expect("data");
    let resp = within(5, resp).await.expect("response");
    assert_eq!(resp.status(), 200);
    let (content, _) = within(5, read_all(resp.into_body())).await.expect("body");
    assert_eq!(content, b"early");
    // RFC 9113 §8.1: a complete response, then RST_STREAM NO_ERROR for the rest.
    let reason = within(5, poll_fn(|cx| send.poll_reset(cx)))
        .await
        .expect("reset");
    assert_eq!(reason, h2::Reason::NO_ERROR);
}

#[tokio::test]
async fn a_broken_response_body_resets_the_stream() {
    let server = start(
        LimitsSpec::default(),
        handler(Arc::default(), Arc::new(Notify::new())),
    )
    .await;
    let (mut client, _conn) = client(server.addr, 65_535).await;
    let req = Request::get("http://localhost/broken")
        .body(())
        .expect("request");
    let (resp, _) = client.send_request(req, true).expect("send");
    let resp = within(5, resp).await.expect("response");
    let err = within(5, read_all(resp.into_body()))
        .await
        .expect_err("a cut answer must not look whole");
    assert_eq!(err.reason(), Some(h2::Reason::INTERNAL_ERROR));
}
