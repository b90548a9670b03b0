//! The 9-octet header every HTTP/2 frame starts with (RFC 9113 §4.1), the frame types it names
//! (§6) and the flag bits.

use std::fmt;

/// Octets in a frame header: length (24 bits), type, flags, reserved bit and stream (31 bits).
pub const HEAD_LEN: usize = 9;

/// SETTINGS_MAX_FRAME_SIZE's initial value, and the smallest one a peer may advertise (§6.5.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;

/// The largest SETTINGS_MAX_FRAME_SIZE a peer may advertise: what the 24-bit length carries.
pub const MAX_ALLOWED_FRAME_SIZE: u32 = 0xff_ffff;

/// The low 31 bits of a stream identifier, stream dependency or window increment. The top bit is
/// reserved: sent as 0 and ignored on receipt (§4.1, §6.3, §6.8, §6.9).
pub(super) const U31: u32 = 0x7fff_ffff;

/// Flag bits. Each means something only on the frame types named; a flag a frame type does not
/// define is ignored on receipt (§4.1).
pub mod flag {
    /// DATA, HEADERS: the sender's last frame on this stream.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: this frame acknowledges the peer's.
    pub const ACK: u8 = 0x1;
    /// HEADERS, PUSH_PROMISE, CONTINUATION: the field block ends with this frame.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS, PUSH_PROMISE: a Pad Length octet leads the payload, padding ends it.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: exclusive bit, stream dependency and weight lead the field block fragment.
    pub const PRIORITY: u8 = 0x20;
}

/// A frame type (§6). Types this codec does not know are kept, not refused: §4.1 and §5.5 say a
/// receiver ignores and discards them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Data,
    Headers,
    Priority,
    RstStream,
    Settings,
    PushPromise,
    Ping,
    GoAway,
    WindowUpdate,
    Continuation,
    /// Any other type octet. `From<u8>` never makes one of a known type's octet.
    Unknown(u8),
}

impl From<u8> for Kind {
    fn from(byte: u8) -> Kind {
        match byte {
            0x0 => Kind::Data,
            0x1 => Kind::Headers,
            0x2 => Kind::Priority,
            0x3 => Kind::RstStream,
            0x4 => Kind::Settings,
            0x5 => Kind::PushPromise,
            0x6 => Kind::Ping,
            0x7 => Kind::GoAway,
            0x8 => Kind::WindowUpdate,
            0x9 => Kind::Continuation,
            other => Kind::Unknown(other),
        }
    }
}

impl From<Kind> for u8 {
    fn from(kind: Kind) -> u8 {
        match kind {
            Kind::Data => 0x0,
            Kind::Headers => 0x1,
            Kind::Priority => 0x2,
            Kind::RstStream => 0x3,
            Kind::Settings => 0x4,
            Kind::PushPromise => 0x5,
            Kind::Ping => 0x6,
            Kind::GoAway => 0x7,
            Kind::WindowUpdate => 0x8,
            Kind::Continuation => 0x9,
            Kind::Unknown(byte) => byte,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Kind::Data => "DATA",
            Kind::Headers => "HEADERS",
            Kind::Priority => "PRIORITY",
            Kind::RstStream => "RST_STREAM",
            Kind::Settings => "SETTINGS",
            Kind::PushPromise => "PUSH_PROMISE",
            Kind::Ping => "PING",
            Kind::GoAway => "GOAWAY",
            Kind::WindowUpdate => "WINDOW_UPDATE",
            Kind::Continuation => "CONTINUATION",
            Kind::Unknown(byte) => return write!(f, "unknown (type {byte:#04x})"),
        };
        f.write_str(name)
    }
}

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Payload length, not counting these 9 octets: 24 bits.
    pub len: u32,
    pub kind: Kind,
    pub flags: u8,
    /// Stream identifier, 31 bits: the reserved bit is cleared on read and never written.
    pub stream: u32,
}

