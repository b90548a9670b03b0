//! Read buffers that start small, grow while a large body streams through, and go back to
//! small afterwards. Most messages a proxy forwards are a few hundred bytes, and what each
//! connection holds decides how much memory many connections take.

use std::io;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Where every buffer starts: most service-to-service request heads fit (a browser's, with its
/// cookies, grows the buffer once, and it stays grown for the connection's later requests).
/// Held by every idle keep-alive connection, so it is kept small: 1 KiB was a fifth of an idle
/// connection's memory.
pub const INITIAL: usize = 512;
/// A read is given at least this much room.
const MIN_ROOM: usize = 512;
/// Bodies stream through in reads of up to this much.
const LARGEST: usize = 64 * 1024;
/// Past this, a buffer emptied after an exchange is given back.
pub const KEEP: usize = 4 * INITIAL;

/// Reads whatever arrives next (a head, or the part of one still missing).
pub async fn read_more<R: AsyncRead + Unpin>(io: &mut R, buf: &mut BytesMut) -> io::Result<usize> {
    if buf.capacity() - buf.len() < MIN_ROOM {
        buf.reserve(INITIAL);
    }
    io.read_buf(buf).await
}

/// Reads the parts of one body. The room asked for doubles, up to a largest read, after each
/// read that filled it, so a large body moves in few system calls and a small one never grows a
/// buffer.
pub struct BodyReads {
    room: usize,
    largest: usize,
}

impl BodyReads {
    /// For a body copied through the connection's buffer (`crate::h1`): the buffer is what
    /// grows, so reads start small and stop at 64 KiB.
    pub fn new() -> Self {
        BodyReads {
            room: INITIAL,
            largest: LARGEST,
        }
    }

    /// For a body handed on as frames that keep the bytes they were read into
    /// (`upstream::PooledBody`): nothing is copied back into one buffer, so reads start at
    /// 16 KiB and go up to 256 KiB. Reads of at most 64 KiB took 25 system calls a MiB where
    /// hyper's client took 4, and 1 MiB downloads over h2c ran at 0.8x its rate.
    pub fn handed_on() -> Self {
        BodyReads {
            room: 16 * 1024,
            largest: 256 * 1024,
        }
    }

    pub async fn read<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
        buf: &mut BytesMut,
    ) -> io::Result<usize> {
        self.read_at_most(io, buf, usize::MAX).await
    }

    /// As `read`, for a body of which `most` bytes are left: it asks for that much room (up to
    /// the largest read) from the first read on, since the size is known and need not be
    /// found out by doubling. Cancel-safe: a read not ready is simply made again.
    pub async fn read_at_most<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
        buf: &mut BytesMut,
        most: usize,
    ) -> io::Result<usize> {
        if most != usize::MAX {
            self.room = self.largest;
        }
        let want = self.room.min(most).max(1);
        // (An emptied buffer takes its room back from the front: no new allocation.)
        if buf.capacity() - buf.len() < want {
            buf.reserve(want);
        }
        let room = buf.capacity() - buf.len();
        let n = io.read_buf(buf).await?;
        if n == room {
            self.room = (self.room * 2).min(self.largest);
        }
        Ok(n)
    }
}

/// After an exchange: a buffer grown by a large message goes back to its starting size.
pub fn settle(buf: &mut BytesMut) {
    if !buf.is_empty() {
        return;
    }
    // Consumed bytes are only skipped over; reclaim them to see the whole allocation.
    buf.reserve(INITIAL);
    if buf.capacity() > KEEP {
        *buf = BytesMut::with_capacity(INITIAL);
    }
}

/// The same for the buffer heads are written into.
pub fn settle_vec(out: &mut Vec<u8>) {
    if out.capacity() > KEEP {
        *out = Vec::with_capacity(INITIAL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;

    #[tokio::test]
    async fn a_large_body_grows_the_buffer_and_settling_shrinks_it() {
        let body = vec![7u8; 300 * 1024];
        let mut reader = &body[..];
        let mut buf = BytesMut::with_capacity(INITIAL);
        let mut reads = BodyReads::new();
        let (mut count, mut total) = (0, 0);
        loop {
            let n = reads.read(&mut reader, &mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            total += n;
            count += 1;
            // As the engine does: forwarded, then skipped over.
            buf.advance(n);
        }
        assert_eq!(total, body.len());
        assert!(count < 20, "{count} reads for 300 KiB");
        settle(&mut buf);
        assert_eq!(buf.capacity(), INITIAL);
    }

    #[tokio::test]
    async fn a_head_arriving_in_pieces_keeps_what_came_first() {
        let mut buf = BytesMut::with_capacity(INITIAL);
        buf.extend_from_slice(&[b'a'; 900]);
        let mut rest = &b"bcd"[..];
        read_more(&mut rest, &mut buf).await.unwrap();
        assert_eq!(buf.len(), 903);
        assert!(buf.ends_with(b"abcd"));
    }
}
