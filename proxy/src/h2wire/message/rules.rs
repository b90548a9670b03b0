//! The rules every field of every message is held to (RFC 9113 §8.2): name and value syntax,
//! no connection-specific field, TE only `trailers`; and the two value syntaxes the checkers
//! share, tokens and Content-Length.

use super::super::hpack::Memo;
use super::malformed::{ConnectionField, Malformed, Pseudo};
use crate::field::{Kind, LOWER_TCHAR, TCHAR};
use crate::framing::parse_length;

/// A field whose name and value hold the common rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Name {
    Pseudo(Pseudo),
    /// A regular field, classified as the rest of weir classifies it.
    Regular(Kind),
}

/// `field`, judged once for each dynamic table entry: a field sent by its index in the HPACK
/// table has the same name and value every time, so the entry's `memo` keeps what `field` made
/// of it (a refusal is not kept: it is judged again, and the request refused again). Most
/// fields of a connection's later requests come this way: judging each anew was 7 % of the
/// instructions of a gRPC call (benches/README.md, session 21).
pub(super) fn remembered(
    name: &[u8],
    value: &[u8],
    memo: Option<&Memo>,
) -> Result<Name, Malformed> {
    if let Some(known) = memo.and_then(|m| Name::from_memo(m.get())) {
        return Ok(known);
    }
    let judged = field(name, value)?;
    if let (Some(memo), Some(word)) = (memo, judged.to_memo()) {
        memo.set(word);
    }
    Ok(judged)
}

/// Every pseudo-header and every kind of field, in the order their memo words number them.
const PSEUDOS: [Pseudo; 6] = Pseudo::ALL;
const KINDS: [Kind; 13] = [
    Kind::Host,
    Kind::ContentLength,
    Kind::TransferEncoding,
    Kind::Connection,
    Kind::Te,
    Kind::HopByHop,
    Kind::Upgrade,
    Kind::Expect,
    Kind::ContentType,
    Kind::ForwardedFor,
    Kind::ForwardedProto,
    Kind::ForwardedHost,
    Kind::Other,
];

impl Name {
    /// As a memo word: the high byte says pseudo-header (1) or regular field (2), the low one
    /// which; never 0, the word of an entry not judged yet. None for a name not numbered above.
    fn to_memo(self) -> Option<u16> {
        let (class, index) = match self {
            Name::Pseudo(p) => (1, PSEUDOS.iter().position(|&q| q == p)?),
            Name::Regular(k) => (2, KINDS.iter().position(|&j| j == k)?),
        };
        Some(class << 8 | u16::try_from(index).ok()?)
    }

    fn from_memo(word: u16) -> Option<Name> {
        let index = usize::from(word & 0xff);
        match word >> 8 {
            1 => PSEUDOS.get(index).copied().map(Name::Pseudo),
            2 => KINDS.get(index).copied().map(Name::Regular),
            _ => None,
        }
    }
}

/// The rules every field is held to, whatever the message.
pub(super) fn field(name: &[u8], value: &[u8]) -> Result<Name, Malformed> {
    let class = classify(name)?;
    check_value(value)?;
    if let Name::Regular(kind) = class {
        connection_specific(kind, name, value)?;
    }
    Ok(class)
}

/// A pseudo-header by its exact name (an unknown one is malformed, §8.3), or a regular field
/// whose name is lower-case token characters (§8.2, §8.2.1: no upper case, no colon inside).
fn classify(name: &[u8]) -> Result<Name, Malformed> {
    if name.first() == Some(&b':') {
        return Pseudo::of(name)
            .map(Name::Pseudo)
            .ok_or(Malformed::UnknownPseudo);
    }
    if name.is_empty() {
        return Err(Malformed::EmptyName);
    }
    for &b in name {
        if !LOWER_TCHAR[usize::from(b)] {
            return Err(if b.is_ascii_uppercase() {
                Malformed::UppercaseName
            } else {
                Malformed::BadNameChar
            });
        }
    }
    // Lower case by the loop above.
    Ok(Name::Regular(Kind::of_lower(name)))
}

/// §8.2.1 forbids NUL, CR and LF anywhere, and SP or HTAB first or last. The other control
/// characters and DEL are invalid too (RFC 9110 §5.5) and weir's HTTP/1 parser refuses them:
/// refused here as well, they cannot reach an HTTP/1 upstream by way of HTTP/2.
fn check_value(value: &[u8]) -> Result<(), Malformed> {
    // Folded over every byte, not stopped at the first bad one: values are mostly good, and a
    // loop without an early exit is one the compiler turns into vector compares.
    let bad = value.iter().fold(false, |bad, &b| {
        bad | ((b < 0x20) & (b != b'\t')) | (b == 0x7f)
    });
    if bad {
        return Err(Malformed::BadValueChar);
    }
    let is_ws = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
    if is_ws(value.first()) || is_ws(value.last()) {
        return Err(Malformed::ValueWhitespace);
    }
    Ok(())
}

/// Whether HTTP/2 forbids the field (§8.2.2): what this side refuses to receive, a sender
/// leaves out of what it sends (an HTTP/1 upstream's `connection` says nothing about this hop).
/// `name` in lower case, as a `HeaderName` holds it.
pub fn is_connection_specific(name: &[u8], value: &[u8]) -> bool {
    connection_specific(Kind::of_lower(name), name, value).is_err()
}

/// §8.2.2: HTTP/2 has no connection-level fields, and TE may only say `trailers`.
fn connection_specific(kind: Kind, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
    let field = match kind {
        Kind::Connection => ConnectionField::Connection,
        Kind::TransferEncoding => ConnectionField::TransferEncoding,
        Kind::Upgrade => ConnectionField::Upgrade,
        // `Kind::of` puts three names here. HTTP2-Settings is not one §8.2.2 names (RFC 9113
        // §11.1 only marks it obsoleted): let through, and dropped on forwarding as hop-by-hop.
        Kind::HopByHop => match name {
            b"keep-alive" => ConnectionField::KeepAlive,
            b"proxy-connection" => ConnectionField::ProxyConnection,
            _ => return Ok(()),
        },
        Kind::Te if !value.eq_ignore_ascii_case(b"trailers") => {
            return Err(Malformed::TeNotTrailers)
        }
        _ => return Ok(()),
    };
    Err(Malformed::ConnectionSpecific(field))
}

/// Content-Length is one number, digits only (RFC 9110 §8.6), by the rules weir's HTTP/1 side
/// holds the same message to, so that a length refused there cannot come in by way of HTTP/2:
/// a request has one such field (`h1::strict::request_framing`); a response may repeat it
/// with the same number (`h1::head`'s response framing: upstreams are served, not policed),
/// never as a list. `seen` holds the number of an earlier field.
pub(super) fn content_length(
    value: &[u8],
    seen: &mut Option<u64>,
    repeats: Repeats,
) -> Result<(), Malformed> {
    let n = parse_length(value).ok_or(Malformed::BadContentLength)?;
    match (*seen, repeats) {
        (None, _) => *seen = Some(n),
        (Some(before), Repeats::OfTheSameNumber) if before == n => {}
        _ => return Err(Malformed::ManyContentLengths),
    }
    Ok(())
}

/// Whether a message may carry Content-Length more than once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Repeats {
    /// Requests.
    Refused,
    /// Responses.
    OfTheSameNumber,
}

/// An RFC 9110 §5.6.2 token: a method, or an upgrade protocol's name.
pub(super) fn is_token(value: &[u8]) -> bool {
    !value.is_empty() && value.iter().all(|&b| TCHAR[usize::from(b)])
}

#[cfg(test)]
mod tests;
