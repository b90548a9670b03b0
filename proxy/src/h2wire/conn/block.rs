//! What a received field block is: its stream and purpose, the checks its fields go through,
//! and what decoding it came to.

use super::super::common::Fields;
use super::super::frame::ErrorCode;
use super::super::hpack::Field;
use super::super::message::{RequestCheck, ResponseCheck, TrailerCheck};

/// A field block's frame: its stream, what it is for and what its HEADERS frame said. While
/// CONTINUATIONs are to come (no END_HEADERS), its fragments are in `Conn::block`.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    pub stream: u32,
    pub target: Target,
    pub end_stream: bool,
    /// A stream error the HEADERS frame carried (§5.3.1), for once the block is decoded.
    pub stream_error: Option<(ErrorCode, &'static str)>,
}

/// What a field block is for, decided at its HEADERS frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A message's head: a new request, or a response (interim or final).
    Head,
    /// An open stream's trailers.
    Trailers,
    /// A stream no longer tracked: decoded for HPACK's sake and dropped (§5.1 "closed").
    Drop,
}

/// A head's check as the decoder feeds it: refusals are latched and read at `finish`.
pub trait HeadCheck {
    fn check(&mut self, field: Field<'_>);
}

impl HeadCheck for ResponseCheck {
    fn check(&mut self, field: Field<'_>) {
        let _ = self.decoded(field);
    }
}

impl HeadCheck for RequestCheck {
    fn check(&mut self, field: Field<'_>) {
        let _ = self.decoded(field);
    }
}

/// A block's fields as they are checked.
pub enum Section<H> {
    Head(H),
    Trailers(TrailerCheck),
    Drop,
}

/// A block decoded: its fields, their check, and whether the list was above this side's
/// SETTINGS_MAX_HEADER_LIST_SIZE (decoded to its end all the same).
pub struct Decoded<H> {
    pub section: Section<H>,
    pub fields: Fields,
    pub too_large: bool,
}

/// The size of the last head and of the last trailers a connection decoded: the room the next
/// one's fields are given in the section buffer. A connection's messages are alike (a gRPC
/// channel's calls carry the same fields), and a block says little of what it decodes to: a
/// request whose fields are all in the dynamic table is a few octets for a few hundred. Growing
/// from nothing took three or four reallocations a section, 6 % of a gRPC call's instructions
/// (benches/README.md, session 21).
#[derive(Clone, Copy, Debug, Default)]
pub struct SectionSizes {
    head: usize,
    trailers: usize,
}

/// At most this much room is kept from one section for the next: one large section does not
/// make every later one ask for as much.
const MOST_ROOM: usize = 2_048;

impl SectionSizes {
    /// Room for a section of `target` decoded from `block_len` octets: the last one's size,
    /// and no less than the block itself (a field most often decodes to more octets than it
    /// takes in a block: Huffman codes and table indexes are shorter than what they stand for).
    pub fn room(&self, target: Target, block_len: usize) -> usize {
        let octets = match target {
            Target::Head => self.head,
            Target::Trailers => self.trailers,
            Target::Drop => return 0,
        };
        octets.max(block_len)
    }

    /// What a section of `target` came to.
    pub fn remember(&mut self, target: Target, octets: usize) {
        let size = octets.min(MOST_ROOM);
        match target {
            Target::Head => self.head = size,
            Target::Trailers => self.trailers = size,
            Target::Drop => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_gets_the_last_of_its_kind_s_room_capped_and_never_less_than_its_block() {
        let mut sizes = SectionSizes::default();
        assert_eq!(
            sizes.room(Target::Head, 10),
            10,
            "the block, before any section"
        );
        sizes.remember(Target::Head, 300);
        sizes.remember(Target::Trailers, 20);
        assert_eq!(sizes.room(Target::Head, 10), 300);
        assert_eq!(sizes.room(Target::Trailers, 10), 20);
        assert_eq!(sizes.room(Target::Head, 500), 500);
        assert_eq!(
            sizes.room(Target::Drop, 500),
            0,
            "a dropped block keeps nothing"
        );
        sizes.remember(Target::Head, 100_000);
        assert_eq!(sizes.room(Target::Head, 10), MOST_ROOM);
    }
}
