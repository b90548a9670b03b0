//! HPACK's static table (RFC 7541 Appendix A): 61 fields, indices 1–61.

/// Appendix A, index 1 first.
pub const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The static entry at `index` (1–61).
pub fn get(index: usize) -> Option<(&'static [u8], &'static [u8])> {
    STATIC.get(index.checked_sub(1)?).copied()
}

/// Where a (lower-case) name sits in the static table: its first index and how many entries
/// carry it (those with values to match whole).
fn name_entries(name: &[u8]) -> Option<(u8, u8)> {
    // A match on the bytes: the compiler splits on length first, so a miss costs a compare or
    // two, not 61.
    Some(match name {
        b":authority" => (1, 1),
        b":method" => (2, 2),
        b":path" => (4, 2),
        b":scheme" => (6, 2),
        b":status" => (8, 7),
        b"accept-charset" => (15, 1),
        b"accept-encoding" => (16, 1),
        b"accept-language" => (17, 1),
        b"accept-ranges" => (18, 1),
        b"accept" => (19, 1),
        b"access-control-allow-origin" => (20, 1),
        b"age" => (21, 1),
        b"allow" => (22, 1),
        b"authorization" => (23, 1),
        b"cache-control" => (24, 1),
        b"content-disposition" => (25, 1),
        b"content-encoding" => (26, 1),
        b"content-language" => (27, 1),
        b"content-length" => (28, 1),
        b"content-location" => (29, 1),
        b"content-range" => (30, 1),
        b"content-type" => (31, 1),
        b"cookie" => (32, 1),
        b"date" => (33, 1),
        b"etag" => (34, 1),
        b"expect" => (35, 1),
        b"expires" => (36, 1),
        b"from" => (37, 1),
        b"host" => (38, 1),
        b"if-match" => (39, 1),
        b"if-modified-since" => (40, 1),
        b"if-none-match" => (41, 1),
        b"if-range" => (42, 1),
        b"if-unmodified-since" => (43, 1),
        b"last-modified" => (44, 1),
        b"link" => (45, 1),
        b"location" => (46, 1),
        b"max-forwards" => (47, 1),
        b"proxy-authenticate" => (48, 1),
        b"proxy-authorization" => (49, 1),
        b"range" => (50, 1),
        b"referer" => (51, 1),
        b"refresh" => (52, 1),
        b"retry-after" => (53, 1),
        b"server" => (54, 1),
        b"set-cookie" => (55, 1),
        b"strict-transport-security" => (56, 1),
        b"transfer-encoding" => (57, 1),
        b"user-agent" => (58, 1),
        b"vary" => (59, 1),
        b"via" => (60, 1),
        b"www-authenticate" => (61, 1),
        _ => return None,
    })
}

/// What the static table holds of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The name and the value, at this index.
    Field(u8),
    /// The name, at this index.
    Name(u8),
    Nothing,
}

/// Looks a field up in the static table.
pub fn find(name: &[u8], value: &[u8]) -> Found {
    let Some((first, count)) = name_entries(name) else {
        return Found::Nothing;
    };
    for index in first..first + count {
        if STATIC[index as usize - 1].1 == value {
            return Found::Field(index);
        }
    }
    Found::Name(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_agrees_with_the_table_for_every_entry() {
        for (i, (name, value)) in STATIC.iter().enumerate() {
            let index = i as u8 + 1;
            if value.is_empty() {
                // An empty value is a value too: the entry matches whole.
                assert_eq!(find(name, value), Found::Field(index));
                assert_eq!(find(name, b"x"), Found::Name(index));
            } else {
                assert_eq!(
                    find(name, value),
                    Found::Field(index),
                    "{}",
                    String::from_utf8_lossy(name)
                );
            }
            // The first entry of a name is what a name alone finds.
            let first = STATIC.iter().position(|(n, _)| n == name).unwrap() as u8 + 1;
            assert_eq!(find(name, b"\x00not in the table"), Found::Name(first));
        }
        assert_eq!(find(b"x-custom", b""), Found::Nothing);
        assert_eq!(
            find(b"Host", b""),
            Found::Nothing,
            "names are lower case in HTTP/2"
        );
        assert_eq!(get(0), None);
        assert_eq!(get(62), None);
        assert_eq!(get(2), Some((&b":method"[..], &b"GET"[..])));
    }
}
