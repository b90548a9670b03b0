//! One HTTP/2 stream from a client: the request through the pipeline (`forward::handle`),
//! given up where it stands if the client resets the stream first, then the answer written
//! back under the client's window.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderValue, Request, Response};
use http_body::Body;

use crate::forward::body::ResponseBody;
use crate::h2flow::{content_length, H2Body, Pump};
use crate::pipeline::ConnState;
use crate::upstream::Received;

/// Serves one stream to its end.
pub async fn serve(
    state: ConnState,
    req: Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let length = content_length(req.headers());
    let req = req.map(|recv| Received::Http2(H2Body::new(recv, length)));
    // In a block of its own: the request's future is gone before the answer is written, so
    // the two never take room in this future at once (a stream's future is moved three times
    // on its way into the connection's set; a smaller one is copied for less).
    let answer = {
        let mut handling = pin!(crate::forward::handle(&state.0, req, &state.1));
        poll_fn(|cx| {
            if let Poll::Ready(resp) = handling.as_mut().poll(cx) {
                return Poll::Ready(Some(resp));
            }
            // The client gave up (RST_STREAM): the request is dropped where it stands, its
            // upstream stream or connection with it.
            respond.poll_reset(cx).map(|_| None)
        })
        .await
    };
    let Some(resp) = answer else {
        tracing::debug!("client reset its HTTP/2 stream before the answer");
        return;
    };
    if let Err(err) = answer_with(resp, &mut respond).await {
        tracing::debug!(error = %err, "HTTP/2 answer to the client stopped");
    }
}

/// Writes the head, then the body (its trailers too) as the client's window allows.
async fn answer_with(
    resp: Response<ResponseBody>,
    respond: &mut h2::server::SendResponse<Bytes>,
) -> Result<(), h2::Error> {
    let (mut parts, body) = resp.into_parts();
    let end = body.is_end_stream();
    if !end && !parts.headers.contains_key(CONTENT_LENGTH) {
        // A body of known length says so, as hyper's server did.
        if let Some(len) = body.size_hint().exact() {
            parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
        }
    }
    let stream = match respond.send_response(Response::from_parts(parts, ()), end) {
        Ok(stream) => stream,
        Err(err) => {
            // A head h2 will not send (a connection-specific field the rules let through):
            // the client learns of it as a reset rather than waiting.
            respond.send_reset(h2::Reason::INTERNAL_ERROR);
            return Err(err);
        }
    };
    if !end {
        // An upstream body that breaks resets the client's stream: a cut answer must not
        // look whole.
        Pump::new(body, stream, h2::Reason::INTERNAL_ERROR).await?;
    }
    Ok(())
}
