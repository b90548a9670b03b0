//! The pool's connection against the h2 crate's server on 127.0.0.1: bodies past every
//! window both ways, trailers, a client stream answered before it ends, a response dropped
//! halfway (reset, and its window back), a refused stream, and a connection the pool let go.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;
use prometheus_client::metrics::counter::Counter;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::exchange::{exchange, Failed};
use super::{Driver, KeepAlive, Link, Signals};
use crate::h2wire::client::{ClientConn, Config};
use crate::upstream::body::RequestBody;

const LIMIT: Duration = Duration::from_secs(20);

/// A server answering each request with `serve`, one task per stream; its connection's end
/// is reported on the returned channel.
async fn server<F, Fut>(serve: F) -> (std::net::SocketAddr, mpsc::Receiver<()>)
where
    F: Fn(Request<h2::RecvStream>, h2::server::SendResponse<Bytes>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (ended, ended_rx) = mpsc::channel(4);
    let serve = Arc::new(serve);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (serve, ended) = (serve.clone(), ended.clone());
            tokio::spawn(async move {
                let mut conn = h2::server::Builder::new()
                    .initial_window_size(1 << 20)
                    .initial_connection_window_size(1 << 20)
                    .handshake::<_, Bytes>(tcp)
                    .await
                    .unwrap();
                while let Some(Ok((req, respond))) = conn.accept().await {
                    tokio::spawn(serve(req, respond));
                }
                let _ = ended.send(()).await;
            });
        }
    });
    (addr, ended_rx)
}

async fn connect(addr: std::net::SocketAddr) -> Arc<Link> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let link = Arc::new(Link::new(ClientConn::new(Config::default())));
    let signals = Arc::new(Signals::new(Counter::default()));
    let keepalive = Some(KeepAlive {
        interval: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
    });
    tokio::spawn(Driver::new(tcp, link.clone(), signals.clone(), keepalive));
    assert!(signals.settled().await, "the server's SETTINGS came");
    link
}

/// Reads a whole h2 body, giving its window back as it goes.
async fn read_all(mut recv: h2::RecvStream) -> usize {
    let mut n = 0;
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.unwrap();
        n += chunk.len();
        let _ = recv.flow_control().release_capacity(chunk.len());
    }
    n
}

fn post(body: RequestBody) -> Request<RequestBody> {
    Request::post("http://up/pkg.Svc/Call")
        .header("content-type", "application/grpc")
        .body(body)
        .unwrap()
}

fn big(len: usize) -> Bytes {
    Bytes::from((0..len).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
}

#[tokio::test]
async fn four_mib_each_way_with_trailers_past_every_window() {
    let (addr, _) = server(|req, mut respond| async move {
        let received = read_all(req.into_body()).await;
        let resp = Response::builder()
            .header("x-received", received.to_string())
            .body(())
            .unwrap();
        let mut send = respond.send_response(resp, false).unwrap();
        send.send_data(big(4 << 20), false).unwrap();
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        send.send_trailers(trailers).unwrap();
    })
    .await;
    let link = connect(addr).await;
    let req = post(RequestBody::Bytes(Some(big(4 << 20))));
    let resp = tokio::time::timeout(LIMIT, exchange(&link, req))
        .await
        .unwrap()
        .unwrap_or_else(|_| panic!("an answer"));
    assert_eq!(resp.headers()["x-received"], (4 << 20).to_string().as_str());
    let body = tokio::time::timeout(LIMIT, resp.into_body().collect())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body.trailers().unwrap()["grpc-status"], "0");
    assert_eq!(body.to_bytes(), big(4 << 20));
}

#[tokio::test]
async fn a_client_stream_goes_on_after_the_answer_came() {
    let (addr, _) = server(|req, mut respond| async move {
        // Answers at once, then reads the request to its end.
        let mut send = respond.send_response(Response::new(()), false).unwrap();
        let received = read_all(req.into_body()).await;
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-received", received.to_string().parse().unwrap());
        send.send_trailers(trailers).unwrap();
    })
    .await;
    let link = connect(addr).await;
    let (tx, rx) = mpsc::channel(4);
    let resp = tokio::time::timeout(LIMIT, exchange(&link, post(RequestBody::Mirror(rx))))
        .await
        .unwrap()
        .unwrap_or_else(|_| panic!("an answer"));
    for _ in 0..3 {
        tx.send(big(100_000)).await.unwrap();
    }
    drop(tx);
    let body = tokio::time::timeout(LIMIT, resp.into_body().collect())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body.trailers().unwrap()["x-received"], "300000");
}

