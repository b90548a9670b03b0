//! What weir sends upstream: the client's body streamed through, or a copy for a mirror. An
//! enum rather than a boxed trait object: the common case costs no allocation.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use http::HeaderMap;
use smallvec::SmallVec;
use tokio::sync::mpsc;

pub use super::received::BoxError;
use super::received::Received;

/// What weir sends upstream: the client's body streamed through, or a copy for a mirror.
pub enum RequestBody {
    /// The client's body, as it arrives.
    Client(Received),
    /// The client's body, its bytes counted as they pass (the access log's `request_bytes`).
    Counted(Received, Arc<AtomicU64>),
    /// The client's body, each data frame also offered to a mirror. A mirror that cannot keep
    /// up, or whose copy would pass `MIRROR_BODY_CAP`, loses its copy (the sender is dropped
    /// without the end mark, so the copy fails rather than passes for whole); the client's
    /// request never waits for it. Counted too when the access log wants it. (The mirror's
    /// side is boxed: inline, it would widen every request's body, mirrored or not.)
    Tee(Received, Option<Box<TeeTx>>, Option<Arc<AtomicU64>>),
    /// A body fed through a channel: it ends when the channel closes.
    Mirror(mpsc::Receiver<Bytes>),
    /// A mirror's copy of the client's body, from a `Tee`: it ends at the tee's end mark (an
    /// empty chunk; `true` once seen). A channel closed before the mark is a copy cut short:
    /// an error, so the copy is never sent as if it were whole.
    Copied(mpsc::Receiver<Bytes>, bool),
    Bytes(Option<Bytes>),
    Empty,
    /// A body an HTTP/2 upstream may refuse and weir send again (`h2pool::resend`).
    Replay(Replay),
}

/// The most of a request body a mirror copies: past it the copy is dropped (and its pair
/// excluded) rather than held in memory for a slow canary.
pub const MIRROR_BODY_CAP: u64 = 1 << 20;

/// A `Tee`'s side of a mirror: the channel and the bytes the copy may still take.
#[derive(Debug)]
pub struct TeeTx {
    tx: mpsc::Sender<Bytes>,
    left: u64,
}

impl TeeTx {
    pub fn new(tx: mpsc::Sender<Bytes>) -> Box<Self> {
        Box::new(TeeTx {
            tx,
            left: MIRROR_BODY_CAP,
        })
    }

    /// The end mark: the copy is whole. (Were the channel full, the copy is lost.)
    fn end(self) {
        let _ = self.tx.try_send(Bytes::new());
    }

