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
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderValue, Method, Request, Response};
use http_body::{Body, Frame, SizeHint};

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
    let mut pump = (!end).then(|| Pump {
        body,
        stream,
        reserved: false,
    });
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
    let length = resp
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok());
    Ok(resp.map(|recv| H2Body::new(recv, length)))
}

/// Methods whose request states its length even when it is zero (RFC 9110 §8.6).
fn states_length(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

/// A request body sent on its stream as it comes, never faster than the stream's window.
struct Pump {
    body: RequestBody,
    stream: h2::SendStream<Bytes>,
    /// Capacity was asked for the next chunk.
    reserved: bool,
}

impl Future for Pump {
    type Output = Result<(), h2::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            // Room for at least one byte before a chunk is read from the client: h2 buffers a
            // chunk past the window (up to its send buffer), so the client is read only as
            // fast as the upstream takes it.
            if !this.reserved {
                this.stream.reserve_capacity(1);
                this.reserved = true;
            }
            while this.stream.capacity() == 0 {
                match ready!(this.stream.poll_capacity(cx)) {
                    Some(Ok(_)) => {}
                    Some(Err(err)) => return Poll::Ready(Err(err)),
                    None => return Poll::Ready(Err(h2::Error::from(h2::Reason::CANCEL))),
                }
            }
            if let Poll::Ready(reason) = this.stream.poll_reset(cx) {
                // The server stopped the stream (RST_STREAM, e.g. NO_ERROR after an early
                // answer): the rest of the body is not wanted.
                return Poll::Ready(reason.map(|_| ()));
            }
            match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                None => return Poll::Ready(this.stream.send_data(Bytes::new(), true)),
                Some(Err(err)) => {
                    tracing::debug!(error = %err, "client request body broke");
                    this.stream.send_reset(h2::Reason::CANCEL);
                    return Poll::Ready(Ok(()));
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        this.reserved = false;
                        let end = this.body.is_end_stream();
                        this.stream.send_data(data, end)?;
                        if end {
                            return Poll::Ready(Ok(()));
                        }
                    }
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            return Poll::Ready(this.stream.send_trailers(trailers));
                        }
                    }
                },
            }
        }
    }
}

/// A response body from an HTTP/2 upstream: data as it arrives (its window given back as it is
/// taken), then the trailers.
pub struct H2Body {
    recv: h2::RecvStream,
    data_done: bool,
    /// What content-length said is left, if it said.
    remaining: Option<u64>,
}

impl H2Body {
    /// `length`: the response head's content-length, a size hint for the client's leg.
    fn new(recv: h2::RecvStream, length: Option<u64>) -> Self {
        H2Body {
            recv,
            data_done: false,
            remaining: length,
        }
    }
}

impl Body for H2Body {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        let this = &mut *self;
        if !this.data_done {
            match ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = this.recv.flow_control().release_capacity(data.len());
                    if let Some(left) = this.remaining.as_mut() {
                        *left = left.saturating_sub(data.len() as u64);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(err)) => return Poll::Ready(Some(Err(err))),
                None => this.data_done = true,
            }
        }
        match ready!(this.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(err) => Poll::Ready(Some(Err(err))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        match self.remaining {
            _ if self.recv.is_end_stream() => SizeHint::with_exact(0),
            Some(left) => SizeHint::with_exact(left),
            None => SizeHint::default(),
        }
    }
}
