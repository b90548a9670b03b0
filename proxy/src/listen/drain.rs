//! Graceful drain of client connections. Nothing here runs per request: a connection registers
//! its task's waker once, each poll reads one flag, and shutdown wakes every connection once.
//! (hyper-util's watcher re-polls a `watch` future on every wake-up of every connection, which
//! showed up at about 1 % of the data path's instructions.)

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;

pub use crate::graceful::Graceful;

/// Every connection of one listener, so that shutdown can reach them.
#[derive(Clone, Default)]
pub struct Drain(Arc<Inner>);

#[derive(Default)]
struct Inner {
    draining: AtomicBool,
    /// Connections accepted and not yet finished (including ones still in a TLS handshake).
    active: AtomicUsize,
    next_id: AtomicU64,
    /// The task waker of each connection that has been polled once.
    wakers: Mutex<HashMap<u64, Waker>>,
    finished: Notify,
}

/// One accepted connection's place in the drain; taken at accept, so a connection still in
/// its TLS handshake is waited for too.
pub struct Member {
    inner: Arc<Inner>,
    id: u64,
    registered: bool,
}

impl Drain {
    pub fn join(&self) -> Member {
        self.0.active.fetch_add(1, Ordering::AcqRel);
        Member {
            inner: self.0.clone(),
            id: self.0.next_id.fetch_add(1, Ordering::Relaxed),
            registered: false,
        }
    }

    /// Asks every connection to finish and waits until all have.
    pub async fn drain(&self) {
        self.0.draining.store(true, Ordering::SeqCst);
        let wakers: Vec<Waker> = lock(&self.0.wakers).values().cloned().collect();
        for waker in wakers {
            waker.wake();
        }
        loop {
            let finished = self.0.finished.notified();
            tokio::pin!(finished);
            finished.as_mut().enable();
            if self.0.active.load(Ordering::Acquire) == 0 {
                return;
            }
            finished.await;
        }
    }
}

impl Member {
    /// Serves `conn` to its end; once shutdown begins, it is told to finish gracefully.
    pub fn watch<C: Graceful>(self, conn: C) -> Watched<C> {
        Watched {
            conn: Box::pin(conn),
            member: self,
            told: false,
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if self.registered {
            let mut wakers = lock(&self.inner.wakers);
            wakers.remove(&self.id);
            // Its table stays as large as the most connections ever open: give back most of
            // it once they are far fewer (rarely: each shrink leaves room for four times as
            // many as are left).
            if wakers.capacity() > 4 * wakers.len() + 1024 {
                wakers.shrink_to_fit();
            }
        }
        if self.inner.active.fetch_sub(1, Ordering::AcqRel) == 1
            && self.inner.draining.load(Ordering::SeqCst)
        {
            self.inner.finished.notify_waiters();
        }
    }
}

pub struct Watched<C> {
    conn: Pin<Box<C>>,
    member: Member,
    told: bool,
}

impl<C: Graceful> Future for Watched<C> {
    type Output = C::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let this = &mut *self;
        if !this.member.registered {
            // A spawned task's waker stays the same for its life: one registration suffices.
            lock(&this.member.inner.wakers).insert(this.member.id, cx.waker().clone());
            this.member.registered = true;
        }
        // Read after registering: a drain that began before it is seen here, one that begins
        // after it wakes this task.
        if !this.told && this.member.inner.draining.load(Ordering::SeqCst) {
            this.told = true;
            this.conn.as_mut().graceful_shutdown();
        }
        this.conn.as_mut().poll(cx)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A stand-in connection: ends when told to shut down gracefully.
    struct Conn {
        told: bool,
    }

    impl Future for Conn {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            if self.told {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }

    impl Graceful for Conn {
        fn graceful_shutdown(mut self: Pin<&mut Self>) {
            self.told = true;
        }
    }

    #[tokio::test]
    async fn drain_tells_every_connection_and_waits_for_them() {
        let drain = Drain::default();
        let tasks: Vec<_> = (0..3)
            .map(|_| tokio::spawn(drain.join().watch(Conn { told: false })))
            .collect();
        // One member that has not been polled yet (a TLS handshake in progress).
        let pending = drain.join();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let draining = tokio::spawn({
            let drain = drain.clone();
            async move { drain.drain().await }
        });
        for t in tasks {
            tokio::time::timeout(Duration::from_secs(5), t)
                .await
                .expect("connection told to finish")
                .expect("task");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!draining.is_finished(), "a member is still active");
        assert!(pending.inner.draining.load(Ordering::SeqCst));
        drop(pending);
        tokio::time::timeout(Duration::from_secs(5), draining)
            .await
            .expect("drain ends when the last member leaves")
            .expect("task");
    }

    #[tokio::test]
    async fn a_connection_joining_during_drain_is_told_at_once() {
        let drain = Drain::default();
        let member = drain.join();
        let draining = tokio::spawn({
            let drain = drain.clone();
            async move { drain.drain().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        tokio::time::timeout(Duration::from_secs(5), member.watch(Conn { told: false }))
            .await
            .expect("told on its first poll");
        tokio::time::timeout(Duration::from_secs(5), draining)
            .await
            .expect("drain done")
            .expect("task");
    }
}
