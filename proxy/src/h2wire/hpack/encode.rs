//! The HPACK encoder: fields to header blocks, static table only (see the module comment).

use super::integer;
use super::static_table::{self, Found};

/// One connection's encoder.
pub struct Encoder {
    /// Set the dynamic table's size to 0 at the start of the first block: whatever the peer's
    /// SETTINGS_HEADER_TABLE_SIZE is or becomes, a table of 0 is within it, so no later change of
    /// the setting needs an answer (§4.2).
    first: bool,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder { first: true }
    }
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a header block in `out`.
    pub fn begin(&mut self, out: &mut Vec<u8>) {
        if std::mem::take(&mut self.first) {
            integer::encode(0, 5, 0x20, out);
        }
    }

    /// Appends one field (its name lower case, as HTTP/2 requires). `never_indexed` asks every
    /// hop after this one not to index it either (§7.1.3).
    pub fn field(&self, name: &[u8], value: &[u8], never_indexed: bool, out: &mut Vec<u8>) {
        let (pattern, index) = match static_table::find(name, value) {
            Found::Field(index) if !never_indexed => {
                // Indexed field (§6.1).
                integer::encode(index as usize, 7, 0x80, out);
                return;
            }
            Found::Field(index) | Found::Name(index) => (pattern(never_indexed), index as usize),
            Found::Nothing => (pattern(never_indexed), 0),
        };
        // A literal without indexing (0000) or never indexed (0001), name by index or as a
        // string (§6.2.2, §6.2.3).
        integer::encode(index, 4, pattern, out);
        if index == 0 {
            string(name, out);
        }
        string(value, out);
    }
}

fn pattern(never_indexed: bool) -> u8 {
    if never_indexed {
        0x10
    } else {
        0x00
    }
}

/// A string literal as it is (§5.2, H = 0).
fn string(s: &[u8], out: &mut Vec<u8>) {
    integer::encode(s.len(), 7, 0, out);
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::super::Decoder;
    use super::*;

    fn decode(d: &mut Decoder, block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>, bool)> {
        let mut out = Vec::new();
        d.decode(block, 1 << 20, |f| {
            out.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed))
        })
        .unwrap();
        out
    }

    #[test]
    fn representations() {
        let mut e = Encoder::new();
        let mut out = Vec::new();
        e.begin(&mut out);
        assert_eq!(out, [0x20], "the first block sets the table to 0");
        out.clear();
        e.begin(&mut out);
        assert!(out.is_empty(), "once");

        let one = |name: &[u8], value: &[u8], never: bool| {
            let mut out = Vec::new();
            e.field(name, value, never, &mut out);
            out
        };
        assert_eq!(one(b":method", b"GET", false), [0x82]);
        assert_eq!(one(b":status", b"200", false), [0x88]);
        assert_eq!(one(b":status", b"503", false), b"\x08\x03503");
        assert_eq!(
            one(b"content-type", b"application/grpc", false),
            b"\x0f\x10\x10application/grpc"
        );
        assert_eq!(one(b"x-id", b"7", false), b"\x00\x04x-id\x017");
        assert_eq!(one(b"authorization", b"s", true), b"\x1f\x08\x01s");
        assert_eq!(one(b"x-k", b"", true), b"\x10\x03x-k\x00");
        // A field the static table holds whole still goes as a literal when never indexed.
        assert_eq!(one(b":method", b"GET", true), b"\x12\x03GET");
    }

    #[test]
    fn blocks_round_trip_through_the_decoder() {
        let long = vec![b'v'; 300];
        let list: Vec<(&[u8], &[u8], bool)> = vec![
            (b":method", b"POST", false),
            (b":scheme", b"https", false),
            (b":authority", b"api.example", false),
            (b":path", b"/pkg.Service/Method", false),
            (b"content-type", b"application/grpc", false),
            (b"te", b"trailers", false),
            (b"cookie", b"a=b", true),
            (b"x-long", &long, false),
            (b"accept-encoding", b"gzip, deflate", false),
            (b"x-empty", b"", false),
        ];
        let mut e = Encoder::new();
        let mut d = Decoder::new(4096);
        for _ in 0..3 {
            let mut block = Vec::new();
            e.begin(&mut block);
            for (n, v, never) in &list {
                e.field(n, v, *never, &mut block);
            }
            let back = decode(&mut d, &block);
            let want: Vec<_> = list
                .iter()
                .map(|(n, v, never)| (n.to_vec(), v.to_vec(), *never))
                .collect();
            assert_eq!(back, want);
        }
    }
}
