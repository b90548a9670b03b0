//! An HTTP/1 upstream connection as bytes: the forwarding engine in `crate::h1` writes request
//! heads to it and reads responses from it itself, with no hyper connection task between.

use std::io::ErrorKind;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::buffer;
use crate::deadline::{Deadline, DeadlineIo};

/// TCP or TLS, as connected, with the socket beneath either.
pub trait RawIo: AsyncRead + AsyncWrite + Send + Unpin {
    fn socket(&self) -> &TcpStream;
    /// Whether bytes at the socket may be the protocol's own rather than the peer's data (a
    /// TLS 1.3 session ticket is read by TLS and yields nothing).
    fn has_own_records(&self) -> bool;
}

impl RawIo for TcpStream {
    fn socket(&self) -> &TcpStream {
        self
    }
    fn has_own_records(&self) -> bool {
        false
    }
}

impl RawIo for tokio_rustls::client::TlsStream<TcpStream> {
    fn socket(&self) -> &TcpStream {
        self.get_ref().0
    }
    fn has_own_records(&self) -> bool {
        true
    }
}

pub struct RawConn {
    pub io: DeadlineIo<Box<dyn RawIo>>,
    /// The response timeout of the exchange in progress.
    pub deadline: Deadline,
    /// Bytes read from the upstream and not yet forwarded.
    pub buf: BytesMut,
    /// Taken from the pool (it may have been closed by the upstream meanwhile).
    pub reused: bool,
}

impl RawConn {
    pub(super) fn new(io: Box<dyn RawIo>) -> Self {
        let deadline = Deadline::default();
        RawConn {
            io: DeadlineIo::new(io, deadline.clone()),
            deadline,
            // As small as a client connection's (a typical response head fits): every pooled
            // upstream connection holds it. The engine grows it for a large head or body and
            // shrinks it again before the connection is pooled. 1 KiB was 0.27 MB of the heap
            // with 256 busy client connections.
            buf: BytesMut::with_capacity(buffer::INITIAL),
            reused: false,
        }
    }

    /// Whether an idle connection can take a request: the upstream has neither closed it nor
    /// sent anything unasked, as far as the reactor has seen. One read attempt that must find
    /// nothing to read; it costs no system call while the socket is not known readable.
    pub(super) fn is_usable(&mut self) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        let mut probe = [0u8; 1];
        let mut probe = ReadBuf::new(&mut probe);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        matches!(
            Pin::new(self.io.get_mut()).poll_read(&mut cx, &mut probe),
            Poll::Pending
        )
    }

    /// Whether the upstream has not closed the connection, asked of the socket itself (one
    /// `recv` with MSG_PEEK). The reactor's readiness, which `is_usable` reads, can trail a
    /// close the kernel has already taken: on a busy worker the FIN waits in the epoll set
    /// while a request is written to the dead connection. Only a request that cannot be sent
    /// again needs this certainty; for the rest, a stale connection costs a resend. Out of
    /// line: inlined, it cost every checkout 12 instructions, resendable or not.
    #[cold]
    #[inline(never)]
    pub(super) fn is_open(&self) -> bool {
        let mut probe = [MaybeUninit::<u8>::uninit(); 1];
        let io = self.io.get_ref();
        // The socket is non-blocking (tokio's): an empty receive queue is `WouldBlock`.
        match socket2::SockRef::from(io.socket()).peek(&mut probe) {
            Ok(0) => false,
            // The peer's bytes, unasked, or (TLS) a record of the protocol's own, which
            // `is_usable` has given TLS its chance to read.
            Ok(_) => io.has_own_records(),
            Err(err) => err.kind() == ErrorKind::WouldBlock,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A connection to a peer on loopback, the peer's side in blocking std.
    async fn pair() -> (RawConn, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (peer, _) = listener.accept().unwrap();
        (RawConn::new(Box::new(tcp)), peer)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_close_the_reactor_has_not_seen_yet_is_seen_at_the_socket() {
        let (mut conn, peer) = pair().await;
        assert!(
            conn.is_usable() && conn.is_open(),
            "an idle open connection"
        );
        drop(peer);
        // No await since the close: the reactor has not run, as on a worker busy with other
        // tasks. The socket knows already.
        assert!(!conn.is_open(), "the peer's FIN is in the receive queue");
        // Once the reactor has run, the cheap check sees it too.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!conn.is_usable());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn bytes_nobody_asked_for_make_a_plain_connection_unusable() {
        let (conn, mut peer) = pair().await;
        peer.write_all(b"HTTP/1.1 200 OK\r\n").unwrap();
        assert!(!conn.is_open());
    }
}
