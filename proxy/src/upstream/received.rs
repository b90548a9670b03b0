//! A body as it arrived on a connection: hyper's from an HTTP/1 connection, weir's HTTP/2
//! engine's from a client or from a pooled HTTP/2 upstream, weir's own from a pooled HTTP/1
//! upstream connection. Both legs: a client's request body, an upstream's response
//! body. An enum rather than a boxed trait object: no allocation.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

use super::h2pool::response::ResponseStream;
use crate::h2link::H2RequestBody;

/// The error of a body that crossed the proxy (either leg's, boxed).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub enum Received {
    Http1(Incoming),
    /// A response from an HTTP/2 upstream of the pool (`super::h2pool`).
    H2Response(ResponseStream),
    /// A client's request body from a connection weir serves with its own HTTP/2 engine
    /// (`listen::h2`).
    H2Request(H2RequestBody),
    /// An HTTP/1 upstream's response, read by weir (`super::PooledBody`). Boxed: it holds
    /// the connection, and inline it would widen every body, a client's request body too; and
    /// as a body, not by its name, since it holds its endpoint's lease (this file is below the
    /// endpoint's, which sends bodies of this type).
    Pooled(Pin<Box<dyn Body<Data = Bytes, Error = BoxError> + Send>>),
}

impl Received {
    /// The whole body when it is a client's HTTP/2 body that came already as one chunk
    /// (`H2RequestBody::take_whole`); None, and nothing taken, otherwise.
    pub fn take_whole(&mut self) -> Option<Bytes> {
        match self {
            Received::H2Request(b) => b.take_whole(),
            _ => None,
        }
    }
}

impl Body for Received {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            Received::Http1(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            Received::H2Response(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            Received::H2Request(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            Received::Pooled(b) => b.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Received::Http1(b) => b.is_end_stream(),
            Received::H2Response(b) => b.is_end_stream(),
            Received::H2Request(b) => b.is_end_stream(),
            Received::Pooled(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Received::Http1(b) => b.size_hint(),
            Received::H2Response(b) => b.size_hint(),
            Received::H2Request(b) => b.size_hint(),
            Received::Pooled(b) => b.size_hint(),
        }
    }
}
