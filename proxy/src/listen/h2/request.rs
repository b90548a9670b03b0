//! A request head the engine checked (RFC 9113 §8.3.1) made into the `http::Request` the
//! pipeline takes: method, a URI of scheme, authority and path, HTTP/2, and the regular fields
//! in order.

use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Method, Request, Uri, Version};

use crate::forward::ADDED_FIELDS;
use crate::h2link::header_map;
use crate::h2wire::message::RequestHead;
use crate::h2wire::server::Fields;

/// The request without its body, or why its head cannot be one (a stream error:
/// PROTOCOL_ERROR).
pub fn build(head: &RequestHead, fields: Fields) -> Result<Request<()>, &'static str> {
    let method = Method::from_bytes(head.method()).map_err(|_| "an unusable :method")?;
    let uri = uri_of(head)?;
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = Version::HTTP_2;
    *request.headers_mut() = header_map(fields, ADDED_FIELDS)?;
    Ok(request)
}

/// Absolute form where the head has scheme and authority (`:authority`, or Host for want of
/// it); authority form for CONNECT; origin form when no authority came at all.
fn uri_of(head: &RequestHead) -> Result<Uri, &'static str> {
    let mut parts = http::uri::Parts::default();
    // The authority and path share the head's buffer (`authority_shared`): no copy each.
    if let Some(authority) = head.authority_shared() {
        let authority =
            Authority::from_maybe_shared(authority).map_err(|_| "an unusable :authority")?;
        parts.authority = Some(authority);
        if let Some(scheme) = head.scheme() {
            parts.scheme = Some(Scheme::try_from(scheme).map_err(|_| "an unusable :scheme")?);
        }
    }
    if let Some(path) = head.path_shared() {
        let path = PathAndQuery::from_maybe_shared(path).map_err(|_| "an unusable :path")?;
        parts.path_and_query = Some(path);
    }
    if parts.scheme.is_some() && parts.path_and_query.is_none() {
        parts.path_and_query = Some(PathAndQuery::from_static("/"));
    }
    Uri::from_parts(parts).map_err(|_| "an unusable request target")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2wire::message::RequestCheck;

    fn head(fields: &[(&str, &str)]) -> RequestHead {
        let mut check = RequestCheck::new(false);
        for (name, value) in fields {
            check
                .field(name.as_bytes(), value.as_bytes())
                .expect("field");
        }
        check.finish().expect("a request head")
    }

    #[test]
    fn a_request_gets_an_absolute_uri_and_http2() {
        let head = head(&[
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", "example.com:8443"),
            (":path", "/a/b?c=d"),
        ]);
        let req = build(&head, Fields::default()).expect("request");
        assert_eq!(req.method(), Method::POST);
        assert_eq!(req.uri(), "https://example.com:8443/a/b?c=d");
        assert_eq!(req.version(), Version::HTTP_2);
    }

    #[test]
    fn authority_and_path_share_the_head_s_buffer() {
        let head = head(&[
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "example.com"),
            (":path", "/a?b"),
        ]);
        let req = build(&head, Fields::default()).expect("request");
        let uri = req.uri();
        let authority = uri.authority().expect("authority").as_str();
        let path = uri.path_and_query().expect("path").as_str();
        assert_eq!((authority, path), ("example.com", "/a?b"));
        assert_eq!(
            authority.as_ptr(),
            head.authority().unwrap().as_ptr(),
            "no copy"
        );
        assert_eq!(path.as_ptr(), head.path().unwrap().as_ptr(), "no copy");
    }

    #[test]
    fn connect_takes_the_authority_form() {
        let head = head(&[(":method", "CONNECT"), (":authority", "example.com:443")]);
        let req = build(&head, Fields::default()).expect("request");
        assert_eq!(
            req.uri().authority().map(|a| a.as_str()),
            Some("example.com:443")
        );
        assert_eq!(req.uri().scheme(), None);
    }
}
