//! One request forwarded as bytes, phase by phase: connect → write the head (and the body) →
//! read the response head → record → write the response → relay its body → pool the
//! connection. The client's head was parsed and routed by `conn`.

use std::io;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::buffer::{self, read_more, BodyReads};
use super::encode;
use super::framing::BodyCursor;
use super::head::{Framing, ParsedResponse, RequestHead, ResponseHead};
use crate::deadline::DeadlineIo;
use crate::forward::{failure_cause, ClientInfo};
use crate::stats::{Outcome, Role, UpstreamError};
use crate::table::{Backend, Route};
use crate::upstream::{RawConn, RawLease};

/// A pooled connection may turn out closed; this many fresh tries before giving up.
const STALE_RETRIES: usize = 2;
/// Largest upstream response head accepted; past it the response is malformed.
const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// A client connection's bytes and the scratch space its exchanges reuse.
pub struct ClientSide<I> {
    pub io: DeadlineIo<I>,
    /// Read from the client and not yet forwarded: the current head, body bytes, pipelined
    /// requests.
    pub buf: BytesMut,
    /// The head (and first body bytes) being written to the other leg.
    out: Vec<u8>,
    pub head: RequestHead,
    resp: ResponseHead,
}

impl<I: AsyncRead + AsyncWrite + Unpin> ClientSide<I> {
    pub fn new(io: DeadlineIo<I>) -> Self {
        ClientSide {
            io,
            buf: BytesMut::with_capacity(buffer::INITIAL),
            out: Vec::new(),
            head: RequestHead::default(),
            resp: ResponseHead::default(),
        }
    }
}

/// What the client connection does after an exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    KeepAlive,
    Close,
}

/// Forwards the request whose head `client.head` describes and answers the client.
/// `closing`: the connection closes after this exchange whatever the messages say.
pub async fn exchange<I>(
    client: &mut ClientSide<I>,
    info: &ClientInfo,
    route: &Route,
    role: Role,
    closing: bool,
) -> After
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let close = closing || client.head.list.close;
    let is_head = client.head.is_head(&client.buf);
    // RFC 9110 §9.2.2: only idempotent requests may be sent again on their own.
    let idempotent = matches!(
        &client.buf[client.head.method.clone()],
        b"GET" | b"HEAD" | b"OPTIONS" | b"PUT" | b"DELETE" | b"TRACE"
    );
    let mut body = BodyCursor::new(client.head.framing);

    // The upstream's head, and as much of the body as has arrived, in one write.
    client.out.clear();
    encode::request_head(&mut client.out, &client.buf, &client.head, info);
    let head_len = client.head.len;
    let Ok(prefix) = body.take(&client.buf[head_len..]) else {
        return local(
            client,
            StatusCode::BAD_REQUEST,
            "malformed chunked body",
            true,
        )
        .await;
    };
    client
        .out
        .extend_from_slice(&client.buf[head_len..head_len + prefix]);
    client.buf.advance(head_len + prefix);
    // The whole request is in `out`: it can be written again to a fresh connection.
    let resendable = body.is_done() && idempotent;

    let sent = match route.timeout {
        None => forward(client, route, role, &mut body, is_head, resendable).await,
        Some(limit) => {
            let forwarding = forward(client, route, role, &mut body, is_head, resendable);
            match tokio::time::timeout(limit, forwarding).await {
                Ok(sent) => sent,
                Err(_) => {
                    let backend = route.backend(role);
                    backend
                        .stats
                        .record(&Outcome::error(UpstreamError::Timeout, limit));
                    Err(Failed::RouteTimeout)
                }
            }
        }
    };
    match sent {
        Ok(upstream) => respond(client, upstream, close).await,
        Err(Failed::ClientGone) => After::Close,
        Err(Failed::RouteTimeout) => {
            let cause = "request timed out (route timeout)";
            local(
                client,
                StatusCode::GATEWAY_TIMEOUT,
                cause,
                close || !body.is_done(),
            )
            .await
        }
        Err(Failed::Upstream(err, backend)) => {
            let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::BAD_GATEWAY);
            let cause = format!("{} ({} backend)", failure_cause(err), backend.role.as_str());
            // An unread rest of the request body would be taken for the next request.
            local(client, status, &cause, close || !body.is_done()).await
        }
    }
}

