//! One HTTP/1 client connection served by this engine: read a head, route it, exchange, and
//! again — until the client closes, or a request comes that only hyper's full server handles,
//! and the connection (with the bytes read so far) is handed to it for the rest of its life.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::exchange::{exchange, refuse, After, ClientSide};
use super::gate::Gate;
use super::head::{HeadFields, Parsed};
use super::scratch;
use super::strict::Refusal;
use crate::buffer::{self, read_more};
use crate::deadline::{Deadline, DeadlineIo};
use crate::graceful::Graceful;
use crate::pipeline::{self, ClientInfo, Exchange, Proxy};

/// Client-side limits, as the listener has them.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// For each request head, from the end of the previous response (keep-alive idle).
    pub head_timeout: Duration,
    pub max_header_bytes: usize,
    pub max_headers: usize,
}

/// hyper's HTTP/1 server connection, once it has taken over.
pub type HyperConn = Pin<Box<dyn Graceful<Output = Result<(), hyper::Error>> + Send>>;
/// Builds it on a handed-over stream.
pub type ToHyper<I> = Box<dyn FnOnce(Gate<DeadlineIo<I>>) -> HyperConn + Send>;

enum Ended<I> {
    Closed,
    /// To hyper, with the bytes read and not yet served.
    Handover(DeadlineIo<I>, Bytes),
}

/// Shared between the connection's loop and its drain.
#[derive(Default)]
struct Flags {
    draining: AtomicBool,
    /// Waiting for the first byte of a request head: nothing would be lost by closing.
    idle: AtomicBool,
}

/// A client connection that this engine serves until it hands over to hyper.
pub struct Connection<I> {
    stage: Stage<I>,
    flags: Arc<Flags>,
    to_hyper: Option<ToHyper<I>>,
    limits: Limits,
}

enum Stage<I> {
    Own(Pin<Box<dyn Future<Output = Ended<I>> + Send>>),
    Hyper(HyperConn),
    Done,
}

impl<I> Connection<I>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    /// `deadline` is the one `io` enforces, set already for the first head.
    pub fn new(
        io: DeadlineIo<I>,
        deadline: Deadline,
        state: Arc<(Arc<Proxy>, ClientInfo)>,
        limits: Limits,
        to_hyper: ToHyper<I>,
    ) -> Self {
        let flags = Arc::new(Flags::default());
        let serving = serve(io, deadline, state, limits, flags.clone());
        Connection {
            stage: Stage::Own(Box::pin(serving)),
            flags,
            to_hyper: Some(to_hyper),
            limits,
        }
    }
}

impl<I> Future for Connection<I> {
    type Output = Result<(), hyper::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.stage {
                Stage::Own(serving) => {
                    if this.flags.draining.load(Ordering::Acquire)
                        && this.flags.idle.load(Ordering::Acquire)
                    {
                        this.stage = Stage::Done;
                        continue;
                    }
                    match serving.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Ended::Closed) => this.stage = Stage::Done,
                        Poll::Ready(Ended::Handover(io, read)) => {
                            let Some(to_hyper) = this.to_hyper.take() else {
                                this.stage = Stage::Done;
                                continue;
                            };
                            let gate = Gate::new(
                                read,
                                io,
                                this.limits.max_header_bytes,
                                this.limits.max_headers,
                            );
                            let mut conn = to_hyper(gate);
                            if this.flags.draining.load(Ordering::Acquire) {
                                conn.as_mut().graceful_shutdown();
                            }
                            this.stage = Stage::Hyper(conn);
                        }
                    }
                }
                Stage::Hyper(conn) => return conn.as_mut().poll(cx),
                Stage::Done => return Poll::Ready(Ok(())),
            }
        }
    }
}

impl<I> Graceful for Connection<I> {
    fn graceful_shutdown(self: Pin<&mut Self>) {
        let this = self.get_mut();
        this.flags.draining.store(true, Ordering::Release);
        if let Stage::Hyper(conn) = &mut this.stage {
            conn.as_mut().graceful_shutdown();
        }
    }
}

