//! A request in `http`'s types (from an HTTP/2 client, or one hyper's HTTP/1 server took) sent
//! to an HTTP/1 upstream on a connection of the byte engine's pool, its response head read by
//! this engine's parser and its body handed on as frames (`upstream::PooledBody`). hyper's
//! client — a connection task per upstream connection, a header map encoded and another
//! decoded, a channel between them — was 28 % of an HTTP/2 → HTTP/1 request's instructions.
//!
//! The write is the request's head, then its body as the client sends it, several frames to a
//! write when they are there; then the response head. (Upgrades still take hyper's client:
//! after a 101 the connection is a tunnel, which hyper's upgrade machinery carries.)

use std::future::poll_fn;
use std::io::Write as _;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use bytes::{Buf, Bytes};
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::request::Parts;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body::Body;
use tokio::io::AsyncWriteExt;

use super::delivery::{final_head, next_head, Delivery};
use super::encode::{self, field};
use super::head::ResponseHead;
use crate::field::Kind;
use crate::framing::Framing;
use crate::interim::Interims;
use crate::pipeline::Undelivered;
use crate::stats::UpstreamError;
use crate::upstream::{PooledBody, RawConn, RawLease, Received, RequestBody};

/// Body bytes gathered into one write at most; a larger frame is written as it is.
const GATHER: usize = 16 * 1024;

/// Why no response head came, and the request when it can go again as it is (bodiless and
/// idempotent: RFC 9110 §9.2.2).
pub(crate) type NotAnswered = (Undelivered, Option<Request<RequestBody>>);

/// Sends `req` (shaped for an HTTP/1 upstream already: origin-form, a Host) on `conn` and reads
/// the final response head, within the endpoint's response timeout counted from `started`.
/// Interim (1xx) heads go to `interims`, the client's connection, when it takes them.
pub(crate) async fn send(
    mut conn: RawConn,
    lease: RawLease,
    req: Request<RequestBody>,
    started: Instant,
    interims: Option<&Interims>,
) -> Result<Response<Received>, NotAnswered> {
    let (parts, mut body) = req.into_parts();
    let bodiless = body.is_end_stream();
    let mut out = Vec::with_capacity(512);
    let framing = encode_head(&mut out, &parts, &body);
    let mut head = ResponseHead::default();

    // Enforced by the connection's IO: no timer of this request's own. (Written out here
    // rather than by a call to `send_encoded`: its future inside this one cost every request
    // through hyper's engine about a hundred instructions.)
    conn.deadline
        .set(started, lease.endpoint().response_timeout());
    let is_head = parts.method == Method::HEAD;
    let delivered = deliver(
        &mut conn, out, &mut body, framing, is_head, &mut head, interims,
    )
    .await;
    conn.deadline.clear();

    let failed = match delivered {
        Ok(()) => {
            return answer(conn, lease, &head).map_err(|err| (Undelivered::Failed(err), None))
        }
        Err(failed) => failed,
    };
    let resendable = bodiless && parts.method.is_idempotent();
    match failed.undelivered(conn.reused, resendable) {
        // Bodiless: it can be written again as it is.
        again @ (Undelivered::Stale | Undelivered::Unanswered(_)) => {
            Err((again, Some(Request::from_parts(parts, RequestBody::Empty))))
        }
        other => Err((other, None)),
    }
}

/// A request head encoded for an HTTP/1 upstream, and what sending it needs to know.
pub(crate) struct Encoded {
    pub out: Vec<u8>,
    /// The body's, as the head says.
    pub framing: Framing,
    /// A HEAD's answer has no body, whatever its head says.
    pub is_head: bool,
    /// The request may be written again as it is (`resendable`).
    pub resendable: bool,
}

