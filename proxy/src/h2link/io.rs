//! An HTTP/2 connection's socket, for both legs' drivers (`listen::h2`, `upstream::h2pool`):
//! what is read, kept until whole frames are, and handed out as shared slices; what the
//! engine queued, written in as few calls as the socket takes.

use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::h2wire::{Conn, Role};

/// Room asked of the socket per read: two frames of the default 16 KiB size and their heads.
const READ_SIZE: usize = 32 << 10;
/// Below this much room left, the next read gets a new `READ_SIZE` of room.
const MIN_ROOM: usize = 4 << 10;
/// DATA shorter than this is copied out rather than sliced: a slice keeps its whole read
/// buffer alive until the pipeline takes it, and small slices held by slow bodies could pin
/// many buffers for few octets. From this length on a pinned buffer holds at most about
/// `READ_SIZE / SMALL_DATA` times the window's worth of memory.
const SMALL_DATA: usize = 4 << 10;
/// A stream's first DATA shorter than this is copied into the connection's section buffer
/// (`Conn::keep_data`) rather than into an allocation of its own: a gRPC unary call's message,
/// a small form. It shares that 4 KiB buffer as a received head does, so a copy of it (a
/// resendable body's) is a count, not the allocation a fresh buffer's first clone takes.
/// Longer ones would use up the buffer in a few frames; and only the first, so that what a
/// stream pins of these buffers is one at most, as for its head, bounded by the stream limit:
/// a stream's later frames could otherwise each pin a buffer of its own, one octet apiece.
const TINY_DATA: usize = 512;

/// Bytes read and not yet consumed by the engine.
pub struct Inbound {
    /// `..filled` is what was read; the rest is initialised room for the next read (zeroed
    /// once when the buffer is made, not at every read).
    buf: BytesMut,
    filled: usize,
}

impl Inbound {
    pub fn new() -> Self {
        Inbound {
            buf: BytesMut::new(),
            filled: 0,
        }
    }

    /// What was read and not consumed.
    pub fn filled(&self) -> &[u8] {
        self.buf.get(..self.filled).unwrap_or_default()
    }

