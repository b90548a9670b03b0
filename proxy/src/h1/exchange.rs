//! One request forwarded as bytes: the pipeline's phases (`crate::pipeline`) with this
//! engine's way of moving them — write the head (and the body) → read the response head →
//! write the response → relay its body → pool the connection. The client's head was parsed,
//! matched and a side chosen by `conn`.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use bytes::Buf;
use http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::delivery::{next_head, Delivery};
use super::encode;
use super::head::Framing;
use super::scratch::{self, Scratch};
use super::strict::Refusal;
use crate::buffer::{self, BodyReads};
use crate::deadline::DeadlineIo;
use crate::framing::BodyCursor;
use crate::pipeline::mirror::{PrimaryBody, PrimarySide};
use crate::pipeline::{self, ClientInfo, Exchange, Failure, Tally, Transport, Undelivered};
use crate::stats::UpstreamError;
use crate::table::Backend;
use crate::upstream::{Endpoint, RawConn, RawLease};

/// A client connection while it serves requests: its bytes, and the scratch space its
/// exchanges use (taken from the thread's stock when a request's first bytes came; an idle
/// connection holds only its `io`).
pub struct ClientSide<I> {
    pub io: DeadlineIo<I>,
    pub scratch: Box<Scratch>,
}

impl<I> ClientSide<I> {
    pub fn new(io: DeadlineIo<I>, scratch: Box<Scratch>) -> Self {
        ClientSide { io, scratch }
    }

    /// Falls idle: the scratch space goes back to the stock.
    pub fn into_io(self) -> DeadlineIo<I> {
        scratch::give_back(self.scratch);
        self.io
    }
}

/// What the client connection does after an exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Idle from `since` on: when the client had the whole response — the time its last byte
    /// came from the upstream when writing it did not wait, a time taken anyway (each clock
    /// read costs as much as parsing a field).
    KeepAlive {
        since: Instant,
    },
    Close,
}

/// RFC 9110 §9.2.2: only idempotent requests may be sent again on their own. Always inline:
/// called, it cost every request of this engine 19 instructions.
#[inline(always)]
pub(super) fn is_idempotent(method: &[u8]) -> bool {
    matches!(
        method,
        b"GET" | b"HEAD" | b"OPTIONS" | b"PUT" | b"DELETE" | b"TRACE"
    )
}

/// Forwards the request whose head `client.scratch.head` describes and answers the client;
/// `pair`: where its answer goes beside its mirror's copy's, when it was copied.
/// `closing`: the connection closes after this exchange whatever the messages say. What the
/// access log reads of it goes in `tally`.
pub async fn exchange<I, T>(
    client: &mut ClientSide<I>,
    info: &ClientInfo,
    exchange: &mut Exchange<'_>,
    pair: Option<PrimarySide>,
    closing: bool,
    tally: &mut T,
) -> After
where
    I: AsyncRead + AsyncWrite + Unpin + Send,
    T: Tally + Send,
{
    let close = closing || client.scratch.head.list.close;
    let is_head = client.scratch.head.is_head(&client.scratch.buf);
    let idempotent = is_idempotent(&client.scratch.buf[client.scratch.head.method.clone()]);
    let mut body = BodyCursor::new(client.scratch.head.framing);

    // Rewrite: the upstream's head, and as much of the body as has arrived, in one write.
    client.scratch.out.clear();
    encode::request_head(
        &mut client.scratch.out,
        &client.scratch.buf,
        &client.scratch.head,
        info,
    );
    let head_len = client.scratch.head.len;
    let Ok(prefix) = body.take(&client.scratch.buf[head_len..]) else {
        tally.status(StatusCode::BAD_REQUEST.as_u16());
        return local(
            client,
            StatusCode::BAD_REQUEST,
            "malformed chunked body",
            true,
        )
        .await;
    };
    client
        .scratch
        .out
        .extend_from_slice(&client.scratch.buf[head_len..head_len + prefix]);
    client.scratch.buf.advance(head_len + prefix);
    tally.request_bytes(prefix as u64);
    // The whole request is in `out`: it can be written again to a fresh connection.
    let resendable = body.is_done() && idempotent;

    // Connect, send — within the route's deadline — then record and respond.
    let mut leg = ByteLeg {
        client: &mut *client,
        body: &mut body,
        is_head,
        resendable,
        tally: &mut *tally,
    };
    let forwarded = pipeline::forward(exchange, &mut leg).await;
    if let Some(pair) = pair {
        // gRPC never comes this way: no status in the head to read.
        let answered = match &forwarded {
            Ok(_) => Ok((client.scratch.resp.status, false)),
            Err(failure) => Err(*failure),
        };
        // Its answer goes beside its copy's; its body, on to be compared (`respond`).
        client.scratch.pair = pipeline::mirror::primary(pair, exchange.at, answered);
    }
    match forwarded {
        Ok((conn, lease)) => {
            let answered = Instant::now();
            let status = client.scratch.resp.status;
            let outcome = exchange.response_outcome(status, answered);
            exchange.record(&outcome);
            tally.status(status);
            tally.answered(answered);
            respond(client, conn, lease, close, answered, tally).await
        }
        Err(failure @ Failure::ClientGone) => {
            tally.failure(failure);
            After::Close
        }
        Err(failure) => {
            let (status, cause) = failure.answer(exchange);
            tally.failure(failure);
            tally.status(status.as_u16());
            // An unread rest of the request body would be taken for the next request.
            local(client, status, &cause, close || !body.is_done()).await
        }
    }
}