/// `send` for a head encoded already: writes it and `body`, then reads the final response
/// head.
pub(crate) async fn send_encoded(
    mut conn: RawConn,
    lease: RawLease,
    encoded: Encoded,
    body: &mut RequestBody,
    started: Instant,
    interims: Option<&Interims>,
) -> Result<Response<Received>, Undelivered> {
    let mut head = ResponseHead::default();
    // Enforced by the connection's IO: no timer of this request's own.
    conn.deadline
        .set(started, lease.endpoint().response_timeout());
    let Encoded {
        out,
        framing,
        is_head,
        resendable,
    } = encoded;
    let delivered = deliver(&mut conn, out, body, framing, is_head, &mut head, interims).await;
    conn.deadline.clear();
    match delivered {
        Ok(()) => answer(conn, lease, &head).map_err(Undelivered::Failed),
        Err(failed) => Err(failed.undelivered(conn.reused, resendable)),
    }
}

/// Whether `req` can be written again as it is after a connection failed under it: bodiless
/// and idempotent (RFC 9110 §9.2.2).
pub(crate) fn resendable<B: Body>(req: &Request<B>) -> bool {
    req.body().is_end_stream() && req.method().is_idempotent()
}

/// The request line and fields for an HTTP/1.1 upstream, with the body's framing decided
/// here: the length when it is known, chunked when it is not (hop-by-hop fields are gone
/// already, `forward::headers`).
fn encode_head(out: &mut Vec<u8>, parts: &Parts, body: &RequestBody) -> Framing {
    out.extend_from_slice(parts.method.as_str().as_bytes());
    out.push(b' ');
    let target = match (parts.uri.path_and_query(), parts.uri.authority()) {
        (Some(path), _) => path.as_str(),
        // CONNECT's authority-form.
        (None, Some(authority)) if parts.method == Method::CONNECT => authority.as_str(),
        (None, _) => "/",
    };
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut had_length = false;
    for (name, value) in &parts.headers {
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
            had_length |= name == CONTENT_LENGTH;
            continue;
        }
        field(out, name.as_str().as_bytes(), value.as_bytes());
    }
    let framing = if body.is_end_stream() {
        // RFC 9110 §8.6: a method that defines content says when it has none.
        let has_content = matches!(parts.method, Method::POST | Method::PUT | Method::PATCH);
        if had_length || has_content {
            out.extend_from_slice(b"content-length: 0\r\n");
        }
        Framing::Empty
    } else if let Some(length) = body.size_hint().exact() {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(length.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        Framing::Length(length)
    } else {
        out.extend_from_slice(b"transfer-encoding: chunked\r\n");
        Framing::Chunked
    };
    out.extend_from_slice(b"\r\n");
    framing
}

/// Writes the head and the body, then reads up to the final response head. Interim heads go
/// on to `interims` but for `100 Continue`: hyper's server sent the client its own when weir
/// began to read the body (and a client that did not ask has no use for one); a `101` is an
/// error here (`next_head`).
async fn deliver(
    conn: &mut RawConn,
    mut out: Vec<u8>,
    body: &mut RequestBody,
    framing: Framing,
    is_head: bool,
    head: &mut ResponseHead,
    interims: Option<&Interims>,
) -> Result<(), Delivery> {
    write_body(conn, &mut out, body, framing).await?;
    let Some(interims) = interims else {
        return final_head(conn, head, is_head).await;
    };
    while !next_head(conn, head, is_head).await? {
        if head.status != 100 {
            let mut interim = Vec::with_capacity(head.len);
            encode::response_head(&mut interim, &conn.buf, head, false);
            interims.queue(&interim);
        }
        conn.buf.advance(head.len);
    }
    Ok(())
}

