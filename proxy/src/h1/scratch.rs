//! The buffers a client connection needs only while it serves a request: taken from a stock kept
//! per thread when a request's first bytes arrive, given back when the connection falls idle.
//!
//! An idle keep-alive connection is most of what a sidecar or an edge proxy holds; with its own
//! read buffer, head-writing buffer and field lists each one held about a kilobyte more than its
//! socket and task (massif, 1,000 idle connections). Taken from the stock, the keep-alive path
//! still allocates nothing per request.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::Poll;

use bytes::BytesMut;
use tokio::io::AsyncRead;

use super::head::{RequestHead, ResponseHead};
use crate::buffer;

/// Scratch spaces kept in stock per thread at most: more than the requests one worker has in
/// flight at once under heavy load (past it, each request beyond allocates and frees its space:
/// with 128, 256 connections on one worker cost up to 15 % more instructions a request). About
/// 1 KiB each; the trim after many clients leave empties the stocks (`release`).
const STOCK: usize = 512;

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

/// One thread's stock. A mutex only so that `release` can empty it from another thread: the
/// thread it belongs to is the only other one to lock it, so it is never contended.
// Boxes, not values: a connection takes and returns its space as a pointer.
#[allow(clippy::vec_box)]
type Stock = Mutex<Vec<Box<Scratch>>>;

/// Every thread's stock, for `release`.
static STOCKS: Mutex<Vec<Weak<Stock>>> = Mutex::new(Vec::new());

thread_local! {
    static STOCKED: Arc<Stock> = {
        let stock = Arc::new(Mutex::new(Vec::new()));
        lock(&STOCKS).push(Arc::downgrade(&stock));
        stock
    };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Scratch space for a request: from this thread's stock, or new.
pub fn take() -> Box<Scratch> {
    STOCKED
        .try_with(|stock| lock(stock).pop())
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
        let mut stock = lock(stock);
        if stock.len() < STOCK {
            stock.push(scratch);
        }
    });
}

/// Empties every thread's stock, for a trim of the heap after many clients left: stocked
/// spaces were allocated while they were connected, all over the heap, and each pins the pages
/// it sits on (with 128 a thread, a third of what 4,000 clients had grown the heap by stayed
/// after they left). Traffic fills the stocks again as it needs.
pub fn release() {
    let mut stocks = lock(&STOCKS);
    stocks.retain(|stock| match stock.upgrade() {
        Some(stock) => {
            // Freed outside the lock: the owning thread may be waiting for it.
            let emptied = std::mem::take(&mut *lock(&stock));
            drop(emptied);
            true
        }
        None => false,
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
        if let Poll::Ready(Ok(n)) = read {
            if n > 0 {
                return Poll::Ready(Ok(Some(scratch)));
            }
        }
        // Nothing came (or the connection ended): hold nothing while waiting.
        give_back(scratch);
        read.map(|ended| ended.map(|_| None))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;
    use tokio::io::AsyncWriteExt;

    /// The tests that look at the stock, one at a time: `release` empties every thread's.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn stocked() -> usize {
        STOCKED.with(|s| lock(s).len())
    }

    #[test]
    fn space_given_back_is_taken_again() {
        let _serial = lock(&SERIAL);
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
        let _serial = lock(&SERIAL);
        STOCKED.with(|s| lock(s).clear());
        let mut held = take();
        held.buf.extend_from_slice(b"pipelined");
        give_back(held);
        let mut grown = take();
        grown.out.reserve(buffer::KEEP * 4);
        give_back(grown);
        assert_eq!(stocked(), 0);
    }

    #[test]
    fn release_empties_the_stock() {
        let _serial = lock(&SERIAL);
        give_back(take());
        assert!(stocked() >= 1);
        release();
        assert_eq!(stocked(), 0);
    }

    #[test]
    fn waiting_for_a_request_holds_no_space() {
        let _serial = lock(&SERIAL);
        STOCKED.with(|s| lock(s).clear());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
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
            let closed = first_bytes(&mut server).await.unwrap();
            assert!(closed.is_none(), "closed by the client");
        });
    }
}