/// The request on its way as bytes: its head (and first body bytes) in `client.scratch.out`,
/// the rest read from the client as the upstream takes it.
struct ByteLeg<'c, I, T> {
    client: &'c mut ClientSide<I>,
    body: &'c mut BodyCursor,
    is_head: bool,
    /// Whole in `client.scratch.out` and idempotent: it may be written again to a fresh
    /// connection.
    resendable: bool,
    tally: &'c mut T,
}

impl<I, T> Transport for ByteLeg<'_, I, T>
where
    I: AsyncRead + AsyncWrite + Unpin + Send,
    T: Tally + Send,
{
    type Conn = (RawConn, RawLease);
    type Answer = (RawConn, RawLease);

    async fn connect(
        &mut self,
        endpoint: &Arc<Endpoint>,
        fresh: bool,
        now: Instant,
    ) -> Result<Self::Conn, UpstreamError> {
        endpoint.checkout_raw(fresh, self.resendable, now).await
    }

    async fn send(
        &mut self,
        (mut conn, lease): Self::Conn,
        // A route whose backends edit requests is never forwarded as bytes.
        _backend: &Backend,
        started: Instant,
    ) -> Result<Self::Answer, Undelivered> {
        // Enforced by the connection's IO: no timer of this request's own.
        conn.deadline
            .set(started, lease.endpoint().response_timeout());
        let delivered = deliver(self.client, &mut conn, self.body, self.is_head, self.tally).await;
        conn.deadline.clear();
        match delivered {
            Ok(()) => Ok((conn, lease)),
            Err(failed) => Err(failed.undelivered(conn.reused, self.resendable)),
        }
    }
}

/// Writes the request (head, then the rest of the body as the client sends it) and reads up
/// to the final response head; interim (1xx) heads go straight to the client.
async fn deliver<I, T: Tally>(
    client: &mut ClientSide<I>,
    conn: &mut RawConn,
    body: &mut BodyCursor,
    is_head: bool,
    tally: &mut T,
) -> Result<(), Delivery>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    if let Err(err) = conn.io.write_all(&client.scratch.out).await {
        return Err(Delivery::upstream_io(&err, true));
    }
    let mut reads = BodyReads::new();
    while !body.is_done() {
        match reads.read(&mut client.io, &mut client.scratch.buf).await {
            Ok(0) | Err(_) => return Err(Delivery::ClientGone),
            Ok(_) => {}
        }
        let n = body
            .take(&client.scratch.buf)
            .map_err(|_| Delivery::ClientGone)?;
        if let Err(err) = conn.io.write_all(&client.scratch.buf[..n]).await {
            return Err(Delivery::upstream_io(&err, false));
        }
        tally.request_bytes(n as u64);
        client.scratch.buf.advance(n);
    }
    // Interim (1xx) heads go to the client as they come.
    while !next_head(conn, &mut client.scratch.resp, is_head).await? {
        let mut interim = Vec::new();
        encode::response_head(&mut interim, &conn.buf, &client.scratch.resp, false);
        conn.buf.advance(client.scratch.resp.len);
        if client.io.write_all(&interim).await.is_err() {
            return Err(Delivery::ClientGone);
        }
    }
    Ok(())
}

