//! Per-connection deadlines without a timer per request.
//!
//! A request's phases set and clear a connection's `Deadline`; one timer per connection enforces
//! it, moved only when it would fire after the deadline now in force. Deadlines on a keep-alive
//! connection only ever move later, so the timer is re-armed about once per timeout period, not
//! once per request. (A tokio timer per request — registration, polling, removal — cost about
//! 7 % of the data path's instructions.)
//!
//! When the deadline passes while the connection waits to read or write, its `DeadlineIo` fails
//! with `TimedOut`; hyper then fails the exchange and closes the connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Deadlines are stored as nanoseconds after this instant; 0 means none.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn from_nanos(n: u64) -> Instant {
    epoch() + Duration::from_nanos(n.saturating_sub(1))
}

fn to_nanos(at: Instant) -> u64 {
    // +1 keeps a deadline at the epoch itself distinct from "none".
    u64::try_from(at.saturating_duration_since(epoch()).as_nanos())
        .unwrap_or(u64::MAX - 1)
        .saturating_add(1)
}

/// A connection's deadline, shared by the code that sets it and the IO that enforces it.
#[derive(Clone, Default)]
pub struct Deadline(Arc<Shared>);

#[derive(Default)]
struct Shared {
    at: AtomicU64,
    timer: Mutex<Timer>,
    waiting: Arc<Waiting>,
}

#[derive(Default)]
struct Timer {
    sleep: Option<Pin<Box<Sleep>>>,
    /// When `sleep` fires (as stored in `Shared::at`), if it is registered; 0: not armed.
    armed: u64,
    /// `waiting` as a waker: what `sleep` is polled with, so it wakes whichever task waits
    /// when the time comes. An upstream connection serves another client's task nearly every
    /// request; polled with each task's own waker, the sleep was polled again every request.
    forward: Option<Waker>,
}

/// The task that last waited on the connection's IO: the one to wake when time is up. A lock
/// of its own, not the timer's: the sleep may wake it while the timer's lock is held (tokio
/// wakes a task at once when its budget runs out outside a runtime's scheduler).
#[derive(Default)]
struct Waiting(Mutex<Option<Waker>>);

impl Wake for Waiting {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Cloned out: a waker is not woken under a lock it might come back to.
        let task = lock(&self.0).clone();
        if let Some(task) = task {
            task.wake();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Deadline {
    /// The deadline is `from + limit` (`from` is usually a time the caller has taken anyway).
    pub fn set(&self, from: Instant, limit: Duration) {
        let at = to_nanos(from + limit);
        self.0.at.store(at, Ordering::Relaxed);
        // The IO may be parked already (hyper polled it before this was set). If the timer
        // would not fire by `at`, wake the waiting task: its next wait arms the timer. (Arming
        // here instead would touch the timer driver from wherever this runs — a response body
        // dropped while the runtime shuts down, say.)
        let in_time = {
            let timer = self.timer();
            timer.armed != 0
                && timer.armed <= at
                && timer.sleep.as_ref().is_some_and(|s| !s.is_elapsed())
        };
        if !in_time {
            self.0.waiting.wake_by_ref();
        }
    }

    pub fn clear(&self) {
        self.0.at.store(0, Ordering::Relaxed);
    }

    /// The deadline in force, if any.
    pub fn due(&self) -> Option<Instant> {
        match self.0.at.load(Ordering::Relaxed) {
            0 => None,
            at => Some(from_nanos(at)),
        }
    }

    fn timer(&self) -> MutexGuard<'_, Timer> {
        lock(&self.0.timer)
    }

    /// Called when the IO has to wait: remembers who waits, and fails if the deadline passed.
    fn check(&self, cx: &mut Context<'_>) -> io::Result<()> {
        {
            let mut task = lock(&self.0.waiting.0);
            if !task.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *task = Some(cx.waker().clone());
            }
        }
        let at = self.0.at.load(Ordering::Relaxed);
        if at == 0 {
            return Ok(());
        }
        let mut timer = self.timer();
        let timer = &mut *timer;
        let forward = timer
            .forward
            .get_or_insert_with(|| Waker::from(Arc::clone(&self.0.waiting)));
        if arm(&mut timer.sleep, &mut timer.armed, at, forward) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection deadline passed",
            ))
        }
    }
}

/// Makes sure the timer fires no later than `at` and then wakes `forward`; false if `at` has
/// passed. The common case — a later deadline on a timer still armed — is a comparison and no
/// timer operation, whichever task waits.
fn arm(sleep: &mut Option<Pin<Box<Sleep>>>, armed: &mut u64, at: u64, forward: &Waker) -> bool {
    let mut cx = Context::from_waker(forward);
    let mut must_poll = false;
    loop {
        let sleep =
            sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(from_nanos(at).into())));
        // Firing early is fine (it re-arms then); firing late is not.
        if *armed == 0 || *armed > at || sleep.is_elapsed() {
            sleep.as_mut().reset(from_nanos(at).into());
            *armed = at;
            must_poll = true;
        }
        if !must_poll {
            return true;
        }
        match sleep.as_mut().poll(&mut cx) {
            Poll::Pending => return true,
            Poll::Ready(()) if Instant::now() >= from_nanos(at) => return false,
            // It fired for an earlier deadline that has since moved on.
            Poll::Ready(()) => *armed = 0,
        }
    }
}

