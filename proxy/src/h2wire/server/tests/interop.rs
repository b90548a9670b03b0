//! The server against the h2 crate's client over a real socket: twenty requests at once,
//! among them a 3 MiB upload echoed back, a 3 MiB download and gRPC trailers; every byte and
//! field checked.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

use super::owner::{pattern, serve, MIB};

/// What request `i` is: its path and body.
fn exchange(i: usize) -> (String, Vec<u8>) {
    match i {
        0 => ("/echo".to_string(), pattern(3 * MIB, 7)),
        1 => ("/big".to_string(), Vec::new()),
        _ => match i % 3 {
            0 => (format!("/get{i}"), Vec::new()),
            1 => ("/echo".to_string(), pattern(i * 997, i as u8)),
            _ => ("/grpc".to_string(), pattern(100 + i, 3)),
        },
    }
}

/// One request by the h2 crate's client, its response checked.
async fn one(mut client: h2::client::SendRequest<Bytes>, i: usize) {
    let (path, body) = exchange(i);
    let method = if body.is_empty() { "GET" } else { "POST" };
    let request = Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"))
        .header("x-tag", format!("t{i}"))
        .body(())
        .unwrap();
    client = client.ready().await.unwrap();
    let (response, mut stream) = client.send_request(request, body.is_empty()).unwrap();
    if !body.is_empty() {
        stream.send_data(Bytes::from(body.clone()), true).unwrap();
    }
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200, "{i}");
    let tag = format!("t{i}");
    assert_eq!(response.headers()["x-tag"], tag.as_str(), "{i}");
    let mut recv = response.into_body();
    let mut content = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.unwrap();
        recv.flow_control().release_capacity(chunk.len()).unwrap();
        content.extend_from_slice(&chunk);
    }
    let want = match path.as_str() {
        "/echo" | "/grpc" => body,
        "/big" => pattern(3 * MIB, 0x5a),
        _ => format!("hello {path}").into_bytes(),
    };
    assert!(content == want, "{i} {path}: body differs");
    let trailers = recv.trailers().await.unwrap();
    if path == "/grpc" {
        let trailers = trailers.expect("gRPC trailers");
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(trailers["grpc-message"], "done");
    } else {
        assert!(trailers.is_none(), "{i}");
    }
}

async fn twenty_exchanges() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        serve(socket, 100_000).await
    });
    let socket = TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(socket).await.unwrap();
    let driving = tokio::spawn(connection);
    let tasks: Vec<_> = (0..20)
        .map(|i| tokio::spawn(one(client.clone(), i)))
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    drop(client);
    let _ = driving.await;
    let served = timeout(Duration::from_secs(10), server).await;
    assert!(matches!(served, Ok(Ok(Ok(20)))), "{served:?}");
}

#[tokio::test]
async fn twenty_exchanges_with_the_h2_crate_client() {
    timeout(Duration::from_secs(120), twenty_exchanges())
        .await
        .expect("done within two minutes");
}
