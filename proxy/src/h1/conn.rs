//! One HTTP/1 client connection served by this engine: read a head, route it, exchange, and
//! again — until the client closes, or a request comes that only hyper's full server handles,
//! and the connection (with the bytes read so far) is handed to it for the rest of its life.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::exchange::{exchange, refuse, After, ClientSide};
use super::gate::Gate;
use super::head::{HeadFields, Parsed};
use super::mirror;
use super::scratch::{self, Scratch};
use super::strict::Refusal;
use crate::buffer::{self, read_more};
use crate::deadline::{Deadline, DeadlineIo};
use crate::graceful::Graceful;
use crate::pipeline::{self, ConnState, Counts, Exchange, Untallied};
use crate::stock::Shelf;

/// Client-side limits, as the listener has them.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// For each request head, from the end of the previous response (keep-alive idle).
    pub head_timeout: Duration,
    /// Some (shorter than `head_timeout`): a connection that has waited this long for its next
    /// request ends as `Finished::Idle`, for the listener to park.
    pub park_after: Option<Duration>,
    pub max_header_bytes: usize,
    pub max_headers: usize,
}

/// hyper's HTTP/1 server connection, once it has taken over.
pub type HyperConn = Pin<Box<dyn Graceful<Output = Result<(), hyper::Error>> + Send>>;
/// Builds it on a handed-over stream.
pub type ToHyper<I> = Box<dyn FnOnce(Gate<DeadlineIo<I>>) -> HyperConn + Send>;

/// How a connection this engine served ended.
pub enum Finished<I> {
    /// Closed, or served by hyper to its end.
    Closed,
    /// Idle for `park_after` with nothing read: its socket, and when it went idle (its next
    /// head is due `head_timeout` after that).
    Idle { io: I, since: Instant },
}

enum Ended<I> {
    /// Every request read is answered: the connection waits for the next, holding only its
    /// socket.
    Idle(DeadlineIo<I>),
    Closed,
    /// To hyper, with the bytes read and not yet served.
    Handover(DeadlineIo<I>, Bytes),
}

/// What the connection's stages share, set once per connection.
struct Shared {
    /// The header-read deadline its `io` enforces.
    deadline: Deadline,
    state: ConnState,
    limits: Limits,
    draining: AtomicBool,
    /// The deadline in force is the idle one, `park_after` from the end of the last response,
    /// not the head's own.
    parks: AtomicBool,
}

impl Shared {
    /// When the connection went idle, if the deadline in force is the idle one.
    fn idle_since(&self) -> Option<Instant> {
        let after = self.limits.park_after?;
        let due = self.deadline.due()?;
        self.parks.load(Ordering::Relaxed).then(|| due - after)
    }

    /// The next head's deadline, if the idle one is in force: `head_timeout` from the same
    /// start. (Once bytes come, the head has its full time; most heads come whole in their
    /// first read, and never need this.)
    fn head_deadline(&self) {
        if let Some(since) = self.idle_since() {
            self.parks.store(false, Ordering::Relaxed);
            self.deadline.set(since, self.limits.head_timeout);
        }
    }
}

/// Busy-stage boxes kept in stock per thread at most (about 1 KiB each), as for the scratch
/// spaces the busy stage uses.
const BUSY_STOCK: usize = scratch::STOCK;

/// A client connection that this engine serves until it hands over to hyper.
///
/// Idle, it holds its socket and nothing else: the future that serves a busy stretch — read,
/// route, exchange, for every request read, pipelined ones too — is about a kilobyte, so it is
/// made when a request's first bytes come, in a box taken from the thread's stock, and the box
/// goes back when every request read is answered. (Kept for the connection's life, that future
/// was 40 % of what an idle keep-alive connection held.)
struct Connection<I, M, F> {
    stage: Stage<I, F>,
    shared: Arc<Shared>,
    to_hyper: Option<ToHyper<I>>,
    /// Makes the busy stage's future (`busy`): its type is named only through this.
    busy: M,
    /// The stock the busy stage's box comes from and goes back to.
    shelf: Shelf<Pin<Box<Option<F>>>>,
}

enum Stage<I, F> {
    Idle(DeadlineIo<I>),
    /// Always `Some` while in this stage; `None` only in stock.
    Busy(Pin<Box<Option<F>>>),
    Hyper(HyperConn),
    Done,
}

