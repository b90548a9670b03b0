//! What makes a request head one weir refuses, by RFC 9112 and RFC 9110, written once: the
//! passthrough engine answers a refused head itself, and the gate in front of hyper's HTTP/1
//! server (`gate`) refuses the same heads by the same rules, so the two engines cannot differ
//! on what they forward. Each refusal is answered and the connection closes: after a head
//! weir could not frame, nothing that follows on the connection can be trusted to be a request.

use std::ops::Range;

use http::StatusCode;

use crate::authority::is_authority;
use crate::field::{tokens, Field, Kind};
use crate::framing::{parse_length, Framing};

/// Why a request head is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not HTTP/1 syntax, as `syntax` reads it (tokens, field syntax, no obs-fold, no
    /// whitespace before a colon, one space between request-line parts).
    Malformed,
    /// A line ends in LF alone (RFC 9112 §2.2 lets a recipient accept it; a proxy that does
    /// disagrees with upstreams that don't). `syntax` notes it; the head is refused if whole.
    BareLf,
    TooManyFields,
    HeadTooLarge,
    /// HTTP/1.1 without Host (RFC 9112 §3.2).
    NoHost,
    /// More than one Host field (RFC 9112 §3.2).
    ManyHosts,
    /// A Host value that is no authority (RFC 3986 §3.2).
    BadHost,
    /// Host disagrees with an absolute-form target's authority (RFC 9112 §3.2.2).
    HostMismatch,
    /// A target of no form a request may have (RFC 9112 §3.2), or with a fragment.
    BadTarget,
    /// Content-Length together with Transfer-Encoding (RFC 9112 §6.1: request smuggling).
    LengthAndChunked,
    /// Content-Length that is not one plain number, or several (RFC 9110 §8.6).
    BadLength,
    /// Transfer-Encoding whose codings are not exactly one `chunked` (RFC 9112 §6.1, §7).
    BadCoding,
    /// A coding other than chunked: weir does not decode bodies (RFC 9112 §6.1: 501).
    UnknownCoding,
    /// Transfer-Encoding in an HTTP/1.0 request (RFC 9112 §6.1).
    CodingInHttp10,
}

impl Refusal {
    const ALL: [Refusal; 14] = [
        Refusal::Malformed,
        Refusal::BareLf,
        Refusal::TooManyFields,
        Refusal::HeadTooLarge,
        Refusal::NoHost,
        Refusal::ManyHosts,
        Refusal::BadHost,
        Refusal::HostMismatch,
        Refusal::BadTarget,
        Refusal::LengthAndChunked,
        Refusal::BadLength,
        Refusal::BadCoding,
        Refusal::UnknownCoding,
        Refusal::CodingInHttp10,
    ];

    pub fn status(self) -> StatusCode {
        match self {
            Refusal::TooManyFields | Refusal::HeadTooLarge => {
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
            }
            Refusal::UnknownCoding => StatusCode::NOT_IMPLEMENTED,
            _ => StatusCode::BAD_REQUEST,
        }
    }

    /// The client is told this, and the log says it.
    pub fn cause(self) -> &'static str {
        match self {
            Refusal::Malformed => "malformed request head",
            Refusal::BareLf => "a line of the request head ends in LF without CR",
            Refusal::TooManyFields => "too many header fields",
            Refusal::HeadTooLarge => "request head too large",
            Refusal::NoHost => "HTTP/1.1 request without Host",
            Refusal::ManyHosts => "more than one Host field",
            Refusal::BadHost => "Host is not a valid authority",
            Refusal::HostMismatch => "Host disagrees with the request target",
            Refusal::BadTarget => "invalid request target",
            Refusal::LengthAndChunked => "Content-Length together with Transfer-Encoding",
            Refusal::BadLength => "invalid or repeated Content-Length",
            Refusal::BadCoding => "Transfer-Encoding must be exactly one chunked",
            Refusal::UnknownCoding => "transfer coding not implemented",
            Refusal::CodingInHttp10 => "Transfer-Encoding in an HTTP/1.0 request",
        }
    }

    /// A small number standing for it (the gate's sentinel carries it to hyper's side).
    pub fn code(self) -> u8 {
        Refusal::ALL.iter().position(|&r| r == self).unwrap_or(0) as u8
    }

    pub fn from_code(code: u8) -> Option<Refusal> {
        Refusal::ALL.get(usize::from(code)).copied()
    }
}

/// The form of a request target (RFC 9112 §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetForm {
    Origin,
    /// `http://authority/...`: the authority's range within the target.
    Absolute,
    /// CONNECT's `host:port`.
    Authority,
    /// OPTIONS `*`.
    Asterisk,
}

