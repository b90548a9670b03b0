//! A response's header section, field by field (RFC 9113 §8.3.2).

use super::super::hpack::Field;
use super::malformed::{Malformed, Pseudo};
use super::rules::{self, Name};
use crate::field::Kind;

/// Holds a response's fields to §8's rules as HPACK hands them over; each header section an
/// interim (1xx) response included. After a refusal every later call returns the same refusal
/// (see `RequestCheck`).
#[derive(Debug, Default)]
pub struct ResponseCheck {
    status: Option<u16>,
    /// A regular field has come: no pseudo-header may follow (§8.3).
    regular: bool,
    content_length: Option<u64>,
    failed: Option<Malformed>,
}

/// What a response that held every rule says of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    /// Content-Length, which the DATA frames' lengths must add up to (§8.1.1) — unless the
    /// response has no content by definition (a response to HEAD, 304; RFC 9110 §6.4.1), which
    /// only the engine knows.
    pub content_length: Option<u64>,
}

impl ResponseCheck {
    pub fn new() -> Self {
        Self::default()
    }

    /// One field, in the order it came.
    pub fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        self.decoded(Field::plain(name, value))
    }

    /// One field as HPACK handed it over (see `RequestCheck::decoded`).
    pub fn decoded(&mut self, field: Field<'_>) -> Result<(), Malformed> {
        if let Some(first) = self.failed {
            return Err(first);
        }
        self.check(field)
            .inspect_err(|&refusal| self.failed = Some(refusal))
    }

    /// The rules on the header section as a whole, once its last field came.
    pub fn finish(self) -> Result<ResponseHead, Malformed> {
        if let Some(first) = self.failed {
            return Err(first);
        }
        Ok(ResponseHead {
            status: self.status.ok_or(Malformed::NoStatus)?,
            content_length: self.content_length,
        })
    }

    fn check(&mut self, field: Field<'_>) -> Result<(), Malformed> {
        let value = field.value;
        match rules::remembered(field.name, value, field.memo)? {
            Name::Pseudo(_) if self.regular => Err(Malformed::PseudoAfterRegular),
            Name::Pseudo(Pseudo::Status) => {
                if self.status.is_some() {
                    return Err(Malformed::RepeatedPseudo(Pseudo::Status));
                }
                self.status = Some(status(value)?);
                Ok(())
            }
            Name::Pseudo(_) => Err(Malformed::RequestPseudoInResponse),
            Name::Regular(kind) => {
                self.regular = true;
                if kind == Kind::ContentLength {
                    rules::content_length(
                        value,
                        &mut self.content_length,
                        rules::Repeats::OfTheSameNumber,
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// `:status` is the three-digit code alone (§8.3.2; RFC 9110 §15: 100 to 599). 101 Switching
/// Protocols does not exist in HTTP/2 (§8.6): the connection cannot change protocol.
fn status(value: &[u8]) -> Result<u16, Malformed> {
    let &[a, b, c] = value else {
        return Err(Malformed::BadStatus);
    };
    if !(a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit()) {
        return Err(Malformed::BadStatus);
    }
    let code = [a, b, c]
        .iter()
        .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    match code {
        101 => Err(Malformed::SwitchingProtocols),
        100..=599 => Ok(code),
        _ => Err(Malformed::BadStatus),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(fields: &[(&str, &str)]) -> Result<ResponseHead, Malformed> {
        let mut check = ResponseCheck::new();
        for (name, value) in fields {
            // A refusal is latched: `finish` returns it.
            let _ = check.field(name.as_bytes(), value.as_bytes());
        }
        check.finish()
    }

    #[test]
    fn a_grpc_response() {
        let head = response(&[
            (":status", "200"),
            ("content-type", "application/grpc"),
            ("grpc-encoding", "identity"),
        ]);
        let expected = ResponseHead {
            status: 200,
            content_length: None,
        };
        assert_eq!(head, Ok(expected));
    }

    #[test]
    fn status_is_one_three_digit_code() {
        for (value, code) in [("100", 100), ("204", 204), ("304", 304), ("599", 599)] {
            let head = response(&[(":status", value), ("content-length", "0")]);
            assert_eq!(
                head.map(|h| (h.status, h.content_length)),
                Ok((code, Some(0)))
            );
        }
        for bad in ["", "20", "2000", "099", "600", "999", "20a", "+20", "200 "] {
            let got = response(&[(":status", bad)]);
            let want = if bad == "200 " {
                Malformed::ValueWhitespace
            } else {
                Malformed::BadStatus
            };
            assert_eq!(got, Err(want), "{bad:?}");
        }
        let switching = Err(Malformed::SwitchingProtocols);
        assert_eq!(response(&[(":status", "101")]), switching);
        assert_eq!(response(&[("server", "x")]), Err(Malformed::NoStatus));
        let twice = [(":status", "200"), (":status", "200")];
        let repeated = Err(Malformed::RepeatedPseudo(Pseudo::Status));
        assert_eq!(response(&twice), repeated);
    }

    #[test]
    fn pseudo_headers_are_the_response_s_and_come_first() {
        let late = [(":status", "200"), ("server", "x"), (":status", "200")];
        assert_eq!(response(&late), Err(Malformed::PseudoAfterRegular));
        for name in [":method", ":scheme", ":authority", ":path", ":protocol"] {
            let got = response(&[(":status", "200"), (name, "x")]);
            assert_eq!(got, Err(Malformed::RequestPseudoInResponse), "{name}");
        }
        assert_eq!(
            response(&[(":reason", "OK")]),
            Err(Malformed::UnknownPseudo)
        );
    }

    #[test]
    fn common_rules_and_content_length_hold_in_responses() {
        let fields = [(":status", "200"), ("content-length", "5")];
        assert_eq!(response(&fields).map(|h| h.content_length), Ok(Some(5)));
        let twice = [
            (":status", "200"),
            ("content-length", "5"),
            ("content-length", "5"),
        ];
        assert_eq!(response(&twice).map(|h| h.content_length), Ok(Some(5)));
        let differ = [
            (":status", "200"),
            ("content-length", "5"),
            ("content-length", "6"),
        ];
        assert_eq!(response(&differ), Err(Malformed::ManyContentLengths));
        let list = [(":status", "200"), ("content-length", "5, 5")];
        assert_eq!(response(&list), Err(Malformed::BadContentLength));
        let chunked = [(":status", "200"), ("transfer-encoding", "chunked")];
        assert!(matches!(
            response(&chunked),
            Err(Malformed::ConnectionSpecific(_))
        ));
        let upper = [(":status", "200"), ("Server", "x")];
        assert_eq!(response(&upper), Err(Malformed::UppercaseName));
        let cookies = [
            (":status", "200"),
            ("set-cookie", "a=1"),
            ("set-cookie", "b=2"),
        ];
        assert!(response(&cookies).is_ok());
    }
}
