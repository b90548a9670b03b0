//! What a header field means to a proxy, decided by one rule for both engines: the passthrough
//! engine classifies each field of a raw head once, the hyper engine each name of a map, and
//! both drop, keep or add fields by that classification. RFC 9110 §7.6.1 is the source for
//! hop-by-hop fields.

use std::ops::Range;

/// A field's role on the way through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Host,
    ContentLength,
    TransferEncoding,
    Connection,
    /// `TE`: hop-by-hop, and where a client says it accepts trailers (gRPC).
    Te,
    /// Hop-by-hop by definition with nothing else to it: Keep-Alive, Proxy-Connection, and
    /// HTTP2-Settings (it only ever comes with an h2c upgrade, which is never forwarded).
    HopByHop,
    Upgrade,
    Expect,
    ContentType,
    /// Appended to, never believed.
    ForwardedFor,
    /// Replaced by what weir saw.
    ForwardedProto,
    /// Replaced by what weir saw.
    ForwardedHost,
    Other,
}

impl Kind {
    /// `name` in any case, as it came on an HTTP/1 wire.
    pub fn of(name: &[u8]) -> Kind {
        Kind::by(name, <[u8]>::eq_ignore_ascii_case)
    }

    /// `name` known to be lower case, as HTTP/2 sends names (once checked) and `HeaderName`
    /// holds them: compared as it is, which costs a fraction of a comparison in any case.
    pub fn of_lower(name: &[u8]) -> Kind {
        Kind::by(name, |a, b| a == b)
    }

    /// The one table both read, with their comparison.
    #[inline(always)]
    fn by(name: &[u8], same: impl Fn(&[u8], &[u8]) -> bool) -> Kind {
        let is = |known: &str| same(name, known.as_bytes());
        // Length first: most fields are rejected by one comparison of integers.
        match name.len() {
            2 if is("te") => Kind::Te,
            4 if is("host") => Kind::Host,
            6 if is("expect") => Kind::Expect,
            7 if is("upgrade") => Kind::Upgrade,
            10 if is("connection") => Kind::Connection,
            10 if is("keep-alive") => Kind::HopByHop,
            12 if is("content-type") => Kind::ContentType,
            14 if is("content-length") => Kind::ContentLength,
            14 if is("http2-settings") => Kind::HopByHop,
            15 if is("x-forwarded-for") => Kind::ForwardedFor,
            16 if is("x-forwarded-host") => Kind::ForwardedHost,
            16 if is("proxy-connection") => Kind::HopByHop,
            17 if is("x-forwarded-proto") => Kind::ForwardedProto,
            17 if is("transfer-encoding") => Kind::TransferEncoding,
            _ => Kind::Other,
        }
    }

    /// Hop-by-hop whatever `Connection` says. (Transfer-Encoding is too, but the passthrough
    /// engine forwards a body as framed, so each engine handles it with the body.)
    pub fn is_hop_by_hop(self) -> bool {
        matches!(
            self,
            Kind::Connection | Kind::Te | Kind::HopByHop | Kind::Upgrade
        )
    }
}

/// Where one field of a raw head lies in its buffer, and what it means.
#[derive(Clone, Debug)]
pub struct Field {
    pub name: Range<usize>,
    pub value: Range<usize>,
    pub kind: Kind,
}

/// The comma-separated tokens of a list field, trimmed, empty ones skipped.
pub fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
}

/// Connection tokens that name no field of their own, or one removed anyway.
pub fn is_fixed_token(token: &[u8]) -> bool {
    [
        &b"close"[..],
        b"keep-alive",
        b"upgrade",
        b"te",
        b"transfer-encoding",
        b"proxy-connection",
    ]
    .iter()
    .any(|fixed| token.eq_ignore_ascii_case(fixed))
}

/// Whether a `TE` value accepts trailers.
pub fn accepts_trailers(te: &[u8]) -> bool {
    tokens(te).any(|t| t.eq_ignore_ascii_case(b"trailers"))
}

/// Whether an Upgrade field asks for something other than h2c: an upgrade to h2c is never
/// honoured (RFC 9113 §3.1 removed it; forwarded, it would hand the client a raw HTTP/2
/// connection past weir's routing), so a request asking only for it is served as plain HTTP/1.1.
pub fn is_real_upgrade(value: &[u8]) -> bool {
    tokens(value).any(|t| !t.eq_ignore_ascii_case(b"h2c"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_classified_in_any_case() {
        assert_eq!(Kind::of(b"Connection"), Kind::Connection);
        assert_eq!(Kind::of(b"TE"), Kind::Te);
        assert_eq!(Kind::of(b"proxy-CONNECTION"), Kind::HopByHop);
        assert_eq!(Kind::of(b"X-Forwarded-For"), Kind::ForwardedFor);
        assert_eq!(Kind::of(b"x-forwarded-fox"), Kind::Other);
        for name in [
            "te",
            "host",
            "expect",
            "upgrade",
            "connection",
            "keep-alive",
            "content-type",
            "content-length",
            "http2-settings",
            "x-forwarded-for",
            "x-forwarded-host",
            "proxy-connection",
            "x-forwarded-proto",
            "transfer-encoding",
            "x-other",
        ] {
            let upper = name.to_ascii_uppercase();
            assert_eq!(Kind::of_lower(name.as_bytes()), Kind::of(upper.as_bytes()));
        }
        assert_eq!(Kind::of_lower(b"Host"), Kind::Other, "lower case only");
        assert!(Kind::Upgrade.is_hop_by_hop());
        assert!(!Kind::Host.is_hop_by_hop());
    }

    #[test]
    fn list_values_split_into_trimmed_tokens() {
        let got: Vec<&[u8]> = tokens(b" close ,, X-Secret,").collect();
        assert_eq!(got, vec![&b"close"[..], b"X-Secret"]);
        assert!(is_fixed_token(b"Keep-Alive"));
        assert!(!is_fixed_token(b"x-secret"));
        assert!(accepts_trailers(b"deflate, trailers"));
        assert!(!accepts_trailers(b"deflate"));
    }

    #[test]
    fn h2c_alone_is_no_upgrade() {
        assert!(!is_real_upgrade(b"h2c"));
        assert!(!is_real_upgrade(b" H2C "));
        assert!(is_real_upgrade(b"websocket"));
        assert!(is_real_upgrade(b"h2c, websocket"));
    }
}
