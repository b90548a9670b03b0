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
/// Kept as one buffer: each field a record of its flag, its name's and value's lengths, then
/// the name and value (`RECORD`). One buffer for the whole section rather than two
/// allocations a field, as a `Vec<(Bytes, Bytes)>` would take, and no list of where each
/// field ends beside it (which was an allocation of its own). HPACK hands fields over from its
/// table and Huffman scratch, so each is copied once whatever holds it; a connection copies
/// them into the spare room of one buffer shared by its sections (`in_arena`), so most
/// sections take no allocation at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    bytes: BytesMut,
    count: usize,
}

/// A field's record before its name and value: whether it was sent never-indexed (§7.1.3 of
/// RFC 7541: a proxy passes that on), then the name's and the value's lengths, u32 little
/// endian. A length always fits: a field is no longer than its block (collected blocks are
/// bounded by `Limits::max_header_block`, at most `conn::MAX_BLOCK`) times 8/5 (Huffman), or than
/// a table entry (whose size is a u32 setting).
const RECORD: usize = 9;

/// The size of a connection's shared section buffer when it needs a new one: room for a
/// dozen usual heads (a gRPC request's fields are some 200 octets), so that one allocation
/// serves many sections. A section larger than this gets a buffer of its own size.
pub(crate) const ARENA: usize = 4_096;

impl Fields {
    /// A section whose octets go into `arena`'s spare room (at least `octets` of it, a new
    /// `ARENA`-sized buffer when there is not that much). Hand the room it did not use back
    /// with `rest_of_arena` once the section is whole.
    ///
    /// Why: the section's `Bytes` (`into_bytes`) and every header value sliced from them share
    /// the arena's buffer, which is freed when the last of them goes, or reused when the
    /// connection holds the only reference (`BytesMut::reserve`). A buffer of its own cost each
    /// section two allocations: the buffer, and the shared count `Bytes` adds once sliced.
    pub(crate) fn in_arena(arena: &mut BytesMut, octets: usize) -> Fields {
        make_room(arena, octets);
        Fields {
            bytes: std::mem::take(arena),
            count: 0,
        }
    }

    /// The arena's room this section did not use, for the next (`in_arena`, `carve`).
    pub(crate) fn rest_of_arena(&mut self) -> BytesMut {
        self.bytes.split_off(self.bytes.len())
    }

    /// The octets the section takes.
    pub(crate) fn size(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn push(&mut self, field: Field<'_>) {
        // Both fit (`RECORD`); saturating rather than wrapping all the same.
        let name_len = u32::try_from(field.name.len()).unwrap_or(u32::MAX);
        let value_len = u32::try_from(field.value.len()).unwrap_or(u32::MAX);
        self.bytes
            .reserve(RECORD + field.name.len() + field.value.len());
        self.bytes
            .extend_from_slice(&[u8::from(field.never_indexed)]);
        self.bytes.extend_from_slice(&name_len.to_le_bytes());
        self.bytes.extend_from_slice(&value_len.to_le_bytes());
        self.bytes.extend_from_slice(field.name);
        self.bytes.extend_from_slice(field.value);
        self.count += 1;
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Each field in order.
    pub fn iter(&self) -> impl Iterator<Item = Field<'_>> + '_ {
        spans(&self.bytes).map(move |(name, value, never_indexed)| Field {
            name: self.bytes.get(name).unwrap_or_default(),
            value: self.bytes.get(value).unwrap_or_default(),
            never_indexed,
            memo: None,
        })
    }

    /// The section as one shared buffer, for an owner that hands out slices of it rather
    /// than a copy of each field; `spans` finds the fields in it.
    pub fn into_bytes(self) -> Bytes {
        self.bytes.freeze()
    }

    /// The value of the first field named `name` (lower case, as HTTP/2 sends names).
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.iter().find(|f| f.name == name).map(|f| f.value)
    }
}

/// Each field of `section` (what `Fields::into_bytes` gave, or its `Fields`' buffer): where
/// its name and its value are, and whether it was sent never-indexed. Ends at the first
/// record that does not fit, which only a buffer from elsewhere could hold.
pub fn spans(section: &[u8]) -> impl Iterator<Item = (Range<usize>, Range<usize>, bool)> + '_ {
    let mut at: usize = 0;
    std::iter::from_fn(move || {
        let record = section.get(at..at.checked_add(RECORD)?)?;
        let length = |from: usize| -> Option<usize> {
            let octets: [u8; 4] = record.get(from..from + 4)?.try_into().ok()?;
            usize::try_from(u32::from_le_bytes(octets)).ok()
        };
        let (name_len, value_len) = (length(1)?, length(5)?);
        let name = at + RECORD..at + RECORD + name_len;
        let value = name.end..name.end.checked_add(value_len)?;
        section.get(value.clone())?;
        at = value.end;
        Some((name, value, record.first() == Some(&1)))
    })
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
        let mut fields = Fields::in_arena(arena, octets);
        fields.push(field(b"x", value, false));
        *arena = fields.rest_of_arena();
        fields.into_bytes()
    }

    /// The one field's value of a section `section` made.
    fn value_of(section: &Bytes) -> &[u8] {
        let (_, value, _) = spans(section).next().expect("a field");
        &section[value]
    }

    #[test]
    fn sections_share_the_arena_and_reuse_it_once_theirs_are_gone() {
        let mut arena = BytesMut::new();
        let first = section(&mut arena, 10, b"one");
        let second = section(&mut arena, 10, b"two");
        assert_eq!(value_of(&first), b"one");
        assert_eq!(value_of(&second), b"two");
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
        assert_eq!(
            (value_of(&first), value_of(&second)),
            (&b"one"[..], &b"two"[..])
        );
        assert_eq!(value_of(&third), &big[..]);
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

    #[test]
    fn spans_find_each_field_and_stop_at_a_record_that_does_not_fit() {
        let mut fields = Fields::default();
        fields.push(field(b"a", b"1", false));
        fields.push(field(b"bb", b"", true));
        let bytes = fields.into_bytes();
        let found: Vec<_> = spans(&bytes)
            .map(|(n, v, never)| (&bytes[n], &bytes[v], never))
            .collect();
        assert_eq!(found, [(&b"a"[..], &b"1"[..], false), (b"bb", b"", true)]);
        // Cut anywhere inside the last record: the first field only, no panic.
        for cut in RECORD + 2..bytes.len() {
            assert_eq!(spans(&bytes[..cut]).count(), 1, "cut at {cut}");
        }
        let mut huge = bytes[..RECORD + 2].to_vec();
        huge.extend_from_slice(&[0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        assert_eq!(spans(&huge).count(), 1, "a length past the end");
    }
}
