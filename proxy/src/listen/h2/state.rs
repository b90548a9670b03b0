//! The connection and its streams' shared state: request content waiting for its body to take
//! it, and the wakers of the bodies, of the stream futures and of the connection's task.

use std::collections::HashMap;
use std::ops::Range;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::HeaderMap;
use http_body::Frame;
use smallvec::SmallVec;

use crate::h2link::{chunk, Chunks, StreamGone};
use crate::h2wire::frame::ErrorCode;
use crate::h2wire::server::{IdHash, ServerConn};

/// Wakers to wake after an update: most updates wake one or two. Inline, because the list is
/// handed out at every update (`take_wakers`) and a `Vec` left none of its room behind, an
/// allocation at almost every update that woke anyone (callgrind: about one a gRPC call).
pub type Wakers = SmallVec<[Waker; 2]>;

/// A client connection's `ServerConn` and its streams' state.
pub struct Core {
    pub conn: ServerConn,
    /// By stream identifier, hashed as the engine hashes its own map of them (`IdHash`).
    entries: HashMap<u32, Entry, IdHash>,
    /// The connection's task: woken when a body gives back window or is dropped, so that the
    /// output this queued is written.
    task: Option<Waker>,
    /// The connection is gone: bodies still held elsewhere end with an error.
    closed: bool,
    /// Streams whose futures wait for room to send (some may have stopped waiting since).
    senders: Vec<u32>,
    /// Wakers to wake once the lock is released (`link::Link::update`), so that a task woken on
    /// another thread does not find the lock still held.
    to_wake: Wakers,
}

/// One stream between its request and the end of its response.
struct Entry {
    /// DATA received and not yet taken by the body; their octets still count against the
    /// windows until taken (`ServerConn::release`).
    chunks: Chunks,
    trailers: Option<HeaderMap>,
    /// END_STREAM or trailers came: the request is complete.
    ended: bool,
    /// The stream ended early: the client reset it, it broke a rule, or the connection went.
    gone: Option<&'static str>,
    body: Side,
    stream: Side,
    /// The response's END_STREAM was queued.
    response_done: bool,
    /// The stream's future waits for room to send (in `Core::senders`).
    sending: bool,
}

/// The body's or the stream future's part: alive (with its waker once it waited), or dropped.
enum Side {
    Alive(Option<Waker>),
    Dropped,
}

impl Side {
    fn wake_into(&mut self, out: &mut Wakers) {
        if let Side::Alive(waker) = self {
            out.extend(waker.take());
        }
    }

    fn wait(&mut self, cx: &Context<'_>) {
        if let Side::Alive(waker) = self {
            match waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *waker = Some(cx.waker().clone()),
            }
        }
    }

    fn is_alive(&self) -> bool {
        matches!(self, Side::Alive(_))
    }
}

impl Core {
    pub fn new(conn: ServerConn) -> Self {
        Core {
            conn,
            entries: HashMap::default(),
            task: None,
            closed: false,
            senders: Vec::new(),
            to_wake: Wakers::new(),
        }
    }

    /// The wakers to wake now that the lock is about to be released.
    pub fn take_wakers(&mut self) -> Wakers {
        std::mem::take(&mut self.to_wake)
    }

    /// The connection's task, woken when a body queued output.
    pub fn set_task(&mut self, waker: &Waker) {
        match &self.task {
            Some(w) if w.will_wake(waker) => {}
            _ => self.task = Some(waker.clone()),
        }
    }

    fn wake_task_for_output(&mut self) {
        if !self.conn.output().is_empty() {
            self.to_wake.extend(self.task.clone());
        }
    }

    /// A new stream; `has_body`: its request has content to come.
    pub fn open(&mut self, id: u32, has_body: bool) {
        let entry = Entry {
            chunks: Chunks::default(),
            trailers: None,
            ended: !has_body,
            gone: None,
            body: if has_body {
                Side::Alive(None)
            } else {
                Side::Dropped
            },
            stream: Side::Alive(None),
            response_done: false,
            sending: false,
        };
        self.entries.insert(id, entry);
    }

    /// Request content for stream `id` (`range` of `frames`): made into a chunk and kept for
    /// its body, or given back to the window at once, uncopied, when no body will take it
    /// (dropped, or the stream gone). One lookup: whether this is the stream's first DATA
    /// decides how the chunk is made (`h2link::chunk`).
    pub fn data(&mut self, id: u32, frames: &Bytes, range: Range<usize>, end_stream: bool) {
        let Some(entry) = self.entries.get_mut(&id) else {
            self.conn.release(id, range.len());
            return;
        };
        entry.ended |= end_stream;
        if !entry.body.is_alive() || entry.gone.is_some() {
            self.conn.release(id, range.len());
            return;
        }
        if !range.is_empty() {
            let first = entry.chunks.is_unbegun();
            entry
                .chunks
                .push_back(chunk(&mut self.conn, frames, range, first));
        }
        entry.body.wake_into(&mut self.to_wake);
    }

