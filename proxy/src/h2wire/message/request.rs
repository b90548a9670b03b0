//! A request's header section, field by field (RFC 9113 §8.3.1, §8.5; RFC 8441 §4).

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use super::super::hpack::Field;
use super::malformed::{Malformed, Pseudo};
use super::rules::{self, Name};
use super::target::{
    check_authority, check_method, check_path, check_path_form, check_protocol, check_scheme,
};
use crate::field::Kind;

/// Holds a request's fields to §8's rules as HPACK hands them over, keeping copies of the
/// pseudo-headers' values only. After a refusal every later call returns the same refusal
/// without looking: the decoder must still read the block to its end (HPACK state, §4.3), so
/// its callback may go on calling.
#[derive(Debug)]
pub struct RequestCheck {
    extended_connect: bool,
    bytes: BytesMut,
    method: Option<Range<usize>>,
    scheme: Option<Range<usize>>,
    authority: Option<Range<usize>>,
    path: Option<Range<usize>>,
    protocol: Option<Range<usize>>,
    /// `authority` is Host's value: no `:authority` came.
    authority_from_host: bool,
    host: bool,
    /// A regular field has come: no pseudo-header may follow (§8.3).
    regular: bool,
    content_length: Option<u64>,
    te_trailers: bool,
    failed: Option<Malformed>,
}

/// What routing needs of a request that held every rule.
///
/// The values are copied into one buffer, addressed by ranges: at most one allocation for a
/// usual request where a `Box<[u8]>` each would be up to five, none when the connection gave
/// the check room in its section buffer (`RequestCheck::with_room`); the values are read
/// together and dropped together, and shared without a copy (`authority_shared`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    bytes: Bytes,
    method: Range<usize>,
    scheme: Option<Range<usize>>,
    authority: Option<Range<usize>>,
    path: Option<Range<usize>>,
    protocol: Option<Range<usize>>,
    /// Content-Length, which the DATA frames' lengths must add up to (§8.1.1).
    pub content_length: Option<u64>,
    /// `te: trailers` came: the client accepts trailers (gRPC sends it).
    pub te_trailers: bool,
}

/// Room for a usual request's method, scheme, authority and path.
pub const HEAD_ROOM: usize = 128;

impl RequestCheck {
    /// `extended_connect`: this side sent SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 (RFC 8441 §3),
    /// so `:protocol` may come.
    pub fn new(extended_connect: bool) -> Self {
        RequestCheck::with_room(extended_connect, BytesMut::new())
    }

    /// A check that copies the pseudo-headers' values into `room` (grown like any `BytesMut`
    /// when they do not fit).
    pub fn with_room(extended_connect: bool, room: BytesMut) -> Self {
        RequestCheck {
            extended_connect,
            bytes: room,
            method: None,
            scheme: None,
            authority: None,
            path: None,
            protocol: None,
            authority_from_host: false,
            host: false,
            regular: false,
            content_length: None,
            te_trailers: false,
            failed: None,
        }
    }

