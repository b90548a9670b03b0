//! What weir answers: the upstream's body streamed back (with what must happen when it ends),
//! or a short body of weir's own. An enum rather than a boxed trait object: the common case
//! costs no allocation.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

use super::logged::Logged;
use crate::pipeline::mirror::PrimaryBody;
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
    ending: Ending,
}

/// What must happen when an upstream body ends, besides its connection going back: one enum,
/// not two options, so an `UpstreamBody` stays within the size the compiler moves without a
/// `memcpy` call (a second option cost every request through hyper 140 instructions).
enum Ending {
    Nothing,
    Grpc(PendingGrpc),
    Logged(Box<Logged>),
    /// More than one, or a mirrored request's: its body is hashed for its pair, and a gRPC
    /// call's pair waits for its status.
    Several(Box<Several>),
}

struct Several {
    grpc: Option<PendingGrpc>,
    logged: Option<Logged>,
    pair: Option<PrimaryBody>,
}

impl Ending {
    /// Runs what was due, once: the body ended (`trailers` if it had them, `failure` if it
    /// was cut short).
    #[inline]
    fn take(&mut self, trailers: Option<&HeaderMap>, failure: Option<&'static str>) {
        if !matches!(self, Ending::Nothing) {
            std::mem::replace(self, Ending::Nothing).run(trailers, failure);
        }
    }

    fn run(self, trailers: Option<&HeaderMap>, failure: Option<&'static str>) {
        match self {
            Ending::Nothing => {}
            Ending::Grpc(grpc) => grpc.finish(trailers),
            Ending::Logged(logged) => logged.end(failure),
            Ending::Several(several) => {
                let Several { grpc, logged, pair } = *several;
                if let Some(grpc) = grpc {
                    grpc.finish(trailers);
                }
                if let Some(pair) = pair {
                    let client_gone = failure == Some(Failure::ClientGone.as_str());
                    pair.finish(trailers, failure.is_some(), client_gone);
                }
                if let Some(logged) = logged {
                    logged.end(failure);
                }
            }
        }
    }

    /// A data frame went by: counted for the access log, hashed for a mirrored request's pair.
    #[inline]
    fn data(&mut self, data: &[u8]) {
        match self {
            Ending::Logged(logged) => logged.response_bytes += data.len() as u64,
            Ending::Several(several) => {
                if let Some(logged) = &mut several.logged {
                    logged.response_bytes += data.len() as u64;
                }
                if let Some(pair) = &mut several.pair {
                    pair.add(data);
                }
            }
            _ => {}
        }
    }
}

impl UpstreamBody {
    /// `release`: hyper's connection to give back (a pooled HTTP/1 body gives back its own).
    /// `pair`: a mirrored request's own answer, its body to hash (and a gRPC call's status to
    /// wait for).
    pub fn new(
        body: Received,
        release: Option<Release>,
        grpc: Option<PendingGrpc>,
        logged: Option<Box<Logged>>,
        pair: Option<PrimaryBody>,
    ) -> Self {
        let ending = match (grpc, logged, pair) {
            (None, None, None) => Ending::Nothing,
            (Some(grpc), None, None) => Ending::Grpc(grpc),
            (None, Some(logged), None) => Ending::Logged(logged),
            (grpc, logged, pair) => Ending::Several(Box::new(Several {
                grpc,
                logged: logged.map(|l| *l),
                pair,
            })),
        };
        let mut this = UpstreamBody {
            body,
            release,
            ending,
        };
        if this.body.is_end_stream() {
            this.finished(None);
        }
        this
    }

    fn finished(&mut self, trailers: Option<&HeaderMap>) {
        // The exchange is over: its HTTP/2 stream is freed, its count ended.
        self.release = None;
        self.ending.take(trailers, None);
    }
}

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        // Dropped before its end: the connection is not reused (Release's own Drop), and a
        // gRPC call cut short is recorded with what is known. The client stopped reading (it
        // went away, or reset its stream).
        self.ending.take(None, Some(Failure::ClientGone.as_str()));
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
                        if let Some(data) = frame.data_ref() {
                            up.ending.data(data);
                        }
                        if let Some(trailers) = frame.trailers_ref() {
                            up.finished(Some(trailers));
                        } else if up.body.is_end_stream() {
                            up.finished(None);
                        }
                    }
                    Poll::Ready(Some(Err(_))) => {
                        up.release = None;
                        up.ending.take(None, Some(UpstreamError::Reset.as_str()));
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
