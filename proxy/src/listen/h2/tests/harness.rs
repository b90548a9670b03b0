//! A listener that serves one connection with `H2Connection` and a handler of the test's, and
//! the h2 crate's client to talk to it.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body::{Body, Frame};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::super::{serve, H2Connection, H2Settings};
use crate::forward::body::{BoxError, ResponseBody, UpstreamBody};
use crate::listen::drain::Drain;
use crate::listen::spec::LimitsSpec;
use crate::upstream::Received;

pub type Answer = Pin<Box<dyn Future<Output = Response<ResponseBody>> + Send>>;
pub type Handler = Arc<dyn Fn(Request<Received>) -> Answer + Send + Sync>;

pub struct Server {
    pub addr: SocketAddr,
    pub drain: Drain,
    pub done: JoinHandle<io::Result<()>>,
}

/// Serves the first connection to `addr` with `handler`.
pub async fn start(limits: LimitsSpec, handler: Handler) -> Server {
    start_on(limits, handler, |socket| socket).await
}

/// `start`, the accepted socket seen through `wrap` (to count what is written to it).
pub async fn start_on<T, W>(limits: LimitsSpec, handler: Handler, wrap: W) -> Server
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    W: FnOnce(TcpStream) -> T + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let drain = Drain::default();
    let member = drain.join();
    let settings = H2Settings::new(&limits);
    let done = tokio::spawn(async move {
        let (socket, _) = listener.accept().await?;
        let start = move |req, stream| {
            let handler = handler.clone();
            serve(move |req| handler(req), req, stream)
        };
        let conn = H2Connection::new(wrap(socket), &settings, Instant::now(), start);
        member.watch(conn).await
    });
    Server { addr, drain, done }
}

/// The h2 crate's client on a new connection to `addr`, with `window` as its receive windows.
pub async fn client(
    addr: SocketAddr,
    window: u32,
) -> (
    h2::client::SendRequest<Bytes>,
    JoinHandle<Result<(), h2::Error>>,
) {
    let socket = TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(window)
        .initial_connection_window_size(window)
        // Room to queue a whole window: the capacity it reports is bounded by this too.
        .max_send_buffer_size(4 << 20)
        .handshake(socket)
        .await
        .expect("handshake");
    (client, tokio::spawn(connection))
}

/// Octets that say where they are: a body whose every byte can be checked.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ seed).collect()
}

/// A response body made as it is read: `chunks` chunks of `size` octets of `pattern`, then
/// optionally an error; `made` counts the octets made so far.
pub struct Made {
    pub size: usize,
    pub chunks: usize,
    pub made: Arc<AtomicUsize>,
    pub then_break: bool,
    pub trailers: Option<HeaderMap>,
}

impl Body for Made {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.chunks == 0 {
            if this.then_break {
                this.then_break = false;
                return Poll::Ready(Some(Err("the source broke".into())));
            }
            return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
        }
        this.chunks -= 1;
        let at = this.made.fetch_add(this.size, Ordering::SeqCst);
        let chunk: Vec<u8> = (at..at + this.size).map(|i| (i % 251) as u8).collect();
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))))
    }
}

/// `made` as a response body.
pub fn response_of(made: Made) -> Response<ResponseBody> {
    let body = Received::Pooled(Box::pin(made));
    Response::new(ResponseBody::Upstream(UpstreamBody::new(
        body, None, None, None, None,
    )))
}

/// Reads a response body to its end, its window given back as it goes; with its trailers.
pub async fn read_all(mut recv: h2::RecvStream) -> Result<(Vec<u8>, Option<HeaderMap>), h2::Error> {
    let mut content = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk?;
        let _ = recv.flow_control().release_capacity(chunk.len());
        content.extend_from_slice(&chunk);
    }
    let trailers = recv.trailers().await?;
    Ok((content, trailers))
}

/// Within `secs` seconds, or the test fails.
pub async fn within<T>(secs: u64, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("in time")
}
