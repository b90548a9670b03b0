//! A response's head made ready for HTTP/2: its length stated when its body's is exact. (Its
//! fields go out through `h2link::wire_fields`, the rule both legs send by.)

use http::header::CONTENT_LENGTH;
use http::response::Parts;
use http::HeaderValue;
use http_body::Body;

use crate::forward::body::ResponseBody;

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
