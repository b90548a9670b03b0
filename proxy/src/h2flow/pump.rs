//! A body written to an HTTP/2 stream as it comes, never faster than the stream's window:
//! a request body to an upstream, a response body to a client.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::Body;

/// Sends `body` on `stream` to its end (trailers included); resolves when it is all queued,
/// or the peer reset the stream (it no longer wants the rest), or the stream failed.
pub struct Pump<B> {
    body: B,
    stream: h2::SendStream<Bytes>,
    /// Capacity was asked for the next chunk.
    reserved: bool,
    /// The reset sent to the peer when `body` breaks (its source failed).
    on_break: h2::Reason,
}

impl<B> Pump<B> {
    pub fn new(body: B, stream: h2::SendStream<Bytes>, on_break: h2::Reason) -> Self {
        Pump {
            body,
            stream,
            reserved: false,
            on_break,
        }
    }
}

impl<B> Future for Pump<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    type Output = Result<(), h2::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            // Room for at least one byte before a chunk is read from the source: h2 buffers a
            // chunk past the window (up to its send buffer), so the source is read only as
            // fast as the peer takes it.
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
                // The peer stopped the stream (RST_STREAM, e.g. NO_ERROR after an early
                // answer): the rest of the body is not wanted.
                return Poll::Ready(reason.map(|_| ()));
            }
            match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                None => return Poll::Ready(this.stream.send_data(Bytes::new(), true)),
                Some(Err(err)) => {
                    tracing::debug!(error = %err, "body to an h2 stream broke");
                    this.stream.send_reset(this.on_break);
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
