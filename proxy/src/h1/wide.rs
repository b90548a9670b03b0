//! Sixteen bytes of a head classified at once, with SSE2 (in every x86-64 CPU, so nothing is
//! detected at run time): the two questions `syntax` asks of nearly every byte.
//!
//! Why: a name looked up in a table a byte at a time, and a value scanned eight bytes at a
//! time, were most of what reading a head cost; a browser's head is 500–1,000 bytes. Each
//! answer is a mask, bit `i` for byte `i`, and only its lowest set bit is used. `syntax` falls
//! back to its word and byte loops for the last fewer-than-sixteen bytes, and on other
//! architectures; its tests hold every path to httparse's answer.

use std::arch::x86_64::{
    __m128i, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
    _mm_or_si128, _mm_set1_epi8, _mm_setzero_si128, _mm_sub_epi8,
};

/// From `from`, sixteen bytes at a time: `Ok` with the first byte `classify` marks, or `Err`
/// with where fewer than sixteen are left (the caller's narrower loops go on from there).
#[inline(always)]
pub fn first_marked(
    buf: &[u8],
    mut from: usize,
    classify: impl Fn(&[u8; 16]) -> u32,
) -> Result<usize, usize> {
    while let Some(chunk) = buf.get(from..).and_then(<[u8]>::first_chunk::<16>) {
        let marked = classify(chunk);
        if marked != 0 {
            return Ok(from + marked.trailing_zeros() as usize);
        }
        from += 16;
    }
    Err(from)
}

#[inline]
#[target_feature(enable = "sse2")]
fn load(chunk: &[u8; 16]) -> __m128i {
    // SAFETY: an unaligned load of sixteen bytes, from a reference to exactly sixteen bytes.
    unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) }
}

#[inline]
#[target_feature(enable = "sse2")]
fn splat(b: u8) -> __m128i {
    _mm_set1_epi8(i8::from_ne_bytes([b]))
}

/// Each byte of `v` that is `b`, as all ones.
#[inline]
#[target_feature(enable = "sse2")]
fn is(v: __m128i, b: u8) -> __m128i {
    _mm_cmpeq_epi8(v, splat(b))
}

/// Each byte of `v` in `low..=high` (unsigned), as all ones: `v - low` at most `high - low`.
#[inline]
#[target_feature(enable = "sse2")]
fn within(v: __m128i, low: u8, high: u8) -> __m128i {
    let shifted = _mm_sub_epi8(v, splat(low));
    _mm_cmpeq_epi8(_mm_min_epu8(shifted, splat(high - low)), shifted)
}

#[inline]
#[target_feature(enable = "sse2")]
fn mask(v: __m128i) -> u32 {
    // The sign bit of each byte: sixteen bits, so the cast keeps them all.
    _mm_movemask_epi8(v) as u32
}

/// The bytes below `limit` (1..=0x80) or DEL; HTAB excepted when `tabs`. A value or a reason
/// ends at the first (`limit` 0x20, tabs allowed), a request target (0x21) too.
#[inline(always)]
pub fn stops(chunk: &[u8; 16], limit: u8, tabs: bool) -> u32 {
    // SAFETY: SSE2 is part of x86-64 itself: every CPU this module is built for has it.
    unsafe { stops_sse2(chunk, limit, tabs) }
}

#[inline]
#[target_feature(enable = "sse2")]
fn stops_sse2(chunk: &[u8; 16], limit: u8, tabs: bool) -> u32 {
    let v = load(chunk);
    let mut stop = within(v, 0, limit - 1);
    if tabs {
        stop = _mm_andnot_si128(is(v, b'\t'), stop);
    }
    mask(_mm_or_si128(stop, is(v, 0x7f)))
}

/// The bytes that are not `tchar` (RFC 9110 §5.6.2): outside `!`..=`~`, or one of the
/// seventeen delimiters `"(),/:;<=>?@[\]{}`. A field name ends at the first.
#[inline(always)]
pub fn non_tchar(chunk: &[u8; 16]) -> u32 {
    // SAFETY: as in `stops`.
    unsafe { non_tchar_sse2(chunk) }
}

#[inline]
#[target_feature(enable = "sse2")]
fn non_tchar_sse2(chunk: &[u8; 16]) -> u32 {
    let v = load(chunk);
    let delimiters = _mm_or_si128(
        _mm_or_si128(
            _mm_or_si128(within(v, b'(', b')'), within(v, b':', b'@')),
            _mm_or_si128(within(v, b'[', b']'), is(v, b'"')),
        ),
        _mm_or_si128(
            _mm_or_si128(is(v, b','), is(v, b'/')),
            _mm_or_si128(is(v, b'{'), is(v, b'}')),
        ),
    );
    let invisible = _mm_cmpeq_epi8(within(v, b'!', b'~'), _mm_setzero_si128());
    mask(_mm_or_si128(delimiters, invisible))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::TCHAR;

    /// Every byte value in every one of the sixteen places, against the byte-at-a-time rule.
    #[test]
    fn each_byte_is_classified_as_the_byte_rules_say() {
        for place in 0..16 {
            for b in 0..=255u8 {
                let mut chunk = [b'a'; 16];
                chunk[place] = b;
                let bit = 1 << place;
                assert_eq!(non_tchar(&chunk) == bit, !TCHAR[usize::from(b)], "{b:#x}");
                assert_eq!(non_tchar(&chunk) & !bit, 0, "{b:#x} at {place}");
                for (limit, tabs) in [(0x20, true), (0x21, false)] {
                    let stop = b < limit && !(tabs && b == b'\t') || b == 0x7f;
                    assert_eq!(
                        stops(&chunk, limit, tabs),
                        if stop { bit } else { 0 },
                        "{b:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_stop_is_marked_not_only_the_first() {
        let chunk = *b"a:b\x7fc d\te\r\nf{g}h";
        assert_eq!(non_tchar(&chunk), 0b0101_0110_1010_1010);
        assert_eq!(stops(&chunk, 0x20, true), 0b0000_0110_0000_1000);
        assert_eq!(stops(&chunk, 0x21, false), 0b0000_0110_1010_1000);
    }
}
