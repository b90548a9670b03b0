//! The pure part of redirects and rewrites: a redirect's `Location` and a modified path, from
//! the request's scheme, host and target, by the Gateway API's rules (HTTPRequestRedirectFilter,
//! HTTPURLRewriteFilter, HTTPPathModifier). No I/O, no clock: the tests below are the
//! conformance suite's cases.

use crate::table::{prefix_matches, PathEdit, Redirect};

/// What a redirect or rewrite reads of a request.
#[derive(Clone, Copy, Debug)]
pub struct RequestUrl<'a> {
    /// Whether the client came over TLS: the request's scheme.
    pub tls: bool,
    /// The authority or Host as sent, its port included.
    pub host: Option<&'a str>,
    /// The path and query as sent (origin form).
    pub target: &'a str,
}

/// The `Location` of a redirect.
pub fn location(redirect: &Redirect, request: RequestUrl<'_>) -> String {
    let scheme = redirect
        .scheme
        .unwrap_or(if request.tls { "https" } else { "http" });
    let (request_host, request_port) = request.host.map_or(("", None), split_host_port);
    let host = redirect.hostname.as_deref().unwrap_or(request_host);
    // The spec's order: the port given; else, with a scheme given, that scheme's well-known
    // port; else the listener's (for a config-file route, the port the client named).
    let port = redirect
        .port
        .or_else(|| redirect.scheme.map(well_known_port))
        .or(redirect.listener_port)
        .or(request_port);
    let target = match &redirect.path {
        Some(edit) => edited(edit, request.target),
        None => request.target.to_string(),
    };
    if host.is_empty() {
        // An HTTP/1.0 request without a Host and a redirect that names none: a reference
        // relative to the request's own authority (RFC 9110 §10.2.2 allows it).
        return target;
    }
    let mut out = String::with_capacity(scheme.len() + 3 + host.len() + 6 + target.len());
    out.push_str(scheme);
    out.push_str("://");
    out.push_str(host);
    // Left out when it is the scheme's own: `https://example.org/`, not `...:443/`.
    if let Some(port) = port.filter(|&p| p != well_known_port(scheme)) {
        out.push(':');
        out.push_str(&port.to_string());
    }
    out.push_str(&target);
    out
}

/// `target` (path and query) with its path modified; the query is kept.
pub fn edited(edit: &PathEdit, target: &str) -> String {
    let (path, query) = match target.find('?') {
        Some(i) => target.split_at(i),
        None => (target, ""),
    };
    let mut out = match edit {
        PathEdit::Full(full) => full.clone(),
        PathEdit::Prefix { prefixes, with } => {
            let Some(prefix) = prefixes
                .iter()
                .find(|p| prefix_matches(p.as_bytes(), path.as_bytes()))
            else {
                // Not reached for a request the route matched (its prefixes are all there is);
                // kept as it came rather than guessed at.
                return target.to_string();
            };
            // What follows the prefix's whole segments: `/bar` of `/foo/bar` for `/foo` and
            // for `/foo/` alike, empty for `/foo` itself.
            let rest = &path[prefix.trim_end_matches('/').len()..];
            let mut out = String::with_capacity(with.len() + rest.len() + query.len());
            out.push_str(with);
            out.push_str(rest);
            if out.is_empty() {
                out.push('/');
            }
            out
        }
    };
    out.push_str(query);
    out
}

fn well_known_port(scheme: &str) -> u16 {
    if scheme == "https" {
        443
    } else {
        80
    }
}

