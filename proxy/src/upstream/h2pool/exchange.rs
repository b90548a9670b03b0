//! One request on a pool connection: its head opens a stream, its body is sent while the
//! response head is awaited, and the response comes back as a `ResponseStream`.
//!
//! The request's own future does all of it, with no task and no channel per request: a task
//! is spawned only for a request body that outlives the response head (a client stream, or an
//! early answer).

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;

use http::request::Parts;
use http::{HeaderMap, Method, Request, Response, StatusCode, Version};
use http_body::Body;

use super::error::StreamError;
use super::fields::request_fields;
use super::link::Link;
use super::response::ResponseStream;
use super::send_body::SendBody;
use crate::h2link::{header_map, maps};
use crate::h2wire::client::OpenError;
use crate::upstream::body::RequestBody;

/// Why an exchange gave no response.
pub enum Failed {
    /// The request never went on the wire (the connection closed, went away or is at the
    /// server's stream limit): it may go again as it is, whatever its method.
    NotSent(Box<Request<RequestBody>>),
    /// The server refused the stream (`StreamError::Refused`): the request's head, handed
    /// back so that it may go again (`Resend`) without a copy made of every request's.
    Refused(Box<Parts>),
    Error(StreamError),
}

/// Sends `req` on `link`'s connection and waits for the response head.
pub async fn exchange(
    link: &Arc<Link>,
    req: Request<RequestBody>,
) -> Result<Response<ResponseStream>, Failed> {
    let (head, body) = req.into_parts();
    let end = body.is_end_stream();
    // A body of known length states it, as an HTTP/1 upstream would have been told (and a
    // server may reject a POST without it); an empty GET says nothing.
    let length = body
        .size_hint()
        .exact()
        .filter(|&len| {
            (len != 0 || states_length(&head.method)) && !states_its_length(&head.headers)
        })
        .map(|len| len.to_string());
    let opened = link.with(|inner| inner.open(request_fields(&head, length.as_deref()), end));
    let id = match opened {
        Ok(id) => id,
        Err(OpenError::HeaderListTooLarge { size, limit }) => {
            tracing::debug!(size, limit, "request head above the h2 upstream's limit");
            return Err(Failed::Error(StreamError::Malformed(
                "the request's header list is above the upstream's SETTINGS_MAX_HEADER_LIST_SIZE",
            )));
        }
        Err(_) => return Err(Failed::NotSent(Box::new(Request::from_parts(head, body)))),
    };
    let mut response = ResponseStream::new(link.clone(), id);
    let mut sending = (!end).then(|| SendBody::new(link.clone(), id, body));
    let answer = poll_fn(|cx| {
        if let Some(send) = sending.as_mut() {
            if Pin::new(send).poll(cx).is_ready() {
                sending = None;
            }
        }
        response.poll_head(cx)
    })
    .await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(StreamError::Refused) => return Err(Failed::Refused(Box::new(head))),
        Err(error) => return Err(Failed::Error(error)),
    };
    // Answered: the request's head will not go again, and its map goes back to the stock.
    maps::give_back(head.headers);
    if let Some(send) = sending {
        // The answer came before the body ended: the body goes on in a task of its own while
        // the response streams back. (Not after a failure: the body may be a copy the request
        // is sent again with, and a sender left running would take the client's next chunk.)
        tokio::spawn(send);
    }
    let status = StatusCode::from_u16(answer.status)
        .map_err(|_| Failed::Error(StreamError::Malformed("a status http refuses")))?;
    let headers =
        header_map(answer.fields, 0).map_err(|why| Failed::Error(StreamError::Malformed(why)))?;
    let length = content_length(&headers);
    let mut resp = Response::new(response.into_body(answer.end_stream, length));
    *resp.status_mut() = status;
    *resp.version_mut() = Version::HTTP_2;
    *resp.headers_mut() = headers;
    Ok(resp)
}

/// Whether the request states its length already.
fn states_its_length(headers: &HeaderMap) -> bool {
    headers.contains_key(http::header::CONTENT_LENGTH)
}

/// Methods whose request states its length even when it is zero (RFC 9110 §8.6).
fn states_length(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

/// A head's content-length, when it states one number.
fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok())
}