    /// Offers `data` to the copy; false when the copy is lost (full, gone, or over the cap).
    fn offer(&mut self, data: &Bytes) -> bool {
        let Some(left) = self.left.checked_sub(data.len() as u64) else {
            return false;
        };
        self.left = left;
        self.tx.try_send(data.clone()).is_ok()
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            RequestBody::Client(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            RequestBody::Counted(b, count) => {
                let polled = Pin::new(b).poll_frame(cx);
                if let Poll::Ready(Some(Ok(frame))) = &polled {
                    if let Some(data) = frame.data_ref() {
                        count.fetch_add(data.len() as u64, Ordering::Relaxed);
                    }
                }
                polled.map_err(Into::into)
            }
            RequestBody::Tee(b, tx, count) => {
                let polled = Pin::new(&mut *b).poll_frame(cx);
                match &polled {
                    Poll::Ready(Some(Ok(frame))) => {
                        if let (Some(data), Some(count)) = (frame.data_ref(), count.as_ref()) {
                            count.fetch_add(data.len() as u64, Ordering::Relaxed);
                        }
                        if let (Some(data), Some(copy)) = (frame.data_ref(), tx.as_mut()) {
                            if !data.is_empty() && !copy.offer(data) {
                                *tx = None;
                            }
                        }
                        // A sized body is whole at its last byte: its reader polls no more.
                        if b.is_end_stream() {
                            if let Some(copy) = tx.take() {
                                copy.end();
                            }
                        }
                    }
                    Poll::Ready(None) => {
                        if let Some(copy) = tx.take() {
                            copy.end();
                        }
                    }
                    Poll::Ready(Some(Err(_))) => *tx = None,
                    Poll::Pending => {}
                }
                polled.map_err(Into::into)
            }
            RequestBody::Mirror(rx) => rx.poll_recv(cx).map(|d| d.map(|d| Ok(Frame::data(d)))),
            RequestBody::Copied(rx, ended) => {
                if *ended {
                    return Poll::Ready(None);
                }
                match rx.poll_recv(cx) {
                    Poll::Ready(Some(end)) if end.is_empty() => {
                        *ended = true;
                        Poll::Ready(None)
                    }
                    Poll::Ready(Some(data)) => Poll::Ready(Some(Ok(Frame::data(data)))),
                    Poll::Ready(None) => Poll::Ready(Some(Err(
                        "the mirrored copy's body was cut short (the mirror fell behind or passed its cap)".into(),
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
            RequestBody::Bytes(b) => Poll::Ready(b.take().map(|d| Ok(Frame::data(d)))),
            RequestBody::Empty => Poll::Ready(None),
            RequestBody::Replay(r) => r.poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Client(b) | RequestBody::Counted(b, _) | RequestBody::Tee(b, _, _) => {
                b.is_end_stream()
            }
            RequestBody::Mirror(_) => false,
            RequestBody::Copied(_, ended) => *ended,
            RequestBody::Bytes(b) => b.is_none(),
            RequestBody::Empty => true,
            RequestBody::Replay(r) => r.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RequestBody::Client(b) | RequestBody::Counted(b, _) | RequestBody::Tee(b, _, _) => {
                b.size_hint()
            }
            RequestBody::Mirror(_) | RequestBody::Copied(..) => SizeHint::default(),
            RequestBody::Bytes(Some(b)) => SizeHint::with_exact(b.len() as u64),
            RequestBody::Replay(r) => r.size_hint(),
            _ => SizeHint::with_exact(0),
        }
    }
}

impl RequestBody {
    /// The whole body when it is known already, taken: bytes given whole, or a client's body
    /// that came as one chunk (`Received::take_whole`). None, and nothing taken, for a body
    /// still to come or one a mirror reads too.
    pub fn take_whole(&mut self) -> Option<Bytes> {
        match self {
            RequestBody::Client(b) => b.take_whole(),
            RequestBody::Counted(b, count) => {
                let whole = b.take_whole()?;
                count.fetch_add(whole.len() as u64, Ordering::Relaxed);
                Some(whole)
            }
            RequestBody::Bytes(b) => b.take(),
            _ => None,
        }
    }
}

/// Body bytes kept for a resend: a gRPC unary call or a form fits; an upload does not.
pub const REPLAY_LIMIT: usize = 64 * 1024;

/// What every copy of one request body shares: the client's body and what was read of it.
pub struct Kept {
    source: RequestBody,
    /// The chunks read so far. One inline: a gRPC unary call or a small form comes in one
    /// DATA frame, and a list allocated for it was one more allocation a request.
    chunks: SmallVec<[Bytes; 1]>,
    bytes: usize,
    /// More than `REPLAY_LIMIT` was read: nothing is kept and no copy can be made.
    overflowed: bool,
    trailers: Option<HeaderMap>,
    ended: bool,
}

/// One send's view of a request body that can be sent again.
pub struct Replay {
    kept: Arc<Mutex<Kept>>,
    /// Chunks of `kept` this copy has sent.
    pos: usize,
    trailers_sent: bool,
}

impl Replay {
    pub fn new(source: RequestBody) -> Self {
        Replay {
            kept: Arc::new(Mutex::new(Kept {
                source,
                chunks: SmallVec::new(),
                bytes: 0,
                overflowed: false,
                trailers: None,
                ended: false,
            })),
            pos: 0,
            trailers_sent: false,
        }
    }

    /// Another copy of the body from its start, sharing the client's; None once more than
    /// `REPLAY_LIMIT` was read.
    pub fn copy(&self) -> Option<Replay> {
        if self
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .overflowed
        {
            return None;
        }
        Some(Replay {
            kept: self.kept.clone(),
            pos: 0,
            trailers_sent: false,
        })
    }

    pub fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        // What an earlier copy read first: this copy sends it again.
        if let Some(chunk) = kept.chunks.get(self.pos) {
            let chunk = chunk.clone();
            self.pos += 1;
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if kept.ended {
            let trailers = once(&mut self.trailers_sent, &kept.trailers);
            return Poll::Ready(trailers.map(|t| Ok(Frame::trailers(t))));
        }
        let polled = Pin::new(&mut kept.source).poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    kept.bytes += data.len();
                    if kept.bytes > REPLAY_LIMIT {
                        kept.overflowed = true;
                        kept.chunks = SmallVec::new();
                    } else if !kept.overflowed {
                        kept.chunks.push(data.clone());
                        self.pos += 1;
                    }
                } else if let Some(trailers) = frame.trailers_ref() {
                    kept.trailers = Some(trailers.clone());
                    kept.ended = true;
                    self.trailers_sent = true;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                kept.ended = true;
                Poll::Ready(None)
            }
            other => other,
        }
    }

    pub fn is_end_stream(&self) -> bool {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        self.pos >= kept.chunks.len()
            && kept.ended
            && (self.trailers_sent || kept.trailers.is_none())
    }

    pub fn size_hint(&self) -> SizeHint {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let unsent: usize = kept.chunks.iter().skip(self.pos).map(Bytes::len).sum();
        match kept.source.size_hint().exact() {
            Some(rest) if !kept.overflowed => SizeHint::with_exact(rest + unsent as u64),
            _ => SizeHint::default(),
        }
    }
}

/// The trailers, the first time only.
fn once(sent: &mut bool, trailers: &Option<HeaderMap>) -> Option<HeaderMap> {
    if std::mem::replace(sent, true) {
        return None;
    }
    trailers.clone()
}