async fn serve<I>(
    mut io: DeadlineIo<I>,
    deadline: Deadline,
    state: Arc<(Arc<Proxy>, ClientInfo)>,
    limits: Limits,
    flags: Arc<Flags>,
) -> Ended<I>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (proxy, info) = (&state.0, &state.1);
    loop {
        // Idle: nothing read, and no buffers held until the next request's first bytes come.
        flags.idle.store(true, Ordering::Release);
        let scratch = match scratch::first_bytes(&mut io).await {
            Ok(Some(scratch)) => scratch,
            Ok(None) => return close(&mut io).await,
            Err(err) => {
                tracing::debug!(error = %err, "idle client connection ended");
                return Ended::Closed;
            }
        };
        flags.idle.store(false, Ordering::Release);
        let mut client = ClientSide::new(io, scratch);

        // Every request read, pipelined ones included.
        loop {
            // Phase: the request head, within the header-read deadline.
            let parsed = loop {
                if !client.scratch.buf.is_empty() {
                    let scratch = &mut *client.scratch;
                    match scratch.head.parse(&scratch.buf, limits.max_headers) {
                        Parsed::Partial if scratch.buf.len() < limits.max_header_bytes => {}
                        Parsed::Partial => break Parsed::Refused(Refusal::HeadTooLarge),
                        done => break done,
                    }
                }
                match read_more(&mut client.io, &mut client.scratch.buf).await {
                    Ok(0) => return close(&mut client.io).await,
                    Ok(_) => {}
                    Err(err) => {
                        tracing::debug!(error = %err, "client connection ended while reading a head");
                        return Ended::Closed;
                    }
                }
            };
            match parsed {
                Parsed::Hyper => return handover(client),
                Parsed::Refused(refusal) => {
                    refuse(&mut client, info, refusal).await;
                    return close(&mut client.io).await;
                }
                Parsed::Complete | Parsed::Partial => {}
            }

            // Phases: match, then choose. What this engine does not forward itself (no route,
            // HTTP/2 or TLS-less upstream shapes, mirrors) goes to hyper, which answers it as
            // it always has.
            let table = proxy.table().load();
            let head = &client.scratch.head;
            let buf = &client.scratch.buf;
            let fields = HeadFields {
                buf,
                list: &head.list,
            };
            let found = pipeline::match_route(
                &table,
                head.host(buf),
                head.method(buf),
                head.target(buf),
                &fields,
            );
            let Some(route) = found.filter(|r| r.h1_passthrough) else {
                return handover(client);
            };
            // A route with no weight anywhere: hyper answers it.
            let Some(mut chosen) = Exchange::choose(route, &fields) else {
                return handover(client);
            };
            deadline.clear();

            // The rest of the phases, as bytes.
            let closing = flags.draining.load(Ordering::Acquire);
            let after = exchange(&mut client, info, &mut chosen, closing).await;
            if after == After::Close || flags.draining.load(Ordering::Acquire) {
                return close(&mut client.io).await;
            }
            buffer::settle(&mut client.scratch.buf);
            deadline.set(Instant::now(), limits.head_timeout);
            if client.scratch.buf.is_empty() {
                break;
            }
        }
        io = client.into_io();
    }
}

fn handover<I>(client: ClientSide<I>) -> Ended<I> {
    let ClientSide { io, mut scratch } = client;
    let read = std::mem::take(&mut scratch.buf).freeze();
    scratch::give_back(scratch);
    Ended::Handover(io, read)
}

/// Ends the connection with a FIN (and a TLS close_notify), waiting briefly at most.
async fn close<I: AsyncWrite + Unpin>(io: &mut DeadlineIo<I>) -> Ended<I> {
    let _ = tokio::time::timeout(Duration::from_secs(1), io.shutdown()).await;
    Ended::Closed
}