#[tokio::test]
async fn a_response_dropped_halfway_resets_its_stream_and_gives_its_window_back() {
    let (resets, mut reset_rx) = mpsc::channel(4);
    let (addr, _) = server(move |req, mut respond| {
        let resets = resets.clone();
        async move {
            let first = req.uri().path() == "/first";
            let mut send = respond.send_response(Response::new(()), false).unwrap();
            // More than the client's connection window (1 MiB): the second response moves
            // only if the first one's unread data was given back.
            send.send_data(big(3 << 20), !first).unwrap();
            if first {
                let reason = std::future::poll_fn(|cx| send.poll_reset(cx)).await;
                let _ = resets.send(reason.ok()).await;
            }
        }
    })
    .await;
    let link = connect(addr).await;
    let get = |path: &str| {
        Request::get(format!("http://up{path}"))
            .body(RequestBody::Empty)
            .unwrap()
    };
    let resp = exchange(&link, get("/first"))
        .await
        .unwrap_or_else(|_| panic!("an answer"));
    let mut body = resp.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert!(!first.into_data().unwrap().is_empty());
    // Let more arrive unread, then give up on it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(body);
    let reason = tokio::time::timeout(LIMIT, reset_rx.recv()).await.unwrap();
    assert_eq!(reason, Some(Some(h2::Reason::CANCEL)));
    let resp = exchange(&link, get("/second"))
        .await
        .unwrap_or_else(|_| panic!("an answer"));
    let body = tokio::time::timeout(LIMIT, resp.into_body().collect())
        .await
        .expect("the connection's window came back")
        .unwrap();
    assert_eq!(body.to_bytes().len(), 3 << 20);
}

#[tokio::test]
async fn a_refused_stream_is_reported_as_safe_to_send_again() {
    let (addr, _) = server(|_req, mut respond| async move {
        respond.send_reset(h2::Reason::REFUSED_STREAM);
    })
    .await;
    let link = connect(addr).await;
    let req = post(RequestBody::Bytes(Some(Bytes::from_static(b"x"))));
    match tokio::time::timeout(LIMIT, exchange(&link, req))
        .await
        .unwrap()
    {
        // The head comes back, to be sent again with a copy of the body.
        Err(Failed::Refused(head)) => assert_eq!(head.uri.path(), "/pkg.Svc/Call"),
        Err(Failed::Error(err)) => panic!("refused, not {err}"),
        Err(Failed::NotSent(_)) => panic!("it was sent"),
        Ok(_) => panic!("it was refused"),
    }
}

#[tokio::test]
async fn a_connection_the_pool_let_go_closes_after_its_last_stream() {
    let (addr, mut ended) = server(|_req, mut respond| async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _ = respond.send_response(Response::new(()), true);
    })
    .await;
    let link = connect(addr).await;
    let get = Request::get("http://up/").body(RequestBody::Empty).unwrap();
    let pending = {
        let link = link.clone();
        tokio::spawn(async move { exchange(&link, get).await.is_ok() })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    link.abandon();
    // Its stream in flight still gets its answer, and then the connection closes.
    assert!(pending.await.unwrap(), "the stream in flight finished");
    tokio::time::timeout(LIMIT, ended.recv())
        .await
        .expect("the connection closed")
        .unwrap();
}

#[tokio::test]
async fn a_body_is_at_its_end_with_the_chunk_that_ended_it_and_not_before_its_trailers() {
    use http_body::Body;
    let (addr, _) = server(|req, mut respond| async move {
        let mut send = respond.send_response(Response::new(()), false).unwrap();
        if req.uri().path() == "/trailers" {
            send.send_data(Bytes::from_static(b"hello"), false).unwrap();
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", "0".parse().unwrap());
            send.send_trailers(trailers).unwrap();
        } else {
            // One DATA frame carrying END_STREAM.
            send.send_data(Bytes::from_static(b"hello"), true).unwrap();
        }
    })
    .await;
    let link = connect(addr).await;
    for (path, ends_with_the_chunk) in [("/end", true), ("/trailers", false)] {
        let get = Request::get(format!("http://up{path}"))
            .body(RequestBody::Empty)
            .unwrap();
        let resp = tokio::time::timeout(LIMIT, exchange(&link, get))
            .await
            .unwrap()
            .unwrap_or_else(|_| panic!("an answer"));
        // Whatever follows the head has come by the time the body is read.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut body = resp.into_body();
        assert!(!body.is_end_stream(), "{path}: the chunk is still to come");
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "hello");
        // Said with the last chunk, so the client's leg ends its stream on that DATA frame
        // rather than sending an empty one after it.
        assert_eq!(body.is_end_stream(), ends_with_the_chunk, "{path}");
        if !ends_with_the_chunk {
            let trailers = body.frame().await.unwrap().unwrap();
            assert_eq!(trailers.trailers_ref().unwrap()["grpc-status"], "0");
            assert!(body.is_end_stream(), "{path}: ended after the trailers");
        }
        assert!(
            body.frame().await.is_none(),
            "{path}: nothing after the end"
        );
    }
}
