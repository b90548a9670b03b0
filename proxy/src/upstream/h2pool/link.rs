//! One pool connection's state, shared by its driver task (`driver`) and the streams on it
//! (`exchange`, `send_body`, `response`): weir's sans-I/O HTTP/2 client connection, and what
//! each stream received and its reader has not yet taken, under one lock.
//!
//! Why a lock and not a channel to the driver: what a stream asks of the connection (open,
//! send DATA, give a window back) is a few writes into the connection's output buffer; a
//! channel would add a queue, a message and a wake-up per command, and a reply channel for the
//! stream's identifier. The lock is never held across I/O: the driver swaps the output out
//! and writes it unlocked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;

use super::error::{ConnEnd, StreamError};
use crate::h2link::Chunks;
use crate::h2wire::client::{ClientConn, Fields, IdHash, OpenError};

pub struct Link {
    inner: Mutex<Inner>,
    /// The pool let the connection go (its `H2Conn` was dropped): it takes no new stream and
    /// closes once its streams end.
    abandoned: AtomicBool,
}

pub(super) struct Inner {
    pub conn: ClientConn,
    /// Per stream, what its reader and its body's sender share, until both are done.
    pub streams: HashMap<u32, StreamState, IdHash>,
    /// Why the connection ended, once it did.
    pub ended: Option<ConnEnd>,
    /// The driver's waker: output to write, or a stream gone that it may be waiting for.
    driver: Option<Waker>,
    /// Something the driver must see happened since it last looked.
    nudge: bool,
}

/// A response's head as it came: status, regular fields, and whether it ended the stream.
pub(super) struct Head {
    pub status: u16,
    pub fields: Fields,
    pub end_stream: bool,
}

/// One stream's side of the connection.
pub(super) struct StreamState {
    /// The final response head, until the exchange takes it.
    pub head: Option<Head>,
    /// DATA received and not yet read; each chunk's window goes back as it is read.
    pub chunks: Chunks,
    /// Octets in `chunks`.
    pub buffered: usize,
    pub trailers: Option<Fields>,
    /// The response ended (END_STREAM came, after any chunks and trailers above).
    pub end: bool,
    pub error: Option<StreamError>,
    /// Woken for the head, data, trailers, the end or an error.
    pub reader: Option<Waker>,
    /// Woken when the stream may send more DATA, or failed.
    pub sender: Option<Waker>,
    /// The response's reader still holds the stream.
    pub reading: bool,
    /// The request's body is still being sent.
    pub sending: bool,
}

impl StreamState {
    fn new(sending: bool) -> StreamState {
        StreamState {
            head: None,
            chunks: Chunks::default(),
            buffered: 0,
            trailers: None,
            end: false,
            error: None,
            reader: None,
            sender: None,
            reading: true,
            sending,
        }
    }

    /// Fails the stream with `error` (unless it failed already) and wakes both sides.
    pub fn fail(&mut self, error: StreamError) {
        self.error.get_or_insert(error);
        self.wake_reader();
        self.wake_sender();
    }

    pub fn wake_reader(&mut self) {
        if let Some(waker) = self.reader.take() {
            waker.wake();
        }
    }

    pub fn wake_sender(&mut self) {
        if let Some(waker) = self.sender.take() {
            waker.wake();
        }
    }
}

/// Stores `cx`'s waker in `slot` unless the one there wakes the same task.
pub(super) fn register(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(held) if held.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

impl Link {
    pub fn new(conn: ClientConn) -> Link {
        Link {
            inner: Mutex::new(Inner {
                conn,
                streams: HashMap::default(),
                ended: None,
                driver: None,
                nudge: false,
            }),
            abandoned: AtomicBool::new(false),
        }
    }

    /// The state, for the driver (which wakes no one but the streams).
    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the state for a stream, then wakes the driver if `f` left it something to
    /// do (output to write, a stream gone). The wake comes after the lock is released.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut inner = self.lock();
        let result = f(&mut inner);
        let driver = if !inner.conn.output().is_empty() || inner.nudge {
            inner.nudge = false;
            inner.driver.take()
        } else {
            None
        };
        drop(inner);
        if let Some(waker) = driver {
            waker.wake();
        }
        result
    }

    /// The pool let the connection go.
    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
        self.with(|inner| inner.nudge = true);
    }

    pub(super) fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::SeqCst)
    }
}

impl Inner {
    /// Opens a stream for a request's fields; its body, unless `end_stream`, follows.
    pub fn open<'f>(
        &mut self,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
        end_stream: bool,
    ) -> Result<u32, OpenError> {
        if self.ended.is_some() {
            return Err(OpenError::Closed);
        }
        let id = self.conn.open(fields, end_stream)?;
        self.streams.insert(id, StreamState::new(!end_stream));
        Ok(id)
    }

    /// Forgets stream `id` once neither its reader nor its sender holds it.
    pub fn settle(&mut self, id: u32) {
        if let Some(state) = self.streams.get(&id) {
            if !state.reading && !state.sending {
                self.streams.remove(&id);
                self.nudge = true;
            }
        }
    }

    /// The connection ended: every stream fails with it.
    pub fn end(&mut self, why: ConnEnd) {
        self.ended.get_or_insert(why);
        for state in self.streams.values_mut() {
            state.fail(StreamError::Connection(why));
        }
    }

    /// The driver's waker, registered in the same lock in which it looked for work: a stream
    /// that adds work after that look wakes it.
    pub fn register_driver(&mut self, waker: &Waker) {
        register(&mut self.driver, waker);
    }
}
