//! A client's HTTP/2 request body as the pipeline reads it: the DATA received on its stream,
//! each chunk's window given back when the pipeline takes it, then the trailers.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::RequestSource;

/// A request body read from a client's HTTP/2 stream.
pub struct H2RequestBody {
    /// None for a request without content (its HEADERS ended the stream), or once the body
    /// gave its end: nothing left to ask the connection.
    source: Option<Arc<dyn RequestSource>>,
    id: u32,
    /// What content-length said is left, if it said (`ServerConn` holds the stream to it).
    remaining: Option<u64>,
}

/// Why a request body ended before its end.
#[derive(Debug)]
pub struct StreamGone(pub &'static str);

impl fmt::Display for StreamGone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/2 request stream ended early: {}", self.0)
    }
}

impl std::error::Error for StreamGone {}

impl H2RequestBody {
    /// The body of stream `id` of `source`, with content to come.
    pub fn new(source: Arc<dyn RequestSource>, id: u32, content_length: Option<u64>) -> Self {
        H2RequestBody {
            source: Some(source),
            id,
            remaining: content_length,
        }
    }

    /// The body of a request that has none.
    pub fn empty() -> Self {
        H2RequestBody {
            source: None,
            id: 0,
            remaining: Some(0),
        }
    }
}

impl Body for H2RequestBody {
    type Data = Bytes;
    type Error = StreamGone;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamGone>>> {
        let this = &mut *self;
        let Some(source) = &this.source else {
            return Poll::Ready(None);
        };
        let polled = source.poll_frame(this.id, cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(left)) = (frame.data_ref(), this.remaining.as_mut()) {
                    *left = left.saturating_sub(data.len() as u64);
                }
            }
            // The end, or the trailers that are its end: the stream no longer needs the body.
            Poll::Ready(_) => this.finish(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        match &self.source {
            None => true,
            Some(source) => source.is_end_stream(self.id),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self.remaining {
            _ if self.source.is_none() => SizeHint::with_exact(0),
            Some(left) => SizeHint::with_exact(left),
            None => SizeHint::default(),
        }
    }
}

impl H2RequestBody {
    /// The whole body, when all of it came already as one chunk without trailers (a gRPC
    /// unary call's message, a small form): taken, and the body is at its end. None, and
    /// nothing taken, otherwise.
    pub fn take_whole(&mut self) -> Option<Bytes> {
        let whole = self.source.as_ref()?.take_whole(self.id)?;
        self.remaining = Some(0);
        self.finish();
        Some(whole)
    }

    /// The body gave its end (or its error): its side of the stream is done.
    fn finish(&mut self) {
        if let Some(source) = self.source.take() {
            source.finished(self.id);
        }
    }
}

impl Drop for H2RequestBody {
    fn drop(&mut self) {
        self.finish();
    }
}