impl Head {
    pub fn parse(bytes: &[u8; HEAD_LEN]) -> Head {
        let [l0, l1, l2, kind, flags, s0, s1, s2, s3] = *bytes;
        Head {
            len: u32::from_be_bytes([0, l0, l1, l2]),
            kind: Kind::from(kind),
            flags,
            stream: u32::from_be_bytes([s0, s1, s2, s3]) & U31,
        }
    }

    /// The header at the start of `buf`; `None` if fewer than 9 octets are there.
    pub fn read(buf: &[u8]) -> Option<Head> {
        buf.first_chunk::<HEAD_LEN>().map(Head::parse)
    }

    /// Appends the 9 octets. `len` must fit 24 bits: the writers here never build a longer
    /// frame, and `parse` never returns one. Debug builds assert it; release builds write the
    /// low 24 bits.
    pub fn write(&self, out: &mut Vec<u8>) {
        debug_assert!(
            self.len <= MAX_ALLOWED_FRAME_SIZE,
            "frame length {}",
            self.len
        );
        let [_, l0, l1, l2] = self.len.to_be_bytes();
        let [s0, s1, s2, s3] = (self.stream & U31).to_be_bytes();
        out.extend_from_slice(&[l0, l1, l2, u8::from(self.kind), self.flags, s0, s1, s2, s3]);
    }

    /// Whether any of the bits in `flag` is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_field_big_endian() {
        let head = Head::parse(&[0x01, 0x02, 0x03, 0x01, 0x25, 0x00, 0x00, 0x01, 0x05]);
        assert_eq!(head.len, 0x01_0203);
        assert_eq!(head.kind, Kind::Headers);
        assert_eq!(
            head.flags,
            flag::END_STREAM | flag::END_HEADERS | flag::PRIORITY
        );
        assert_eq!(head.stream, 261);
        assert!(head.has(flag::PRIORITY));
        assert!(!head.has(flag::PADDED));
    }

    #[test]
    fn reserved_bit_is_cleared_on_read_and_never_written() {
        let head = Head::parse(&[0, 0, 0, 0x8, 0, 0x80, 0, 0, 0x03]);
        assert_eq!(head.stream, 3);
        let mut out = Vec::new();
        Head {
            stream: 0x8000_0003,
            ..head
        }
        .write(&mut out);
        assert_eq!(out, [0, 0, 0, 0x8, 0, 0, 0, 0, 0x03]);
    }

    #[test]
    fn write_then_parse_gives_the_same_head_for_every_type_octet() {
        for byte in 0..=u8::MAX {
            let head = Head {
                len: MAX_ALLOWED_FRAME_SIZE - u32::from(byte),
                kind: Kind::from(byte),
                flags: byte.rotate_left(3),
                stream: U31 - u32::from(byte),
            };
            let mut out = Vec::new();
            head.write(&mut out);
            assert_eq!(out.len(), HEAD_LEN);
            assert_eq!(Head::read(&out), Some(head));
            assert_eq!(u8::from(head.kind), byte);
        }
    }

    #[test]
    fn unknown_types_are_kept_and_known_octets_never_become_unknown() {
        assert_eq!(Kind::from(0x0a), Kind::Unknown(0x0a));
        assert_eq!(Kind::from(0xff), Kind::Unknown(0xff));
        assert!((0..=9).all(|b| !matches!(Kind::from(b), Kind::Unknown(_))));
        assert_eq!(Kind::Unknown(0x0a).to_string(), "unknown (type 0x0a)");
        assert_eq!(Kind::WindowUpdate.to_string(), "WINDOW_UPDATE");
    }

    #[test]
    fn read_needs_nine_octets_and_ignores_what_follows() {
        let bytes = [0, 0, 4, 0x3, 0, 0, 0, 0, 1, 0xaa];
        assert_eq!(Head::read(&bytes[..8]), None);
        assert_eq!(Head::read(&[]), None);
        let head = Head::read(&bytes).map(|h| (h.len, h.kind, h.stream));
        assert_eq!(head, Some((4, Kind::RstStream, 1)));
    }
}