    /// Reads once. `Ok(0)`: the client closed its side.
    pub fn poll_read<T: AsyncRead + Unpin>(
        &mut self,
        io: &mut T,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        if self.buf.capacity() == 0 {
            return self.poll_first(io, cx);
        }
        if self.buf.len() - self.filled < MIN_ROOM {
            // A new buffer when the old one is shared with chunks still held (or grown in
            // place when it is not): the unconsumed start of a frame moves with it.
            self.buf.truncate(self.filled);
            self.buf.reserve(READ_SIZE);
            let capacity = self.buf.capacity();
            self.buf.resize(capacity, 0);
        }
        let room = self.buf.get_mut(self.filled..).unwrap_or_default();
        let mut read = ReadBuf::new(room);
        match Pin::new(io).poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) => {
                let n = read.filled().len();
                self.filled += n;
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// A settled connection's next bytes, read into the stack: the buffer is made only when
    /// bytes came, not at every poll that finds none.
    fn poll_first<T: AsyncRead + Unpin>(
        &mut self,
        io: &mut T,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        let mut first = [0u8; MIN_ROOM];
        let mut read = ReadBuf::new(&mut first);
        match Pin::new(io).poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) => {
                let n = read.filled().len();
                if n > 0 {
                    self.buf.reserve(READ_SIZE);
                    self.buf.extend_from_slice(read.filled());
                    self.filled = n;
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Frees the buffer when it holds nothing unconsumed: a connection without streams keeps
    /// no read buffer until its next bytes come (idle client connections are most of an edge's).
    pub fn settle(&mut self) {
        if self.filled == 0 {
            self.buf = BytesMut::new();
        }
    }

    /// The first `n` octets, consumed by the engine, as one shared buffer the DATA it found
    /// in them is sliced from.
    pub fn consume(&mut self, n: usize) -> Bytes {
        let n = n.min(self.filled);
        self.filled -= n;
        self.buf.split_to(n).freeze()
    }
}

/// `range` of `frames`, received on `conn`: a copy in the connection's section buffer when
/// tiny and its stream's `first` DATA (`TINY_DATA`), a copy of its own when short
/// (`SMALL_DATA`), else a slice of the same buffer.
pub fn chunk<R: Role>(
    conn: &mut Conn<R>,
    frames: &Bytes,
    range: Range<usize>,
    first: bool,
) -> Bytes {
    if range.end > frames.len() || range.start > range.end {
        return Bytes::new();
    }
    if first && range.len() < TINY_DATA {
        return conn.keep_data(frames.get(range).unwrap_or_default());
    }
    if range.len() < SMALL_DATA {
        return Bytes::copy_from_slice(frames.get(range).unwrap_or_default());
    }
    frames.slice(range)
}

/// Writes as much of `out` as the socket takes now and removes it from `out`; returns how
/// much that was (0: the socket would block, or nothing to write).
pub fn write_out<T: AsyncWrite + Unpin>(
    io: &mut T,
    out: &mut Vec<u8>,
    cx: &mut Context<'_>,
) -> io::Result<usize> {
    let mut written = 0;
    while written < out.len() {
        let rest = out.get(written..).unwrap_or_default();
        match Pin::new(&mut *io).poll_write(cx, rest) {
            Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Poll::Ready(Ok(n)) => written += n,
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => break,
        }
    }
    // Once per call rather than per write: the front of the queue moves once.
    out.drain(..written);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_first_data_is_copied_into_the_section_buffer_short_data_copied_long_shared() {
        let mut conn = crate::h2wire::server::ServerConn::new(Default::default());
        let frames = Bytes::from(vec![7u8; 3 * SMALL_DATA]);
        let tiny = chunk(&mut conn, &frames, 10..20, true);
        let next = chunk(&mut conn, &frames, 30..40, true);
        assert_eq!((&tiny[..], &next[..]), (&[7u8; 10][..], &[7u8; 10][..]));
        assert_eq!(
            tiny.as_ptr().wrapping_add(10),
            next.as_ptr(),
            "one buffer, one after the other"
        );
        let later = chunk(&mut conn, &frames, 50..60, false);
        assert_eq!(&later[..], &[7u8; 10][..]);
        assert_ne!(
            later.as_ptr(),
            next.as_ptr().wrapping_add(10),
            "a stream's later DATA is a copy of its own"
        );
        let short = chunk(&mut conn, &frames, 10..10 + TINY_DATA, true);
        assert_eq!(&short[..], &frames[10..10 + TINY_DATA]);
        assert_ne!(short.as_ptr(), frames[10..].as_ptr(), "a copy");
        let long = chunk(&mut conn, &frames, 5..5 + SMALL_DATA, true);
        assert_eq!(long.len(), SMALL_DATA);
        assert_eq!(long.as_ptr(), frames[5..].as_ptr(), "a slice, not a copy");
        assert!(chunk(&mut conn, &frames, 0..frames.len() + 1, true).is_empty());
    }

    #[tokio::test]
    async fn a_settled_buffer_is_made_again_only_when_bytes_come() {
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        let mut inbound = Inbound::new();
        tokio::io::AsyncWriteExt::write_all(&mut client, b"abc")
            .await
            .expect("write");
        let n = std::future::poll_fn(|cx| inbound.poll_read(&mut server, cx))
            .await
            .expect("read");
        assert_eq!((n, inbound.filled()), (3, &b"abc"[..]));
        inbound.settle();
        assert_eq!(inbound.filled(), b"abc", "not settled while it holds bytes");
        inbound.consume(3);
        inbound.settle();
        assert_eq!(inbound.buf.capacity(), 0);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(inbound.poll_read(&mut server, &mut cx).is_pending());
        assert_eq!(
            inbound.buf.capacity(),
            0,
            "no buffer for a read that found nothing"
        );
        tokio::io::AsyncWriteExt::write_all(&mut client, b"de")
            .await
            .expect("write");
        let n = std::future::poll_fn(|cx| inbound.poll_read(&mut server, cx))
            .await
            .expect("read");
        assert_eq!((n, inbound.filled()), (2, &b"de"[..]));
    }

    #[tokio::test]
    async fn a_frame_cut_across_reads_is_kept_whole_and_the_rest_moves() {
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        let first = vec![1u8; READ_SIZE + 100];
        tokio::io::AsyncWriteExt::write_all(&mut client, &first)
            .await
            .expect("write");
        let mut inbound = Inbound::new();
        let mut total = 0;
        while total < first.len() {
            total += std::future::poll_fn(|cx| inbound.poll_read(&mut server, cx))
                .await
                .expect("read");
        }
        assert_eq!(inbound.filled().len(), first.len());
        let head = inbound.consume(READ_SIZE);
        assert_eq!(head.len(), READ_SIZE);
        assert_eq!(inbound.filled(), &[1u8; 100][..]);
        drop(client);
        let n = std::future::poll_fn(|cx| inbound.poll_read(&mut server, cx))
            .await
            .expect("eof");
        assert_eq!(n, 0);
        assert_eq!(
            inbound.filled(),
            &[1u8; 100][..],
            "kept across the new buffer"
        );
    }
}