/// Serves a client connection on this engine. `deadline` is the one `io` enforces, set
/// already for the first head.
pub fn connection<I>(
    io: DeadlineIo<I>,
    deadline: Deadline,
    state: ConnState,
    limits: Limits,
    to_hyper: ToHyper<I>,
) -> impl Graceful<Output = Result<Finished<I>, hyper::Error>> + Send
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let shared = Arc::new(Shared {
        deadline,
        state,
        limits,
        draining: AtomicBool::new(false),
        parks: AtomicBool::new(false),
    });
    // The busy future's type is inferred from `busy` here.
    fn start<I, M, F>(
        io: DeadlineIo<I>,
        shared: Arc<Shared>,
        to_hyper: ToHyper<I>,
        busy: M,
    ) -> Connection<I, M, F>
    where
        M: Fn(Arc<Shared>, DeadlineIo<I>, Option<Box<Scratch>>) -> F,
        F: Send + 'static,
    {
        Connection {
            stage: Stage::Idle(io),
            shared,
            to_hyper: Some(to_hyper),
            busy,
            shelf: Shelf::here(),
        }
    }
    start(io, shared, to_hyper, busy::<I>)
}

impl<I, M, F> Future for Connection<I, M, F>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    M: Fn(Arc<Shared>, DeadlineIo<I>, Option<Box<Scratch>>) -> F + Unpin,
    F: Future<Output = Ended<I>> + Send + 'static,
{
    type Output = Result<Finished<I>, hyper::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.stage {
                Stage::Idle(_) if this.shared.draining.load(Ordering::Acquire) => {
                    // Nothing read, nothing lost by closing.
                    this.stage = Stage::Done;
                }
                Stage::Idle(io) => {
                    // Bytes, or the client's end (closed by the busy stage, with a FIN).
                    let first = match ready!(scratch::poll_first_bytes(io, cx)) {
                        Ok(first) => first,
                        Err(err) => {
                            // The idle deadline passed: the listener parks the socket.
                            let since = (err.kind() == std::io::ErrorKind::TimedOut)
                                .then(|| this.shared.idle_since())
                                .flatten();
                            if let Some(since) = since {
                                if let Stage::Idle(io) =
                                    std::mem::replace(&mut this.stage, Stage::Done)
                                {
                                    let io = io.into_inner();
                                    return Poll::Ready(Ok(Finished::Idle { io, since }));
                                }
                            }
                            tracing::debug!(error = %err, "idle client connection ended");
                            this.stage = Stage::Done;
                            continue;
                        }
                    };
                    if let Stage::Idle(io) = std::mem::replace(&mut this.stage, Stage::Done) {
                        let mut slot = this.shelf.take().unwrap_or_else(|| Box::pin(None));
                        slot.set(Some((this.busy)(this.shared.clone(), io, first)));
                        this.stage = Stage::Busy(slot);
                    }
                }
                Stage::Busy(slot) => {
                    let ended = match slot.as_mut().as_pin_mut() {
                        Some(serving) => ready!(serving.poll(cx)),
                        None => Ended::Closed,
                    };
                    if let Stage::Busy(mut slot) = std::mem::replace(&mut this.stage, Stage::Done) {
                        slot.set(None);
                        this.shelf.give_back(slot, BUSY_STOCK);
                    }
                    this.stage = match ended {
                        Ended::Idle(io) => Stage::Idle(io),
                        Ended::Closed => Stage::Done,
                        Ended::Handover(io, read) => match this.to_hyper.take() {
                            Some(to_hyper) => {
                                let limits = this.shared.limits;
                                let gate = Gate::new(
                                    read,
                                    io,
                                    limits.max_header_bytes,
                                    limits.max_headers,
                                );
                                let mut conn = to_hyper(gate);
                                if this.shared.draining.load(Ordering::Acquire) {
                                    conn.as_mut().graceful_shutdown();
                                }
                                Stage::Hyper(conn)
                            }
                            None => Stage::Done,
                        },
                    };
                }
                Stage::Hyper(conn) => return conn.as_mut().poll(cx).map_ok(|()| Finished::Closed),
                Stage::Done => return Poll::Ready(Ok(Finished::Closed)),
            }
        }
    }
}