/// `example.org:8080` → (`example.org`, 8080); `[::1]:80` → (`[::1]`, 80); a port that is
/// not a number is no port.
fn split_host_port(authority: &str) -> (&str, Option<u16>) {
    let colon = match authority.rfind(':') {
        // An IPv6 literal's own colons are inside its brackets.
        Some(i) if !authority[i..].contains(']') => i,
        _ => return (authority, None),
    };
    let (host, port) = (&authority[..colon], &authority[colon + 1..]);
    (host, port.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    fn redirect() -> Redirect {
        Redirect {
            scheme: None,
            hostname: None,
            port: None,
            path: None,
            status: StatusCode::FOUND,
            listener_port: None,
        }
    }

    fn prefix(prefix: &str, with: &str) -> PathEdit {
        PathEdit::Prefix {
            prefixes: vec![prefix.to_string()].into(),
            with: with.trim_end_matches('/').to_string(),
        }
    }

    fn at(host: &str, target: &'static str) -> RequestUrl<'static> {
        RequestUrl {
            tls: false,
            host: Some(Box::leak(host.to_string().into_boxed_str())),
            target,
        }
    }

    /// The spec's own table (HTTPPathModifier.ReplacePrefixMatch) and the conformance suite's
    /// rewrite-path cases.
    #[test]
    fn prefix_replacement_table() {
        for (request, matched, replacement, expected) in [
            ("/foo/bar", "/foo", "/xyz", "/xyz/bar"),
            ("/foo/bar", "/foo", "/xyz/", "/xyz/bar"),
            ("/foo/bar", "/foo/", "/xyz", "/xyz/bar"),
            ("/foo/bar", "/foo/", "/xyz/", "/xyz/bar"),
            ("/foo", "/foo", "/xyz", "/xyz"),
            ("/foo/", "/foo", "/xyz", "/xyz/"),
            ("/foo/bar", "/foo", "", "/bar"),
            ("/foo/", "/foo", "", "/"),
            ("/foo", "/foo", "", "/"),
            ("/foo/", "/foo", "/", "/"),
            ("/foo", "/foo", "/", "/"),
            // httproute-rewrite-path.go
            ("/prefix/one/two", "/prefix/one", "/one", "/one/two"),
            ("/strip-prefix/three", "/strip-prefix", "/", "/three"),
            ("/strip-prefix", "/strip-prefix", "/", "/"),
            (
                "/prefix/rewrite-path-and-modify-headers/one",
                "/prefix/rewrite-path-and-modify-headers",
                "/prefix",
                "/prefix/one",
            ),
            // The root prefix: everything after it is kept.
            ("/a/b", "/", "/x", "/x/a/b"),
            ("/a/b", "/", "/", "/a/b"),
        ] {
            assert_eq!(
                edited(&prefix(matched, replacement), request),
                expected,
                "{request} with {matched} → {replacement}"
            );
        }
    }

    #[test]
    fn query_is_kept_and_longest_prefix_wins() {
        assert_eq!(edited(&prefix("/foo", "/x"), "/foo/b?q=1&r"), "/x/b?q=1&r");
        assert_eq!(edited(&prefix("/foo", "/x"), "/foo?q=1"), "/x?q=1");
        assert_eq!(edited(&prefix("/foo", ""), "/foo?q"), "/?q");
        assert_eq!(
            edited(&PathEdit::Full("/one".into()), "/full/one/two?a=b"),
            "/one?a=b"
        );
        let both = PathEdit::Prefix {
            prefixes: vec!["/a/b".to_string(), "/a".to_string()].into(),
            with: "/z".into(),
        };
        assert_eq!(edited(&both, "/a/b/c"), "/z/c");
        assert_eq!(edited(&both, "/a/bc"), "/z/bc");
    }

    #[test]
    fn conformance_redirect_path() {
        let with = |path: PathEdit| Redirect {
            path: Some(path),
            ..redirect()
        };
        let host = "gw.example";
        for (edit, request, expected) in [
            (
                prefix("/original-prefix", "/replacement-prefix"),
                "/original-prefix/lemon",
                "http://gw.example/replacement-prefix/lemon",
            ),
            (
                PathEdit::Full("/full-path-replacement".into()),
                "/full/path/original",
                "http://gw.example/full-path-replacement",
            ),
            (
                prefix("/path-and-status", "/replacement-prefix"),
                "/path-and-status",
                "http://gw.example/replacement-prefix",
            ),
        ] {
            assert_eq!(location(&with(edit), at(host, request)), expected);
        }
        let full_and_host = Redirect {
            hostname: Some("example.org".into()),
            path: Some(PathEdit::Full("/replacement-full".into())),
            ..redirect()
        };
        assert_eq!(
            location(&full_and_host, at(host, "/full-path-and-host")),
            "http://example.org/replacement-full"
        );
    }

    #[test]
    fn conformance_redirect_host_port_scheme() {
        let hostname = Redirect {
            hostname: Some("example.org".into()),
            ..redirect()
        };
        // The request's port is kept when neither scheme nor port is given (no listener
        // port known), and dropped from the host either way.
        assert_eq!(
            location(&hostname, at("gw.example", "/hostname-redirect")),
            "http://example.org/hostname-redirect"
        );
        assert_eq!(
            location(&hostname, at("gw.example:8080", "/x")),
            "http://example.org:8080/x"
        );
        let port = Redirect {
            port: Some(8083),
            ..redirect()
        };
        assert_eq!(
            location(&port, at("gw.example:8080", "/port")),
            "http://gw.example:8083/port"
        );
        let scheme = Redirect {
            scheme: Some("https"),
            ..redirect()
        };
        assert_eq!(
            location(&scheme, at("gw.example:8080", "/scheme")),
            "https://gw.example/scheme"
        );
        let scheme_host = Redirect {
            scheme: Some("https"),
            hostname: Some("example.org".into()),
            ..redirect()
        };
        assert_eq!(
            location(&scheme_host, at("gw.example", "/scheme-and-host")),
            "https://example.org/scheme-and-host"
        );
    }

    /// httproute-redirect-port-and-scheme.go: the three listeners (80 http, 8080 http,
    /// 443 https), each route's scheme and port, hostname example.org.
    #[test]
    fn conformance_port_and_scheme_by_listener() {
        let r = |scheme: Option<&'static str>, port: Option<u16>, listener: u16| Redirect {
            scheme,
            port,
            hostname: Some("example.org".into()),
            listener_port: Some(listener),
            ..redirect()
        };
        let http = |host: &str| at(host, "/p");
        let https = |host: &str| RequestUrl {
            tls: true,
            ..at(host, "/p")
        };
        let https = https("example.org");
        for (redirect, request, expected) in [
            // Listener on 80.
            (r(None, None, 80), http("gw"), "http://example.org/p"),
            (r(None, Some(80), 80), http("gw"), "http://example.org/p"),
            (
                r(None, Some(8080), 80),
                http("gw"),
                "http://example.org:8080/p",
            ),
            (
                r(Some("https"), None, 80),
                http("gw"),
                "https://example.org/p",
            ),
            (
                r(Some("https"), Some(443), 80),
                http("gw"),
                "https://example.org/p",
            ),
            (
                r(Some("https"), Some(8443), 80),
                http("gw"),
                "https://example.org:8443/p",
            ),
            // Listener on 8080.
            (
                r(None, None, 8080),
                http("gw:8080"),
                "http://example.org:8080/p",
            ),
            (
                r(None, Some(80), 8080),
                http("gw:8080"),
                "http://example.org/p",
            ),
            (
                r(Some("https"), None, 8080),
                http("gw:8080"),
                "https://example.org/p",
            ),
            // Listener on 443.
            (r(None, None, 443), https, "https://example.org/p"),
            (r(None, Some(443), 443), https, "https://example.org/p"),
            (
                r(None, Some(8443), 443),
                https,
                "https://example.org:8443/p",
            ),
            (r(Some("http"), None, 443), https, "http://example.org/p"),
            (
                r(Some("http"), Some(80), 443),
                https,
                "http://example.org/p",
            ),
            (
                r(Some("http"), Some(8080), 443),
                https,
                "http://example.org:8080/p",
            ),
        ] {
            assert_eq!(location(&redirect, request), expected, "{redirect:?}");
        }
    }

    #[test]
    fn hosts_with_ports_and_without_host() {
        assert_eq!(split_host_port("a.b:81"), ("a.b", Some(81)));
        assert_eq!(split_host_port("[::1]:81"), ("[::1]", Some(81)));
        assert_eq!(split_host_port("[::1]"), ("[::1]", None));
        assert_eq!(split_host_port("a.b"), ("a.b", None));
        assert_eq!(
            location(&redirect(), at("[::1]:8081", "/a?b")),
            "http://[::1]:8081/a?b"
        );
        let no_host = RequestUrl {
            tls: false,
            host: None,
            target: "/a",
        };
        assert_eq!(location(&redirect(), no_host), "/a");
    }
}
