//! A stream's response as its reader takes it: the head awaited, then the body, each DATA
//! chunk's window given back as it is read (so the server sends only as fast as weir
//! forwards), then the trailers. Dropped before the response ended, it resets the stream with
//! CANCEL and gives back what was buffered.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::error::StreamError;
use super::link::{register, Head, Link};
use crate::h2link::header_map;
use crate::h2wire::client::Fields;
use crate::h2wire::frame::ErrorCode;

/// The response of one stream on a pool connection; a body once its head was taken.
pub struct ResponseStream {
    link: Arc<Link>,
    id: u32,
    /// The end was read (or the head said there is no body).
    done: bool,
    /// What content-length said is left, if it said.
    remaining: Option<u64>,
}

/// One step of reading, decided under the lock and finished outside it.
enum Step {
    /// A chunk, and whether it is the body's last (the end came, with no trailers after it).
    Data(Bytes, bool),
    Trailers(Fields),
    End,
    Failed(StreamError),
}

impl ResponseStream {
    pub(super) fn new(link: Arc<Link>, id: u32) -> ResponseStream {
        ResponseStream {
            link,
            id,
            done: false,
            remaining: None,
        }
    }

    /// The final response head, or why none will come.
    pub(super) fn poll_head(&mut self, cx: &mut Context<'_>) -> Poll<Result<Head, StreamError>> {
        let id = self.id;
        self.link.with(|inner| {
            let Some(state) = inner.streams.get_mut(&id) else {
                return Poll::Ready(Err(StreamError::Cancelled));
            };
            if let Some(head) = state.head.take() {
                return Poll::Ready(Ok(head));
            }
            if let Some(error) = state.error {
                return Poll::Ready(Err(error));
            }
            register(&mut state.reader, cx.waker());
            Poll::Pending
        })
    }

    /// The head was taken: the body follows, `length` octets if the head said.
    pub(super) fn into_body(mut self, end_stream: bool, length: Option<u64>) -> ResponseStream {
        self.done = end_stream;
        self.remaining = length;
        self
    }

    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<Step> {
        let id = self.id;
        self.link.with(|inner| {
            let Some(state) = inner.streams.get_mut(&id) else {
                return Poll::Ready(Step::Failed(StreamError::Cancelled));
            };
            if let Some(chunk) = state.chunks.pop_front() {
                state.buffered -= chunk.len();
                inner.conn.release(id, chunk.len());
                // Said now rather than at the next poll: the client's leg then ends its
                // stream on this DATA frame instead of sending an empty one after it.
                let last = state.chunks.is_empty() && state.trailers.is_none() && state.end;
                return Poll::Ready(Step::Data(chunk, last));
            }
            if let Some(trailers) = state.trailers.take() {
                return Poll::Ready(Step::Trailers(trailers));
            }
            if state.end {
                return Poll::Ready(Step::End);
            }
            if let Some(error) = state.error {
                return Poll::Ready(Step::Failed(error));
            }
            register(&mut state.reader, cx.waker());
            Poll::Pending
        })
    }
}

impl Body for ResponseStream {
    type Data = Bytes;
    type Error = StreamError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        let step = match this.poll_step(cx) {
            Poll::Ready(step) => step,
            Poll::Pending => return Poll::Pending,
        };
        Poll::Ready(match step {
            Step::Data(chunk, last) => {
                if let Some(left) = this.remaining.as_mut() {
                    *left = left.saturating_sub(chunk.len() as u64);
                }
                this.done = last;
                Some(Ok(Frame::data(chunk)))
            }
            Step::Trailers(fields) => match header_map(fields, 0) {
                Ok(map) => {
                    // Trailers end a stream: nothing follows them.
                    this.done = true;
                    Some(Ok(Frame::trailers(map)))
                }
                Err(why) => {
                    this.done = true;
                    Some(Err(StreamError::Malformed(why)))
                }
            },
            Step::End => {
                this.done = true;
                None
            }
            Step::Failed(error) => {
                this.done = true;
                Some(Err(error))
            }
        })
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        match self.remaining {
            _ if self.done => SizeHint::with_exact(0),
            Some(left) => SizeHint::with_exact(left),
            None => SizeHint::default(),
        }
    }
}

impl Drop for ResponseStream {
    fn drop(&mut self) {
        let id = self.id;
        self.link.with(|inner| {
            let Some(state) = inner.streams.get_mut(&id) else {
                return;
            };
            state.reading = false;
            state.head = None;
            state.chunks.clear();
            // What was received and not read still counts against the connection's window.
            let unread = std::mem::take(&mut state.buffered);
            if !state.end && state.error.is_none() {
                // The response is not wanted any more (the client went, or a timeout).
                state.fail(StreamError::Cancelled);
                inner.conn.reset(id, ErrorCode::CANCEL);
            }
            if unread > 0 {
                inner.conn.release(id, unread);
            }
            inner.settle(id);
        });
    }
}
