//! What the client and server connections share: a section's fields as handed to the owner,
//! and the connection error either side ends with.

use std::fmt;
use std::ops::Range;

use super::frame::ErrorCode;
use super::hpack::Field;

/// A header or trailer section's regular fields (pseudo-headers are left out: the request's or
/// the response's head carries them), in the order they came.
///
/// Kept as one buffer of names and values and one list of where each ends: two allocations a
/// section rather than two a field, as a `Vec<(Bytes, Bytes)>` would take. Zero-copy `Bytes`
/// would buy nothing here: HPACK hands fields over from its table and Huffman scratch, so each
/// is copied once whatever holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    bytes: Vec<u8>,
    /// Per field: where its name ends and where its value ends in `bytes` (its name starts
    /// where the field before it ends), and whether it was sent never-indexed (§7.1.3 of
    /// RFC 7541: a proxy passes that on).
    ends: Vec<(usize, usize, bool)>,
}

impl Fields {
    /// Room for `octets` of names and values and `fields` fields.
    pub(crate) fn with_capacity(octets: usize, fields: usize) -> Fields {
        Fields {
            bytes: Vec::with_capacity(octets),
            ends: Vec::with_capacity(fields),
        }
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
        Vec<u8>,
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
        (self.bytes, spans)
    }

    /// The value of the first field named `name` (lower case, as HTTP/2 sends names).
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.iter().find(|f| f.name == name).map(|f| f.value)
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
        let mut fields = Fields::with_capacity(0, 0);
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
}
