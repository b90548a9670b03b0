//! The connection's life: drained with streams in flight, closed when idle, given up when the
//! preface does not come.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use super::harness::{client, read_all, start, within, Handler};
use crate::forward::body::ResponseBody;
use crate::listen::spec::LimitsSpec;

/// Answers after the milliseconds the path names (`/300`), or at once.
fn delayed() -> Handler {
    Arc::new(|req| {
        Box::pin(async move {
            let ms: u64 = req
                .uri()
                .path()
                .trim_start_matches('/')
                .parse()
                .unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Response::new(ResponseBody::text(format!("after {ms}")))
        })
    })
}

#[tokio::test]
async fn a_drain_lets_streams_in_flight_finish_then_closes() {
    let server = start(LimitsSpec::default(), delayed()).await;
    let (mut client, conn) = client(server.addr, 65_535).await;
    let mut in_flight = Vec::new();
    for ms in [300, 400, 500] {
        let req = Request::get(format!("http://localhost/{ms}"))
            .body(())
            .expect("request");
        let (resp, _) = client.send_request(req, true).expect("send");
        in_flight.push((ms, resp));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let drain = server.drain.clone();
    let draining = tokio::spawn(async move { drain.drain().await });
    for (ms, resp) in in_flight {
        let resp = within(5, resp).await.expect("answered despite the drain");
        let (content, _) = within(5, read_all(resp.into_body())).await.expect("body");
        assert_eq!(content, format!("after {ms}").as_bytes());
    }
    within(5, draining).await.expect("drained");
    within(5, server.done)
        .await
        .expect("task")
        .expect("closed cleanly");
    // GOAWAY came: the client's connection ends without error.
    within(5, conn).await.expect("task").expect("clean end");
}

#[tokio::test]
async fn an_idle_connection_gets_goaway_and_closes() {
    let limits = LimitsSpec {
        idle_timeout: Duration::from_millis(200),
        ..LimitsSpec::default()
    };
    let server = start(limits, delayed()).await;
    let (mut client, conn) = client(server.addr, 65_535).await;
    // Busy for longer than the idle timeout: not closed in the middle of it.
    let req = Request::get("http://localhost/500")
        .body(())
        .expect("request");
    let (resp, _) = client.send_request(req, true).expect("send");
    let resp = within(5, resp).await.expect("answered");
    within(5, read_all(resp.into_body())).await.expect("body");
    within(5, server.done)
        .await
        .expect("task")
        .expect("closed cleanly");
    within(5, conn).await.expect("task").expect("clean end");
}

#[tokio::test]
async fn a_client_without_a_preface_is_dropped_at_the_head_timeout() {
    let limits = LimitsSpec {
        header_read_timeout: Duration::from_millis(200),
        max_header_bytes: 12_345,
        ..LimitsSpec::default()
    };
    let server = start(limits, delayed()).await;
    let mut socket = TcpStream::connect(server.addr).await.expect("connect");
    within(5, server.done).await.expect("task").expect("closed");
    // The server's SETTINGS and WINDOW_UPDATE, then the end.
    let mut seen = Vec::new();
    within(5, socket.read_to_end(&mut seen))
        .await
        .expect("read to the end");
    let settings = [
        0, 0, 18, 4, 0, 0, 0, 0, 0, // SETTINGS, three values
        0, 3, 0, 0, 0, 200, // MAX_CONCURRENT_STREAMS
        0, 4, 0, 16, 0, 0, // INITIAL_WINDOW_SIZE 1 MiB
        0, 6, 0, 0, 0x30, 0x39, // MAX_HEADER_LIST_SIZE from max_header_bytes
    ];
    let window_update = [0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0x0f, 0, 1]; // + 983,041 = 1 MiB
    assert_eq!(seen, [&settings[..], &window_update[..]].concat());
}

#[tokio::test]
async fn a_connection_serves_on_after_a_quiet_tick_gave_its_buffers_back() {
    let limits = LimitsSpec {
        idle_timeout: Duration::from_millis(600),
        ..LimitsSpec::default()
    };
    let server = start(limits, delayed()).await;
    let (mut client, _conn) = client(server.addr, 65_535).await;
    for round in 0..3 {
        if round > 0 {
            // Past the next keepalive tick (every 300 ms; the one after a request counts it)
            // to the one after it, quiet, but not to the third, idle.
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
        let req = Request::get("http://localhost/0")
            .body(())
            .expect("request");
        let (resp, _) = client.send_request(req, true).expect("send");
        let resp = within(5, resp).await.expect("answered");
        let (content, _) = within(5, read_all(resp.into_body())).await.expect("body");
        assert_eq!(content, b"after 0", "round {round}");
    }
    assert!(!server.done.is_finished());
}

#[tokio::test]
async fn a_header_list_above_the_limit_is_answered_431() {
    let limits = LimitsSpec {
        max_header_bytes: 1024,
        ..LimitsSpec::default()
    };
    let server = start(limits, delayed()).await;
    let (mut client, _conn) = client(server.addr, 65_535).await;
    let req = Request::get("http://localhost/0")
        .header("x-large", "a".repeat(2048))
        .body(())
        .expect("request");
    let (resp, _) = client.send_request(req, true).expect("send");
    let resp = within(5, resp).await.expect("answered");
    assert_eq!(resp.status(), 431);
    // The connection serves on.
    let req = Request::get("http://localhost/0")
        .body(())
        .expect("request");
    let (resp, _) = client.send_request(req, true).expect("send");
    assert_eq!(within(5, resp).await.expect("answered").status(), 200);
}
