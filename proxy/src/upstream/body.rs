//! What weir sends upstream: the client's body streamed through, or a copy for a mirror. An
//! enum rather than a boxed trait object: the common case costs no allocation.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::sync::mpsc;

use super::h2pool::Replay;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What weir sends upstream: the client's body streamed through, or a copy for a mirror.
pub enum RequestBody {
    Incoming(Incoming),
    /// The client's body, each data frame also offered to a mirror. A mirror that cannot keep
    /// up loses its copy (the sender is dropped); the client's request never waits for it.
    Tee(Incoming, Option<mpsc::Sender<Bytes>>),
    /// A mirror's copy of the client's body.
    Mirror(mpsc::Receiver<Bytes>),
    Bytes(Option<Bytes>),
    Empty,
    /// A body an HTTP/2 upstream may refuse and weir send again (`h2pool::resend`).
    Replay(Replay),
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            RequestBody::Incoming(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            RequestBody::Tee(b, tx) => {
                let polled = Pin::new(b).poll_frame(cx);
                match &polled {
                    Poll::Ready(Some(Ok(frame))) => {
                        if let (Some(data), Some(sender)) = (frame.data_ref(), tx.as_ref()) {
                            if sender.try_send(data.clone()).is_err() {
                                *tx = None;
                            }
                        }
                    }
                    Poll::Ready(_) => *tx = None,
                    Poll::Pending => {}
                }
                polled.map_err(Into::into)
            }
            RequestBody::Mirror(rx) => rx.poll_recv(cx).map(|d| d.map(|d| Ok(Frame::data(d)))),
            RequestBody::Bytes(b) => Poll::Ready(b.take().map(|d| Ok(Frame::data(d)))),
            RequestBody::Empty => Poll::Ready(None),
            RequestBody::Replay(r) => r.poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Incoming(b) | RequestBody::Tee(b, _) => b.is_end_stream(),
            RequestBody::Mirror(_) => false,
            RequestBody::Bytes(b) => b.is_none(),
            RequestBody::Empty => true,
            RequestBody::Replay(r) => r.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RequestBody::Incoming(b) | RequestBody::Tee(b, _) => b.size_hint(),
            RequestBody::Mirror(_) => SizeHint::default(),
            RequestBody::Bytes(Some(b)) => SizeHint::with_exact(b.len() as u64),
            RequestBody::Replay(r) => r.size_hint(),
            _ => SizeHint::with_exact(0),
        }
    }
}
