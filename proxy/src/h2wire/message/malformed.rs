//! Why a message's fields were refused: one variant per rule of RFC 9113 §8 (and the RFC 9110
//! rules it leans on), each with the reason an engine logs.

use std::fmt;

/// A rule of RFC 9113 §8 that a message's fields break. The message is malformed (§8.1.1): a
/// request, or a response weir received, ends its stream with PROTOCOL_ERROR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    // Every field (§8.2, §8.2.1, §8.2.2).
    EmptyName,
    UppercaseName,
    /// Not an RFC 9110 §5.6.2 token character (a colon inside a name among them).
    BadNameChar,
    /// NUL, CR or LF (§8.2.1), or another control character or DEL (RFC 9110 §5.5).
    BadValueChar,
    /// SP or HTAB first or last (§8.2.1).
    ValueWhitespace,
    ConnectionSpecific(ConnectionField),
    TeNotTrailers,
    // Pseudo-headers (§8.3).
    PseudoAfterRegular,
    UnknownPseudo,
    RepeatedPseudo(Pseudo),
    ResponsePseudoInRequest,
    RequestPseudoInResponse,
    PseudoInTrailers,
    // Requests (§8.3.1, §8.5, RFC 8441 §4).
    NoMethod,
    BadMethod,
    NoScheme,
    BadScheme,
    NoPath,
    EmptyPath,
    BadPathChar,
    PathNotAbsolute,
    AsteriskNotOptions,
    NoAuthority,
    BadAuthority,
    Userinfo,
    ManyHosts,
    BadHost,
    HostMismatch,
    SchemeInConnect,
    PathInConnect,
    ProtocolNotEnabled,
    ProtocolWithoutConnect,
    BadProtocol,
    // Responses (§8.3.2, §8.6).
    NoStatus,
    BadStatus,
    SwitchingProtocols,
    // Content-Length (RFC 9110 §8.6).
    BadContentLength,
    ManyContentLengths,
}

/// The connection-specific fields RFC 9113 §8.2.2 names (TE aside: it has its own rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionField {
    Connection,
    ProxyConnection,
    KeepAlive,
    TransferEncoding,
    Upgrade,
}

/// The pseudo-headers RFC 9113 §8.3 and RFC 8441 §4 define.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pseudo {
    Method,
    Scheme,
    Authority,
    Path,
    /// Extended CONNECT's (RFC 8441).
    Protocol,
    Status,
}

impl Pseudo {
    /// Every pseudo-header.
    pub const ALL: [Pseudo; 6] = [
        Pseudo::Method,
        Pseudo::Scheme,
        Pseudo::Authority,
        Pseudo::Path,
        Pseudo::Protocol,
        Pseudo::Status,
    ];

    /// `name` if it is one of them, as it must be sent: lower case, with its colon.
    pub fn of(name: &[u8]) -> Option<Pseudo> {
        Some(match name {
            b":method" => Pseudo::Method,
            b":scheme" => Pseudo::Scheme,
            b":authority" => Pseudo::Authority,
            b":path" => Pseudo::Path,
            b":protocol" => Pseudo::Protocol,
            b":status" => Pseudo::Status,
            _ => return None,
        })
    }
}

impl Malformed {
    /// What the log says, and the reason a 400 answer may give.
    pub fn reason(self) -> &'static str {
        use ConnectionField as C;
        match self {
            Malformed::EmptyName => "empty field name",
            Malformed::UppercaseName => "uppercase letter in a field name",
            Malformed::BadNameChar => "a field name character that is not a token character",
            Malformed::BadValueChar => "a control character other than HTAB in a field value",
            Malformed::ValueWhitespace => "a field value that starts or ends with SP or HTAB",
            Malformed::ConnectionSpecific(C::Connection) => {
                "connection-specific field `connection`"
            }
            Malformed::ConnectionSpecific(C::ProxyConnection) => {
                "connection-specific field `proxy-connection`"
            }
            Malformed::ConnectionSpecific(C::KeepAlive) => "connection-specific field `keep-alive`",
            Malformed::ConnectionSpecific(C::TransferEncoding) => {
                "connection-specific field `transfer-encoding`"
            }
            Malformed::ConnectionSpecific(C::Upgrade) => "connection-specific field `upgrade`",
            Malformed::TeNotTrailers => "TE other than `trailers`",
            Malformed::PseudoAfterRegular => "pseudo-header after a regular field",
            Malformed::UnknownPseudo => "unknown pseudo-header",
            Malformed::RepeatedPseudo(Pseudo::Method) => "two :method pseudo-headers",
            Malformed::RepeatedPseudo(Pseudo::Scheme) => "two :scheme pseudo-headers",
            Malformed::RepeatedPseudo(Pseudo::Authority) => "two :authority pseudo-headers",
            Malformed::RepeatedPseudo(Pseudo::Path) => "two :path pseudo-headers",
            Malformed::RepeatedPseudo(Pseudo::Protocol) => "two :protocol pseudo-headers",
            Malformed::RepeatedPseudo(Pseudo::Status) => "two :status pseudo-headers",
            Malformed::ResponsePseudoInRequest => ":status in a request",
            Malformed::RequestPseudoInResponse => "request pseudo-header in a response",
            Malformed::PseudoInTrailers => "pseudo-header in trailers",
            Malformed::NoMethod => "no :method",
            Malformed::BadMethod => ":method is not a token",
            Malformed::NoScheme => "no :scheme",
            Malformed::BadScheme => ":scheme is not a URI scheme",
            Malformed::NoPath => "no :path",
            Malformed::EmptyPath => "empty :path",
            Malformed::BadPathChar => ":path holds a space, a control character or `#`",
            Malformed::PathNotAbsolute => "http(s) :path neither starts with `/` nor is `*`",
            Malformed::AsteriskNotOptions => ":path `*` in a request other than OPTIONS",
            Malformed::NoAuthority => "CONNECT without :authority",
            Malformed::BadAuthority => ":authority is not a valid authority",
            Malformed::Userinfo => ":authority with userinfo (`@`)",
            Malformed::ManyHosts => "two Host fields",
            Malformed::BadHost => "Host is not a valid authority",
            Malformed::HostMismatch => "Host differs from :authority",
            Malformed::SchemeInConnect => ":scheme in a CONNECT request",
            Malformed::PathInConnect => ":path in a CONNECT request",
            Malformed::ProtocolNotEnabled => ":protocol, but extended CONNECT is not enabled",
            Malformed::ProtocolWithoutConnect => ":protocol in a request other than CONNECT",
            Malformed::BadProtocol => ":protocol is not a token",
            Malformed::NoStatus => "no :status",
            Malformed::BadStatus => ":status is not three digits from 100 to 599",
            Malformed::SwitchingProtocols => ":status 101, which HTTP/2 does not have",
            Malformed::BadContentLength => "content-length is not a number (digits only)",
            Malformed::ManyContentLengths => {
                "more than one content-length field (in a response: of different numbers)"
            }
        }
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

impl std::error::Error for Malformed {}
