//! What a header field means to a proxy, decided by one rule for both engines: the passthrough
//! engine classifies each field of a raw head once, the hyper engine each name of a map, and
//! both drop, keep or add fields by that classification. RFC 9110 §7.6.1 is the source for
//! hop-by-hop fields.

use std::ops::Range;

/// A field's role on the way through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Host,
    ContentLength,
    TransferEncoding,
    Connection,
    /// `TE`: hop-by-hop, and where a client says it accepts trailers (gRPC).
    Te,
    /// Hop-by-hop by definition with nothing else to it: Keep-Alive, Proxy-Connection, and
    /// HTTP2-Settings (it only ever comes with an h2c upgrade, which is never forwarded).
    HopByHop,
    Upgrade,
    Expect,
    ContentType,
    /// Appended to, never believed.
    ForwardedFor,
    /// Replaced by what weir saw.
    ForwardedProto,
    /// Replaced by what weir saw.
    ForwardedHost,
    Other,
}

impl Kind {
    /// `name` in any case, as it came on an HTTP/1 wire.
    pub fn of(name: &[u8]) -> Kind {
        // Asked of every field of every HTTP/1 head: compared a word at a time, not a byte.
        Kind::by(name, |name, known| known.is_folded(&words(name)))
    }

    /// `name` known to be lower case, as HTTP/2 sends names (once checked) and `HeaderName`
    /// holds them: compared as it is, which costs a fraction of a comparison in any case.
    pub fn of_lower(name: &[u8]) -> Kind {
        Kind::by(name, |name, known| name == known.name.as_bytes())
    }

    /// The one table both read, with their comparison.
    #[inline(always)]
    fn by(name: &[u8], same: impl Fn(&[u8], &Known) -> bool) -> Kind {
        let is = |known: &Known| same(name, known);
        // Length first: most fields are rejected by one comparison of integers. (`const`: each
        // known name's words are worked out in the build.)
        match name.len() {
            2 if is(&const { Known::new("te") }) => Kind::Te,
            4 if is(&const { Known::new("host") }) => Kind::Host,
            6 if is(&const { Known::new("expect") }) => Kind::Expect,
            7 if is(&const { Known::new("upgrade") }) => Kind::Upgrade,
            10 if is(&const { Known::new("connection") }) => Kind::Connection,
            10 if is(&const { Known::new("keep-alive") }) => Kind::HopByHop,
            12 if is(&const { Known::new("content-type") }) => Kind::ContentType,
            14 if is(&const { Known::new("content-length") }) => Kind::ContentLength,
            14 if is(&const { Known::new("http2-settings") }) => Kind::HopByHop,
            15 if is(&const { Known::new("x-forwarded-for") }) => Kind::ForwardedFor,
            16 if is(&const { Known::new("x-forwarded-host") }) => Kind::ForwardedHost,
            16 if is(&const { Known::new("proxy-connection") }) => Kind::HopByHop,
            17 if is(&const { Known::new("x-forwarded-proto") }) => Kind::ForwardedProto,
            17 if is(&const { Known::new("transfer-encoding") }) => Kind::TransferEncoding,
            _ => Kind::Other,
        }
    }

    /// Hop-by-hop whatever `Connection` says. (Transfer-Encoding is too, but the passthrough
    /// engine forwards a body as framed, so each engine handles it with the body.)
    pub fn is_hop_by_hop(self) -> bool {
        matches!(
            self,
            Kind::Connection | Kind::Te | Kind::HopByHop | Kind::Upgrade
        )
    }
}

/// A known field name (lower case, at most 24 bytes), also as three little-endian words with
/// the mask of its letters, for comparing a name in any case a word at a time. (Byte by byte,
/// classifying fields was about 4 % of a plaintext request's user-space instructions.)
struct Known {
    name: &'static str,
    words: [u64; 3],
    /// 0x20 in each byte that is a letter: the bit that is a letter's case.
    letters: [u64; 3],
}

