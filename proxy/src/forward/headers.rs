//! Header rewriting on both legs: hop-by-hop fields go (RFC 9110 §7.6.1), forwarding fields
//! are added. A client's X-Forwarded-For is only ever appended to, never believed.

use http::header::{HeaderName, HeaderValue, CONNECTION, TE, TRANSFER_ENCODING, UPGRADE};
use http::HeaderMap;

use super::ClientInfo;
use crate::field::{accepts_trailers, is_fixed_token, is_real_upgrade, tokens, Kind};

static KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
static PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");
static HTTP2_SETTINGS: HeaderName = HeaderName::from_static("http2-settings");
static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
static X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
static X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// Which fixed hop-by-hop fields a message carries, found in one pass over its fields by the
/// rule the passthrough engine uses too (`crate::field`).
#[derive(Default)]
struct HopByHop {
    connection: bool,
    /// A Connection token names some other field (beyond the fixed ones and `close`).
    connection_names_fields: bool,
    te: bool,
    wants_trailers: bool,
    transfer_encoding: bool,
    upgrade: bool,
    /// Keep-Alive, Proxy-Connection or HTTP2-Settings.
    other: bool,
}

impl HopByHop {
    fn scan(headers: &HeaderMap) -> Self {
        let mut found = HopByHop::default();
        for (name, value) in headers {
            match Kind::of_lower(name.as_str().as_bytes()) {
                Kind::Connection => {
                    found.connection = true;
                    found.connection_names_fields |=
                        tokens(value.as_bytes()).any(|t| !is_fixed_token(t));
                }
                Kind::Te => {
                    found.te = true;
                    found.wants_trailers |= accepts_trailers(value.as_bytes());
                }
                Kind::TransferEncoding => found.transfer_encoding = true,
                Kind::Upgrade => found.upgrade = true,
                Kind::HopByHop => found.other = true,
                _ => {}
            }
        }
        found
    }

    fn any(&self) -> bool {
        self.connection || self.te || self.transfer_encoding || self.upgrade || self.other
    }
}

/// Removes hop-by-hop fields. With `keep_upgrade` (a real upgrade in progress) the `Upgrade`
/// field and a `Connection: upgrade` stay. Returns whether the peer sent `TE: trailers`.
///
/// Every message passes through here on both legs, so the common shapes cost little: no
/// hashed lookup for a field that is absent, and no allocation for `Connection: keep-alive`.
pub fn strip_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) -> bool {
    let found = HopByHop::scan(headers);
    if !found.any() {
        return false;
    }
    if found.te {
        headers.remove(TE);
    }
    if found.connection_names_fields {
        // Every other field the Connection header names is hop-by-hop too.
        let named: Vec<HeaderName> = headers
            .get_all(CONNECTION)
            .iter()
            .flat_map(|v| tokens(v.as_bytes()))
            .filter(|t| !is_fixed_token(t))
            .filter_map(|t| HeaderName::from_bytes(t).ok())
            .collect();
        for name in named {
            headers.remove(&name);
        }
    }
    if found.connection {
        headers.remove(CONNECTION);
    }
    if found.other {
        headers.remove(&KEEP_ALIVE);
        headers.remove(&PROXY_CONNECTION);
        headers.remove(&HTTP2_SETTINGS);
    }
    if found.transfer_encoding {
        headers.remove(TRANSFER_ENCODING);
    }
    if keep_upgrade {
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        without_h2c(headers);
    } else if found.upgrade {
        headers.remove(UPGRADE);
    }
    found.wants_trailers
}

/// The most fields the engine adds to a request on its way: X-Forwarded-For, -Proto and -Host,
/// and the upstream's TE or Host (`super::shape_for_upstream`). A map built for a request
/// makes room for them (`h2link::header_map`).
pub const ADDED_FIELDS: usize = 4;

