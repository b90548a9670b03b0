//! HPACK's integers (RFC 7541 §5.1): a value in the low bits of a first byte (its prefix), or,
//! when it does not fit, the prefix all ones and the rest in 7-bit groups, least significant
//! first, each byte but the last with its top bit set.

use super::Error;

/// The largest value weir accepts. Every integer HPACK carries is an index, a length within one
/// header block or a table size; none is meaningful past 32 bits, and a bound keeps a run of
/// continuation bytes from being read for ever.
const MAX: u64 = u32::MAX as u64;

/// Reads an integer with a `prefix`-bit prefix (1–8) from the start of `src`, returns it and
/// the bytes it took.
pub fn decode(src: &[u8], prefix: u8) -> Result<(usize, usize), Error> {
    let mask = ((1u16 << prefix) - 1) as u8;
    let first = *src.first().ok_or(Error::Truncated("an integer"))?;
    let mut value = (first & mask) as u64;
    if value < mask as u64 {
        return Ok((value as usize, 1));
    }
    let mut shift = 0u32;
    for (i, &byte) in src.iter().enumerate().skip(1) {
        value += ((byte & 0x7f) as u64) << shift;
        if value > MAX {
            return Err(Error::Compression("an integer larger than 2^32 - 1"));
        }
        if byte & 0x80 == 0 {
            return Ok((value as usize, i + 1));
        }
        shift += 7;
        // Past 32 bits of groups only zero groups could follow, which say nothing: refused.
        if shift > 28 {
            return Err(Error::Compression("an integer larger than 2^32 - 1"));
        }
    }
    Err(Error::Truncated("an integer"))
}

/// Appends `value` with a `prefix`-bit prefix; `high` holds the first byte's bits above the
/// prefix (the representation's pattern).
pub fn encode(value: usize, prefix: u8, high: u8, out: &mut Vec<u8>) {
    let mask = ((1u16 << prefix) - 1) as usize;
    if value < mask {
        out.push(high | value as u8);
        return;
    }
    out.push(high | mask as u8);
    let mut rest = value - mask;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appendix_c_1_examples() {
        let mut out = Vec::new();
        encode(10, 5, 0, &mut out);
        assert_eq!(out, [0x0a]);
        assert_eq!(decode(&out, 5), Ok((10, 1)));
        out.clear();
        encode(1337, 5, 0, &mut out);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
        assert_eq!(decode(&out, 5), Ok((1337, 3)));
        out.clear();
        encode(42, 8, 0, &mut out);
        assert_eq!(out, [0x2a]);
        assert_eq!(decode(&out, 8), Ok((42, 1)));
    }

    #[test]
    fn the_pattern_bits_are_kept_and_ignored() {
        let mut out = Vec::new();
        encode(3, 6, 0x40, &mut out);
        assert_eq!(out, [0x43]);
        assert_eq!(decode(&out, 6), Ok((3, 1)));
        out.clear();
        encode(63, 6, 0x40, &mut out);
        assert_eq!(out, [0x7f, 0x00]);
        assert_eq!(decode(&out, 6), Ok((63, 2)));
    }

    #[test]
    fn round_trips_at_every_prefix_and_the_edges() {
        for prefix in 1..=8u8 {
            for value in [
                0,
                1,
                126,
                127,
                128,
                254,
                255,
                256,
                16_383,
                16_384,
                1 << 21,
                u32::MAX as usize,
            ] {
                let mut out = Vec::new();
                encode(value, prefix, 0, &mut out);
                assert_eq!(
                    decode(&out, prefix),
                    Ok((value, out.len())),
                    "{value} in {prefix} bits"
                );
            }
        }
    }

    #[test]
    fn truncated_and_oversized_integers_are_refused() {
        assert_eq!(decode(&[], 5), Err(Error::Truncated("an integer")));
        assert_eq!(decode(&[0x1f], 5), Err(Error::Truncated("an integer")));
        assert_eq!(
            decode(&[0x1f, 0x80, 0x80], 5),
            Err(Error::Truncated("an integer"))
        );
        // 2^32 exactly.
        let mut out = Vec::new();
        encode(1 << 32, 8, 0, &mut out);
        assert!(matches!(decode(&out, 8), Err(Error::Compression(_))));
        // Zero groups without end.
        assert!(matches!(
            decode(&[0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 8),
            Err(Error::Compression(_))
        ));
    }
}