impl Known {
    const fn new(name: &'static str) -> Known {
        let bytes = name.as_bytes();
        let words = words(bytes);
        let mut letters = [0u64; 3];
        let mut i = 0;
        while i < bytes.len() {
            assert!(!bytes[i].is_ascii_uppercase(), "known names are lower case");
            if bytes[i].is_ascii_lowercase() {
                letters[i / 8] |= 0x20 << (i % 8 * 8);
            }
            i += 1;
        }
        Known {
            name,
            words,
            letters,
        }
    }

    /// Whether `name` (as `words`, of this name's length) is this name in any case: the case
    /// bit is set in the name where this one has a letter, and elsewhere the bytes must be
    /// equal (so `-`, 0x2D, never matches CR, 0x0D).
    #[inline(always)]
    fn is_folded(&self, name: &[u64; 3]) -> bool {
        (name[0] | self.letters[0]) == self.words[0]
            && (name[1] | self.letters[1]) == self.words[1]
            && (name[2] | self.letters[2]) == self.words[2]
    }
}

/// Up to 24 bytes as three little-endian words, zero beyond the name; a longer name is all
/// zeros, which no known name is. `const`: the known names' words are worked out in the build,
/// a received name's at run time in one copy and three loads.
#[inline(always)]
const fn words(name: &[u8]) -> [u64; 3] {
    let mut bytes = [0u8; 24];
    if name.len() <= 24 {
        bytes.split_at_mut(name.len()).0.copy_from_slice(name);
    }
    let (first, rest) = bytes.split_at(8);
    let (second, third) = rest.split_at(8);
    [word(first), word(second), word(third)]
}

/// The first 8 bytes of `bytes` (which has them) as a little-endian word.
#[inline(always)]
const fn word(bytes: &[u8]) -> u64 {
    match bytes.first_chunk::<8>() {
        Some(w) => u64::from_le_bytes(*w),
        None => 0,
    }
}

/// Where one field of a raw head lies in its buffer, and what it means.
#[derive(Clone, Debug)]
pub struct Field {
    pub name: Range<usize>,
    pub value: Range<usize>,
    pub kind: Kind,
}

/// tchar (RFC 9110 §5.6.2): methods and names on an HTTP/1 wire (`h1::syntax`), tokens in
/// HTTP/2 values (`h2wire::message`).
pub(crate) static TCHAR: [bool; 256] = tchar_table(true);
/// tchar without upper-case letters: HTTP/2 field names.
pub(crate) static LOWER_TCHAR: [bool; 256] = tchar_table(false);

/// tchar (RFC 9110 §5.6.2), with or without upper-case letters: a byte loop over a table.
const fn tchar_table(upper: bool) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < table.len() {
        let b = i as u8;
        table[i] = b.is_ascii_lowercase()
            || b.is_ascii_digit()
            || (upper && b.is_ascii_uppercase())
            || matches!(
                b,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        i += 1;
    }
    table
}

/// The comma-separated tokens of a list field, trimmed, empty ones skipped.
pub fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
}

/// Connection tokens that name no field of their own, or one removed anyway.
pub fn is_fixed_token(token: &[u8]) -> bool {
    [
        &b"close"[..],
        b"keep-alive",
        b"upgrade",
        b"te",
        b"transfer-encoding",
        b"proxy-connection",
    ]
    .iter()
    .any(|fixed| token.eq_ignore_ascii_case(fixed))
}

/// Whether a `TE` value accepts trailers.
pub fn accepts_trailers(te: &[u8]) -> bool {
    tokens(te).any(|t| t.eq_ignore_ascii_case(b"trailers"))
}

