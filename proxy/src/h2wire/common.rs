//! What the client and server connections share: a section's fields as handed to the owner,
//! and the connection error either side ends with.

use std::fmt;
use std::ops::Range;

use bytes::{Bytes, BytesMut};

use super::frame::ErrorCode;
use super::hpack::Field;

/// A header or trailer section's regular fields (pseudo-headers are left out: the request's or
/// the response's head carries them), in the order they came.
///
/// Kept as one buffer of names and values and one list of where each ends: two allocations a
/// section at most, rather than two a field as a `Vec<(Bytes, Bytes)>` would take. HPACK hands
/// fields over from its table and Huffman scratch, so each is copied once whatever holds it;
/// a connection copies them into the spare room of one buffer shared by its sections
/// (`in_arena`), so most sections take no allocation for their octets at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    bytes: BytesMut,
    /// Per field: where its name ends and where its value ends in `bytes` (its name starts
    /// where the field before it ends), and whether it was sent never-indexed (§7.1.3 of
    /// RFC 7541: a proxy passes that on).
    ends: Vec<(usize, usize, bool)>,
}

/// The size of a connection's shared section buffer when it needs a new one: room for a
/// dozen usual heads (a gRPC request's fields are some 200 octets), so that one allocation
/// serves many sections. A section larger than this gets a buffer of its own size.
pub(crate) const ARENA: usize = 4_096;

impl Fields {
    /// A section whose octets go into `arena`'s spare room (at least `octets` of it, a new
    /// `ARENA`-sized buffer when there is not that much), with room for `fields` fields. Hand
    /// the room it did not use back with `rest_of_arena` once the section is whole.
    ///
    /// Why: the section's `Bytes` (`into_spans`) and every header value sliced from them share
    /// the arena's buffer, which is freed when the last of them goes, or reused when the
    /// connection holds the only reference (`BytesMut::reserve`). A buffer of its own cost each
    /// section two allocations: the buffer, and the shared count `Bytes` adds once sliced.
    pub(crate) fn in_arena(arena: &mut BytesMut, octets: usize, fields: usize) -> Fields {
        make_room(arena, octets);
        Fields {
            bytes: std::mem::take(arena),
            ends: Vec::with_capacity(fields),
        }
    }

    /// The arena's room this section did not use, for the next (`in_arena`, `carve`).
    pub(crate) fn rest_of_arena(&mut self) -> BytesMut {
        self.bytes.split_off(self.bytes.len())
    }

    /// The octets of names and values, and the number of fields.
    pub(crate) fn size(&self) -> (usize, usize) {
        (self.bytes.len(), self.ends.len())
    }

    pub(crate) fn push(&mut self, field: Field<'_>) {
        self.bytes.extend_from_slice(field.name);
        let name_end = self.bytes.len();
        self.bytes.extend_from_slice(field.value);
        self.ends
            .push((name_end, self.bytes.len(), field.never_indexed));
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Each field in order.
    pub fn iter(&self) -> impl Iterator<Item = Field<'_>> + '_ {
        let mut start = 0;
        self.ends
            .iter()
            .map(move |&(name_end, end, never_indexed)| {
                let name = self.bytes.get(start..name_end).unwrap_or_default();
                let value = self.bytes.get(name_end..end).unwrap_or_default();
                start = end;
                Field {
                    name,
                    value,
                    never_indexed,
                    memo: None,
                }
            })
    }

    /// The section's bytes, and each field's spans in them: its name, its value, and whether
    /// it was sent never-indexed. For an owner that keeps the bytes whole and hands out slices
    /// of them rather than a copy of each field.
    pub fn into_spans(
        self,
    ) -> (
        Bytes,
        impl Iterator<Item = (Range<usize>, Range<usize>, bool)>,
    ) {
        let mut start = 0;
        let spans = self
            .ends
            .into_iter()
            .map(move |(name_end, end, never_indexed)| {
                let name = start..name_end;
                start = end;
                (name, name_end..end, never_indexed)
            });
        (self.bytes.freeze(), spans)
    }

    /// The value of the first field named `name` (lower case, as HTTP/2 sends names).
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.iter().find(|f| f.name == name).map(|f| f.value)
    }
}

