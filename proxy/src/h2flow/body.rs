//! A body read from an HTTP/2 stream: data as it arrives, its window given back as it is
//! taken (so the peer sends only as fast as weir forwards), then the trailers.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

/// The body of a request or a response received on an HTTP/2 stream.
pub struct H2Body {
    recv: h2::RecvStream,
    data_done: bool,
    /// What content-length said is left, if it said.
    remaining: Option<u64>,
}

impl H2Body {
    /// `length`: the head's content-length, a size hint for the other leg (h2 itself holds
    /// the stream to it: more or less data is a stream error).
    pub fn new(recv: h2::RecvStream, length: Option<u64>) -> Self {
        H2Body {
            recv,
            data_done: false,
            remaining: length,
        }
    }
}

/// A head's content-length, when it states one number.
pub fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok())
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
