//! The connection's state shared with its streams and their request bodies (`state::Core`),
//! behind one lock.
//!
//! Why shared: a request body travels (into an upstream connection's task, say) while the
//! connection's task owns the socket; taking a chunk must give its window back
//! (`ServerConn::release`), and dropping a body must reset or release its stream, so a body
//! reaches the engine. The lock is held for a few field updates at a time, never across a poll
//! of anything else, and almost always by the connection's own task (its streams are polled in
//! place): it is uncontended but for bodies read from another task.

use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;

use super::state::Core;
use crate::h2link::{RequestSource, StreamGone};

/// A handle on one connection's shared state.
#[derive(Clone)]
pub struct Link(Arc<Shared>);

pub struct Shared(Mutex<Core>);

impl Link {
    pub fn new(core: Core) -> Self {
        Link(Arc::new(Shared(Mutex::new(core))))
    }

    /// The state, locked.
    pub fn lock(&self) -> MutexGuard<'_, Core> {
        self.0.lock()
    }

    /// Runs `f` on the state, then wakes whom it woke once the lock is released.
    pub fn update<R>(&self, f: impl FnOnce(&mut Core) -> R) -> R {
        self.0.update(f)
    }

    /// The state as what request bodies read from.
    pub fn source(&self) -> Arc<dyn RequestSource> {
        self.0.clone()
    }
}

impl Shared {
    /// A panic while the lock was held leaves the state as it was: each update is a few
    /// fields, and the connection ends soon after anyway.
    fn lock(&self) -> MutexGuard<'_, Core> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn update<R>(&self, f: impl FnOnce(&mut Core) -> R) -> R {
        let (result, wakers) = {
            let mut core = self.lock();
            let result = f(&mut core);
            (result, core.take_wakers())
        };
        // Woken with the lock released: a task woken on another thread does not find it held.
        for waker in wakers {
            waker.wake();
        }
        result
    }
}

impl RequestSource for Shared {
    fn poll_frame(
        &self,
        id: u32,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamGone>>> {
        self.update(|core| core.poll_body(id, cx))
    }

    fn is_end_stream(&self, id: u32) -> bool {
        self.lock().body_at_end(id)
    }

    fn finished(&self, id: u32) {
        self.update(|core| core.body_dropped(id));
    }

    fn take_whole(&self, id: u32) -> Option<Bytes> {
        self.update(|core| core.take_whole(id))
    }
}
