//! An HTTP/1 upstream connection as bytes: the forwarding engine in `crate::h1` writes request
//! heads to it and reads responses from it itself, with no hyper connection task between.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::buffer;
use crate::deadline::{Deadline, DeadlineIo};

/// TCP or TLS, as connected.
pub trait RawIo: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> RawIo for T {}

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
    /// sent anything unasked. One read attempt that must find nothing to read.
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
}