/// Writes the response head (that came at `answered`) and relays its body; pools the upstream
/// connection if the exchange ended cleanly. Body bytes and a relay's failure go in `tally`;
/// a copied request's body, in `client.scratch.pair` too, to be compared with its copy's.
async fn respond<I, T: Tally>(
    client: &mut ClientSide<I>,
    mut conn: RawConn,
    lease: RawLease,
    close: bool,
    answered: Instant,
    tally: &mut T,
) -> After
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let resp = &client.scratch.resp;
    // A body that ends when the upstream closes ends the client's connection too.
    let close = close || resp.framing == Framing::Close;
    let mut body = BodyCursor::new(resp.framing);
    client.scratch.out.clear();
    encode::response_head(&mut client.scratch.out, &conn.buf, resp, close);
    let Ok(first) = body.take(&conn.buf[resp.len..]) else {
        tally.body_failure(UpstreamError::Protocol.as_str());
        return After::Close;
    };
    tally.response_bytes(first as u64);
    // A copied request's body is hashed for its pair: here whole, if it came with its head.
    if client.scratch.pair.is_some() {
        let whole = body.is_done();
        PrimaryBody::first(
            &mut client.scratch.pair,
            &conn.buf[resp.len..resp.len + first],
            whole,
        );
    }
    client
        .scratch
        .out
        .extend_from_slice(&conn.buf[resp.len..resp.len + first]);
    conn.buf.advance(resp.len + first);
    let upstream_keeps = !resp.close;
    let since = if body.is_done() {
        // The whole response came with its head: the upstream connection has been idle since
        // then, and goes back before the client is written to (a slow reader does not hold
        // it, nor does a client that went away close it), stamped without a clock read.
        pool(conn, lease, upstream_keeps, answered);
        let Ok(waited) = write_noting_wait(&mut client.io, &client.scratch.out).await else {
            tally.body_failure(Failure::ClientGone.as_str());
            return After::Close;
        };
        // The client's idle time starts once it has the response: when it came, unless the
        // write had to wait for the client to read.
        if waited {
            Instant::now()
        } else {
            answered
        }
    } else {
        if client.io.write_all(&client.scratch.out).await.is_err() {
            tally.body_failure(Failure::ClientGone.as_str());
            return After::Close;
        }
        let mut reads = BodyReads::new();
        while !body.is_done() {
            match reads.read(&mut conn.io, &mut conn.buf).await {
                Ok(0) => {
                    if body.end_of_stream().is_err() {
                        // Truncated: the client must see the connection end, not a short body.
                        tally.body_failure(UpstreamError::Reset.as_str());
                        return After::Close;
                    }
                    break;
                }
                Ok(_) => {}
                Err(_) => {
                    tally.body_failure(UpstreamError::Reset.as_str());
                    return After::Close;
                }
            }
            let Ok(n) = body.take(&conn.buf) else {
                tally.body_failure(UpstreamError::Protocol.as_str());
                return After::Close;
            };
            if client.io.write_all(&conn.buf[..n]).await.is_err() {
                tally.body_failure(Failure::ClientGone.as_str());
                return After::Close;
            }
            tally.response_bytes(n as u64);
            if let Some(pair) = &mut client.scratch.pair {
                pair.add(&conn.buf[..n]);
            }
            conn.buf.advance(n);
        }
        // Read whole (a body cut short returned above, its pair's body not compared).
        if let Some(pair) = client.scratch.pair.take() {
            pair.finish(None, false, false);
        }
        // A body relayed in reads of its own may have taken long: its end is read off the
        // clock.
        let ended = Instant::now();
        pool(conn, lease, upstream_keeps, ended);
        ended
    };
    buffer::settle_vec(&mut client.scratch.out);
    if close {
        After::Close
    } else {
        After::KeepAlive { since }
    }
}

/// Writes `bytes` whole; `Ok(true)` if it had to wait for the peer to read (nearly always it
/// does not: the socket's buffer takes a response at once).
async fn write_noting_wait<W: AsyncWrite + Unpin>(io: &mut W, bytes: &[u8]) -> io::Result<bool> {
    let mut waited = false;
    let mut write = std::pin::pin!(io.write_all(bytes));
    std::future::poll_fn(|cx| {
        let polled = write.as_mut().poll(cx);
        waited |= polled.is_pending();
        polled
    })
    .await?;
    Ok(waited)
}

/// Back to the pool, idle since `since`, if the upstream keeps the connection open and sent
/// nothing past the response; otherwise closed. Either way the request is no longer
/// outstanding there (`lease`).
fn pool(mut conn: RawConn, lease: RawLease, upstream_keeps: bool, since: Instant) {
    if upstream_keeps && conn.buf.is_empty() {
        buffer::settle(&mut conn.buf);
        lease.endpoint().give_back_raw(conn, since);
    }
}

/// Answers a head the strict rules refuse; the connection closes after it.
pub async fn refuse<I>(client: &mut ClientSide<I>, info: &ClientInfo, refusal: Refusal)
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    tracing::debug!(client = %info.ip, cause = refusal.cause(), "request refused");
    local(client, refusal.status(), refusal.cause(), true).await;
}

/// Answers the client with a response of weir's own.
async fn local<I>(client: &mut ClientSide<I>, status: StatusCode, cause: &str, close: bool) -> After
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    client.scratch.out.clear();
    encode::local_response(&mut client.scratch.out, status, cause, close);
    if client.io.write_all(&client.scratch.out).await.is_err() || close {
        After::Close
    } else {
        After::KeepAlive {
            since: Instant::now(),
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn a_write_says_whether_it_waited_for_the_reader() {
        let (mut near, mut far) = tokio::io::duplex(16);
        assert!(!write_noting_wait(&mut near, b"fits").await.unwrap());
        let mut four = [0u8; 4];
        far.read_exact(&mut four).await.unwrap();

        // Twice the pipe's buffer: done only once the far end has read.
        let reader = tokio::spawn(async move {
            let mut all = [0u8; 32];
            far.read_exact(&mut all).await.map(|_| all)
        });
        assert!(write_noting_wait(&mut near, &[7u8; 32]).await.unwrap());
        assert_eq!(reader.await.unwrap().unwrap(), [7u8; 32]);
    }
}
