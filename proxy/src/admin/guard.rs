//! Who may change things through the admin API. Reading (GET, HEAD) is open to whoever reaches
//! the listener; a change (promote, abort, retry: every other method) must come from a program
//! or a page of weir's own, never from a web page on another site that an operator happens to
//! have open. A browser lets any page send a "simple" cross-site POST with no preflight — so:
//!
//! - a browser's own word that the request is cross-site (`Sec-Fetch-Site: cross-site` or
//!   `same-site`) is refused;
//! - an `Origin` that is not the admin's own host is refused (`null` included);
//! - the request must carry `X-Weir-Admin` or `Authorization`, which no simple cross-site
//!   request can (either makes a browser ask first, and weir grants no CORS);
//! - on a loopback listener, `Host` must name loopback: a page that rebinds its own DNS name to
//!   127.0.0.1 counts as same-origin to the browser, but its Host still says its name.
//!
//! The CLI sends `X-Weir-Admin` (and the token where one is needed); so do weir's own pages.

use http::header::{AUTHORIZATION, CONTENT_LENGTH, HOST, ORIGIN};
use http::{HeaderMap, HeaderName, Method, StatusCode};

/// The header weir's own clients send on every change.
pub static X_WEIR_ADMIN: HeaderName = HeaderName::from_static("x-weir-admin");
static SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// Largest request body the admin API takes (its calls carry none).
pub const MAX_BODY: u64 = 64 * 1024;

/// Why a request is refused, for the client and the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    pub status: StatusCode,
    pub reason: &'static str,
}

fn refused(status: StatusCode, reason: &'static str) -> Result<(), Refused> {
    Err(Refused { status, reason })
}

/// Checks a request against the rules above. `loopback`: the admin listener is on loopback.
pub fn check(method: &Method, headers: &HeaderMap, loopback: bool) -> Result<(), Refused> {
    let length = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if length.is_some_and(|n| n > MAX_BODY) {
        return refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            "admin requests carry no large body",
        );
    }
    if matches!(*method, Method::GET | Method::HEAD) {
        return Ok(());
    }
    let forbidden = StatusCode::FORBIDDEN;
    if let Some(site) = headers.get(&SEC_FETCH_SITE) {
        if !matches!(site.as_bytes(), b"same-origin" | b"none") {
            return refused(forbidden, "a cross-site request cannot change the rollout");
        }
    }
    let host = headers.get(HOST).map(|h| h.as_bytes());
    if let Some(origin) = headers.get(ORIGIN) {
        let own = host.is_some_and(|h| {
            origin_host(origin.as_bytes()).is_some_and(|o| o.eq_ignore_ascii_case(h))
        });
        if !own {
            return refused(
                forbidden,
                "a request from another origin cannot change the rollout",
            );
        }
    }
    if !headers.contains_key(&X_WEIR_ADMIN) && !headers.contains_key(AUTHORIZATION) {
        return refused(
            forbidden,
            "a change needs the X-Weir-Admin header (weir's CLI and page send it)",
        );
    }
    if loopback && !host.is_some_and(names_loopback) {
        return refused(
            forbidden,
            "on a loopback admin listener, Host must name loopback",
        );
    }
    Ok(())
}

/// `scheme://host[:port]` → `host[:port]`; `None` for `null` or anything else.
fn origin_host(origin: &[u8]) -> Option<&[u8]> {
    let rest = [&b"http://"[..], b"https://"]
        .iter()
        .find_map(|scheme| origin.strip_prefix(*scheme))?;
    (!rest.is_empty() && !rest.contains(&b'/')).then_some(rest)
}

/// `localhost`, `127.x.x.x` or `[::1]`, with or without a port.
fn names_loopback(host: &[u8]) -> bool {
    let Ok(host) = std::str::from_utf8(host) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Compares a presented secret with the expected one in time that depends on their lengths
/// only, not on where they first differ: no timing oracle for the token. (A few lines; not
/// worth a crate.)
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut differ = u8::from(given.len() != expected.len());
    for (i, &e) in expected.iter().enumerate() {
        differ |= e ^ given.get(i).copied().unwrap_or(0);
    }
    differ == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(*n, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn a_page_on_another_site_cannot_change_anything() {
        // The request any web page can send without a preflight.
        let attack = headers(&[
            ("host", "127.0.0.1:9901"),
            ("origin", "http://evil.example"),
            ("sec-fetch-site", "cross-site"),
            ("content-type", "text/plain"),
        ]);
        assert_eq!(
            check(&Method::POST, &attack, true).map_err(|r| r.status),
            Err(StatusCode::FORBIDDEN)
        );
        // Without the browser's metadata, the origin alone refuses it.
        let attack = headers(&[
            ("host", "127.0.0.1:9901"),
            ("origin", "http://evil.example"),
        ]);
        assert!(check(&Method::POST, &attack, true).is_err());
        let attack = headers(&[
            ("host", "127.0.0.1:9901"),
            ("origin", "null"),
            ("x-weir-admin", "1"),
        ]);
        assert!(check(&Method::POST, &attack, true).is_err());
        // Same site, another port, is another origin.
        let attack = headers(&[
            ("host", "127.0.0.1:9901"),
            ("sec-fetch-site", "same-site"),
            ("x-weir-admin", "1"),
        ]);
        assert!(check(&Method::POST, &attack, true).is_err());
        // A plain form post from no origin at all still lacks the header.
        assert!(check(&Method::POST, &headers(&[("host", "127.0.0.1:9901")]), true).is_err());
        // DNS rebinding: same-origin to the browser, but Host names the attacker.
        let rebound = headers(&[
            ("host", "evil.example:9901"),
            ("origin", "http://evil.example:9901"),
            ("sec-fetch-site", "same-origin"),
            ("x-weir-admin", "1"),
        ]);
        assert!(check(&Method::POST, &rebound, true).is_err());
    }

    #[test]
    fn weirs_own_clients_pass() {
        // The CLI.
        let cli = headers(&[("host", "127.0.0.1:9901"), ("x-weir-admin", "1")]);
        assert_eq!(check(&Method::POST, &cli, true), Ok(()));
        let cli6 = headers(&[("host", "[::1]:9901"), ("x-weir-admin", "1")]);
        assert_eq!(check(&Method::POST, &cli6, true), Ok(()));
        // weir's page, same origin.
        let page = headers(&[
            ("host", "localhost:9901"),
            ("origin", "http://localhost:9901"),
            ("sec-fetch-site", "same-origin"),
            ("x-weir-admin", "1"),
        ]);
        assert_eq!(check(&Method::POST, &page, true), Ok(()));
        // With a token on a listener elsewhere, any Host.
        let remote = headers(&[
            ("host", "weir.internal:9901"),
            ("authorization", "Bearer t"),
        ]);
        assert_eq!(check(&Method::POST, &remote, false), Ok(()));
        // Reading stays open.
        let read = headers(&[("host", "evil.example"), ("origin", "http://evil.example")]);
        assert_eq!(check(&Method::GET, &read, true), Ok(()));
    }

    #[test]
    fn large_bodies_are_refused() {
        let big = headers(&[("host", "127.0.0.1:1"), ("content-length", "1000000")]);
        assert_eq!(
            check(&Method::GET, &big, true).map_err(|r| r.status),
            Err(StatusCode::PAYLOAD_TOO_LARGE)
        );
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3cres", b"s3cret"));
        assert!(!same_secret(b"s3cre", b"s3cret"));
        assert!(!same_secret(b"s3crets", b"s3cret"));
        assert!(!same_secret(b"", b"s3cret"));
    }
}
