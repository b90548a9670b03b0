//! A request's body sent on its stream as it comes, never faster than the stream's and the
//! connection's windows: a chunk is read from the client only once the last one is all out.
//! A body that breaks resets the stream with CANCEL.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::HeaderMap;
use http_body::Body;

use super::error::StreamError;
use super::link::{register, Link};
use crate::h2wire::frame::ErrorCode;
use crate::upstream::body::RequestBody;

pub struct SendBody {
    link: Arc<Link>,
    id: u32,
    body: RequestBody,
    /// Read from the body and not yet all taken by the windows; whether it ends the body.
    pending: Option<(Bytes, bool)>,
    /// The body ended and went out (or the stream failed): nothing more to send.
    done: bool,
}

/// What a send under the lock came to.
enum Sent {
    All,
    /// Some or none taken: the windows are shut; woken when they open.
    Blocked,
    /// The stream failed or the server no longer wants the body.
    Stopped,
}

impl SendBody {
    pub(super) fn new(link: Arc<Link>, id: u32, body: RequestBody) -> SendBody {
        SendBody {
            link,
            id,
            body,
            pending: None,
            done: false,
        }
    }

    /// Sends what is pending, as far as the windows allow.
    fn push(&mut self, cx: &mut Context<'_>) -> Sent {
        let id = self.id;
        let Some((chunk, end)) = self.pending.as_mut() else {
            return Sent::All;
        };
        let sent = self.link.with(|inner| {
            let Some(state) = inner.streams.get_mut(&id) else {
                return Sent::Stopped;
            };
            if state.error.is_some() {
                return Sent::Stopped;
            }
            let n = inner.conn.send_data(id, chunk, *end);
            chunk.advance(n);
            if chunk.is_empty() {
                return Sent::All;
            }
            register(&mut state.sender, cx.waker());
            Sent::Blocked
        });
        if matches!(sent, Sent::All) {
            self.pending = None;
        }
        sent
    }

    fn trailers(&mut self, trailers: &HeaderMap) -> bool {
        let id = self.id;
        let fields = trailers
            .iter()
            .map(|(name, value)| (name.as_str().as_bytes(), value.as_bytes()));
        self.link.with(|inner| inner.conn.send_trailers(id, fields))
    }

    /// The body broke: the server must not take what went as the whole request.
    fn cancel(&mut self) {
        let id = self.id;
        self.link.with(|inner| {
            if let Some(state) = inner.streams.get_mut(&id) {
                if state.error.is_none() {
                    state.fail(StreamError::Cancelled);
                    inner.conn.reset(id, ErrorCode::CANCEL);
                }
            }
        });
    }
}

impl Future for SendBody {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        while !this.done {
            if let Some(&(_, end)) = this.pending.as_ref() {
                match this.push(cx) {
                    Sent::All if end => this.done = true,
                    Sent::All => {}
                    Sent::Blocked => return Poll::Pending,
                    Sent::Stopped => this.done = true,
                }
                continue;
            }
            let frame = match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(frame) => frame,
            };
            match frame {
                None => this.pending = Some((Bytes::new(), true)),
                Some(Err(err)) => {
                    tracing::debug!(error = %err, "request body to an h2 upstream broke");
                    this.cancel();
                    this.done = true;
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        let end = this.body.is_end_stream();
                        this.pending = Some((data, end));
                    }
                    Err(frame) => {
                        // Trailers end the body; a frame of another kind is skipped.
                        if let Ok(trailers) = frame.into_trailers() {
                            if !this.trailers(&trailers) {
                                tracing::debug!("request trailers to an h2 upstream not sent");
                            }
                            this.done = true;
                        }
                    }
                },
            }
        }
        Poll::Ready(())
    }
}

impl Drop for SendBody {
    fn drop(&mut self) {
        if !self.done {
            // Given up before the body ended (the exchange was dropped): cut, not short.
            self.cancel();
        }
        let id = self.id;
        self.link.with(|inner| {
            if let Some(state) = inner.streams.get_mut(&id) {
                state.sending = false;
            }
            inner.settle(id);
        });
    }
}
