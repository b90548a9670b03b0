//! The buffers a client connection needs only while it serves a request: taken from a stock kept
//! per thread when a request's first bytes arrive, given back when the connection falls idle.
//!
//! An idle keep-alive connection is most of what a sidecar or an edge proxy holds; with its own
//! read buffer, head-writing buffer and field lists each one held about a kilobyte more than its
//! socket and task (massif, 1,000 idle connections). Taken from the stock, the keep-alive path
//! still allocates nothing per request.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
use tokio::io::{AsyncRead, ReadBuf};

use super::head::{RequestHead, ResponseHead};
use crate::buffer;
use crate::pipeline::mirror::PrimaryBody;
use crate::stock::Shelf;

/// Scratch spaces kept in stock per thread at most: more than the requests one worker has in
/// flight at once under heavy load (past it, each request beyond allocates and frees its space:
/// with 128, 256 connections on one worker cost up to 15 % more instructions a request). About
/// 1 KiB each; the trim after many clients leave empties the stocks (`stock::release`).
pub const STOCK: usize = 512;

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
    /// A copied request's answer body on its way to its pair (`pipeline::mirror`): set for
    /// that exchange only, taken when its body ends; one cut short ends the connection, and
    /// with it this (`give_back`). Kept here rather than passed along: the relay that every
    /// request runs then carries no state of it (passed, it cost each 20 instructions).
    pub pair: Option<PrimaryBody>,
}

thread_local! {
    /// This thread's stock of scratch spaces.
    static SHELF: Shelf<Box<Scratch>> = Shelf::here();
}

/// Scratch space for a request: from this thread's stock, or new.
pub fn take() -> Box<Scratch> {
    SHELF
        .try_with(|shelf| shelf.take())
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            Box::new(Scratch {
                buf: BytesMut::with_capacity(buffer::INITIAL),
                out: Vec::new(),
                head: RequestHead::default(),
                resp: ResponseHead::default(),
                pair: None,
            })
        })
}

/// Returns scratch space to this thread's stock. One whose buffer still holds bytes (the start
/// of a pipelined request) or whose buffers a large message grew past their keeping size is
/// freed instead: the engine settles its buffers after each exchange (`buffer::settle`), so
/// stocked ones are small. The heads' offsets are left as they are: each parse sets them all.
pub fn give_back(mut scratch: Box<Scratch>) {
    // A body cut short: its pair is done with (not compared). Tested first: the common case
    // then writes nothing.
    if scratch.pair.is_some() {
        scratch.pair = None;
    }
    if !scratch.buf.is_empty()
        || scratch.buf.capacity() > buffer::KEEP
        || scratch.out.capacity() > buffer::KEEP
    {
        return;
    }
    // At thread exit the stock is gone: the space is simply freed.
    let _ = SHELF.try_with(|shelf| shelf.give_back(scratch, STOCK));
}

/// Polls an idle connection for the first bytes of its next request. While it waits it holds
/// no scratch space: it reads into the stack and takes a space from the stock only when bytes
/// came. `None`: the client closed the connection.
pub fn poll_first_bytes<R: AsyncRead + Unpin>(
    io: &mut R,
    cx: &mut Context<'_>,
) -> Poll<io::Result<Option<Box<Scratch>>>> {
    let mut first = [MaybeUninit::<u8>::uninit(); buffer::INITIAL];
    let mut read = ReadBuf::uninit(&mut first);
    ready!(Pin::new(io).poll_read(cx, &mut read))?;
    if read.filled().is_empty() {
        return Poll::Ready(Ok(None));
    }
    let mut scratch = take();
    scratch.buf.extend_from_slice(read.filled());
    Poll::Ready(Ok(Some(scratch)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;
    use std::future::Future;
    use tokio::io::AsyncWriteExt;

    fn stocked() -> usize {
        SHELF.with(|shelf| shelf.len())
    }

    fn first_bytes<'a>(
        io: &'a mut tokio::io::DuplexStream,
    ) -> impl Future<Output = io::Result<Option<Box<Scratch>>>> + 'a {
        std::future::poll_fn(move |cx| poll_first_bytes(io, cx))
    }

    #[test]
    fn space_given_back_is_taken_again() {
        let _serial = crate::stock::serial();
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
        let _serial = crate::stock::serial();
        crate::stock::release();
        let mut held = take();
        held.buf.extend_from_slice(b"pipelined");
        give_back(held);
        let mut grown = take();
        grown.out.reserve(buffer::KEEP * 4);
        give_back(grown);
        assert_eq!(stocked(), 0);
    }

    #[test]
    fn waiting_for_a_request_holds_no_space() {
        let _serial = crate::stock::serial();
        crate::stock::release();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        give_back(take());
        assert_eq!(stocked(), 1);
        runtime.block_on(async {
            let (mut client, mut server) = tokio::io::duplex(1024);
            let mut waiting = Box::pin(first_bytes(&mut server));
            // Nothing sent yet: the attempt to read took no space.
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
