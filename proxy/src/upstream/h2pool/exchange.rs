//! One request on a pool connection, on the h2 crate directly: the head goes out, the body is
//! pumped while the response head is awaited, and the response body is read with its flow
//! control window given back as it is read.
//!
//! Why not hyper's HTTP/2 client: per request it spawns a task to await the response and
//! another to pump the body, and hands the request to the connection's task over a channel and
//! the response back over a oneshot. Here the request's own future does all of it; a task is
//! spawned only for a request body that outlives the response head (a client stream).

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderValue, Method, Request, Response};
use http_body::Body;

use crate::h2flow::{content_length, H2Body, Pump};
use crate::upstream::body::RequestBody;

/// Why an exchange gave no response.
pub enum Failed {
    /// The request never went on the wire (the connection closed or went away first): it may
    /// go again as it is, whatever its method.
    NotSent(Box<Request<RequestBody>>),
    Error(h2::Error),
}

/// Sends `req` on `sender`'s connection and waits for the response head.
pub async fn exchange(
    sender: h2::client::SendRequest<Bytes>,
    req: Request<RequestBody>,
) -> Result<Response<H2Body>, Failed> {
    let mut sender = match sender.ready().await {
        Ok(sender) => sender,
        Err(_) => return Err(Failed::NotSent(Box::new(req))),
    };
    let (parts, body) = req.into_parts();
    let mut head = Request::from_parts(parts, ());
    // A body of known length states it, as an HTTP/1 upstream would have been told (and a
    // server may reject a POST without it); an empty GET says nothing.
    if let Some(len) = body.size_hint().exact() {
        if (len != 0 || states_length(head.method()))
            && !head.headers().contains_key(CONTENT_LENGTH)
        {
            head.headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(len));
        }
    }
    let end = body.is_end_stream();
    // An error here (the connection went away since `ready`) is judged like a stream's: a
    // refused one goes again from the caller's copy (`Resend`).
    let (mut response, stream) = sender.send_request(head, end).map_err(Failed::Error)?;
    // A client's body that breaks cancels the upstream's stream.
    let mut pump = (!end).then(|| Pump::new(body, stream, h2::Reason::CANCEL));
    let answer = std::future::poll_fn(|cx| {
        if let Some(p) = pump.as_mut() {
            if let Poll::Ready(done) = Pin::new(p).poll(cx) {
                pump = None;
                if let Err(err) = done {
                    // The client's body broke, or the server reset the stream: the response
                    // future reports the stream's end.
                    tracing::debug!(error = %err, "request body to an h2 upstream stopped");
                }
            }
        }
        Pin::new(&mut response).poll(cx)
    })
    .await;
    if let Some(pump) = pump {
        // The answer came before the body ended (a client stream, or an early answer): the
        // body goes on in a task of its own while the response streams back.
        tokio::spawn(async move {
            if let Err(err) = pump.await {
                tracing::debug!(error = %err, "request body to an h2 upstream stopped");
            }
        });
    }
    let resp = answer.map_err(Failed::Error)?;
    let length = content_length(resp.headers());
    Ok(resp.map(|recv| H2Body::new(recv, length)))
}

/// Methods whose request states its length even when it is zero (RFC 9110 §8.6).
fn states_length(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}