    /// The request's trailers: they end it.
    pub fn trailers(&mut self, id: u32, trailers: HeaderMap) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.ended = true;
            if entry.body.is_alive() {
                entry.trailers = Some(trailers);
                entry.body.wake_into(&mut self.to_wake);
            }
        }
    }

    /// Stream `id` ended early (`why`): its body fails, its stream future is woken to be
    /// dropped, and what its body had not taken goes back to the connection's window.
    pub fn gone(&mut self, id: u32, why: &'static str) {
        if let Some(entry) = self.entries.get_mut(&id) {
            if entry.gone.is_none() {
                entry.gone = Some(why);
            }
            let held = entry.chunks.clear();
            entry.body.wake_into(&mut self.to_wake);
            entry.stream.wake_into(&mut self.to_wake);
            if held > 0 {
                self.conn.release(id, held);
            }
        }
    }

    /// The connection ended: every stream is gone.
    pub fn close(&mut self, why: &'static str) {
        self.closed = true;
        // Its task's waker is not kept by bodies that outlive the connection.
        self.task = None;
        let ids: Vec<u32> = self.entries.keys().copied().collect();
        for id in ids {
            self.gone(id, why);
        }
    }

    /// Send windows opened, or output was written: stream `id`'s future (None: every stream
    /// future waiting to send) is woken to send more. Only those waiting to send: one still
    /// waiting for its answer is not polled for nothing.
    pub fn capacity(&mut self, id: Option<u32>) {
        match id {
            Some(id) => {
                if let Some(entry) = self.entries.get_mut(&id) {
                    if std::mem::take(&mut entry.sending) {
                        entry.stream.wake_into(&mut self.to_wake);
                    }
                }
            }
            None => {
                for id in self.senders.drain(..) {
                    if let Some(entry) = self.entries.get_mut(&id) {
                        if std::mem::take(&mut entry.sending) {
                            entry.stream.wake_into(&mut self.to_wake);
                        }
                    }
                }
            }
        }
    }

    /// For stream `id`'s future: whether the stream is gone; if not, its waker is kept to be
    /// woken when it goes, and with `sending` when there is room to send.
    pub fn stream_wait(&mut self, id: u32, cx: &Context<'_>, sending: bool) -> bool {
        match self.entries.get_mut(&id) {
            Some(entry) if entry.gone.is_none() => {
                entry.stream.wait(cx);
                if sending && !std::mem::replace(&mut entry.sending, true) {
                    self.senders.push(id);
                }
                false
            }
            _ => true,
        }
    }

    /// Stream `id`'s response ended (its END_STREAM queued). A request still coming that no
    /// body reads is asked to stop: RST_STREAM NO_ERROR (RFC 9113 §8.1).
    pub fn response_done(&mut self, id: u32) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.response_done = true;
            if !entry.ended && !entry.body.is_alive() {
                self.conn.reset(id, ErrorCode::NO_ERROR);
            }
        }
    }

    /// Stream `id`'s future ended or was dropped. A response not complete is cut: RST_STREAM
    /// CANCEL (nothing if the stream is closed already), and a body still held elsewhere
    /// fails rather than wait for content that will no longer come.
    pub fn stream_ended(&mut self, id: u32) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        entry.stream = Side::Dropped;
        if !entry.response_done {
            self.conn.reset(id, ErrorCode::CANCEL);
            self.gone(id, "the stream's answer was given up");
        }
        self.forget_if_unused(id);
    }

    /// Stream `id`'s body was dropped before its end: what it held goes back to the windows,
    /// and what still comes is given back as it comes. Once the response is complete, the
    /// client is asked to stop sending (§8.1); before, the stream future decides at its end.
    pub fn body_dropped(&mut self, id: u32) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        entry.body = Side::Dropped;
        entry.trailers = None;
        let held = entry.chunks.clear();
        let stop = entry.response_done && !entry.ended && entry.gone.is_none();
        if held > 0 {
            self.conn.release(id, held);
        }
        if stop {
            self.conn.reset(id, ErrorCode::NO_ERROR);
        }
        self.forget_if_unused(id);
        self.wake_task_for_output();
    }

    fn forget_if_unused(&mut self, id: u32) {
        if let Some(entry) = self.entries.get(&id) {
            if !entry.body.is_alive() && !entry.stream.is_alive() {
                self.entries.remove(&id);
            }
        }
    }

    /// The next frame of stream `id`'s request body.
    pub fn poll_body(
        &mut self,
        id: u32,
        cx: &Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamGone>>> {
        let closed = self.closed;
        let Some(entry) = self.entries.get_mut(&id) else {
            return Poll::Ready(Some(Err(StreamGone("the HTTP/2 connection ended"))));
        };
        if let Some(why) = entry.gone {
            return Poll::Ready(Some(Err(StreamGone(why))));
        }
        if let Some(chunk) = entry.chunks.pop_front() {
            // Taken by the pipeline: the client may send as much again (the flow control
            // that keeps a body nobody reads from filling memory).
            self.conn.release(id, chunk.len());
            self.wake_task_for_output();
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if entry.ended {
            return Poll::Ready(entry.trailers.take().map(|t| Ok(Frame::trailers(t))));
        }
        if closed {
            return Poll::Ready(Some(Err(StreamGone("the HTTP/2 connection ended"))));
        }
        entry.body.wait(cx);
        Poll::Pending
    }

    /// Stream `id`'s whole request body when it came as one chunk, ended, without trailers:
    /// taken, its window given back as `poll_body` gives it.
    pub fn take_whole(&mut self, id: u32) -> Option<Bytes> {
        let entry = self.entries.get_mut(&id)?;
        if entry.gone.is_some()
            || !entry.ended
            || entry.trailers.is_some()
            || !entry.chunks.is_single()
        {
            return None;
        }
        let whole = entry.chunks.pop_front()?;
        self.conn.release(id, whole.len());
        self.wake_task_for_output();
        Some(whole)
    }

    /// Whether stream `id`'s request body has nothing more to give.
    pub fn body_at_end(&self, id: u32) -> bool {
        self.entries.get(&id).is_none_or(|entry| {
            entry.gone.is_none()
                && entry.ended
                && entry.chunks.is_empty()
                && entry.trailers.is_none()
        })
    }
}
