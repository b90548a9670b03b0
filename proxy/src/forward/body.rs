//! What weir answers: the upstream's body streamed back (with what must happen when it ends),
//! or a short body of weir's own. An enum rather than a boxed trait object: the common case
//! costs no allocation.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

use super::logged::Logged;
use crate::pipeline::Failure;
use crate::stats::{grpc_status_is_fault, Outcome, UpstreamError};
use crate::table::BackendStats;
use crate::upstream::Received;
use crate::upstream::Release;
pub use crate::upstream::{BoxError, RequestBody};

/// What weir answers: the upstream's body streamed back, or a short body of weir's own.
pub enum ResponseBody {
    Upstream(UpstreamBody),
    Bytes(Option<Bytes>),
    Empty,
}

impl ResponseBody {
    pub fn text(s: impl Into<Bytes>) -> Self {
        ResponseBody::Bytes(Some(s.into()))
    }
}

/// A gRPC outcome waits for the trailers: grpc-status travels there.
pub struct PendingGrpc {
    pub stats: BackendStats,
    pub outcome: Outcome,
}

impl PendingGrpc {
    fn finish(self, trailers: Option<&HeaderMap>) {
        let mut outcome = self.outcome;
        // Counted when the call ends, in that second's window slot (a stream may outlive the
        // second its headers came in, or the whole window).
        outcome.ended = None;
        if let Some(code) = trailers.and_then(|t| t.get("grpc-status")) {
            outcome.grpc_fault = grpc_status_is_fault(code.as_bytes());
        }
        self.stats.record(&outcome);
    }
}

/// The upstream's response body, with what must happen when it ends: the pooled connection
/// goes back, a gRPC outcome is recorded, the access log's line is written.
pub struct UpstreamBody {
    body: Received,
    release: Option<Release>,
    grpc: Option<PendingGrpc>,
    logged: Option<Box<Logged>>,
}

impl UpstreamBody {
    /// `release`: hyper's connection to give back (a pooled HTTP/1 body gives back its own).
    pub fn new(
        body: Received,
        release: Option<Release>,
        grpc: Option<PendingGrpc>,
        logged: Option<Box<Logged>>,
    ) -> Self {
        let mut this = UpstreamBody {
            body,
            release,
            grpc,
            logged,
        };
        if this.body.is_end_stream() {
            this.finished(None);
        }
        this
    }

    fn finished(&mut self, trailers: Option<&HeaderMap>) {
        // The exchange is over: its HTTP/2 stream is freed, its count ended.
        self.release = None;
        if let Some(grpc) = self.grpc.take() {
            grpc.finish(trailers);
        }
        if let Some(logged) = self.logged.take() {
            logged.end(None);
        }
    }
}

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        // Dropped before its end: the connection is not reused (Release's own Drop), and a
        // gRPC call cut short is recorded with what is known. The client stopped reading (it
        // went away, or reset its stream).
        if let Some(grpc) = self.grpc.take() {
            grpc.finish(None);
        }
        if let Some(logged) = self.logged.take() {
            logged.end(Some(Failure::ClientGone.as_str()));
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            ResponseBody::Upstream(up) => {
                let polled = Pin::new(&mut up.body).poll_frame(cx);
                match &polled {
                    Poll::Ready(None) => up.finished(None),
                    Poll::Ready(Some(Ok(frame))) => {
                        if let (Some(logged), Some(data)) = (&mut up.logged, frame.data_ref()) {
                            logged.response_bytes += data.len() as u64;
                        }
                        if let Some(trailers) = frame.trailers_ref() {
                            up.finished(Some(trailers));
                        } else if up.body.is_end_stream() {
                            up.finished(None);
                        }
                    }
                    Poll::Ready(Some(Err(_))) => {
                        up.release = None;
                        if let Some(grpc) = up.grpc.take() {
                            grpc.finish(None);
                        }
                        if let Some(logged) = up.logged.take() {
                            logged.end(Some(UpstreamError::Reset.as_str()));
                        }
                    }
                    Poll::Pending => {}
                }
                polled.map_err(Into::into)
            }
            ResponseBody::Bytes(b) => Poll::Ready(b.take().map(|d| Ok(Frame::data(d)))),
            ResponseBody::Empty => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Upstream(up) => up.body.is_end_stream(),
            ResponseBody::Bytes(b) => b.is_none(),
            ResponseBody::Empty => true,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Upstream(up) => up.body.size_hint(),
            ResponseBody::Bytes(Some(b)) => SizeHint::with_exact(b.len() as u64),
            _ => SizeHint::with_exact(0),
        }
    }
}
