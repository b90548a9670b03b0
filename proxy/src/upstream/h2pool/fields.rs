//! A request's head as HTTP/2 fields.

use http::header::CONTENT_LENGTH;
use http::request::Parts;
use http::Method;

use crate::h2link::wire_fields;

/// The request's fields: pseudo-headers first (§8.3.1), then its header fields (http keeps
/// names in lower case, as HTTP/2 requires), then `content_length` if the caller states one.
/// A URI without a scheme is sent as `http`, without a path as `/`.
pub(super) fn request_fields<'a>(
    head: &'a Parts,
    content_length: Option<&'a str>,
) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
    let uri = &head.uri;
    let scheme = uri.scheme_str().unwrap_or("http");
    let path = match uri.path_and_query().map(|p| p.as_str()) {
        Some(p) if !p.is_empty() => p,
        _ if head.method == Method::OPTIONS => "*",
        _ => "/",
    };
    let pseudo = [
        Some((&b":method"[..], head.method.as_str().as_bytes())),
        Some((&b":scheme"[..], scheme.as_bytes())),
        uri.authority()
            .map(|a| (&b":authority"[..], a.as_str().as_bytes())),
        Some((&b":path"[..], path.as_bytes())),
    ];
    // The pipeline strips hop-by-hop fields already; this keeps a stray one from costing the
    // request (a server treats a request carrying one as malformed).
    let regular = wire_fields(&head.headers);
    let length = content_length.map(|len| (CONTENT_LENGTH.as_str().as_bytes(), len.as_bytes()));
    pseudo.into_iter().flatten().chain(regular).chain(length)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;

    fn fields_of(req: &Request<()>, length: Option<&str>) -> Vec<(String, String)> {
        let (parts, ()) = req.clone().into_parts();
        request_fields(&parts, length)
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn pseudo_headers_come_first_and_connection_fields_stay_behind() {
        let req = Request::post("http://up:8080/pkg.Svc/Call?x=1")
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("connection", "close")
            .header("x-Mixed", "v")
            .body(())
            .unwrap();
        let got = fields_of(&req, Some("5"));
        let want = [
            (":method", "POST"),
            (":scheme", "http"),
            (":authority", "up:8080"),
            (":path", "/pkg.Svc/Call?x=1"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("x-mixed", "v"),
            ("content-length", "5"),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn te_other_than_trailers_is_dropped_and_an_origin_form_uri_gets_defaults() {
        let req = Request::get("/").header("te", "gzip").body(()).unwrap();
        let got = fields_of(&req, None);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[1], (":scheme".into(), "http".into()));
        assert_eq!(got[2], (":path".into(), "/".into()));
    }
}
