//! The h2 crate's server, as the interop tests' peer.

use std::error::Error;
use std::future::poll_fn;
use std::task::Poll;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub const MIB: usize = 1 << 20;

/// Octets that say where they are: a body whose every byte can be checked.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ seed).collect()
}

/// Serves one connection with the h2 crate: `/echo` sends the body back, `/big` 3 MiB,
/// `/grpc` the body back with gRPC trailers, `/get` a line, `/refuse` REFUSED_STREAM, and
/// `/goaway` ends the connection with GOAWAY(NO_ERROR) at once.
pub async fn serve(
    listener: TcpListener,
    max_streams: u32,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let (socket, _) = listener.accept().await?;
    let mut conn = h2::server::Builder::new()
        .max_concurrent_streams(max_streams)
        .handshake::<_, Bytes>(socket)
        .await?;
    let (shutdown, mut shutdowns) = mpsc::unbounded_channel::<()>();
    loop {
        let next = poll_fn(|cx| {
            while let Poll::Ready(Some(())) = shutdowns.poll_recv(cx) {
                conn.abrupt_shutdown(h2::Reason::NO_ERROR);
            }
            conn.poll_accept(cx)
        })
        .await;
        match next {
            Some(Ok((req, respond))) => {
                tokio::spawn(answer(req, respond, shutdown.clone()));
            }
            Some(Err(e)) => return Err(e.into()),
            None => return Ok(()),
        }
    }
}

async fn answer(
    req: Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    shutdown: mpsc::UnboundedSender<()>,
) -> Result<(), h2::Error> {
    let (parts, mut body) = req.into_parts();
    match parts.uri.path() {
        "/refuse" => {
            respond.send_reset(h2::Reason::REFUSED_STREAM);
            return Ok(());
        }
        "/goaway" => {
            let _ = shutdown.send(());
            return Ok(());
        }
        _ => {}
    }
    let mut got = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        body.flow_control().release_capacity(chunk.len())?;
        got.extend_from_slice(&chunk);
    }
    let mut head = Response::builder().status(200);
    if let Some(tag) = parts.headers.get("x-tag") {
        head = head.header("x-tag", tag);
    }
    let (content, trailers) = match parts.uri.path() {
        "/echo" => (got, None),
        "/big" => (pattern(3 * MIB, 0x5a), None),
        "/grpc" => {
            head = head.header("content-type", "application/grpc");
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", HeaderValue::from_static("0"));
            trailers.insert("grpc-message", HeaderValue::from_static("done"));
            (got, Some(trailers))
        }
        _ => (
            format!("hello {}", parts.uri.query().unwrap_or("")).into_bytes(),
            None,
        ),
    };
    if trailers.is_none() {
        head = head.header("content-length", content.len());
    }
    let head = head
        .body(())
        .map_err(|_| h2::Error::from(h2::Reason::INTERNAL_ERROR))?;
    let mut send = respond.send_response(head, false)?;
    send.send_data(Bytes::from(content), trailers.is_none())?;
    if let Some(trailers) = trailers {
        send.send_trailers(trailers)?;
    }
    Ok(())
}