/// Whether an error chain holds the `TimedOut` of a `DeadlineIo`.
pub fn is_deadline_error(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::TimedOut {
                return true;
            }
        }
        cause = e.source();
    }
    false
}

/// An IO stream that fails with `TimedOut` once its deadline passes while it waits.
pub struct DeadlineIo<T> {
    io: T,
    deadline: Deadline,
}

impl<T> DeadlineIo<T> {
    pub fn new(io: T, deadline: Deadline) -> Self {
        DeadlineIo { io, deadline }
    }

    /// The stream itself, its deadline not enforced.
    pub fn get_ref(&self) -> &T {
        &self.io
    }

    /// The stream itself, its deadline not enforced.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.io
    }

    /// The stream, no longer under the deadline.
    pub fn into_inner(self) -> T {
        self.io
    }
}

/// An inner `Pending` passes through the deadline check: a wait may not outlast the deadline.
fn guard<R>(
    deadline: &Deadline,
    polled: Poll<io::Result<R>>,
    cx: &mut Context<'_>,
) -> Poll<io::Result<R>> {
    match polled {
        Poll::Pending => match deadline.check(cx) {
            Ok(()) => Poll::Pending,
            Err(err) => Poll::Ready(Err(err)),
        },
        ready => ready,
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for DeadlineIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        guard(&this.deadline, polled, cx)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for DeadlineIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.io).poll_write(cx, buf);
        guard(&this.deadline, polled, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        guard(&this.deadline, polled, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_read_past_the_deadline_fails_and_one_without_deadline_waits() {
        let (a, mut b) = tokio::io::duplex(64);
        let deadline = Deadline::default();
        let mut io = DeadlineIo::new(a, deadline.clone());
        let mut buf = [0u8; 8];

        // No deadline: the read just waits.
        let waited = tokio::time::timeout(Duration::from_millis(50), io.read(&mut buf)).await;
        assert!(waited.is_err(), "a read without a deadline must wait");

        deadline.set(Instant::now(), Duration::from_millis(30));
        let started = Instant::now();
        let err = io.read(&mut buf).await.expect_err("deadline passed");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(is_deadline_error(&err));
        assert!(started.elapsed() >= Duration::from_millis(25));

        // Data that is there is read whatever the deadline says.
        b.write_all(b"hi").await.expect("write");
        assert_eq!(io.read(&mut buf).await.expect("read"), 2);
    }

    #[tokio::test]
    async fn a_moved_deadline_is_honoured_after_an_early_wake() {
        let (a, mut b) = tokio::io::duplex(64);
        let deadline = Deadline::default();
        let mut io = DeadlineIo::new(a, deadline.clone());
        let mut buf = [0u8; 8];

        // Arm for 20 ms, answered in time; then a new exchange with 150 ms.
        deadline.set(Instant::now(), Duration::from_millis(20));
        let reading = io.read(&mut buf);
        b.write_all(b"x").await.expect("write");
        assert_eq!(reading.await.expect("read"), 1);
        deadline.set(Instant::now(), Duration::from_millis(150));
        let started = Instant::now();
        let err = io.read(&mut buf).await.expect_err("deadline passed");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(140),
            "fired at the old deadline ({took:?})"
        );
    }

    #[tokio::test]
    async fn a_deadline_set_while_the_io_is_parked_still_fires() {
        // hyper may park a read before the deadline is set (the response is written after the
        // read side went idle): setting it must wake the reader, whose next wait arms the timer.
        let (a, _b) = tokio::io::duplex(64);
        let deadline = Deadline::default();
        let mut io = DeadlineIo::new(a, deadline.clone());
        let mut buf = [0u8; 8];
        let reading = tokio::spawn(async move { io.read(&mut buf).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        deadline.set(Instant::now(), Duration::from_millis(30));
        let read = tokio::time::timeout(Duration::from_secs(5), reading)
            .await
            .expect("woken at the deadline")
            .expect("task");
        assert_eq!(read.expect_err("timed out").kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn the_task_waiting_now_is_woken_not_the_one_before() {
        // As an upstream connection is used by one client's task, then by another's: the
        // timer armed while the first waited must wake the second.
        let (a, _b) = tokio::io::duplex(64);
        let deadline = Deadline::default();
        let mut io = DeadlineIo::new(a, deadline.clone());
        let mut buf = [0u8; 8];
        deadline.set(Instant::now(), Duration::from_millis(40));
        let first = tokio::time::timeout(Duration::from_millis(5), io.read(&mut buf)).await;
        assert!(first.is_err(), "the first wait ends by its own timeout");
        let second = tokio::spawn(async move {
            let started = Instant::now();
            (io.read(&mut buf).await, started.elapsed())
        });
        let (read, took) = tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .expect("the second task was woken at the deadline")
            .expect("task");
        assert_eq!(read.expect_err("timed out").kind(), io::ErrorKind::TimedOut);
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[tokio::test]
    async fn clearing_the_deadline_keeps_the_connection() {
        let (a, _b) = tokio::io::duplex(64);
        let deadline = Deadline::default();
        let mut io = DeadlineIo::new(a, deadline.clone());
        let mut buf = [0u8; 8];
        deadline.set(Instant::now(), Duration::from_millis(20));
        let _ = tokio::time::timeout(Duration::from_millis(5), io.read(&mut buf)).await;
        deadline.clear();
        let waited = tokio::time::timeout(Duration::from_millis(80), io.read(&mut buf)).await;
        assert!(waited.is_err(), "a cleared deadline must not fail the read");
    }
}
