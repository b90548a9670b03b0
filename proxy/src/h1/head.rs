//! Parsed HTTP/1 heads kept as offsets into the bytes they came in: routing reads fields in
//! place, forwarding copies them through, and nothing becomes a map.

use std::ops::Range;

use http::header::HeaderName;

use super::strict::{self, Refusal, TargetForm};
use super::syntax::{self, RequestLine, Syntax};
pub use crate::field::Field;
use crate::field::{is_fixed_token, is_real_upgrade, tokens, Kind};
use crate::framing::parse_length;
pub use crate::framing::Framing;
use crate::table::Fields;

/// The fields both heads share, with the connection-level facts found while parsing.
#[derive(Debug, Default)]
pub struct FieldList {
    pub fields: Vec<Field>,
    /// `Connection: close`.
    pub close: bool,
    /// `Connection` names a field beyond the fixed hop-by-hop ones: it must not be forwarded.
    pub connection_names_fields: bool,
}

impl FieldList {
    fn clear(&mut self) {
        self.fields.clear();
        self.close = false;
        self.connection_names_fields = false;
    }

    /// A field line just read: classified, and `Connection`'s tokens noted, once.
    #[inline(always)]
    fn push(&mut self, buf: &[u8], name: Range<usize>, value: Range<usize>) {
        let kind = Kind::of(&buf[name.clone()]);
        if kind == Kind::Connection {
            self.connection(&buf[value.clone()]);
        }
        self.fields.push(Field { name, value, kind });
    }

    fn connection(&mut self, value: &[u8]) {
        // What nearly every upstream says, answered without splitting a list.
        if value.eq_ignore_ascii_case(b"keep-alive") {
            return;
        }
        for token in tokens(value) {
            if token.eq_ignore_ascii_case(b"close") {
                self.close = true;
            } else if !is_fixed_token(token) {
                self.connection_names_fields = true;
            }
        }
    }

    /// Whether this field is hop-by-hop for this message (fixed ones, and those `Connection`
    /// names). Inline: asked of every field of every head, and nearly always answered by its
    /// kind alone.
    #[inline(always)]
    pub fn is_hop_by_hop(&self, buf: &[u8], field: &Field) -> bool {
        field.kind.is_hop_by_hop()
            || (field.kind == Kind::Other
                && self.connection_names_fields
                && self.named_by_connection(buf, field))
    }

    /// Whether a `Connection` field names this one (RFC 9110 §7.6.1: then it is hop-by-hop).
    #[cold]
    fn named_by_connection(&self, buf: &[u8], field: &Field) -> bool {
        let name = &buf[field.name.clone()];
        self.fields
            .iter()
            .filter(|f| f.kind == Kind::Connection)
            .flat_map(|f| tokens(&buf[f.value.clone()]))
            .any(|t| t.eq_ignore_ascii_case(name))
    }

    /// A response body's framing from Content-Length and Transfer-Encoding (RFC 9112 §6.3).
    /// `None`: malformed or ambiguous. (Requests are held to stricter rules: `strict`.)
    fn response_framing(&self, buf: &[u8]) -> Option<Framing> {
        let mut length: Option<u64> = None;
        let mut codings = 0;
        let mut chunked = false;
        for f in &self.fields {
            match f.kind {
                Kind::ContentLength => {
                    let n = parse_length(&buf[f.value.clone()])?;
                    if length.is_some_and(|l| l != n) {
                        return None;
                    }
                    length = Some(n);
                }
                Kind::TransferEncoding => {
                    codings += 1;
                    // Only the last coding decides; `chunked` must be it.
                    chunked = tokens(&buf[f.value.clone()])
                        .last()
                        .is_some_and(|t| t.eq_ignore_ascii_case(b"chunked"));
                }
                _ => {}
            }
        }
        match (codings > 0, length) {
            (true, Some(_)) => None,
            (true, _) if chunked => Some(Framing::Chunked),
            (true, _) => Some(Framing::Close),
            (false, Some(0)) => Some(Framing::Empty),
            (false, Some(n)) => Some(Framing::Length(n)),
            (false, None) => Some(Framing::Close),
        }
    }
}

/// A request head this engine forwards itself, or why hyper must serve it instead.
#[derive(Debug, Default)]
pub struct RequestHead {
    /// Bytes from the request line through the blank line.
    pub len: usize,
    pub method: Range<usize>,
    pub target: Range<usize>,
    pub list: FieldList,
    pub host: Option<Range<usize>>,
    pub framing: Framing,
    /// Upgrade names a protocol other than h2c: after a 101 the connection is a tunnel.
    pub upgrade: bool,
}

