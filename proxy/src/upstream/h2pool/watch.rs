//! The I/O half of `frames`: a connection's read side passed through `FrameWatch`, its
//! signals kept where the pool reads them without waiting for the h2 connection's task.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};

use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use super::frames::{FrameWatch, Signal};

/// What one connection's server has said, and whether the connection still stands, as the
/// pool reads it.
pub struct Signals {
    /// SETTINGS_MAX_CONCURRENT_STREAMS; `u32::MAX` until the server says (RFC 9113: no limit
    /// until then, and weir's own cap applies anyway).
    max_streams: AtomicU32,
    /// The server's first SETTINGS frame has been read.
    settled: AtomicBool,
    settings: Notify,
    going_away: AtomicBool,
    goaways: Counter,
    /// Reads that brought bytes: the keep-alive sends a PING only after a silence.
    reads: AtomicU64,
    /// The connection's task ended (closed, failed, or found dead): no new streams.
    closed: AtomicBool,
}

impl Signals {
    pub fn new(goaways: Counter) -> Self {
        Signals {
            max_streams: AtomicU32::new(u32::MAX),
            settled: AtomicBool::new(false),
            settings: Notify::new(),
            going_away: AtomicBool::new(false),
            goaways,
            reads: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }

    pub fn max_streams(&self) -> u32 {
        self.max_streams.load(Ordering::Relaxed)
    }

    /// Until the server's first SETTINGS frame: a connection used before it would carry
    /// streams past a limit it has not said yet, and have them refused.
    pub async fn settled(&self) {
        let notified = self.settings.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !self.settled.load(Ordering::SeqCst) {
            notified.await;
        }
    }

    pub fn going_away(&self) -> bool {
        self.going_away.load(Ordering::Relaxed)
    }

    fn take(&self, signal: Signal) {
        match signal {
            Signal::MaxStreams(n) => self.max_streams.store(n, Ordering::Relaxed),
            Signal::Settings => {
                if !self.settled.swap(true, Ordering::SeqCst) {
                    self.settings.notify_waiters();
                }
            }
            Signal::GoAway {
                last_stream_id,
                error_code,
            } => {
                // A graceful shutdown sends two (RFC 9113 §6.8): one connection, one count.
                if !self.going_away.swap(true, Ordering::Relaxed) {
                    self.goaways.inc();
                }
                tracing::debug!(last_stream_id, error_code, "upstream sent GOAWAY");
            }
        }
    }
}

/// An upstream HTTP/2 connection's stream, its reads watched.
pub struct WatchedIo<I> {
    io: I,
    watch: FrameWatch,
    signals: std::sync::Arc<Signals>,
}

impl<I> WatchedIo<I> {
    pub fn new(io: I, signals: std::sync::Arc<Signals>) -> Self {
        WatchedIo {
            io,
            watch: FrameWatch::default(),
            signals,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for WatchedIo<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let signals = &this.signals;
            let read = &buf.filled()[before..];
            if !read.is_empty() {
                signals.reads.fetch_add(1, Ordering::Relaxed);
            }
            this.watch.feed(read, |signal| signals.take(signal));
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for WatchedIo<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
