//! The buffers a client connection needs only while it serves a request: taken from a stock kept
//! per thread when a request's first bytes arrive, given back when the connection falls idle.
//!
//! An idle keep-alive connection is most of what a sidecar or an edge proxy holds; with its own
//! read buffer, head-writing buffer and field lists each one held about a kilobyte more than its
//! socket and task (massif, 1,000 idle connections). Taken from the stock, the keep-alive path
//! still allocates nothing per request.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::task::Poll;

use bytes::BytesMut;
use tokio::io::AsyncRead;

use super::head::{RequestHead, ResponseHead};
use crate::buffer;

/// Scratch spaces kept in stock per thread at most: about the requests one worker has in flight
/// at once. Past it, a connection that falls idle frees its space instead (about 1 KiB).
const STOCK: usize = 128;

/// What a client connection uses only while it serves a request: boxed, so that taking it from
/// the stock and giving it back moves a pointer.
pub struct Scratch {
    /// Read from the client and not yet forwarded: the current head, body bytes, pipelined
    /// requests. Starts at `buffer::INITIAL`.
    pub buf: BytesMut,
    /// The head (and first body bytes) being written to the other leg.
    pub out: Vec<u8>,
    /// The request head, as offsets into `buf`.
    pub head: RequestHead,
    /// The upstream's response head, as offsets into the upstream connection's buffer.
    pub resp: ResponseHead,
}

thread_local! {
    // Boxes, not values: a connection takes and returns its space as a pointer.
    #[allow(clippy::vec_box)]
    static STOCKED: RefCell<Vec<Box<Scratch>>> = const { RefCell::new(Vec::new()) };
}

/// Scratch space for a request: from this thread's stock, or new.
pub fn take() -> Box<Scratch> {
    STOCKED
        .try_with(|stock| stock.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            Box::new(Scratch {
                buf: BytesMut::with_capacity(buffer::INITIAL),
                out: Vec::new(),
                head: RequestHead::default(),
                resp: ResponseHead::default(),
            })
        })
}

/// Returns scratch space to this thread's stock. One whose buffer still holds bytes (the start
/// of a pipelined request) or whose buffers a large message grew past their keeping size is
/// freed instead: the engine settles its buffers after each exchange (`buffer::settle`), so
/// stocked ones are small. The heads' offsets are left as they are: each parse sets them all.
pub fn give_back(scratch: Box<Scratch>) {
    if !scratch.buf.is_empty()
        || scratch.buf.capacity() > buffer::KEEP
        || scratch.out.capacity() > buffer::KEEP
    {
        return;
    }
    // At thread exit the stock is gone: the space is simply freed.
    let _ = STOCKED.try_with(|stock| {
        let mut stock = stock.borrow_mut();
        if stock.len() < STOCK {
            stock.push(scratch);
        }
    });
}

/// Waits on an idle connection for the first bytes of its next request, holding no scratch
/// space while it waits: each attempt to read takes one from the stock and gives it back if
/// nothing came. `None`: the client closed the connection.
pub async fn first_bytes<R: AsyncRead + Unpin>(io: &mut R) -> io::Result<Option<Box<Scratch>>> {
    std::future::poll_fn(|cx| {
        let mut scratch = take();
        let read = {
            let mut reading = pin!(buffer::read_more(io, &mut scratch.buf));
            reading.as_mut().poll(cx)
        };
        match read {
            Poll::Ready(Ok(n)) if n > 0 => Poll::Ready(Ok(Some(scratch))),
            Poll::Ready(Ok(_)) => {
                give_back(scratch);
                Poll::Ready(Ok(None))
            }
            Poll::Ready(Err(err)) => {
                give_back(scratch);
                Poll::Ready(Err(err))
            }
            Poll::Pending => {
                give_back(scratch);
                Poll::Pending
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;
    use tokio::io::AsyncWriteExt;

    fn stocked() -> usize {
        STOCKED.with(|s| s.borrow().len())
    }

    #[test]
    fn space_given_back_is_taken_again() {
        let mut first = take();
        first.buf.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        let at: *const Scratch = &*first;
        // As the engine leaves it after an exchange: the head consumed.
        first.buf.advance(first.buf.len());
        give_back(first);
        let again = take();
        assert!(std::ptr::eq(&*again, at), "the same space, not a new one");
        assert!(again.buf.is_empty());
    }

    #[test]
    fn space_holding_bytes_or_grown_large_is_not_stocked() {
        while STOCKED.with(|s| s.borrow_mut().pop()).is_some() {}
        let mut held = take();
        held.buf.extend_from_slice(b"pipelined");
        give_back(held);
        let mut grown = take();
        grown.out.reserve(buffer::KEEP * 4);
        give_back(grown);
        assert_eq!(stocked(), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn waiting_for_a_request_holds_no_space() {
        while STOCKED.with(|s| s.borrow_mut().pop()).is_some() {}
        let (mut client, mut server) = tokio::io::duplex(1024);
        let mut waiting = Box::pin(first_bytes(&mut server));
        // Nothing sent yet: the attempt gave its space back.
        let polled = std::future::poll_fn(|cx| Poll::Ready(waiting.as_mut().poll(cx))).await;
        assert!(polled.is_pending());
        assert_eq!(
            stocked(),
            1,
            "the space is in stock, not held by the waiting connection"
        );
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        let scratch = waiting.await.unwrap().expect("bytes came");
        assert_eq!(&scratch.buf[..], b"GET / HTTP/1.1\r\n");
        assert_eq!(stocked(), 0, "taken while it serves");
        drop(client);
        let scratch_back = first_bytes(&mut server).await.unwrap();
        assert!(scratch_back.is_none(), "closed by the client");
        drop(scratch);
    }
}