/// Whether an Upgrade field asks for something other than h2c: an upgrade to h2c is never
/// honoured (RFC 9113 §3.1 removed it; forwarded, it would hand the client a raw HTTP/2
/// connection past weir's routing), so a request asking only for it is served as plain HTTP/1.1.
pub fn is_real_upgrade(value: &[u8]) -> bool {
    tokens(value).any(|t| !t.eq_ignore_ascii_case(b"h2c"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name `Kind::by` knows.
    const KNOWN: [&str; 14] = [
        "te",
        "host",
        "expect",
        "upgrade",
        "connection",
        "keep-alive",
        "content-type",
        "content-length",
        "http2-settings",
        "x-forwarded-for",
        "x-forwarded-host",
        "proxy-connection",
        "x-forwarded-proto",
        "transfer-encoding",
    ];

    #[test]
    fn names_are_classified_in_any_case() {
        assert_eq!(Kind::of(b"Connection"), Kind::Connection);
        assert_eq!(Kind::of(b"TE"), Kind::Te);
        assert_eq!(Kind::of(b"proxy-CONNECTION"), Kind::HopByHop);
        assert_eq!(Kind::of(b"X-Forwarded-For"), Kind::ForwardedFor);
        assert_eq!(Kind::of(b"x-forwarded-fox"), Kind::Other);
        for name in KNOWN.into_iter().chain(["x-other"]) {
            let upper = name.to_ascii_uppercase();
            assert_eq!(Kind::of_lower(name.as_bytes()), Kind::of(upper.as_bytes()));
        }
        assert_eq!(Kind::of_lower(b"Host"), Kind::Other, "lower case only");
        // The word compare folds case only where the known name has a letter.
        assert_eq!(Kind::of(b"content\rlength"), Kind::Other);
        assert_eq!(Kind::of(b"x-forwarded-fo\x12"), Kind::Other);
        assert_eq!(Kind::of(b"HOST"), Kind::Host);
        assert_eq!(Kind::of(b"hosT"), Kind::Host);
        assert_eq!(Kind::of(b"hos"), Kind::Other);
        assert_eq!(Kind::of(b"hostt"), Kind::Other);
        assert_eq!(Kind::of(b"Http2-Settings"), Kind::HopByHop);
        assert_eq!(Kind::of(b"http\x12-settings"), Kind::Other);
        assert!(Kind::Upgrade.is_hop_by_hop());
        assert!(!Kind::Host.is_hop_by_hop());
    }

    /// Every known name with each of its bytes replaced by each of the 256 values is classified
    /// as a byte-by-byte comparison in any case would.
    #[test]
    fn the_word_compare_agrees_with_a_byte_compare() {
        let by_bytes = |name: &[u8]| {
            KNOWN
                .iter()
                .find(|k| k.as_bytes().eq_ignore_ascii_case(name))
                .map(|k| Kind::of_lower(k.as_bytes()))
                .unwrap_or(Kind::Other)
        };
        for k in KNOWN {
            for i in 0..k.len() {
                for b in 0..=255u8 {
                    let mut name = k.as_bytes().to_vec();
                    name[i] = b;
                    assert_eq!(Kind::of(&name), by_bytes(&name), "{name:?}");
                }
            }
        }
        let long = [b'a'; 40];
        assert_eq!(Kind::of(&long), Kind::Other);
    }

    #[test]
    fn list_values_split_into_trimmed_tokens() {
        let got: Vec<&[u8]> = tokens(b" close ,, X-Secret,").collect();
        assert_eq!(got, vec![&b"close"[..], b"X-Secret"]);
        assert!(is_fixed_token(b"Keep-Alive"));
        assert!(!is_fixed_token(b"x-secret"));
        assert!(accepts_trailers(b"deflate, trailers"));
        assert!(!accepts_trailers(b"deflate"));
    }

    #[test]
    fn h2c_alone_is_no_upgrade() {
        assert!(!is_real_upgrade(b"h2c"));
        assert!(!is_real_upgrade(b" H2C "));
        assert!(is_real_upgrade(b"websocket"));
        assert!(is_real_upgrade(b"h2c, websocket"));
    }
}