pub enum Parsed {
    /// The head is complete: `RequestHead` describes it.
    Complete,
    Partial,
    /// Valid, but a shape this engine leaves to hyper: HTTP/1.0, absolute-form, CONNECT,
    /// OPTIONS *, Upgrade, Expect, gRPC.
    Hyper,
    /// Not a request weir forwards: answered with the refusal's status, then the connection
    /// closes.
    Refused(Refusal),
}

impl RequestHead {
    /// Parses and checks a head by the rules of `strict`, the same for both engines.
    pub fn parse(&mut self, buf: &[u8], max_fields: usize) -> Parsed {
        let list = &mut self.list;
        list.clear();
        let line = match syntax::request(buf, |name, value| list.push(buf, name, value)) {
            Syntax::Complete(line) => line,
            Syntax::Partial => return Parsed::Partial,
            Syntax::TooManyFields => return Parsed::Refused(Refusal::TooManyFields),
            Syntax::Malformed => return Parsed::Refused(Refusal::Malformed),
        };
        match self.check(buf, line, max_fields) {
            Ok(usual) if usual => Parsed::Complete,
            Ok(_) => Parsed::Hyper,
            Err(refusal) => Parsed::Refused(refusal),
        }
    }

    /// Fills the head in and applies every rule; `Ok(false)`: valid, but for hyper.
    fn check(&mut self, buf: &[u8], line: RequestLine, max_fields: usize) -> Result<bool, Refusal> {
        if line.bare_lf {
            return Err(Refusal::BareLf);
        }
        if self.list.fields.len() > max_fields {
            return Err(Refusal::TooManyFields);
        }
        let http11 = line.http11;
        self.len = line.len;
        self.method = line.method;
        self.target = line.target;
        let target = &buf[self.target.clone()];
        let (form, authority) = strict::target_form(&buf[self.method.clone()], target)?;
        let authority = authority.map(|r| &target[r]);
        self.host = strict::check_host(buf, &self.list.fields, http11, authority)?;
        self.framing = strict::request_framing(buf, &self.list.fields, http11)?;
        self.upgrade = false;
        let mut unusual = !http11 || form != TargetForm::Origin;
        for f in &self.list.fields {
            match f.kind {
                Kind::Upgrade => self.upgrade |= is_real_upgrade(&buf[f.value.clone()]),
                Kind::Expect => unusual = true,
                Kind::ContentType => {
                    unusual |= buf[f.value.clone()].starts_with(b"application/grpc")
                }
                _ => {}
            }
        }
        Ok(!unusual && !self.upgrade)
    }

    /// The origin-form target, query included: routing matches path prefixes on it as it is.
    /// Routing reads bytes, so nothing here is checked as UTF-8.
    pub fn target<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.target.clone()]
    }

    pub fn host<'b>(&self, buf: &'b [u8]) -> Option<&'b [u8]> {
        buf.get(self.host.clone()?)
    }

    pub fn method<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.method.clone()]
    }

    pub fn is_head(&self, buf: &[u8]) -> bool {
        self.method(buf) == b"HEAD"
    }
}

/// A request head's fields in its buffer, as routing reads them.
pub struct HeadFields<'a> {
    pub buf: &'a [u8],
    pub list: &'a FieldList,
}

impl Fields for HeadFields<'_> {
    fn values<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a [u8]> + 'a {
        let wanted = name.as_str().as_bytes();
        // Lengths first: most fields are rejected without reading their names.
        self.list.fields.iter().filter_map(move |f| {
            if f.name.len() != wanted.len() {
                return None;
            }
            let name = self.buf.get(f.name.clone())?;
            name.eq_ignore_ascii_case(wanted)
                .then(|| self.buf.get(f.value.clone()))?
        })
    }
}

/// Largest upstream response head accepted; past it the response is malformed.
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// An upstream's response head.
#[derive(Debug, Default)]
pub struct ResponseHead {
    pub len: usize,
    pub status: u16,
    pub reason: Range<usize>,
    pub list: FieldList,
    pub framing: Framing,
    /// The upstream will not take another request on this connection.
    pub close: bool,
}

pub enum ParsedResponse {
    Complete,
    Partial,
    Malformed,
}

