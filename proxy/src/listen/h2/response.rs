//! A response's head and trailers as HTTP/2 fields: names lower case (`http`'s are), and the
//! connection-specific fields HTTP/2 forbids left out (RFC 9113 §8.2.2) rather than refused:
//! an HTTP/1 upstream's `connection` or `transfer-encoding` says nothing about this hop.

use http::header::{HeaderMap, CONTENT_LENGTH};
use http::response::Parts;
use http::HeaderValue;
use http_body::Body;

use crate::forward::body::ResponseBody;

/// Whether a field may go in an HTTP/2 message: not a connection-specific one, and `te` only
/// as `trailers`.
fn allowed(name: &http::HeaderName, value: &HeaderValue) -> bool {
    match name.as_str() {
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade" => false,
        "te" => value.as_bytes().eq_ignore_ascii_case(b"trailers"),
        _ => true,
    }
}

/// The fields of `map` HTTP/2 may carry, in order, as (name, value) octets.
pub fn fields(map: &HeaderMap) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
    map.iter()
        .filter(|(name, value)| allowed(name, value))
        .map(|(name, value)| (name.as_str().as_bytes(), value.as_bytes()))
}

/// A body of known length says so, as hyper's server did: content-length added to a head
/// without one when the body's size is exact and not nothing at its end.
pub fn add_length(parts: &mut Parts, body: &ResponseBody) {
    if body.is_end_stream() || parts.headers.contains_key(CONTENT_LENGTH) {
        return;
    }
    if let Some(len) = body.size_hint().exact() {
        parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Response;

    #[test]
    fn connection_specific_fields_are_left_out() {
        let resp = Response::builder()
            .header("content-type", "text/plain")
            .header("connection", "keep-alive")
            .header("keep-alive", "timeout=5")
            .header("proxy-connection", "close")
            .header("transfer-encoding", "chunked")
            .header("upgrade", "h2c")
            .header("te", "gzip")
            .header("X-Mixed", "Case")
            .body(())
            .expect("response");
        let names: Vec<_> = fields(resp.headers()).collect();
        assert_eq!(
            names,
            [
                (&b"content-type"[..], &b"text/plain"[..]),
                (b"x-mixed", b"Case")
            ]
        );
        let te = Response::builder()
            .header("te", "trailers")
            .body(())
            .expect("response");
        assert_eq!(fields(te.headers()).count(), 1);
    }

    #[test]
    fn an_exact_body_gets_its_length() {
        let (mut parts, ()) = Response::new(()).into_parts();
        let body = ResponseBody::text("hello");
        add_length(&mut parts, &body);
        assert_eq!(parts.headers[CONTENT_LENGTH], "5");
        let (mut parts, ()) = Response::new(()).into_parts();
        add_length(&mut parts, &ResponseBody::Empty);
        assert!(!parts.headers.contains_key(CONTENT_LENGTH));
    }
}