/// `octets` of `arena`'s spare room, split off for a writer of its own (a request head's
/// pseudo-header values, `message::RequestCheck`), which shares the arena's buffer as a
/// section does (`Fields::in_arena`).
pub(crate) fn carve(arena: &mut BytesMut, octets: usize) -> BytesMut {
    make_room(arena, octets);
    let rest = arena.split_off(octets);
    std::mem::replace(arena, rest)
}

/// At least `octets` of spare room in `arena`.
fn make_room(arena: &mut BytesMut, octets: usize) {
    if arena.capacity() == 0 {
        // The first section, the connection gave its buffer back (`Conn::quiet`), or the last
        // section filled it to the end: a new buffer, whose size is also what later ones get
        // (`BytesMut` keeps it).
        *arena = BytesMut::with_capacity(octets.max(ARENA));
    } else {
        arena.reserve(octets);
    }
}

/// A connection error (§5.4.1): GOAWAY with `code` is queued, and every stream is gone. The
/// owner writes the output and closes the connection. Every later `receive` returns it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnError {
    pub code: ErrorCode,
    /// The rule the peer broke.
    pub why: &'static str,
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/2 connection error {}: {}", self.code, self.why)
    }
}

impl std::error::Error for ConnError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn field<'a>(name: &'a [u8], value: &'a [u8], never_indexed: bool) -> Field<'a> {
        Field {
            name,
            value,
            never_indexed,
            memo: None,
        }
    }

    #[test]
    fn fields_keep_order_values_and_never_indexed() {
        let mut fields = Fields::default();
        assert!(fields.is_empty());
        fields.push(field(b"content-type", b"text/plain", false));
        fields.push(field(b"set-cookie", b"a=1", true));
        fields.push(field(b"x-empty", b"", false));
        fields.push(field(b"set-cookie", b"b=2", false));
        let all: Vec<_> = fields
            .iter()
            .map(|f| (f.name, f.value, f.never_indexed))
            .collect();
        assert_eq!(
            all,
            [
                (&b"content-type"[..], &b"text/plain"[..], false),
                (b"set-cookie", b"a=1", true),
                (b"x-empty", b"", false),
                (b"set-cookie", b"b=2", false),
            ]
        );
        assert_eq!(fields.len(), 4);
        assert_eq!(fields.get(b"set-cookie"), Some(&b"a=1"[..]));
        assert_eq!(fields.get(b"x-empty"), Some(&b""[..]));
        assert_eq!(fields.get(b"server"), None);
    }

    fn section(arena: &mut BytesMut, octets: usize, value: &[u8]) -> Bytes {
        let mut fields = Fields::in_arena(arena, octets, 1);
        fields.push(field(b"x", value, false));
        *arena = fields.rest_of_arena();
        fields.into_spans().0
    }

    #[test]
    fn sections_share_the_arena_and_reuse_it_once_theirs_are_gone() {
        let mut arena = BytesMut::new();
        let first = section(&mut arena, 10, b"one");
        let second = section(&mut arena, 10, b"two");
        assert_eq!(&first[..], b"xone");
        assert_eq!(&second[..], b"xtwo");
        let start = first.as_ptr() as usize;
        assert_eq!(
            second.as_ptr() as usize,
            start + first.len(),
            "the second section follows the first in the same buffer"
        );
        assert!(arena.capacity() >= ARENA - first.len() - second.len());

        // Too little room left, while the first two still hold the buffer: a new one, and
        // theirs stay as they were.
        let big = vec![b'v'; ARENA - 100];
        let third = section(&mut arena, ARENA + 1, &big);
        let third_at = third.as_ptr() as usize;
        assert!(!(start..start + ARENA).contains(&third_at));
        assert_eq!((&first[..], &second[..]), (&b"xone"[..], &b"xtwo"[..]));
        assert_eq!(third.len(), big.len() + 1);
        assert!(
            arena.capacity() > 0,
            "the new buffer's room beyond the third"
        );

        // Once every section sliced from a buffer is gone, the connection's own reference is
        // the last and the buffer is used again rather than another allocated.
        drop(third);
        let fourth = section(&mut arena, ARENA + 1, &big);
        assert_eq!(fourth.as_ptr() as usize, third_at, "the buffer reused");
    }
}
