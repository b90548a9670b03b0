//! A trailer section's fields (RFC 9113 §8.1): a request's or a response's, held to the
//! common field rules and carrying no pseudo-header at all.

use super::super::hpack::Field;
use super::malformed::Malformed;
use super::rules::{self, Name};

/// Holds a trailer section's fields to §8's rules. After a refusal every later call returns the
/// same refusal (see `RequestCheck`).
#[derive(Debug, Default)]
pub struct TrailerCheck {
    failed: Option<Malformed>,
}

impl TrailerCheck {
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
        let checked = match rules::remembered(field.name, field.value, field.memo) {
            Ok(Name::Pseudo(_)) => Err(Malformed::PseudoInTrailers),
            Ok(Name::Regular(_)) => Ok(()),
            Err(refusal) => Err(refusal),
        };
        checked.inspect_err(|&refusal| self.failed = Some(refusal))
    }

    /// The section's refusal, if a field had one.
    pub fn finish(self) -> Result<(), Malformed> {
        self.failed.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2wire::message::ConnectionField;

    #[test]
    fn grpc_trailers() {
        let mut trailers = TrailerCheck::new();
        assert_eq!(trailers.field(b"grpc-status", b"0"), Ok(()));
        assert_eq!(trailers.field(b"grpc-message", b""), Ok(()));
        assert_eq!(trailers.field(b"grpc-status-details-bin", b"CAA"), Ok(()));
        assert_eq!(trailers.finish(), Ok(()));
    }

    #[test]
    fn trailers_carry_no_pseudo_header() {
        for name in [":status", ":path", ":method", ":protocol"] {
            let mut trailers = TrailerCheck::new();
            assert_eq!(trailers.field(b"grpc-status", b"0"), Ok(()));
            let got = trailers.field(name.as_bytes(), b"200");
            assert_eq!(got, Err(Malformed::PseudoInTrailers), "{name}");
            assert_eq!(trailers.field(b"x", b"y"), Err(Malformed::PseudoInTrailers));
            assert_eq!(trailers.finish(), Err(Malformed::PseudoInTrailers));
        }
    }

    #[test]
    fn trailers_hold_the_common_rules() {
        let connection = Err(Malformed::ConnectionSpecific(ConnectionField::Connection));
        let mut trailers = TrailerCheck::new();
        assert_eq!(trailers.field(b"connection", b"close"), connection);
        assert_eq!(trailers.finish(), connection);
        let mut trailers = TrailerCheck::new();
        let upper = Err(Malformed::UppercaseName);
        assert_eq!(trailers.field(b"grpc-Status", b"0"), upper);
        let mut trailers = TrailerCheck::new();
        let value = Err(Malformed::BadValueChar);
        assert_eq!(trailers.field(b"grpc-message", b"a\nb"), value);
    }
}