    /// One field, in the order it came.
    pub fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        self.decoded(Field::plain(name, value))
    }

    /// One field as HPACK handed it over: one sent by its dynamic table index is held to the
    /// common rules once for that entry (`rules::remembered`).
    pub fn decoded(&mut self, field: Field<'_>) -> Result<(), Malformed> {
        if let Some(first) = self.failed {
            return Err(first);
        }
        self.check(field)
            .inspect_err(|&refusal| self.failed = Some(refusal))
    }

    /// The rules on the header section as a whole, once its last field came.
    pub fn finish(self) -> Result<RequestHead, Malformed> {
        if let Some(first) = self.failed {
            return Err(first);
        }
        let method = self.method.ok_or(Malformed::NoMethod)?;
        let pseudo_authority = self.authority.is_some() && !self.authority_from_host;
        let head = RequestHead {
            bytes: self.bytes.freeze(),
            method,
            scheme: self.scheme,
            authority: self.authority,
            path: self.path,
            protocol: self.protocol,
            content_length: self.content_length,
            te_trailers: self.te_trailers,
        };
        let connect = head.method() == b"CONNECT";
        if head.protocol.is_some() {
            // Extended CONNECT (RFC 8441 §4): a CONNECT with a whole target, checked as any
            // request's below. `:authority` itself, not Host, as for CONNECT.
            if !connect {
                return Err(Malformed::ProtocolWithoutConnect);
            }
            if !pseudo_authority {
                return Err(Malformed::NoAuthority);
            }
        } else if connect {
            // §8.5: the target is `:authority` (host and port) and nothing else.
            if !pseudo_authority {
                return Err(Malformed::NoAuthority);
            }
            if head.scheme.is_some() {
                return Err(Malformed::SchemeInConnect);
            }
            if head.path.is_some() {
                return Err(Malformed::PathInConnect);
            }
            return Ok(head);
        }
        let scheme = head.scheme().ok_or(Malformed::NoScheme)?;
        let path = head.path().ok_or(Malformed::NoPath)?;
        check_path_form(head.method(), scheme, path)?;
        Ok(head)
    }

    fn check(&mut self, field: Field<'_>) -> Result<(), Malformed> {
        let value = field.value;
        match rules::remembered(field.name, value, field.memo)? {
            Name::Pseudo(pseudo) => self.pseudo(pseudo, value),
            Name::Regular(kind) => self.regular(kind, value),
        }
    }

    fn pseudo(&mut self, pseudo: Pseudo, value: &[u8]) -> Result<(), Malformed> {
        if self.regular {
            return Err(Malformed::PseudoAfterRegular);
        }
        type Syntax = fn(&[u8]) -> Result<(), Malformed>;
        let (slot, syntax): (_, Syntax) = match pseudo {
            Pseudo::Method => (&mut self.method, check_method),
            Pseudo::Scheme => (&mut self.scheme, check_scheme),
            Pseudo::Authority => (&mut self.authority, check_authority),
            Pseudo::Path => (&mut self.path, check_path),
            Pseudo::Protocol if self.extended_connect => (&mut self.protocol, check_protocol),
            // RFC 8441 §3: a peer may send it only once this side enabled it.
            Pseudo::Protocol => return Err(Malformed::ProtocolNotEnabled),
            Pseudo::Status => return Err(Malformed::ResponsePseudoInRequest),
        };
        if slot.is_some() {
            return Err(Malformed::RepeatedPseudo(pseudo));
        }
        syntax(value)?;
        *slot = Some(store(&mut self.bytes, value));
        Ok(())
    }

    fn regular(&mut self, kind: Kind, value: &[u8]) -> Result<(), Malformed> {
        self.regular = true;
        match kind {
            Kind::Host => self.host(value),
            Kind::ContentLength => {
                rules::content_length(value, &mut self.content_length, rules::Repeats::Refused)
            }
            // `rules::field` lets TE through only as `trailers`.
            Kind::Te => {
                self.te_trailers = true;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Host: from a client that translates HTTP/1 (§8.3.1), in place of `:authority` or
    /// beside it. Every pseudo-header came before it, so whether `:authority` did is known.
    fn host(&mut self, value: &[u8]) -> Result<(), Malformed> {
        if std::mem::replace(&mut self.host, true) {
            return Err(Malformed::ManyHosts);
        }
        match &self.authority {
            Some(range) => {
                // §8.3.1 says a Host that differs SHOULD make the request malformed; weir holds
                // it a MUST: routing would read one and the upstream might read the other.
                let authority = self.bytes.get(range.clone()).unwrap_or_default();
                if !authority.eq_ignore_ascii_case(value) {
                    return Err(Malformed::HostMismatch);
                }
            }
            None => {
                check_authority(value).map_err(|_| Malformed::BadHost)?;
                self.authority = Some(store(&mut self.bytes, value));
                self.authority_from_host = true;
            }
        }
        Ok(())
    }
}

/// Appends `value` to `bytes`, and where it went.
fn store(bytes: &mut BytesMut, value: &[u8]) -> Range<usize> {
    if bytes.capacity() == 0 {
        bytes.reserve(HEAD_ROOM);
    }
    let start = bytes.len();
    bytes.extend_from_slice(value);
    start..bytes.len()
}

impl RequestHead {
    pub fn method(&self) -> &[u8] {
        self.bytes.get(self.method.clone()).unwrap_or_default()
    }

    /// Absent only from a CONNECT without `:protocol`.
    pub fn scheme(&self) -> Option<&[u8]> {
        self.get(&self.scheme)
    }

    /// `:authority`, or Host where no `:authority` came; absent if neither did.
    pub fn authority(&self) -> Option<&[u8]> {
        self.get(&self.authority)
    }

    /// Absent only from a CONNECT without `:protocol`.
    pub fn path(&self) -> Option<&[u8]> {
        self.get(&self.path)
    }

    /// Extended CONNECT's `:protocol` (RFC 8441), e.g. `websocket`.
    pub fn protocol(&self) -> Option<&[u8]> {
        self.get(&self.protocol)
    }

    /// `authority`, sharing the head's buffer rather than copied.
    pub fn authority_shared(&self) -> Option<Bytes> {
        self.share(&self.authority)
    }

    /// `path`, sharing the head's buffer rather than copied.
    pub fn path_shared(&self) -> Option<Bytes> {
        self.share(&self.path)
    }

    fn get(&self, range: &Option<Range<usize>>) -> Option<&[u8]> {
        range.clone().and_then(|r| self.bytes.get(r))
    }

    fn share(&self, range: &Option<Range<usize>>) -> Option<Bytes> {
        let range = range.clone()?;
        self.bytes.get(range.clone())?;
        Some(self.bytes.slice(range))
    }
}

#[cfg(test)]
mod tests;
