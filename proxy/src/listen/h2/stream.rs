//! One HTTP/2 stream from a client: the request through the pipeline, given up where it stands
//! if the client resets the stream first, then the answer queued under the client's windows.
//! Polled in place by the connection's task, which writes what it queues.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;

use super::link::Link;
use super::response;
use crate::forward::body::ResponseBody;
use crate::h2link::{maps, wire_fields};
use crate::h2wire::frame::ErrorCode;
use crate::upstream::Received;

/// A stream's hold on its connection: to see it reset, and to send. Dropped with the stream's
/// future, it tells the connection, which cuts a response left incomplete (RST_STREAM CANCEL).
pub struct StreamHandle {
    link: Link,
    id: u32,
}

impl StreamHandle {
    pub(super) fn new(link: Link, id: u32) -> Self {
        StreamHandle { link, id }
    }

    /// Whether the stream is gone (reset, or its connection); if not, this task is woken when
    /// it goes or when it may send more.
    fn gone(&self, cx: &Context<'_>) -> bool {
        let id = self.id;
        self.link.update(|core| core.stream_wait(id, cx, false))
    }
}

impl Drop for StreamHandle {
    fn drop(&mut self) {
        let id = self.id;
        self.link.update(|core| core.stream_ended(id));
    }
}

/// Serves one stream to its end: `handler` (the pipeline) answers `req`.
pub async fn serve<G, H>(handler: G, req: Request<Received>, stream: StreamHandle)
where
    G: FnOnce(Request<Received>) -> H,
    H: Future<Output = Response<ResponseBody>>,
{
    // In a block of its own: the request's future is gone before the answer is written, so
    // the two never take room in this future at once.
    let answer = {
        let mut handling = pin!(handler(req));
        poll_fn(|cx| {
            if let Poll::Ready(resp) = handling.as_mut().poll(cx) {
                return Poll::Ready(Some(resp));
            }
            // The client gave up (RST_STREAM): the request is dropped where it stands, its
            // upstream stream or connection with it.
            if stream.gone(cx) {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await
    };
    match answer {
        Some(resp) => answer_with(resp, &stream).await,
        None => tracing::debug!("client reset its HTTP/2 stream before the answer"),
    }
}

/// Queues the head, then the body as the windows allow, then the trailers or END_STREAM. A body
/// that breaks resets the stream (INTERNAL_ERROR): a cut answer must not look whole.
async fn answer_with(resp: Response<ResponseBody>, stream: &StreamHandle) {
    let (mut parts, mut body) = resp.into_parts();
    response::add_length(&mut parts, &body);
    let end = body.is_end_stream();
    let id = stream.id;
    let status = parts.status.as_u16();
    let sent = stream.link.update(|core| {
        let sent = core
            .conn
            .respond(id, status, wire_fields(&parts.headers), end);
        if !sent {
            // A head the engine will not send (a 1xx status): the client learns of it as a
            // reset rather than waiting. Nothing when the stream is gone already.
            core.conn.reset(id, ErrorCode::INTERNAL_ERROR);
        } else if end {
            core.response_done(id);
        }
        sent
    });
    // The head is on the wire (or never will be): its map goes back to the stock.
    maps::give_back(parts.headers);
    if !sent || end {
        return;
    }
    loop {
        let frame = poll_fn(|cx| match Pin::new(&mut body).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(Some(frame)),
            Poll::Pending if stream.gone(cx) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        })
        .await;
        let Some(frame) = frame else {
            return;
        };
        match frame {
            None => {
                stream.link.update(|core| {
                    core.conn.send_data(id, &[], true);
                    core.response_done(id);
                });
                return;
            }
            Some(Err(err)) => {
                tracing::debug!(error = %err, "response body to an HTTP/2 client broke");
                stream
                    .link
                    .update(|core| core.conn.reset(id, ErrorCode::INTERNAL_ERROR));
                return;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    let end = body.is_end_stream();
                    if (!data.is_empty() || end) && !send(stream, data, end).await {
                        return;
                    }
                    if end {
                        return;
                    }
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        stream.link.update(|core| {
                            core.conn.send_trailers(id, wire_fields(&trailers));
                            core.response_done(id);
                        });
                        maps::give_back(trailers);
                    }
                    return;
                }
            },
        }
    }
}

/// Queues `data` as the windows open; false when the stream went first.
async fn send(stream: &StreamHandle, data: Bytes, end: bool) -> bool {
    let id = stream.id;
    let mut taken = 0;
    poll_fn(|cx| {
        stream.link.update(|core| {
            let rest = data.get(taken..).unwrap_or_default();
            taken += core.conn.send_data(id, rest, end);
            if taken == data.len() {
                if end {
                    core.response_done(id);
                }
                return Poll::Ready(true);
            }
            if core.stream_wait(id, cx, true) {
                return Poll::Ready(false);
            }
            Poll::Pending
        })
    })
    .await
}
