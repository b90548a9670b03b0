//! What an upstream answers with: hyper's body from an HTTP/1 connection, the h2 stream's
//! from an HTTP/2 pool connection. An enum rather than a boxed trait object: no allocation.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

use super::body::BoxError;
use super::h2pool::H2Body;

pub enum AnswerBody {
    Http1(Incoming),
    Http2(H2Body),
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            AnswerBody::Http1(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            AnswerBody::Http2(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            AnswerBody::Http1(b) => b.is_end_stream(),
            AnswerBody::Http2(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            AnswerBody::Http1(b) => b.size_hint(),
            AnswerBody::Http2(b) => b.size_hint(),
        }
    }
}