/// A response head has arrived on `conn`.
struct Upstream<'r> {
    conn: RawConn,
    lease: RawLease,
    backend: &'r Backend,
    started: Instant,
}

enum Failed<'r> {
    /// Recorded against the backend already.
    Upstream(UpstreamError, &'r Backend),
    /// The route's own deadline passed (recorded as a timeout of the chosen side).
    RouteTimeout,
    ClientGone,
}

/// Connect (the other side of the route takes it if this side cannot be reached), send, and
/// wait for the response head. Every failure is recorded against the backend it happened on.
async fn forward<'r, I>(
    client: &mut ClientSide<I>,
    route: &'r Route,
    role: Role,
    body: &mut BodyCursor,
    is_head: bool,
    resendable: bool,
) -> Result<Upstream<'r>, Failed<'r>>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let mut backend = route.backend(role);
    let mut started = Instant::now();
    let (mut conn, lease) = match backend.pick().checkout_raw().await {
        Ok(pair) => pair,
        Err(err) => {
            backend
                .stats
                .record(&Outcome::error(err, started.elapsed()));
            // Nothing was sent: the other side of the route may take it.
            let Some(other) = route.fallback(backend.role) else {
                return Err(Failed::Upstream(err, backend));
            };
            backend = other;
            started = Instant::now();
            match backend.pick().checkout_raw().await {
                Ok(pair) => pair,
                Err(err) => {
                    backend
                        .stats
                        .record(&Outcome::error(err, started.elapsed()));
                    return Err(Failed::Upstream(err, backend));
                }
            }
        }
    };
    let limit = lease.endpoint().response_timeout();
    let mut retries = 0;
    loop {
        // Enforced by the connection's IO: no timer of this request's own.
        conn.deadline.set(started, limit);
        let delivered = deliver(client, &mut conn, body, is_head).await;
        conn.deadline.clear();
        let err = match delivered {
            Ok(()) => {
                return Ok(Upstream {
                    conn,
                    lease,
                    backend,
                    started,
                })
            }
            Err(Delivery::ClientGone) => return Err(Failed::ClientGone),
            Err(Delivery::Stale) if conn.reused && resendable && retries < STALE_RETRIES => {
                // A pooled connection the upstream had closed: the request never reached it.
                retries += 1;
                match lease.endpoint().open_raw().await {
                    Ok(fresh) => {
                        conn = fresh;
                        continue;
                    }
                    Err(err) => err,
                }
            }
            Err(Delivery::Stale) => UpstreamError::Reset,
            Err(Delivery::Upstream(err)) => err,
        };
        backend
            .stats
            .record(&Outcome::error(err, started.elapsed()));
        return Err(Failed::Upstream(err, backend));
    }
}

enum Delivery {
    /// The connection failed before a byte of response: it was closed when taken.
    Stale,
    Upstream(UpstreamError),
    ClientGone,
}

fn upstream_io(err: &io::Error, nothing_read: bool) -> Delivery {
    match err.kind() {
        io::ErrorKind::TimedOut => Delivery::Upstream(UpstreamError::Timeout),
        _ if nothing_read => Delivery::Stale,
        _ => Delivery::Upstream(UpstreamError::Reset),
    }
}

