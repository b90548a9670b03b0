//! A client connection that can be asked to finish what is in flight and then close: hyper's
//! HTTP/1 server connection, the passthrough engine's own, and weir's HTTP/2 one. The listener's
//! drain asks; the engines answer.

use std::future::Future;
use std::pin::Pin;

/// A connection that can be asked to finish what is in flight and then close.
pub trait Graceful: Future {
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<I, S, B> Graceful for hyper::server::conn::http1::UpgradeableConnection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        hyper::server::conn::http1::UpgradeableConnection::graceful_shutdown(self);
    }
}