/// The head (in `out`) and the body, framed as `framing` says. Frames that are ready together
/// go in one write; the write waits only when the client's body does.
async fn write_body(
    conn: &mut RawConn,
    out: &mut Vec<u8>,
    body: &mut RequestBody,
    framing: Framing,
) -> Result<(), Delivery> {
    let mut left = match framing {
        Framing::Length(n) => Some(n),
        _ => None,
    };
    let chunked = framing == Framing::Chunked;
    let mut trailers: Option<HeaderMap> = None;
    while framing != Framing::Empty && !body.is_end_stream() {
        // With bytes to write, a frame not here yet sends them first.
        let polled = poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await;
        let frame = match polled {
            Poll::Ready(frame) => frame,
            Poll::Pending if out.is_empty() => {
                poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
            }
            Poll::Pending => {
                flush(conn, out).await?;
                continue;
            }
        };
        let frame = match frame {
            None => break,
            Some(Ok(frame)) => frame,
            Some(Err(err)) => {
                tracing::debug!(error = %err, "client's request body failed");
                return Err(Delivery::ClientGone);
            }
        };
        let data = match frame.into_data() {
            Ok(data) => data,
            Err(frame) => {
                // Only the chunked coding carries trailers; a sized body drops them.
                trailers = frame.into_trailers().ok();
                continue;
            }
        };
        if data.is_empty() {
            continue;
        }
        if let Some(left) = left.as_mut() {
            // More than the length said: the client's message is broken.
            *left = left
                .checked_sub(data.len() as u64)
                .ok_or(Delivery::ClientGone)?;
        }
        if chunked {
            // (Writing to a Vec cannot fail.)
            let _ = write!(out, "{:x}\r\n", data.len());
        }
        gather(conn, out, data).await?;
        if chunked {
            out.extend_from_slice(b"\r\n");
        }
    }
    if left.is_some_and(|l| l > 0) {
        // The client's body ended short of its length.
        return Err(Delivery::ClientGone);
    }
    if chunked {
        out.extend_from_slice(b"0\r\n");
        for (name, value) in trailers.iter().flatten() {
            field(out, name.as_str().as_bytes(), value.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }
    flush(conn, out).await
}

/// Adds `data` to what is to be written, or writes both now when `data` is large.
async fn gather(conn: &mut RawConn, out: &mut Vec<u8>, data: Bytes) -> Result<(), Delivery> {
    if out.len() + data.len() <= GATHER {
        out.extend_from_slice(&data);
        return Ok(());
    }
    flush(conn, out).await?;
    conn.io
        .write_all(&data)
        .await
        .map_err(|e| Delivery::upstream_io(&e, true))
}

async fn flush(conn: &mut RawConn, out: &mut Vec<u8>) -> Result<(), Delivery> {
    if out.is_empty() {
        return Ok(());
    }
    let written = conn.io.write_all(out).await;
    out.clear();
    written.map_err(|e| Delivery::upstream_io(&e, true))
}

/// The response for the client's side: the head's fields in a map (values share the bytes
/// they came in), the body read on from the connection.
fn answer(
    mut conn: RawConn,
    lease: RawLease,
    head: &ResponseHead,
) -> Result<Response<Received>, UpstreamError> {
    let status = StatusCode::from_u16(head.status).map_err(|_| UpstreamError::Protocol)?;
    let bytes = conn.buf.split_to(head.len).freeze();
    let mut headers = HeaderMap::with_capacity(head.list.fields.len());
    // Hop-by-hop fields end here (the rule `forward::headers` applies to hyper's messages),
    // framing ones too: the client's side frames the body its own way.
    let fields = head
        .list
        .fields
        .iter()
        .filter(|f| f.kind != Kind::TransferEncoding && !head.list.is_hop_by_hop(&bytes, f));
    for f in fields {
        let name =
            HeaderName::from_bytes(&bytes[f.name.clone()]).map_err(|_| UpstreamError::Protocol)?;
        let value = HeaderValue::from_maybe_shared(bytes.slice(f.value.clone()))
            .map_err(|_| UpstreamError::Protocol)?;
        headers.append(name, value);
    }
    let body = PooledBody::new(conn, lease, head.framing, !head.close);
    let mut resp = Response::new(Received::Pooled(Box::pin(body)));
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    Ok(resp)
}