/// The target's form, and for absolute-form its authority (as a range of `target`).
pub fn target_form(
    method: &[u8],
    target: &[u8],
) -> Result<(TargetForm, Option<Range<usize>>), Refusal> {
    if target.contains(&b'#') {
        return Err(Refusal::BadTarget);
    }
    if method == b"CONNECT" {
        let ok = !target.is_empty() && !target.contains(&b'/') && is_authority(target);
        return if ok {
            Ok((TargetForm::Authority, None))
        } else {
            Err(Refusal::BadTarget)
        };
    }
    if target.first() == Some(&b'/') {
        return Ok((TargetForm::Origin, None));
    }
    if target == b"*" {
        return if method == b"OPTIONS" {
            Ok((TargetForm::Asterisk, None))
        } else {
            Err(Refusal::BadTarget)
        };
    }
    let scheme_len = [&b"http://"[..], b"https://"]
        .iter()
        .find(|s| target.len() >= s.len() && target[..s.len()].eq_ignore_ascii_case(s))
        .map(|s| s.len())
        .ok_or(Refusal::BadTarget)?;
    let rest = &target[scheme_len..];
    let end = rest
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    // No userinfo: `http://user@host/` would route on one host and name another.
    if authority.is_empty() || authority.contains(&b'@') || !is_authority(authority) {
        return Err(Refusal::BadTarget);
    }
    Ok((TargetForm::Absolute, Some(scheme_len..scheme_len + end)))
}

/// The Host rules: HTTP/1.1 needs exactly one; any Host must be an authority, and agree with
/// an absolute-form target. Returns the Host field's value range.
pub fn check_host(
    buf: &[u8],
    fields: &[Field],
    http11: bool,
    absolute_authority: Option<&[u8]>,
) -> Result<Option<Range<usize>>, Refusal> {
    let mut host: Option<Range<usize>> = None;
    for f in fields.iter().filter(|f| f.kind == Kind::Host) {
        if host.is_some() {
            return Err(Refusal::ManyHosts);
        }
        host = Some(f.value.clone());
    }
    let Some(range) = host else {
        return if http11 {
            Err(Refusal::NoHost)
        } else {
            Ok(None)
        };
    };
    let value = &buf[range.clone()];
    if !is_authority(value) {
        return Err(Refusal::BadHost);
    }
    if let Some(authority) = absolute_authority {
        if !authority.eq_ignore_ascii_case(value) {
            return Err(Refusal::HostMismatch);
        }
    }
    Ok(Some(range))
}

/// A request body's framing from Content-Length and Transfer-Encoding, strictly: one plain
/// Content-Length, or one `Transfer-Encoding: chunked`, or neither (no body).
pub fn request_framing(buf: &[u8], fields: &[Field], http11: bool) -> Result<Framing, Refusal> {
    let mut length: Option<u64> = None;
    let mut chunked = false;
    for f in fields {
        let value = &buf[f.value.clone()];
        match f.kind {
            Kind::ContentLength => {
                if length.is_some() {
                    return Err(Refusal::BadLength);
                }
                length = Some(parse_length(value).ok_or(Refusal::BadLength)?);
            }
            Kind::TransferEncoding => {
                if !http11 {
                    return Err(Refusal::CodingInHttp10);
                }
                if chunked {
                    return Err(Refusal::BadCoding);
                }
                // chunked only ever last, and once (RFC 9112 §7); no allocation to find out.
                let is_chunked = |c: &[u8]| c.eq_ignore_ascii_case(b"chunked");
                let (mut count, mut chunked_before, mut last) = (0, false, &b""[..]);
                for coding in tokens(value) {
                    chunked_before |= count > 0 && is_chunked(last);
                    last = coding;
                    count += 1;
                }
                match count {
                    0 => return Err(Refusal::BadCoding),
                    1 if is_chunked(last) => chunked = true,
                    _ if !is_chunked(last) || chunked_before => return Err(Refusal::BadCoding),
                    // gzip, chunked and the like: valid, but weir does not decode.
                    _ => return Err(Refusal::UnknownCoding),
                }
            }
            _ => {}
        }
    }
    match (chunked, length) {
        (true, Some(_)) => Err(Refusal::LengthAndChunked),
        (true, None) => Ok(Framing::Chunked),
        (false, Some(0) | None) => Ok(Framing::Empty),
        (false, Some(n)) => Ok(Framing::Length(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_a_code_that_comes_back() {
        for r in Refusal::ALL {
            assert_eq!(Refusal::from_code(r.code()), Some(r));
            assert!(!r.cause().is_empty());
        }
        assert_eq!(Refusal::from_code(200), None);
    }

    #[test]
    fn targets_of_each_form() {
        assert_eq!(
            target_form(b"GET", b"/a?b").map(|t| t.0),
            Ok(TargetForm::Origin)
        );
        assert_eq!(
            target_form(b"OPTIONS", b"*").map(|t| t.0),
            Ok(TargetForm::Asterisk)
        );
        assert_eq!(target_form(b"GET", b"*"), Err(Refusal::BadTarget));
        assert_eq!(
            target_form(b"CONNECT", b"a.example:443").map(|t| t.0),
            Ok(TargetForm::Authority)
        );
        let target = b"HTTP://a.example:8080/x?y";
        let (form, authority) = target_form(b"GET", target).unwrap_or((TargetForm::Origin, None));
        assert_eq!(form, TargetForm::Absolute);
        assert_eq!(authority.map(|r| &target[r]), Some(&b"a.example:8080"[..]));
        for bad in [
            &b"/a#frag"[..],
            b"a/b",
            b"http://user@a/",
            b"ftp://a/",
            b"http:///x",
        ] {
            assert_eq!(target_form(b"GET", bad), Err(Refusal::BadTarget), "{bad:?}");
        }
    }
}