impl<I, M, F> Graceful for Connection<I, M, F>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    M: Fn(Arc<Shared>, DeadlineIo<I>, Option<Box<Scratch>>) -> F + Unpin,
    F: Future<Output = Ended<I>> + Send + 'static,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        let this = self.get_mut();
        this.shared.draining.store(true, Ordering::Release);
        if let Stage::Hyper(conn) = &mut this.stage {
            conn.as_mut().graceful_shutdown();
        }
    }
}

/// A busy stretch: every request read answered, from the first bytes of one until the
/// connection has nothing read left (`Idle`), closes or hands over. `first`: the scratch space
/// with those bytes, or `None` if the client closed the connection instead.
async fn busy<I>(
    shared: Arc<Shared>,
    mut io: DeadlineIo<I>,
    first: Option<Box<Scratch>>,
) -> Ended<I>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Some(scratch) = first else {
        return close(&mut io).await;
    };
    let (proxy, info) = (&shared.state.0, &shared.state.1);
    let (limits, deadline) = (shared.limits, &shared.deadline);
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
            shared.head_deadline();
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
            Parsed::Hyper => return handover(client, &shared),
            Parsed::Refused(refusal) => {
                refuse(&mut client, info, refusal).await;
                return close(&mut client.io).await;
            }
            Parsed::Complete | Parsed::Partial => {}
        }

        // Phases: match, choose, mirror. What this engine does not forward itself (no route,
        // HTTP/2 or TLS-less upstream shapes, a body to copy) goes to hyper, which answers it
        // as it always has.
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
            info.tls,
            head.method(buf),
            head.target(buf),
            &fields,
        );
        let Some(route) = found.filter(|r| r.h1_passthrough) else {
            return handover(client, &shared);
        };
        let mirrors = route.mirrors();
        if mirrors && mirror::takes_body(route, buf, head, &fields) {
            return handover(client, &shared);
        }
        // A route with no weight anywhere: hyper answers it.
        let Some(mut chosen) = Exchange::choose(route, &fields) else {
            return handover(client, &shared);
        };
        deadline.clear();
        let logged = if pipeline::logging::on(proxy) {
            pipeline::logging::begin(
                proxy,
                info,
                Some(route),
                "HTTP/1.1",
                head.method(buf),
                head.host(buf),
                head.target(buf),
                &fields,
            )
        } else {
            None
        };

        let pair = match mirrors {
            true => mirror::start(proxy, route, buf, head, &fields, info),
            false => None,
        };

        // The rest of the phases, as bytes.
        let closing = shared.draining.load(Ordering::Acquire);
        // Two copies of the exchange: a request that is not logged tallies nothing.
        let after = match logged {
            None => {
                exchange(
                    &mut client,
                    info,
                    &mut chosen,
                    pair,
                    closing,
                    &mut Untallied,
                )
                .await
            }
            Some(pending) => {
                let mut counts = Counts::default();
                let after =
                    exchange(&mut client, info, &mut chosen, pair, closing, &mut counts).await;
                pipeline::logging::finish(proxy, Some(pending), Some(&chosen), &counts);
                after
            }
        };
        let ended = match after {
            After::KeepAlive { since } if !shared.draining.load(Ordering::Acquire) => since,
            _ => return close(&mut client.io).await,
        };
        buffer::settle(&mut client.scratch.buf);
        if client.scratch.buf.is_empty() {
            // Idle: the deadline is the time to park, if this connection parks (the head's
            // own comes back with the first bytes). Either way it only moves later from one
            // request to the next, so the timer is rarely touched.
            match limits.park_after {
                Some(after) => {
                    deadline.set(ended, after);
                    shared.parks.store(true, Ordering::Relaxed);
                }
                None => deadline.set(ended, limits.head_timeout),
            }
            return Ended::Idle(client.into_io());
        }
        // Pipelined: the next head is read now, within its own time.
        shared.parks.store(false, Ordering::Relaxed);
        deadline.set(Instant::now(), limits.head_timeout);
    }
}

fn handover<I>(client: ClientSide<I>, shared: &Shared) -> Ended<I> {
    // hyper reads the rest of the head within the head's own deadline.
    shared.head_deadline();
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
