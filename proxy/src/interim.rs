//! Interim (1xx) responses on their way to an HTTP/1 client that hyper's server serves.
//!
//! RFC 9110 §15.2: a proxy MUST forward the 1xx responses it did not ask for itself — `103
//! Early Hints` above all, whose whole point is to arrive before the final answer. hyper 1's
//! server has no call for sending one, so weir sends them beside it: the request's pipeline
//! encodes an upstream's interim head into its connection's `Interims`, and the connection's
//! IO under hyper (`Interleave`) writes it out the next time hyper writes or flushes — which
//! hyper does on every turn of its loop, right after polling the request's future that queued
//! it.
//!
//! Why that is safe: hyper's HTTP/1 server answers one request at a time and reads the next
//! only once the last response is written out whole, so while a request's future is waiting
//! for its upstream, all hyper can have to write is its own `100 Continue`. The only place an
//! interim head could land inside something of hyper's is the middle of a write hyper began
//! and the socket took only part of; `Interleave` waits for such a write to finish before it
//! puts an interim head on the wire. Once the final head is known, nothing more is queued.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Interim heads, encoded, waiting for the connection to write them. One per HTTP/1
/// connection; a request only ever queues its own, before its final head.
#[derive(Default)]
pub struct Interims {
    /// Set when `heads` holds something: the only thing the connection's IO checks on a write.
    queued: AtomicBool,
    heads: Mutex<Vec<u8>>,
}

impl Interims {
    /// Queues one encoded interim head (`HTTP/1.1 1xx ...\r\n...\r\n`).
    pub fn queue(&self, head: &[u8]) {
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        heads.extend_from_slice(head);
        self.queued.store(true, Ordering::Release);
    }

    /// Moves what is queued onto the end of `out`.
    fn take_into(&self, out: &mut Vec<u8>) {
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        if out.is_empty() {
            std::mem::swap(out, &mut heads);
        } else {
            out.append(&mut heads);
        }
        self.queued.store(false, Ordering::Release);
    }
}

impl std::fmt::Debug for Interims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interims")
            .field("queued", &self.queued.load(Ordering::Relaxed))
            .finish()
    }
}

/// Where a connection's `Interims` are: the connection's shared state, which holds them.
pub trait HoldsInterims {
    fn interims(&self) -> &Interims;
}

/// The IO hyper's HTTP/1 server is given: `io`, with interim heads put on the wire between
/// hyper's own writes.
pub struct Interleave<I, S> {
    io: I,
    holder: S,
    /// Interim heads taken from the queue and not yet written.
    out: Vec<u8>,
    /// The last write of hyper's went out only in part: the rest of it comes first.
    partial: bool,
}

impl<I, S: HoldsInterims> Interleave<I, S> {
    pub fn new(io: I, holder: S) -> Self {
        Interleave {
            io,
            holder,
            out: Vec::new(),
            partial: false,
        }
    }
}

impl<I: AsyncWrite + Unpin, S: HoldsInterims + Unpin> Interleave<I, S> {
    /// Writes out the interim heads that are waiting, unless hyper is in the middle of a
    /// write of its own. Ready once nothing is left to write before hyper's bytes.
    fn poll_interims(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.partial {
            return Poll::Ready(Ok(()));
        }
        let interims = self.holder.interims();
        if interims.queued.load(Ordering::Acquire) {
            interims.take_into(&mut self.out);
        }
        while !self.out.is_empty() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.out))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out.drain(..n);
        }
        Poll::Ready(Ok(()))
    }

    /// Whether anything may be waiting: one load on the common path.
    fn waiting(&self) -> bool {
        !self.out.is_empty() || self.holder.interims().queued.load(Ordering::Relaxed)
    }
}

impl<I: AsyncRead + Unpin, S: Unpin> AsyncRead for Interleave<I, S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin, S: HoldsInterims + Unpin> AsyncWrite for Interleave<I, S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.waiting() {
            ready!(this.poll_interims(cx))?;
        }
        let n = ready!(Pin::new(&mut this.io).poll_write(cx, buf))?;
        this.partial = n < buf.len();
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.waiting() {
            ready!(this.poll_interims(cx))?;
        }
        let n = ready!(Pin::new(&mut this.io).poll_write_vectored(cx, bufs))?;
        this.partial = n < bufs.iter().map(|b| b.len()).sum::<usize>();
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.waiting() {
            ready!(this.poll_interims(cx))?;
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio::io::AsyncWriteExt;

    struct Holder(Arc<Interims>);
    impl HoldsInterims for Holder {
        fn interims(&self) -> &Interims {
            &self.0
        }
    }

    /// A writer that takes at most `cap` bytes a call, keeping all it took.
    struct Trickle {
        cap: usize,
        got: Vec<u8>,
    }
    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = buf.len().min(self.cap);
            self.got.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn an_interim_head_goes_out_between_writes_never_inside_one() {
        let interims = Arc::new(Interims::default());
        let mut io = Interleave::new(
            Trickle {
                cap: 5,
                got: Vec::new(),
            },
            Holder(interims.clone()),
        );
        // hyper's write goes out 5 bytes at a time; a head queued after its first part waits
        // for the rest.
        let theirs = b"HTTP/1.1 100 Continue\r\n\r\n";
        let n = Pin::new(&mut io)
            .write(theirs)
            .await
            .expect("a write to memory");
        assert_eq!(n, 5);
        interims.queue(b"HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n");
        io.write_all(&theirs[n..]).await.expect("a write to memory");
        io.flush().await.expect("a flush to memory");
        assert_eq!(
            io.io.got,
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n"
        );
        // Queued while nothing of hyper's is half-written: out on the next flush, before
        // whatever hyper writes next.
        io.io.got.clear();
        interims.queue(b"HTTP/1.1 103 Early Hints\r\n\r\n");
        io.flush().await.expect("a flush to memory");
        io.write_all(b"HTTP/1.1 200 OK\r\n\r\n")
            .await
            .expect("a write to memory");
        assert_eq!(
            io.io.got,
            b"HTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"
        );
        assert!(!interims.queued.load(Ordering::Relaxed));
    }
}