impl ResponseHead {
    /// `head_request`: the request was HEAD, so no body follows whatever the fields say.
    pub fn parse(&mut self, buf: &[u8], head_request: bool) -> ParsedResponse {
        let list = &mut self.list;
        list.clear();
        let line = match syntax::response(buf, |name, value| list.push(buf, name, value)) {
            Syntax::Complete(line) => line,
            Syntax::Partial => return ParsedResponse::Partial,
            Syntax::Malformed | Syntax::TooManyFields => return ParsedResponse::Malformed,
        };
        let status = line.status;
        self.len = line.len;
        self.status = status;
        self.reason = line.reason;
        let bodiless =
            head_request || (100..200).contains(&status) || status == 204 || status == 304;
        self.framing = match self.list.response_framing(buf) {
            None => return ParsedResponse::Malformed,
            Some(_) if bodiless => Framing::Empty,
            Some(f) => f,
        };
        // HTTP/1.0 closes unless told otherwise; keep-alive negotiation with 1.0 upstreams is
        // not worth having.
        self.close = self.list.close || !line.http11 || self.framing == Framing::Close;
        ParsedResponse::Complete
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(raw: &[u8]) -> (Parsed, RequestHead) {
        let mut head = RequestHead::default();
        let parsed = head.parse(raw, 100);
        (parsed, head)
    }

    #[test]
    fn a_plain_request_is_described_in_place() {
        let raw = b"GET /a/b?c=1 HTTP/1.1\r\nHost: Example.com\r\nX-Canary: yes\r\n\r\nrest";
        let (parsed, head) = request(raw);
        assert!(matches!(parsed, Parsed::Complete));
        assert_eq!(head.len, raw.len() - 4);
        assert_eq!(head.target(raw), b"/a/b?c=1");
        assert_eq!(head.host(raw), Some(&b"Example.com"[..]));
        assert_eq!(head.framing, Framing::Empty);
        let fields = HeadFields {
            buf: raw,
            list: &head.list,
        };
        let name = HeaderName::from_static("x-canary");
        assert_eq!(fields.first(&name), Some(&b"yes"[..]));
        assert!(matches!(
            request(b"GET / HTTP/1.1\r\nHost: a\r\n").0,
            Parsed::Partial
        ));
    }

    #[test]
    fn bodies_are_framed_by_one_plain_field_or_refused() {
        let framing = |fields: &str| {
            let raw = format!("POST / HTTP/1.1\r\nHost: a\r\n{fields}\r\n");
            match request(raw.as_bytes()) {
                (Parsed::Complete, head) => Ok(head.framing),
                (Parsed::Refused(refusal), _) => Err(refusal),
                _ => panic!("{fields:?} neither forwarded nor refused"),
            }
        };
        assert_eq!(framing("Content-Length: 12\r\n"), Ok(Framing::Length(12)));
        assert_eq!(framing("Content-Length: 0\r\n"), Ok(Framing::Empty));
        assert_eq!(
            framing("Transfer-Encoding: Chunked\r\n"),
            Ok(Framing::Chunked)
        );
        assert_eq!(framing(""), Ok(Framing::Empty));
        for (fields, refusal) in [
            (
                "Content-Length: 5\r\nContent-Length: 5\r\n",
                Refusal::BadLength,
            ),
            ("Content-Length: 5, 5\r\n", Refusal::BadLength),
            (
                "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                Refusal::LengthAndChunked,
            ),
            (
                "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                Refusal::LengthAndChunked,
            ),
            (
                "Transfer-Encoding: gzip, chunked\r\n",
                Refusal::UnknownCoding,
            ),
            ("Transfer-Encoding: chunked, gzip\r\n", Refusal::BadCoding),
            (
                "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                Refusal::BadCoding,
            ),
            ("Transfer-Encoding: gzip\r\n", Refusal::BadCoding),
            ("Transfer-Encoding: \r\n", Refusal::BadCoding),
            ("Content-Length: +5\r\n", Refusal::BadLength),
            (
                "Content-Length: 99999999999999999999999\r\n",
                Refusal::BadLength,
            ),
        ] {
            assert_eq!(framing(fields), Err(refusal), "{fields:?}");
        }
    }

    #[test]
    fn unusual_requests_go_to_hyper() {
        for raw in [
            &b"GET / HTTP/1.0\r\nHost: a\r\n\r\n"[..],
            b"GET / HTTP/1.0\r\n\r\n",
            b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
            b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
            b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Type: application/grpc\r\n\r\n",
        ] {
            assert!(
                matches!(request(raw).0, Parsed::Hyper),
                "{}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn an_h2c_upgrade_is_served_as_plain_http1() {
        let raw = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n\
Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n";
        let (parsed, head) = request(raw);
        assert!(matches!(parsed, Parsed::Complete));
        assert!(!head.upgrade);
        // Nothing of the upgrade is forwarded.
        for f in &head.list.fields {
            let name = String::from_utf8_lossy(&raw[f.name.clone()]).to_ascii_lowercase();
            let hop = head.list.is_hop_by_hop(raw, f);
            assert_eq!(hop, name != "host", "{name}");
        }
    }

    #[test]
    fn hostile_heads_are_refused_with_their_reason() {
        for (raw, refusal) in [
            (&b"GET / HTTP/1.1\nHost: a\r\n\r\n"[..], Refusal::BareLf),
            (b"GET / HTTP/1.1\r\nHost: a\n\r\n", Refusal::BareLf),
            (b"GET / HTTP/1.1\r\n\r\n", Refusal::NoHost),
            (
                b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                Refusal::ManyHosts,
            ),
            (
                b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
                Refusal::ManyHosts,
            ),
            (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", Refusal::BadHost),
            (b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", Refusal::BadHost),
            (b"GET / HTTP/1.1\r\nHost: evil@a\r\n\r\n", Refusal::BadHost),
            (
                b"GET http://a/ HTTP/1.1\r\nHost: b\r\n\r\n",
                Refusal::HostMismatch,
            ),
            (
                b"GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n",
                Refusal::BadTarget,
            ),
            (b"GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", Refusal::BadTarget),
            (b"GET /#x HTTP/1.1\r\nHost: a\r\n\r\n", Refusal::BadTarget),
            (b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", Refusal::BadTarget),
            (
                b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                Refusal::CodingInHttp10,
            ),
            (b"GET / HTTP/1.1\r\nbad header\r\n\r\n", Refusal::Malformed),
            (b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", Refusal::Malformed),
            (
                b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
                Refusal::Malformed,
            ),
            (b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", Refusal::Malformed),
            (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", Refusal::Malformed),
            (
                b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
                Refusal::Malformed,
            ),
        ] {
            match request(raw).0 {
                Parsed::Refused(got) => {
                    assert_eq!(got, refusal, "{}", String::from_utf8_lossy(raw))
                }
                _ => panic!("not refused: {}", String::from_utf8_lossy(raw)),
            }
        }
    }

    #[test]
    fn connection_says_close_or_names_fields() {
        let said = |value: &str| {
            let raw = format!("GET / HTTP/1.1\r\nHost: a\r\nConnection: {value}\r\n\r\n");
            let (parsed, head) = request(raw.as_bytes());
            assert!(matches!(parsed, Parsed::Complete), "{value}");
            (head.list.close, head.list.connection_names_fields)
        };
        assert_eq!(said("keep-alive"), (false, false));
        assert_eq!(said("Keep-Alive"), (false, false));
        assert_eq!(said("close"), (true, false));
        assert_eq!(said("keep-alive, Close"), (true, false));
        assert_eq!(said("keep-alive, X-Secret"), (false, true));
        assert_eq!(said("keep-alive-x"), (false, true));
        assert_eq!(said("te, upgrade"), (false, false));
    }

    #[test]
    fn responses_know_whether_a_body_follows_and_whether_the_connection_stays() {
        let parse = |raw: &[u8], head_request: bool| {
            let mut head = ResponseHead::default();
            assert!(matches!(
                head.parse(raw, head_request),
                ParsedResponse::Complete
            ));
            (head.status, head.framing, head.close)
        };
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", false),
            (200, Framing::Length(3), false)
        );
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", true),
            (200, Framing::Empty, false)
        );
        assert_eq!(
            parse(
                b"HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n",
                false
            ),
            (304, Framing::Empty, false)
        );
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\n\r\n", false),
            (200, Framing::Close, true)
        );
        assert_eq!(
            parse(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false),
            (200, Framing::Empty, true)
        );
        assert_eq!(
            parse(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                false
            ),
            (200, Framing::Chunked, false)
        );
        let mut head = ResponseHead::default();
        assert!(matches!(
            head.parse(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false),
            ParsedResponse::Malformed
        ));
    }
}