/// Writes the request (head, then the rest of the body as the client sends it) and reads up
/// to the final response head; interim (1xx) heads go straight to the client.
async fn deliver<I>(
    client: &mut ClientSide<I>,
    conn: &mut RawConn,
    body: &mut BodyCursor,
    is_head: bool,
) -> Result<(), Delivery>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    if let Err(err) = conn.io.write_all(&client.out).await {
        return Err(upstream_io(&err, true));
    }
    let mut reads = BodyReads::new();
    while !body.is_done() {
        match reads.read(&mut client.io, &mut client.buf).await {
            Ok(0) | Err(_) => return Err(Delivery::ClientGone),
            Ok(_) => {}
        }
        let n = body.take(&client.buf).map_err(|_| Delivery::ClientGone)?;
        if let Err(err) = conn.io.write_all(&client.buf[..n]).await {
            return Err(upstream_io(&err, false));
        }
        client.buf.advance(n);
    }
    loop {
        match client.resp.parse(&conn.buf, is_head) {
            ParsedResponse::Complete if client.resp.status == 101 => {
                // Nobody asked to switch protocols.
                return Err(Delivery::Upstream(UpstreamError::Protocol));
            }
            ParsedResponse::Complete if client.resp.status < 200 => {
                let mut interim = Vec::new();
                encode::response_head(&mut interim, &conn.buf, &client.resp, false);
                conn.buf.advance(client.resp.len);
                if client.io.write_all(&interim).await.is_err() {
                    return Err(Delivery::ClientGone);
                }
            }
            ParsedResponse::Complete => return Ok(()),
            ParsedResponse::Malformed => return Err(Delivery::Upstream(UpstreamError::Protocol)),
            ParsedResponse::Partial if conn.buf.len() >= MAX_RESPONSE_HEAD => {
                return Err(Delivery::Upstream(UpstreamError::Protocol))
            }
            ParsedResponse::Partial => match read_more(&mut conn.io, &mut conn.buf).await {
                Ok(0) if conn.buf.is_empty() => return Err(Delivery::Stale),
                Ok(0) => return Err(Delivery::Upstream(UpstreamError::Reset)),
                Ok(_) => {}
                Err(err) => return Err(upstream_io(&err, conn.buf.is_empty())),
            },
        }
    }
}

/// Records the response, writes its head and relays its body; pools the upstream connection
/// if the exchange ended cleanly.
async fn respond<I>(client: &mut ClientSide<I>, upstream: Upstream<'_>, close: bool) -> After
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let Upstream {
        mut conn,
        lease,
        backend,
        started,
    } = upstream;
    let resp = &client.resp;
    backend.stats.record(&Outcome::response_between(
        resp.status,
        started,
        Instant::now(),
    ));
    // A body that ends when the upstream closes ends the client's connection too.
    let close = close || resp.framing == Framing::Close;
    let mut body = BodyCursor::new(resp.framing);
    client.out.clear();
    encode::response_head(&mut client.out, &conn.buf, resp, close);
    let Ok(first) = body.take(&conn.buf[resp.len..]) else {
        return After::Close;
    };
    client
        .out
        .extend_from_slice(&conn.buf[resp.len..resp.len + first]);
    conn.buf.advance(resp.len + first);
    let upstream_keeps = !resp.close;
    if client.io.write_all(&client.out).await.is_err() {
        return After::Close;
    }
    let mut reads = BodyReads::new();
    while !body.is_done() {
        match reads.read(&mut conn.io, &mut conn.buf).await {
            Ok(0) => {
                if body.end_of_stream().is_err() {
                    // Truncated: the client must see the connection end, not a short body.
                    return After::Close;
                }
                break;
            }
            Ok(_) => {}
            Err(_) => return After::Close,
        }
        let Ok(n) = body.take(&conn.buf) else {
            return After::Close;
        };
        if client.io.write_all(&conn.buf[..n]).await.is_err() {
            return After::Close;
        }
        conn.buf.advance(n);
    }
    if upstream_keeps && conn.buf.is_empty() {
        buffer::settle(&mut conn.buf);
        lease.endpoint().give_back_raw(conn);
    }
    buffer::settle_vec(&mut client.out);
    if close {
        After::Close
    } else {
        After::KeepAlive
    }
}

/// Answers the client with a response of weir's own.
async fn local<I>(client: &mut ClientSide<I>, status: StatusCode, cause: &str, close: bool) -> After
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    client.out.clear();
    encode::local_response(&mut client.out, status, cause, close);
    if client.io.write_all(&client.out).await.is_err() || close {
        After::Close
    } else {
        After::KeepAlive
    }
}