/// Appends the client to X-Forwarded-For and states the original proto and host. (The Host an
/// HTTP/1 upstream needs from an HTTP/2 client's :authority is added with the upstream's
/// shape, `super::shape_for_upstream`: an HTTP/2 upstream takes none.)
/// `host` is moved in, not cloned: a value made for this request (an HTTP/2 client's
/// :authority) would otherwise take an allocation for the count its clone shares.
pub fn add_forwarded(headers: &mut HeaderMap, client: &ClientInfo, host: Option<HeaderValue>) {
    // Grown once, not once per field; no growing at all for a map built with the room.
    headers.reserve(ADDED_FIELDS);
    match headers.get(&X_FORWARDED_FOR) {
        // The common case: nothing to append to, and the peer's value is rendered already.
        None => {
            headers.insert(X_FORWARDED_FOR.clone(), client.ip_header.clone());
        }
        Some(_) => {
            let mut xff = Vec::new();
            for v in headers.get_all(&X_FORWARDED_FOR) {
                xff.extend_from_slice(v.as_bytes());
                xff.extend_from_slice(b", ");
            }
            xff.extend_from_slice(client.ip_header.as_bytes());
            if let Ok(v) = HeaderValue::from_bytes(&xff) {
                headers.insert(X_FORWARDED_FOR.clone(), v);
            }
        }
    }
    headers.insert(
        X_FORWARDED_PROTO.clone(),
        HeaderValue::from_static(if client.tls { "https" } else { "http" }),
    );
    match host {
        Some(h) => {
            headers.insert(X_FORWARDED_HOST.clone(), h);
        }
        None => {
            headers.remove(&X_FORWARDED_HOST);
        }
    }
}

/// An upgrade goes on without h2c among the protocols offered: weir never forwards one.
fn without_h2c(headers: &mut HeaderMap) {
    let offered: Vec<u8> = headers
        .get_all(UPGRADE)
        .iter()
        .flat_map(|v| tokens(v.as_bytes()))
        .filter(|t| !t.eq_ignore_ascii_case(b"h2c"))
        .collect::<Vec<_>>()
        .join(&b", "[..]);
    match HeaderValue::from_bytes(&offered) {
        Ok(v) if !offered.is_empty() => {
            headers.insert(UPGRADE, v);
        }
        _ => {
            headers.remove(UPGRADE);
        }
    }
}

/// Whether this HTTP/1 request asks to switch protocols (WebSocket and the like). An upgrade
/// to h2c alone is not one: the request is served as plain HTTP/1.1 (`field::is_real_upgrade`).
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all(UPGRADE)
        .iter()
        .any(|v| is_real_upgrade(v.as_bytes()))
        && headers
            .get_all(CONNECTION)
            .iter()
            .any(|v| tokens(v.as_bytes()).any(|t| t.eq_ignore_ascii_case(b"upgrade")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn strips_named_and_fixed_hop_by_hop() {
        let mut h = map(&[
            ("connection", "close, x-secret"),
            ("x-secret", "1"),
            ("keep-alive", "timeout=5"),
            ("proxy-connection", "keep-alive"),
            ("te", "trailers, deflate"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "websocket"),
            ("x-kept", "yes"),
        ]);
        assert!(strip_hop_by_hop(&mut h, false));
        assert_eq!(h.len(), 1, "{h:?}");
        assert!(h.contains_key("x-kept"));
    }

    #[test]
    fn keeps_upgrade_on_a_real_upgrade() {
        let mut h = map(&[("connection", "Upgrade"), ("upgrade", "websocket")]);
        assert!(is_upgrade(&h));
        strip_hop_by_hop(&mut h, true);
        assert_eq!(h.get("upgrade").unwrap(), "websocket");
        assert_eq!(h.get("connection").unwrap(), "upgrade");
    }

    #[test]
    fn xff_appends_and_never_replaces() {
        let mut h = map(&[
            ("x-forwarded-for", "1.2.3.4"),
            ("x-forwarded-proto", "https"),
        ]);
        let client = ClientInfo::new("10.0.0.9:40000".parse().unwrap(), false, "test".into());
        add_forwarded(
            &mut h,
            &client,
            Some(HeaderValue::from_static("example.com")),
        );
        assert_eq!(h.get("x-forwarded-for").unwrap(), "1.2.3.4, 10.0.0.9");
        assert_eq!(h.get("x-forwarded-proto").unwrap(), "http");
        assert_eq!(h.get("x-forwarded-host").unwrap(), "example.com");
    }
}
